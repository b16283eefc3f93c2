//! The page's panels. Each shows fields of the state; none computes a statistic.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, Event, File, HtmlInputElement, HtmlSelectElement};

use super::controller::{self, State, Status};
use super::histogram::Histogram;
use crate::estimate::Class;
use crate::report::{scientific_from_log10, significant, Report};
use crate::synth::DEMOS;

fn files_of(list: Option<web_sys::FileList>) -> Vec<File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

/// The file input (`data-testid="file-input"`, several files at once), a drop target, and the demos.
#[component]
pub fn DropZone(
    /// Page state.
    state: State,
) -> impl IntoView {
    let dragging = RwSignal::new(false);
    let on_change = move |ev: Event| {
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<HtmlInputElement>().ok()) else { return };
        let files = files_of(input.files());
        controller::open_files(state, files);
        // Let the same file be chosen again after an edit.
        input.set_value("");
    };
    let on_drop = move |ev: DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        let files = files_of(ev.data_transfer().and_then(|d| d.files()));
        controller::open_files(state, files);
    };
    let on_demo = move |ev: Event| {
        let Some(select) = ev.target().and_then(|t| t.dyn_into::<HtmlSelectElement>().ok()) else { return };
        let name = select.value();
        if !name.is_empty() {
            controller::open_demo(state, name);
        }
    };
    view! {
        <section
            class="dropzone"
            class:dragging=move || dragging.get()
            on:dragover=move |ev: DragEvent| { ev.prevent_default(); dragging.set(true); }
            on:dragleave=move |_| dragging.set(false)
            on:drop=on_drop
        >
            <label class="pick">
                <span>"Drop a model file (or all shards with their index) here, or choose"</span>
                <input type="file" data-testid="file-input" multiple accept=".safetensors,.gguf,.npy,.json" on:change=on_change />
            </label>
            <label class="pick folder">
                "… or a whole model folder: "
                <input type="file" data-testid="folder-input" prop:webkitdirectory=true multiple on:change=on_change />
            </label>
            <p class="hint">".safetensors (any size, sharded with model.safetensors.index.json), .gguf (F32/F16/BF16 and Q4_0…Q8_K), .npy. Only headers and the embedding's bytes are read; nothing is uploaded."</p>
            <label class="demo">
                "or a built-in demo: "
                <select data-testid="demo-select" on:change=on_demo>
                    <option value="">"choose…"</option>
                    {DEMOS.iter().map(|(name, about)| view! { <option value=*name>{format!("{name} — {about}")}</option> }).collect_view()}
                </select>
            </label>
        </section>
    }
}

/// The 2-D tensors of the file, the located embedding preselected; picking another re-runs.
#[component]
pub fn TensorPicker(
    /// Page state.
    state: State,
) -> impl IntoView {
    let on_pick = move |ev: Event| {
        let Some(select) = ev.target().and_then(|t| t.dyn_into::<HtmlSelectElement>().ok()) else { return };
        controller::choose_tensor(state, select.value());
    };
    move || {
        state.opened.get().map(|o| {
            let chosen = o.chosen.clone();
            let options = o
                .candidates
                .iter()
                .filter_map(|&i| o.tensors.get(i))
                .map(|t| {
                    let selected = t.name == chosen;
                    let label = format!("{} — {} {:?}", t.name, t.dtype.name(), t.shape);
                    view! { <option value=t.name.clone() selected=selected>{label}</option> }
                })
                .collect_view();
            let unembedding = o.unembedding.clone().map_or_else(
                || "No separate unembedding (tied, or not in these files).".to_string(),
                |u| format!("Unembedding: {u} (shown below, not used for ε)."),
            );
            let files = match o.files.as_slice() {
                [one] => one.clone(),
                many => format!("{} files", many.len()),
            };
            let missing = (!o.missing.is_empty()).then(|| format!("Named by the index but not given: {}.", o.missing.join(", ")));
            let ignored = (!o.ignored.is_empty()).then(|| format!("Not read (not named by the index, or not a model file): {}.", o.ignored.join(", ")));
            view! {
                <section class="picker">
                    <label>
                        <span>{format!("{files} · {} · tensor: ", o.format)}</span>
                        <select data-testid="tensor-select" on:change=on_pick prop:value=chosen.clone()>{options}</select>
                    </label>
                    <p class="hint">{format!("Chosen: {} ({}). {}", o.chosen, o.reason, unembedding)}</p>
                    {missing.map(|m| view! { <p class="hint" data-testid="missing-shards">{m}</p> })}
                    {ignored.map(|m| view! { <p class="hint">{m}</p> })}
                </section>
            }
        })
    }
}

/// Progress bar, running ε with its uncertainty, Cancel and "stop early".
#[component]
pub fn ProgressPanel(
    /// Page state.
    state: State,
) -> impl IntoView {
    move || {
        (state.status.get() == Status::Running).then(|| {
            let p = state.progress.get();
            let fraction = p.as_ref().map_or(0.0, |p| p.fraction);
            let phase = p.as_ref().map_or("opening".to_string(), |p| format!("{:?}", p.phase).to_lowercase());
            let running = p.as_ref().and_then(|p| p.epsilon.map(|e| (e, p.epsilon_se, p.rows_seen, p.rows)));
            let running_text = match running {
                Some((e, Some(se), seen, rows)) => format!("running ε = {} ± {} (95 %) after {seen} of {rows} rows", significant(e, 4), significant(1.96 * se, 2)),
                Some((e, None, seen, rows)) => format!("running ε = {} after {seen} of {rows} rows", significant(e, 4)),
                None => "reading the sample for the histogram…".to_string(),
            };
            view! {
                <section class="progress" data-testid="progress">
                    <p>{format!("Analysing {} — {phase}{}", state.source_label.get(), p.as_ref().and_then(|p| p.bytes_fetched).map_or(String::new(), |b| format!(" · {:.1} MB downloaded", b as f64 / 1e6)))}</p>
                    <progress max="1" value=fraction></progress>
                    <p class="running" data-testid="running-epsilon">{running_text}</p>
                    <button data-testid="cancel" on:click=move |_| controller::cancel(state)>"Cancel"</button>
                    <Show when=move || !state.exact_only.get()>
                        <button data-testid="stop-early" on:click=move |_| controller::stop_early()>"Stop here, keep the estimate"</button>
                    </Show>
                </section>
            }
        })
    }
}

fn class_text(c: Class) -> &'static str {
    match c {
        Class::One => "Class 1 (ε > 0.2: wide distribution, capacity indeterminate)",
        Class::Two => "Class 2 (ε < 0.1: tight around 0)",
        Class::Between => "between the classes (0.1 ≤ ε ≤ 0.2; no published model falls here)",
    }
}

fn capacity_text(log10: f64) -> String {
    format!("{} (log10 {:.2})", scientific_from_log10(log10), log10)
}

/// The testing-contract element (`shared/design.md`): `data-testid="report"` with `data-status`,
/// `data-run` and, once done, `data-report` = the Report as JSON. The full page and the embed card
/// both render their result inside it.
#[component]
fn ContractReport(
    /// Page state.
    state: State,
    /// CSS class of the section.
    class: &'static str,
    /// What is shown inside.
    children: Children,
) -> impl IntoView {
    view! {
        <section
            class=class
            data-testid="report"
            data-status=move || state.status.get().as_str()
            data-run=move || state.run.get().to_string()
            data-report=move || state.report.get().and_then(|r| serde_json::to_string(&r).ok())
        >
            {children()}
        </section>
    }
}

/// The result card of the full page, or the error.
#[component]
pub fn ReportPanel(
    /// Page state.
    state: State,
) -> impl IntoView {
    view! {
        <ContractReport state=state class="report">
            {move || match state.status.get() {
                Status::Error => view! { <p class="error" data-testid="error">{state.message.get()}</p> }.into_any(),
                Status::Cancelled => view! { <p class="note">{state.message.get()}</p> }.into_any(),
                Status::Done => state.report.get().map(|r| view! { <ResultCard report=r /> }.into_any()).unwrap_or_else(|| ().into_any()),
                _ => ().into_any(),
            }}
        </ContractReport>
    }
}

/// The headline capacity (paper Eq. 7), or "indeterminate" where the paper prints that.
fn headline_capacity(r: &Report) -> String {
    if r.capacity_determinate {
        scientific_from_log10(r.log10_capacity.adjusted_full)
    } else {
        "indeterminate".to_string()
    }
}

/// One report, in full.
#[component]
fn ResultCard(
    /// The finished analysis.
    report: Report,
) -> impl IntoView {
    let r = report;
    let headline = headline_capacity(&r);
    let estimate_note = match r.epsilon_ci {
        Some([lo, hi]) => format!(
            "estimate from {} of {} rows: 95 % interval [{}, {}], seed {}",
            r.rows_seen,
            r.rows,
            significant(lo, 4),
            significant(hi, 4),
            r.seed
        ),
        None => format!("exact over all {} pairs", r.pairs),
    };
    let download = {
        let json = serde_json::to_string_pretty(&r).unwrap_or_default();
        let name = format!("orthoscope-{}.json", r.tensor.replace('/', "_"));
        move |_| super::histogram::download_text(&name, &json)
    };
    let c = r.log10_capacity;
    let rows = vec![
        ("tensor", format!("{} ({})", r.tensor, r.tensor_reason)),
        ("file", format!("{} · {}", r.file, r.format)),
        ("dtype · V × d", format!("{} · {} × {}", r.dtype, r.rows, r.dim)),
        (
            "rows dropped",
            format!("{} ({} zero, {} NaN/Inf)", r.rows_dropped, r.rows_dropped_zero, r.rows_dropped_nonfinite),
        ),
        ("pairs", format!("{} ({})", r.pairs, if r.exact { "all" } else { "among rows seen" })),
        ("μ (mean cosine)", significant(r.mu, 5)),
        ("σ (population)", significant(r.sigma, 5)),
        ("ε = μ + 2σ", significant(r.epsilon, 5)),
        ("μ + 3σ", significant(r.epsilon_3sigma, 5)),
        ("capacity, adjusted full (Eq. 7)", capacity_text(c.adjusted_full)),
        ("capacity, adjusted simple (Eq. 6)", capacity_text(c.adjusted_simple)),
        ("JL bound, C = 3.029", capacity_text(c.jl_c3029)),
        ("JL bound, C = 8", capacity_text(c.jl_c8)),
        ("class", class_text(r.class).to_string()),
        (
            "tied embeddings",
            format!("{} — {}", r.tied.map_or("unknown", |t| if t { "yes" } else { "no" }), r.tied_evidence),
        ),
        ("time", format!("{:.0} ms ({} kernel)", r.timing_ms, r.kernel)),
    ];
    view! {
        <div class="card">
            <div class="headline">
                <div>
                    <span class="label">"ε = μ + 2σ"</span>
                    <span class="value" data-testid="epsilon">{significant(r.epsilon, 4)}</span>
                </div>
                <div>
                    <span class="label">"capacity (paper Eq. 7)"</span>
                    <span class="value" data-testid="capacity">{headline}</span>
                </div>
            </div>
            <p class="note">{estimate_note}</p>
            <table class="numbers">
                {rows.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td>{v}</td></tr> }).collect_view()}
            </table>
            <p class="caveat">{r.caveat.clone()}</p>
            {r.unembedding.clone().map(|u| {
                let interval = u.mu_plus_2sigma_ci.map_or_else(
                    || "exact".to_string(),
                    |[lo, hi]| format!("95 % interval [{}, {}] from {} of {} rows", significant(lo, 4), significant(hi, 4), u.rows_seen, u.rows),
                );
                view! {
                    <div class="unembedding" data-testid="unembedding">
                        <h3>{format!("Unembedding {} ({} × {}, {})", u.tensor, u.rows, u.dim, u.dtype)}</h3>
                        <p>{format!("μ = {} · σ = {} · μ + 2σ = {} ({interval})", significant(u.mu, 5), significant(u.sigma, 5), significant(u.mu_plus_2sigma, 5))}</p>
                        <p class="hint">{u.note.clone()}</p>
                    </div>
                }
            })}
            <Histogram report=r.clone() />
            <button on:click=download>"Download report (JSON)"</button>
        </div>
    }
}

/// `?embed=1`: the compact card for a blog post.
#[component]
pub fn EmbedCard(
    /// Page state.
    state: State,
) -> impl IntoView {
    view! {
        <ContractReport state=state class="embed">
            {move || match (state.status.get(), state.report.get()) {
                (Status::Done, Some(r)) => {
                    let capacity = headline_capacity(&r);
                    view! {
                        <div class="embed-card">
                            <p class="embed-title">{format!("{} · {} × {}", r.tensor, r.rows, r.dim)}</p>
                            <p><span class="value" data-testid="epsilon">{significant(r.epsilon, 4)}</span>" ε = μ + 2σ"</p>
                            <p>{format!("capacity {capacity} · {}", class_text(r.class))}</p>
                            <Histogram report=r.clone() />
                            <p class="caveat">"Orthoscope · for relative comparison only"</p>
                        </div>
                    }.into_any()
                }
                (Status::Error, _) => view! { <p class="error">{state.message.get()}</p> }.into_any(),
                _ => view! { <p>"Analysing…"</p> }.into_any(),
            }}
        </ContractReport>
    }
}
