//! The explanations beside the numbers: every term on the result card, defined where it is used.

use leptos::prelude::*;

use crate::pass::estimate;
use crate::result::paper;

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
