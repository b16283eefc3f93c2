//! Statistics of pairwise cosines, as mergeable partial sums (`docs/method.md` §1).
//!
//! [`GramMoments`] gives the exact mean and spread over **all** pairs from s = Σuᵢ and G = Σuᵢuᵢᵀ
//! without a V×V matrix; [`PairSample`] keeps individual cosines of a row sample for the histogram and
//! for the uncertainty of a running estimate. Both add up across workers with `merge`.
//!
//! The parts: `moments` (the moments and scalars a pass reports), `gram` (the exact all-pairs
//! accumulator), `histogram` (bins over [−1, 1]), `sample` (the row sample, the top pairs and the most
//! opposed ones); their
//! items are re-exported here.

mod gram;
mod histogram;
mod moments;
mod sample;

pub use gram::*;
pub use histogram::*;
pub use moments::*;
pub use sample::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_k_largest_in_any_arrival_order_with_ties_to_the_smaller_pair() {
        // Cosines with ties, offered in two orders: same list, equal to a full sort.
        let pairs: Vec<(usize, usize, f64)> =
            (0..200).map(|n| (n % 37, 40 + n, ((n * 7919) % 23) as f64 / 23.0 - 0.5)).collect();
        let mut want = pairs.clone();
        want.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
        want.truncate(10);
        for order in [pairs.clone(), pairs.iter().rev().copied().collect()] {
            let mut top = TopK::new(10);
            for (i, j, c) in order {
                top.offer(i, j, c);
            }
            assert_eq!(top.sorted(), want);
        }
        let mut none = TopK::new(0);
        none.offer(1, 2, 0.5);
        assert!(none.sorted().is_empty());
    }

    #[test]
    fn bottom_k_keeps_the_k_smallest_most_opposed_first_with_ties_to_the_smaller_pair() {
        let pairs: Vec<(usize, usize, f64)> =
            (0..200).map(|n| (n % 37, 40 + n, ((n * 7919) % 23) as f64 / 23.0 - 0.5)).collect();
        let mut want = pairs.clone();
        want.sort_by(|a, b| a.2.total_cmp(&b.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
        want.truncate(10);
        for order in [pairs.clone(), pairs.iter().rev().copied().collect()] {
            let mut bottom = BottomK::new(10);
            for (i, j, c) in order {
                bottom.offer(i, j, c);
            }
            assert_eq!(bottom.sorted(), want);
        }
    }
}
