//! ε without the rows a model never trained (`Report::trained`): the numbers the card shows beside
//! the paper's ε, which counts every row and stays the headline (`docs/method.md` §7).

use serde::{Deserialize, Serialize};

use crate::pass::estimate::{self, Capacities, Class};
use crate::pass::stats::{Moments, TopPair};
use crate::read::untrained::{RowRanges, SetAside, UntrainedRule};

/// One rule and the rows it names (a row two rules name counts under both).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RuleRows {
    /// `past_vocabulary`, `unused_token` or `suspected` ([`UntrainedRule::name`]).
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
    pub class: Class,
    /// The sample's most similar pairs with no set-aside row, most similar first.
    pub top_pairs: Vec<TopPair>,
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
            class: estimate::class(eps),
            top_pairs: m.top_pairs,
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
    format!(
        "without the {} rows the model never trained ({}): ε = {:.4} ({}), μ = {:.4}, σ = {:.4}{}",
        w.rows_excluded,
        why.join("; "),
        w.epsilon,
        class_label(w.class),
        w.mu,
        w.sigma,
        if w.exact { "" } else { " (estimated from the histogram's sample of pairs)" },
    )
}

/// "Class 1", "Class 2", or the gap between them, as the card names them.
pub fn class_label(c: Class) -> &'static str {
    match c {
        Class::One => "Class 1",
        Class::Two => "Class 2",
        Class::Between => "between the classes",
    }
}
