//! The row sample whose pairs give the histogram and a partial pass's uncertainty, the top pairs and
//! the most opposed (antipodal) pairs.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::*;
use crate::pass::set_aside::AsidePairs;

/// Most similar pairs of the histogram sample kept for the tail explorer (the paper's Fig. 3).
pub const TOP_PAIRS: usize = 20;

/// Most opposed pairs of the histogram sample kept for the tail explorer: the other tail, where
/// antipodal features (cos ≈ −1) show.
pub const ANTIPODAL_PAIRS: usize = TOP_PAIRS;

/// A cosine below this is a strongly opposed pair: the CLI names the sample's most opposed pair
/// when it is one, and the explorer marks such pairs.
pub const STRONGLY_OPPOSED: f64 = -0.5;

/// One pair of rows and their cosine: the tail explorer's lists (`Report::top_pairs`,
/// `Report::antipodal_pairs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TopPair {
    /// Row ids in the tensor (token ids), a < b.
    pub a: u64,
    pub b: u64,
    pub cosine: f64,
    /// The tokens' strings when the model carries a vocabulary.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub a_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub b_token: Option<String>,
}

/// A pair in the top-K heap, ordered by cosine, ties broken towards the smaller indices so the list
/// does not depend on the order pairs arrive in.
#[derive(Clone, Copy, Debug)]
struct Ranked {
    cos: f64,
    i: u32,
    j: u32,
}

impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> Ordering {
        self.cos.total_cmp(&o.cos).then_with(|| (o.i, o.j).cmp(&(self.i, self.j)))
    }
}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl PartialEq for Ranked {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ranked {}

/// The `k` largest of a stream of pairs: a min-heap of at most `k` (O(log k) per pair, and O(1) for
/// the many pairs below the current k-th).
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Reverse<Ranked>>,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        Self { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    #[inline]
    pub fn offer(&mut self, i: usize, j: usize, cos: f64) {
        if self.k == 0 {
            return;
        }
        let (i, j) = (i.min(j) as u32, i.max(j) as u32);
        let item = Ranked { cos, i, j };
        if self.heap.len() < self.k {
            self.heap.push(Reverse(item));
        } else if self.heap.peek().is_some_and(|Reverse(least)| item > *least) {
            self.heap.pop();
            self.heap.push(Reverse(item));
        }
    }

    /// (i, j, cos), most similar first.
    pub fn sorted(&self) -> Vec<(usize, usize, f64)> {
        let mut v: Vec<Ranked> = self.heap.iter().map(|Reverse(r)| *r).collect();
        v.sort_by(|a, b| b.cmp(a));
        v.into_iter().map(|r| (r.i as usize, r.j as usize, r.cos)).collect()
    }
}

/// The `k` smallest of a stream of pairs: a [`TopK`] of the negated cosines.
#[derive(Clone, Debug, PartialEq)]
pub struct BottomK(TopK);

impl BottomK {
    pub fn new(k: usize) -> Self {
        Self(TopK::new(k))
    }

    #[inline]
    pub fn offer(&mut self, i: usize, j: usize, cos: f64) {
        self.0.offer(i, j, -cos);
    }

    /// (i, j, cos), most opposed first.
    pub fn sorted(&self) -> Vec<(usize, usize, f64)> {
        self.0.sorted().into_iter().map(|(i, j, c)| (i, j, -c)).collect()
    }
}

impl PartialEq for TopK {
    fn eq(&self, o: &Self) -> bool {
        self.k == o.k && self.sorted() == o.sorted()
    }
}

/// Individual cosines among a sample of rows: histograms, and the moments needed for the
/// uncertainty of a partial pass (the U-statistic variance terms ζ₁, ζ₂). The sample is made of
/// whole blocks of adjacent rows; pairs within one block are left out when the sample does not
/// cover the matrix, because vocabulary neighbours are related more often than random pairs.
#[derive(Clone, Debug, PartialEq)]
pub struct PairSample {
    pub full: Histogram,
    pub zoom: Histogram,
    /// Σ cos^p for p = 1..4 over the pairs recorded.
    pub power_sums: [f64; 4],
    pub pairs: u64,
    /// Per sample row: its block, and Σ_j cos(i, j), Σ_j cos²(i, j) and the count over its partners.
    pub block: Vec<u32>,
    pub row_sum: Vec<f64>,
    pub row_sum_sq: Vec<f64>,
    pub row_pairs: Vec<u64>,
    /// Row id in the tensor of each sample row (sample indices when not given).
    pub row_ids: Vec<u64>,
    /// The [`TOP_PAIRS`] most similar pairs recorded, as sample indices.
    pub top: TopK,
    /// The [`ANTIPODAL_PAIRS`] most opposed pairs recorded, as sample indices.
    pub opposed: BottomK,
    /// The same pairs apart by the rules that set their rows aside (None: no sample row is).
    pub aside: Option<AsidePairs>,
}

impl PairSample {
    /// A sample whose row `i` belongs to block `block[i]`.
    pub fn new(block: Vec<u32>) -> Self {
        let rows = block.len();
        Self {
            full: Histogram::new(-1.0, 1.0, HISTOGRAM_BINS),
            zoom: Histogram::new(-ZOOM_HALF_WIDTH, ZOOM_HALF_WIDTH, HISTOGRAM_BINS),
            power_sums: [0.0; 4],
            pairs: 0,
            block,
            row_sum: vec![0.0; rows],
            row_sum_sq: vec![0.0; rows],
            row_pairs: vec![0; rows],
            row_ids: (0..rows as u64).collect(),
            top: TopK::new(TOP_PAIRS),
            opposed: BottomK::new(ANTIPODAL_PAIRS),
            aside: None,
        }
    }

    /// Keeps the pairs apart by `mask_of(row id)`, the rules that set each sample row aside
    /// ([`crate::read::untrained::SetAside::mask_of`]). Call after [`PairSample::with_row_ids`].
    pub fn with_set_aside(mut self, mask_of: impl Fn(u64) -> u8) -> Self {
        self.aside = AsidePairs::new(self.row_ids.iter().map(|&id| mask_of(id)).collect());
        self
    }

    /// Names the sample rows by their row ids in the tensor (as many as there are sample rows).
    pub fn with_row_ids(mut self, ids: Vec<u64>) -> Self {
        if ids.len() == self.rows() {
            self.row_ids = ids;
        }
        self
    }

    /// The most similar pairs recorded, most similar first, by row id.
    pub fn top_pairs(&self) -> Vec<TopPair> {
        pairs_by_row_id(self.top.sorted(), &self.row_ids)
    }

    /// The most opposed pairs recorded, most opposed (lowest cosine) first, by row id.
    pub fn antipodal_pairs(&self) -> Vec<TopPair> {
        pairs_by_row_id(self.opposed.sorted(), &self.row_ids)
    }

    /// Records cos(i, j) for sample rows i ≠ j.
    #[inline]
    pub fn add_pair(&mut self, i: usize, j: usize, cos: f32) {
        // Rounding can carry |cos| a hair past 1 for (near) duplicate rows.
        let c = (cos as f64).clamp(-1.0, 1.0);
        self.full.add(c);
        self.zoom.add(c);
        let c2 = c * c;
        self.power_sums[0] += c;
        self.power_sums[1] += c2;
        self.power_sums[2] += c2 * c;
        self.power_sums[3] += c2 * c2;
        self.pairs += 1;
        self.top.offer(i, j, c);
        self.opposed.offer(i, j, c);
        if let Some(aside) = &mut self.aside {
            aside.add(i, j, c);
        }
        for k in [i, j] {
            if let (Some(s), Some(s2), Some(n)) =
                (self.row_sum.get_mut(k), self.row_sum_sq.get_mut(k), self.row_pairs.get_mut(k))
            {
                *s += c;
                *s2 += c2;
                *n += 1;
            }
        }
    }

    /// Number of sample rows.
    pub fn rows(&self) -> usize {
        self.row_sum.len()
    }

    /// μ, σ of the sampled pairs.
    pub fn moments(&self) -> Option<Moments> {
        if self.pairs == 0 {
            return None;
        }
        let p = self.pairs as f64;
        let (mu, mean_sq) = (self.power_sums[0] / p, self.power_sums[1] / p);
        let sigma = (mean_sq - mu * mu).max(0.0).sqrt();
        Some(Moments { rows: self.rows() as u64, pairs: self.pairs, mu, mean_sq, sigma })
    }
}

/// Pairs of sample indices (i, j, cos) as [`TopPair`]s of row ids (`row_ids` of the sample rows), a < b.
pub fn pairs_by_row_id(pairs: Vec<(usize, usize, f64)>, row_ids: &[u64]) -> Vec<TopPair> {
    let id = |k: usize| row_ids.get(k).copied().unwrap_or(k as u64);
    pairs
        .into_iter()
        .map(|(i, j, cosine)| TopPair {
            a: id(i).min(id(j)),
            b: id(i).max(id(j)),
            cosine,
            a_token: None,
            b_token: None,
        })
        .collect()
}
