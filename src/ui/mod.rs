//! The page: Leptos components over the worker's messages. Views only show fields of
//! [`crate::result::report::Report`] (and the paper's data); nothing here computes a statistic.

mod chart;
mod compare;
mod controller;
mod embed;
mod explore;
mod geometry;
mod layers;
mod open;
mod params;
mod progress;
mod result;
mod session;
mod table1_map;
mod url_form;

use leptos::ev;
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use chart::Screen;
use compare::Compare;
pub use controller::State;
use controller::Status;
use embed::EmbedCard;
use layers::LayersPanel;
use open::{open_dropped, OpenPanel, TensorPicker};
pub use params::Params;
use progress::ProgressPanel;
use result::ReportPanel;
use table1_map::Table1Map;

/// Mounts the app into `<body>`.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// Tracks `prefers-color-scheme` and the window's size, which every chart redraws on.
fn screen() -> Screen {
    let screen = Screen { dark: RwSignal::new(false), layout: RwSignal::new(0) };
    if let Some(query) = web_sys::window().and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten()) {
        screen.dark.set(query.matches());
        let on_change =
            Closure::<dyn FnMut(web_sys::MediaQueryListEvent)>::new(move |e: web_sys::MediaQueryListEvent| {
                screen.dark.set(e.matches());
            });
        let _ = query.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
        // Lives as long as the page.
        on_change.forget();
    }
    let _ = window_event_listener(ev::resize, move |_| screen.layout.update(|n| *n += 1));
    screen
}

/// Moves focus to where the result of a run is, when the run's own controls (now hidden) had it:
/// a keyboard user is never left on a hidden button or on `<body>`.
fn keep_focus_after_runs(state: State) {
    Effect::new(move |previous: Option<Status>| {
        let status = state.status.get();
        if previous == Some(Status::Running) && status != Status::Running {
            let document = web_sys::window().and_then(|w| w.document());
            let active = document.as_ref().and_then(|d| d.active_element());
            // Only when the focus sat on the run's own controls (now hidden): a focus elsewhere stays.
            let lost = active.as_ref().is_some_and(|a| a.closest(".progress").ok().flatten().is_some());
            if lost {
                let target = match status {
                    Status::Done => "result-heading",
                    Status::Choose => "tensor-select",
                    _ => "open-title",
                };
                if let Some(el) = document.and_then(|d| d.get_element_by_id(target)) {
                    if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
                        let _ = el.focus();
                    }
                }
            }
        }
        status
    });
}

/// The whole page. `?embed=1` renders only the compact card (for blog posts).
#[component]
pub fn App() -> impl IntoView {
    let params = Params::from_location();
    let state = State::new();
    // Every chart reads the screen from context; the state, by contrast, is passed as a prop.
    provide_context(screen());
    let embed = params.embed;
    controller::init(state, params);
    if embed {
        return view! { <EmbedCard state=state /> }.into_any();
    }
    keep_focus_after_runs(state);
    // A file dropped anywhere is analysed; without this the browser would navigate to it and the
    // app would be gone.
    let dragging = RwSignal::new(false);
    let _ = window_event_listener(ev::dragover, move |e| {
        e.prevent_default();
        dragging.set(true);
    });
    let _ = window_event_listener(ev::dragleave, move |e| {
        // Leaving for a child element fires too; only leaving the window (no related target) counts.
        if e.related_target().is_none() {
            dragging.set(false);
        }
    });
    let _ = window_event_listener(ev::drop, move |e| {
        e.prevent_default();
        dragging.set(false);
        open_dropped(state, &e);
    });
    view! {
        <header class="top">
            <h1>"Orthoscope"</h1>
            <p class="tagline">
                "How much room a language model's token embeddings leave for features: ε = μ + 2σ of the pairwise cosines, and the capacity it implies. "
                <strong>"Your file never leaves this machine"</strong>
                ": it is read in this tab, a slice at a time."
            </p>
        </header>
        <main>
            <p class="sr-only" role="status" aria-live="polite" data-testid="announcement">{move || state.announcement.get()}</p>
            <OpenPanel state=state dragging=dragging />
            <TensorPicker state=state />
            <ProgressPanel state=state />
            <ReportPanel state=state />
            <LayersPanel state=state />
            <Table1Map state=state />
            <Compare state=state />
        </main>
        <footer>
            "Method: A. Guha, "
            <a href=crate::result::paper::PAPER_URL target="_blank" rel="noopener noreferrer">
                <em>{crate::result::paper::PAPER_TITLE}</em>
            </a>
            " (2026). Exact statistics over all pairs via s = Σuᵢ and G = Σuᵢuᵢᵀ. No data leaves this tab."
        </footer>
    }
    .into_any()
}
