//! The order rows are visited in: seeded, so the same seed always gives the same answer.
//!
//! Rows are visited in blocks of adjacent rows (one read per block: a browser `Blob` read costs
//! ~0.7 ms whatever its size, so single-row reads cost 22 s on a 32000-row matrix) in a shuffled
//! block order. Every prefix is then a random sample of blocks, and the running estimate treats it
//! as such (`analysis`, stratified by within/between-block pairs): vocabularies put related tokens
//! next to each other, and plain all-pairs statistics of a block prefix over-count them (measured:
//! ε off by 10 % after 1000 rows of the trained-like demo in 8-row blocks). The histogram's sample is
//! the first few blocks of the same order.
//!
//! A narrow matrix is read faster than it is shuffled: at d ≤ [`SWEEP_MAX_DIM`] a block's arithmetic
//! costs about what its read does, and the browser reads scattered 32 KiB blocks at ~33 MB/s but
//! one 16 MiB range at ~430 MB/s (measured in Chromium on the 2-core development machine). There
//! the plan visits the first [`RANDOM_PHASE_BLOCKS`] positions in the shuffled order (the *random
//! phase*, which the running estimate and *Stop here* use) and then **sweeps** the rest in file
//! order ([`Plan::sweep_tail`]), each share's part one contiguous run of blocks. So does a wider
//! whole pass whose histogram sample shows that most of its blocks hold no row to add (zero rows:
//! `pass::analysis::Analysis::read_bound`), where reading is all there is, and, after a shorter
//! random phase ([`DEFLATED_RANDOM_PHASE_BLOCKS`]), a deflated member whose blocks are shorter than
//! its checkpoints' spacing, whose scattered blocks each inflate more than themselves.

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The default seed: results are reproducible unless the user asks for another.
pub const DEFAULT_SEED: u64 = 0;

/// Adjacent rows read together as one block of the pass (one kernel call).
pub const DEFAULT_BLOCK_ROWS: u64 = 64;

/// Rows sampled for the histogram: their ~2.1 million pairs give its cosines (docs/method.md §1).
pub const DEFAULT_HISTOGRAM_ROWS: u64 = 2048;

/// Positions of the shuffled order visited before a sweep: 65 536 rows in 64-row blocks, enough
/// for a running ε whose interval is well under its third digit, read at ~0.6 ms a block.
pub const RANDOM_PHASE_BLOCKS: usize = 1024;

/// Positions of the shuffled order visited before a sweep of a deflated member whose blocks are
/// shorter than its checkpoints' spacing: there a block in random order inflates on average half
/// the spacing besides its own bytes (2.5× the member at d = 256 f32), in file order nothing more,
/// and inflating is most of such a pass. 4096 rows, twice the histogram's sample.
pub const DEFLATED_RANDOM_PHASE_BLOCKS: usize = 64;

/// Widest matrix whose pass sweeps its tail: at d = 1024 a 64-row block is ~3 ms of arithmetic in a
/// worker against ~1 ms for a scattered read; at d = 2048 it is 13 ms, and reading no longer counts.
pub const SWEEP_MAX_DIM: usize = 1024;

/// A seeded random generator (xoshiro256++).
pub fn rng(seed: u64, stream: u64) -> Xoshiro256PlusPlus {
    // Separate streams for the pass order and the sample, so changing one never shifts the other.
    Xoshiro256PlusPlus::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Uniform integer in `0..n` (n > 0), by rejection so it carries no modulo bias.
pub fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// Which rows are visited, in what order.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub rows: u64,
    pub block_rows: u64,
    /// Block indices in visiting order; block b covers rows `b*block_rows .. min((b+1)*block_rows, rows)`.
    pub blocks: Vec<u32>,
    /// How many of the first blocks make the histogram's sample.
    pub sample_blocks: usize,
    /// The first position of the sweep ([`Plan::sweep_tail`]); `blocks.len()` when there is none.
    pub sweep_from: usize,
}

impl Plan {
    pub fn new(rows: u64, seed: u64, block_rows: u64, histogram_rows: u64) -> Plan {
        let block_rows = block_rows.max(1);
        let n_blocks = rows.div_ceil(block_rows);
        // A u32 block index covers 2³²·8 rows, far beyond any vocabulary.
        let mut blocks: Vec<u32> = (0..n_blocks.min(u32::MAX as u64) as u32).collect();
        let mut r = rng(seed, 1);
        for i in (1..blocks.len()).rev() {
            let j = below(&mut r, i as u64 + 1) as usize;
            blocks.swap(i, j);
        }
        let sweep_from = blocks.len();
        let mut plan = Plan { rows, block_rows, blocks, sample_blocks: 0, sweep_from };
        plan.sample_blocks = plan.blocks_for_rows(histogram_rows);
        plan
    }

    /// How many of the first blocks hold at least `rows` rows (all blocks if the matrix is smaller).
    pub fn blocks_for_rows(&self, rows: u64) -> usize {
        let mut total = 0;
        for (i, &b) in self.blocks.iter().enumerate() {
            if total >= rows {
                return i;
            }
            let (s, e) = self.block_range(b);
            total += e - s;
        }
        self.blocks.len()
    }

    /// Visits the positions from `from` on (never the histogram's sample) in file order instead of
    /// the shuffled one, for a pass split by rows over `shares` (positions ≡ k mod `shares` are
    /// share k's, `pass::shares`): share k's positions of the tail get one contiguous run of the
    /// tail's blocks, ascending, so that each worker reads its part as a few long ranges. The
    /// blocks of the tail are the same set in any order, so the exact result is unchanged; only
    /// the positions before `from` are a random sample (the running estimate's).
    pub fn sweep_tail(&mut self, from: usize, shares: u32) {
        let from = from.max(self.sample_blocks);
        let Some(tail) = self.blocks.get_mut(from..) else { return };
        if tail.is_empty() {
            return;
        }
        tail.sort_unstable();
        let sorted = tail.to_vec();
        let shares = shares.max(1) as usize;
        let mut next = 0usize;
        for k in 0..shares {
            // Share k's positions of the tail, in order, take the next run of sorted blocks.
            let first = (k + shares - from % shares) % shares;
            for (at, &block) in (first..tail.len()).step_by(shares).zip(&sorted[next..]) {
                tail[at] = block;
            }
            next += tail.len().saturating_sub(first).div_ceil(shares);
        }
        self.sweep_from = from;
    }

    /// Whether position `position` is in the sweep (the running estimate leaves it out).
    pub fn in_sweep(&self, position: usize) -> bool {
        position >= self.sweep_from
    }

    /// The blocks of the histogram's sample.
    pub fn sample(&self) -> &[u32] {
        &self.blocks[..self.sample_blocks]
    }

    /// Rows in the histogram's sample.
    pub fn sample_rows(&self) -> u64 {
        self.sample().iter().map(|&b| self.block_range(b)).map(|(s, e)| e - s).sum()
    }

    /// Row range of block `b`.
    pub fn block_range(&self, b: u32) -> (u64, u64) {
        let start = b as u64 * self.block_rows;
        (start, (start + self.block_rows).min(self.rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_plan_and_every_row_once() {
        let a = Plan::new(1003, 7, 8, 100);
        assert_eq!(a, Plan::new(1003, 7, 8, 100));
        assert_ne!(a.blocks, Plan::new(1003, 8, 8, 100).blocks);
        let mut seen = vec![0u8; 1003];
        for &b in &a.blocks {
            let (s, e) = a.block_range(b);
            for r in s..e {
                seen[r as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
        // At least 100 rows: 13 blocks of 8, or 14 if the short last block (3 rows) is among them.
        assert!(a.sample_rows() >= 100 && a.sample_rows() < 108, "{}", a.sample_rows());
    }

    #[test]
    fn a_sweep_keeps_the_random_phase_and_gives_each_share_one_run_of_the_tail() {
        for shares in 1..=4u32 {
            for from in [13usize, 14, 20, 125] {
                let plain = Plan::new(1003, 7, 8, 100);
                let mut swept = plain.clone();
                swept.sweep_tail(from, shares);
                assert_eq!(swept.sweep_from, from);
                assert_eq!(swept.blocks[..from], plain.blocks[..from], "the random phase is unchanged");
                let mut a = swept.blocks.clone();
                let mut b = plain.blocks.clone();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "every block once");
                // Share k's tail positions hold a run of the tail's blocks in file order, and share
                // k's run precedes share k+1's.
                let mut tail = swept.blocks[from..].to_vec();
                tail.sort_unstable();
                let runs: Vec<Vec<u32>> = (0..shares as usize)
                    .map(|k| {
                        (from..swept.blocks.len())
                            .filter(|p| p % shares as usize == k)
                            .map(|p| swept.blocks[p])
                            .collect()
                    })
                    .collect();
                assert_eq!(runs.concat(), tail, "shares={shares} from={from}");
                let sizes: Vec<usize> = runs.iter().map(Vec::len).collect();
                assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
            }
        }
        // Never into the histogram's sample.
        let mut p = Plan::new(1003, 7, 8, 100);
        p.sweep_tail(3, 1);
        assert_eq!(p.sweep_from, p.sample_blocks);
    }
}
