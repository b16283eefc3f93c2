//! `?embed=1`: the compact card for a blog post (fits a 640 × 420 iframe without scrolling), and the
//! message protocol through which a host page can hand it a model.
//!
//! Protocol (documented in the README): the host posts `{orthoscope: "PING"}`, the card answers
//! `{orthoscope: "PONG", version: 1}`; the host then posts `{orthoscope: {file: File, name}}` or
//! `{orthoscope: {buffer: ArrayBuffer, name}}`, and the card posts `{orthoscope: {type: "progress", …}}`
//! while it runs and `{orthoscope: {type: "report", report}}` (or `{type: "error", message}`) at the
//! end. Only the window that embeds the card is listened to and answered.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{File, MessageEvent, Window};

use super::chart::{mu_epsilon_markers, ChartCanvas, ChartSpec};
use super::controller::{self, State, Status};
use super::result::{features_of, headline_capacity, page_base, ContractReport};
use crate::charts::Counted;
use crate::pass::estimate::Class;
use crate::result::links;
use crate::result::report::{group_digits, scientific_from_log10, significant, Report};

/// Version of the host protocol.
pub const PROTOCOL_VERSION: u32 = 1;

/// What the card tells its host.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum HostMessage<'a> {
    Progress { fraction: f64, rows_seen: u64, rows: u64, epsilon: Option<f64> },
    Report { report: &'a Report },
    Error { message: &'a str },
}

/// The host page that said PING, and its origin (replies go only there).
#[derive(Clone)]
struct Host {
    window: Window,
    origin: String,
}

fn post_to_host(host: &Host, body: JsValue) {
    let message = Object::new();
    let _ = Reflect::set(&message, &"orthoscope".into(), &body);
    let _ = host.window.post_message(&message, &host.origin);
}

fn serialise(message: &HostMessage) -> Option<JsValue> {
    // json_compatible: u64 counts become plain numbers and maps plain objects, as a host expects.
    message.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).ok()
}

/// A `File` from the host's message: given as a File, or as an ArrayBuffer with a name.
fn file_of(body: &JsValue) -> Option<File> {
    let name = Reflect::get(body, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_else(|| "model.safetensors".into());
    if let Some(file) = Reflect::get(body, &"file".into()).ok().and_then(|f| f.dyn_into::<File>().ok()) {
        return Some(file);
    }
    let buffer = Reflect::get(body, &"buffer".into()).ok()?;
    if !buffer.is_instance_of::<js_sys::ArrayBuffer>() && !buffer.is_instance_of::<js_sys::Uint8Array>() {
        return None;
    }
    File::new_with_buffer_source_sequence(&js_sys::Array::of1(&buffer), &name).ok()
}

/// Listens to the embedding page and reports back to it.
fn listen_to_host(state: State) {
    let Some(window) = web_sys::window() else { return };
    let Ok(Some(parent)) = window.parent() else { return };
    let host: StoredValue<Option<Host>, LocalStorage> = StoredValue::new_local(None);
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        // Only the page that embeds the card may talk to it. (A cross-origin window is no
        // `instanceof Window` here, so compare identities rather than cast.)
        let from_parent = event.source().is_some_and(|s| Object::is(s.as_ref(), parent.as_ref()));
        if !from_parent {
            return;
        }
        let Ok(body) = Reflect::get(&event.data(), &"orthoscope".into()) else { return };
        if body.as_string().as_deref() == Some("PING") {
            let h = Host { window: parent.clone(), origin: event.origin() };
            let pong = Object::new();
            let _ = Reflect::set(&pong, &"orthoscope".into(), &"PONG".into());
            let _ = Reflect::set(&pong, &"version".into(), &PROTOCOL_VERSION.into());
            let _ = h.window.post_message(&pong, &h.origin);
            host.set_value(Some(h));
            return;
        }
        if body.is_object() {
            match file_of(&body) {
                Some(file) => controller::open_files(state, vec![file]),
                None => {
                    if let Some(h) = host.get_value() {
                        let message = "the message carried neither a File nor an ArrayBuffer under 'file' or 'buffer'";
                        if let Some(v) = serialise(&HostMessage::Error { message }) {
                            post_to_host(&h, v);
                        }
                    }
                }
            }
        }
    });
    let _ = window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref());
    // The card lives as long as the page.
    on_message.forget();
    // Progress and results go back to the host once it has said PING.
    Effect::new(move |_| {
        let status = state.status.get();
        let Some(h) = host.get_value() else { return };
        let body = match status {
            Status::Running => state.progress.with(|p| {
                p.as_ref().and_then(|p| {
                    serialise(&HostMessage::Progress {
                        fraction: p.fraction,
                        rows_seen: p.rows_seen,
                        rows: p.rows,
                        epsilon: p.epsilon,
                    })
                })
            }),
            Status::Done => {
                state.report.with(|r| r.as_ref().and_then(|report| serialise(&HostMessage::Report { report })))
            }
            Status::Error => serialise(&HostMessage::Error { message: &state.message.get() }),
            _ => None,
        };
        if let Some(body) = body {
            post_to_host(&h, body);
        }
    });
}

/// The compact card: model, ε with its interval, class, capacity, a small histogram and a link back.
#[component]
pub fn EmbedCard(
    /// Page state.
    state: State,
) -> impl IntoView {
    listen_to_host(state);
    view! {
        <ContractReport state=state class="embed">
            {move || match (state.status.get(), state.report.get()) {
                (Status::Done, Some(r)) => view! { <EmbedResult report=r /> }.into_any(),
                (Status::Error, _) => view! { <p class="error" role="alert">{state.message.get()}</p> }.into_any(),
                (Status::Running, _) => view! {
                    <p role="status">{move || format!(
                        "Analysing {}… {:.0} %",
                        state.source_label.get(),
                        100.0 * state.progress.with(|p| p.as_ref().map_or(0.0, |p| p.fraction))
                    )}</p>
                }.into_any(),
                _ => view! { <p role="status">"Waiting for a model…"</p> }.into_any(),
            }}
        </ContractReport>
    }
}

#[component]
fn EmbedResult(
    /// The result shown.
    report: Report,
) -> impl IntoView {
    let r = report;
    let model = r.model_name();
    // Class 2 distributions sit inside ±0.2: the zoom shows them; Class 1 needs the full range.
    let hist = if r.class == Class::Two { r.histogram_zoom.clone() } else { r.histogram.clone() };
    let spec = ChartSpec::Histogram {
        title: "Pairwise cosines".into(),
        series: vec![(model.clone(), hist)],
        markers: mu_epsilon_markers(r.mu, r.epsilon, r.epsilon_ci),
        reference: None,
        counted: Counted::Pairs,
    };
    let interval = match r.epsilon_ci {
        Some([lo, hi]) => format!("95 % interval [{}, {}]", significant(lo, 4), significant(hi, 4)),
        None => format!("exact over {} pairs", group_digits(r.pairs)),
    };
    let capacity = if r.capacity_determinate {
        format!("capacity {} (the paper's fitted law, Eq. 7)", headline_capacity(&r))
    } else {
        "capacity indeterminate (ε ≥ 0.1)".to_string()
    };
    // The proven interval in one short line: the card must fit its 640 × 420 frame.
    let proven = r.capacity_proven.map(|p| {
        let count = |x: Option<f64>| x.map_or("∞".to_string(), scientific_from_log10);
        format!("proven: {} to {} directions", count(p.log10_at_least), count(p.log10_at_most))
    });
    // A dictionary's ε is that of its features (docs/method.md §10), not the paper's embedding ε.
    let (sub, what) = match &r.dictionary {
        Some(d) => (
            format!(
                "{} · {} features × d_in {} {}{}",
                r.tensor,
                group_digits(d.dictionary.d_sae),
                group_digits(d.dictionary.d_in),
                r.dtype,
                d.dictionary.layer.map_or(String::new(), |l| format!(" · layer {l}"))
            ),
            format!(" ε of the {}", features_of(d)),
        ),
        None => (
            format!("{} · {} × {} {}", r.tensor, group_digits(r.rows), group_digits(r.dim), r.dtype),
            " ε = μ + 2σ".into(),
        ),
    };
    // The full view of the same result, without `embed=1`.
    let back = links::permalink_href(&page_base(), &r, &crate::result::permalink::encode(&r));
    view! {
        <article class="embed-card" aria-label="Orthoscope result">
            <h1 class="embed-title">{model.clone()}</h1>
            <p class="embed-sub" data-testid="embed-sub">{sub}</p>
            <div class="embed-figures">
                <p><span class="value" data-testid="epsilon">{significant(r.epsilon, 4)}</span>{what}<br /><span class="unit">{interval}</span></p>
                <p><strong>{r.class.label()}</strong><br /><span class="unit">{capacity}</span>{proven.map(|p| view! { <br /><span class="unit" data-testid="embed-proven">{p}</span> })}</p>
            </div>
            <ChartCanvas spec=spec testid="histogram" shape="chart-small" file_stem="histogram".to_string() exports=false />
            <p class="embed-foot">
                <a href=back target="_blank" rel="noopener" data-testid="embed-link">"Open in Orthoscope ↗"</a>
                " · capacities are for relative comparison"
            </p>
        </article>
    }
}
