//! Row decoding: raw bytes of one or more rows → `f32`.

use half::f16;

use super::{ggml, DType};

pub use super::DecodeError;

/// Decodes `raw` (whole rows of `dim` elements of `dtype`) into `out` (`rows × dim` f32).
pub fn decode_rows(raw: &[u8], dtype: &DType, dim: usize, out: &mut [f32]) -> Result<(), DecodeError> {
    if !dtype.is_float() {
        return Err(DecodeError::Unsupported(dtype.name().to_string()));
    }
    let length_error =
        || DecodeError::Length { got: raw.len(), rows: out.len() / dim.max(1), dim, dtype: dtype.name().to_string() };
    let row_bytes = dtype.bytes_for(dim as u64).ok_or_else(length_error)? as usize;
    if dim == 0 || !out.len().is_multiple_of(dim) || raw.len() != (out.len() / dim) * row_bytes {
        return Err(length_error());
    }
    match dtype {
        DType::F32 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        DType::F64 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(8)) {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                *o = f64::from_le_bytes(b) as f32;
            }
        }
        DType::F16 => {
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        DType::BF16 => {
            // A bf16 is the top half of an f32, so the shift is the conversion. `half`'s also quiets
            // NaNs, a branch per value that kept this loop scalar (8 % of a narrow pass); a row with
            // a NaN is dropped whatever its payload.
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16);
            }
        }
        DType::F8E4M3 => {
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = f8_e4m3(b);
            }
        }
        DType::F8E5M2 => {
            // E5M2 is the top byte of an IEEE half.
            for (o, &b) in out.iter_mut().zip(raw) {
                *o = f16::from_bits((b as u16) << 8).to_f32();
            }
        }
        DType::I8Affine { scale_bits, zero_point } => {
            let scale = f32::from_bits(*scale_bits);
            for (o, &q) in out.iter_mut().zip(raw) {
                // |q − zp| ≤ 255 is exact in f32; one rounding, as ONNX's reference computes it.
                *o = (i32::from(q as i8) - zero_point) as f32 * scale;
            }
        }
        DType::U8Affine { scale_bits, zero_point } => {
            let scale = f32::from_bits(*scale_bits);
            for (o, &q) in out.iter_mut().zip(raw) {
                *o = (i32::from(q) - zero_point) as f32 * scale;
            }
        }
        // Rows are whole blocks (checked above via bytes_for), so all rows decode in one pass.
        q if ggml::is_quantised(q) => ggml::dequantize(q, raw, out)?,
        DType::MlxAffine(a) => super::mlx::dequantize(a, raw, out)?,
        other => return Err(DecodeError::Unsupported(other.name().to_string())),
    }
    Ok(())
}

/// Whether every byte of `raw` is zero. Such rows decode to zero rows in every float dtype (IEEE
/// +0.0, and a zero scale for ggml's blocks), so the pass may count them as dropped without
/// decoding them. Words of 8 bytes OR-ed together: wasm's auto-vectoriser turns this into simd128.
pub fn all_zero(raw: &[u8]) -> bool {
    let words = raw.chunks_exact(8);
    let tail = words.remainder().iter().fold(0u8, |a, &b| a | b);
    let body = words.fold(0u64, |a, c| {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        a | u64::from_ne_bytes(w)
    });
    body == 0 && tail == 0
}

/// OCP FP8 E4M3 ("fn" variant: no infinities, S.1111.111 is NaN, bias 7).
fn f8_e4m3(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((b >> 3) & 0x0f) as i32;
    let man = (b & 0x07) as f32;
    if exp == 0x0f && (b & 0x07) == 0x07 {
        return f32::NAN;
    }
    if exp == 0 {
        sign * man / 8.0 * 2f32.powi(-6)
    } else {
        sign * (1.0 + man / 8.0) * 2f32.powi(exp - 7)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3_known_values() {
        assert_eq!(f8_e4m3(0x38), 1.0);
        assert_eq!(f8_e4m3(0x7e), 448.0);
        assert_eq!(f8_e4m3(0x01), 2f32.powi(-9));
        assert!(f8_e4m3(0x7f).is_nan());
    }

    #[test]
    fn zero_bytes_are_zero_rows_in_every_float_dtype() {
        use crate::read::matrix::{normalise_row, RowFate};
        let dtypes = [
            DType::F64,
            DType::F32,
            DType::F16,
            DType::BF16,
            DType::F8E4M3,
            DType::F8E5M2,
            DType::Q4_0,
            DType::Q4_1,
            DType::Q5_0,
            DType::Q5_1,
            DType::Q8_0,
            DType::Q2K,
            DType::Q3K,
            DType::Q4K,
            DType::Q5K,
            DType::Q6K,
            DType::Q8K,
            DType::IQ2XXS,
            DType::IQ2XS,
            DType::IQ3XXS,
            DType::IQ1S,
            DType::IQ4NL,
            DType::IQ3S,
            DType::IQ2S,
            DType::IQ4XS,
            DType::IQ1M,
            DType::TQ1_0,
            DType::TQ2_0,
            DType::MXFP4,
        ];
        let dim = 512;
        for dtype in dtypes {
            assert!(dtype.is_float(), "{}", dtype.name());
            let bytes = dtype.bytes_for(dim as u64).unwrap() as usize;
            let raw = vec![0u8; 2 * bytes];
            assert!(all_zero(&raw));
            let mut out = vec![1.0f32; 2 * dim];
            decode_rows(&raw, &dtype, dim, &mut out).unwrap();
            let mut unit = vec![0.0f32; dim];
            for row in out.chunks_exact(dim) {
                assert_eq!(normalise_row(row, &mut unit), RowFate::Zero, "{}", dtype.name());
            }
        }
    }

    #[test]
    fn all_zero_sees_any_nonzero_byte() {
        for len in [0usize, 1, 7, 8, 9, 31] {
            assert!(all_zero(&vec![0u8; len]));
            for i in 0..len {
                let mut raw = vec![0u8; len];
                raw[i] = 0x80;
                assert!(!all_zero(&raw), "len {len}, byte {i}");
            }
        }
    }

    #[test]
    fn integer_dtypes_are_refused() {
        let mut out = [0.0f32; 2];
        assert_eq!(decode_rows(&[0; 8], &DType::I32, 2, &mut out), Err(DecodeError::Unsupported("I32".into())));
    }
}
