//! Dequantisation of ggml's lattice (IQ), ternary (TQ) and microscaling (MXFP4) block types.
//!
//! Layouts are the `block_*` structs of `ggml-common.h` and the arithmetic is `dequantize_row_*` of
//! `ggml-quants.c`, in the same order of float operations, so values are bit for bit what llama.cpp
//! computes (tests/ggml_oracle.rs checks them against gguf-py). The grids and tables are generated
//! into [`super::ggml_grids`].
//!
//! Every index into a block is bounded by its fixed layout; every table lookup is by a `u8` into a
//! 256-entry table or by masked bits that cannot exceed the table's length.

use half::f16;

use super::ggml::half_at;
use super::ggml_grids::{
    IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS, KVALUES_IQ4NL,
    KVALUES_MXFP4,
};

/// ggml's `kmask_iq2xs[j]` test: bit j of an 8-bit sign byte set means the element is negative.
fn sign(signs: u8, j: usize) -> f32 {
    if signs & (1 << j) != 0 {
        -1.0
    } else {
        1.0
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    match (b.get(at), b.get(at + 1)) {
        (Some(&lo), Some(&hi)) => u16::from_le_bytes([lo, hi]),
        // Unreachable for the fixed offsets used below.
        _ => 0,
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(&[a, b1, c, d]) => u32::from_le_bytes([a, b1, c, d]),
        // Unreachable for the fixed offsets used below.
        _ => 0,
    }
}

/// block_iq2_xxs { half d; u16 qs[32] }: per 32 elements, 8 bytes: 4 grid indices, then a u32
/// whose bits 7·l.. are the sign index of the l-th 8 and whose top 4 bits the scale.
/// value = (d · (0.5 + s) · 0.25) · grid · ±1.
pub(super) fn iq2_xxs(b: &[u8; 66], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let q = 2 + 8 * ib;
        let aux = u32_at(b, q + 4);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
        for l in 0..4 {
            let grid = &IQ2XXS_GRID[b[q + l] as usize];
            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
            for j in 0..8 {
                y[ib * 32 + l * 8 + j] = db * grid[j] as f32 * sign(signs, j);
            }
        }
    }
}

/// block_iq2_xs { half d; u16 qs[32]; u8 scales[8] }: each u16 is a 9-bit grid index and a 7-bit
/// sign index; each 16 elements have a 4-bit scale.
pub(super) fn iq2_xs(b: &[u8; 74], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let sc = b[66 + ib];
        let db = [d * (0.5 + (sc & 0x0f) as f32) * 0.25, d * (0.5 + (sc >> 4) as f32) * 0.25];
        for l in 0..4 {
            let q = u16_at(b, 2 + 8 * ib + 2 * l);
            let grid = &IQ2XS_GRID[(q & 511) as usize];
            let signs = KSIGNS_IQ2XS[((q >> 9) & 127) as usize];
            for j in 0..8 {
                y[ib * 32 + l * 8 + j] = db[l / 2] * grid[j] as f32 * sign(signs, j);
            }
        }
    }
}

/// block_iq2_s { half d; u8 qs[64]; u8 qh[8]; u8 scales[8] }: qs holds 32 low bytes of 10-bit grid
/// indices, then 32 explicit sign bytes; qh[ib] the indices' top 2 bits, 2 per 8 elements.
pub(super) fn iq2_s(b: &[u8; 82], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let sc = b[74 + ib];
        let db = [d * (0.5 + (sc & 0x0f) as f32) * 0.25, d * (0.5 + (sc >> 4) as f32) * 0.25];
        let qh = b[66 + ib] as usize;
        for l in 0..4 {
            let dl = db[l / 2];
            let index = b[2 + 4 * ib + l] as usize | ((qh << (8 - 2 * l)) & 0x300);
            let grid = &IQ2S_GRID[index];
            let signs = b[34 + 4 * ib + l];
            for j in 0..8 {
                y[ib * 32 + l * 8 + j] = dl * grid[j] as f32 * sign(signs, j);
            }
        }
    }
}

/// block_iq3_xxs { half d; u8 qs[96] }: 64 grid indices (4 elements each), then per 32 elements a
/// u32 of four 7-bit sign indices and a 4-bit scale. value = (d · (0.5 + s) · 0.5) · grid · ±1.
pub(super) fn iq3_xxs(b: &[u8; 98], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let aux = u32_at(b, 66 + 4 * ib);
        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
        for l in 0..4 {
            let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
            let grid1 = &IQ3XXS_GRID[b[2 + 8 * ib + 2 * l] as usize];
            let grid2 = &IQ3XXS_GRID[b[2 + 8 * ib + 2 * l + 1] as usize];
            let at = ib * 32 + l * 8;
            for j in 0..4 {
                y[at + j] = db * grid1[j] as f32 * sign(signs, j);
                y[at + j + 4] = db * grid2[j] as f32 * sign(signs, j + 4);
            }
        }
    }
}

/// block_iq3_s { half d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4] }: 9-bit grid indices
/// (low byte in qs, top bit in qh), explicit signs, a 4-bit odd scale 1 + 2·s per 32 elements.
pub(super) fn iq3_s(b: &[u8; 110], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let s = (b[106 + ib / 2] >> (4 * (ib % 2))) & 0x0f;
        let db = d * (1 + 2 * s as i32) as f32;
        let qh = b[66 + ib] as usize;
        for l in 0..4 {
            let q = 2 + 8 * ib + 2 * l;
            let grid1 = &IQ3S_GRID[b[q] as usize | ((qh << (8 - 2 * l)) & 256)];
            let grid2 = &IQ3S_GRID[b[q + 1] as usize | ((qh << (7 - 2 * l)) & 256)];
            let signs = b[74 + 4 * ib + l];
            let at = ib * 32 + l * 8;
            for j in 0..4 {
                y[at + j] = db * grid1[j] as f32 * sign(signs, j);
                y[at + j + 4] = db * grid2[j] as f32 * sign(signs, j + 4);
            }
        }
    }
}

/// block_iq1_s { half d; u8 qs[32]; u16 qh[8] }: 11-bit indices into a grid of {-1, 0, 1}
/// (low byte in qs, 3 bits each in qh), per 32 elements a 3-bit odd scale and the sign of a shared
/// offset. value = (d · (2·s + 1)) · (grid + ±IQ1S_DELTA).
pub(super) fn iq1_s(b: &[u8; 50], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    for ib in 0..8 {
        let qh = u16_at(b, 34 + 2 * ib);
        let dl = d * (2 * ((qh >> 12) & 7) + 1) as f32;
        let delta = if qh & 0x8000 != 0 { -IQ1S_DELTA } else { IQ1S_DELTA };
        for l in 0..4 {
            let index = b[2 + 4 * ib + l] as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
            let grid = &IQ1S_GRID[index];
            for j in 0..8 {
                y[ib * 32 + l * 8 + j] = dl * (grid[j] as f32 + delta);
            }
        }
    }
}

/// block_iq1_m { u8 qs[32]; u8 qh[16]; u8 scales[8] }: as IQ1_S, but each 8 elements carry their
/// own 3 index bits and offset sign (a nibble of qh), each 16 a 3-bit scale, and the f16 block scale
/// is spread over the top nibbles of the four u16 scale words.
pub(super) fn iq1_m(b: &[u8; 56], y: &mut [f32; 256]) {
    let sc = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
    let bits = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000);
    let d = f16::from_bits(bits).to_f32();
    for ib in 0..8 {
        let s = sc[ib / 2] >> (6 * (ib % 2));
        let dl = [d * (2 * (s & 7) + 1) as f32, d * (2 * ((s >> 3) & 7) + 1) as f32];
        let qh = [b[32 + 2 * ib] as usize, b[33 + 2 * ib] as usize];
        for l in 0..4 {
            // Nibble l of the two qh bytes: 3 index bits, then the offset's sign.
            let nibble = qh[l / 2] >> (4 * (l % 2));
            let index = b[4 * ib + l] as usize | ((nibble << 8) & 0x700);
            let delta = if nibble & 0x08 != 0 { -IQ1S_DELTA } else { IQ1S_DELTA };
            let grid = &IQ1S_GRID[index];
            for j in 0..8 {
                y[ib * 32 + l * 8 + j] = dl[l / 2] * (grid[j] as f32 + delta);
            }
        }
    }
}

/// block_iq4_nl { half d; u8 qs[16] }: nibbles as Q4_0, mapped through the non-linear levels.
pub(super) fn iq4_nl(b: &[u8; 18], y: &mut [f32; 32]) {
    let d = half_at(b, 0);
    for j in 0..16 {
        let q = b[2 + j];
        y[j] = d * KVALUES_IQ4NL[(q & 0x0f) as usize] as f32;
        y[j + 16] = d * KVALUES_IQ4NL[(q >> 4) as usize] as f32;
    }
}

/// block_iq4_xs { half d; u16 scales_h; u8 scales_l[4]; u8 qs[128] }: IQ4_NL in 32-element
/// sub-blocks with a signed 6-bit scale each (low 4 bits in scales_l, top 2 in scales_h, stored + 32).
pub(super) fn iq4_xs(b: &[u8; 136], y: &mut [f32; 256]) {
    let d = half_at(b, 0);
    let scales_h = u16_at(b, 2);
    for ib in 0..8 {
        let lo = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0f;
        let hi = ((scales_h >> (2 * ib)) & 3) as u8;
        let ls = (lo | (hi << 4)) as i32;
        let dl = d * (ls - 32) as f32;
        for j in 0..16 {
            let q = b[8 + 16 * ib + j];
            y[32 * ib + j] = dl * KVALUES_IQ4NL[(q & 0x0f) as usize] as f32;
            y[32 * ib + j + 16] = dl * KVALUES_IQ4NL[(q >> 4) as usize] as f32;
        }
    }
}

/// One base-3 digit of a TQ1_0 byte: the byte is a fixed-point fraction of 3^5, so multiplying by
/// 3^n (mod 256) brings digit n to the top, and ·3 >> 8 reads it. Returns digit − 1.
fn tq1_digit(q: u8, pow3: u8) -> f32 {
    let shifted = q.wrapping_mul(pow3);
    (((shifted as u16 * 3) >> 8) as i16 - 1) as f32
}

/// block_tq1_0 { u8 qs[48]; u8 qh[4]; half d }: ternary values, 5 per qs byte and 4 per qh byte.
/// qs bytes 0..32 give elements n·32 + m (digit n of byte m), bytes 32..48 elements 160 + n·16 + m,
/// qh elements 240 + n·4 + j. value = (q − 1) · d.
pub(super) fn tq1_0(b: &[u8; 54], y: &mut [f32; 256]) {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let d = half_at(b, 52);
    for (n, &p) in POW3.iter().enumerate() {
        for m in 0..32 {
            y[n * 32 + m] = tq1_digit(b[m], p) * d;
        }
        for m in 0..16 {
            y[160 + n * 16 + m] = tq1_digit(b[32 + m], p) * d;
        }
    }
    for (n, &p) in POW3.iter().take(4).enumerate() {
        for j in 0..4 {
            y[240 + n * 4 + j] = tq1_digit(b[48 + j], p) * d;
        }
    }
}

/// block_tq2_0 { u8 qs[64]; half d }: 2-bit values, each 32 bytes of qs giving 128 elements in 4
/// bit-planes of 32. value = (q − 1) · d.
pub(super) fn tq2_0(b: &[u8; 66], y: &mut [f32; 256]) {
    let d = half_at(b, 64);
    for half in 0..2 {
        for l in 0..4 {
            for m in 0..32 {
                let q = ((b[half * 32 + m] >> (2 * l)) & 3) as i8;
                y[half * 128 + l * 32 + m] = (q - 1) as f32 * d;
            }
        }
    }
}

/// ggml's `ggml_e8m0_to_fp32_half`: 2^(e − 128), the E8M0 scale halved to match the doubled E2M1
/// values; e < 2 are f32 subnormals.
fn e8m0_to_fp32_half(e: u8) -> f32 {
    let bits = if e < 2 { 0x0020_0000u32 << e } else { ((e - 1) as u32) << 23 };
    f32::from_bits(bits)
}

/// block_mxfp4 { u8 e; u8 qs[16] }: nibbles as Q4_0 through the E2M1 values; value = x · d.
pub(super) fn mxfp4(b: &[u8; 17], y: &mut [f32; 32]) {
    let d = e8m0_to_fp32_half(b[0]);
    for j in 0..16 {
        let q = b[1 + j];
        y[j] = KVALUES_MXFP4[(q & 0x0f) as usize] as f32 * d;
        y[j + 16] = KVALUES_MXFP4[(q >> 4) as usize] as f32 * d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e8m0_half_is_two_to_the_e_minus_128() {
        assert_eq!(e8m0_to_fp32_half(0), 2f32.powi(-128));
        assert_eq!(e8m0_to_fp32_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_to_fp32_half(128), 1.0);
        assert_eq!(e8m0_to_fp32_half(255), 2f32.powi(127));
    }

    #[test]
    fn tq1_digits_read_base_three() {
        // 2·81 + 1·27 + 0·9 + 2·3 + 1 = 196, stored as ceil(196·256 / 243) = 207: digits from the top.
        let stored = ((196u16 * 256).div_ceil(243)) as u8;
        let digits: Vec<f32> = [1u8, 3, 9, 27, 81].iter().map(|&p| tq1_digit(stored, p)).collect();
        assert_eq!(digits, [1.0, 0.0, -1.0, 1.0, 0.0]);
    }
}
