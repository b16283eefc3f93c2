//! Choosing what to analyse: files (or a folder) by picker or drop, a built-in demo, and the tensor.
//! Lists start a run on an explicit choice (a button), never on each arrow key.

use js_sys::{Array, Function, Promise, Reflect};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Event, File, HtmlInputElement};

use super::controller::{self, State, Status};
use crate::read::demo::DEMOS;
use crate::read::locate::TensorRole;

pub fn files_of(list: Option<web_sys::FileList>) -> Vec<File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).map(|f| named_by_path(&f, &relative_path(&f))).collect()
}

/// A file of a chosen folder's path inside it (`run/layers.3/cfg.json`); empty for a file chosen alone.
fn relative_path(file: &File) -> String {
    Reflect::get(file, &JsValue::from_str("webkitRelativePath")).ok().and_then(|p| p.as_string()).unwrap_or_default()
}

/// The same file (its bytes are not copied) named by its path in the folder, so the reader sees
/// the folders a dictionary's layer and hook are named by and a folder of several dictionaries
/// splits into them. A file with no folder keeps its name.
fn named_by_path(file: &File, path: &str) -> File {
    let path = path.trim_start_matches('/');
    if path.is_empty() || path == file.name() {
        return file.clone();
    }
    File::new_with_blob_sequence(&Array::of1(file), path).unwrap_or_else(|_| file.clone())
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
                <span>"… or a whole model folder (one with several SAE dictionaries is analysed layer by layer):"</span>
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

/// Opens what a drop carried: its files, and the files inside any folder dropped (walked through
/// the entries API, each named by its path in the folder). The entries must be taken while the
/// drop event is dispatched; they are read afterwards.
pub fn open_dropped(state: State, ev: &web_sys::DragEvent) {
    let Some(transfer) = ev.data_transfer() else { return };
    let entries = dropped_entries(&transfer);
    let has_folder = entries.iter().any(|e| flag(e, "isDirectory"));
    if !has_folder {
        controller::open_files(state, files_of(transfer.files()));
        return;
    }
    wasm_bindgen_futures::spawn_local(async move {
        let files = walk(entries).await;
        controller::open_files(state, files);
    });
}

/// `DataTransferItem.webkitGetAsEntry()` of every item (none where the browser offers no entries).
fn dropped_entries(transfer: &web_sys::DataTransfer) -> Vec<JsValue> {
    let Ok(items) = Reflect::get(transfer, &JsValue::from_str("items")) else { return Vec::new() };
    let len = Reflect::get(&items, &JsValue::from_str("length")).ok().and_then(|l| l.as_f64()).unwrap_or(0.0) as u32;
    (0..len)
        .filter_map(|i| Reflect::get_u32(&items, i).ok())
        .filter_map(|item| call(&item, "webkitGetAsEntry", &[]).ok())
        .filter(|e| e.is_object())
        .collect()
}

fn flag(value: &JsValue, key: &str) -> bool {
    Reflect::get(value, &JsValue::from_str(key)).ok().and_then(|v| v.as_bool()).unwrap_or(false)
}

fn call(target: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(target, &JsValue::from_str(method))?.dyn_into()?;
    f.apply(target, &args.iter().collect::<Array>())
}

/// The entries API takes callbacks: `target.method(resolve, reject)` as a future.
async fn callback(target: &JsValue, method: &str) -> Result<JsValue, JsValue> {
    let mut failed = None;
    let promise = Promise::new(&mut |resolve, reject| {
        if let Err(e) = call(target, method, &[resolve.into(), reject.into()]) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    JsFuture::from(promise).await
}

/// Every file under the dropped entries, depth first, named by its path (`fullPath` without its
/// leading `/`). A folder or file that cannot be read is left out, as the browser's own picker would.
async fn walk(entries: Vec<JsValue>) -> Vec<File> {
    let mut stack = entries;
    stack.reverse();
    let mut files = Vec::new();
    while let Some(entry) = stack.pop() {
        let path =
            Reflect::get(&entry, &JsValue::from_str("fullPath")).ok().and_then(|p| p.as_string()).unwrap_or_default();
        if flag(&entry, "isFile") {
            if let Ok(file) = callback(&entry, "file").await.and_then(|f| f.dyn_into::<File>()) {
                files.push(named_by_path(&file, &path));
            }
        } else if flag(&entry, "isDirectory") {
            let Ok(reader) = call(&entry, "createReader", &[]) else { continue };
            // readEntries answers in batches (100 in Chromium) until an empty one.
            let mut inside = Vec::new();
            while let Ok(batch) = callback(&reader, "readEntries").await {
                let batch = Array::from(&batch);
                if batch.length() == 0 {
                    break;
                }
                inside.extend(batch.iter());
            }
            stack.extend(inside.into_iter().rev());
        }
    }
    files
}
