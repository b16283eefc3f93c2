//! What makes a result travel: its permalink, the embed code for a blog post, and the report and
//! histogram as files. Nothing here leaves the machine unless the reader sends it.

use leptos::prelude::*;

use super::page_base;
use crate::result::links;
use crate::result::permalink;
use crate::result::report::{export_stem, histogram_csv, Report};
use crate::ui::chart::download_text;

fn copy_to_clipboard(text: &str) {
    if let Some(w) = web_sys::window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

/// "Share and export": the permalink (the Report in its fragment), buttons that copy the link or the
/// embed code and download the Report as JSON and the histograms as CSV, and the embed code itself.
#[component]
pub fn ShareExport(
    /// The result on display.
    report: Report,
) -> impl IntoView {
    let r = report;
    let stem = export_stem(&r);
    let json = serde_json::to_string_pretty(&r).unwrap_or_default();
    let csv = histogram_csv(&r);
    let (json_name, csv_name) = (format!("{stem}.json"), format!("{stem}-histogram.csv"));
    let base = page_base();
    let fragment = permalink::encode(&r);
    let link = links::permalink_href(&base, &r, &fragment);
    let snippet = links::embed_snippet(&base, &r, &fragment);
    let copied = RwSignal::new(String::new());
    let (link_copy, snippet_copy) = (link.clone(), snippet.clone());
    view! {
        <div class="share">
            <h3>"Share and export"</h3>
            <p>
                <a data-testid="permalink" href=link>"Permalink to this result"</a>
                " — the result travels inside the link (its #fragment, which browsers never send to a server); opening it shows this card with no file."
            </p>
            <p class="buttons">
                <button type="button" on:click=move |_| { copy_to_clipboard(&link_copy); copied.set("Link copied.".into()); }>"Copy link"</button>
                <button type="button" data-testid="copy-embed" on:click=move |_| { copy_to_clipboard(&snippet_copy); copied.set("Embed code copied.".into()); }>"Copy embed code"</button>
                <button type="button" on:click=move |_| download_text(&json_name, "application/json", &json)>"Report (JSON)"</button>
                <button type="button" on:click=move |_| download_text(&csv_name, "text/csv", &csv)>"Histogram (CSV)"</button>
                <span class="note" role="status">{move || copied.get()}</span>
            </p>
            <label class="snippet">
                <span>"Embed code (640 × 420):"</span>
                <textarea readonly rows="3" data-testid="embed-code">{snippet}</textarea>
            </label>
        </div>
    }
}
