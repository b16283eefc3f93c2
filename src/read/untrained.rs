//! Rows of a token matrix that training never reached, found from what the files say of the
//! vocabulary (`docs/method.md` §9): rows past the tokenizer's last token (a vocabulary padded to a
//! round size), and tokens the tokenizer itself names as unused or reserved. Each rule's rows are
//! kept apart, so a row two rules name is counted once in the union and once under each rule.
//!
//! The paper's ε counts every row; these sets only feed the second number beside it.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// Why a row is set aside. The order is the bit order of [`SetAside::mask_of`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UntrainedRule {
    /// A row past the last token the tokenizer (or the model's vocabulary size) names.
    PastVocabulary,
    /// A token the tokenizer names as unused or reserved (`[unused7]`, `<unused7>`,
    /// `<|reserved_special_token_7|>`, …).
    UnusedToken,
    /// A row whose weights look like those of the known-unused rows (weight-only indicator).
    Suspected,
    /// A dictionary's latent whose firing density is below the threshold (never fired, by
    /// default): its decoder row was never trained by the reconstruction (docs/method.md §10).
    DeadLatent,
}

impl UntrainedRule {
    pub const ALL: [UntrainedRule; 4] = [
        UntrainedRule::PastVocabulary,
        UntrainedRule::UnusedToken,
        UntrainedRule::Suspected,
        UntrainedRule::DeadLatent,
    ];

    /// The bit of this rule in a row's mask.
    pub fn bit(self) -> u8 {
        match self {
            UntrainedRule::PastVocabulary => 1,
            UntrainedRule::UnusedToken => 2,
            UntrainedRule::Suspected => 4,
            UntrainedRule::DeadLatent => 8,
        }
    }

    /// The rule's name in the Report (`trained.rules[].rule`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            UntrainedRule::PastVocabulary => "past_vocabulary",
            UntrainedRule::UnusedToken => "unused_token",
            UntrainedRule::Suspected => "suspected",
            UntrainedRule::DeadLatent => "dead_latent",
        }
    }

    pub fn from_name(name: &str) -> Option<UntrainedRule> {
        Self::ALL.into_iter().find(|r| r.name() == name.trim())
    }

    /// What the rule means, for the card and the CLI's text.
    pub fn describe(self) -> &'static str {
        match self {
            UntrainedRule::PastVocabulary => "rows past the tokenizer's last token",
            UntrainedRule::UnusedToken => "tokens the tokenizer names unused or reserved",
            UntrainedRule::Suspected => {
                "suspected from the weights alone: rows pointing where the unused rows point (or, in an untied input embedding, as short as they are)"
            }
            UntrainedRule::DeadLatent => "latents below the firing-density threshold (never fired, by default)",
        }
    }
}

/// Sorted, disjoint, non-empty half-open ranges of row ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowRanges(Vec<(u64, u64)>);

impl RowRanges {
    /// The ranges covering `ids` (any order, repeats allowed).
    pub fn from_ids(mut ids: Vec<u64>) -> RowRanges {
        ids.sort_unstable();
        ids.dedup();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for id in ids {
            match out.last_mut() {
                Some(last) if last.1 == id => last.1 = id + 1,
                _ => out.push((id, id + 1)),
            }
        }
        RowRanges(out)
    }

    /// Ranges as given (merged and sorted; empty ones dropped).
    pub fn from_ranges(ranges: impl IntoIterator<Item = Range<u64>>) -> RowRanges {
        let mut v: Vec<(u64, u64)> = ranges.into_iter().filter(|r| r.start < r.end).map(|r| (r.start, r.end)).collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        RowRanges(out)
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Rows covered.
    pub fn rows(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }

    pub fn contains(&self, row: u64) -> bool {
        let i = self.0.partition_point(|&(_, e)| e <= row);
        self.0.get(i).is_some_and(|&(s, _)| s <= row)
    }

    /// The union of two sets.
    pub fn union(&self, other: &RowRanges) -> RowRanges {
        Self::from_ranges(self.0.iter().chain(&other.0).map(|&(s, e)| s..e))
    }

    /// Clipped to rows `0..rows`.
    pub fn clipped(&self, rows: u64) -> RowRanges {
        Self::from_ranges(self.0.iter().map(|&(s, e)| s.min(rows)..e.min(rows)))
    }
}

/// The rows each rule names, over a matrix of `rows` rows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetAside {
    pub rows: u64,
    /// Each rule that named at least one row, with its rows.
    pub rules: Vec<(UntrainedRule, RowRanges)>,
}

impl SetAside {
    /// The rules' rows for a token matrix of `rows` rows, from its vocabulary (`tokens` by id;
    /// empty when unknown) and the vocabulary size a config states.
    pub fn find(rows: u64, tokens: &[String], vocab_size: Option<u64>) -> SetAside {
        let mut rules = Vec::new();
        // The vocabulary's end: one past the last token that has a name, or a stated size.
        let named_end = tokens.iter().rposition(|t| !t.is_empty()).map(|i| i as u64 + 1);
        let end = [named_end, vocab_size].into_iter().flatten().filter(|&n| n > 0).min();
        if let Some(end) = end.filter(|&e| e < rows) {
            rules.push((UntrainedRule::PastVocabulary, RowRanges::from_ranges(std::iter::once(end..rows))));
        }
        let unused: Vec<u64> = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| is_unused_token(t))
            .map(|(i, _)| i as u64)
            .filter(|&i| i < rows)
            .collect();
        if !unused.is_empty() {
            rules.push((UntrainedRule::UnusedToken, RowRanges::from_ids(unused)));
        }
        SetAside { rows, rules }
    }

    /// Adds (or replaces) a rule's rows; an empty set removes it.
    pub fn with_rule(mut self, rule: UntrainedRule, rows: RowRanges) -> SetAside {
        self.rules.retain(|(r, _)| *r != rule);
        let rows = rows.clipped(self.rows);
        if !rows.is_empty() {
            self.rules.push((rule, rows));
            self.rules.sort_by_key(|(r, _)| r.bit());
        }
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rows of the rules in `enabled` (a mask of [`UntrainedRule::bit`]s), each counted once.
    pub fn union(&self, enabled: u8) -> RowRanges {
        self.rules
            .iter()
            .filter(|(r, _)| enabled & r.bit() != 0)
            .fold(RowRanges::default(), |acc, (_, rows)| acc.union(rows))
    }

    /// The bits of the rules that name `row` (0: none).
    pub fn mask_of(&self, row: u64) -> u8 {
        self.rules.iter().filter(|(_, rows)| rows.contains(row)).fold(0, |m, (r, _)| m | r.bit())
    }

    /// The mask of every rule present.
    pub fn present(&self) -> u8 {
        self.rules.iter().fold(0, |m, (r, _)| m | r.bit())
    }

    pub fn rule_rows(&self, rule: UntrainedRule) -> Option<&RowRanges> {
        self.rules.iter().find(|(r, _)| *r == rule).map(|(_, rows)| rows)
    }
}

/// Whether a tokenizer names this token as a placeholder no text produces. The families checked:
/// BERT's `[unused0]`…, Gemma's `<unused0>`…, Llama 3's `<|reserved_special_token_0|>`…, tiktoken
/// exports' `<|reserved_0|>`…, Qwen's `<|extra_0|>`…, Phi-3's `<|placeholder1|>`…, Mistral's
/// Tekken `<SPECIAL_20>`…, fairseq's `madeupword0000`…, and llama.cpp's converter's `[PAD7]` for ids
/// the tokenizer leaves out. Not T5's `<extra_id_0>`…: those sentinels are what span corruption
/// trains on.
pub fn is_unused_token(token: &str) -> bool {
    const PATTERNS: [(&str, &str); 10] = [
        ("[unused", "]"),
        ("<unused", ">"),
        ("<|reserved_special_token_", "|>"),
        ("<|reserved_", "|>"),
        ("<|extra_", "|>"),
        ("<|placeholder", "|>"),
        ("<SPECIAL_", ">"),
        ("madeupword", ""),
        ("[PAD", "]"),
        ("<reserved_", ">"),
    ];
    PATTERNS.iter().any(|(head, tail)| {
        token
            .strip_prefix(head)
            .and_then(|rest| rest.strip_suffix(tail))
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_family_s_placeholders_are_unused_and_trained_sentinels_are_not() {
        for t in [
            "[unused0]",
            "[unused993]",
            "<unused12>",
            "<|reserved_special_token_250|>",
            "<|reserved_3|>",
            "<|extra_204|>",
            "<|placeholder6|>",
            "<SPECIAL_999>",
            "madeupword0002",
            "[PAD50257]",
        ] {
            assert!(is_unused_token(t), "{t}");
        }
        for t in [
            "<extra_id_0>",
            "[UNK]",
            "[PAD]",
            "<unused>",
            "[unused]",
            "unused3",
            "<|endoftext|>",
            "<pad>",
            "<|reserved_x|>",
        ] {
            assert!(!is_unused_token(t), "{t}");
        }
    }

    #[test]
    fn ranges_merge_and_answer_membership() {
        let r = RowRanges::from_ids(vec![5, 3, 4, 9, 4, 0]);
        assert_eq!(r.ranges(), &[(0, 1), (3, 6), (9, 10)]);
        assert_eq!(r.rows(), 5);
        assert!(r.contains(0) && r.contains(5) && r.contains(9));
        assert!(!r.contains(1) && !r.contains(6) && !r.contains(10));
        let u = r.union(&RowRanges::from_ranges(std::iter::once(5..12)));
        assert_eq!(u.ranges(), &[(0, 1), (3, 12)]);
        assert_eq!(u.clipped(8).ranges(), &[(0, 1), (3, 8)]);
    }

    #[test]
    fn rows_past_the_vocabulary_and_named_ones_with_overlap_counted_once() {
        // 6 named tokens (ids 0..6), the last an unused one; 9 rows.
        let tokens = toks(&["a", "[unused0]", "b", "c", "d", "[unused1]"]);
        let s = SetAside::find(9, &tokens, None);
        assert_eq!(s.rule_rows(UntrainedRule::PastVocabulary).map(|r| r.ranges().to_vec()), Some(vec![(6, 9)]));
        assert_eq!(s.rule_rows(UntrainedRule::UnusedToken).map(|r| r.ranges().to_vec()), Some(vec![(1, 2), (5, 6)]));
        assert_eq!(s.union(s.present()).rows(), 5);
        assert_eq!(s.mask_of(5), UntrainedRule::UnusedToken.bit());
        assert_eq!(s.mask_of(7), UntrainedRule::PastVocabulary.bit());
        assert_eq!(s.mask_of(0), 0);
        // A stated size below the tokens' end wins; one above the rows changes nothing.
        assert_eq!(SetAside::find(9, &tokens, Some(4)).union(1).ranges(), &[(4, 9)]);
        assert_eq!(SetAside::find(6, &tokens, Some(20)).union(1).rows(), 0);
        // No vocabulary: nothing is set aside.
        assert!(SetAside::find(9, &[], None).is_empty());
        // A row two rules name is one row of the union.
        let both = s.clone().with_rule(UntrainedRule::Suspected, RowRanges::from_ids(vec![5, 7]));
        assert_eq!(both.union(both.present()).rows(), 5);
        assert_eq!(both.mask_of(5), UntrainedRule::UnusedToken.bit() | UntrainedRule::Suspected.bit());
    }
}
