//! Row decoding: raw bytes of one or more rows → `f32`.

use half::{bf16, f16};

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
            for (o, c) in out.iter_mut().zip(raw.chunks_exact(2)) {
                *o = bf16::from_le_bytes([c[0], c[1]]).to_f32();
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
        // Rows are whole blocks (checked above via bytes_for), so all rows decode in one pass.
        q if ggml::is_quantised(q) => ggml::dequantize(q, raw, out)?,
        other => return Err(DecodeError::Unsupported(other.name().to_string())),
    }
    Ok(())
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
    fn integer_dtypes_are_refused() {
        let mut out = [0.0f32; 2];
        assert_eq!(decode_rows(&[0; 8], &DType::I32, 2, &mut out), Err(DecodeError::Unsupported("I32".into())));
    }
}
