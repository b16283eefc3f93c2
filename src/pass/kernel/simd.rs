//! Explicit wasm simd128 kernels (f32x4 and f64x2 Gram, f32x4 dots). Same tiling and summation
//! order as [`super::portable`].
//!
//! Written with intrinsics because LLVM leaves these loops mostly scalar on wasm32 (5–15 GFLOP/s
//! against 31–34 for explicit f32x4, ARCHITECTURE.md, "Facts the code relies on"). Bounds are checked once per call, before
//! any pointer arithmetic; inside, every address stays within the slices checked.

use core::arch::wasm32::*;

use super::{PackedGram, COLUMN_BLOCK, LANES, PANEL_BLOCK, TILE_A};

/// The f32 Gram update's body, shared by the plain kernel below and `super::relaxed`, which differ
/// only in the multiply-add (`$madd(a, b, acc)` = a·b + acc). A 4×8 tile of G lives in eight f32x4
/// registers for a whole chunk (plus two for the column octet and one broadcast: 11 of the 16
/// vector registers V8 uses on x64); then each register is widened to two f64x2 and added to G.
/// The tiles are visited block of G by block of G ([`super::PANEL_BLOCK`] panels ×
/// [`super::COLUMN_BLOCK`] octets), every chunk of the batch in turn, so the folds hit cache;
/// inside a block each panel walks its rows of G octet after octet (see [`super::COLUMN_BLOCK`]).
macro_rules! gram_update_f32_kernel {
    ($(#[$attr:meta])* $name:ident, $madd:path) => {
        $(#[$attr])*
        pub fn $name(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
            let d = g.dim_padded();
            if d == 0 || rows == 0 || stride == 0 {
                return;
            }
            assert!(packed.len() >= super::chunks_len(stride, rows, d) && d.is_multiple_of(LANES));
            let chunks = rows.div_ceil(stride);
            for p0 in g.panel_range().step_by(PANEL_BLOCK) {
                let p1 = (p0 + PANEL_BLOCK).min(g.panel_range().end);
                let first = PackedGram::panel_start(p0) / LANES;
                for q0 in (first..d / LANES).step_by(COLUMN_BLOCK) {
                    let q1 = (q0 + COLUMN_BLOCK).min(d / LANES);
                    for c in 0..chunks {
                        let k = stride.min(rows - c * stride);
                        let base = c * stride * d;
                        for p in p0..p1 {
                            let c0 = PackedGram::panel_start(p);
                            let width = d - c0;
                            let oa = p * TILE_A / LANES;
                            let a = &packed[base + oa * stride * LANES..base + oa * stride * LANES + k * LANES];
                            let half = p * TILE_A % LANES;
                            let panel = g.panel_mut(p);
                            assert!(panel.len() == TILE_A * width);
                            let out = panel.as_mut_ptr();
                            for q in q0.max(c0 / LANES)..q1 {
                                let b = &packed[base + q * stride * LANES..base + q * stride * LANES + k * LANES];
                                let col = q * LANES - c0;
                                assert!(col + LANES <= width);
                                // SAFETY: a and b are k*8 long, r < k and half + 3 < 8, so every load
                                // is inside them; the tile's stores t*width + col + 7 < 4*width
                                // (asserted).
                                unsafe {
                                    let mut acc = [f32x4_splat(0.0); 8];
                                    let (pa, pb) = (a.as_ptr().add(half), b.as_ptr());
                                    for r in 0..k {
                                        let ar = pa.add(r * LANES);
                                        let br = pb.add(r * LANES);
                                        let vb0 = v128_load(br as *const v128);
                                        let vb1 = v128_load(br.add(4) as *const v128);
                                        let s0 = v128_load32_splat(ar as *const u32);
                                        let s1 = v128_load32_splat(ar.add(1) as *const u32);
                                        let s2 = v128_load32_splat(ar.add(2) as *const u32);
                                        let s3 = v128_load32_splat(ar.add(3) as *const u32);
                                        acc[0] = $madd(s0, vb0, acc[0]);
                                        acc[1] = $madd(s0, vb1, acc[1]);
                                        acc[2] = $madd(s1, vb0, acc[2]);
                                        acc[3] = $madd(s1, vb1, acc[3]);
                                        acc[4] = $madd(s2, vb0, acc[4]);
                                        acc[5] = $madd(s2, vb1, acc[5]);
                                        acc[6] = $madd(s3, vb0, acc[6]);
                                        acc[7] = $madd(s3, vb1, acc[7]);
                                    }
                                    for (i, &v) in acc.iter().enumerate() {
                                        let at = out.add((i / 2) * width + col + (i % 2) * 4);
                                        let lo = f64x2_promote_low_f32x4(v);
                                        let hi = f64x2_promote_low_f32x4(i32x4_shuffle::<2, 3, 0, 1>(v, v));
                                        v128_store(at as *mut v128, f64x2_add(v128_load(at as *const v128), lo));
                                        let at = at.add(2);
                                        v128_store(at as *mut v128, f64x2_add(v128_load(at as *const v128), hi));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
}
#[cfg(feature = "relaxed-simd")]
pub(crate) use gram_update_f32_kernel;

/// a·b + acc with two roundings, as [`super::portable::gram_update_f32`] computes it.
#[inline(always)]
fn madd_plain(a: v128, b: v128, acc: v128) -> v128 {
    f32x4_add(f32x4_mul(a, b), acc)
}

gram_update_f32_kernel!(
    /// See [`super::gram_update_f32_chunks`]; bit for bit equal to
    /// [`super::portable::gram_update_f32_chunks`].
    gram_update_f32_chunks,
    madd_plain
);

/// See [`super::gram_update_f32`]: one chunk of `k` rows.
pub fn gram_update_f32(packed: &[f32], k: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, k, k, g);
}

/// See [`super::gram_update`]. A 4×4 tile of G lives in eight f64x2 registers for the whole chunk;
/// both operands stream contiguously from the packed panels.
pub fn gram_update(packed: &[f64], k: usize, g: &mut PackedGram) {
    let d = g.dim_padded();
    if d == 0 || k == 0 {
        return;
    }
    assert!(packed.len() >= k * d && d.is_multiple_of(4));
    // Blocks of PANEL_BLOCK row panels share each column panel while it is in L1 (see PANEL_BLOCK).
    for p0 in g.panel_range().step_by(PANEL_BLOCK) {
        let p1 = (p0 + PANEL_BLOCK).min(g.panel_range().end);
        for jb in PackedGram::panel_start(p0) / 4..d / 4 {
            let b = &packed[jb * k * 4..(jb + 1) * k * 4];
            for p in p0..p1 {
                let c0 = PackedGram::panel_start(p);
                if jb < c0 / 4 {
                    continue;
                }
                let width = d - c0;
                let a = &packed[p * k * 4..(p + 1) * k * 4];
                let panel = g.panel_mut(p);
                assert!(panel.len() == TILE_A * width && width.is_multiple_of(4));
                let out = panel.as_mut_ptr();
                {
                    let col = jb * 4 - c0;
                    // SAFETY: a and b are k*4 long and r < k; panel offsets t*width + col + 3 < 4*width
                    // because col + 4 <= width (asserted lengths above).
                    unsafe {
                        let tile = |t: usize| out.add(t * width + col);
                        let mut acc = [f64x2_splat(0.0); 8];
                        for t in 0..TILE_A {
                            acc[2 * t] = v128_load(tile(t) as *const v128);
                            acc[2 * t + 1] = v128_load(tile(t).add(2) as *const v128);
                        }
                        let (pa, pb) = (a.as_ptr(), b.as_ptr());
                        let mut r = 0;
                        while r < k {
                            let ar = pa.add(r * 4);
                            let br = pb.add(r * 4);
                            let vb0 = v128_load(br as *const v128);
                            let vb1 = v128_load(br.add(2) as *const v128);
                            let s0 = v128_load64_splat(ar as *const u64);
                            let s1 = v128_load64_splat(ar.add(1) as *const u64);
                            let s2 = v128_load64_splat(ar.add(2) as *const u64);
                            let s3 = v128_load64_splat(ar.add(3) as *const u64);
                            acc[0] = f64x2_add(acc[0], f64x2_mul(s0, vb0));
                            acc[1] = f64x2_add(acc[1], f64x2_mul(s0, vb1));
                            acc[2] = f64x2_add(acc[2], f64x2_mul(s1, vb0));
                            acc[3] = f64x2_add(acc[3], f64x2_mul(s1, vb1));
                            acc[4] = f64x2_add(acc[4], f64x2_mul(s2, vb0));
                            acc[5] = f64x2_add(acc[5], f64x2_mul(s2, vb1));
                            acc[6] = f64x2_add(acc[6], f64x2_mul(s3, vb0));
                            acc[7] = f64x2_add(acc[7], f64x2_mul(s3, vb1));
                            r += 1;
                        }
                        for t in 0..TILE_A {
                            v128_store(tile(t) as *mut v128, acc[2 * t]);
                            v128_store(tile(t).add(2) as *mut v128, acc[2 * t + 1]);
                        }
                    }
                }
            }
        }
    }
}

/// See [`super::dots`]. Two rows of `a` against two rows of `b` at a time, four lanes each, over
/// blocks of [`super::DOTS_B_BLOCK`] rows of `b`.
pub fn dots(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 {
        return;
    }
    let na = a.len() / d;
    let nb = b.len() / d;
    assert!(out.len() >= na * nb && d.is_multiple_of(4));
    for jb in (0..nb).step_by(super::DOTS_B_BLOCK) {
        let je = (jb + super::DOTS_B_BLOCK).min(nb);
        dots_block(a, b, d, na, nb, jb..je, out);
    }
}

/// Every row of `a` against rows `js` of `b`.
fn dots_block(a: &[f32], b: &[f32], d: usize, na: usize, nb: usize, js: std::ops::Range<usize>, out: &mut [f32]) {
    let mut i = 0;
    while i < na {
        let two_a = i + 1 < na;
        let mut j = js.start;
        while j < js.end {
            let two_b = j + 1 < js.end;
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
