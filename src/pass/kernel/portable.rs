//! Portable kernels: plain Rust, same tile order ([`super::tiles`]) and arithmetic order as
//! [`super::simd`].

use super::{tiles, PackedGram, COLUMN_BLOCK, LANES, TILE_A};

/// See [`super::gram_update_f32`]: one chunk of `k` rows.
pub fn gram_update_f32(packed: &[f32], k: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, k, k, g);
}

/// See [`super::gram_update_f32_chunks`]. Each entry of G is summed over a chunk in f32 in row order
/// from zero (the order the f32x4 kernel keeps: one rounded multiply, then one rounded add), then
/// added to G in f64, chunk after chunk. Tiles here are 8 × 8 (both panels of a row octet), the
/// wasm kernel's 4 × 8: the tile shape changes which sums share registers, not any sum.
pub fn gram_update_f32_chunks(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the only requirement of this function.
        unsafe { gram_update_f32_avx2(packed, stride, rows, g) };
        return;
    }
    gram_update_f32_body(packed, stride, rows, g);
}

/// The same loops compiled for AVX2 (native CLI): LLVM keeps each 8×8 tile in eight 8-lane
/// registers. Only the vector width changes — no FMA contraction (Rust never fuses a multiply and
/// an add by itself) — so the sums are bit-equal to the baseline build's and to the wasm simd128
/// kernel's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gram_update_f32_avx2(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    gram_update_f32_body(packed, stride, rows, g);
}

#[inline(always)]
fn gram_update_f32_body(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    let d = g.dim_padded();
    if d == 0
        || rows == 0
        || stride == 0
        || packed.len() < super::chunks_len(stride, rows, d)
        || !d.is_multiple_of(LANES)
    {
        return;
    }
    let chunks = rows.div_ceil(stride);
    // Tiles of both panels of a row octet m (panels 2m and 2m+1, which start at the same column
    // 8m) × column octet q, in the order of `tiles` (a block of G in cache for the whole batch).
    tiles::for_each_tile::<2, LANES, COLUMN_BLOCK>(
        g.panel_range(),
        d,
        chunks,
        #[inline(always)]
        |tile| {
            let (m, q) = (tile.row, tile.col);
            let k = stride.min(rows - tile.chunk * stride);
            let chunk = &packed[tile.chunk * stride * d..];
            let octet = |q: usize| &chunk[q * stride * LANES..q * stride * LANES + k * LANES];
            let (a, b) = (octet(m), octet(q));
            let mut acc = [[0.0f32; LANES]; 2 * TILE_A];
            for (ar, br) in a.chunks_exact(LANES).zip(b.chunks_exact(LANES)) {
                for (acc_t, &s) in acc.iter_mut().zip(ar) {
                    for (x, &bl) in acc_t.iter_mut().zip(br) {
                        *x += s * bl;
                    }
                }
            }
            let col = (q - m) * LANES;
            for (half, rows4) in acc.chunks_exact(TILE_A).enumerate() {
                let p = 2 * m + half;
                let width = d - PackedGram::panel_start(p);
                let panel = g.panel_mut(p);
                for (t, acc_t) in rows4.iter().enumerate() {
                    let out = &mut panel[t * width + col..t * width + col + LANES];
                    for (o, &x) in out.iter_mut().zip(acc_t) {
                        *o += x as f64;
                    }
                }
            }
        },
    );
}

/// See [`super::gram_update`]. Tiles of 4 × 4 entries of G, each summed over the chunk in f64 in
/// row order (the order the f64x2 kernel keeps).
pub fn gram_update(packed: &[f64], k: usize, g: &mut PackedGram) {
    let d = g.dim_padded();
    if d == 0 || k == 0 || packed.len() < k * d {
        return;
    }
    // Tiles of one panel p × column panel jb (4 columns), in the order of `tiles` with column
    // blocks of one panel: a block of PANEL_BLOCK row panels shares each column panel while it is
    // in L1 (see PANEL_BLOCK).
    tiles::for_each_tile::<1, 4, 1>(
        g.panel_range(),
        d,
        1,
        #[inline(always)]
        |tile| {
            let (p, jb) = (tile.row, tile.col);
            let c0 = PackedGram::panel_start(p);
            let width = d - c0;
            let a = &packed[p * k * 4..(p + 1) * k * 4];
            let b = &packed[jb * k * 4..(jb + 1) * k * 4];
            let panel = g.panel_mut(p);
            let col = jb * 4 - c0;
            let mut acc = [[0.0f64; 4]; TILE_A];
            for (t, acc_t) in acc.iter_mut().enumerate() {
                acc_t.copy_from_slice(&panel[t * width + col..t * width + col + 4]);
            }
            for (ar, br) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
                for (t, acc_t) in acc.iter_mut().enumerate() {
                    for (l, x) in acc_t.iter_mut().enumerate() {
                        *x += ar[t] * br[l];
                    }
                }
            }
            for (t, acc_t) in acc.iter().enumerate() {
                panel[t * width + col..t * width + col + 4].copy_from_slice(acc_t);
            }
        },
    );
}

/// See [`super::dots`]. Natively (the CLI) this is the histogram sample's kernel: every share of a
/// pass computes the sample's pairs, 2048²/2 dot products of length d, so it is register-tiled as the
/// Gram kernel is (4 × 4 pairs at a time: each load feeds four products instead of one), and built
/// for AVX2 where the CPU has it. Every product is still four interleaved f32 partial sums, added
/// as the f32x4 kernel adds them, so the values are bit-equal to [`super::simd`]'s.
pub fn dots(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above), the only requirement of this function.
        unsafe { dots_avx2(a, b, d, out) };
        return;
    }
    dots_body(a, b, d, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dots_avx2(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    dots_body(a, b, d, out);
}

#[inline(always)]
fn dots_body(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 || !d.is_multiple_of(4) {
        return;
    }
    let (na, nb) = (a.len() / d, b.len() / d);
    if out.len() < na * nb {
        return;
    }
    // Blocks of b that stay in cache while all of a passes (see `super::DOTS_B_BLOCK`).
    for jb in (0..nb).step_by(super::DOTS_B_BLOCK) {
        let je = (jb + super::DOTS_B_BLOCK).min(nb);
        let mut i = 0;
        while i < na {
            let mut j = jb;
            if i + 4 <= na {
                while j + 4 <= je {
                    dots_tile::<4, 4>(a, b, d, nb, i, j, out);
                    j += 4;
                }
                while j < je {
                    dots_tile::<4, 1>(a, b, d, nb, i, j, out);
                    j += 1;
                }
                i += 4;
            } else {
                while j < je {
                    dots_tile::<1, 1>(a, b, d, nb, i, j, out);
                    j += 1;
                }
                i += 1;
            }
        }
    }
}

/// Rows i..i+MA of `a` against rows j..j+MB of `b` (all in range: the caller checks).
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
    let ra: [&[f32]; MA] = std::array::from_fn(|t| &a[(i + t) * d..(i + t + 1) * d]);
    let rb: [&[f32]; MB] = std::array::from_fn(|t| &b[(j + t) * d..(j + t + 1) * d]);
    let mut acc = [[[0.0f32; 4]; MB]; MA];
    for x in (0..d).step_by(4) {
        let vb: [[f32; 4]; MB] = std::array::from_fn(|t| [rb[t][x], rb[t][x + 1], rb[t][x + 2], rb[t][x + 3]]);
        for (acc_a, row_a) in acc.iter_mut().zip(&ra) {
            let va = [row_a[x], row_a[x + 1], row_a[x + 2], row_a[x + 3]];
            for (acc_ab, vb) in acc_a.iter_mut().zip(&vb) {
                for l in 0..4 {
                    acc_ab[l] += va[l] * vb[l];
                }
            }
        }
    }
    for (ta, acc_a) in acc.iter().enumerate() {
        for (tb, v) in acc_a.iter().enumerate() {
            out[(i + ta) * nb + j + tb] = (v[0] + v[1]) + (v[2] + v[3]);
        }
    }
}
