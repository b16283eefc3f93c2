//! A model's dictionaries layer by layer: where a folder of several dictionaries is being analysed
//! (one after another), and, once the session holds two or more with known layers, ε of their
//! features against the layer, the model's embedding ε as a dashed reference when the session
//! holds it (docs/method.md §10). The points are also a table, read by screen readers and tests.

use leptos::prelude::*;

use super::chart::{download_text, ChartCanvas, ChartSpec};
use super::controller::State;
use crate::charts::{layer_chart_of, LayerChart};
use crate::pass::estimate::class;
use crate::result::report::significant;

/// The queue of a folder's dictionaries (`data-testid="layers-queue"`) and the layer chart
/// (`data-testid="layer-chart"`, a `layer-point` row per dictionary with `data-layer`/`data-epsilon`).
#[component]
pub fn LayersPanel(
    /// Page state.
    state: State,
) -> impl IntoView {
    let chart = Memo::new(move |_| state.session.entries.with(|e| layer_chart_of(e.iter().map(|e| &e.report))));
    let shown = move || chart.with(|c| c.as_ref().is_some_and(|c| c.points.len() >= 2));
    let spec = Signal::derive(move || {
        ChartSpec::Layers(chart.get().unwrap_or_else(|| LayerChart {
            title: String::new(),
            points: Vec::new(),
            reference: None,
        }))
    });
    let csv = move |_| {
        if let Some(c) = chart.get_untracked() {
            download_text("orthoscope-layers.csv", "text/csv", &c.csv());
        }
    };
    let queue = move || {
        state.queue.get().map(|q| {
            let what = if q.running {
                format!(
                    "Analysing a folder of {} dictionaries, one after another (exact): {} done, now {}.",
                    q.total, q.done, q.current
                )
            } else if q.done == q.total {
                format!("All {} dictionaries of the folder analysed; each is a row of the comparison below.", q.total)
            } else {
                format!(
                    "{} of the folder's {} dictionaries analysed; the rest were not ({}).",
                    q.done,
                    q.total,
                    q.stopped.clone().unwrap_or_else(|| "stopped".into())
                )
            };
            let state_name = if q.running {
                "running"
            } else if q.done == q.total {
                "done"
            } else {
                "stopped"
            };
            view! {
                <p class="note" data-testid="layers-queue" data-state=state_name data-done=q.done data-total=q.total>{what}</p>
            }
        })
    };
    let rows = move || {
        chart.with(|c| {
            c.as_ref().map(|c| {
                c.ordered()
                    .into_iter()
                    .map(|p| {
                        view! {
                            <tr data-testid="layer-point" data-layer=p.layer data-epsilon=p.epsilon.to_string()>
                                <td>{p.layer}</td>
                                <td>{p.label.clone()}</td>
                                <td>{significant(p.epsilon, 4)}</td>
                                <td>{class(p.epsilon).label()}</td>
                            </tr>
                        }
                    })
                    .collect_view()
            })
        })
    };
    let reference = move || {
        chart.with(|c| {
            c.as_ref().and_then(|c| c.reference.clone()).map(|(name, eps)| {
                view! {
                    <p class="note" data-testid="layer-reference" data-epsilon=eps.to_string()>
                        {format!("Dashed line: the input embedding ({name}) of the same width, ε = {}.", significant(eps, 4))}
                    </p>
                }
            })
        })
    };
    view! {
        {queue}
        <Show when=shown>
            <section class="layers" data-testid="layer-chart" aria-labelledby="layers-title">
                <h2 id="layers-title">"Features layer by layer"</h2>
                <p class="note">
                    "ε of each dictionary's feature directions (its decoder rows) against the layer it reads: the features' ε, not the paper's embedding ε. Where the range reaches ε from 0.1 to 0.2, the gap between the classes is shaded."
                </p>
                <ChartCanvas spec=spec testid="layer-chart-canvas" file_stem="orthoscope-layers".to_string() />
                <p class="exports layer-exports">
                    <button type="button" class="small" on:click=csv aria-label="Download the layer chart's points as CSV">"CSV"</button>
                </p>
                {reference}
                <div class="table-scroll" tabindex="0" role="region" aria-label="Dictionaries by layer">
                    <table class="compare-table">
                        <thead>
                            <tr>
                                <th scope="col">"Layer"</th>
                                <th scope="col">"Dictionary"</th>
                                <th scope="col">"ε of features"</th>
                                <th scope="col">"Class"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            </section>
        </Show>
    }
}
