//! Choosing what to analyse: files (or a folder) by picker or drop, a built-in demo, and the tensor.
//! Lists start a run on an explicit choice (a button), never on each arrow key.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, File, HtmlInputElement};

use super::controller::{self, State, Status};
use crate::read::demo::DEMOS;
use crate::read::locate::TensorRole;

pub fn files_of(list: Option<web_sys::FileList>) -> Vec<File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

/// The file input (`data-testid="file-input"`, several files at once), a folder input and the demos.
/// Files dropped anywhere on the page are handled by the page itself (see `App`).
#[component]
pub fn OpenPanel(
    /// Page state.
    state: State,
    /// True while a file is dragged over the page.
    dragging: RwSignal<bool>,
) -> impl IntoView {
    let on_change = move |ev: Event| {
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        let files = files_of(input.files());
        controller::open_files(state, files);
        // Let the same file be chosen again after an edit.
        input.set_value("");
    };
    let demo_ref = NodeRef::<leptos::html::Select>::new();
    let on_demo = move |_| {
        if let Some(select) = demo_ref.get_untracked() {
            controller::open_demo(state, select.value());
        }
    };
    view! {
        <section class="dropzone" class:dragging=move || dragging.get() aria-labelledby="open-title">
            <h2 id="open-title" class="small-title">"Analyse a model"</h2>
            <div class="pick-row">
            <label class="pick">
                <span>"Drop a model file (or all shards with their index) anywhere on this page, or choose:"</span>
                <input type="file" data-testid="file-input" multiple on:change=on_change />
            </label>
            <label class="pick folder">
                <span>"… or a whole model folder:"</span>
                <input type="file" data-testid="folder-input" prop:webkitdirectory=true multiple on:change=on_change />
            </label>
            </div>
            <super::url_form::UrlForm state=state />
            <p class="hint">".safetensors (any size; sharded with model.safetensors.index.json; MLX's 2–8-bit models too), .gguf (every type llama.cpp writes, IQ and K quants included), PyTorch checkpoints (.pt, .pth, .bin, .ckpt: read, never unpickled), .npz and .npy, ONNX (with its external data files). Only the headers and the embedding's bytes are read; nothing is uploaded."</p>
            <div class="demo-row">
                <label for="demo-select">"Built-in demo:"</label>
                <select id="demo-select" node_ref=demo_ref data-testid="demo-select" prop:value=move || state.demo.get()>
                    {DEMOS.iter().map(|(name, about)| view! { <option value=*name>{format!("{name} — {about}")}</option> }).collect_view()}
                </select>
                <button type="button" data-testid="demo-run" on:click=on_demo>"Analyse demo"</button>
            </div>
        </section>
    }
}

/// The 2-D tensors of the file, the located embedding preselected; "Analyse this tensor" re-runs.
#[component]
pub fn TensorPicker(
    /// Page state.
    state: State,
) -> impl IntoView {
    let select_ref = NodeRef::<leptos::html::Select>::new();
    let on_pick = move |_| {
        if let Some(select) = select_ref.get_untracked() {
            controller::choose_tensor(state, select.value());
        }
    };
    move || {
        state.opened.get().map(|o| {
            let chosen = o.chosen.clone();
            let options = o
                .candidates
                .iter()
                .zip(o.roles.iter().copied().chain(std::iter::repeat(TensorRole::Other)))
                .filter_map(|(&i, role)| o.tensors.get(i).map(|t| (t, role)))
                .map(|(t, role)| {
                    let selected = t.name == chosen;
                    let what = match role {
                        TensorRole::InputEmbedding => "",
                        TensorRole::OutputMatrix => " — output matrix, not the paper's ε",
                        TensorRole::Other => " — not the input embedding",
                        TensorRole::SaeDecoder => " — SAE decoder: ε of its feature directions",
                    };
                    let label = format!("{} — {} {:?}{what}", t.name, t.dtype.name(), t.shape);
                    view! { <option value=t.name.clone() selected=selected>{label}</option> }
                })
                .collect_view();
            let choose = state.status.get() == Status::Choose;
            let unembedding = o.unembedding.clone().map_or_else(
                || "No separate unembedding (tied, or not in these files).".to_string(),
                |u| format!("Unembedding: {u} (not used for ε; its statistics appear under the result when read)."),
            );
            let files = match o.files.as_slice() {
                [one] => one.clone(),
                many => format!("{} files", many.len()),
            };
            let missing = (!o.missing.is_empty())
                .then(|| format!("Parts of this model not given: {}.", o.missing.join(", ")));
            // tokenizer.json and config.json are not model files but are read (the first of
            // each): the tokens name rows and set untrained ones aside; config gives the vocabulary size.
            let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_ascii_lowercase();
            let first_of = |kind: &str| o.ignored.iter().find(|n| base(n) == kind).cloned();
            let companions: Vec<String> = [
                first_of("tokenizer.json").map(|n| format!("{n} (token names, rows never trained)")),
                first_of("config.json").map(|n| format!("{n} (vocabulary size)")),
            ]
            .into_iter()
            .flatten()
            .collect();
            let read_too = (!companions.is_empty()).then(|| format!("Also read: {}.", companions.join(", ")));
            let unread: Vec<String> = o
                .ignored
                .iter()
                .filter(|n| Some(*n) != first_of("tokenizer.json").as_ref() && Some(*n) != first_of("config.json").as_ref())
                .cloned()
                .collect();
            let ignored = (!unread.is_empty())
                .then(|| format!("Not read (not named by the index, or not a model file): {}.", unread.join(", ")));
            view! {
                <section class="picker" aria-label="Tensor">
                    <div class="demo-row">
                        <label for="tensor-select">{format!("{files} · {} · tensor:", o.format)}</label>
                        <select id="tensor-select" node_ref=select_ref data-testid="tensor-select" prop:value=chosen.clone()>{options}</select>
                        <button type="button" data-testid="tensor-run" on:click=on_pick>"Analyse this tensor"</button>
                    </div>
                    {if choose {
                        view! { <p class="error" role="alert" data-testid="choose-message">{state.message.get()}</p> }.into_any()
                    } else {
                        view! { <p class="hint">{format!("Chosen: {} ({}). {}", o.chosen, o.reason, unembedding)}</p> }.into_any()
                    }}
                    {missing.map(|m| view! { <p class="hint" data-testid="missing-shards">{m}</p> })}
                    {read_too.map(|m| view! { <p class="hint" data-testid="read-too">{m}</p> })}
                    {ignored.map(|m| view! { <p class="hint">{m}</p> })}
                </section>
            }
        })
    }
}

/// The files of a drop, if it carried any.
pub fn dropped_files(ev: &web_sys::DragEvent) -> Vec<File> {
    files_of(ev.data_transfer().and_then(|d| d.files()))
}
