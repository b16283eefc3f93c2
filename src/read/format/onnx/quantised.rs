//! Initializers stored as int8/uint8 and dequantised by a per-tensor `DequantizeLinear`: the
//! affine dtype they become, from their small scale and zero-point tensors.

use std::collections::HashMap;

use super::wire::Reader;
use super::{onnx_dtype, Built, Graph, Node, Payload, MAX_SMALL_BYTES};
use crate::read::format::DType;

/// The affine dtype of initializer `x` dequantised by node `n`, with a note for the reason, or why
/// not.
pub(super) fn dequantized(
    r: &mut Reader,
    n: &Node,
    graph: &Graph,
    index: &HashMap<&str, usize>,
    built: &[Built],
    x: usize,
) -> Result<(DType, String), String> {
    let Some(xb) = built.get(x) else { return Err("(internal: no such tensor)".into()) };
    if n.block_size.is_some_and(|b| b != 0) {
        return Err("in blocks (block_size)".into());
    }
    let small = |r: &mut Reader, name: Option<&String>| -> Result<Option<(Vec<f64>, u64)>, String> {
        let Some(name) = name.filter(|s| !s.is_empty()) else { return Ok(None) };
        let Some(&i) = index.get(name.as_str()) else {
            return Err(format!("whose input {name} is not an initializer"));
        };
        let (Some(t), Some(b)) = (graph.tensors.get(i), built.get(i)) else { return Err("(internal)".into()) };
        let Some(payload) = b.inline else { return Err(format!("whose {name} is in external data")) };
        let values =
            small_values(r, payload, b.data_type).map_err(|e| format!("whose {name} could not be read ({e})"))?;
        let elems = t.dims.iter().product::<u64>();
        if values.len() as u64 != elems.max(1) {
            return Err(format!("whose {name} holds {} values for dims {:?}", values.len(), t.dims));
        }
        Ok(Some((values, t.dims.len() as u64)))
    };
    let Some((scales, scale_rank)) = small(r, n.inputs.get(1))? else { return Err("without a scale".into()) };
    let zero_points = small(r, n.inputs.get(2))?;
    if let Some(zp) = n.inputs.get(2).and_then(|z| index.get(z.as_str())).and_then(|&i| built.get(i)) {
        if zp.data_type != xb.data_type {
            return Err("whose zero point is of another type than its input".into());
        }
    }
    let [scale] = scales.as_slice() else {
        let rank = xb.info.shape.len() as i64;
        let axis = n.axis.unwrap_or(1);
        let axis = if axis < 0 { axis + rank } else { axis };
        return Err(format!("per axis {axis} ({} scales, rank {scale_rank})", scales.len()));
    };
    let zero_point = match zero_points {
        Some((zp, _)) => match zp.as_slice() {
            [z] => *z,
            _ => return Err("with a per-axis zero point".into()),
        },
        None => 0.0,
    };
    let scale = *scale as f32;
    if !scale.is_finite() {
        return Err(format!("with a non-finite scale {scale}"));
    }
    let (lo, hi) = if xb.info.dtype == DType::I8 { (-128.0, 127.0) } else { (0.0, 255.0) };
    if !(lo..=hi).contains(&zero_point) {
        return Err(format!("with zero point {zero_point} outside its type's range"));
    }
    let zero_point = zero_point as i32;
    let dtype = if xb.info.dtype == DType::I8 {
        DType::I8Affine { scale_bits: scale.to_bits(), zero_point }
    } else {
        DType::U8Affine { scale_bits: scale.to_bits(), zero_point }
    };
    Ok((dtype, format!("dequantised by DequantizeLinear: (q − {zero_point}) · {scale}")))
}

/// The values of a small inline tensor (a scale or a zero point) as f64.
pub(super) fn small_values(r: &mut Reader, payload: Payload, data_type: u64) -> Result<Vec<f64>, String> {
    let read = |r: &mut Reader, start: u64, end: u64| -> Result<Vec<u8>, String> {
        if end - start > MAX_SMALL_BYTES {
            return Err(format!("{} bytes, over the {MAX_SMALL_BYTES}-byte limit", end - start));
        }
        r.bytes(start, end).map_err(|e| e.to_string())
    };
    let f16 = |bits: u16| half::f16::from_bits(bits).to_f64();
    let bf16 = |bits: u16| f64::from(f32::from_bits(u32::from(bits) << 16));
    match payload {
        Payload::Raw { start, end } => {
            let b = read(r, start, end)?;
            let two = |c: &[u8]| u16::from_le_bytes([c.first().copied().unwrap_or(0), c.get(1).copied().unwrap_or(0)]);
            Ok(match data_type {
                1 => b.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect(),
                10 => b.chunks_exact(2).map(|c| f16(two(c))).collect(),
                16 => b.chunks_exact(2).map(|c| bf16(two(c))).collect(),
                2 => b.iter().map(|&v| f64::from(v)).collect(),
                3 => b.iter().map(|&v| f64::from(v as i8)).collect(),
                other => return Err(format!("{} is not a scale or zero point type", onnx_dtype(other).1)),
            })
        }
        Payload::Fixed { field: "float_data", start, end } if data_type == 1 => {
            let b = read(r, start, end)?;
            Ok(b.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect())
        }
        Payload::Varints { field: "int32_data", start, end } => {
            if end - start > MAX_SMALL_BYTES {
                return Err(format!("{} bytes, over the {MAX_SMALL_BYTES}-byte limit", end - start));
            }
            let mut out = Vec::new();
            let mut p = start;
            while p < end {
                // int32 in a varint, sign-extended to 64 bits when negative.
                let v = r.varint(&mut p, end, "int32_data").map_err(|e| e.to_string())? as i64;
                out.push(match data_type {
                    10 => f16(v as u16),
                    16 => bf16(v as u16),
                    2 | 3 => v as f64,
                    other => return Err(format!("{} is not a scale or zero point type", onnx_dtype(other).1)),
                });
            }
            Ok(out)
        }
        _ => Err("its values are not stored in a way this reader takes".into()),
    }
}
