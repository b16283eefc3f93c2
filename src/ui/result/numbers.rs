//! "All numbers": every figure of the report in one table, for a reader who wants more than the
//! headline (what was read, what was dropped, every capacity and what it is, the proven interval,
//! how long it took).

use leptos::prelude::*;

use crate::result::proven;
use crate::result::report::{group_digits, scientific_from_log10, significant, Report};

/// A capacity as a count of directions, with its log10 beside it.
fn capacity_text(log10: f64) -> String {
    format!("{} (log10 {:.2})", scientific_from_log10(log10), log10)
}

/// The table of every number (collapsed under "All numbers"): the tensor and why it was chosen, the
/// file, shape and dtype, dropped rows, pairs, μ, σ, ε, μ + 3σ, the four capacity bounds, tied
/// embeddings, seed and timing.
#[component]
pub fn NumbersTable(
    /// The result on display.
    report: Report,
) -> impl IntoView {
    let r = report;
    let c = r.log10_capacity;
    let mut numbers = vec![
        ("tensor", format!("{} ({})", r.tensor, r.tensor_reason)),
        ("file", format!("{} · {}", r.file, r.format)),
        ("dtype · V × d", format!("{} · {} × {}", r.dtype, group_digits(r.rows), group_digits(r.dim))),
        (
            "rows dropped",
            format!(
                "{} ({} zero, {} NaN/Inf)",
                group_digits(r.rows_dropped),
                group_digits(r.rows_dropped_zero),
                group_digits(r.rows_dropped_nonfinite)
            ),
        ),
        ("pairs", format!("{} ({})", group_digits(r.pairs), if r.exact { "all" } else { "among the rows seen" })),
        ("μ, mean cosine", significant(r.mu, 5)),
        ("σ, standard deviation", significant(r.sigma, 5)),
        ("ε = μ + 2σ", significant(r.epsilon, 5)),
        ("μ + 3σ", significant(r.epsilon_3sigma, 5)),
        ("capacity, the paper's law, Eq. 7 (a fit)", capacity_text(c.adjusted_full)),
        ("capacity, the paper's law, Eq. 6 (a fit)", capacity_text(c.adjusted_simple)),
        ("JL, C = 3.029 (a lower bound)", capacity_text(c.jl_c3029)),
        ("JL, C = 8 (a lower bound)", capacity_text(c.jl_c8)),
    ];
    if let Some(p) = r.capacity_proven {
        let log = |x: Option<f64>| x.map_or("unbounded".to_string(), capacity_text);
        numbers.push((
            "proven: at least",
            format!("{} ({})", log(p.log10_at_least), proven::at_least_by_text(p.at_least_by)),
        ));
        numbers
            .push(("proven: at most", format!("{} ({})", log(p.log10_at_most), proven::at_most_by_text(p.at_most_by))));
        numbers.push((
            "proven: floor on max |cos|",
            format!(
                "{} for {} rows ({})",
                significant(p.floor_max_cos, 5),
                group_digits(r.rows_used),
                proven::floor_by_text(p.floor_by)
            ),
        ));
    }
    numbers.extend([
        (
            "tied embeddings",
            format!("{} — {}", r.tied.map_or("unknown", |t| if t { "yes" } else { "no" }), r.tied_evidence),
        ),
        ("seed", r.seed.to_string()),
        (
            "time",
            format!(
                "{} ms ({} worker{} · SIMD: {}{}{})",
                group_digits(r.timing_ms.max(0.0) as u64),
                r.workers,
                if r.workers == 1 { "" } else { "s" },
                r.kernel,
                r.gram_gflops.map_or(String::new(), |g| format!(", {g:.1} GFLOP/s")),
                // Why f64 ran where f32 is the default (kernel::f32_suffices).
                if r.precision_reason.is_empty() { String::new() } else { format!("; f64: {}", r.precision_reason) }
            ),
        ),
    ]);
    view! {
        <details class="numbers-details">
            <summary>"All numbers"</summary>
            <table class="numbers">
                <tbody>
                    {numbers.into_iter().map(|(k, v)| view! { <tr><th scope="row">{k}</th><td>{v}</td></tr> }).collect_view()}
                </tbody>
            </table>
        </details>
    }
}
