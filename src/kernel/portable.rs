//! Portable kernels: plain Rust, same tiling and arithmetic order as [`super::simd`].

use super::{PackedGram, LANES, MAX_CHUNK_ROWS, TILE_A};

/// See [`super::gram_update`].
pub fn gram_update(rows: &[f32], g: &mut PackedGram) {
    let d = g.dim_padded();
    if d == 0 {
        return;
    }
    let k = (rows.len() / d).min(MAX_CHUNK_ROWS);
    for p in 0..g.panels() {
        let a0 = p * TILE_A;
        let c0 = PackedGram::panel_start(p);
        let width = d - c0;
        let panel = g.panel_mut(p);
        let mut b0 = c0;
        while b0 < d {
            // One 4×8 tile, summed over the chunk in f32 (as the SIMD accumulators do).
            let mut acc = [[0.0f32; LANES]; TILE_A];
            for r in 0..k {
                let row = &rows[r * d..(r + 1) * d];
                let bs = &row[b0..b0 + LANES];
                for (t, acc_t) in acc.iter_mut().enumerate() {
                    let s = row[a0 + t];
                    for (l, x) in acc_t.iter_mut().enumerate() {
                        *x += s * bs[l];
                    }
                }
            }
            for (t, acc_t) in acc.iter().enumerate() {
                let dst = &mut panel[t * width + (b0 - c0)..t * width + (b0 - c0) + LANES];
                for (o, &x) in dst.iter_mut().zip(acc_t) {
                    *o += x as f64;
                }
            }
            b0 += LANES;
        }
    }
}

/// See [`super::dots`].
pub fn dots(a: &[f32], b: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 {
        return;
    }
    let nb = b.len() / d;
    for (i, ra) in a.chunks_exact(d).enumerate() {
        for (j, rb) in b.chunks_exact(d).enumerate() {
            // Four interleaved partial sums, as the f32x4 kernel keeps them.
            let mut acc = [0.0f32; 4];
            for (ca, cb) in ra.chunks_exact(4).zip(rb.chunks_exact(4)) {
                for l in 0..4 {
                    acc[l] += ca[l] * cb[l];
                }
            }
            out[i * nb + j] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
    }
}
