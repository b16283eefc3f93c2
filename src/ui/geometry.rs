//! Why ε is what it is: the spectrum of G/V and the coordinates that carry μ, read out
//! in one sentence, a table and the leading eigenvalues. Every figure is a field of
//! [`Report::geometry`]; the worker adds it after the result is shown.

use leptos::prelude::*;

use super::controller::State;
use crate::explain::geometry::{geometry_expected, Geometry, MAX_GEOMETRY_DIM};
use crate::result::report::{significant, Report};

/// One sentence that reads a geometry (the compare view puts one per result side by side).
pub fn reading(g: &Geometry, mu: f64) -> String {
    let top = g.top_mean_dimensions.first();
    let dim_part = match top {
        Some(m) if mu != 0.0 => {
            format!("; coordinate {} alone carries {:.0} % of μ", m.dim, 100.0 * m.contribution / mu)
        }
        _ => String::new(),
    };
    format!(
        "One direction carries {:.0} % of the second moment; the rows spread over about {} directions (participation ratio){dim_part}.",
        100.0 * g.leading_share(),
        significant(g.participation_ratio, 3),
    )
}

/// Why a report has no geometry, for a table cell: only exact passes get one, and a permalink
/// never carries it (the spectrum is d numbers; links stay short).
pub fn missing_reason(report: &Report) -> String {
    if !report.exact {
        "not computed: an estimate (the spectrum needs the exact pass)".to_string()
    } else if !geometry_expected(report.exact, report.dim) {
        format!("not computed: d above {MAX_GEOMETRY_DIM}")
    } else {
        "not in shared links".to_string()
    }
}

/// Eigenvalues printed as text.
const EIGENVALUES_SHOWN: usize = 20;

/// The geometry of the result on display, or what is happening to it.
#[component]
pub fn GeometrySection(
    /// The result on display.
    report: Report,
    /// Page state (whether the worker is still computing the geometry).
    state: State,
) -> impl IntoView {
    let dim = report.dim;
    move || {
        match (&report.geometry, state.geometry_pending.get(), state.geometry_message.get()) {
        (Some(_), _, _) => view! { <GeometryPanel report=report.clone() /> }.into_any(),
        (None, true, _) => view! {
            <p class="note geometry-pending" data-testid="geometry-pending" role="status">
                {format!("Computing the spectrum of G (d = {dim}): the eigen step runs after the result is shown and takes seconds, up to a minute at d = 4096.")}
            </p>
        }
        .into_any(),
        (None, false, message) if !message.is_empty() => view! {
            <p class="note" data-testid="geometry-failed">{format!("No spectrum for this result: {message}")}</p>
        }
        .into_any(),
        _ => ().into_any(),
    }
    }
}

/// The sentence, the table of the dimensions that carry μ, and the leading eigenvalues.
#[component]
pub fn GeometryPanel(
    /// A report with its geometry.
    report: Report,
) -> impl IntoView {
    let Some(g) = report.geometry.clone() else { return ().into_any() };
    let share = 100.0 * g.leading_share();
    let top_share: f64 = g.top_mean_dimensions.iter().map(|m| m.contribution).sum();
    let dims: Vec<String> = g.top_mean_dimensions.iter().map(|m| m.dim.to_string()).collect();
    let sentence = format!(
        "One direction carries {share:.0} % of the second moment (λ₁/Σλ); the participation ratio is {} and the effective rank {} of d = {} dimensions. The mean unit row has length ‖s/V‖ = {}. The {} coordinates that carry most of μ ({}) together give {} of μ = {}.",
        significant(g.participation_ratio, 3),
        significant(g.effective_rank, 3),
        report.dim,
        significant(g.mean_vector_norm, 3),
        dims.len(),
        dims.join(", "),
        significant(top_share, 3),
        significant(report.mu, 4),
    );
    let mu = report.mu;
    let rows = g
        .top_mean_dimensions
        .iter()
        .map(|m| {
            let of_mu = if mu != 0.0 { format!("{:.1} %", 100.0 * m.contribution / mu) } else { "–".to_string() };
            view! {
                <tr>
                    <th scope="row">{m.dim}</th>
                    <td>{significant(m.contribution, 4)}</td>
                    <td>{of_mu}</td>
                </tr>
            }
        })
        .collect_view();
    let total: f64 = g.eigenvalues.iter().sum();
    let shown: Vec<f64> = g.eigenvalues.iter().take(EIGENVALUES_SHOWN).copied().collect();
    let shown_share = if total > 0.0 { 100.0 * shown.iter().sum::<f64>() / total } else { 0.0 };
    let eigenvalues = shown.iter().map(|l| significant(*l, 3)).collect::<Vec<_>>().join(", ");
    let when = match g.timing {
        crate::explain::geometry::GeometryTiming::WithTheResult => "computed with the result",
        crate::explain::geometry::GeometryTiming::AfterTheResult => "computed after the result was shown",
    };
    view! {
        <div class="geometry" data-testid="geometry">
            <h3>"Why ε is what it is: the spectrum of G and the dimensions that carry μ"</h3>
            <p data-testid="geometry-sentence">{sentence}</p>
            <Spectrum eigenvalues=g.eigenvalues.clone() />
            <table class="numbers geometry-dims">
                <caption>"Coordinates k with the largest share cₖ = (sₖ² − Gₖₖ)/(V(V−1)) of μ (Σₖ cₖ = μ)"</caption>
                <thead>
                    <tr><th scope="col">"dimension k"</th><th scope="col">"cₖ"</th><th scope="col">"share of μ"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="note geometry-eigenvalues">
                {format!(
                    "Leading eigenvalues of G/V (they sum to 1; these {} hold {shown_share:.1} %): {eigenvalues}. Eigen step {:.1} s, {when}.",
                    shown.len(),
                    g.eigen_ms / 1000.0,
                )}
            </p>
        </div>
    }
    .into_any()
}

/// Plot geometry of the spectrum, in SVG user units.
const SW: f64 = 600.0;
const SH: f64 = 240.0;
const SL: f64 = 56.0;
const SR: f64 = 52.0;
const ST: f64 = 12.0;
const SB: f64 = 42.0;
/// Decades of λ shown below the largest: smaller eigenvalues sit on the floor.
const DECADES: f64 = 8.0;

/// The spectrum of G/V on log scales (λₖ against k), with the cumulative share Σ_{j≤k} λⱼ/Σλ:
/// how many directions hold the second moment. Drawn as SVG (no bitmap, its numbers in its label).
#[component]
fn Spectrum(
    /// Eigenvalues of G/V, descending.
    eigenvalues: Vec<f64>,
) -> impl IntoView {
    let n = eigenvalues.len();
    let total: f64 = eigenvalues.iter().filter(|l| **l > 0.0).sum();
    let top = eigenvalues.first().copied().unwrap_or(0.0);
    if n < 2 || top <= 0.0 || total <= 0.0 {
        return ().into_any();
    }
    let (y_hi, y_lo) = (top.log10().ceil(), top.log10().ceil() - DECADES);
    let x = |k: usize| SL + ((k as f64).ln() / (n as f64).ln()) * (SW - SL - SR);
    let y = |l: f64| {
        let v = if l > 0.0 { l.log10().max(y_lo) } else { y_lo };
        ST + (y_hi - v) / (y_hi - y_lo) * (SH - ST - SB)
    };
    let y_share = |f: f64| ST + (1.0 - f) * (SH - ST - SB);
    let mut cumulative = 0.0;
    let mut spectrum = String::new();
    let mut shares = String::new();
    let mut half_at = n;
    for (i, &l) in eigenvalues.iter().enumerate() {
        let k = i + 1;
        cumulative += l.max(0.0);
        let f = cumulative / total;
        if f >= 0.5 && half_at == n {
            half_at = k;
        }
        spectrum.push_str(&format!("{:.1},{:.1} ", x(k), y(l)));
        shares.push_str(&format!("{:.1},{:.1} ", x(k), y_share(f.min(1.0))));
    }
    let label = format!(
        "Spectrum of G/V: λ₁ = {} ({:.0} % of Σλ); half of the second moment lies in the top {half_at} of {n} directions.",
        significant(top, 3),
        100.0 * top / total
    );
    let decades: Vec<f64> = (0..=DECADES as i32).step_by(2).map(|i| y_hi - i as f64).collect();
    let ks: Vec<usize> = [1usize, 10, 100, 1000, 10000].into_iter().filter(|&k| k <= n).collect();
    view! {
        <figure class="chart spectrum-figure">
            <svg class="map spectrum" xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 {SW} {SH}") role="img" aria-label=label.clone() data-testid="spectrum">
                <line class="axis" x1=SL x2=SW - SR y1=SH - SB y2=SH - SB></line>
                <line class="axis" x1=SL x2=SL y1=ST y2=SH - SB></line>
                <line class="axis" x1=SW - SR x2=SW - SR y1=ST y2=SH - SB></line>
                {decades.into_iter().map(|d| view! {
                    <line class="grid" x1=SL x2=SW - SR y1=y(10f64.powf(d)) y2=y(10f64.powf(d))></line>
                    <text class="tick" x=SL - 6.0 y=y(10f64.powf(d)) + 4.0 text-anchor="end">{format!("1e{}", d as i64)}</text>
                }).collect_view()}
                {ks.into_iter().map(|k| view! {
                    <text class="tick" x=x(k) y=SH - SB + 16.0 text-anchor="middle">{k.to_string()}</text>
                }).collect_view()}
                {[0.0, 0.5, 1.0].into_iter().map(|f| view! {
                    <text class="tick" x=SW - SR + 6.0 y=y_share(f) + 4.0 text-anchor="start">{format!("{:.0} %", 100.0 * f)}</text>
                }).collect_view()}
                <polyline class="spectrum-line" points=spectrum></polyline>
                <polyline class="share-line" points=shares></polyline>
                <text class="axis-title" x=SL + (SW - SL - SR) / 2.0 y=SH - 6.0 text-anchor="middle">"eigenvalue index k (log scale)"</text>
            </svg>
            <figcaption>
                <span class="chart-note">"Solid: λₖ of G/V (left, log scale). Dashed: cumulative share of Σλ (right)."</span>
                <span class="sr-only">{label}</span>
            </figcaption>
        </figure>
    }
    .into_any()
}
