//! ε without the rows a model never trained (`Report::trained`): the numbers the card shows beside
//! the paper's ε, which counts every row and stays the headline (`docs/method.md` §9).

use serde::{Deserialize, Serialize};

use crate::pass::capacity::{self, CapacityProven};
use crate::pass::estimate::{self, Capacities, Class};
use crate::pass::stats::{Moments, SampledHistogram, TopPair};
use crate::read::untrained::{RowRanges, SetAside, UntrainedRule};

/// One rule and the rows it names (a row two rules name counts under both).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleRows {
    /// `past_vocabulary`, `unused_token`, `suspected` or `dead_latent` ([`UntrainedRule::name`]).
    pub rule: String,
    pub rows: u64,
    /// Whether these rows are set aside in the numbers beside it.
    #[serde(default)]
    pub enabled: bool,
}

/// The statistics over the rows no enabled rule names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Without {
    /// The rules whose rows are set aside here.
    pub rules_enabled: Vec<String>,
    /// The rows set aside, as `[start, end)` ranges (few: vocabularies pad and reserve in runs).
    pub excluded: Vec<[u64; 2]>,
    pub rows_excluded: u64,
    /// Rows and pairs the statistics are over.
    pub rows_used: u64,
    pub pairs: u64,
    /// True when they are over all pairs of those rows (the pass was exact); else the histogram
    /// sample's pairs among them.
    pub exact: bool,
    pub mu: f64,
    pub sigma: f64,
    pub epsilon: f64,
    pub epsilon_3sigma: f64,
    pub log10_capacity: Capacities,
    pub capacity_determinate: bool,
    /// `Report::capacity_proven` for this ε and these rows.
    #[serde(default)]
    pub capacity_proven: Option<CapacityProven>,
    pub class: Class,
    /// The sample's most similar pairs with no set-aside row, most similar first.
    pub top_pairs: Vec<TopPair>,
    /// The sample's most opposed pairs with no set-aside row, most opposed first.
    #[serde(default)]
    pub antipodal_pairs: Vec<TopPair>,
    /// Pairs of the sample with a set-aside row, over `Report::histogram`'s bins (the overlay).
    #[serde(default)]
    pub aside_counts: Vec<u64>,
}

/// `Report::trained`: the default choice of rules, each rule found with its rows, and the same
/// numbers for every other choice the user may switch to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainedReport {
    pub rules: Vec<RuleRows>,
    #[serde(flatten)]
    pub without: Without,
    /// The statistics under every other non-empty choice of the rules found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Without>,
}

/// What [`Without::new`] is made from.
pub struct Measured {
    pub moments: Moments,
    pub exact: bool,
    pub top_pairs: Vec<TopPair>,
    pub antipodal_pairs: Vec<TopPair>,
    pub aside_counts: Vec<u64>,
}

impl Without {
    pub fn new(set: &SetAside, enabled: u8, aside: &RowRanges, dim: u64, m: Measured) -> Without {
        let eps = estimate::epsilon(m.moments.mu, m.moments.sigma);
        Without {
            rules_enabled: rule_names(set, enabled),
            excluded: aside.ranges().iter().map(|&(s, e)| [s, e]).collect(),
            rows_excluded: aside.rows(),
            rows_used: m.moments.rows,
            pairs: m.moments.pairs,
            exact: m.exact,
            mu: m.moments.mu,
            sigma: m.moments.sigma,
            epsilon: eps,
            epsilon_3sigma: estimate::epsilon_3sigma(m.moments.mu, m.moments.sigma),
            log10_capacity: estimate::capacities(dim, eps),
            capacity_determinate: estimate::capacity_determinate(eps),
            capacity_proven: Some(capacity::proven(eps, dim, m.moments.rows)),
            class: estimate::class(eps),
            top_pairs: m.top_pairs,
            antipodal_pairs: m.antipodal_pairs,
            aside_counts: m.aside_counts,
        }
    }
}

/// The names of the rules of `set` in `enabled`, in rule order.
pub fn rule_names(set: &SetAside, enabled: u8) -> Vec<String> {
    set.rules.iter().filter(|(r, _)| enabled & r.bit() != 0).map(|(r, _)| r.name().to_string()).collect()
}

/// The rules set aside unless the user says otherwise: those that name rows for certain (the
/// suspected ones only when asked for).
pub fn default_rules(set: &SetAside) -> u8 {
    set.present() & !UntrainedRule::Suspected.bit()
}

/// Every non-empty choice of the rules present in `set`, the default first.
pub fn choices(set: &SetAside, default: u8) -> Vec<u8> {
    let present = set.present();
    let mut out = vec![default];
    for m in 1..=present {
        if m & !present == 0 && m != default {
            out.push(m);
        }
    }
    out.retain(|&m| m != 0);
    out
}

/// The "without the N rows … ε = …" line of the CLI's text and the card.
pub fn summary(t: &TrainedReport) -> String {
    let w = &t.without;
    let why: Vec<String> = t
        .rules
        .iter()
        .filter(|r| r.enabled)
        .filter_map(|r| UntrainedRule::from_name(&r.rule).map(|u| format!("{} {}", r.rows, u.describe())))
        .collect();
    // A dictionary's dead latents are features, not a vocabulary's rows.
    let dead = UntrainedRule::DeadLatent.name();
    let what = if t.rules.iter().filter(|r| r.enabled).all(|r| r.rule == dead) {
        "dead latents of the dictionary"
    } else {
        "rows the model never trained"
    };
    format!(
        "without the {} {what} ({}): ε = {:.4} ({}), μ = {:.4}, σ = {:.4}{}",
        w.rows_excluded,
        why.join("; "),
        w.epsilon,
        w.class.label(),
        w.mu,
        w.sigma,
        if w.exact { "" } else { " (estimated from the histogram's sample of pairs)" },
    )
}

/// What the card shows for a choice of rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Choice<'a> {
    /// No rule enabled: every row counts, the paper's numbers.
    AllRows,
    /// The statistics without the rows of the enabled rules.
    Without(&'a Without),
    /// A choice whose numbers this report does not carry (a shared link carries the default only).
    NotCarried,
}

impl TrainedReport {
    /// The rules enabled by default, in rule order.
    pub fn default_enabled(&self) -> Vec<String> {
        self.rules.iter().filter(|r| r.enabled).map(|r| r.rule.clone()).collect()
    }

    /// The statistics for `enabled` (rule names, in any order).
    pub fn choice(&self, enabled: &[String]) -> Choice<'_> {
        let same =
            |w: &Without| w.rules_enabled.len() == enabled.len() && enabled.iter().all(|e| w.rules_enabled.contains(e));
        if enabled.is_empty() {
            Choice::AllRows
        } else if same(&self.without) {
            Choice::Without(&self.without)
        } else {
            self.variants.iter().find(|w| same(w)).map_or(Choice::NotCarried, Choice::Without)
        }
    }
}

impl Without {
    /// Whether `row` is one of the rows set aside here.
    pub fn is_aside(&self, row: u64) -> bool {
        // `excluded` is sorted and disjoint: the last range starting at or before `row` decides.
        let i = self.excluded.partition_point(|r| r[0] <= row);
        i > 0 && self.excluded.get(i - 1).is_some_and(|r| row < r[1])
    }

    /// `h` (the Report's full-range histogram) split into the pairs among trained rows and the
    /// pairs with a set-aside row, both still as counts of `h`'s pairs; `None` when the overlay
    /// counts are not over `h`'s bins (a shared link does not carry them).
    pub fn overlay(&self, h: &SampledHistogram) -> Option<(SampledHistogram, SampledHistogram)> {
        if self.aside_counts.len() != h.counts.len() || self.aside_counts.iter().zip(&h.counts).any(|(a, c)| a > c) {
            return None;
        }
        let aside_pairs: u64 = self.aside_counts.iter().sum();
        let mut trained = h.clone();
        trained.counts = h.counts.iter().zip(&self.aside_counts).map(|(c, a)| c - a).collect();
        let mut aside = h.clone();
        aside.counts.clone_from(&self.aside_counts);
        aside.pairs_in_histogram = aside_pairs;
        trained.pairs_in_histogram = h.pairs_in_histogram.saturating_sub(aside_pairs);
        Some((trained, aside))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn without(rules: &[&str], excluded: Vec<[u64; 2]>, aside_counts: Vec<u64>) -> Without {
        Without {
            rules_enabled: rules.iter().map(|s| s.to_string()).collect(),
            excluded,
            rows_excluded: 0,
            rows_used: 0,
            pairs: 0,
            exact: true,
            mu: 0.0,
            sigma: 0.0,
            epsilon: 0.0,
            epsilon_3sigma: 0.0,
            log10_capacity: estimate::capacities(8, 0.5),
            capacity_determinate: false,
            capacity_proven: None,
            class: Class::One,
            top_pairs: vec![],
            antipodal_pairs: vec![],
            aside_counts,
        }
    }

    #[test]
    fn a_choice_finds_its_numbers_in_any_order_or_says_they_are_not_carried() {
        let t = TrainedReport {
            rules: vec![
                RuleRows { rule: "past_vocabulary".into(), rows: 3, enabled: true },
                RuleRows { rule: "unused_token".into(), rows: 5, enabled: true },
            ],
            without: without(&["past_vocabulary", "unused_token"], vec![[1, 3], [10, 16]], vec![]),
            variants: vec![without(&["unused_token"], vec![[1, 3], [10, 13]], vec![])],
        };
        assert_eq!(t.default_enabled(), ["past_vocabulary", "unused_token"]);
        let both = ["unused_token".to_string(), "past_vocabulary".to_string()];
        assert_eq!(t.choice(&both), Choice::Without(&t.without));
        assert!(
            matches!(t.choice(&["unused_token".into()]), Choice::Without(w) if w.excluded.len() == 2 && w.excluded[1] == [10, 13])
        );
        assert_eq!(t.choice(&["past_vocabulary".into()]), Choice::NotCarried);
        assert_eq!(t.choice(&[]), Choice::AllRows);
    }

    #[test]
    fn membership_follows_the_half_open_ranges() {
        let w = without(&[], vec![[1, 3], [10, 16]], vec![]);
        let got: Vec<u64> = (0..20).filter(|&r| w.is_aside(r)).collect();
        assert_eq!(got, [1, 2, 10, 11, 12, 13, 14, 15]);
    }

    #[test]
    fn the_overlay_splits_each_bin_and_refuses_counts_of_other_bins() {
        let h = SampledHistogram {
            lo: -1.0,
            hi: 1.0,
            edges: vec![-1.0, 0.0, 1.0],
            counts: vec![7, 3],
            below: 0,
            above: 0,
            pairs_in_histogram: 10,
            rows_in_histogram: 5,
        };
        let (trained, aside) = without(&[], vec![], vec![2, 3]).overlay(&h).unwrap();
        assert_eq!((trained.counts, trained.pairs_in_histogram), (vec![5, 0], 5));
        assert_eq!((aside.counts, aside.pairs_in_histogram), (vec![2, 3], 5));
        assert!(without(&[], vec![], vec![2]).overlay(&h).is_none());
        assert!(without(&[], vec![], vec![8, 0]).overlay(&h).is_none());
    }
}
