//! MLX's quantised safetensors (mlx-lm's 2- to 8-bit models): a quantised matrix `X` is stored
//! as three tensors, `X.weight` (U32, the packed values, `d · bits / 32` words a row),
//! `X.scales` and `X.biases` (the model's float type, one per group of `group_size` values), and
//! a value is `scale · q + bias` for its group ("affine" mode).
//!
//! The three become one tensor named `X.weight` of shape `[rows, d]`: a
//! [`Layout::Interleave`] view whose blocks are one group each (its packed bytes, its scale, its
//! bias), decoded by [`dequantize`]. Packing (MLX's `backend/cpu/quantized.cpp`): within a row
//! the values form one little-endian bit stream, value i in bits `[i·bits, (i+1)·bits)`: for 2,
//! 4 and 8 bits whole values per byte, for 3, 5 and 6 bits packs of 8, 8 and 4 values in 3, 5
//! and 3 bytes, which is the same stream.
//!
//! Bits and group size come from `config.json`'s `quantization` (or `quantization_config`),
//! including mlx-lm's per-layer entries (`"model.embed_tokens": {"bits": 8, "group_size": 32}`);
//! without them they are inferred from the shapes, preferring MLX's default group of 64, and
//! the type's name says so.

use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DType, DecodeError, InterleavePart, Layout, TensorInfo};

/// Bits MLX's affine mode stores.
pub const BITS: [u8; 6] = [2, 3, 4, 5, 6, 8];
/// Group sizes MLX's affine mode stores.
pub const GROUPS: [u32; 3] = [32, 64, 128];

/// The float type of an MLX matrix's scales and biases (the model's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScaleType {
    F16,
    BF16,
    F32,
}

impl ScaleType {
    fn of(dtype: &DType) -> Option<ScaleType> {
        match dtype {
            DType::F16 => Some(ScaleType::F16),
            DType::BF16 => Some(ScaleType::BF16),
            DType::F32 => Some(ScaleType::F32),
            _ => None,
        }
    }

    pub fn bytes(self) -> u64 {
        match self {
            ScaleType::F16 | ScaleType::BF16 => 2,
            ScaleType::F32 => 4,
        }
    }

    fn read(self, b: &[u8]) -> f32 {
        match (self, b) {
            (ScaleType::F16, [lo, hi, ..]) => f16::from_le_bytes([*lo, *hi]).to_f32(),
            (ScaleType::BF16, [lo, hi, ..]) => bf16::from_le_bytes([*lo, *hi]).to_f32(),
            (ScaleType::F32, [a, b, c, d, ..]) => f32::from_le_bytes([*a, *b, *c, *d]),
            // Blocks are cut to the layout's sizes, so this is never reached.
            _ => f32::NAN,
        }
    }
}

/// An MLX affine-quantised matrix's parameters, as carried by [`DType::MlxAffine`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Affine {
    pub bits: u8,
    pub group: u32,
    pub scale: ScaleType,
    /// True when no config said them and they were inferred from the shapes.
    pub inferred: bool,
}

impl Affine {
    /// Bytes of one group's packed values.
    pub fn packed_bytes(&self) -> u64 {
        self.group as u64 * self.bits as u64 / 8
    }

    /// (values per block, bytes per block): a block is one group with its scale and bias.
    pub fn block(&self) -> (u64, u64) {
        (self.group as u64, self.packed_bytes() + 2 * self.scale.bytes())
    }

    /// The stored type's name, as the report shows it ("mlx-q4-g64"); "mlx-q4-g64, inferred" when
    /// no config said the bits and group size: the shapes can fit another reading, which gives
    /// another matrix, so the card must say it was a guess.
    pub fn name(&self) -> &'static str {
        let names = if self.inferred { &INFERRED_NAMES } else { &NAMES };
        names.iter().find(|(b, g, _)| *b == self.bits && *g == self.group).map(|(_, _, n)| *n).unwrap_or("mlx-affine")
    }
}

/// [`NAMES`] for bits and group sizes inferred from the shapes.
const INFERRED_NAMES: [(u8, u32, &str); 18] = [
    (2, 32, "mlx-q2-g32, inferred"),
    (2, 64, "mlx-q2-g64, inferred"),
    (2, 128, "mlx-q2-g128, inferred"),
    (3, 32, "mlx-q3-g32, inferred"),
    (3, 64, "mlx-q3-g64, inferred"),
    (3, 128, "mlx-q3-g128, inferred"),
    (4, 32, "mlx-q4-g32, inferred"),
    (4, 64, "mlx-q4-g64, inferred"),
    (4, 128, "mlx-q4-g128, inferred"),
    (5, 32, "mlx-q5-g32, inferred"),
    (5, 64, "mlx-q5-g64, inferred"),
    (5, 128, "mlx-q5-g128, inferred"),
    (6, 32, "mlx-q6-g32, inferred"),
    (6, 64, "mlx-q6-g64, inferred"),
    (6, 128, "mlx-q6-g128, inferred"),
    (8, 32, "mlx-q8-g32, inferred"),
    (8, 64, "mlx-q8-g64, inferred"),
    (8, 128, "mlx-q8-g128, inferred"),
];

/// Every (bits, group) name, so that [`DType::name`] can lend a `&'static str`.
const NAMES: [(u8, u32, &str); 18] = [
    (2, 32, "mlx-q2-g32"),
    (2, 64, "mlx-q2-g64"),
    (2, 128, "mlx-q2-g128"),
    (3, 32, "mlx-q3-g32"),
    (3, 64, "mlx-q3-g64"),
    (3, 128, "mlx-q3-g128"),
    (4, 32, "mlx-q4-g32"),
    (4, 64, "mlx-q4-g64"),
    (4, 128, "mlx-q4-g128"),
    (5, 32, "mlx-q5-g32"),
    (5, 64, "mlx-q5-g64"),
    (5, 128, "mlx-q5-g128"),
    (6, 32, "mlx-q6-g32"),
    (6, 64, "mlx-q6-g64"),
    (6, 128, "mlx-q6-g128"),
    (8, 32, "mlx-q8-g32"),
    (8, 64, "mlx-q8-g64"),
    (8, 128, "mlx-q8-g128"),
];

/// What `config.json` says of quantisation: the default and the per-layer entries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuantConfig {
    /// The top-level `bits` and `group_size`, when both are there.
    pub default: Option<(u8, u32)>,
    /// mlx-lm's per-layer entries: layer path → Some((bits, group)), or None for `false` (that
    /// layer is not quantised).
    pub layers: Vec<(String, Option<(u8, u32)>)>,
}

impl QuantConfig {
    /// Reads `quantization` (mlx-lm) or `quantization_config` (transformers' copy of it) from a
    /// parsed config.json; None when neither is an object.
    pub fn from_config(config: &Value) -> Option<QuantConfig> {
        let q = [config.get("quantization"), config.get("quantization_config")]
            .into_iter()
            .flatten()
            .find(|v| v.is_object())?;
        let pair = |v: &Value| {
            let bits = v.get("bits")?.as_u64().and_then(|b| u8::try_from(b).ok())?;
            let group = v.get("group_size")?.as_u64().and_then(|g| u32::try_from(g).ok())?;
            Some((bits, group))
        };
        let mut layers = Vec::new();
        if let Some(map) = q.as_object() {
            for (key, v) in map {
                match v {
                    Value::Object(_) => layers.push((key.clone(), pair(v))),
                    Value::Bool(false) => layers.push((key.clone(), None)),
                    _ => {}
                }
            }
        }
        Some(QuantConfig { default: pair(q), layers })
    }

    /// The (bits, group) of layer `prefix` (a tensor name without `.weight`): its own entry, else
    /// the default. `Some(None)`: the config says this layer is not quantised.
    fn for_layer(&self, prefix: &str) -> Option<Option<(u8, u32)>> {
        match self.layers.iter().find(|(k, _)| k == prefix) {
            Some((_, entry)) => Some(*entry),
            None => self.default.map(Some),
        }
    }
}

/// Why an MLX triple could not be read as one matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub tensor: String,
    pub reason: String,
}

/// Replaces each MLX triple (`X.weight` U32 with `X.scales` and `X.biases`) in `tensors` by one
/// view tensor `X.weight` of the dequantised shape; the scales and biases leave the list. A
/// triple whose shapes disagree with every bits/group the config allows stays as it was (its U32
/// weight is then refused by the decoder, by name) and is returned with the reason.
pub fn combine(tensors: &mut Vec<TensorInfo>, config: Option<&QuantConfig>, hidden_size: Option<u64>) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    let mut taken = Vec::new();
    let mut views = Vec::new();
    for (i, w) in tensors.iter().enumerate() {
        let Some(prefix) = w.name.strip_suffix(".weight") else { continue };
        if w.dtype != DType::U32 || !w.layout.is_contiguous() {
            continue;
        }
        let find = |suffix: &str| {
            let name = format!("{prefix}.{suffix}");
            tensors.iter().position(|t| t.name == name)
        };
        let (Some(si), Some(bi)) = (find("scales"), find("biases")) else { continue };
        let (Some(s), Some(b)) = (tensors.get(si), tensors.get(bi)) else { continue };
        match view_of(w, s, b, prefix, config, hidden_size) {
            Ok(view) => {
                taken.extend([si, bi]);
                views.push((i, view));
            }
            Err(reason) => refusals.push(Refusal { tensor: w.name.clone(), reason }),
        }
    }
    for (i, view) in views {
        if let Some(slot) = tensors.get_mut(i) {
            *slot = view;
        }
    }
    let mut index = 0;
    tensors.retain(|_| {
        let keep = !taken.contains(&index);
        index += 1;
        keep
    });
    refusals
}

/// The view of one triple, or why its shapes do not make one.
fn view_of(
    w: &TensorInfo,
    s: &TensorInfo,
    b: &TensorInfo,
    prefix: &str,
    config: Option<&QuantConfig>,
    hidden_size: Option<u64>,
) -> Result<TensorInfo, String> {
    let (Some((rows, words)), Some((s_rows, groups)), Some(b_shape)) = (w.matrix(), s.matrix(), b.matrix()) else {
        return Err("MLX quantised weights must be 2-D, with 2-D scales and biases".into());
    };
    if s_rows != rows || b_shape != (s_rows, groups) || s.dtype != b.dtype {
        return Err(format!(
            "its scales {:?} {} and biases {:?} {} do not match its {rows} rows",
            s.shape, s.dtype, b.shape, b.dtype
        ));
    }
    let scale =
        ScaleType::of(&s.dtype).ok_or_else(|| format!("scales of type {} (expected F16, BF16 or F32)", s.dtype))?;
    let fits = |bits: u8, group: u32| {
        let d = (groups).checked_mul(group as u64)?;
        (d.checked_mul(bits as u64)? == words.checked_mul(32)?).then_some(d)
    };
    let (bits, group, inferred) = match config.and_then(|c| c.for_layer(prefix)) {
        Some(Some((bits, group))) => (bits, group, false),
        Some(None) => return Err("config.json says this layer is not quantised, yet it is stored as U32".into()),
        None => {
            // No config: the one (bits, group) that makes the shapes agree, preferring a d the
            // config's hidden size names, then MLX's default group of 64.
            let mut found: Vec<(u8, u32)> = BITS
                .iter()
                .flat_map(|&b| GROUPS.iter().map(move |&g| (b, g)))
                .filter(|&(b, g)| fits(b, g).is_some())
                .collect();
            if let Some(h) = hidden_size {
                found.retain(|&(b, g)| fits(b, g) == Some(h));
            }
            let pick = found.iter().find(|(_, g)| *g == 64).or(found.first()).copied();
            let (bits, group) = pick.ok_or_else(|| {
                format!("no bits (2–8) and group size (32, 64, 128) fit {words} words and {groups} groups a row")
            })?;
            (bits, group, true)
        }
    };
    if !BITS.contains(&bits) || !GROUPS.contains(&group) {
        return Err(format!(
            "{bits}-bit groups of {group} (MLX stores 2, 3, 4, 5, 6 or 8 bits in groups of 32, 64 or 128)"
        ));
    }
    let dim = fits(bits, group)
        .ok_or_else(|| format!("{bits}-bit groups of {group} do not fit {words} words and {groups} groups a row"))?;
    let affine = Affine { bits, group, scale, inferred };
    let part = |t: &TensorInfo, chunk: u64| InterleavePart {
        tensor: t.name.clone(),
        file: t.file,
        start: t.byte_range.0,
        row_bytes: chunk * groups,
        chunk_bytes: chunk,
    };
    let parts = vec![part(w, affine.packed_bytes()), part(s, scale.bytes()), part(b, scale.bytes())];
    let (_, block_bytes) = affine.block();
    let len = rows.checked_mul(groups).and_then(|n| n.checked_mul(block_bytes)).ok_or("its size overflows")?;
    Ok(TensorInfo {
        name: w.name.clone(),
        dtype: DType::MlxAffine(affine),
        shape: vec![rows, dim],
        byte_range: (0, len),
        file: w.file,
        layout: Layout::Interleave { parts },
    })
}

/// Decodes whole blocks (one group each: packed values, scale, bias) into `out`.
pub fn dequantize(a: &Affine, raw: &[u8], out: &mut [f32]) -> Result<(), DecodeError> {
    let (per_block, block_bytes) = a.block();
    let (per_block, block_bytes) = (per_block as usize, block_bytes as usize);
    let packed = a.packed_bytes() as usize;
    let sb = a.scale.bytes() as usize;
    let bits = a.bits as usize;
    if per_block == 0 || !raw.len().is_multiple_of(block_bytes) || out.len() != raw.len() / block_bytes * per_block {
        return Err(DecodeError::Length { got: raw.len(), rows: 1, dim: out.len(), dtype: a.name().to_string() });
    }
    let mask = (1u32 << bits) - 1;
    for (block, y) in raw.chunks_exact(block_bytes).zip(out.chunks_exact_mut(per_block)) {
        let (q, rest) = block.split_at(packed);
        let scale = a.scale.read(rest);
        let bias = a.scale.read(rest.get(sb..).unwrap_or(&[]));
        // The group's bits as one little-endian stream, read through a 32-bit window.
        let (mut window, mut held, mut next) = (0u32, 0usize, 0usize);
        for v in y.iter_mut() {
            while held < bits {
                window |= (q.get(next).copied().unwrap_or(0) as u32) << held;
                next += 1;
                held += 8;
            }
            *v = scale * (window & mask) as f32 + bias;
            window >>= bits;
            held -= bits;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packs values of `bits` bits LSB-first, as MLX does.
    fn pack(values: &[u32], bits: usize) -> Vec<u8> {
        let mut out = vec![0u8; values.len() * bits / 8];
        for (i, &v) in values.iter().enumerate() {
            for k in 0..bits {
                if v >> k & 1 == 1 {
                    let bit = i * bits + k;
                    out[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        out
    }

    #[test]
    fn every_bit_width_unpacks_as_mlx_packs() {
        for &bits in &BITS {
            for &group in &GROUPS {
                let a = Affine { bits, group, scale: ScaleType::F32, inferred: false };
                let values: Vec<u32> = (0..group).map(|i| (i * 7 + 3) % (1 << bits)).collect();
                let mut raw = pack(&values, bits as usize);
                raw.extend(0.5f32.to_le_bytes());
                raw.extend((-1.25f32).to_le_bytes());
                let mut out = vec![0.0; group as usize];
                dequantize(&a, &raw, &mut out).unwrap();
                for (o, v) in out.iter().zip(&values) {
                    assert_eq!(*o, 0.5 * *v as f32 - 1.25, "{bits} bits, group {group}");
                }
            }
        }
    }

    #[test]
    fn mlx_3_bit_packs_match_its_extract_bits() {
        // MLX's extract_bits for 3 bits: w_out[2] = ((w[0] & 0xc0) >> 6) + ((w[1] & 0x1) << 2).
        let a = Affine { bits: 3, group: 32, scale: ScaleType::F32, inferred: false };
        let mut raw = vec![0u8; 12];
        raw[0] = 0xc0;
        raw[1] = 0x01;
        raw.extend(1.0f32.to_le_bytes());
        raw.extend(0.0f32.to_le_bytes());
        let mut out = vec![0.0; 32];
        dequantize(&a, &raw, &mut out).unwrap();
        assert_eq!(out[2], 7.0);
        assert_eq!(out.iter().filter(|&&x| x != 0.0).count(), 1);
    }
}
