//! The result card: the headline (ε, class, capacity with its unit, where the model sits among the
//! paper's 45), every term explained in place, the numbers, the charts, and what makes a result
//! travel (permalink, embed code, exports). Every figure is a field of the [`Report`].

use leptos::prelude::*;

use super::chart::{download_text, mu_epsilon_markers, ChartCanvas, ChartSpec};
use super::controller::{Provenance, State, Status};
use crate::charts::Counted;
use crate::pass::estimate::{self, Class};
use crate::result::paper;
use crate::result::permalink;
use crate::result::report::{
    export_stem, group_digits, histogram_csv, model_name, scientific_from_log10, significant, Report,
};

/// The testing-contract element (ARCHITECTURE.md, "The testing contract"): `data-testid="report"` with `data-status`,
/// `data-run` and, once done, `data-report` = the Report as JSON. The full page and the embed card
/// both render their result inside it.
#[component]
pub fn ContractReport(
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
            data-report=move || {
                (state.status.get() == Status::Done)
                    .then(|| state.report.get().and_then(|r| serde_json::to_string(&r).ok()))
                    .flatten()
            }
        >
            {children()}
        </section>
    }
}

/// The full page's result: the error (if the last run failed) above the result on display.
#[component]
pub fn ReportPanel(
    /// Page state.
    state: State,
) -> impl IntoView {
    view! {
        <ContractReport state=state class="report">
            // The alert region exists from the start, so screen readers announce what appears in it.
            <p class="error" role="alert" data-testid="error">
                {move || (state.status.get() == Status::Error).then(|| state.message.get())}
            </p>
            <p class="note" hidden=move || state.status.get() != Status::Cancelled>{move || state.message.get()}</p>
            {move || state.report.get().map(|r| view! { <ResultCard report=r state=state /> })}
        </ContractReport>
    }
}

/// "Class 2", and what it means (`docs/method.md` §3).
pub fn class_name(c: Class) -> &'static str {
    match c {
        Class::One => "Class 1",
        Class::Two => "Class 2",
        Class::Between => "between the classes",
    }
}

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

/// The link that re-runs a result opened by URL: `?url=…` or `?hf=…`.
pub fn rerun_query(r: &Report) -> Option<String> {
    let url = r.source_url.as_deref()?;
    let encode = |s: &str| String::from(js_sys::encode_uri_component(s));
    Some(match url.strip_prefix("hf:") {
        Some(id) => format!("?hf={}", encode(id)),
        None => format!("?url={}", encode(url)),
    })
}

/// The page's own address without query or fragment.
pub fn page_base() -> String {
    web_sys::window()
        .and_then(|w| Some(format!("{}{}", w.location().origin().ok()?, w.location().pathname().ok()?)))
        .unwrap_or_default()
}

/// The permalink of a report: the full view, the Report in the fragment (`permalink::encode`) and
/// the model's URL, so a reader can run it again.
pub fn permalink_href(r: &Report, fragment: &str) -> String {
    format!("{}{}#{fragment}", page_base(), rerun_query(r).unwrap_or_default())
}

/// The `<iframe>` snippet that embeds this result in a blog post.
pub fn embed_snippet(r: &Report, fragment: &str) -> String {
    let query = match rerun_query(r) {
        Some(q) => format!("{q}&embed=1"),
        None => "?embed=1".to_string(),
    };
    let title = format!("Orthoscope: ε of {}", model_name(&r.file, r.source_url.as_deref())).replace('"', "'");
    format!(
        "<iframe src=\"{}{}#{}\" width=\"640\" height=\"420\" style=\"border:0;max-width:100%\" title=\"{}\" loading=\"lazy\"></iframe>",
        page_base(),
        query,
        fragment,
        title
    )
}

fn copy_to_clipboard(text: &str) {
    if let Some(w) = web_sys::window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

/// One report, in full.
#[component]
fn ResultCard(
    /// The result on display.
    report: Report,
    /// Page state.
    state: State,
) -> impl IntoView {
    let r = report;
    let model = model_name(&r.file, r.source_url.as_deref());
    let stem = export_stem(&r);
    let shared = state.provenance.get_untracked() == Provenance::Permalink;
    let running = move || state.status.get() == Status::Running;
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
    let capacity_view = if r.capacity_determinate {
        view! {
            <p class="big" data-testid="capacity">{headline_capacity(&r)}</p>
            <p class="unit">{format!("ε-nearly-orthogonal directions in d = {} dimensions (paper Eq. 7)", group_digits(r.dim))}</p>
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
    let c = r.log10_capacity;
    let numbers = vec![
        ("tensor", format!("{} ({})", r.tensor, r.tensor_reason)),
        ("file", format!("{} · {}", r.file, r.format)),
        ("dtype · V × d", format!("{} · {} × {}", r.dtype, group_digits(r.rows), group_digits(r.dim))),
        (
            "rows dropped",
            format!(
                "{} ({} zero, {} NaN/Inf)",
                group_digits(r.rows_dropped),
                group_digits(r.rows_dropped_zero),
                group_digits(r.rows_dropped_nonfinite)
            ),
        ),
        ("pairs", format!("{} ({})", group_digits(r.pairs), if r.exact { "all" } else { "among the rows seen" })),
        ("μ, mean cosine", significant(r.mu, 5)),
        ("σ, standard deviation", significant(r.sigma, 5)),
        ("ε = μ + 2σ", significant(r.epsilon, 5)),
        ("μ + 3σ", significant(r.epsilon_3sigma, 5)),
        ("capacity, adjusted full (Eq. 7)", capacity_text(c.adjusted_full)),
        ("capacity, adjusted simple (Eq. 6)", capacity_text(c.adjusted_simple)),
        ("JL bound, C = 3.029", capacity_text(c.jl_c3029)),
        ("JL bound, C = 8", capacity_text(c.jl_c8)),
        (
            "tied embeddings",
            format!("{} — {}", r.tied.map_or("unknown", |t| if t { "yes" } else { "no" }), r.tied_evidence),
        ),
        ("seed", r.seed.to_string()),
        (
            "time",
            format!(
                "{} ms ({} worker{} · SIMD: {}{}{})",
                group_digits(r.timing_ms.max(0.0) as u64),
                r.workers,
                if r.workers == 1 { "" } else { "s" },
                r.kernel,
                r.gram_gflops.map_or(String::new(), |g| format!(", {g:.1} GFLOP/s")),
                // Why f64 ran where f32 is the default (kernel::f32_suffices).
                if r.precision_reason.is_empty() { String::new() } else { format!("; f64: {}", r.precision_reason) }
            ),
        ),
    ];
    let markers = mu_epsilon_markers(r.mu, r.epsilon, r.epsilon_ci);
    let reference = |h: &crate::result::report::HistogramReport| {
        Some((format!("random init, d = {}", r.dim), paper::random_init_bin_fractions(r.dim, &h.edges)))
    };
    let full = ChartSpec::Histogram {
        title: "All pairwise cosines".into(),
        series: vec![(model.clone(), r.histogram.clone())],
        markers: markers.clone(),
        reference: reference(&r.histogram),
        counted: Counted::Pairs,
    };
    let zoom = ChartSpec::Histogram {
        title: format!("Zoom on [{}, {}]", r.histogram_zoom.lo, r.histogram_zoom.hi),
        series: vec![(model.clone(), r.histogram_zoom.clone())],
        markers,
        reference: reference(&r.histogram_zoom),
        counted: Counted::Pairs,
    };
    let by_epsilon = ChartSpec::CapacityVsEpsilon { d: r.dim, epsilon: r.epsilon, ci: r.epsilon_ci };
    let by_dim = ChartSpec::CapacityVsDim { d: r.dim, epsilon: r.epsilon };
    let sample = if r.histogram.rows_in_histogram >= r.rows_used {
        format!(
            "Histograms: all {} rows ({} pairs).",
            group_digits(r.histogram.rows_in_histogram),
            group_digits(r.histogram.pairs_in_histogram)
        )
    } else {
        format!(
            "Histograms: the {} pairs between {} rows in randomly chosen blocks of adjacent rows (pairs inside one block are left out: vocabulary neighbours are often related). μ and ε are {}.",
            group_digits(r.histogram.pairs_in_histogram),
            group_digits(r.histogram.rows_in_histogram),
            if r.exact { "exact over all pairs" } else { "the estimate" }
        )
    };
    let json = serde_json::to_string_pretty(&r).unwrap_or_default();
    let csv = histogram_csv(&r);
    let (json_name, csv_name) = (format!("{stem}.json"), format!("{stem}-histogram.csv"));
    let fragment = permalink::encode(&r);
    let link = permalink_href(&r, &fragment);
    let snippet = embed_snippet(&r, &fragment);
    let copied = RwSignal::new(String::new());
    let (link_copy, snippet_copy) = (link.clone(), snippet.clone());
    let rerun = rerun_query(&r).map(|q| format!("{}{q}", page_base()));
    let chart_stem = move |suffix: &'static str| {
        let stem = stem.clone();
        Signal::derive(move || format!("{stem}-{suffix}"))
    };
    view! {
        <article class="card" class:stale=running aria-labelledby="result-heading">
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
            <div class="headline">
                <div class="figure">
                    <h3>"ε, deviation from orthogonality"</h3>
                    <p class="big" data-testid="epsilon">{significant(r.epsilon, 4)}</p>
                    <p class="unit">{match r.epsilon_ci {
                        Some([lo, hi]) => format!("± {} (95 % interval [{}, {}])", significant((hi - lo) / 2.0, 2), significant(lo, 4), significant(hi, 4)),
                        None => "exact, over all pairs".to_string(),
                    }}</p>
                </div>
                <div class="figure">
                    <h3>"Class"</h3>
                    <p class="big" data-testid="class">{class_name(r.class)}</p>
                    <p class="unit">{class_meaning(r.class)}</p>
                </div>
                <div class="figure">
                    <h3>"Capacity"</h3>
                    {capacity_view}
                </div>
            </div>
            <p class="reference" data-testid="paper-neighbours">
                {format!("Reference: {}.", paper::neighbours_sentence(r.epsilon))}
            </p>
            <p class="note">{estimate_note}</p>
            <Glossary />
            <div class="charts two">
                <ChartCanvas spec=full testid="histogram" file_stem=chart_stem("histogram") />
                <ChartCanvas spec=zoom testid="histogram-zoom" file_stem=chart_stem("histogram-zoom") />
            </div>
            <p class="note">{sample}</p>
            <h3>"Sensitivity: how capacity moves with ε and with d"</h3>
            <p class="note">
                "Capacity grows like exp(d·ε²): a small change of ε moves it by orders of magnitude, which is why the paper uses it to compare models, not as an absolute count. When the result is an estimate, a band marks ε's 95 % interval."
            </p>
            <div class="charts two">
                <ChartCanvas spec=by_epsilon testid="sensitivity-epsilon" shape="chart-tall" file_stem=chart_stem("capacity-vs-epsilon") />
                <ChartCanvas spec=by_dim testid="sensitivity-dim" shape="chart-tall" file_stem=chart_stem("capacity-vs-d") />
            </div>
            <super::geometry::GeometrySection report=r.clone() state=state />
            <super::explore::TailExplorer report=r.clone() state=state />
            <details class="numbers-details">
                <summary>"All numbers"</summary>
                <table class="numbers">
                    <tbody>
                        {numbers.into_iter().map(|(k, v)| view! { <tr><th scope="row">{k}</th><td>{v}</td></tr> }).collect_view()}
                    </tbody>
                </table>
            </details>
            {r.unembedding.clone().map(|u| {
                let stem_base = export_stem(&r);
                let interval = u.mu_plus_2sigma_ci.map_or_else(
                    || "exact".to_string(),
                    |[lo, hi]| format!("95 % interval [{}, {}] from {} of {} rows", significant(lo, 4), significant(hi, 4), group_digits(u.rows_seen), group_digits(u.rows)),
                );
                view! {
                    <div class="unembedding" data-testid="unembedding">
                        <h3>{format!("Unembedding {} ({} × {}, {})", u.tensor, group_digits(u.rows), group_digits(u.dim), u.dtype)}</h3>
                        <p>{format!("μ = {} · σ = {} · μ + 2σ = {} ({interval})", significant(u.mu, 5), significant(u.sigma, 5), significant(u.mu_plus_2sigma, 5))}</p>
                        <p class="note">{u.note.clone()}</p>
                        {unembedding_charts(&u, r.mu, r.epsilon, &stem_base)}
                    </div>
                }
            })}
            <p class="caveat">{r.caveat.clone()}</p>
            <div class="share">
                <h3>"Share and export"</h3>
                <p>
                    <a data-testid="permalink" href=link.clone()>"Permalink to this result"</a>
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
        </article>
    }
}

fn capacity_text(log10: f64) -> String {
    format!("{} (log10 {:.2})", scientific_from_log10(log10), log10)
}

/// Every term on the card, explained where it is used (`docs/method.md` §1–3, §7).
#[component]
pub fn Glossary() -> impl IntoView {
    view! {
        <details class="glossary">
            <summary>"What these numbers mean"</summary>
            <dl>
                <dt>"cosine similarity, μ, σ"</dt>
                <dd>"Each token's embedding row is scaled to length 1; the cosine of two rows is their dot product (1 = same direction, 0 = orthogonal). μ and σ are the mean and standard deviation over all pairs of distinct tokens (the diagonal excluded, signed, not centred). Rows of zero length or with NaN/Inf are dropped."</dd>
                <dt>"ε = μ + 2σ"</dt>
                <dd>"The accepted deviation from orthogonality: how far from 90° token directions typically are. Two directions with |cos| ≤ ε count as “ε-nearly-orthogonal”."</dd>
                <dt>"μ + 3σ"</dt>
                <dd>"A stricter (“exaggerated”) variant the paper's code also reports."</dd>
                <dt>"capacity"</dt>
                <dd>"How many ε-nearly-orthogonal directions fit in d dimensions: an upper bound on the number of features the embedding space could hold apart. Shown as a count of directions, in powers of ten."</dd>
                <dt>"adjusted full law (paper Eq. 7) — the headline"</dt>
                <dd>{format!("k ≤ ⌈(d·exp((d^c·ε²/C)^(1/b)))^(1/a)⌉ with C = {}, a = {}, b = {}, c = {}: fitted to simulations of k random vectors pushed apart by gradient descent (k ≤ 32,000, d ≤ 4096). Used for the paper's Table 1.", estimate::FULL_C, estimate::FULL_A, estimate::FULL_B, estimate::FULL_EXP_C)}</dd>
                <dt>"adjusted simple law (paper Eq. 6)"</dt>
                <dd>{format!("k ≤ d·exp(d·ε²/C) with one fitted constant C = {}.", estimate::SIMPLE_C)}</dd>
                <dt>"JL bound, C = 3.029"</dt>
                <dd>{format!("The Johnson–Lindenstrauss form k ≤ exp(d·ε²/C) with C = {} fitted on random vectors (paper §3.2).", estimate::JL_C_TIGHT)}</dd>
                <dt>"JL bound, C = 8"</dt>
                <dd>{format!("The same form with the proven constant C = {}: the classic, very conservative bound.", estimate::JL_C_PROVEN)}</dd>
                <dt>"Class 1, Class 2"</dt>
                <dd>"The paper's two families: Class 2 (ε < 0.1) has cosines tight around 0 and finite capacities of about 10⁵ to 10¹¹; Class 1 (ε > 0.2) has wide distributions with μ far from 0 and no meaningful capacity (“indeterminate”). No published model lies between 0.1 and 0.2."</dd>
                <dt>"95 % interval, seed"</dt>
                <dd>"A run stopped early estimates ε from the rows read so far (in a random order fixed by the seed; the same seed gives the same answer) and gives a 95 % interval. A run to the end is exact."</dd>
                <dt>"caveats"</dt>
                <dd>"The capacity formulas extrapolate fits made for k ≤ 32,000 and d ≤ 4096 and are exponentially sensitive to ε²: compare models with them, don't read them as absolute counts. ε of the input embedding stands in for the whole latent space (the paper's hypothesis)."</dd>
            </dl>
            <p>
                "Method: A. Guha, "
                <a href=paper::PAPER_URL target="_blank" rel="noopener noreferrer">{paper::PAPER_TITLE}</a>
                " (2026)."
            </p>
        </details>
    }
}

/// The unembedding's own pairwise histogram (paper Fig. 10) and the per-token cosines of embedding
/// and unembedding rows (Fig. 9), both marked as not the paper's ε.
fn unembedding_charts(
    u: &crate::result::report::UnembeddingReport,
    mu: f64,
    epsilon: f64,
    stem: &str,
) -> impl IntoView {
    let pairwise = u.histogram.clone().map(|h| {
        let spec = ChartSpec::Histogram {
            title: "Unembedding: pairwise cosines of its rows (Fig. 10), not the paper's ε".into(),
            series: vec![(format!("{} (μ + 2σ = {})", u.tensor, significant(u.mu_plus_2sigma, 3)), h)],
            // Named μ + 2σ, never ε: this matrix is not the one the paper's ε is about.
            markers: mu_epsilon_markers(u.mu, u.mu_plus_2sigma, u.mu_plus_2sigma_ci)
                .into_iter()
                .map(|mut m| {
                    m.label = m.label.replace('ε', "μ + 2σ");
                    m
                })
                .collect(),
            reference: None,
            counted: Counted::Pairs,
        };
        view! { <ChartCanvas spec=spec testid="unembedding-histogram" file_stem=format!("{stem}-unembedding-pairwise") /> }
    });
    let alignment = u.alignment.clone().map(|a| {
        let text = format!(
            "Per token, cos(embedding row, unembedding row): mean {} ± {} over {} tokens (min {}, max {}). For scale, the embedding's own pairs have μ = {} and ε = {}.",
            significant(a.mean, 4),
            significant(a.sigma, 3),
            a.tokens,
            significant(a.min, 3),
            significant(a.max, 3),
            significant(mu, 4),
            significant(epsilon, 4),
        );
        let spec = ChartSpec::Histogram {
            title: "Per-token cosine of embedding and unembedding rows (Fig. 9), not the paper's ε".into(),
            series: vec![(format!("{} vs {}", a.embedding, a.unembedding), a.histogram.clone())],
            markers: Vec::new(),
            reference: None,
            counted: Counted::Tokens,
        };
        (
            view! {
                <p data-testid="token-alignment">{text}</p>
                <p class="note">{a.note.clone()}</p>
            },
            view! { <ChartCanvas spec=spec testid="token-alignment-histogram" file_stem=format!("{stem}-token-alignment") /> },
        )
    });
    let (alignment_text, alignment_chart) = alignment.map_or((None, None), |(t, c)| (Some(t), Some(c)));
    view! {
        {alignment_text}
        <div class="charts two">{pairwise}{alignment_chart}</div>
    }
}
