//! The dead-latent threshold beside a dictionary's dead latents (docs/method.md §10): the log10
//! firing density below which a latent is set aside, as the result on display used it, and a field
//! to analyse the same files again with another.

use leptos::html::Input;
use leptos::prelude::*;

use crate::read::dictionary::{parse_dead_below, DEAD_BELOW_RANGE, NEVER_FIRED_LOG10};
use crate::ui::controller::{set_dead_below, State, Status, DEAD_BELOW_APPLY};

/// `x` as typed (the shortest decimal that reads back to it), with a true minus sign.
fn signed(x: f64) -> String {
    x.to_string().replace('-', "−")
}

/// The threshold in use, and the field and button that set another.
#[component]
pub fn DeadBelowControl(
    /// Page state (the threshold of the result on display, whether a run is going).
    state: State,
    /// Whether any latent is below the threshold in use (else `Report::trained` has no dead latents).
    any_dead: bool,
) -> impl IntoView {
    let in_use = state.dead_below.get_untracked();
    let threshold = in_use.unwrap_or(NEVER_FIRED_LOG10);
    // Read when applied, not bound to a signal: a number field reads "" while "−" is half typed,
    // and writing that back would erase what the user typed.
    let field = NodeRef::<Input>::new();
    let message = RwSignal::new(String::new());
    let running = move || state.status.get() == Status::Running;
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let typed = field.get_untracked().map(|f| f.value()).unwrap_or_default();
        match parse_dead_below(&typed) {
            Ok(x) => {
                message.set(String::new());
                set_dead_below(state, x);
            }
            Err(e) => message.set(e.to_string()),
        }
    };
    let which = match in_use {
        None => "the default: latents that never fired".to_string(),
        Some(_) => "set on this page".to_string(),
    };
    let none = (!any_dead).then_some(" No latent is below it: the ε above counts every feature.");
    view! {
        // The browser's own range check would block the submit without the reason; the card says it.
        <form class="dead-below" data-testid="dead-below-form" novalidate=true on:submit=submit>
            <p class="in-use" id="dead-below-in-use" data-testid="dead-below-in-use" data-value=threshold.to_string()>
                "Latents set aside as dead: firing density below 10"
                <sup>{signed(threshold)}</sup>
                {format!(" (log10 density {}, {which}).", signed(threshold))}
                {none}
            </p>
            <div class="dead-below-row">
                <label for="dead-below">"Dead below log10 density"</label>
                <input
                    type="number"
                    id="dead-below"
                    data-testid="dead-below"
                    step="0.5"
                    min=DEAD_BELOW_RANGE.start().to_string()
                    max=DEAD_BELOW_RANGE.end().to_string()
                    aria-describedby="dead-below-in-use"
                    value=threshold.to_string()
                    node_ref=field
                />
                <button type="submit" id=DEAD_BELOW_APPLY data-testid="dead-below-apply" disabled=running>
                    "Apply"
                </button>
            </div>
            <p class="error" role="alert" data-testid="dead-below-error">{move || message.get()}</p>
            <p class="note">
                "Apply analyses the same files again: the dead latents are set aside in the pass itself. SAELens stores log10(density + 10⁻¹⁰), so −10 is a latent that never fired; −6 sets aside those that fired on fewer than one token in a million."
            </p>
        </form>
    }
}
