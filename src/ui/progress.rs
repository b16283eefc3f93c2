//! Progress of the running analysis. Rendered once: updates change text and attributes only, so a
//! keyboard user's focus on "Stop here" or "Cancel" survives every progress message.

use leptos::prelude::*;

use super::controller::{self, now_ms, State, Status};
use crate::pass::analysis::Phase;
use crate::result::report::{group_digits, human_bytes, significant};

fn duration(ms: f64) -> String {
    let s = (ms / 1000.0).max(0.0);
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{}:{:02} min", (s / 60.0).floor() as u64, (s % 60.0).floor() as u64)
    }
}

/// Progress bar (named, with %), elapsed time, ETA, rows/s, the running ε with its interval,
/// Cancel and "Stop here".
#[component]
pub fn ProgressPanel(
    /// Page state.
    state: State,
) -> impl IntoView {
    let running = move || state.status.get() == Status::Running;
    let fraction = move || state.progress.with(|p| p.as_ref().map_or(0.0, |p| p.fraction));
    // A clock for elapsed time and ETA between progress messages.
    let tick = RwSignal::new(0.0);
    let handle = set_interval_with_handle(
        move || {
            if state.status.get_untracked() == Status::Running {
                tick.set(now_ms());
            }
        },
        std::time::Duration::from_millis(500),
    )
    .ok();
    on_cleanup(move || {
        if let Some(h) = handle {
            h.clear();
        }
    });
    let timing = move || {
        tick.track();
        let elapsed = now_ms() - state.started_ms.get();
        let p = state.progress.get();
        let f = p.as_ref().map_or(0.0, |p| p.fraction);
        let mut parts = vec![format!("{:.0} %", 100.0 * f), format!("elapsed {}", duration(elapsed))];
        if f > 0.02 && f < 1.0 {
            parts.push(format!("about {} left", duration(elapsed * (1.0 - f) / f)));
        }
        if let Some(p) = p.as_ref() {
            // Rows read, not those of the running ε, which stay put between estimates.
            let rows = p.rows_read.max(p.rows_seen);
            if rows > 0 && elapsed > 0.0 {
                parts.push(format!("{} rows/s", group_digits((rows as f64 / (elapsed / 1000.0)) as u64)));
            }
            if let Some(bytes) = p.bytes_fetched {
                parts.push(format!("{} fetched", human_bytes(bytes)));
            }
        }
        parts.join(" · ")
    };
    let phase = move || {
        state.progress.with(|p| match p.as_ref().map(|p| p.phase) {
            None => "reading the header",
            Some(Phase::Sample) => "reading the histogram's sample",
            Some(Phase::SamplePairs) => "computing the histogram",
            Some(Phase::Pass) => "exact pass over all rows",
            Some(Phase::Done) => "finishing",
        })
    };
    let running_epsilon = move || {
        state.progress.with(|p| {
            match p.as_ref().and_then(|p| p.epsilon.map(|e| (e, p.epsilon_se, p.rows_seen, p.rows))) {
                Some((e, Some(se), seen, rows)) => format!(
                    "running ε = {} ± {} (95 %) after {} of {} rows",
                    significant(e, 4),
                    significant(1.96 * se, 2),
                    group_digits(seen),
                    group_digits(rows)
                ),
                Some((e, None, seen, rows)) => {
                    format!(
                        "running ε = {} after {} of {} rows",
                        significant(e, 4),
                        group_digits(seen),
                        group_digits(rows)
                    )
                }
                None => "reading the sample for the histogram…".to_string(),
            }
        })
    };
    view! {
        <section class="progress" data-testid="progress" hidden=move || !running() aria-labelledby="progress-title">
            <h2 id="progress-title" class="small-title">{move || format!("Analysing {}", state.source_label.get())}</h2>
            <p class="phase">{phase}</p>
            <progress max="1" value=fraction aria-label="Analysis progress" aria-valuetext=move || format!("{:.0} percent", 100.0 * fraction())></progress>
            <p class="timing" data-testid="progress-timing">{timing}</p>
            <p class="running" data-testid="running-epsilon">{running_epsilon}</p>
            <div class="buttons">
                <button type="button" data-testid="cancel" on:click=move |_| controller::cancel(state)>"Cancel"</button>
                // `?exact=1` never changes during a run, so this renders once.
                {move || (!state.exact_only.get()).then(|| view! {
                    <button type="button" data-testid="stop-early" on:click=move |_| controller::stop_early()>
                        "Stop here, keep the estimate"
                    </button>
                })}
            </div>
        </section>
    }
}
