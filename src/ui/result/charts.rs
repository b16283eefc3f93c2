//! The result's charts: the histograms of all pairwise cosines (full range and zoom, against random
//! initialisation at the same d) and how the capacity moves with ε and with d.

use leptos::prelude::*;

use crate::charts::Counted;
use crate::pass::stats::SampledHistogram;
use crate::result::paper;
use crate::result::report::{group_digits, Report};
use crate::result::trained::Choice;
use crate::ui::chart::{mu_epsilon_markers, ChartCanvas, ChartSpec};

/// The two histograms of pairwise cosines (paper Fig. 1/2): the full range and a zoom on the bulk,
/// each with μ, ε (and ε's interval) marked and random initialisation at the same d beside it; then
/// which pairs they count.
#[component]
pub fn Histograms(
    /// The result on display.
    report: Report,
    /// Base of the exported file names (`export_stem`).
    stem: String,
    /// The rules whose rows are set aside (the card's choice): what the overlay splits off.
    enabled: RwSignal<Vec<String>>,
) -> impl IntoView {
    let r = report;
    let model = r.model_name();
    let overlay = RwSignal::new(false);
    let markers = mu_epsilon_markers(r.mu, r.epsilon, r.epsilon_ci);
    let reference = |h: &SampledHistogram| {
        Some((format!("random init, d = {}", r.dim), paper::random_init_bin_fractions(r.dim, &h.edges)))
    };
    let full_plain = ChartSpec::Histogram {
        title: "All pairwise cosines".into(),
        series: vec![(model.clone(), r.histogram.clone())],
        markers: markers.clone(),
        reference: reference(&r.histogram),
        counted: Counted::Pairs,
    };
    // The overlay: the same pairs split into those among trained rows and those with a set-aside
    // row, each drawn as a share of its own pairs (so the set-aside rows' shape shows).
    let trained = StoredValue::new(r.trained.clone());
    let histogram = StoredValue::new(r.histogram.clone());
    let split = move || {
        let chosen = enabled.get();
        trained.with_value(|t| match t.as_ref().map(|t| t.choice(&chosen)) {
            Some(Choice::Without(w)) => histogram.with_value(|h| w.overlay(h)),
            _ => None,
        })
    };
    let can_overlay = Signal::derive(move || split().is_some());
    let overlay_model = model.clone();
    let full = Signal::derive(move || match (overlay.get(), split()) {
        (true, Some((kept, aside))) => match full_plain.clone() {
            ChartSpec::Histogram { title, markers, reference, counted, .. } => ChartSpec::Histogram {
                title,
                series: vec![
                    (format!("{overlay_model}: pairs among trained rows"), kept),
                    (format!("pairs with a set-aside row ({})", group_digits(aside.pairs_in_histogram)), aside),
                ],
                markers,
                reference,
                counted,
            },
            other => other,
        },
        _ => full_plain.clone(),
    });
    let zoom = ChartSpec::Histogram {
        title: format!("Zoom on [{}, {}]", r.histogram_zoom.lo, r.histogram_zoom.hi),
        series: vec![(model, r.histogram_zoom.clone())],
        markers,
        reference: reference(&r.histogram_zoom),
        counted: Counted::Pairs,
    };
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
    view! {
        <div class="charts two">
            <ChartCanvas spec=full testid="histogram" file_stem=format!("{stem}-histogram") />
            <ChartCanvas spec=zoom testid="histogram-zoom" file_stem=format!("{stem}-histogram-zoom") />
        </div>
        <p class="note">{sample}</p>
        <p hidden=move || !can_overlay.get()>
            <label>
                <input type="checkbox" data-testid="histogram-overlay" prop:checked=move || overlay.get() on:change=move |ev| overlay.set(event_target_checked(&ev)) />
                " Overlay the pairs with a row the model never trained (full-range histogram)"
            </label>
        </p>
    }
}

/// How the capacity moves with ε (at the model's d) and with d (at the model's ε), for the four
/// formulas: why capacities compare models rather than count features (paper §2, §7).
#[component]
pub fn Sensitivity(
    /// The result on display.
    report: Report,
    /// Base of the exported file names (`export_stem`).
    stem: String,
) -> impl IntoView {
    let r = report;
    let by_epsilon = ChartSpec::CapacityVsEpsilon { d: r.dim, epsilon: r.epsilon, ci: r.epsilon_ci };
    let by_dim = ChartSpec::CapacityVsDim { d: r.dim, epsilon: r.epsilon };
    view! {
        <h3>"Sensitivity: how capacity moves with ε and with d"</h3>
        <p class="note">
            "Capacity grows like exp(d·ε²): a small change of ε moves it by orders of magnitude, which is why the paper uses it to compare models, not as an absolute count. The dashed lines are what is proven: the directions that provably exist (lower) and the most that can (upper). When the result is an estimate, a band marks ε's 95 % interval."
        </p>
        <div class="charts two">
            <ChartCanvas spec=by_epsilon testid="sensitivity-epsilon" shape="chart-tall" file_stem=format!("{stem}-capacity-vs-epsilon") />
            <ChartCanvas spec=by_dim testid="sensitivity-dim" shape="chart-tall" file_stem=format!("{stem}-capacity-vs-d") />
        </div>
    }
}
