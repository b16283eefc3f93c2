//! Explicit wasm simd128 kernels (f32x4 and f64x2 Gram, f32x4 dots). Same tiling (`tiles::tile_loops!`)
//! and summation order as [`super::portable`].
//!
//! Written with intrinsics because LLVM leaves these loops mostly scalar on wasm32 (5–15 GFLOP/s
//! against 31–34 for explicit f32x4, ARCHITECTURE.md, "Facts the code relies on"). Bounds are checked once per call, before
//! any pointer arithmetic; inside, every address stays within the slices checked.

use core::arch::wasm32::*;

use super::{PackedGram, COLUMN_BLOCK, LANES, TILE_A};

/// The f32 Gram update's body, shared by the plain kernel below and `super::relaxed`, which differ
/// only in the multiply-add (`$madd(a, b, acc)` = a·b + acc). A 4×8 tile of G lives in eight f32x4
/// registers for a whole chunk (plus two for the column octet and one broadcast: 11 of the 16
/// vector registers V8 uses on x64); then each register is widened to two f64x2 and added to G.
/// The tiles are visited in `tiles::tile_loops!`'s order (a block of G in cache for the whole
/// batch), each chunk's rows and each panel's slice of G taken once outside the tile loop.
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
            crate::pass::kernel::tiles::tile_loops!(1, LANES, COLUMN_BLOCK; g.panel_range(), d, chunks;
            |c| {
                let k = stride.min(rows - c * stride);
                let base = c * stride * d;
            } |p| {
                let c0 = PackedGram::panel_start(p);
                let width = d - c0;
                let oa = p * TILE_A / LANES;
                let a = &packed[base + oa * stride * LANES..base + oa * stride * LANES + k * LANES];
                let half = p * TILE_A % LANES;
                let panel = g.panel_mut(p);
                assert!(panel.len() == TILE_A * width);
                let out = panel.as_mut_ptr();
            } |q| {
                let b = &packed[base + q * stride * LANES..base + q * stride * LANES + k * LANES];
                let col = q * LANES - c0;
                assert!(col + LANES <= width);
                // SAFETY: a and b are k*8 long, r < k and half + 3 < 8, so every load is inside
                // them; the tile's stores t*width + col + 7 < 4*width (asserted).
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
            });
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
    // Column blocks of one panel: a block of PANEL_BLOCK row panels shares each column panel while
    // it is in L1 (see PANEL_BLOCK).
    super::tiles::tile_loops!(1, 4, 1; g.panel_range(), d, 1;
    |_chunk| {} |p| {
        let c0 = PackedGram::panel_start(p);
        let width = d - c0;
        let a = &packed[p * k * 4..(p + 1) * k * 4];
        let panel = g.panel_mut(p);
        assert!(panel.len() == TILE_A * width && width.is_multiple_of(4));
        let out = panel.as_mut_ptr();
    } |jb| {
        let b = &packed[jb * k * 4..(jb + 1) * k * 4];
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
    });
}

/// See [`super::dots`]. Tiles of two rows of `a` against four rows of `b`, four lanes each, over
/// blocks of [`super::DOTS_B_BLOCK`] rows of `b`: eight accumulators, four row vectors of `b` and
/// one of `a` (13 of V8's 16 vector registers), six loads per eight multiply-adds where the 2×2
/// tile took four per four. Measured in Chromium (best of 5, interleaved; the histogram sample's
/// shape): 28–32 → 33–37 GFLOP/s at d = 4096. Each pair's sum is still lane by lane over x, then
/// `hsum`, as in the portable kernel.
pub fn dots(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 {
        return;
    }
    let na = a.len() / d;
    let nb = b.len() / d;
    assert!(out.len() >= na * nb && d.is_multiple_of(4));
    for jb in (0..nb).step_by(super::DOTS_B_BLOCK) {
        let je = (jb + super::DOTS_B_BLOCK).min(nb);
        let mut i = 0;
        while i < na {
            let ma = if i + 2 <= na { 2 } else { 1 };
            let mut j = jb;
            while j < je {
                let mb = if j + 4 <= je { 4 } else { 1 };
                match (ma, mb) {
                    (2, 4) => dots_tile::<2, 4>(a, b, d, nb, i, j, out),
                    (2, _) => dots_tile::<2, 1>(a, b, d, nb, i, j, out),
                    (_, 4) => dots_tile::<1, 4>(a, b, d, nb, i, j, out),
                    _ => dots_tile::<1, 1>(a, b, d, nb, i, j, out),
                }
                j += mb;
            }
            i += ma;
        }
    }
}

/// Rows i..i+MA of `a` against rows j..j+MB of `b` (in range: the caller's loops, and the slicing
/// below, which checks once per tile).
#[inline(always)]
fn dots_tile<const MA: usize, const MB: usize>(
    a: &[f32],
    b: &[f32],
    d: usize,
    nb: usize,
    i: usize,
    j: usize,
    out: &mut [f32],
) {
    let ra: [&[f32]; MA] = core::array::from_fn(|t| &a[(i + t) * d..(i + t + 1) * d]);
    let rb: [&[f32]; MB] = core::array::from_fn(|t| &b[(j + t) * d..(j + t + 1) * d]);
    let mut acc = [[f32x4_splat(0.0); MB]; MA];
    let pa: [*const f32; MA] = core::array::from_fn(|t| ra[t].as_ptr());
    let pb: [*const f32; MB] = core::array::from_fn(|t| rb[t].as_ptr());
    let mut x = 0;
    // SAFETY: every slice above is exactly d long, d is a multiple of 4, and x + 4 <= d.
    unsafe {
        while x < d {
            let mut vb = [f32x4_splat(0.0); MB];
            for tb in 0..MB {
                vb[tb] = v128_load(pb[tb].add(x) as *const v128);
            }
            for ta in 0..MA {
                let va = v128_load(pa[ta].add(x) as *const v128);
                for tb in 0..MB {
                    acc[ta][tb] = f32x4_add(acc[ta][tb], f32x4_mul(va, vb[tb]));
                }
            }
            x += 4;
        }
    }
    for (ta, acc_a) in acc.iter().enumerate() {
        for (tb, &v) in acc_a.iter().enumerate() {
            out[(i + ta) * nb + j + tb] = hsum(v);
        }
    }
}

/// (l0 + l1) + (l2 + l3), the portable kernel's order.
#[inline(always)]
fn hsum(v: v128) -> f32 {
    (f32x4_extract_lane::<0>(v) + f32x4_extract_lane::<1>(v))
        + (f32x4_extract_lane::<2>(v) + f32x4_extract_lane::<3>(v))
}
