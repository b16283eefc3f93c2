//! The page: Leptos components over the worker's messages. Views only show fields of
//! [`crate::report::Report`]; nothing here computes a statistic.

mod controller;
mod histogram;
mod panels;
mod params;
mod url_form;

use leptos::prelude::*;

pub use controller::State;
use panels::{DropZone, EmbedCard, ProgressPanel, ReportPanel, TensorPicker};
pub use params::Params;

/// Mounts the app into `<body>`.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The whole page. `?embed=1` renders only the compact card (for blog posts).
#[component]
pub fn App() -> impl IntoView {
    let params = Params::from_location();
    let state = State::new();
    provide_context(state);
    controller::init(state, params.clone());
    let embed = params.embed;
    view! {
        <Show when=move || !embed fallback=move || view! { <EmbedCard state=state /> }>
            <header class="top">
                <h1>"Orthoscope"</h1>
                <p class="tagline">
                    "How much room a language model's token embeddings leave for features: ε = μ + 2σ of the pairwise cosines, and the capacity it implies. "
                    <strong>"Your file never leaves this machine"</strong>
                    ": it is read in this tab, a slice at a time."
                </p>
            </header>
            <main>
                <DropZone state=state />
                <url_form::UrlForm state=state />
                <TensorPicker state=state />
                <ProgressPanel state=state />
                <ReportPanel state=state />
            </main>
            <footer>
                "Method: A. Guha, "
                <em>"Representational Capacity: Geometric Limits on Feature Representation in Transformer Language Models"</em>
                " (2026). Exact statistics over all pairs via s = Σuᵢ and G = Σuᵢuᵢᵀ."
            </footer>
        </Show>
    }
}
