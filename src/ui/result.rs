//! The result card: the headline (ε, class, capacity with its unit, where the model sits among the
//! paper's 45), every term explained in place, the numbers, the charts, and what makes a result
//! travel (permalink, embed code, exports). Every figure is a field of the [`Report`].
//!
//! One component per job, in the order they appear on the card: [`headline`] (the heading, the
//! notes on where the result came from, the three figures), [`proven`] (what is proven beside the
//! paper's law), [`dictionary`] (a sparse autoencoder's
//! dictionary and the share of its ε's capacity it uses), [`trained`] (ε without the rows the
//! model never trained, and the switches of the rules that found them), [`glossary`] (the explanations),
//! [`charts`] (histograms and sensitivity), [`numbers`] (the table of every number),
//! [`unembedding`] (the output matrix, when there is one) and [`share`] (permalink, embed code,
//! exports).

mod charts;
mod dead_below;
mod dictionary;
mod glossary;
mod headline;
mod numbers;
mod proven;
mod share;
mod trained;
mod unembedding;

use leptos::prelude::*;

use super::controller::{Provenance, State, Status};
use super::explore::TailExplorer;
use super::geometry::GeometrySection;
use crate::read::dictionary::SPARSITY_TENSOR;
use crate::read::untrained::UntrainedRule;
use crate::result::links;
use crate::result::report::{export_stem, Report};
use charts::{Histograms, Sensitivity};
use dead_below::DeadBelowControl;
pub use dictionary::features_of;
use dictionary::DictionaryDetails;
use glossary::Glossary;
pub use headline::headline_capacity;
use headline::{CardHeading, Headline};
use numbers::NumbersTable;
use proven::ProvenCapacity;
use share::ShareExport;
use trained::TrainedLine;
use unembedding::Unembedding;

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
            <p class="note" data-testid="choose-note" hidden=move || state.status.get() != Status::Choose>
                "Nothing was analysed: these files hold no input token embedding. Choose a tensor above to analyse it anyway."
            </p>
            {move || state.report.get().map(|r| view! { <ResultCard report=r state=state /> })}
        </ContractReport>
    }
}

/// The page's own address without query or fragment, from `window.location`: the base of every
/// link a result gives (`result::links`).
pub fn page_base() -> String {
    web_sys::window()
        .and_then(|w| Some(links::page_base(&w.location().origin().ok()?, &w.location().pathname().ok()?)))
        .unwrap_or_default()
}

/// One report, in full: the parts below, dimmed while a new analysis runs.
#[component]
fn ResultCard(
    /// The result on display.
    report: Report,
    /// Page state.
    state: State,
) -> impl IntoView {
    let r = report;
    let stem = export_stem(&r);
    let running = move || state.status.get() == Status::Running;
    // Which rules' rows are set aside in the numbers beside the paper's: the card's choice, which
    // the tail explorer and the histogram follow.
    let enabled = RwSignal::new(r.trained.as_ref().map(|t| t.default_enabled()).unwrap_or_default());
    let dead_latents = r.dictionary.is_some();
    // The threshold can be set where the files are at hand (not a shared link's result) and the
    // dictionary came with its sparsity file.
    let dead = UntrainedRule::DeadLatent.name();
    let any_dead = r.trained.as_ref().is_some_and(|t| t.rules.iter().any(|x| x.rule == dead));
    let sparsity_given = state
        .opened
        .with_untracked(|o| o.as_ref().is_some_and(|o| o.tensors.iter().any(|t| t.name == SPARSITY_TENSOR)));
    let mut threshold = (r.dictionary.is_some()
        && state.provenance.get_untracked() == Provenance::Analysed
        && (any_dead || sparsity_given))
        .then(|| view! { <DeadBelowControl state=state any_dead=any_dead /> }.into_any());
    // With no latent below the threshold there is no dead-latents section: the control stands alone.
    let trained = match r.trained.clone() {
        Some(t) => {
            let threshold = threshold.take();
            view! { <TrainedLine trained=t enabled=enabled dim=r.dim dead_latents=dead_latents threshold=threshold /> }
                .into_any()
        }
        None => threshold
            .take()
            .map(|c| {
                view! {
                    <section class="trained" aria-labelledby="dead-heading">
                        <h3 id="dead-heading">"Dead latents"</h3>
                        {c}
                    </section>
                }
                .into_any()
            })
            .into_any(),
    };
    let (capacity, determinate) = (r.log10_capacity.adjusted_full, r.capacity_determinate);
    let dictionary = r.dictionary.clone().map(
        |d| view! { <DictionaryDetails dictionary=d log10_capacity=capacity determinate=determinate dim=r.dim /> },
    );
    view! {
        <article class="card" class:stale=running aria-labelledby="result-heading">
            <CardHeading report=r.clone() state=state />
            <Headline report=r.clone() />
            <ProvenCapacity report=r.clone() />
            {dictionary}
            {trained}
            <Glossary />
            <Histograms report=r.clone() stem=stem.clone() enabled=enabled />
            <Sensitivity report=r.clone() stem=stem.clone() />
            <GeometrySection report=r.clone() state=state />
            <TailExplorer report=r.clone() state=state enabled=enabled />
            <NumbersTable report=r.clone() />
            {r.unembedding.clone().map(|u| view! { <Unembedding unembedding=u mu=r.mu epsilon=r.epsilon stem=stem /> })}
            <p class="caveat">{r.caveat.clone()}</p>
            <ShareExport report=r />
        </article>
    }
}
