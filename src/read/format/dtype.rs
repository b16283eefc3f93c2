//! The element types a model file stores, as the formats name them, and what each means for
//! decoding (bytes per element or per block, whether values are quantised).

use serde::{Deserialize, Serialize};

use super::{ggml, mlx};

/// Element types found in model files. Names follow safetensors (`F32`, `BF16`, …) and ggml (`Q8_0`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3,
    F8E5M2,
    Bool,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    /// ggml block-quantised types (GGUF): elements per block and bytes per block are fixed.
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    /// ggml's lattice (IQ), ternary (TQ) and microscaling (MXFP4) block types.
    IQ2XXS,
    IQ2XS,
    IQ3XXS,
    IQ1S,
    IQ4NL,
    IQ3S,
    IQ2S,
    IQ4XS,
    IQ1M,
    TQ1_0,
    TQ2_0,
    MXFP4,
    /// MLX's affine quantisation (`mlx`): packed values with a scale and bias a group, read as
    /// one [`Layout::Interleave`] view of the three stored tensors.
    MlxAffine(mlx::Affine),
    /// Signed bytes q read as `(q − zero_point) · scale` (an ONNX int8 initializer dequantised by
    /// `DequantizeLinear` with a per-tensor scale). The f32 scale is kept as its bits so the type
    /// stays `Eq`.
    I8Affine {
        scale_bits: u32,
        zero_point: i32,
    },
    /// Unsigned bytes q read as `(q − zero_point) · scale` (ONNX uint8 with `DequantizeLinear`).
    U8Affine {
        scale_bits: u32,
        zero_point: i32,
    },
    /// A type this build does not know: listed, never decoded.
    Other(String),
}

impl DType {
    /// Parses a safetensors dtype string. Unknown names become [`DType::Other`] so that one exotic
    /// tensor elsewhere in a checkpoint does not stop the embedding from being read.
    pub fn from_safetensors(name: &str) -> DType {
        match name {
            "F64" => DType::F64,
            "F32" => DType::F32,
            "F16" => DType::F16,
            "BF16" => DType::BF16,
            "F8_E4M3" => DType::F8E4M3,
            "F8_E5M2" => DType::F8E5M2,
            "BOOL" => DType::Bool,
            "U8" => DType::U8,
            "I8" => DType::I8,
            "U16" => DType::U16,
            "I16" => DType::I16,
            "U32" => DType::U32,
            "I32" => DType::I32,
            "U64" => DType::U64,
            "I64" => DType::I64,
            other => DType::Other(other.to_string()),
        }
    }

    /// The name as files spell it.
    pub fn name(&self) -> &str {
        match self {
            DType::F64 => "F64",
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::F8E4M3 => "F8_E4M3",
            DType::F8E5M2 => "F8_E5M2",
            DType::Bool => "BOOL",
            DType::U8 => "U8",
            DType::I8 => "I8",
            DType::U16 => "U16",
            DType::I16 => "I16",
            DType::U32 => "U32",
            DType::I32 => "I32",
            DType::U64 => "U64",
            DType::I64 => "I64",
            DType::Q4_0 => "Q4_0",
            DType::Q4_1 => "Q4_1",
            DType::Q5_0 => "Q5_0",
            DType::Q5_1 => "Q5_1",
            DType::Q8_0 => "Q8_0",
            DType::Q2K => "Q2_K",
            DType::Q3K => "Q3_K",
            DType::Q4K => "Q4_K",
            DType::Q5K => "Q5_K",
            DType::Q6K => "Q6_K",
            DType::Q8K => "Q8_K",
            DType::IQ2XXS => "IQ2_XXS",
            DType::IQ2XS => "IQ2_XS",
            DType::IQ3XXS => "IQ3_XXS",
            DType::IQ1S => "IQ1_S",
            DType::IQ4NL => "IQ4_NL",
            DType::IQ3S => "IQ3_S",
            DType::IQ2S => "IQ2_S",
            DType::IQ4XS => "IQ4_XS",
            DType::IQ1M => "IQ1_M",
            DType::TQ1_0 => "TQ1_0",
            DType::TQ2_0 => "TQ2_0",
            DType::MXFP4 => "MXFP4",
            DType::MlxAffine(a) => a.name(),
            DType::I8Affine { .. } => "int8 (DequantizeLinear)",
            DType::U8Affine { .. } => "uint8 (DequantizeLinear)",
            DType::Other(s) => s,
        }
    }

    /// (elements per block, bytes per block); plain types are blocks of one element.
    /// `None` for a type whose layout is unknown.
    pub fn block(&self) -> Option<(u64, u64)> {
        Some(match self {
            DType::F64 | DType::U64 | DType::I64 => (1, 8),
            DType::F32 | DType::U32 | DType::I32 => (1, 4),
            DType::F16 | DType::BF16 | DType::U16 | DType::I16 => (1, 2),
            DType::F8E4M3
            | DType::F8E5M2
            | DType::Bool
            | DType::U8
            | DType::I8
            | DType::I8Affine { .. }
            | DType::U8Affine { .. } => (1, 1),
            // ggml block layouts (ggml-common.h): QK4_0 = QK8_0 = 32, QK_K = 256.
            DType::Q4_0 => (32, 18),
            DType::Q4_1 => (32, 20),
            DType::Q5_0 => (32, 22),
            DType::Q5_1 => (32, 24),
            DType::Q8_0 => (32, 34),
            DType::Q2K => (256, 84),
            DType::Q3K => (256, 110),
            DType::Q4K => (256, 144),
            DType::Q5K => (256, 176),
            DType::Q6K => (256, 210),
            DType::Q8K => (256, 292),
            // gguf-py's GGML_QUANT_SIZES; QK4_NL = QK_MXFP4 = 32.
            DType::IQ2XXS => (256, 66),
            DType::IQ2XS => (256, 74),
            DType::IQ3XXS => (256, 98),
            DType::IQ1S => (256, 50),
            DType::IQ4NL => (32, 18),
            DType::IQ3S => (256, 110),
            DType::IQ2S => (256, 82),
            DType::IQ4XS => (256, 136),
            DType::IQ1M => (256, 56),
            DType::TQ1_0 => (256, 54),
            DType::TQ2_0 => (256, 66),
            DType::MXFP4 => (32, 17),
            DType::MlxAffine(a) => a.block(),
            DType::Other(_) => return None,
        })
    }

    /// Bytes taken by `elems` elements, or `None` when the count is not a whole number of blocks
    /// or overflows.
    pub fn bytes_for(&self, elems: u64) -> Option<u64> {
        let (per_block, block_bytes) = self.block()?;
        if !elems.is_multiple_of(per_block) {
            return None;
        }
        (elems / per_block).checked_mul(block_bytes)
    }

    /// Whether the stored values are quantised (ggml's block types, MLX's affine groups, ONNX's
    /// DequantizeLinear): ε is then that of the quantised weights, not of the model as trained.
    pub fn is_quantised(&self) -> bool {
        ggml::is_quantised(self)
            || matches!(self, DType::MlxAffine(_) | DType::I8Affine { .. } | DType::U8Affine { .. })
    }

    /// Whether bytes that are all zero decode to a zero row ([`decode::all_zero`] lets the pass
    /// skip them): true of every type but an affine one with a zero point other than 0.
    pub fn zero_bytes_are_zero(&self) -> bool {
        !matches!(self, DType::I8Affine { zero_point, .. } | DType::U8Affine { zero_point, .. } if *zero_point != 0)
    }

    /// Whether [`decode::decode_rows`] can turn this type into `f32`.
    pub fn is_float(&self) -> bool {
        !matches!(
            self,
            DType::Bool
                | DType::U8
                | DType::I8
                | DType::U16
                | DType::I16
                | DType::U32
                | DType::I32
                | DType::U64
                | DType::I64
                | DType::Other(_)
        )
    }
}

/// Whether a type's name, as [`DType::name`] spells it, is a quantised type's: a report (and a
/// permalink, which carries the name only) says so beside ε.
pub fn quantised_name(name: &str) -> bool {
    let ggml = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q8_K", "MXFP4"];
    ggml.contains(&name)
        || (name.starts_with('Q') && name.ends_with("_K"))
        || name.starts_with("IQ")
        || name.starts_with("TQ")
        || name.starts_with("mlx-")
        || name.contains("DequantizeLinear")
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
