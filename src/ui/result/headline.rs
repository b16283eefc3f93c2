//! The top of the result card: its heading, the notes that say where the result came from, and the
//! three headline figures (ε, class, capacity) with where the model sits among the paper's models.

use leptos::prelude::*;

use super::dictionary::features_of;
use super::page_base;
use crate::pass::estimate::Class;
use crate::result::links;
use crate::result::paper;
use crate::result::proven;
use crate::result::report::{group_digits, scientific_from_log10, significant, Report};
use crate::result::text;
use crate::ui::controller::{Provenance, State, Status};

/// What a class says about the distribution of cosines (`docs/method.md` §3).
pub fn class_meaning(c: Class) -> &'static str {
    match c {
        Class::One => "ε > 0.2: a wide distribution far from orthogonal, μ well above 0; typical of smaller models with tied embeddings.",
        Class::Two => "ε < 0.1: cosines tightly around 0, the token vectors close to orthogonal; where the paper's capacities apply.",
        Class::Between => "0.1 ≤ ε ≤ 0.2: no model of the paper falls here.",
    }
}

/// The headline capacity (paper Eq. 7), or why there is none.
pub fn headline_capacity(r: &Report) -> String {
    if r.capacity_determinate {
        scientific_from_log10(r.log10_capacity.adjusted_full)
    } else {
        "indeterminate".to_string()
    }
}

/// The card's heading (model, tensor, shape, dtype; the target of focus after a run), then what the
/// reader must know before the numbers: that a new run is under way, or that the result was opened
/// from a link and how to run it again.
#[component]
pub fn CardHeading(
    /// The result on display.
    report: Report,
    /// Page state: whether a run is under way and where the result came from.
    state: State,
) -> impl IntoView {
    let r = report;
    let model = r.model_name();
    let shared = state.provenance.get_untracked() == Provenance::Permalink;
    let running = move || state.status.get() == Status::Running;
    let rerun = links::rerun_href(&page_base(), &r);
    view! {
        <h2 id="result-heading" tabindex="-1">
            {format!("{model} · {}", r.tensor)}
            <span class="dims">{format!(" {} × {} {}", group_digits(r.rows), group_digits(r.dim), r.dtype)}</span>
        </h2>
        {running().then(|| view! { <p class="note">"Previous result — a new analysis is running."</p> })}
        {shared.then(|| view! {
            <p class="note shared">
                "Shared result, opened from a link: nothing was read or computed in this tab. "
                {rerun.clone().map(|href| view! { <a href=href>"Run it again from the model's URL"</a> })}
            </p>
        })}
    }
}

/// The three headline figures: ε with its interval, the class and what it means, the capacity with
/// its unit (or why there is none); then the paper's models nearest in ε, and whether ε is exact or
/// an estimate.
#[component]
pub fn Headline(
    /// The result on display.
    report: Report,
) -> impl IntoView {
    let r = report;
    let estimate_note = match r.epsilon_ci {
        Some([lo, hi]) => format!(
            "Estimate from {} of {} rows: 95 % interval [{}, {}], seed {}. Run to the end (or with ?exact=1) for the exact value.",
            group_digits(r.rows_seen),
            group_digits(r.rows),
            significant(lo, 4),
            significant(hi, 4),
            r.seed
        ),
        None => format!("Exact: over all {} pairs of the {} usable rows.", group_digits(r.pairs), group_digits(r.rows_used)),
    };
    // A dictionary's ε is that of its features (docs/method.md §10), never the paper's embedding ε.
    let features = r.dictionary.as_ref().map(features_of);
    let capacity_view = if r.capacity_determinate {
        let width = if features.is_some() { ", the decoder's width" } else { "" };
        view! {
            <p class="big" data-testid="capacity">{headline_capacity(&r)}</p>
            <p class="unit">{format!("ε-nearly-orthogonal directions in d = {} dimensions{width}: {} (Eq. 7)", group_digits(r.dim), proven::LAW_NAME)}</p>
        }
        .into_any()
    } else {
        view! {
            <p class="big" data-testid="capacity">"indeterminate"</p>
            <p class="unit">
                "No finite capacity: at ε ≥ 0.1 the token vectors are too far from orthogonal for the paper's fits (made for ε < 0.1), so it prints “indeterminate”."
            </p>
        }
        .into_any()
    };
    // Before the numbers: a tensor that is not the input embedding has no paper's ε.
    let not_embedding = text::not_the_embedding(&r).map(
        |note| view! { <p class="warning" data-testid="not-embedding">{format!("Not the paper's ε: {note}.")}</p> },
    );
    let quantised = text::quantised_note(&r)
        .map(|note| view! { <p class="note" data-testid="quantised">{format!("Quantised: {note}.")}</p> });
    view! {
        {not_embedding}
        {quantised}
        <div class="headline">
            <div class="figure">
                <h3 data-testid="epsilon-label">{match features {
                    Some(what) => format!("ε of the dictionary's {what}"),
                    None => "ε, deviation from orthogonality".to_string(),
                }}</h3>
                <p class="big" data-testid="epsilon">{significant(r.epsilon, 4)}</p>
                <p class="unit">{match r.epsilon_ci {
                    Some([lo, hi]) => format!("± {} (95 % interval [{}, {}])", significant((hi - lo) / 2.0, 2), significant(lo, 4), significant(hi, 4)),
                    None => "exact, over all pairs".to_string(),
                }}</p>
            </div>
            <div class="figure">
                <h3>"Class"</h3>
                <p class="big" data-testid="class">{r.class.label()}</p>
                <p class="unit">{class_meaning(r.class)}</p>
            </div>
            <div class="figure">
                <h3>"Capacity"</h3>
                {capacity_view}
            </div>
        </div>
        <p class="reference" data-testid="paper-neighbours">
            {match features {
                // The paper's models are embeddings: for a dictionary they give a scale, not a place.
                Some(_) => format!("For scale only (the paper's models are embeddings): {}.", paper::neighbours_sentence(r.epsilon)),
                None => format!("Reference: {}.", paper::neighbours_sentence(r.epsilon)),
            }}
        </p>
        <p class="note">{estimate_note}</p>
        {gpu_note(&r)}
    }
}

/// Where the Gram sums ran: "GPU: <adapter>" on a GPU; on the CPU, only when a GPU was asked for
/// and not used (no adapter, a lost device, f64 needed), with why.
fn gpu_note(r: &Report) -> Option<impl IntoView> {
    let text = match (&r.gpu, &r.gpu_fallback) {
        (Some(gpu), _) => format!(
            "GPU: {} ({}{})",
            gpu.adapter,
            gpu.backend,
            if gpu.fallback_adapter { ", a software adapter" } else { "" }
        ),
        (None, Some(why)) => format!("CPU: {why}"),
        (None, None) => return None,
    };
    Some(view! { <p class="note" data-testid="gpu">{text}</p> })
}
