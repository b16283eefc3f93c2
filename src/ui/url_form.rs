//! The address field: a model file or shard index on any server that allows CORS, or a Hugging
//! Face repo id (`org/name[@revision]`). Loading by URL is the page's only network use after it has
//! loaded, and only when the user asks for it here (or with `?url=` / `?hf=`).

use leptos::prelude::*;

use super::controller::{self, State};
use crate::read::remote::{classify_entry, Entry};
use crate::worker::protocol::SourceSpec;

#[component]
pub fn UrlForm(
    /// Page state.
    state: State,
) -> impl IntoView {
    let entry = RwSignal::new(String::new());
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let text = entry.get_untracked();
        if text.trim().is_empty() {
            return;
        }
        let source = match classify_entry(&text) {
            Entry::Url(url) => SourceSpec::Url { url },
            Entry::Hf(id) => SourceSpec::Hf { id, endpoint: None },
        };
        controller::open_url(state, source);
    };
    view! {
        <form class="url-form" data-testid="url-form" on:submit=on_submit>
            <label>
                <span>"… or open a model by address: "</span>
                <input
                    type="text"
                    data-testid="url-input"
                    placeholder="https://…/model.safetensors, …/model.safetensors.index.json, or org/name[@revision]"
                    spellcheck="false"
                    prop:value=move || entry.get()
                    on:input=move |ev| entry.set(event_target_value(&ev))
                />
            </label>
            <button type="submit" data-testid="url-open">"Open"</button>
            <p class="hint">"Read with HTTP Range requests: the header, then only the embedding's rows. The server must allow CORS (Hugging Face does)."</p>
        </form>
    }
}
