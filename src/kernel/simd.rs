//! Explicit wasm simd128 kernels (f32x4). Same tiling and summation order as [`super::portable`].
//!
//! Written with intrinsics because LLVM leaves these loops mostly scalar on wasm32 (5–15 GFLOP/s
//! against 31–34 for explicit f32x4, `shared/toolchain.md`). Bounds are checked once per call, before
//! any pointer arithmetic; inside, every address stays within the slices checked.

use core::arch::wasm32::*;

use super::{PackedGram, LANES, MAX_CHUNK_ROWS, TILE_A};

/// See [`super::gram_update`].
pub fn gram_update(rows: &[f32], g: &mut PackedGram) {
    let d = g.dim_padded();
    if d == 0 {
        return;
    }
    let k = (rows.len() / d).min(MAX_CHUNK_ROWS);
    let rows = &rows[..k * d];
    for p in 0..g.panels() {
        let a0 = p * TILE_A;
        let c0 = PackedGram::panel_start(p);
        let width = d - c0;
        let panel = g.panel_mut(p);
        assert!(panel.len() == TILE_A * width && a0 + TILE_A <= d);
        let base = rows.as_ptr();
        let mut b0 = c0;
        while b0 < d {
            // SAFETY: for r < k, r*d + a0 + 3 < k*d and r*d + b0 + 7 < k*d because a0 + 4 <= d,
            // b0 + 8 <= d (d is a multiple of 8 and b0 steps by 8 from a multiple of 8).
            let acc = unsafe {
                let mut acc = [f32x4_splat(0.0); 2 * TILE_A];
                let mut r = 0;
                while r < k {
                    let row = base.add(r * d);
                    let vb0 = v128_load(row.add(b0) as *const v128);
                    let vb1 = v128_load(row.add(b0 + 4) as *const v128);
                    let s0 = f32x4_splat(*row.add(a0));
                    let s1 = f32x4_splat(*row.add(a0 + 1));
                    let s2 = f32x4_splat(*row.add(a0 + 2));
                    let s3 = f32x4_splat(*row.add(a0 + 3));
                    acc[0] = f32x4_add(acc[0], f32x4_mul(s0, vb0));
                    acc[1] = f32x4_add(acc[1], f32x4_mul(s0, vb1));
                    acc[2] = f32x4_add(acc[2], f32x4_mul(s1, vb0));
                    acc[3] = f32x4_add(acc[3], f32x4_mul(s1, vb1));
                    acc[4] = f32x4_add(acc[4], f32x4_mul(s2, vb0));
                    acc[5] = f32x4_add(acc[5], f32x4_mul(s2, vb1));
                    acc[6] = f32x4_add(acc[6], f32x4_mul(s3, vb0));
                    acc[7] = f32x4_add(acc[7], f32x4_mul(s3, vb1));
                    r += 1;
                }
                acc
            };
            for t in 0..TILE_A {
                let off = t * width + (b0 - c0);
                let dst = &mut panel[off..off + LANES];
                flush(acc[2 * t], &mut dst[0..4]);
                flush(acc[2 * t + 1], &mut dst[4..8]);
            }
            b0 += LANES;
        }
    }
}

/// Adds four f32 lanes into four f64 accumulators.
#[inline(always)]
fn flush(v: v128, dst: &mut [f64]) {
    let lo = f64x2_promote_low_f32x4(v);
    let hi = f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 0, 1>(v, v));
    dst[0] += f64x2_extract_lane::<0>(lo);
    dst[1] += f64x2_extract_lane::<1>(lo);
    dst[2] += f64x2_extract_lane::<0>(hi);
    dst[3] += f64x2_extract_lane::<1>(hi);
}

/// See [`super::dots`]. Two rows of `a` against two rows of `b` at a time, four lanes each.
pub fn dots(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 {
        return;
    }
    let na = a.len() / d;
    let nb = b.len() / d;
    assert!(out.len() >= na * nb && d % 4 == 0);
    let mut i = 0;
    while i < na {
        let two_a = i + 1 < na;
        let mut j = 0;
        while j < nb {
            let two_b = j + 1 < nb;
            // Rows past the end are replaced by row i (or j) itself and their results discarded.
            let ra0 = &a[i * d..(i + 1) * d];
            let ra1 = if two_a { &a[(i + 1) * d..(i + 2) * d] } else { ra0 };
            let rb0 = &b[j * d..(j + 1) * d];
            let rb1 = if two_b { &b[(j + 1) * d..(j + 2) * d] } else { rb0 };
            let mut acc = [f32x4_splat(0.0); 4];
            let mut x = 0;
            // SAFETY: each of the four slices is exactly d long and x + 4 <= d.
            unsafe {
                while x < d {
                    let va0 = v128_load(ra0.as_ptr().add(x) as *const v128);
                    let va1 = v128_load(ra1.as_ptr().add(x) as *const v128);
                    let vb0 = v128_load(rb0.as_ptr().add(x) as *const v128);
                    let vb1 = v128_load(rb1.as_ptr().add(x) as *const v128);
                    acc[0] = f32x4_add(acc[0], f32x4_mul(va0, vb0));
                    acc[1] = f32x4_add(acc[1], f32x4_mul(va0, vb1));
                    acc[2] = f32x4_add(acc[2], f32x4_mul(va1, vb0));
                    acc[3] = f32x4_add(acc[3], f32x4_mul(va1, vb1));
                    x += 4;
                }
            }
            out[i * nb + j] = hsum(acc[0]);
            if two_b {
                out[i * nb + j + 1] = hsum(acc[1]);
            }
            if two_a {
                out[(i + 1) * nb + j] = hsum(acc[2]);
                if two_b {
                    out[(i + 1) * nb + j + 1] = hsum(acc[3]);
                }
            }
            j += 2;
        }
        i += 2;
    }
}

/// (l0 + l1) + (l2 + l3), the portable kernel's order.
#[inline(always)]
fn hsum(v: v128) -> f32 {
    (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
        + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
}
