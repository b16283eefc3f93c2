//! The order in which every Gram kernel (portable f32 with its AVX2 copy and f64, wasm simd128 f32
//! and f64, relaxed-SIMD f32) visits the tiles of G, written once: [`tile_loops!`].
//!
//! Each entry of G gets its chunks' sums in chunk order whatever the visiting order, so the order
//! decides speed (which block of G and of the chunk sit in cache), not bits. It is a macro so that a
//! kernel can hoist what depends only on the chunk or on the row unit out of the tile loop and still
//! have no call between its loops: given one closure per tile ([`for_each_tile`]), the relaxed-SIMD
//! f32 kernel ran at 75–77 % of its build's f32x4 peak instead of 83–84 % (`scripts/bench.sh`,
//! d = 1024–4096), because it then recomputed each chunk's and each panel's slices per tile.

use std::ops::Range;

use super::PackedGram;

/// One tile of G: rows of G in row unit `row` (its `ROW_PANELS` panels), columns in column unit
/// `col` (`WIDTH` columns of G, and the chunk's packed panel of those dimensions), summed over chunk
/// `chunk` of the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    pub chunk: usize,
    pub row: usize,
    pub col: usize,
}

/// A row unit's first stored column, in column units of `width` columns: its first panel's.
#[inline(always)]
pub fn first_col(unit: usize, row_panels: usize, width: usize) -> usize {
    PackedGram::panel_start(unit * row_panels) / width
}

/// The loops over every tile of the stored `panels` of G (a band, or all of it; bands start and end
/// on whole octets) over `chunks` chunks of rows, block of G by block of G: `PANEL_BLOCK` panels
/// (`ROW_PANELS` per row unit: the tile's height in panels) × `COLUMN_BLOCK` column units of `WIDTH`
/// columns. That block of G stays in cache while every chunk of the batch is folded into it; inside
/// a block, for each chunk, each row unit walks across the block's columns from its first stored
/// column, so G's rows are read in address order (see `kernel::COLUMN_BLOCK`).
///
/// `tile_loops!(ROW_PANELS, WIDTH, COLUMN_BLOCK; panels, dim_padded, chunks;
/// |chunk| { per chunk } |row| { per row unit } |col| { the tile })`: the three bodies are pasted
/// into the loops as written, so what the first two declare is in scope in the ones after.
macro_rules! tile_loops {
    ($row_panels:expr, $width:expr, $column_block:expr; $panels:expr, $dim_padded:expr, $chunks:expr;
     |$chunk:ident| { $($per_chunk:tt)* } |$row:ident| { $($per_row:tt)* } |$col:ident| { $($tile:tt)* }) => {{
        let panels: ::std::ops::Range<usize> = $panels;
        let (row_panels, width, column_block): (usize, usize, usize) = ($row_panels, $width, $column_block);
        let first_col = |u: usize| $crate::pass::kernel::tiles::first_col(u, row_panels, width);
        let units = panels.start / row_panels..panels.end.div_ceil(row_panels);
        let cols = $dim_padded / width;
        let unit_block = $crate::pass::kernel::PANEL_BLOCK / row_panels;
        for u0 in units.clone().step_by(unit_block) {
            let u1 = (u0 + unit_block).min(units.end);
            for q0 in (first_col(u0)..cols).step_by(column_block) {
                let q1 = (q0 + column_block).min(cols);
                for $chunk in 0..$chunks {
                    $($per_chunk)*
                    for $row in u0..u1 {
                        $($per_row)*
                        for $col in q0.max(first_col($row))..q1 {
                            $($tile)*
                        }
                    }
                }
            }
        }
    }};
}
// Natively only `for_each_tile` expands it by this name; the wasm kernels name it by path.
#[cfg_attr(not(target_arch = "wasm32"), allow(unused_imports))]
pub(crate) use tile_loops;

/// [`tile_loops!`] with one closure per tile, for kernels with nothing to hoist.
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
    tile_loops!(ROW_PANELS, WIDTH, COLUMN_BLOCK; panels, dim_padded, chunks;
        |chunk| {} |row| {} |col| { tile(Tile { chunk, row, col }); });
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
