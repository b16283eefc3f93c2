//! Comparison across models (or checkpoints): every analysis of the session is a row; chosen rows'
//! histograms are overlaid, like the paper's Fig. 1/2, with a random-init reference for the same d.

use leptos::prelude::*;

use super::chart::{ChartCanvas, ChartSpec};
use super::controller::State;
use super::geometry::{missing_reason, reading};
use super::result::headline_capacity;
use super::session::Entry;
use crate::charts::Counted;
use crate::pass::stats::SampledHistogram;
use crate::read::locate::TensorRole;
use crate::result::paper;
use crate::result::report::{group_digits, scientific_from_log10, significant, Report};

/// What an entry's matrix is: an embedding, an SAE dictionary's features (of layer N), or another
/// matrix.
pub fn role_text(r: &Report) -> String {
    match r.tensor_role {
        TensorRole::InputEmbedding => "embedding".to_string(),
        TensorRole::OutputMatrix => "output matrix".to_string(),
        TensorRole::Other => "other matrix".to_string(),
        TensorRole::SaeDecoder => {
            let d = r.dictionary.as_ref().map(|d| &d.dictionary);
            let layer = d
                .and_then(|d| d.layer)
                .map_or_else(|| "features, layer unknown".to_string(), |l| format!("features of layer {l}"));
            if d.is_some_and(|d| d.transcoder) {
                format!("{layer} (output side)")
            } else {
                layer
            }
        }
    }
}

/// ε with its half-interval when estimated.
fn epsilon_text(r: &Report) -> String {
    match r.epsilon_ci {
        Some([lo, hi]) => format!("{} ± {}", significant(r.epsilon, 4), significant((hi - lo) / 2.0, 2)),
        None => significant(r.epsilon, 4),
    }
}

/// Each dictionary of the session beside an embedding of its width (the first in the table's
/// order): ε of the features and ε of the embedding, the paper's hypothesis that the embedding's
/// geometry reflects the latent space put to a measurement. Shown when the session holds both.
#[component]
fn FeaturesBesideEmbedding(
    /// The session's entries.
    entries: RwSignal<Vec<Entry>>,
) -> impl IntoView {
    let shown = move || {
        entries.with(|list| {
            let is = |e: &&Entry, role: TensorRole| e.report.tensor_role == role;
            let embeddings: Vec<&Entry> = list.iter().filter(|e| is(e, TensorRole::InputEmbedding)).collect();
            let dictionaries: Vec<&Entry> = list.iter().filter(|e| is(e, TensorRole::SaeDecoder)).collect();
            if embeddings.is_empty() || dictionaries.is_empty() {
                return None;
            }
            let rows = dictionaries
                .into_iter()
                .map(|f| {
                    let r = &f.report;
                    let beside = embeddings.iter().find(|e| e.report.dim == r.dim).map(|e| &e.report);
                    let cells = match beside {
                        Some(e) => view! {
                            <td>{epsilon_text(e)}</td>
                            <td>{format!("{} {}", e.model_name(), e.tensor)}</td>
                        }
                        .into_any(),
                        None => view! {
                            <td colspan="2" class="note">
                                {format!("no embedding of d = {} in this session: analyse the model's own to set it here", group_digits(r.dim))}
                            </td>
                        }
                        .into_any(),
                    };
                    view! {
                        <tr
                            data-testid="features-vs-embedding-row"
                            data-features-epsilon=r.epsilon.to_string()
                            data-embedding-epsilon=beside.map_or_else(String::new, |e| e.epsilon.to_string())
                        >
                            <th scope="row">{r.model_name()}<span class="dims">{format!(" {}", role_text(r))}</span></th>
                            <td>{group_digits(r.dim)}</td>
                            <td>{epsilon_text(r)}</td>
                            {cells}
                        </tr>
                    }
                })
                .collect_view();
            Some(view! {
                <div class="table-scroll" tabindex="0" role="region" aria-label="Features beside the embedding">
                    <table class="compare-table compare-features" data-testid="features-vs-embedding">
                        <caption>"Features beside the embedding: ε of each dictionary's feature directions and ε of the embedding of the same width, each over its own unit rows"</caption>
                        <thead>
                            <tr>
                                <th scope="col">"Dictionary"</th>
                                <th scope="col">"d"</th>
                                <th scope="col">"ε of the features"</th>
                                <th scope="col">"ε of the embedding"</th>
                                <th scope="col">"Embedding"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
                <p class="note">
                    "The paper shares one capacity among embeddings and features and measures only embeddings; that the embedding's geometry reflects the latent space is its hypothesis. These are the two measurements side by side, no more."
                </p>
            })
        })
    };
    view! { {shown} }
}

fn overlay_spec(entries: &[Entry], zoom: bool) -> ChartSpec {
    let chosen: Vec<&Entry> = entries.iter().filter(|e| e.overlay).collect();
    let pick = |e: &Entry| if zoom { e.report.histogram_zoom.clone() } else { e.report.histogram.clone() };
    let series: Vec<(String, SampledHistogram)> = chosen
        .iter()
        .map(|e| (format!("{} (ε {})", e.report.model_name(), significant(e.report.epsilon, 3)), pick(e)))
        .collect();
    // The reference is drawn for the first chosen row's d (the paper overlays one random init).
    let reference = chosen.first().map(|e| {
        let h = pick(e);
        (format!("random init, d = {}", e.report.dim), paper::random_init_bin_fractions(e.report.dim, &h.edges))
    });
    ChartSpec::Histogram {
        title: if zoom { "Overlay, zoom on [−0.2, 0.2]".into() } else { "Overlay, all cosines".into() },
        series,
        markers: Vec::new(),
        reference,
        counted: Counted::Pairs,
    }
}

/// The proven interval of a result, "8.39 × 10⁶ – 2.10 × 10²³" (none in reports stored before it).
fn proven_cell(r: &Report) -> String {
    let count = |x: Option<f64>| x.map_or("∞".to_string(), scientific_from_log10);
    r.capacity_proven
        .map_or_else(|| "–".to_string(), |p| format!("{} – {}", count(p.log10_at_least), count(p.log10_at_most)))
}

/// The comparison table and the overlaid histograms.
#[component]
pub fn Compare(
    /// Page state.
    state: State,
) -> impl IntoView {
    let session = state.session;
    let entries = session.entries;
    let any_overlay = move || entries.with(|e| e.iter().any(|e| e.overlay));
    let full = Signal::derive(move || entries.with(|e| overlay_spec(e, false)));
    let zoom = Signal::derive(move || entries.with(|e| overlay_spec(e, true)));
    let rows = move || {
        let list = entries.get();
        let n = list.len();
        list.into_iter()
            .enumerate()
            .map(|(i, e)| {
                let r = &e.report;
                let id = e.id;
                let name = r.model_name();
                let eps = epsilon_text(r);
                let label = format!("{name} {}", r.tensor);
                // The default choice of rules (what the report carries first), with its class.
                let trained = r.trained.as_ref().map(|t| &t.without);
                let trained_cell = trained.map_or_else(
                    || "–".to_string(),
                    |w| format!("{} ({}, {} rows set aside)", significant(w.epsilon, 4), w.class.label(), group_digits(w.rows_excluded)),
                );
                let trained_value = trained.map_or_else(String::new, |w| w.epsilon.to_string());
                view! {
                    <tr data-testid="compare-row" data-epsilon=r.epsilon.to_string() data-trained-epsilon=trained_value>
                        <td>
                            <input
                                type="checkbox"
                                prop:checked=e.overlay
                                aria-label=format!("Overlay {label}")
                                on:change=move |ev| session.set_overlay(id, event_target_checked(&ev))
                            />
                        </td>
                        <th scope="row">{name}<span class="dims">{format!(" {}", r.tensor)}</span></th>
                        <td data-testid="compare-role">{role_text(r)}</td>
                        <td>{format!("{} × {}", group_digits(r.rows), group_digits(r.dim))}</td>
                        <td>{r.dtype.clone()}</td>
                        <td>{significant(r.mu, 4)}</td>
                        <td>{significant(r.sigma, 4)}</td>
                        <td>{eps}</td>
                        <td>{r.class.label()}</td>
                        <td>{headline_capacity(r)}</td>
                        <td data-testid="compare-proven">{proven_cell(r)}</td>
                        <td>{trained_cell}</td>
                        <td class="row-actions">
                            <button type="button" class="small" disabled=i == 0 aria-label=format!("Move {label} up") on:click=move |_| session.shift(id, -1)>"↑"</button>
                            <button type="button" class="small" disabled=i + 1 == n aria-label=format!("Move {label} down") on:click=move |_| session.shift(id, 1)>"↓"</button>
                            <button type="button" class="small" aria-label=format!("Remove {label}") on:click=move |_| session.remove(id)>"Remove"</button>
                        </td>
                    </tr>
                }
            })
            .collect_view()
    };
    let geometry_rows = move || {
        entries
            .get()
            .into_iter()
            .map(|e| {
                let r = &e.report;
                let name = r.model_name();
                let cells = match &r.geometry {
                    Some(g) => {
                        let top = g.top_mean_dimensions.first().map_or_else(
                            || "–".to_string(),
                            |m| {
                                if r.mu != 0.0 {
                                    format!("{} ({:.0} % of μ)", m.dim, 100.0 * m.contribution / r.mu)
                                } else {
                                    m.dim.to_string()
                                }
                            },
                        );
                        view! {
                            <td>{significant(g.participation_ratio, 3)}</td>
                            <td>{g.effective_rank.map_or_else(|| g.effective_rank_text(), |er| significant(er, 3))}</td>
                            <td>{format!("{:.1} %", 100.0 * g.leading_share())}</td>
                            <td>{top}</td>
                            <td class="reading">{reading(g, r.mu)}</td>
                        }
                        .into_any()
                    }
                    None => view! { <td colspan="5" class="note">{missing_reason(r)}</td> }.into_any(),
                };
                view! {
                    <tr data-testid="compare-geometry-row" data-has-geometry=r.geometry.is_some().to_string()>
                        <th scope="row">{name}<span class="dims">{format!(" {}", r.tensor)}</span></th>
                        <td>{significant(r.epsilon, 4)}</td>
                        {cells}
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <section class="compare" aria-labelledby="compare-title">
            <h2 id="compare-title">"Compare models"</h2>
            <p class="note">
                "Every analysis of this session is a row (kept in this browser's storage — results only, never weights). Tick rows to overlay their histograms."
            </p>
            <div class="table-scroll" tabindex="0" role="region" aria-label="Results compared">
                <table class="compare-table">
                    <thead>
                        <tr>
                            <th scope="col">"Overlay"</th>
                            <th scope="col">"Model"</th>
                            <th scope="col">"Role"</th>
                            <th scope="col">"V × d"</th>
                            <th scope="col">"dtype"</th>
                            <th scope="col">"μ"</th>
                            <th scope="col">"σ"</th>
                            <th scope="col">"ε"</th>
                            <th scope="col">"Class"</th>
                            <th scope="col">"Capacity (Eq. 7, a fit)"</th>
                            <th scope="col">"Proven at least – at most"</th>
                            <th scope="col">"ε without untrained rows"</th>
                            <th scope="col">"Order / remove"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <FeaturesBesideEmbedding entries=entries />
            // Focusable: the table can be wider than the screen and scrolls by keyboard too.
            <div class="table-scroll" tabindex="0" role="region" aria-label="Geometry of each result">
                <table class="compare-table compare-geometry" data-testid="compare-geometry">
                    <caption>"Why ε is what it is: the spectrum of G/V per result (exact passes only)"</caption>
                    <thead>
                        <tr>
                            <th scope="col">"Model"</th>
                            <th scope="col">"ε"</th>
                            <th scope="col">"Participation ratio"</th>
                            <th scope="col">"Effective rank"</th>
                            <th scope="col">"λ₁/Σλ"</th>
                            <th scope="col">"Top dimension"</th>
                            <th scope="col">"Reading"</th>
                        </tr>
                    </thead>
                    <tbody>{geometry_rows}</tbody>
                </table>
            </div>
            <p class="buttons">
                <button type="button" data-testid="compare-clear" on:click=move |_| session.clear()>"Clear stored results"</button>
            </p>
            <Show when=any_overlay fallback=|| view! { <p class="note">"No row ticked: nothing to overlay."</p> }>
                <div class="charts two">
                    <ChartCanvas spec=full testid="overlay" file_stem="orthoscope-overlay".to_string() />
                    <ChartCanvas spec=zoom testid="overlay-zoom" file_stem="orthoscope-overlay-zoom".to_string() />
                </div>
            </Show>
        </section>
    }
}
