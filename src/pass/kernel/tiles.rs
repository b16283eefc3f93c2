//! The order in which the portable Gram kernels (f32 with its AVX2 copy, f64) visit the tiles of G.
//!
//! Each entry of G gets its chunks' sums in chunk order whatever the visiting order, so the order
//! decides speed (which block of G and of the chunk sit in cache), not bits. The wasm kernels
//! (`simd.rs`, `relaxed.rs`) keep the same order written in their own loops: through this function
//! the relaxed-SIMD f32 kernel ran at 75–77 % of its build's f32x4 peak instead of 83–84 %
//! (`scripts/bench.sh`, d = 1024–4096), so they hoist per-chunk and per-panel work out of the tile
//! loop by hand.

use std::ops::Range;

use super::{PackedGram, PANEL_BLOCK};

/// One tile of G: rows of G in row unit `row` (its `ROW_PANELS` panels), columns in column unit
/// `col` (`WIDTH` columns of G, and the chunk's packed panel of those dimensions), summed over chunk
/// `chunk` of the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub chunk: usize,
    pub row: usize,
    pub col: usize,
}

/// Calls `tile` for every tile of the stored `panels` of G (a band, or all of it; bands start and
/// end on whole octets) over `chunks` chunks of rows, block of G by block of G: [`PANEL_BLOCK`]
/// panels (`ROW_PANELS` per row unit: the tile's height in panels) × `COLUMN_BLOCK` column units
/// of `WIDTH` columns. That block of G stays in cache while every chunk of the batch is folded into
/// it; inside a block, for each chunk, each row unit walks across the block's columns from its
/// first stored column, so G's rows are read in address order (see [`super::COLUMN_BLOCK`]).
///
/// `#[inline(always)]`, and each kernel's tile body an `#[inline(always)]` closure: every kernel gets
/// its own copy of these loops with its body inside them, compiled for the target features of the
/// kernel that calls it (the AVX2 build of the portable kernel included), as fast as loops written
/// in the kernel. A body left to LLVM's choice was not inlined into the AVX2 copy, and ran at half
/// the speed without AVX2.
#[inline(always)]
pub fn for_each_tile<const ROW_PANELS: usize, const WIDTH: usize, const COLUMN_BLOCK: usize>(
    panels: Range<usize>,
    dim_padded: usize,
    chunks: usize,
    mut tile: impl FnMut(Tile),
) {
    // A row unit's first stored column: its first panel's, in column units.
    let first_col = |u: usize| PackedGram::panel_start(u * ROW_PANELS) / WIDTH;
    let units = panels.start / ROW_PANELS..panels.end.div_ceil(ROW_PANELS);
    let cols = dim_padded / WIDTH;
    for u0 in units.clone().step_by(PANEL_BLOCK / ROW_PANELS) {
        let u1 = (u0 + PANEL_BLOCK / ROW_PANELS).min(units.end);
        for q0 in (first_col(u0)..cols).step_by(COLUMN_BLOCK) {
            let q1 = (q0 + COLUMN_BLOCK).min(cols);
            for chunk in 0..chunks {
                for row in u0..u1 {
                    for col in q0.max(first_col(row))..q1 {
                        tile(Tile { chunk, row, col });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::kernel::{padded_dim, LANES, TILE_A};

    /// Every stored entry of G is in exactly one tile per chunk, whatever the tile's shape, for
    /// whole triangles and bands.
    #[test]
    fn every_stored_entry_is_visited_once_per_chunk() {
        fn check<const R: usize, const W: usize, const B: usize>(dim: usize, panels: Range<usize>, chunks: usize) {
            let d = padded_dim(dim);
            let g = PackedGram::band(dim, panels);
            let stored = g.panel_range();
            let mut seen = vec![0usize; d * d];
            for_each_tile::<R, W, B>(stored.clone(), d, chunks, |t| {
                assert!(t.chunk < chunks);
                for p in t.row * R..(t.row + 1) * R {
                    for a in p * TILE_A..(p + 1) * TILE_A {
                        for b in t.col * W..(t.col + 1) * W {
                            seen[a * d + b] += 1;
                        }
                    }
                }
            });
            for a in 0..d {
                for b in 0..d {
                    let stored_here = stored.contains(&(a / TILE_A)) && b >= PackedGram::panel_start(a / TILE_A);
                    let want = if stored_here { chunks } else { 0 };
                    assert_eq!(seen[a * d + b], want, "d = {d}, G[{a},{b}]");
                }
            }
        }
        for dim in [8usize, 40, 300] {
            let panels = padded_dim(dim) / TILE_A;
            for range in [0..panels, 2..panels, 0..panels / 2] {
                check::<2, LANES, 64>(dim, range.clone(), 3);
                check::<1, LANES, 64>(dim, range.clone(), 2);
                check::<1, LANES, 2>(dim, range.clone(), 2);
                check::<1, 4, 1>(dim, range, 1);
            }
        }
    }
}
