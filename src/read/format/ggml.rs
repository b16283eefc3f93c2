//! Dequantisation of ggml block-quantised rows to `f32`.
//!
//! The lattice, ternary and MXFP4 types decode in [`super::ggml_iq`]; this module dispatches them.
//!
//! Every type stores a fixed number of elements per block in a fixed number of bytes
//! ([`DType::block`]), so any whole number of blocks decodes independently of the rest of the file.
//! Layouts follow ggml's `ggml-common.h` (the `block_*` structs) and the arithmetic follows
//! `dequantize_row_*` in `ggml-quants.c`, including the order of float operations, so that values
//! match what llama.cpp computes. All multi-byte fields are little-endian; `ggml_half` is IEEE f16.
//!
//! Block data comes from untrusted files, but only ever as values: every index below is a loop
//! counter bounded by the fixed block layout, never a number read from the file.

use half::f16;

use super::ggml_iq;
use super::DType;
use super::DecodeError;

/// Whether `dtype` is one of the ggml block-quantised types this module decodes.
pub fn is_quantised(dtype: &DType) -> bool {
    matches!(
        dtype,
        DType::Q4_0
            | DType::Q4_1
            | DType::Q5_0
            | DType::Q5_1
            | DType::Q8_0
            | DType::Q2K
            | DType::Q3K
            | DType::Q4K
            | DType::Q5K
            | DType::Q6K
            | DType::Q8K
            | DType::IQ2XXS
            | DType::IQ2XS
            | DType::IQ3XXS
            | DType::IQ1S
            | DType::IQ4NL
            | DType::IQ3S
            | DType::IQ2S
            | DType::IQ4XS
            | DType::IQ1M
            | DType::TQ1_0
            | DType::TQ2_0
            | DType::MXFP4
    )
}

/// Decodes whole blocks of `dtype` from `raw` into `out`. `raw` must hold exactly
/// `out.len() / elements_per_block` blocks; rows are a whole number of blocks, so one or many rows
/// can be passed at once.
pub fn dequantize(dtype: &DType, raw: &[u8], out: &mut [f32]) -> Result<(), DecodeError> {
    let length_error =
        || DecodeError::Length { got: raw.len(), rows: 1, dim: out.len(), dtype: dtype.name().to_string() };
    if !is_quantised(dtype) {
        return Err(DecodeError::Unsupported(dtype.name().to_string()));
    }
    let (per_block, block_bytes) = dtype.block().ok_or_else(length_error)?;
    let blocks = out.len() as u64 / per_block;
    if !(out.len() as u64).is_multiple_of(per_block) || blocks.checked_mul(block_bytes) != Some(raw.len() as u64) {
        return Err(length_error());
    }
    match dtype {
        DType::Q4_0 => each_block(raw, out, q4_0),
        DType::Q4_1 => each_block(raw, out, q4_1),
        DType::Q5_0 => each_block(raw, out, q5_0),
        DType::Q5_1 => each_block(raw, out, q5_1),
        DType::Q8_0 => each_block(raw, out, q8_0),
        DType::Q2K => each_block(raw, out, q2_k),
        DType::Q3K => each_block(raw, out, q3_k),
        DType::Q4K => each_block(raw, out, q4_k),
        DType::Q5K => each_block(raw, out, q5_k),
        DType::Q6K => each_block(raw, out, q6_k),
        DType::Q8K => each_block(raw, out, q8_k),
        DType::IQ2XXS => each_block(raw, out, ggml_iq::iq2_xxs),
        DType::IQ2XS => each_block(raw, out, ggml_iq::iq2_xs),
        DType::IQ3XXS => each_block(raw, out, ggml_iq::iq3_xxs),
        DType::IQ1S => each_block(raw, out, ggml_iq::iq1_s),
        DType::IQ4NL => each_block(raw, out, ggml_iq::iq4_nl),
        DType::IQ3S => each_block(raw, out, ggml_iq::iq3_s),
        DType::IQ2S => each_block(raw, out, ggml_iq::iq2_s),
        DType::IQ4XS => each_block(raw, out, ggml_iq::iq4_xs),
        DType::IQ1M => each_block(raw, out, ggml_iq::iq1_m),
        DType::TQ1_0 => each_block(raw, out, ggml_iq::tq1_0),
        DType::TQ2_0 => each_block(raw, out, ggml_iq::tq2_0),
        DType::MXFP4 => each_block(raw, out, ggml_iq::mxfp4),
        other => return Err(DecodeError::Unsupported(other.name().to_string())),
    }
    Ok(())
}

/// Runs a fixed-size block decoder over matching chunks of input and output. The lengths were
/// checked by the caller; the array chunking makes every index inside `f` statically in range.
fn each_block<const B: usize, const N: usize>(raw: &[u8], out: &mut [f32], f: fn(&[u8; B], &mut [f32; N])) {
    let (blocks, _) = raw.as_chunks::<B>();
    let (outs, _) = out.as_chunks_mut::<N>();
    for (b, o) in blocks.iter().zip(outs.iter_mut()) {
        f(b, o);
    }
}

pub(super) fn half_at(b: &[u8], at: usize) -> f32 {
    match (b.get(at), b.get(at + 1)) {
        (Some(&lo), Some(&hi)) => f16::from_le_bytes([lo, hi]).to_f32(),
        // Unreachable for the fixed offsets used below; a zero scale is the harmless fallback.
        _ => 0.0,
    }
}

/// block_q4_0 { half d; u8 qs[16] }: element j < 16 is the low nibble of qs[j], element j + 16 the
/// high nibble; value = (nibble - 8) · d.
fn q4_0(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = ((q & 0x0f) as i32 - 8) as f32 * d;
        y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

/// block_q4_1 { half d; half m; u8 qs[16] }: nibbles as Q4_0, value = nibble · d + m.
fn q4_1(b: &[u8; 20], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    let m = half_at(b, 2);
    for j in 0..16 {
        let q = b[4 + j];
        y[j] = (q & 0x0f) as f32 * d + m;
        y[j + 16] = (q >> 4) as f32 * d + m;
    }
}

/// block_q5_0 { half d; u8 qh[4]; u8 qs[16] }: nibbles as Q4_0 plus a fifth bit, bit j of the
/// little-endian u32 `qh` for element j; value = (q - 16) · d.
fn q5_0(b: &[u8; 22], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
    for j in 0..16 {
        let q = b[6 + j];
        let h0 = ((qh >> j) & 1) as u8;
        let h1 = ((qh >> (j + 16)) & 1) as u8;
        y[j] = (((q & 0x0f) | (h0 << 4)) as i32 - 16) as f32 * d;
        y[j + 16] = (((q >> 4) | (h1 << 4)) as i32 - 16) as f32 * d;
    }
}

/// block_q5_1 { half d; half m; u8 qh[4]; u8 qs[16] }: 5-bit q as Q5_0, value = q · d + m.
fn q5_1(b: &[u8; 24], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    let m = half_at(b, 2);
    let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    for j in 0..16 {
        let q = b[8 + j];
        let h0 = ((qh >> j) & 1) as u8;
        let h1 = ((qh >> (j + 16)) & 1) as u8;
        y[j] = ((q & 0x0f) | (h0 << 4)) as f32 * d + m;
        y[j + 16] = ((q >> 4) | (h1 << 4)) as f32 * d + m;
    }
}

/// block_q8_0 { half d; i8 qs[32] }: value = qs[j] · d.
fn q8_0(b: &[u8; 34], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    for j in 0..32 {
        y[j] = b[2 + j] as i8 as f32 * d;
    }
}

/// block_q2_K { u8 scales[16]; u8 qs[64]; half d; half dmin }: 16 sub-blocks of 16; sub-block i has
/// a 4-bit scale (low nibble of scales[i]) and 4-bit min (high nibble). Each 128-element half uses
/// 32 bytes of qs, four 2-bit fields per byte, one field per 32 consecutive elements.
/// value = (d · scale) · q - (dmin · min).
fn q2_k(b: &[u8; 84], y: &mut [f32; 256]) {
    let d = half_at(b, 80);
    let dmin = half_at(b, 82);
    for half in 0..2 {
        for shift_i in 0..4 {
            for part in 0..2 {
                let sub = half * 8 + shift_i * 2 + part;
                let sc = b[sub];
                let dl = d * (sc & 0x0f) as f32;
                let ml = dmin * (sc >> 4) as f32;
                for l in 0..16 {
                    let q = (b[16 + half * 32 + part * 16 + l] >> (2 * shift_i)) & 3;
                    y[half * 128 + shift_i * 32 + part * 16 + l] = dl * q as f32 - ml;
                }
            }
        }
    }
}

/// Unpacks the 16 six-bit Q3_K scales from their 12 bytes: scale j keeps its low 4 bits in the low
/// (j < 8) or high (j ≥ 8) nibble of byte j mod 8, and its top 2 bits in bits 2·(j / 4) of byte
/// 8 + j mod 4.
fn q3_k_scales(packed: &[u8]) -> [i32; 16] {
    let mut s = [0i32; 16];
    for (j, v) in s.iter_mut().enumerate() {
        let lo = match packed.get(j % 8) {
            Some(&x) if j < 8 => x & 0x0f,
            Some(&x) => x >> 4,
            None => 0,
        };
        let hi = packed.get(8 + j % 4).map_or(0, |&x| (x >> (2 * (j / 4))) & 3);
        *v = (lo | (hi << 4)) as i32 - 32;
    }
    s
}

/// block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d }: 16 sub-blocks of 16 with signed
/// 6-bit scales (stored + 32). Low 2 bits of q are laid out as in Q2_K; the third bit of element e
/// is bit e / 32 of hmask[e mod 32], and a clear bit subtracts 4. value = (d · scale) · q.
fn q3_k(b: &[u8; 110], y: &mut [f32; 256]) {
    let d = half_at(b, 108);
    let scales = q3_k_scales(&b[96..108]);
    for half in 0..2 {
        for shift_i in 0..4 {
            let hbit = half * 4 + shift_i;
            for part in 0..2 {
                let sub = half * 8 + shift_i * 2 + part;
                let dl = d * scales[sub] as f32;
                for l in 0..16 {
                    let idx = part * 16 + l;
                    let low = ((b[32 + half * 32 + idx] >> (2 * shift_i)) & 3) as i32;
                    let high = if b[idx] & (1 << hbit) != 0 { 0 } else { 4 };
                    y[half * 128 + shift_i * 32 + idx] = dl * (low - high) as f32;
                }
            }
        }
    }
}

/// Scale and min `j` (0..8) of the Q4_K/Q5_K 12-byte packing (ggml's `get_scale_min_k4`): the first
/// four pairs are the low 6 bits of bytes j and j + 4; the last four take 4 bits from byte j + 4 and
/// their top 2 bits from the spare top bits of bytes j - 4 (scale) and j (min).
fn scale_min_k4(j: usize, q: &[u8; 12]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        ((q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4), (q[j + 4] >> 4) | ((q[j] >> 6) << 4))
    }
}

fn k_scales(b: &[u8], at: usize) -> [u8; 12] {
    let mut s = [0u8; 12];
    if let Some(src) = b.get(at..at + 12) {
        s.copy_from_slice(src);
    }
    s
}

/// block_q4_K { half d; half dmin; u8 scales[12]; u8 qs[128] }: 8 sub-blocks of 32 with 6-bit scale
/// and min. Each 64-element chunk uses 32 bytes of qs: low nibbles for its first 32 elements, high
/// nibbles for the next 32. value = (d · scale) · q - (dmin · min).
fn q4_k(b: &[u8; 144], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    let dmin = half_at(b, 2);
    let sm = k_scales(b, 4);
    for chunk in 0..4 {
        for nib in 0..2 {
            let (sc, m) = scale_min_k4(chunk * 2 + nib, &sm);
            let dl = d * sc as f32;
            let ml = dmin * m as f32;
            for l in 0..32 {
                let q = (b[16 + chunk * 32 + l] >> (4 * nib)) & 0x0f;
                y[chunk * 64 + nib * 32 + l] = dl * q as f32 - ml;
            }
        }
    }
}

/// block_q5_K { half d; half dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }: Q4_K plus a fifth bit
/// for element e in bit e / 32 of qh[e mod 32].
fn q5_k(b: &[u8; 176], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    let dmin = half_at(b, 2);
    let sm = k_scales(b, 4);
    for chunk in 0..4 {
        for nib in 0..2 {
            let sub = chunk * 2 + nib;
            let (sc, m) = scale_min_k4(sub, &sm);
            let dl = d * sc as f32;
            let ml = dmin * m as f32;
            for l in 0..32 {
                let low = (b[48 + chunk * 32 + l] >> (4 * nib)) & 0x0f;
                let high = if b[16 + l] & (1 << sub) != 0 { 16 } else { 0 };
                y[chunk * 64 + nib * 32 + l] = dl * (low + high) as f32 - ml;
            }
        }
    }
}

/// block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; half d }: 16 sub-blocks of 16 with signed
/// 8-bit scales. Per 128-element half: ql bytes 0..32 hold the low nibbles of elements l and l + 64
/// (low/high nibble), ql bytes 32..64 those of l + 32 and l + 96, and qh[l] holds the top 2 bits of
/// elements l, l + 32, l + 64, l + 96 in bit pairs 0, 2, 4, 6. value = (d · scale) · (q - 32).
fn q6_k(b: &[u8; 210], y: &mut [f32; 256]) {
    let d = half_at(b, 208);
    for half in 0..2 {
        let ql = half * 64;
        let qh = 128 + half * 32;
        let sc = 192 + half * 8;
        for l in 0..32 {
            let is = l / 16;
            let h = b[qh + l];
            let q1 = ((b[ql + l] & 0x0f) | ((h & 3) << 4)) as i32 - 32;
            let q2 = ((b[ql + l + 32] & 0x0f) | (((h >> 2) & 3) << 4)) as i32 - 32;
            let q3 = ((b[ql + l] >> 4) | (((h >> 4) & 3) << 4)) as i32 - 32;
            let q4 = ((b[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) as i32 - 32;
            let out = half * 128;
            y[out + l] = d * (b[sc + is] as i8) as f32 * q1 as f32;
            y[out + l + 32] = d * (b[sc + is + 2] as i8) as f32 * q2 as f32;
            y[out + l + 64] = d * (b[sc + is + 4] as i8) as f32 * q3 as f32;
            y[out + l + 96] = d * (b[sc + is + 6] as i8) as f32 * q4 as f32;
        }
    }
}

/// block_q8_K { f32 d; i8 qs[256]; i16 bsums[16] }: value = d · qs[j]; bsums only speed up dot
/// products and play no part in the values.
fn q8_k(b: &[u8; 292], y: &mut [f32; 256]) {
    let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for j in 0..256 {
        y[j] = d * b[4 + j] as i8 as f32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_known_block() {
        let mut b = vec![0u8; 34];
        b[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        b[2] = 4;
        b[3] = (-6i8) as u8;
        let mut y = [0f32; 32];
        dequantize(&DType::Q8_0, &b, &mut y).unwrap();
        assert_eq!(&y[..3], &[2.0, -3.0, 0.0]);
    }

    #[test]
    fn wrong_lengths_are_reported() {
        let mut y = [0f32; 32];
        assert!(matches!(dequantize(&DType::Q4_0, &[0; 17], &mut y), Err(DecodeError::Length { .. })));
        assert!(matches!(dequantize(&DType::F32, &[0; 128], &mut y), Err(DecodeError::Unsupported(_))));
    }
}
