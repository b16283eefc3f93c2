//! The output matrix (unembedding), when the model has one of its own: its pairwise statistics and
//! histogram (paper Fig. 10) and each token's input row against its output row (Fig. 9). Neither is
//! the paper's ε, and each says so where it is shown.

use leptos::prelude::*;

use crate::charts::Counted;
use crate::result::report::{group_digits, significant, UnembeddingReport};
use crate::result::trained::summary;
use crate::ui::chart::{mu_epsilon_markers, ChartCanvas, ChartSpec};

/// The unembedding's section: its tensor, shape and dtype, μ, σ and μ + 2σ (exact or with their
/// interval), why it is not the paper's ε, and its charts.
#[component]
pub fn Unembedding(
    /// The output matrix's summary (`Report::unembedding`).
    unembedding: UnembeddingReport,
    /// μ of the embedding's own pairs, for scale beside the per-token cosines.
    mu: f64,
    /// ε of the embedding's own pairs, for scale beside the per-token cosines.
    epsilon: f64,
    /// Base of the exported file names (`export_stem`).
    stem: String,
) -> impl IntoView {
    let u = unembedding;
    let interval = u.mu_plus_2sigma_ci.map_or_else(
        || "exact".to_string(),
        |[lo, hi]| {
            format!(
                "95 % interval [{}, {}] from {} of {} rows",
                significant(lo, 4),
                significant(hi, 4),
                group_digits(u.rows_seen),
                group_digits(u.rows)
            )
        },
    );
    view! {
        <div class="unembedding" data-testid="unembedding">
            <h3>{format!("Unembedding {} ({} × {}, {})", u.tensor, group_digits(u.rows), group_digits(u.dim), u.dtype)}</h3>
            <p>{format!("μ = {} · σ = {} · μ + 2σ = {} ({interval})", significant(u.mu, 5), significant(u.sigma, 5), significant(u.mu_plus_2sigma, 5))}</p>
            {u.trained.as_ref().map(|t| view! { <p data-testid="unembedding-trained">{format!("Its rows, {}.", summary(t).replacen("without", "Without", 1))}</p> })}
            <p class="note">{u.note.clone()}</p>
            <UnembeddingCharts unembedding=u mu=mu epsilon=epsilon stem=stem />
        </div>
    }
}

/// The unembedding's own pairwise histogram (paper Fig. 10) and the per-token cosines of embedding
/// and unembedding rows (Fig. 9), both marked as not the paper's ε.
#[component]
fn UnembeddingCharts(
    /// The output matrix's summary (`Report::unembedding`).
    unembedding: UnembeddingReport,
    /// μ of the embedding's own pairs, for scale.
    mu: f64,
    /// ε of the embedding's own pairs, for scale.
    epsilon: f64,
    /// Base of the exported file names (`export_stem`).
    stem: String,
) -> impl IntoView {
    let u = unembedding;
    let pairwise = u.histogram.clone().map(|h| {
        let spec = ChartSpec::Histogram {
            title: "Unembedding: pairwise cosines of its rows (Fig. 10), not the paper's ε".into(),
            series: vec![(format!("{} (μ + 2σ = {})", u.tensor, significant(u.mu_plus_2sigma, 3)), h)],
            // Named μ + 2σ, never ε: this matrix is not the one the paper's ε is about.
            markers: mu_epsilon_markers(u.mu, u.mu_plus_2sigma, u.mu_plus_2sigma_ci)
                .into_iter()
                .map(|mut m| {
                    m.label = m.label.replace('ε', "μ + 2σ");
                    m
                })
                .collect(),
            reference: None,
            counted: Counted::Pairs,
        };
        view! { <ChartCanvas spec=spec testid="unembedding-histogram" file_stem=format!("{stem}-unembedding-pairwise") /> }
    });
    let alignment = u.alignment.clone().map(|a| {
        let text = format!(
            "Per token, cos(embedding row, unembedding row): mean {} ± {} over {} tokens (min {}, max {}). For scale, the embedding's own pairs have μ = {} and ε = {}.",
            significant(a.mean, 4),
            significant(a.sigma, 3),
            a.tokens,
            significant(a.min, 3),
            significant(a.max, 3),
            significant(mu, 4),
            significant(epsilon, 4),
        );
        let spec = ChartSpec::Histogram {
            title: "Per-token cosine of embedding and unembedding rows (Fig. 9), not the paper's ε".into(),
            series: vec![(format!("{} vs {}", a.embedding, a.unembedding), a.histogram.clone())],
            markers: Vec::new(),
            reference: None,
            counted: Counted::Tokens,
        };
        (
            view! {
                <p data-testid="token-alignment">{text}</p>
                <p class="note">{a.note.clone()}</p>
            },
            view! { <ChartCanvas spec=spec testid="token-alignment-histogram" file_stem=format!("{stem}-token-alignment") /> },
        )
    });
    let (alignment_text, alignment_chart) = alignment.map_or((None, None), |(t, c)| (Some(t), Some(c)));
    view! {
        {alignment_text}
        <div class="charts two">{pairwise}{alignment_chart}</div>
    }
}
