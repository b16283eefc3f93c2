//! A pickle *parser* for protocols 2–5: the opcodes `torch.save` and `pickle.dump` write, read
//! into a tree of [`Value`]s. Nothing is ever imported, called or executed: a global is only a
//! name ([`Value::Global`]); applying one (`REDUCE`, `NEWOBJ`, `BUILD`) builds a value only for
//! the few globals PyTorch writes (ordered dicts, tensors, storages, parameters), and gives
//! [`Value::Unreadable`] naming the global for anything else (an optimizer's class, a Lightning
//! hyperparameter object, `os.system`), so that one odd entry never loses the tensors beside it.
//!
//! Every count is bounded before it allocates: the stream's length (the caller's), memo entries,
//! the values built (a memoised value fetched again counts again, so `BINGET` cannot multiply a
//! tree), nesting depth, string and bytes lengths. Each refusal is a [`FormatError`] with the
//! offset of the opcode.
//!
//! The parts: `machine` runs the opcodes over a stack and memo; this file holds the limits, the value
//! model and what applying one of PyTorch's globals builds.

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use super::{DType, FormatError};

mod machine;

pub use machine::parse;

/// Largest pickle stream read (torch's `data.pkl` of a large model is well under 1 MiB; a
/// Lightning checkpoint's with its optimizer state a few MiB).
pub const MAX_PICKLE_BYTES: u64 = 256 << 20;
/// Most memo entries.
pub const MAX_MEMO: u64 = 1 << 20;
/// Most values built (each costs ~64 bytes).
pub const MAX_VALUES: u64 = 4 << 20;
/// Deepest nesting of containers (a checkpoint nests a few levels).
pub const MAX_DEPTH: u64 = 256;
/// Longest string or bytes value.
pub const MAX_STRING_BYTES: u64 = 64 << 20;

/// A pickled value, as far as a parser can know it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer wider than 64 bits (little-endian two's complement bytes, as `LONG1` stores it).
    BigInt(Vec<u8>),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Dicts and `collections.OrderedDict`s, in their order.
    Dict(Vec<(Value, Value)>),
    /// A class or function, by name only.
    Global {
        module: String,
        name: String,
    },
    /// A tensor storage named by a persistent id `('storage', storage_type, key, location, numel)`.
    Storage(Storage),
    /// `torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, …)`.
    Tensor(Tensor),
    /// Something built by a global this parser does not rebuild, named `module.name`.
    Unreadable {
        global: String,
    },
}

/// A storage a tensor views.
#[derive(Clone, Debug, PartialEq)]
pub struct Storage {
    /// The storage type as pickled (`torch.BFloat16Storage`), for messages.
    pub storage_type: String,
    pub dtype: DType,
    /// The key: its bytes are the archive member `<archive>/data/<key>`.
    pub key: String,
    /// Elements the storage holds, as the persistent id says.
    pub numel: u64,
}

/// A tensor: a strided view into a storage.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub storage: Storage,
    /// In elements.
    pub storage_offset: u64,
    pub size: Vec<u64>,
    /// In elements.
    pub stride: Vec<u64>,
}

impl Value {
    /// A short description for messages.
    pub fn kind(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "a bool".into(),
            Value::Int(_) | Value::BigInt(_) => "an int".into(),
            Value::Float(_) => "a float".into(),
            Value::Str(_) => "a string".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::List(_) => "a list".into(),
            Value::Tuple(_) => "a tuple".into(),
            Value::Dict(_) => "a dict".into(),
            Value::Global { module, name } => format!("the global {module}.{name}"),
            Value::Storage(_) => "a storage".into(),
            Value::Tensor(_) => "a tensor".into(),
            Value::Unreadable { global } => format!("an object of {global}"),
        }
    }
}

/// The dtype of a torch storage type or dtype global (`torch.FloatStorage`, `torch.float32`).
pub fn storage_dtype(module: &str, name: &str) -> Option<DType> {
    if module != "torch" {
        return None;
    }
    Some(match name {
        "DoubleStorage" | "float64" | "double" => DType::F64,
        "FloatStorage" | "float32" | "float" => DType::F32,
        "HalfStorage" | "float16" | "half" => DType::F16,
        "BFloat16Storage" | "bfloat16" => DType::BF16,
        "Float8_e4m3fnStorage" | "float8_e4m3fn" => DType::F8E4M3,
        "Float8_e5m2Storage" | "float8_e5m2" => DType::F8E5M2,
        "LongStorage" | "int64" | "long" => DType::I64,
        "IntStorage" | "int32" | "int" => DType::I32,
        "ShortStorage" | "int16" | "short" => DType::I16,
        "CharStorage" | "int8" => DType::I8,
        "ByteStorage" | "uint8" | "UntypedStorage" => DType::U8,
        "BoolStorage" | "bool" => DType::Bool,
        "UInt16Storage" | "uint16" => DType::U16,
        "UInt32Storage" | "uint32" => DType::U32,
        "UInt64Storage" | "uint64" => DType::U64,
        other if other.ends_with("Storage") => DType::Other(other.trim_end_matches("Storage").to_string()),
        _ => return None,
    })
}

/// `LONG1`/`LONG4`'s little-endian two's complement bytes.
fn long_value(bytes: &[u8]) -> Value {
    if bytes.len() > 8 {
        return Value::BigInt(bytes.to_vec());
    }
    if bytes.is_empty() {
        return Value::Int(0);
    }
    let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
    let mut w = if negative { [0xffu8; 8] } else { [0u8; 8] };
    w.get_mut(..bytes.len()).unwrap_or(&mut []).copy_from_slice(bytes);
    Value::Int(i64::from_le_bytes(w))
}

fn global_name(v: &Value) -> String {
    match v {
        Value::Global { module, name } => format!("{module}.{name}"),
        Value::Unreadable { global } => global.clone(),
        other => other.kind(),
    }
}

fn newobj(cls: Value) -> Value {
    match &cls {
        Value::Global { module, name } if module == "collections" && name == "OrderedDict" => Value::Dict(Vec::new()),
        _ => Value::Unreadable { global: global_name(&cls) },
    }
}

/// A persistent id: torch's `('storage', storage_type, key, location, numel)`.
fn persistent(pid: Value) -> Value {
    if let Value::Tuple(items) = &pid {
        if let [Value::Str(tag), Value::Global { module, name }, key, _location, Value::Int(numel)] = items.as_slice() {
            let key = match key {
                Value::Str(s) => Some(s.clone()),
                Value::Int(i) => Some(i.to_string()),
                _ => None,
            };
            if let (true, Some(key), Some(dtype), Ok(numel)) =
                (tag == "storage", key, storage_dtype(module, name), u64::try_from(*numel))
            {
                return Value::Storage(Storage { storage_type: format!("{module}.{name}"), dtype, key, numel });
            }
        }
    }
    Value::Unreadable { global: "a persistent id that is not a torch storage".to_string() }
}

fn uint_list(v: &Value) -> Option<Vec<u64>> {
    match v {
        Value::Tuple(items) | Value::List(items) => items
            .iter()
            .map(|i| match i {
                Value::Int(n) => u64::try_from(*n).ok(),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// What calling `func(*args)` would build, for the globals torch writes; anything else is
/// [`Value::Unreadable`].
fn reduce(func: Value, args: Value) -> Value {
    let unreadable = || Value::Unreadable { global: global_name(&func) };
    let (Value::Global { module, name }, Value::Tuple(args)) = (&func, &args) else {
        return unreadable();
    };
    match (module.as_str(), name.as_str()) {
        ("collections", "OrderedDict") => match args.as_slice() {
            [] => Value::Dict(Vec::new()),
            [Value::List(pairs)] => {
                let mut dict = Vec::new();
                for pair in pairs {
                    match pair {
                        Value::Tuple(kv) | Value::List(kv) if kv.len() == 2 => {
                            let mut kv = kv.iter().cloned();
                            if let (Some(k), Some(v)) = (kv.next(), kv.next()) {
                                dict.push((k, v));
                            }
                        }
                        _ => return unreadable(),
                    }
                }
                Value::Dict(dict)
            }
            _ => unreadable(),
        },
        ("torch._utils", "_rebuild_tensor_v2" | "_rebuild_tensor") => match args.as_slice() {
            [Value::Storage(storage), Value::Int(offset), size, stride, ..] => {
                match (u64::try_from(*offset), uint_list(size), uint_list(stride)) {
                    (Ok(storage_offset), Some(size), Some(stride)) if size.len() == stride.len() => {
                        Value::Tensor(Tensor { storage: storage.clone(), storage_offset, size, stride })
                    }
                    _ => Value::Unreadable { global: format!("{module}.{name} with a negative or odd shape") },
                }
            }
            [Value::Unreadable { global }, ..] => Value::Unreadable { global: global.clone() },
            _ => unreadable(),
        },
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => match args.first() {
            Some(data @ Value::Tensor(_)) => data.clone(),
            Some(Value::Unreadable { global }) => Value::Unreadable { global: global.clone() },
            _ => unreadable(),
        },
        ("torch", "Size") => match args.as_slice() {
            [t @ Value::Tuple(_)] => t.clone(),
            _ => unreadable(),
        },
        ("builtins" | "__builtin__", "set" | "frozenset") => match args.as_slice() {
            [] => Value::List(Vec::new()),
            [Value::List(items)] => Value::List(items.clone()),
            _ => unreadable(),
        },
        // Protocol 2 pickles bytes as `_codecs.encode(text, 'latin1')`.
        ("_codecs", "encode") => match args.as_slice() {
            [Value::Str(s), Value::Str(enc)] if enc == "latin1" || enc == "latin-1" => {
                Value::Bytes(s.chars().map(|c| c as u32 as u8).collect())
            }
            _ => unreadable(),
        },
        _ => unreadable(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(bytes: &[u8]) -> Result<Value, FormatError> {
        parse("t.pkl", bytes)
    }

    #[test]
    fn a_small_dict() {
        // pickle.dumps({'a': [1, 2.5, None, True], 'b': (b'x',)}, protocol=4)
        let v = p(b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01a\x94]\x94(K\x01G@\x04\x00\x00\x00\x00\x00\x00N\x88e\x8c\x01b\x94C\x01x\x94\x85\x94u.").unwrap();
        assert_eq!(
            v,
            Value::Dict(vec![
                (
                    Value::Str("a".into()),
                    Value::List(vec![Value::Int(1), Value::Float(2.5), Value::None, Value::Bool(true)])
                ),
                (Value::Str("b".into()), Value::Tuple(vec![Value::Bytes(b"x".to_vec())])),
            ])
        );
    }

    #[test]
    fn longs_and_negative_ints() {
        assert_eq!(p(b"\x80\x02\x8a\x01\xff.").unwrap(), Value::Int(-1));
        assert_eq!(p(b"\x80\x02J\xfe\xff\xff\xff.").unwrap(), Value::Int(-2));
        assert_eq!(
            p(b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.").unwrap(),
            Value::BigInt(vec![0, 0, 0, 0, 0, 0, 0, 0, 1])
        );
    }

    #[test]
    fn an_unknown_global_is_unreadable_not_called() {
        let v = p(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R.").unwrap();
        assert_eq!(v, Value::Unreadable { global: "os.system".into() });
    }

    #[test]
    fn memo_copies_are_charged() {
        // A list memoised, then fetched into a tuple of itself, again and again: doubles each round.
        let mut b = b"\x80\x02]K\x01aq\x00".to_vec();
        for _ in 0..64 {
            b.extend_from_slice(b"0h\x00h\x00\x86q\x00");
        }
        b.push(b'.');
        let err = p(&b).unwrap_err();
        assert!(matches!(err, FormatError::PickleOverLimit { .. }), "{err}");
    }
}
