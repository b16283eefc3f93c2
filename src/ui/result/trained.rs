//! Beside the paper's ε (which counts every row and stays the headline): ε without the rows the
//! model never trained, with its class and capacity, the rules that found them (each with its count
//! and a switch), and why (`docs/method.md` §9). The choice of rules is the card's: the tail
//! explorer and the histogram follow it.

use leptos::prelude::*;

use crate::read::untrained::UntrainedRule;
use crate::result::report::{group_digits, scientific_from_log10, significant};
use crate::result::trained::{Choice, TrainedReport, Without};

/// The capacity at the trained rows' ε (paper Eq. 7), or why there is none.
pub fn trained_capacity(w: &Without) -> String {
    if w.capacity_determinate {
        scientific_from_log10(w.log10_capacity.adjusted_full)
    } else {
        "indeterminate".to_string()
    }
}

/// The line under the headline figures, and a switch per rule.
#[component]
pub fn TrainedLine(
    /// `Report::trained`.
    trained: TrainedReport,
    /// The rules the user has enabled (the card's choice).
    enabled: RwSignal<Vec<String>>,
    /// d, for the capacity's unit.
    dim: u64,
    /// A dictionary's features: the rows set aside are its dead latents (docs/method.md §10).
    #[prop(optional)]
    dead_latents: bool,
    /// The dead-latent threshold and its control, beside the dead latents' switch.
    #[prop(optional_no_strip)]
    threshold: Option<AnyView>,
) -> impl IntoView {
    let t = StoredValue::new(trained);
    let (row, rows, never_trained) = if dead_latents {
        ("feature", "features", "dead latents")
    } else {
        ("row", "rows", "rows the model never trained")
    };
    let line = move || {
        let chosen = enabled.get();
        t.with_value(|t| match t.choice(&chosen) {
            Choice::AllRows => view! {
                <p data-testid="trained-epsilon" data-value="">
                    {format!("No rule is enabled: every {row} counts, as in the {} above.", if dead_latents { "ε" } else { "paper's ε" })}
                </p>
            }
            .into_any(),
            Choice::NotCarried => view! {
                <p class="note" data-testid="trained-epsilon" data-value="">
                    "This choice of rules is not carried by a shared link (it carries the default only): open the model itself to switch rules."
                </p>
            }
            .into_any(),
            Choice::Without(w) => {
                let how = if w.exact {
                    format!("exact over all {} pairs of the {} {rows} left", group_digits(w.pairs), group_digits(w.rows_used))
                } else {
                    format!("estimated from the {} sampled pairs among the {rows} left", group_digits(w.pairs))
                };
                view! {
                    <p data-testid="trained-epsilon" data-value=w.epsilon.to_string()>
                        {format!("Without the {} {never_trained}: ε = ", group_digits(w.rows_excluded))}
                        <strong>{significant(w.epsilon, 4)}</strong>
                        " · "
                        <strong data-testid="trained-class">{w.class.label()}</strong>
                        " · capacity "
                        <strong data-testid="trained-capacity">{trained_capacity(w)}</strong>
                        {format!(
                            " (d = {}); μ = {}, σ = {}, {how}.",
                            group_digits(dim),
                            significant(w.mu, 4),
                            significant(w.sigma, 4)
                        )}
                    </p>
                }
                .into_any()
            }
        })
    };
    let switches = t.with_value(|t| {
        t.rules
            .iter()
            .map(|r| {
                let name = r.rule.clone();
                let rule = UntrainedRule::from_name(&name);
                let describe = rule.map_or("", |u| u.describe());
                // A dead latent is named so: "16 dead latents: below the firing-density threshold".
                let label = if rule == Some(UntrainedRule::DeadLatent) {
                    format!(" {} dead latents: {}", group_digits(r.rows), describe.trim_start_matches("latents "))
                } else {
                    format!(" {} {describe}", group_digits(r.rows))
                };
                let checked = {
                    let name = name.clone();
                    move || enabled.with(|e| e.contains(&name))
                };
                let toggle = {
                    let name = name.clone();
                    move |ev: leptos::ev::Event| {
                        let on = event_target_checked(&ev);
                        enabled.update(|e| {
                            e.retain(|x| x != &name);
                            if on {
                                e.push(name.clone());
                            }
                        });
                    }
                };
                view! {
                    <li>
                        <label>
                            <input type="checkbox" data-testid=format!("trained-rule-{name}") prop:checked=checked on:change=toggle />
                            {label}
                        </label>
                    </li>
                }
            })
            .collect_view()
    });
    let (heading, why) = if dead_latents {
        (
            "Dead latents",
            "The ε above counts every feature. A latent that never fired was never pulled into place by the reconstruction, so its decoder row keeps the direction it started from; the number here is over the other features, removed exactly from the same pass.",
        )
    } else {
        (
            "Rows the model never trained",
            "The paper's ε above counts every row, so it compares with Table 1. Rows a model never trained (a vocabulary padded past its last token, tokens its tokenizer reserves) pull ε towards their own geometry; the number here is over the other rows, removed exactly from the same pass.",
        )
    };
    view! {
        <section class="trained" data-testid="trained" aria-labelledby="trained-heading">
            <h3 id="trained-heading">{heading}</h3>
            {line}
            <fieldset>
                <legend>"Set aside, by the rule that found them"</legend>
                <ul class="rules">{switches}</ul>
            </fieldset>
            {threshold}
            <p class="note">{why}</p>
        </section>
    }
}
