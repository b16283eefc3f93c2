//! Why ε is what it is: the spectrum of G/V and the coordinates that carry μ, read out
//! in one sentence, a table and the leading eigenvalues. Every figure is a field of
//! [`Report::geometry`]; the worker adds it after the result is shown.

use leptos::prelude::*;

use super::chart::drawn_width;
use super::controller::State;
use crate::charts::{Axis, FrameSpec, PlotFrame, Sizes};
use crate::explain::geometry::{geometry_expected, Geometry, FULL_SPECTRUM_MAX_DIM, MAX_GEOMETRY_DIM};
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
                {if dim <= FULL_SPECTRUM_MAX_DIM as u64 {
                    format!("Computing the spectrum of G (d = {dim}): the eigen step runs after the result is shown and takes seconds, up to a minute at d = 4096.")
                } else {
                    format!("Computing the leading eigenvalues of G (d = {dim}, Lanczos): they follow the result within seconds.")
                }}
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
        effective_rank_text(&g),
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
    let total = g.total();
    let shown: Vec<f64> = g.eigenvalues.iter().take(EIGENVALUES_SHOWN).copied().collect();
    let shown_share = if total > 0.0 { 100.0 * shown.iter().sum::<f64>() / total } else { 0.0 };
    let eigenvalues = shown.iter().map(|l| significant(*l, 3)).collect::<Vec<_>>().join(", ");
    let when = match g.timing {
        crate::explain::geometry::GeometryTiming::WithTheResult => "computed with the result",
        crate::explain::geometry::GeometryTiming::AfterTheResult => "computed after the result was shown",
    };
    let which = g.spectrum_label(report.dim);
    // Lanczos values carry their error bound: each lies within it of an eigenvalue of G/V.
    let convergence = g.lanczos.as_ref().map_or_else(String::new, |l| {
        format!(
            " Lanczos: {} steps, {} of {} values within {} of an eigenvalue.",
            l.steps,
            l.converged,
            g.eigenvalues.len(),
            significant(l.max_error, 2)
        )
    });
    let method = if g.eigenvalues_complete { "full" } else { "lanczos" };
    view! {
        <div class="geometry" data-testid="geometry" data-spectrum=method>
            <h3>"Why ε is what it is: the spectrum of G and the dimensions that carry μ"</h3>
            <p data-testid="geometry-sentence">{sentence}</p>
            <Spectrum eigenvalues=g.eigenvalues.clone() total=total label=which.clone() />
            <table class="numbers geometry-dims">
                <caption>"Coordinates k with the largest share cₖ = (sₖ² − Gₖₖ)/(V(V−1)) of μ (Σₖ cₖ = μ)"</caption>
                <thead>
                    <tr><th scope="col">"dimension k"</th><th scope="col">"cₖ"</th><th scope="col">"share of μ"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            <p class="note geometry-eigenvalues">
                {format!(
                    "Leading eigenvalues of G/V (they sum to 1; these {} hold {shown_share:.1} %; computed: {which}): {eigenvalues}. Eigen step {:.1} s, {when}.{convergence}",
                    shown.len(),
                    g.eigen_ms / 1000.0,
                )}
            </p>
        </div>
    }
    .into_any()
}

/// Outer size of the spectrum in SVG user units (CSS px at full width); its margins and scales are
/// the charts' [`PlotFrame`], sized from its tick labels.
const SW: f64 = 600.0;
const SH: f64 = 240.0;
/// The narrowest the spectrum is laid out.
const MIN_SW: f64 = 280.0;
/// Decades of λ shown below the largest: smaller eigenvalues sit on the floor.
const DECADES: f64 = 8.0;

/// The effective rank, or the interval it lies in when only the leading eigenvalues are known.
fn effective_rank_text(g: &Geometry) -> String {
    match (g.effective_rank, g.effective_rank_bounds) {
        (Some(er), _) => significant(er, 3),
        (None, Some([lo, hi])) => {
            format!(
                "between {} and {} (bounds from the leading eigenvalues, the trace and ‖G‖_F)",
                significant(lo, 3),
                significant(hi, 3)
            )
        }
        (None, None) => "not computed".to_string(),
    }
}

/// The spectrum of G/V on log scales (λₖ against k), with the cumulative share Σ_{j≤k} λⱼ/Σλ:
/// how many directions hold the second moment. Drawn as SVG (no bitmap, its numbers in its label).
/// Where only the leading eigenvalues were computed it draws those, against the whole trace.
#[component]
fn Spectrum(
    /// Eigenvalues of G/V, descending: all of them or the leading ones.
    eigenvalues: Vec<f64>,
    /// Σλ over all d eigenvalues (the trace of G/V).
    total: f64,
    /// Which eigenvalues these are ("all 512 eigenvalues", "leading 64 of 8192 eigenvalues (Lanczos)").
    label: String,
) -> impl IntoView {
    let wrapper = NodeRef::<leptos::html::Div>::new();
    let width = drawn_width(wrapper, SW, MIN_SW);
    let (eigenvalues, label) = (StoredValue::new(eigenvalues), StoredValue::new(label));
    view! {
        <div class="map-box" node_ref=wrapper>
            {move || eigenvalues.with_value(|e| label.with_value(|l| spectrum(width.get(), e, total, l)))}
        </div>
    }
}

/// The spectrum laid out `width` CSS pixels wide.
fn spectrum(width: f64, eigenvalues: &[f64], total: f64, label: &str) -> AnyView {
    let n = eigenvalues.len();
    let top = eigenvalues.first().copied().unwrap_or(0.0);
    if n < 2 || top <= 0.0 || total <= 0.0 {
        return ().into_any();
    }
    let y_hi = top.log10().ceil();
    let x_axis = Axis::log10(1.0, n as f64);
    let y_axis = Axis::log10(10f64.powf(y_hi - DECADES), 10f64.powf(y_hi));
    let share_axis = Axis::linear(0.0, 1.0);
    // λ every second decade, k at each decade (d stays below 10⁵), the share at 0, ½ and 1.
    let decades = y_axis.ticks(DECADES as usize / 2);
    let ks = x_axis.ticks(5);
    let fractions = share_axis.ticks(2);
    let decade_labels: Vec<String> = decades.iter().map(|v| format!("1e{}", v.log10().round() as i64)).collect();
    let k_labels: Vec<String> = ks.iter().map(|k| format!("{k:.0}")).collect();
    let share_labels: Vec<String> = fractions.iter().map(|f| format!("{:.0} %", 100.0 * f)).collect();
    let spec = FrameSpec {
        left_labels: &decade_labels,
        right_labels: &share_labels,
        x_labels: &k_labels,
        x_title: true,
        ..FrameSpec::new(width, SH, Sizes::new(1.0, 1.0))
    };
    let Ok(frame) = PlotFrame::new(&spec) else { return ().into_any() };
    let x = |k: usize| frame.x(&x_axis, k as f64);
    // Eigenvalues below the floor (and zeros) sit on it.
    let y = |l: f64| frame.y_at(y_axis.fraction(l).max(0.0));
    let y_share = |f: f64| frame.y(&share_axis, f);
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
    let half = if half_at < n || cumulative >= 0.5 * total {
        format!("half of the second moment lies in the top {half_at} of {n} directions")
    } else {
        format!("these {n} hold {:.0} % of the second moment", 100.0 * cumulative / total)
    };
    let label = format!(
        "Spectrum of G/V ({label}): λ₁ = {} ({:.0} % of Σλ); {half}.",
        significant(top, 3),
        100.0 * top / total
    );
    view! {
        <figure class="chart spectrum-figure">
            <svg class="map spectrum" xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 {width} {SH}") role="img" aria-label=label.clone() data-testid="spectrum">
                <line class="axis" x1=frame.left x2=frame.right y1=frame.bottom y2=frame.bottom></line>
                <line class="axis" x1=frame.left x2=frame.left y1=frame.top y2=frame.bottom></line>
                <line class="axis" x1=frame.right x2=frame.right y1=frame.top y2=frame.bottom></line>
                {decades.into_iter().zip(decade_labels).map(|(d, label)| view! {
                    <line class="grid" x1=frame.left x2=frame.right y1=y(d) y2=y(d)></line>
                    <text class="tick" x=frame.left_labels_end y=y(d) text-anchor="end" dominant-baseline="central">{label}</text>
                }).collect_view()}
                {ks.into_iter().zip(k_labels).map(|(k, label)| view! {
                    <text class="tick" x=frame.x(&x_axis, k) y=frame.x_labels.middle() text-anchor="middle" dominant-baseline="central">{label}</text>
                }).collect_view()}
                {fractions.into_iter().zip(share_labels).map(|(f, label)| view! {
                    <text class="tick" x=frame.right_labels_start y=y_share(f) text-anchor="start" dominant-baseline="central">{label}</text>
                }).collect_view()}
                <polyline class="spectrum-line" points=spectrum></polyline>
                <polyline class="share-line" points=shares></polyline>
                <text class="axis-title" x=(frame.left + frame.right) / 2.0 y=frame.x_title.middle() text-anchor="middle" dominant-baseline="central">"eigenvalue index k (log scale)"</text>
            </svg>
            <figcaption>
                <span class="chart-note">"Solid: λₖ of G/V (left, log scale). Dashed: cumulative share of Σλ (right)."</span>
                <span class="sr-only">{label}</span>
            </figcaption>
        </figure>
    }
    .into_any()
}
