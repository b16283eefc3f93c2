//! Why ε is what it is (issue 10): the spectrum of G/V and the coordinates that carry μ, read out
//! in one sentence, a table and the leading eigenvalues. Every figure is a field of
//! [`Report::geometry`]; the worker adds it after the result is shown.

use leptos::prelude::*;

use super::controller::State;
use crate::report::{significant, Report};

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
        crate::geometry::GeometryTiming::WithTheResult => "computed with the result",
        crate::geometry::GeometryTiming::AfterTheResult => "computed after the result was shown",
    };
    view! {
        <div class="geometry" data-testid="geometry">
            <h3>"Why ε is what it is: the spectrum of G and the dimensions that carry μ"</h3>
            <p data-testid="geometry-sentence">{sentence}</p>
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
