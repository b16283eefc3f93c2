//! The GGUF value model: metadata value types, values as kept, and what a header holds beyond the
//! tensor list.

/// GGUF metadata value types (`gguf_type`); each discriminant is the id written in files, so the
/// id is written once and read both ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum GgufType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    Str = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

/// Every type, in id order: `ALL[id]` has that id (a unit test holds this).
const ALL: [GgufType; 13] = {
    use GgufType::*;
    [U8, I8, U16, I16, U32, I32, F32, Bool, Str, Array, U64, I64, F64]
};

impl GgufType {
    /// The type for a file's type id, or `None` for an id GGUF does not define.
    pub fn from_id(id: u32) -> Option<GgufType> {
        usize::try_from(id).ok().and_then(|i| ALL.get(i)).copied()
    }

    /// The id written in files.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// Name for messages, as the spec spells it.
    pub fn name(self) -> &'static str {
        use GgufType::*;
        match self {
            U8 => "uint8",
            I8 => "int8",
            U16 => "uint16",
            I16 => "int16",
            U32 => "uint32",
            I32 => "int32",
            F32 => "float32",
            Bool => "bool",
            Str => "string",
            Array => "array",
            U64 => "uint64",
            I64 => "int64",
            F64 => "float64",
        }
    }

    /// Bytes of one value of a fixed-size type; `None` for strings and arrays.
    pub(super) fn fixed_size(self) -> Option<u64> {
        use GgufType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            Str | Array => None,
        }
    }

    /// Fewest bytes one value can take (an empty string is its 8-byte length; an empty array its
    /// 4-byte type and 8-byte count).
    pub(super) fn min_size(self) -> u64 {
        match self {
            GgufType::Str => 8,
            GgufType::Array => 12,
            t => t.fixed_size().unwrap_or(1),
        }
    }
}

/// A metadata value as kept by the reader (and as written by `format::fixtures::gguf_bytes`).
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    /// An array of `elem` values (every item has that type; nested arrays are `Array` items).
    Array {
        elem: GgufType,
        items: Vec<GgufValue>,
    },
    U64(u64),
    I64(i64),
    F64(f64),
    /// An array that was read past without keeping its items: longer than [`MAX_KEPT_ARRAY`](super::MAX_KEPT_ARRAY)
    /// (merges, scores, token types) or the vocabulary itself, which is in [`GgufExtra::tokens`].
    SkippedArray {
        elem: GgufType,
        len: u64,
    },
}

impl GgufValue {
    /// The value's GGUF type (`Array` for both array variants).
    pub fn value_type(&self) -> GgufType {
        match self {
            GgufValue::U8(_) => GgufType::U8,
            GgufValue::I8(_) => GgufType::I8,
            GgufValue::U16(_) => GgufType::U16,
            GgufValue::I16(_) => GgufType::I16,
            GgufValue::U32(_) => GgufType::U32,
            GgufValue::I32(_) => GgufType::I32,
            GgufValue::F32(_) => GgufType::F32,
            GgufValue::Bool(_) => GgufType::Bool,
            GgufValue::Str(_) => GgufType::Str,
            GgufValue::Array { .. } | GgufValue::SkippedArray { .. } => GgufType::Array,
            GgufValue::U64(_) => GgufType::U64,
            GgufValue::I64(_) => GgufType::I64,
            GgufValue::F64(_) => GgufType::F64,
        }
    }

    /// A non-negative integer of any integer type, as u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(v.into()),
            GgufValue::U16(v) => Some(v.into()),
            GgufValue::U32(v) => Some(v.into()),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The string, for a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// What a GGUF header holds beyond the tensor list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GgufExtra {
    /// 2 or 3.
    pub version: u32,
    /// `general.alignment`, or [`DEFAULT_ALIGNMENT`](super::DEFAULT_ALIGNMENT).
    pub alignment: u64,
    /// Absolute offset of the data section (the aligned end of the header).
    pub data_start: u64,
    /// `tokenizer.ggml.tokens`, in token-id order (empty when absent). Invalid UTF-8 is replaced.
    pub tokens: Vec<String>,
    /// `split.no`: this file's index in a split model (0-based), when split.
    pub split_no: Option<u64>,
    /// `split.count`: number of files of a split model.
    pub split_count: Option<u64>,
    /// `split.tensors.count`: tensors across all files of a split model.
    pub split_tensors_count: Option<u64>,
    /// Metadata entries in file order, up to [`METADATA_BUDGET`](super::METADATA_BUDGET) bytes.
    pub metadata: Vec<(String, GgufValue)>,
    /// False when the budget ran out and later entries were read past without being recorded.
    pub metadata_complete: bool,
}

impl GgufExtra {
    /// The recorded value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_id_reads_back_as_its_type() {
        for (i, t) in ALL.iter().enumerate() {
            assert_eq!(t.id() as usize, i);
            assert_eq!(GgufType::from_id(t.id()), Some(*t));
        }
        assert_eq!(GgufType::from_id(13), None);
        assert_eq!(GgufType::from_id(u32::MAX), None);
    }
}
