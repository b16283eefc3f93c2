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
                <dd>"How many ε-nearly-orthogonal directions fit in d dimensions: how many features the embedding space could hold apart. The paper's formulas are not upper bounds: two are existence (lower) bounds and two are fits to one optimiser. What is proven — at least, at most, and the floor on max |cos| — is shown beside them. Shown as a count of directions, in powers of ten."</dd>
                <dt>"the paper's law, full form (Eq. 7) — the headline"</dt>
                <dd>{format!("k = ⌈(d·exp((d^c·ε²/C)^(1/b)))^(1/a)⌉ with C = {}, a = {}, b = {}, c = {}: a fit to what one optimiser reached (k random vectors pushed apart by gradient descent, k ≤ 32,000, d ≤ 4096; paper §3.3), not a bound: known constructions exceed it. Used for the paper's Table 1.", estimate::FULL_C, estimate::FULL_A, estimate::FULL_B, estimate::FULL_EXP_C)}</dd>
                <dt>"the paper's law, one parameter (Eq. 6)"</dt>
                <dd>{format!("k = d·exp(d·ε²/C) with one fitted constant C = {}: a fit, like Eq. 7.", estimate::SIMPLE_C)}</dd>
                <dt>"JL, C = 3.029 (a lower bound)"</dt>
                <dd>{format!("The Johnson–Lindenstrauss form k = exp(d·ε²/C) with C = {} fitted on random vectors (paper §3.2): at least this many exist.", estimate::JL_C_TIGHT)}</dd>
                <dt>"JL, C = 8 (a lower bound)"</dt>
                <dd>{format!("The same form with the lemma's constant C = {}: random vectors reach at least this many, so it says how many exist, never how many can.", estimate::JL_C_PROVEN)}</dd>
                <dt>"proven: at least, at most, floor"</dt>
                <dd>"At least: directions with every |cos| ≤ ε that provably exist (explicit constructions such as Kerdock sets, or the covering bound). At most: the most that can exist (the relative and Levenshtein bounds). Floor: no set of the model's V rows in R^d can have a smaller largest |cos| (Welch, orthoplex, Levenshtein bounds). Sources in the method, §2."</dd>
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
