//! Tick values and their labels: nice steps, and as many ticks as fit without their labels touching.

use super::*;

/// A "nice" step (1, 2, 2.5 or 5 × 10ⁿ) no smaller than `raw`, and the decimals that print its
/// multiples distinctly.
pub fn nice_step(raw: f64) -> (f64, usize) {
    let raw = if raw.is_finite() && raw > 0.0 { raw } else { 1.0 };
    let e = raw.log10().floor();
    for (mult, extra) in [(1.0, 0), (2.0, 0), (2.5, 1), (5.0, 0), (10.0, 0)] {
        let step = mult * 10f64.powf(e);
        if step >= raw * (1.0 - 1e-9) {
            let exp = if mult == 10.0 { e + 1.0 } else { e };
            let decimals = (-exp).max(0.0) as usize + if exp <= 0.0 { extra } else { 0 };
            return (step, decimals);
        }
    }
    (raw, 0)
}

/// Tick values at multiples of `step` inside [lo, hi].
pub fn ticks_in(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    if step.is_nan() || step <= 0.0 || !lo.is_finite() || !hi.is_finite() || hi < lo {
        return Vec::new();
    }
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last.min(first + 1000)).map(|k| k as f64 * step).collect()
}

/// A number with a true minus sign ("−0.5"), and "0" never negative.
pub fn format_tick(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x);
    let zero = s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.');
    if zero {
        return s.trim_start_matches('-').to_string();
    }
    s.replacen('-', "−", 1)
}

/// A y axis from 0 to a nice top ≥ `max` with at most five intervals; an empty axis (max ≤ 0) reads
/// 0 to 1. Returns (top, ticks with labels).
pub fn zero_based_axis(max: f64) -> (f64, Vec<(f64, String)>) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let (step, decimals) = nice_step(max / 5.0);
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    let ticks = ticks_in(0.0, top, step).into_iter().map(|t| (t, format_tick(t, decimals))).collect();
    (top, ticks)
}

/// Ticks for [lo, hi] that fit `width` device pixels, given the widest label's estimate.
pub fn fitting_ticks(lo: f64, hi: f64, width: i32, s: &Sizes) -> Vec<(f64, String)> {
    let span = hi - lo;
    if span.is_nan() || span <= 0.0 {
        return vec![(lo, format_tick(lo, 3))];
    }
    // Try from dense to sparse; keep the densest whose labels leave two em between them.
    let mut intervals = 10usize;
    loop {
        let (step, decimals) = nice_step(span / intervals as f64);
        let ticks: Vec<(f64, String)> =
            ticks_in(lo, hi, step).into_iter().map(|t| (t, format_tick(t, decimals))).collect();
        let widest = ticks.iter().map(|(_, l)| s.text_width(l, FONT_TICK)).max().unwrap_or(0);
        let room = if ticks.len() > 1 { width / (ticks.len() as i32 - 1) } else { width };
        if intervals <= 2 || room >= widest + s.len(2.0 * FONT_TICK) {
            return ticks;
        }
        intervals -= 1;
    }
}
