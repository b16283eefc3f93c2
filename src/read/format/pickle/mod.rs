//! A pickle *parser* for protocols 2–5: the opcodes `torch.save` and `pickle.dump` write, read
//! into a tree of [`Value`]s. Nothing is ever imported, called or executed: a global is only a
//! name ([`Value::Global`]); applying one (`REDUCE`, `NEWOBJ`, `BUILD`) builds a value only for
//! the few globals PyTorch writes (ordered dicts, tensors, storages, parameters), and gives
//! [`Value::Unreadable`] naming the global for anything else (an optimizer's class, a Lightning
//! hyperparameter object, `os.system`), so that one odd entry never loses the tensors beside it.
//!
//! A memo entry is the value itself, never a copy (as in Python): `BINGET` pushes the same value
//! again, so a dict or list changed after it was memoised is changed for every reference to it
//! (`machine`'s arena), and strings and bytes stay shared in the answer ([`Value::Str`] holds an
//! `Arc`). Every count is bounded before it allocates: the stream's length (the caller's), memo
//! entries, the values created (once each, however often fetched, and one per reference pushed),
//! the bytes of strings and names created, nesting depth, string and bytes lengths, and the nodes
//! of the tree written out (a container shared by several references is written once per
//! reference; one that contains itself is refused). Each refusal is a [`FormatError`] with the
//! offset of the opcode (or of the value it is about).
//!
//! A dict is what Python's would be: a key set twice (two `SETITEM`s, `SETITEMS` after `SETITEMS`,
//! an `OrderedDict` of pairs that repeat a key) keeps its first place and its last value
//! ([`Value::Dict`]), so a state dict that names a tensor twice gives the tensor `torch.load`
//! gives. Keys are equal as Python's are (`1`, `True` and `1.0` are one key).
//!
//! The parts: `machine` runs the opcodes over an arena of values, a stack and a memo, and applies
//! PyTorch's globals; this file holds the limits, the value model, persistent ids and the dicts'
//! keys.

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::Arc;

use super::{DType, FormatError};

mod machine;

pub use machine::{parse, parse_with_stats, ParseStats};

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
/// Most bytes of strings, bytes and names created in all (each value's once, however often the
/// memo hands it out), and most bytes of names copied when the tree is written out.
pub const MAX_PAYLOAD_BYTES: u64 = MAX_PICKLE_BYTES;
/// Longest module and name of a global (`STACK_GLOBAL`'s; `GLOBAL`'s lines are 4096 bytes at most).
pub const MAX_GLOBAL_NAME: u64 = 8192;

/// A pickled value, as far as a parser can know it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer wider than 64 bits (little-endian two's complement bytes, as `LONG1` stores it).
    /// (Shared: a memoised value fetched again is the same value, never a copy.)
    BigInt(Arc<[u8]>),
    Float(f64),
    /// (Shared, as `Bytes` and `BigInt` are.)
    Str(Arc<str>),
    Bytes(Arc<[u8]>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Dicts and `collections.OrderedDict`s, in their order, each key once (with the last value
    /// set for it; keys only Python's identity could tell apart, such as two tensors, are kept
    /// apart).
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
        return Value::BigInt(bytes.into());
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

/// A persistent id: torch's `('storage', storage_type, key, location, numel)`.
fn persistent(pid: Value) -> Value {
    if let Value::Tuple(items) = &pid {
        if let [Value::Str(tag), Value::Global { module, name }, key, _location, Value::Int(numel)] = items.as_slice() {
            let key = match key {
                Value::Str(s) => Some(s.to_string()),
                Value::Int(i) => Some(i.to_string()),
                _ => None,
            };
            if let (true, Some(key), Some(dtype), Ok(numel)) =
                (&**tag == "storage", key, storage_dtype(module, name), u64::try_from(*numel))
            {
                return Value::Storage(Storage { storage_type: format!("{module}.{name}"), dtype, key, numel });
            }
        }
    }
    Value::Unreadable { global: "a persistent id that is not a torch storage".to_string() }
}

/// The bytes `v` holds: (shared behind an `Arc`, owned). A shared value is copied by reference; an
/// owned one's bytes are copied with it.
fn held_bytes(v: &Value) -> (u64, u64) {
    let storage = |s: &Storage| (s.storage_type.len() + s.key.len()) as u64;
    match v {
        Value::Str(s) => (s.len() as u64, 0),
        Value::Bytes(b) | Value::BigInt(b) => (b.len() as u64, 0),
        Value::Global { module, name } => (0, (module.len() + name.len()) as u64),
        Value::Storage(s) => (0, storage(s)),
        Value::Tensor(t) => (0, storage(&t.storage) + 8 * (t.size.len() + t.stride.len()) as u64),
        Value::Unreadable { global } => (0, global.len() as u64),
        _ => (0, 0),
    }
}

/// A dict key as Python compares it, for the keys that compare by value: numbers (`False`, `0`
/// and `0.0` equal), strings, bytes, `None`, globals (one object per name) and tuples of these.
#[derive(PartialEq, Eq, Hash)]
enum Key<'a> {
    None,
    /// An integer (or an integral float, or a bool) that fits in 64 bits.
    Int(i64),
    /// A wider integer: its shortest little-endian two's complement bytes.
    BigInt(Vec<u8>),
    /// A float that is not an integer (or ±inf), by its bits.
    Float(u64),
    Str(&'a str),
    Bytes(&'a [u8]),
    Global(&'a str, &'a str),
    Tuple(Vec<Key<'a>>),
}

/// The key `v` is, or `None` for a value that Python compares by identity (a tensor, a storage, an
/// object of another class, NaN) or cannot hash (a list, a dict): such keys are never merged.
fn key_of(v: &Value) -> Option<Key<'_>> {
    Some(match v {
        Value::None => Key::None,
        Value::Bool(b) => Key::Int(i64::from(*b)),
        Value::Int(i) => Key::Int(*i),
        Value::BigInt(bytes) => int_key(bytes),
        Value::Float(x) => float_key(*x)?,
        Value::Str(s) => Key::Str(s),
        Value::Bytes(b) => Key::Bytes(b),
        Value::Global { module, name } => Key::Global(module, name),
        Value::Tuple(items) => Key::Tuple(items.iter().map(key_of).collect::<Option<_>>()?),
        _ => return None,
    })
}

/// The key of a little-endian two's complement integer, in its shortest form.
fn int_key(bytes: &[u8]) -> Key<'static> {
    let mut n = bytes.len();
    while let (Some(&last), Some(&prev)) = (bytes.get(n.wrapping_sub(1)), bytes.get(n.wrapping_sub(2))) {
        if (last == 0 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0) {
            n -= 1;
        } else {
            break;
        }
    }
    let bytes = bytes.get(..n).unwrap_or(&[]);
    if n > 8 {
        return Key::BigInt(bytes.to_vec());
    }
    match long_value(bytes) {
        Value::Int(i) => Key::Int(i),
        _ => Key::BigInt(bytes.to_vec()),
    }
}

/// A float's key: an integral one is the integer it equals (`2.0 == 2`, `2.0**70 == 2**70`).
fn float_key(x: f64) -> Option<Key<'static>> {
    if x.is_nan() {
        return None;
    }
    if x.is_infinite() || x.fract() != 0.0 {
        return Some(Key::Float(x.to_bits()));
    }
    if x.abs() < (1u64 << 63) as f64 {
        return Some(Key::Int(x as i64));
    }
    // |x| ≥ 2⁶³: mantissa · 2^shift with shift ≥ 11, written out as two's complement bytes.
    let bits = x.to_bits();
    let mantissa = u128::from((bits & ((1u64 << 52) - 1)) | (1u64 << 52));
    let shift = ((bits >> 52) & 0x7ff) as usize - 1075;
    let mut bytes = vec![0u8; (53 + shift) / 8 + 2];
    let m = mantissa << (shift % 8);
    for (i, b) in bytes.iter_mut().skip(shift / 8).take(16).enumerate() {
        *b = (m >> (8 * i)) as u8;
    }
    if x < 0.0 {
        let mut carry = true;
        for b in &mut bytes {
            let (v, c) = (!*b).overflowing_add(u8::from(carry));
            *b = v;
            carry = c;
        }
    }
    Some(int_key(&bytes))
}

/// Every dict in `value` as Python builds it: a key listed again keeps its first place and takes
/// the later value. Linear in the tree (one hash set of keys per dict).
pub(crate) fn last_value_wins(value: &mut Value) {
    match value {
        Value::Dict(items) => {
            merge_repeated_keys(items);
            for (k, v) in items.iter_mut() {
                last_value_wins(k);
                last_value_wins(v);
            }
        }
        Value::List(items) | Value::Tuple(items) => items.iter_mut().for_each(last_value_wins),
        _ => {}
    }
}

fn merge_repeated_keys(items: &mut Vec<(Value, Value)>) {
    // For each item, the index of the first item of its key.
    let (first, repeated) = {
        let mut seen: HashMap<Key<'_>, usize> = HashMap::with_capacity(items.len());
        let mut repeated = false;
        let first: Vec<usize> = items
            .iter()
            .enumerate()
            .map(|(i, (k, _))| match key_of(k) {
                Some(key) => {
                    let f = *seen.entry(key).or_insert(i);
                    repeated |= f != i;
                    f
                }
                None => i,
            })
            .collect();
        (first, repeated)
    };
    if !repeated {
        return;
    }
    let mut kept: Vec<Option<(Value, Value)>> = Vec::with_capacity(items.len());
    for ((i, (k, v)), f) in std::mem::take(items).into_iter().enumerate().zip(first) {
        if f == i {
            kept.push(Some((k, v)));
        } else {
            kept.push(None);
            if let Some(Some((_, old))) = kept.get_mut(f) {
                *old = v;
            }
        }
    }
    *items = kept.into_iter().flatten().collect();
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
                (Value::Str("b".into()), Value::Tuple(vec![Value::Bytes(b"x".as_slice().into())])),
            ])
        );
    }

    #[test]
    fn a_key_set_again_keeps_its_place_and_takes_the_last_value() {
        // {1: 'a', 'k': 2, True: 'b', 1.0: 'c'} by SETITEMS, then 'k' → 3, 2**70 → 4, 2.0**70 → 5,
        // a 9-byte LONG1 of 1 → 'd', -2.0**63 → 6, an 8-byte LONG1 of -2**63 → 7 by SETITEM.
        // pickle.loads gives {1: 'd', 'k': 3, 1180591620717411303424: 5, -9.223372036854776e+18: 7}.
        let v = p(b"\x80\x02}(K\x01X\x01\x00\x00\x00aX\x01\x00\x00\x00kK\x02\x88X\x01\x00\x00\x00bG?\xf0\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00cuX\x01\x00\x00\x00kK\x03s\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x40K\x04sG\x44\x50\x00\x00\x00\x00\x00\x00K\x05s\x8a\x09\x01\x00\x00\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00dsG\xc3\xe0\x00\x00\x00\x00\x00\x00K\x06s\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80K\x07s.").unwrap();
        let mut two_70 = vec![0u8; 8];
        two_70.push(0x40);
        assert_eq!(
            v,
            Value::Dict(vec![
                (Value::Int(1), Value::Str("d".into())),
                (Value::Str("k".into()), Value::Int(3)),
                (Value::BigInt(two_70.into()), Value::Int(5)),
                (Value::Float(-((1u64 << 63) as f64)), Value::Int(7)),
            ])
        );
    }

    #[test]
    fn keys_python_tells_apart_stay_apart() {
        // 'a' and b'a', (1, 2) and (1, 3), NaN and NaN, two lists: five or more keys, all kept.
        let nan = Value::Float(f64::NAN);
        let mut d = Value::Dict(vec![
            (Value::Str("a".into()), Value::Int(1)),
            (Value::Bytes(b"a".as_slice().into()), Value::Int(2)),
            (Value::Tuple(vec![Value::Int(1), Value::Int(2)]), Value::Int(3)),
            (Value::Tuple(vec![Value::Int(1), Value::Int(3)]), Value::Int(4)),
            (nan.clone(), Value::Int(5)),
            (nan, Value::Int(6)),
            (Value::Tuple(vec![Value::Bool(true), Value::Float(2.0)]), Value::Int(7)),
            (Value::Tuple(vec![Value::Int(1), Value::Int(2)]), Value::Int(8)),
        ]);
        last_value_wins(&mut d);
        let Value::Dict(items) = d else { panic!() };
        let values: Vec<_> = items.iter().map(|(_, v)| v.clone()).collect();
        let ints = |v: &[i64]| v.iter().map(|&i| Value::Int(i)).collect::<Vec<_>>();
        assert_eq!(values, ints(&[1, 2, 8, 4, 5, 6]));
    }

    #[test]
    fn longs_and_negative_ints() {
        assert_eq!(p(b"\x80\x02\x8a\x01\xff.").unwrap(), Value::Int(-1));
        assert_eq!(p(b"\x80\x02J\xfe\xff\xff\xff.").unwrap(), Value::Int(-2));
        assert_eq!(
            p(b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.").unwrap(),
            Value::BigInt(vec![0, 0, 0, 0, 0, 0, 0, 0, 1].into())
        );
    }

    #[test]
    fn an_unknown_global_is_unreadable_not_called() {
        let v = p(b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsq\x00\x85R.").unwrap();
        assert_eq!(v, Value::Unreadable { global: "os.system".into() });
    }

    #[test]
    fn a_shared_tree_written_out_is_charged() {
        // A list memoised, then fetched into a tuple of itself, again and again: 64 values, shared,
        // whose tree doubles each round.
        let mut b = b"\x80\x02]K\x01aq\x00".to_vec();
        for _ in 0..64 {
            b.extend_from_slice(b"0h\x00h\x00\x86q\x00");
        }
        b.push(b'.');
        let err = p(&b).unwrap_err();
        assert!(matches!(err, FormatError::PickleOverLimit { .. }), "{err}");
    }
}
