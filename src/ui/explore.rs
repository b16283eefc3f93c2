//! The tail explorer (the paper's Fig. 3 made interactive): the most similar pairs
//! of the histogram sample, and the exact nearest neighbours of a token the user picks, with token
//! strings when the model carries a vocabulary; cosines above ε are highlighted. Also the centred
//! statistics (item 3), on request. Every figure is a field of the [`Report`] or a worker answer.

use leptos::prelude::*;

use super::controller::{compute_centred, find_neighbours, Provenance, State};
use crate::explain::centred::CENTRED_NOTE;
use crate::explain::neighbours::MAX_NEIGHBOURS;
use crate::read::matrix::Query;
use crate::result::report::{significant, Report};

/// Neighbours asked for by default.
const DEFAULT_K: u32 = 10;

/// "“the” (#1820)", or "#1820" without a vocabulary.
fn token_label(row: u64, token: &Option<String>) -> String {
    match token {
        Some(t) => format!("“{t}” (#{row})"),
        None => format!("#{row}"),
    }
}

/// The explorer for the result on display.
#[component]
pub fn TailExplorer(
    /// The result on display.
    report: Report,
    /// Page state.
    state: State,
) -> impl IntoView {
    let epsilon = report.epsilon;
    let above = move |c: f64| if c > epsilon { "above" } else { "" };
    let pairs = report
        .top_pairs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            view! {
                <tr class=above(p.cosine) data-above=(p.cosine > epsilon).to_string()>
                    <td>{i + 1}</td>
                    <td>{token_label(p.a, &p.a_token)}</td>
                    <td>{token_label(p.b, &p.b_token)}</td>
                    <td>{significant(p.cosine, 4)}</td>
                </tr>
            }
        })
        .collect_view();
    let has_pairs = !report.top_pairs.is_empty();
    let from_link = state.provenance.get_untracked() == Provenance::Permalink;
    let sample_rows = report.histogram.rows_in_histogram;
    let query = RwSignal::new(String::new());
    let k = RwSignal::new(DEFAULT_K.to_string());
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(q) = Query::parse(&query.get_untracked()) else {
            state.neighbours.set(None);
            state.neighbours_message.set("type a token or a row id".into());
            return;
        };
        let k = k.get_untracked().trim().parse::<u32>().unwrap_or(DEFAULT_K).clamp(1, MAX_NEIGHBOURS);
        find_neighbours(state, q, k);
    };
    let neighbours = move || {
        state.neighbours.get().map(|n| {
            let rows = n
                .neighbours
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    view! {
                        <tr class=above(x.cosine) data-above=(x.cosine > epsilon).to_string()>
                            <td>{i + 1}</td>
                            <td>{token_label(x.row, &x.token)}</td>
                            <td>{significant(x.cosine, 4)}</td>
                        </tr>
                    }
                })
                .collect_view();
            let above_count = n.neighbours.iter().filter(|x| x.cosine > epsilon).count();
            view! {
                <table class="numbers explore-table" data-testid="neighbours">
                    <caption>
                        {format!(
                            "Nearest to {} among all {} other rows (exact); {above_count} above ε",
                            token_label(n.row, &n.token),
                            n.rows_compared
                        )}
                    </caption>
                    <thead>
                        <tr><th scope="col">"#"</th><th scope="col">"token"</th><th scope="col">"cosine"</th></tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            }
        })
    };
    let centred_view = move || {
        if let Some(c) = state.report.with(|r| r.as_ref().and_then(|r| r.centred.clone())) {
            return view! {
                <p data-testid="centred">
                    {format!(
                        "Centred: μ = {}, σ = {}, μ + 2σ = {} over {} rows (not the paper's ε = {}; the mean unit row subtracted had length {}).",
                        significant(c.mu, 4),
                        significant(c.sigma, 4),
                        significant(c.epsilon, 4),
                        c.rows_used,
                        significant(epsilon, 4),
                        significant(c.mean_norm, 3),
                    )}
                </p>
            }
            .into_any();
        }
        if let Some(f) = state.centred_progress.get() {
            return view! {
                <p class="note" role="status" data-testid="centred-running">
                    <progress max="1" value=f aria-label="Centred pass"></progress>
                    {format!(" centred pass {:.0} %", 100.0 * f)}
                </p>
            }
            .into_any();
        }
        let message = state.centred_message.get();
        view! {
            <p>
                <button type="button" data-testid="centred-start" disabled=from_link on:click=move |_| compute_centred(state)>
                    "Compute centred statistics"
                </button>
                {(!message.is_empty()).then(|| view! { <span class="error" role="alert">{format!(" {message}")}</span> })}
            </p>
        }
        .into_any()
    };
    view! {
        <div class="explore" data-testid="explorer">
            <h3>"Tail explorer: the most similar pairs, and a token's nearest neighbours"</h3>
            <p class="note">
                {format!("Cosines above ε = {} are highlighted: these pairs are the tail the paper's ε bounds (Fig. 3).", significant(epsilon, 4))}
            </p>
            {if has_pairs {
                view! {
                    <table class="numbers explore-table" data-testid="top-pairs">
                        <caption>{format!("The {} most similar pairs among the {sample_rows} rows of the histogram sample", report.top_pairs.len())}</caption>
                        <thead>
                            <tr><th scope="col">"#"</th><th scope="col">"token a"</th><th scope="col">"token b"</th><th scope="col">"cosine"</th></tr>
                        </thead>
                        <tbody>{pairs}</tbody>
                    </table>
                }
                .into_any()
            } else {
                view! { <p class="note">"No pair list: shared links do not carry it."</p> }.into_any()
            }}
            {if from_link {
                view! { <p class="note">"Open the model itself to search its rows."</p> }.into_any()
            } else {
                view! {
                    <form class="explore-form" on:submit=submit>
                        <label>
                            "Token or row id "
                            <input type="text" data-testid="explore-query" placeholder="e.g. the, or 42" prop:value=move || query.get() on:input=move |ev| query.set(event_target_value(&ev)) />
                        </label>
                        <label>
                            " neighbours "
                            <input type="number" min="1" max=MAX_NEIGHBOURS.to_string() class="k" data-testid="explore-k" prop:value=move || k.get() on:input=move |ev| k.set(event_target_value(&ev)) />
                        </label>
                        " "
                        <button type="submit" data-testid="explore-find">"Find nearest"</button>
                    </form>
                    <p class="error" role="alert" data-testid="explore-error">{move || state.neighbours_message.get()}</p>
                    {neighbours}
                }
                .into_any()
            }}
            <h4>"Centred statistics"</h4>
            <p class="note">{CENTRED_NOTE}</p>
            {centred_view}
        </div>
    }
}
