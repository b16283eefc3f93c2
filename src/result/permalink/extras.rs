//! The parts of a link after the result: the statistics without the rows a model never trained
//! ([`CompactTrained`]) and a dictionary's facts ([`CompactDictionary`]), made from a Report and
//! checked against it when read back.

use super::*;

impl CompactDictionary {
    pub(super) fn from_report(d: &Dictionary) -> Self {
        Self {
            d_sae: d.d_sae,
            d_in: d.d_in,
            layer: d.layer,
            hook: d.hook.as_deref().map(cut),
            architecture: d.architecture.as_deref().map(cut),
            source_layout: cut(&d.source_layout),
            decoder: cut(&d.decoder),
            columns_are_features: d.columns_are_features,
            transcoder: d.transcoder,
            d_out: d.d_out,
        }
    }

    pub(super) fn into_dictionary(self, rows: u64) -> Result<Dictionary, PermalinkError> {
        if self.d_sae != rows || self.d_in == 0 {
            return Err(PermalinkError::Implausible {
                field: "dictionary.d_sae",
                value: format!("{} features, {} wide, for {rows} rows", self.d_sae, self.d_in),
            });
        }
        Ok(Dictionary {
            d_sae: self.d_sae,
            d_in: self.d_in,
            layer: self.layer,
            hook: self.hook,
            architecture: self.architecture,
            source_layout: self.source_layout,
            decoder: self.decoder,
            columns_are_features: self.columns_are_features,
            transcoder: self.transcoder,
            d_out: self.d_out,
        })
    }
}

/// Most row ranges a link's trained part may name (real vocabularies set aside a few runs).
pub const MAX_TRAINED_RANGES: usize = 4096;

impl CompactTrained {
    pub(super) fn from_report(t: &TrainedReport) -> Self {
        let w = &t.without;
        Self {
            rules: t.rules.iter().map(|r| (cut(&r.rule), r.rows, r.enabled)).collect(),
            excluded: w.excluded.clone(),
            rows_used: w.rows_used,
            pairs: w.pairs,
            exact: w.exact,
            mu: w.mu,
            sigma: w.sigma,
        }
    }

    pub(super) fn into_report(self, rows: u64, dim: u64) -> Result<TrainedReport, PermalinkError> {
        let implausible = |field: &'static str, value: String| Err(PermalinkError::Implausible { field, value });
        finite("trained.mu", self.mu)?;
        finite("trained.sigma", self.sigma)?;
        if self.sigma < 0.0 {
            return implausible("trained.sigma", self.sigma.to_string());
        }
        if self.excluded.len() > MAX_TRAINED_RANGES {
            return implausible("trained.excluded", format!("{} ranges", self.excluded.len()));
        }
        let mut at = 0u64;
        for &[s, e] in &self.excluded {
            if s < at || e <= s || e > rows {
                return implausible("trained.excluded", format!("[{s}, {e}) of {rows} rows"));
            }
            at = e;
        }
        if self.rules.len() > UntrainedRule::ALL.len()
            || self.rules.iter().any(|r| UntrainedRule::from_name(&r.0).is_none())
        {
            return implausible("trained.rules", format!("{:?}", self.rules));
        }
        let n = self.rows_used as u128;
        if self.rows_used < 2 || self.rows_used > rows || (self.exact && n * (n - 1) / 2 != self.pairs as u128) {
            return implausible("trained.pairs", format!("{} for {} rows", self.pairs, self.rows_used));
        }
        let eps = estimate::epsilon(self.mu, self.sigma);
        let without = Without {
            rules_enabled: self.rules.iter().filter(|r| r.2).map(|r| r.0.clone()).collect(),
            rows_excluded: self.excluded.iter().map(|[s, e]| e - s).sum(),
            excluded: self.excluded,
            rows_used: self.rows_used,
            pairs: self.pairs,
            exact: self.exact,
            mu: self.mu,
            sigma: self.sigma,
            epsilon: eps,
            epsilon_3sigma: estimate::epsilon_3sigma(self.mu, self.sigma),
            log10_capacity: estimate::capacities(dim, eps),
            capacity_determinate: estimate::capacity_determinate(eps),
            capacity_proven: Some(capacity::proven(eps, dim, self.rows_used)),
            class: estimate::class(eps),
            top_pairs: Vec::new(),
            antipodal_pairs: Vec::new(),
            aside_counts: Vec::new(),
        };
        let rules = self.rules.into_iter().map(|(rule, rows, enabled)| RuleRows { rule, rows, enabled }).collect();
        Ok(TrainedReport { rules, without, variants: Vec::new() })
    }
}
