//! How the capacity moves with ε and with d (`docs/method.md` §2, §7: exponentially sensitive to
//! ε², so absolute values are unreliable and relative ones informative): log10 k under the four
//! formulas, around the model's ε and d, and dashed beside them the proven interval (the
//! directions that provably exist and the most that can, `pass::capacity`).

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend};

use super::layout::{
    self, dedup_pixels, draw_centred_message, draw_frame, draw_furniture, draw_off_range_arrow, fitting_ticks, Frame,
    LegendItem, Pen, Side, Sizes, Swatch, BAND_ALPHA,
};
use super::{canvas_sizes, fill_background, ChartError, ChartText, Theme};
use crate::pass::estimate::{
    self, Capacities, FINITE_CAPACITY_BELOW, FULL_A, FULL_B, FULL_C, FULL_EXP_C, JL_C_PROVEN, JL_C_TIGHT, SIMPLE_C,
};
use crate::result::paper::{
    capacity_vs_dim, capacity_vs_epsilon, default_dim_window, default_epsilon_window, proven_vs_dim, proven_vs_epsilon,
    ProvenPoint,
};
use crate::result::report::{scientific_from_log10, significant};

/// The four formulas of `docs/method.md` §2 by name, in `Capacities` field order, as the alt text
/// names them.
pub const FORMULA_NAMES: [&str; 4] = [
    "Johnson–Lindenstrauss lower bound (C = 8)",
    "Johnson–Lindenstrauss lower bound fitted on random vectors (C = 3.029)",
    "the paper's fitted law, one parameter (Eq. 6, C = 1.2934)",
    "the paper's fitted law, full form (Eq. 7, used for Table 1)",
];

/// Shorter legend labels with the constants (`estimate`'s, printed as the paper does).
fn legend_names() -> [String; 4] {
    [
        format!("JL lower bound, C = {JL_C_PROVEN}"),
        format!("JL lower bound, C = {JL_C_TIGHT}"),
        format!("fit Eq. 6, C = {SIMPLE_C}"),
        "fit Eq. 7 (Table 1)".to_string(),
    ]
}

fn values(c: &Capacities) -> [f64; 4] {
    [c.jl_c8, c.jl_c3029, c.adjusted_simple, c.adjusted_full]
}

/// Samples per curve: enough for a smooth line at any width a page gives.
const CURVE_POINTS: usize = 241;

/// The constants of Eq. 7 for the alt text.
fn eq7_constants() -> String {
    format!("C = {FULL_C}, a = {FULL_A}, b = {FULL_B}, c = {FULL_EXP_C}")
}

/// "JL proven (C = 8) 8, …": the four capacities at one point.
fn at_point(c: &Capacities) -> String {
    FORMULA_NAMES
        .iter()
        .zip(values(c))
        .map(|(name, v)| format!("{name} {}", scientific_from_log10(v)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Integer decades for a log10 axis: at most five intervals, labels "10ⁿ".
fn decade_axis(lo: f64, hi: f64) -> ((f64, f64), Vec<(f64, String)>) {
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi >= lo { (lo, hi) } else { (0.0, 1.0) };
    // Steps 1, 2, 5, 10, 20, 50, …: whole decades only.
    let step_of = |k: usize| [1.0, 2.0, 5.0][k % 3] * 10f64.powi((k / 3) as i32);
    let mut k = 0;
    while (hi - lo) / step_of(k) > 5.0 && k < 60 {
        k += 1;
    }
    let step = step_of(k);
    let a = (lo / step).floor() * step;
    let mut b = (hi / step).ceil() * step;
    if b <= a {
        b = a + step;
    }
    let ticks = layout::ticks_in(a, b, step).into_iter().map(|t| (t, power_of_ten(t))).collect();
    ((a, b), ticks)
}

/// "10⁷" for 7.
fn power_of_ten(n: f64) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let n = n.round() as i64;
    let mut s = String::from("10");
    if n < 0 {
        s.push('⁻');
    }
    for c in n.unsigned_abs().to_string().chars() {
        if let Some(d) = c.to_digit(10) {
            s.push(DIGITS[d as usize]);
        }
    }
    s
}

/// The y range over every finite value of the curves.
fn y_extent<'a>(curves: impl Iterator<Item = &'a [f64; 4]>) -> Option<(f64, f64)> {
    let mut ext: Option<(f64, f64)> = None;
    for v in curves.flatten().copied().filter(|v| v.is_finite()) {
        ext = Some(ext.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
    }
    ext
}

fn legend_with_formulas(theme: &Theme) -> Vec<LegendItem> {
    legend_names()
        .into_iter()
        .enumerate()
        .map(|(i, label)| LegendItem { swatch: Swatch::Line(theme.series_colour(i)), label })
        .collect()
}

const INDETERMINATE_LABEL: &str = "ε ≥ 0.1: the paper prints no finite capacity";

// ---------------------------------------------------------------------------------------------
// Capacity against ε
// ---------------------------------------------------------------------------------------------

/// The ε chart in words.
pub fn capacity_vs_epsilon_text(d: u64, epsilon: f64, ci: Option<[f64; 2]>) -> ChartText {
    let (lo, hi) = default_epsilon_window(epsilon, ci);
    let series = capacity_vs_epsilon(d, lo, hi, CURVE_POINTS);
    let mut notes = Vec::new();
    let mut alt = format!(
        "Capacity k (log scale) against ε at d = {d}, for ε from {} to {}, under four formulas: {} ({}).",
        significant(lo, 3),
        significant(hi, 3),
        FORMULA_NAMES.join("; "),
        eq7_constants()
    );
    if epsilon.is_finite() {
        alt.push_str(&format!(
            " At this model's ε = {}: {}.",
            significant(epsilon, 4),
            at_point(&estimate::capacities(d, epsilon))
        ));
    }
    if let (Some(first), Some(last)) = (series.first(), series.last()) {
        alt.push_str(&format!(
            " Across the range the Eq. 7 capacity runs from {} to {}.",
            scientific_from_log10(first.1.adjusted_full),
            scientific_from_log10(last.1.adjusted_full)
        ));
    }
    let proven = proven_vs_epsilon(d, lo, hi, 2);
    if let (Some(first), Some(last)) = (proven.first(), proven.last()) {
        alt.push_str(&format!(
            " Dashed, what is proven: at ε = {}, {}; at ε = {}, {}.",
            significant(first.0, 3),
            proven_at_point(first),
            significant(last.0, 3),
            proven_at_point(last)
        ));
    }
    if let Some([a, b]) = ci {
        alt.push_str(&format!(" The band is ε's 95 % interval, {} to {}.", significant(a, 4), significant(b, 4)));
    }
    if hi > FINITE_CAPACITY_BELOW {
        alt.push_str(" For ε ≥ 0.1 (shaded) the paper prints no finite capacity.");
    }
    if !(epsilon >= lo && epsilon <= hi) {
        let where_ = if epsilon > hi { "right" } else { "left" };
        notes.push(format!(
            "ε = {} lies {where_} of this range [{}, {}].",
            significant(epsilon, 4),
            significant(lo, 3),
            significant(hi, 3)
        ));
    }
    if !estimate::capacity_determinate(epsilon) {
        notes.push(format!(
            "At ε = {} the paper prints no finite capacity; the curves extrapolate the formulas.",
            significant(epsilon, 4)
        ));
    }
    ChartText { alt, notes }
}

/// log10 k against ε around the model's ε (window: [`default_epsilon_window`]), the four formulas,
/// ε's interval as a band, a vertical line at ε, the region ε ≥ 0.1 shaded.
pub fn draw_capacity_vs_epsilon<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: u64,
    epsilon: f64,
    ci: Option<[f64; 2]>,
    theme: &Theme,
    scale: f64,
) -> Result<ChartText, ChartError> {
    draw_vs_epsilon(area, d, epsilon, ci, theme, canvas_sizes(scale))
}

pub(super) fn draw_vs_epsilon<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: u64,
    epsilon: f64,
    ci: Option<[f64; 2]>,
    theme: &Theme,
    s: Sizes,
) -> Result<ChartText, ChartError> {
    let text = capacity_vs_epsilon_text(d, epsilon, ci);
    fill_background(area, theme)?;
    let pen = Pen { area, s };
    let (lo, hi) = default_epsilon_window(epsilon, ci);
    let series: Vec<(f64, [f64; 4])> =
        capacity_vs_epsilon(d, lo, hi, CURVE_POINTS).into_iter().map(|(e, c)| (e, values(&c))).collect();
    let proven = proven_vs_epsilon(d, lo, hi, CURVE_POINTS);
    let extent = with_proven(y_extent(series.iter().map(|(_, v)| v)), &proven);
    let (y_range, y_ticks) = decade_axis(extent.map_or(0.0, |e| e.0), extent.map_or(1.0, |e| e.1));

    let mut legend = legend_with_formulas(theme);
    legend.push(LegendItem { swatch: Swatch::Dashed(theme.reference), label: PROVEN_LABEL.to_string() });
    let shade = hi > FINITE_CAPACITY_BELOW;
    if shade {
        legend.push(LegendItem { swatch: Swatch::Band(theme.indeterminate), label: INDETERMINATE_LABEL.to_string() });
    }
    if let Some([a, b]) = ci {
        legend.push(LegendItem {
            swatch: Swatch::Band(theme.interval),
            label: format!("95 % interval {}–{}", significant(a, 3), significant(b, 3)),
        });
    }
    let off = if epsilon > hi || epsilon.is_nan() {
        Some(Side::Right)
    } else if epsilon < lo {
        Some(Side::Left)
    } else {
        None
    };
    let model_label = format!("this model: ε = {}", significant(epsilon, 4));
    legend.push(LegendItem {
        swatch: Swatch::Line(theme.epsilon),
        label: match off {
            Some(Side::Right) => format!("{model_label} → right of range"),
            Some(Side::Left) => format!("← {model_label} left of range"),
            None => model_label,
        },
    });

    let (width, height) = area.dim_in_pixel();
    let y_labels: Vec<String> = y_ticks.iter().map(|(_, l)| l.clone()).collect();
    let mut end = layout::format_tick(hi, 3);
    let mut l = layout::layout(width, height, &s, &legend, &y_labels, &end, ((lo, hi), y_range))?;
    let mut x_ticks = fitting_ticks(lo, hi, l.frame.right - l.frame.left, &s);
    if let Some(w) = x_ticks.iter().map(|(_, t)| t).max_by_key(|t| t.chars().count()) {
        if w.chars().count() > end.chars().count() {
            end = w.clone();
            l = layout::layout(width, height, &s, &legend, &y_labels, &end, ((lo, hi), y_range))?;
            x_ticks = fitting_ticks(lo, hi, l.frame.right - l.frame.left, &s);
        }
    }
    let f = l.frame;
    if shade {
        pen.fill_rect(
            (f.px(FINITE_CAPACITY_BELOW.max(lo)), f.top),
            (f.right, f.bottom),
            theme.indeterminate,
            BAND_ALPHA,
        )?;
    }
    if let Some([a, b]) = ci {
        let (a, b) = (a.max(lo), b.min(hi));
        if a <= b {
            let (pa, pb) = (f.px(a), f.px(b));
            pen.fill_rect((pa, f.top), (pb.max(pa + 1), f.bottom), theme.interval, BAND_ALPHA)?;
        }
    }
    draw_furniture(
        &pen,
        &l,
        theme,
        &format!("Capacity against ε at d = {d}"),
        &legend,
        &x_ticks,
        &y_ticks,
        "ε (unitless)",
        "capacity k (log scale)",
    )?;
    draw_proven(&pen, &f, theme, &proven, y_range, |e| e)?;
    draw_curves(&pen, &f, theme, series.iter().map(|(e, v)| (*e, v)))?;
    match off {
        None => pen.path(vec![(f.px(epsilon), f.bottom), (f.px(epsilon), f.top)], theme.epsilon, 2.0)?,
        Some(side) => draw_off_range_arrow(&pen, &f, side, 0, theme.epsilon)?,
    }
    draw_frame(&pen, &f, theme)?;
    if extent.is_none() {
        draw_centred_message(&pen, &f, theme, "no finite capacity to plot")?;
    }
    Ok(text)
}

/// The four formulas as polylines, each in its palette colour.
fn draw_curves<'a, DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    theme: &Theme,
    points: impl Iterator<Item = (f64, &'a [f64; 4])> + Clone,
) -> Result<(), ChartError> {
    for k in 0..4 {
        let pts: Vec<(i32, i32)> =
            points.clone().filter(|(_, v)| v[k].is_finite()).map(|(x, v)| (f.px(x), f.py(v[k]))).collect();
        pen.path(dedup_pixels(pts), theme.series_colour(k), 2.0)?;
    }
    Ok(())
}

/// The legend entry of the proven interval's two dashed lines.
const PROVEN_LABEL: &str = "proven, at least / at most";

/// The y extent with the proven lower bound in it (the upper one may run far above the formulas:
/// it is drawn up to the frame's top edge, and the alt text gives its values).
fn with_proven(extent: Option<(f64, f64)>, proven: &[ProvenPoint]) -> Option<(f64, f64)> {
    proven
        .iter()
        .filter_map(|p| p.1)
        .filter(|v| v.is_finite())
        .fold(extent, |ext, v| Some(ext.map_or((v, v), |(a, b)| (a.min(v), b.max(v)))))
}

/// The proven interval as two dashed lines, each clamped to the frame.
fn draw_proven<DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    theme: &Theme,
    proven: &[ProvenPoint],
    y_range: (f64, f64),
    x_of: impl Fn(f64) -> f64,
) -> Result<(), ChartError> {
    let clamp = |v: f64| v.clamp(y_range.0, y_range.1);
    let least: Vec<(i32, i32)> = proven.iter().filter_map(|p| p.1.map(|v| (f.px(x_of(p.0)), f.py(clamp(v))))).collect();
    // Unbounded (ε ≥ 1) reads as the frame's top.
    let most: Vec<(i32, i32)> =
        proven.iter().map(|p| (f.px(x_of(p.0)), f.py(clamp(p.2.unwrap_or(f64::INFINITY))))).collect();
    pen.dashed(dedup_pixels(least), theme.reference, 2.0)?;
    pen.dashed(dedup_pixels(most), theme.reference, 2.0)
}

/// "proven at ε: at least N (by), at most M": the proven interval at the model's point for alt text.
fn proven_at_point(p: &ProvenPoint) -> String {
    let count = |x: Option<f64>| x.map_or("unboundedly many".to_string(), scientific_from_log10);
    format!("proven: at least {}, at most {} directions", count(p.1), count(p.2))
}

// ---------------------------------------------------------------------------------------------
// Capacity against d
// ---------------------------------------------------------------------------------------------

/// The d chart in words.
pub fn capacity_vs_dim_text(d: u64, epsilon: f64) -> ChartText {
    let (lo, hi) = default_dim_window(d);
    let series = capacity_vs_dim(epsilon, lo, hi, CURVE_POINTS);
    let mut alt = format!(
        "Capacity k (log scale) against d_model (log scale) at ε = {}, for d from {lo} to {hi}, under four formulas: {} ({}).",
        significant(epsilon, 4),
        FORMULA_NAMES.join("; "),
        eq7_constants()
    );
    alt.push_str(&format!(" At this model's d = {d}: {}.", at_point(&estimate::capacities(d, epsilon))));
    if let Some(p) = proven_vs_dim(epsilon, d, d, 1).first() {
        alt.push_str(&format!(" Dashed, what is proven; at d = {d}: {}.", proven_at_point(p)));
    }
    if let (Some(first), Some(last)) = (series.first(), series.last()) {
        alt.push_str(&format!(
            " Across the range the Eq. 7 capacity runs from {} to {}.",
            scientific_from_log10(first.1.adjusted_full),
            scientific_from_log10(last.1.adjusted_full)
        ));
    }
    let mut notes = Vec::new();
    if !estimate::capacity_determinate(epsilon) {
        notes.push(format!(
            "At ε = {} the paper prints no finite capacity; the curves extrapolate the formulas.",
            significant(epsilon, 4)
        ));
    }
    ChartText { alt, notes }
}

/// Powers of two inside [lo, hi] as ticks on a log2 axis, thinned to fit `width`.
fn octave_ticks(lo: u64, hi: u64, width: i32, s: &Sizes) -> Vec<(f64, String)> {
    let (a, b) = ((lo.max(1) as f64).log2().ceil() as u32, (hi.max(1) as f64).log2().floor() as u32);
    let all: Vec<(f64, String)> = (a..=b.min(63)).map(|k| (k as f64, (1u64 << k).to_string())).collect();
    let mut every = 1;
    loop {
        let ticks: Vec<(f64, String)> = all.iter().step_by(every).cloned().collect();
        let widest = ticks.iter().map(|(_, l)| s.text_width(l, layout::FONT_TICK)).max().unwrap_or(0);
        let room = if ticks.len() > 1 { width / (ticks.len() as i32 - 1) } else { width };
        if ticks.len() <= 2 || room >= widest + s.len(2.0 * layout::FONT_TICK) {
            return ticks;
        }
        every += 1;
    }
}

/// log10 k against d (log axis, d/4 to 4d) at the model's ε, a vertical line at the model's d.
pub fn draw_capacity_vs_dim<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: u64,
    epsilon: f64,
    theme: &Theme,
    scale: f64,
) -> Result<ChartText, ChartError> {
    draw_vs_dim(area, d, epsilon, theme, canvas_sizes(scale))
}

pub(super) fn draw_vs_dim<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    d: u64,
    epsilon: f64,
    theme: &Theme,
    s: Sizes,
) -> Result<ChartText, ChartError> {
    let text = capacity_vs_dim_text(d, epsilon);
    fill_background(area, theme)?;
    let pen = Pen { area, s };
    let (lo, hi) = default_dim_window(d);
    let series: Vec<(f64, [f64; 4])> = capacity_vs_dim(epsilon, lo, hi, CURVE_POINTS)
        .into_iter()
        .map(|(dd, c)| ((dd as f64).log2(), values(&c)))
        .collect();
    let proven = proven_vs_dim(epsilon, lo, hi, CURVE_POINTS);
    let extent = with_proven(y_extent(series.iter().map(|(_, v)| v)), &proven);
    let (y_range, y_ticks) = decade_axis(extent.map_or(0.0, |e| e.0), extent.map_or(1.0, |e| e.1));
    let x_range = ((lo as f64).log2(), (hi as f64).log2());

    let mut legend = legend_with_formulas(theme);
    legend.push(LegendItem { swatch: Swatch::Dashed(theme.reference), label: PROVEN_LABEL.to_string() });
    let shade = !estimate::capacity_determinate(epsilon);
    if shade {
        legend.push(LegendItem { swatch: Swatch::Band(theme.indeterminate), label: INDETERMINATE_LABEL.to_string() });
    }
    legend.push(LegendItem { swatch: Swatch::Line(theme.epsilon), label: format!("this model: d = {d}") });

    let (width, height) = area.dim_in_pixel();
    let y_labels: Vec<String> = y_ticks.iter().map(|(_, l)| l.clone()).collect();
    let end = hi.to_string();
    let l = layout::layout(width, height, &s, &legend, &y_labels, &end, (x_range, y_range))?;
    let f = l.frame;
    let x_ticks = octave_ticks(lo, hi, f.right - f.left, &s);
    if shade {
        pen.fill_rect((f.left, f.top), (f.right, f.bottom), theme.indeterminate, BAND_ALPHA)?;
    }
    let title = format!("Capacity against d_model at ε = {}", significant(epsilon, 4));
    draw_furniture(
        &pen,
        &l,
        theme,
        &title,
        &legend,
        &x_ticks,
        &y_ticks,
        "d_model (log scale)",
        "capacity k (log scale)",
    )?;
    draw_proven(&pen, &f, theme, &proven, y_range, |dd| dd.max(1.0).log2())?;
    draw_curves(&pen, &f, theme, series.iter().map(|(x, v)| (*x, v)))?;
    let x = f.px((d.max(1) as f64).log2());
    pen.path(vec![(x, f.bottom), (x, f.top)], theme.epsilon, 2.0)?;
    draw_frame(&pen, &f, theme)?;
    if extent.is_none() {
        draw_centred_message(&pen, &f, theme, "no finite capacity to plot")?;
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decade_axis_uses_whole_powers_of_ten() {
        let ((a, b), ticks) = decade_axis(0.3, 7.6);
        assert_eq!((a, b), (0.0, 8.0));
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["10⁰", "10²", "10⁴", "10⁶", "10⁸"]);
        let ((a, b), ticks) = decade_axis(0.0, 1100.0);
        assert!(a == 0.0 && b >= 1100.0 && ticks.len() <= 6, "({a}, {b}) {ticks:?}");
        let ((a, b), _) = decade_axis(3.0, 3.0);
        assert!(b > a);
    }
}
