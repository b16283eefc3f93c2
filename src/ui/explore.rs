//! The tail explorer (the paper's Fig. 3 made interactive): the most similar pairs
//! of the histogram sample and its most opposed ones (antipodal pairs, cos ≈ −1, are a known trait
//! of trained dictionaries), and the exact nearest neighbours of a token the user picks, with token
//! strings when the model carries a vocabulary; cosines above ε are highlighted. Also the centred
//! statistics (item 3), on request. Every figure is a field of the [`Report`] or a worker answer.

use leptos::prelude::*;

use super::controller::{compute_centred, find_neighbours, Provenance, State};
use crate::explain::centred::CENTRED_NOTE;
use crate::explain::neighbours::MAX_NEIGHBOURS;
use crate::pass::stats::{TopPair, STRONGLY_OPPOSED};
use crate::read::matrix::Query;
use crate::read::vocab::visible;
use crate::result::report::{group_digits, significant, Report};
use crate::result::trained::Choice;

/// Neighbours asked for by default.
const DEFAULT_K: u32 = 10;

/// "“␣the” (#1820)", or "#1820" without a vocabulary: spaces and newlines drawn visibly
/// ([`visible`]).
fn token_label(row: u64, token: &Option<String>) -> String {
    match token {
        Some(t) => format!("“{}” (#{row})", visible(t)),
        None => format!("#{row}"),
    }
}

/// A cosine with its sign, "+0.1234" or "-0.9871": the opposed pairs' list reads both sides of 0.
fn signed(c: f64) -> String {
    let sign = if c > 0.0 { "+" } else { "" };
    format!("{sign}{}", significant(c, 4))
}

/// The explorer for the result on display.
#[component]
pub fn TailExplorer(
    /// The result on display.
    report: Report,
    /// Page state.
    state: State,
    /// The rules whose rows are set aside (the card's choice): the pairs among the other rows are
    /// listed by default, and set-aside rows are marked where they appear.
    enabled: RwSignal<Vec<String>>,
) -> impl IntoView {
    let epsilon = report.epsilon;
    let above = move |c: f64| if c > epsilon { "above" } else { "" };
    let sample_rows = report.histogram.rows_in_histogram;
    let show_all = RwSignal::new(false);
    let trained = StoredValue::new(report.trained.clone());
    let all_pairs = StoredValue::new(report.top_pairs.clone());
    let all_opposed = StoredValue::new(report.antipodal_pairs.clone());
    // The lists come from the sample's pairs even where ε is over all pairs.
    let from_sample = format!("from a sample of {} pairs", group_digits(report.histogram.pairs_in_histogram));
    // The rows set aside under the card's choice of rules (none when every row counts).
    let aside_of = move |row: u64| {
        let chosen = enabled.get();
        trained.with_value(|t| match t.as_ref().map(|t| t.choice(&chosen)) {
            Some(Choice::Without(w)) => w.is_aside(row),
            _ => false,
        })
    };
    let mark = move |row: u64| {
        aside_of(row).then(|| view! { <span class="aside-mark" data-testid="aside-mark" title="a row the model never trained">" (untrained)"</span> })
    };
    // Among trained rows by default; the switch (or no rule enabled) shows every pair.
    let pairs_table = move || {
        let chosen = enabled.get();
        let among_trained = trained.with_value(|t| match t.as_ref().map(|t| t.choice(&chosen)) {
            Some(Choice::Without(w)) => Some(w.top_pairs.clone()),
            _ => None,
        });
        let (pairs, caption) = match among_trained {
            Some(p) if !show_all.get() => {
                let n = p.len();
                (p, format!("The {n} most similar pairs among the trained rows of the histogram's {sample_rows} sample rows"))
            }
            _ => {
                let p = all_pairs.get_value();
                let n = p.len();
                (p, format!("The {n} most similar pairs among the {sample_rows} rows of the histogram sample"))
            }
        };
        let rows = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                view! {
                    <tr class=above(p.cosine) data-above=(p.cosine > epsilon).to_string()>
                        <td>{i + 1}</td>
                        <td>{token_label(p.a, &p.a_token)}{mark(p.a)}</td>
                        <td>{token_label(p.b, &p.b_token)}{mark(p.b)}</td>
                        <td>{significant(p.cosine, 4)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label="Most similar pairs">
            <table class="numbers explore-table" data-testid="top-pairs">
                <caption>{caption}</caption>
                <thead>
                    <tr><th scope="col">"#"</th><th scope="col">"token a"</th><th scope="col">"token b"</th><th scope="col">"cosine"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
        }
    };
    // The other tail, read as the top pairs are: among the trained rows by default.
    let opposed_table = move || {
        let chosen = enabled.get();
        let among_trained: Option<Vec<TopPair>> = trained.with_value(|t| match t.as_ref().map(|t| t.choice(&chosen)) {
            Some(Choice::Without(w)) => Some(w.antipodal_pairs.clone()),
            _ => None,
        });
        let (pairs, caption) = match among_trained {
            Some(p) if !show_all.get() => {
                let n = p.len();
                (p, format!("The {n} most opposed pairs among the trained rows of the histogram's {sample_rows} sample rows, {from_sample}"))
            }
            _ => {
                let p = all_opposed.get_value();
                let n = p.len();
                (p, format!("The {n} most opposed pairs among the {sample_rows} rows of the histogram sample, {from_sample}"))
            }
        };
        let strong = pairs.iter().filter(|p| p.cosine < STRONGLY_OPPOSED).count();
        let caption = match strong {
            0 => caption,
            n => format!("{caption}; {n} below {STRONGLY_OPPOSED} (near antipodal)"),
        };
        let rows = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let opposed = p.cosine < STRONGLY_OPPOSED;
                view! {
                    <tr class=if opposed { "opposed" } else { "" } data-opposed=opposed.to_string() data-cosine=p.cosine.to_string()>
                        <td>{i + 1}</td>
                        <td>{token_label(p.a, &p.a_token)}{mark(p.a)}</td>
                        <td>{token_label(p.b, &p.b_token)}{mark(p.b)}</td>
                        <td>{signed(p.cosine)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label="Most opposed pairs">
            <table class="numbers explore-table" data-testid="antipodal-pairs">
                <caption>{caption}</caption>
                <thead>
                    <tr><th scope="col">"#"</th><th scope="col">"token a"</th><th scope="col">"token b"</th><th scope="col">"cosine"</th></tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
            </div>
        }
    };
    // Outside the table's closure, so the checkbox keeps keyboard focus when it redraws the table.
    let switchable = move || {
        let chosen = enabled.get();
        trained.with_value(|t| matches!(t.as_ref().map(|t| t.choice(&chosen)), Some(Choice::Without(_))))
    };
    let switch = view! {
        <p hidden=move || !switchable()>
            <label>
                <input type="checkbox" data-testid="pairs-show-all" prop:checked=move || show_all.get() on:change=move |ev| show_all.set(event_target_checked(&ev)) />
                " Show pairs with rows the model never trained too"
            </label>
        </p>
    };
    let has_pairs = !report.top_pairs.is_empty();
    let has_opposed = !report.antipodal_pairs.is_empty();
    let from_link = state.provenance.get_untracked() == Provenance::Permalink;
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
                            <td>{token_label(x.row, &x.token)}{mark(x.row)}</td>
                            <td>{significant(x.cosine, 4)}</td>
                        </tr>
                    }
                })
                .collect_view();
            let above_count = n.neighbours.iter().filter(|x| x.cosine > epsilon).count();
            let untrained = match n.neighbours.iter().filter(|x| aside_of(x.row)).count() {
                0 => String::new(),
                1 => "; 1 is a row the model never trained".to_string(),
                u => format!("; {u} are rows the model never trained"),
            };
            view! {
                <div class="table-scroll" tabindex="0" role="region" aria-label="Nearest neighbours">
                <table class="numbers explore-table" data-testid="neighbours">
                    <caption>
                        {format!(
                            "Nearest to {} among all {} other rows (exact); {above_count} above ε{untrained}",
                            token_label(n.row, &n.token),
                            n.rows_compared
                        )}
                    </caption>
                    <thead>
                        <tr><th scope="col">"#"</th><th scope="col">"token"</th><th scope="col">"cosine"</th></tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
                </div>
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
            <h3>"Tail explorer: the most similar and most opposed pairs, and a token's nearest neighbours"</h3>
            <p class="note">
                {format!("Cosines above ε = {} are highlighted: these pairs are the tail the paper's ε bounds (Fig. 3).", significant(epsilon, 4))}
            </p>
            {if has_pairs {
                view! { {switch}{pairs_table}{has_opposed.then_some(opposed_table)} }.into_any()
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
