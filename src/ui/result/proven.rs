//! Under the headline: what the capacity numbers are. The paper's law is a fit; beside it, for the
//! model's own ε and d, the directions that provably exist and the most that can, the floor no set
//! of its V rows can beat, and where the law stands against them (`docs/method.md` §2). Every
//! figure is a field of `Report::capacity_proven`.

use leptos::prelude::*;

use crate::result::proven;
use crate::result::report::Report;

/// The proven interval and floor, or nothing for a report stored before they existed.
#[component]
pub fn ProvenCapacity(
    /// The result on display.
    report: Report,
) -> impl IntoView {
    let r = report;
    r.capacity_proven.map(|p| {
        let law = r.capacity_determinate.then_some(r.log10_capacity.adjusted_full);
        let t = proven::describe(&p, r.epsilon, r.dim, r.rows_used, law);
        let verdict_class = match law.map(|l| proven::law_verdict(l, &p)) {
            Some(proven::LawVerdict::Inside) | None => "note",
            Some(_) => "warning",
        };
        view! {
            <section class="proven" aria-labelledby="proven-heading" data-testid="capacity-proven">
                <h3 id="proven-heading">"What is proven"</h3>
                <p data-testid="proven-interval">{t.interval}</p>
                <p data-testid="proven-floor">{t.floor}</p>
                {t.verdict.map(|v| view! { <p class=verdict_class data-testid="proven-verdict">{v}</p> })}
                <p class="unit">
                    {if law.is_some() {
                        format!("The capacity above is {}: what one optimiser reached, not a bound. The JL forms are lower bounds (random constructions). See the method, §2.", proven::LAW_NAME)
                    } else {
                        "The paper gives no capacity at this ε; what is proven holds at any ε. The JL forms are lower bounds (random constructions). See the method, §2.".to_string()
                    }}
                </p>
            </section>
        }
    })
}
