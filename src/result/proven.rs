//! What the capacity numbers are, in words: the sentences the card, the embed card and the CLI
//! print beside the paper's law (`docs/method.md` §2). Every figure is a field of the Report's
//! `capacity_proven` or `log10_capacity`; nothing is computed here but their comparison.

use crate::pass::capacity::{AtLeastBy, AtMostBy, CapacityProven, FloorBy};
use crate::result::report::{group_digits, scientific_from_log10, significant};

/// How the headline (paper Eq. 7) is named wherever it is shown.
pub const LAW_NAME: &str = "the paper's law (fitted to gradient-descent packings, §3.3)";

/// What the JL lines are: existence (lower) bounds, not ceilings.
pub const JL_NOTE: &str = "lower bound: at least this many exist (random constructions)";

/// The theorem behind a floor, for people.
pub fn floor_by_text(by: FloorBy) -> &'static str {
    match by {
        FloorBy::Orthonormal => "an orthonormal basis",
        FloorBy::Welch => "Welch bound",
        FloorBy::Orthoplex => "orthoplex bound",
        FloorBy::Levenshtein => "Levenshtein bound",
        FloorBy::CapPacking => "cap-packing bound",
    }
}

/// The construction or argument behind the directions that provably exist.
pub fn at_least_by_text(by: AtLeastBy) -> &'static str {
    match by {
        AtLeastBy::Orthonormal => "an orthonormal basis",
        AtLeastBy::Simplex => "a regular simplex",
        AtLeastBy::Covering => "covering bound",
        AtLeastBy::Kerdock => "Kerdock construction",
        AtLeastBy::E8 => "E8's lines",
        AtLeastBy::Leech => "the Leech lattice's lines",
        AtLeastBy::Equiangular28 => "28 equiangular lines",
        AtLeastBy::Equiangular276 => "276 equiangular lines",
        AtLeastBy::Unbounded => "any number: ε ≥ 1",
    }
}

/// The theorem behind the most directions possible.
pub fn at_most_by_text(by: AtMostBy) -> &'static str {
    match by {
        AtMostBy::Relative => "relative bound",
        AtMostBy::Levenshtein => "Levenshtein bound",
        AtMostBy::CapPacking => "cap-packing bound",
        AtMostBy::Unbounded => "no limit: ε ≥ 1",
    }
}

/// A count given as log10 ("2,112", "8.39 × 10⁶"), or "unboundedly many".
fn count(log10: Option<f64>) -> String {
    match log10 {
        Some(x) if x.is_finite() && x < 4.0 => group_digits(10f64.powf(x).round() as u64),
        Some(x) if x.is_finite() => scientific_from_log10(x),
        _ => "unboundedly many".to_string(),
    }
}

/// Where the paper's law stands against what is proven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LawVerdict {
    /// Between the proven lower and upper bounds.
    Inside,
    /// Above the most directions that can exist: the fit extrapolates past geometry.
    AboveProvenMost,
    /// Below what explicit constructions or covering already give.
    BelowProvenLeast,
}

/// Compares the law's log10 count with the proven interval.
pub fn law_verdict(law_log10: f64, p: &CapacityProven) -> LawVerdict {
    match (p.log10_at_least, p.log10_at_most) {
        (_, Some(most)) if law_log10 > most => LawVerdict::AboveProvenMost,
        (Some(least), _) if law_log10 < least => LawVerdict::BelowProvenLeast,
        _ => LawVerdict::Inside,
    }
}

/// The card's lines for a result with tolerance `eps` in R^`dim` over `rows` unit vectors.
#[derive(Clone, Debug, PartialEq)]
pub struct ProvenText {
    /// "Provably at least N directions have pairwise |cos| ≤ ε (…), and at most M can (…)."
    pub interval: String,
    /// "No V unit vectors in R^d can have max |cos| below F (…)."
    pub floor: String,
    /// Where the law stands, when the law gives a finite capacity.
    pub verdict: Option<String>,
}

/// The card's lines (see [`ProvenText`]); `law_log10` is Eq. 7 when the paper prints it.
pub fn describe(p: &CapacityProven, eps: f64, dim: u64, rows: u64, law_log10: Option<f64>) -> ProvenText {
    let interval = format!(
        "Provably at least {} directions in d = {} have pairwise |cos| ≤ {} ({}), and at most {} can ({}).",
        count(p.log10_at_least),
        group_digits(dim),
        significant(eps, 4),
        at_least_by_text(p.at_least_by),
        count(p.log10_at_most),
        at_most_by_text(p.at_most_by),
    );
    let floor = format!(
        "No {} unit vectors in R^{} can have max |cos| below {} ({}).",
        group_digits(rows),
        group_digits(dim),
        significant(p.floor_max_cos, 4),
        floor_by_text(p.floor_by),
    );
    let verdict = law_log10.filter(|x| x.is_finite()).map(|law| match law_verdict(law, p) {
        LawVerdict::Inside => "The paper's law lies inside the proven range: it is a fit, not a bound.".to_string(),
        LawVerdict::AboveProvenMost => format!(
            "The paper's law ({}) exceeds the most directions that can exist: there it extrapolates past geometry.",
            scientific_from_log10(law)
        ),
        LawVerdict::BelowProvenLeast => format!(
            "The paper's law ({}) falls below what provably exists: known constructions do better than the optimiser it was fitted to.",
            scientific_from_log10(law)
        ),
    });
    ProvenText { interval, floor, verdict }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::capacity::proven;

    #[test]
    fn llama_2_7b_reads_as_a_fit_inside_the_proven_range() {
        let p = proven(0.0645, 4096, 32000);
        let t = describe(&p, 0.0645, 4096, 32000, Some(7.0 + 3.99f64.log10()));
        assert!(t.interval.contains("Kerdock construction"), "{}", t.interval);
        assert!(t.interval.contains("8.39 × 10⁶"), "{}", t.interval);
        assert!(t.floor.contains("Welch bound"), "{}", t.floor);
        assert_eq!(
            t.verdict.as_deref(),
            Some("The paper's law lies inside the proven range: it is a fit, not a bound.")
        );
    }
}
