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

// As in the other readers: the crate-wide `FormatError` is large and ends the read.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use super::{DType, FormatError};

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

/// A value on the stack or in the memo, with what it cost.
#[derive(Clone)]
struct Slot {
    value: Value,
    /// Nesting depth (a scalar is 0).
    depth: u64,
    /// Values in the tree (charged again whenever the memo hands out a copy).
    size: u64,
}

impl Slot {
    fn leaf(value: Value) -> Slot {
        Slot { value, depth: 0, size: 1 }
    }
}

struct Parser<'a> {
    file: &'a str,
    data: &'a [u8],
    pos: usize,
    /// Offset of the opcode being run, for messages.
    op_at: usize,
    stack: Vec<Slot>,
    marks: Vec<usize>,
    memo: HashMap<u64, Slot>,
    values: u64,
}

/// Parses a pickle stream up to its `STOP`. `file` names it in messages (e.g.
/// `model.pt: archive/data.pkl`).
pub fn parse(file: &str, data: &[u8]) -> Result<Value, FormatError> {
    if data.len() as u64 > MAX_PICKLE_BYTES {
        return Err(FormatError::PickleOverLimit {
            file: file.to_string(),
            what: "pickle stream length".to_string(),
            offset: 0,
            value: data.len() as u64,
            limit: MAX_PICKLE_BYTES,
        });
    }
    let mut p =
        Parser { file, data, pos: 0, op_at: 0, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new(), values: 0 };
    p.run()
}

impl<'a> Parser<'a> {
    fn truncated(&self, what: &str) -> FormatError {
        FormatError::PickleTruncated {
            file: self.file.to_string(),
            what: what.to_string(),
            offset: self.op_at as u64,
            len: self.data.len() as u64,
        }
    }

    fn malformed(&self, reason: impl Into<String>) -> FormatError {
        FormatError::PickleMalformed { file: self.file.to_string(), offset: self.op_at as u64, reason: reason.into() }
    }

    fn over(&self, what: &str, value: u64, limit: u64) -> FormatError {
        FormatError::PickleOverLimit {
            file: self.file.to_string(),
            what: what.to_string(),
            offset: self.op_at as u64,
            value,
            limit,
        }
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], FormatError> {
        let n = usize::try_from(n).map_err(|_| self.truncated(what))?;
        let end = self.pos.checked_add(n).ok_or_else(|| self.truncated(what))?;
        let bytes = self.data.get(self.pos..end).ok_or_else(|| self.truncated(what))?;
        self.pos = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize, what: &str) -> Result<u64, FormatError> {
        let b = self.take(n as u64, what)?;
        Ok(b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// A length-prefixed string or bytes, its length checked against the limit, then the stream.
    fn sized(&mut self, len_bytes: usize, what: &str) -> Result<&'a [u8], FormatError> {
        let len = self.uint(len_bytes, what)?;
        if len > MAX_STRING_BYTES {
            return Err(self.over(&format!("{what} length"), len, MAX_STRING_BYTES));
        }
        self.take(len, what)
    }

    fn text(&self, bytes: &[u8]) -> Result<String, FormatError> {
        std::str::from_utf8(bytes).map(str::to_string).map_err(|_| self.malformed("a string that is not UTF-8"))
    }

    fn charge(&mut self, n: u64) -> Result<(), FormatError> {
        self.values = self.values.saturating_add(n);
        if self.values > MAX_VALUES {
            return Err(self.over("number of values", self.values, MAX_VALUES));
        }
        Ok(())
    }

    fn push(&mut self, slot: Slot) -> Result<(), FormatError> {
        if slot.depth > MAX_DEPTH {
            return Err(self.over("nesting depth", slot.depth, MAX_DEPTH));
        }
        self.stack.push(slot);
        Ok(())
    }

    fn push_leaf(&mut self, value: Value) -> Result<(), FormatError> {
        self.charge(1)?;
        self.push(Slot::leaf(value))
    }

    fn pop(&mut self, op: &str) -> Result<Slot, FormatError> {
        match self.stack.pop() {
            Some(s) if self.marks.last().is_none_or(|&m| self.stack.len() >= m) => Ok(s),
            _ => Err(self.malformed(format!("{op} on an empty stack"))),
        }
    }

    fn top(&mut self, op: &str) -> Result<&mut Slot, FormatError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.malformed(format!("{op} on an empty stack")));
        }
        let (file, offset) = (self.file, self.op_at as u64);
        self.stack.last_mut().ok_or_else(|| FormatError::PickleMalformed {
            file: file.to_string(),
            offset,
            reason: format!("{op} on an empty stack"),
        })
    }

    /// The values since the last MARK, which is removed.
    fn pop_mark(&mut self, op: &str) -> Result<Vec<Slot>, FormatError> {
        let mark = self.marks.pop().ok_or_else(|| self.malformed(format!("{op} without a MARK")))?;
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    /// A container of `items`.
    fn container(&mut self, items: Vec<Slot>, make: impl FnOnce(Vec<Value>) -> Value) -> Result<(), FormatError> {
        let depth = items.iter().map(|s| s.depth + 1).max().unwrap_or(1);
        let size = items.iter().fold(1u64, |a, s| a.saturating_add(s.size));
        self.charge(1)?;
        let value = make(items.into_iter().map(|s| s.value).collect());
        self.push(Slot { value, depth, size })
    }

    fn memo_put(&mut self, key: u64) -> Result<(), FormatError> {
        let slot = self.stack.last().cloned().ok_or_else(|| self.malformed("memo put on an empty stack"))?;
        if key >= MAX_MEMO {
            return Err(self.over("memo index", key, MAX_MEMO));
        }
        if !self.memo.contains_key(&key) && self.memo.len() as u64 >= MAX_MEMO {
            return Err(self.over("memo entries", self.memo.len() as u64 + 1, MAX_MEMO));
        }
        // The memo's copy costs what the value does.
        self.charge(slot.size)?;
        self.memo.insert(key, slot);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<(), FormatError> {
        let slot =
            self.memo.get(&key).cloned().ok_or_else(|| self.malformed(format!("memo key {key} was never stored")))?;
        self.charge(slot.size)?;
        self.push(slot)
    }

    fn run(&mut self) -> Result<Value, FormatError> {
        loop {
            self.op_at = self.pos;
            let op = *self.take(1, "opcode")?.first().unwrap_or(&0);
            match op {
                0x80 => {
                    let proto = self.uint(1, "protocol")?;
                    if !(2..=5).contains(&proto) {
                        return Err(self.malformed(format!("pickle protocol {proto}; this reader reads 2–5")));
                    }
                }
                0x95 => {
                    self.uint(8, "frame length")?;
                }
                b'.' => {
                    let top = self.pop("STOP")?;
                    return Ok(top.value);
                }
                b'}' => self.push_leaf(Value::Dict(Vec::new()))?,
                b']' => self.push_leaf(Value::List(Vec::new()))?,
                b')' => self.push_leaf(Value::Tuple(Vec::new()))?,
                0x8f | 0x90 => {
                    // EMPTY_SET / ADDITEMS: a set is kept as a list.
                    if op == 0x90 {
                        self.push_leaf(Value::List(Vec::new()))?;
                    } else {
                        let items = self.pop_mark("ADDITEMS")?;
                        self.extend_list(items, "ADDITEMS")?;
                    }
                }
                0x91 => {
                    let items = self.pop_mark("FROZENSET")?;
                    self.container(items, Value::List)?;
                }
                b'(' => {
                    if self.marks.len() as u64 >= MAX_DEPTH {
                        return Err(self.over("nesting depth", self.marks.len() as u64 + 1, MAX_DEPTH));
                    }
                    self.marks.push(self.stack.len());
                }
                b'1' => {
                    self.pop_mark("POP_MARK")?;
                }
                b'0' => {
                    self.pop("POP")?;
                }
                b'2' => {
                    let top = self.top("DUP")?.clone();
                    self.charge(top.size)?;
                    self.push(top)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() < floor + n {
                        return Err(self.malformed(format!("TUPLE{n} with fewer than {n} values on the stack")));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.container(items, Value::Tuple)?;
                }
                b't' => {
                    let items = self.pop_mark("TUPLE")?;
                    self.container(items, Value::Tuple)?;
                }
                b'l' => {
                    let items = self.pop_mark("LIST")?;
                    self.container(items, Value::List)?;
                }
                b'd' => {
                    let items = self.pop_mark("DICT")?;
                    self.push_leaf(Value::Dict(Vec::new()))?;
                    self.set_items(items, "DICT")?;
                }
                b'a' => {
                    let item = self.pop("APPEND")?;
                    self.extend_list(vec![item], "APPEND")?;
                }
                b'e' => {
                    let items = self.pop_mark("APPENDS")?;
                    self.extend_list(items, "APPENDS")?;
                }
                b's' => {
                    let value = self.pop("SETITEM")?;
                    let key = self.pop("SETITEM")?;
                    self.set_items(vec![key, value], "SETITEM")?;
                }
                b'u' => {
                    let items = self.pop_mark("SETITEMS")?;
                    self.set_items(items, "SETITEMS")?;
                }
                b'X' | 0x8d | 0x8c => {
                    let n = match op {
                        b'X' => 4,
                        0x8d => 8,
                        _ => 1,
                    };
                    let bytes = self.sized(n, "string")?;
                    let s = self.text(bytes)?;
                    self.push_leaf(Value::Str(s))?;
                }
                b'U' | b'T' => {
                    // Python 2 byte strings: torch's legacy keys are ASCII.
                    let bytes = self.sized(if op == b'U' { 1 } else { 4 }, "string")?;
                    self.push_leaf(Value::Str(String::from_utf8_lossy(bytes).into_owned()))?;
                }
                b'C' | b'B' | 0x8e | 0x96 => {
                    let n = match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    };
                    let bytes = self.sized(n, "bytes")?.to_vec();
                    self.push_leaf(Value::Bytes(bytes))?;
                }
                b'q' => {
                    let k = self.uint(1, "memo index")?;
                    self.memo_put(k)?;
                }
                b'r' => {
                    let k = self.uint(4, "memo index")?;
                    self.memo_put(k)?;
                }
                0x94 => {
                    let k = self.memo.len() as u64;
                    self.memo_put(k)?;
                }
                b'h' => {
                    let k = self.uint(1, "memo index")?;
                    self.memo_get(k)?;
                }
                b'j' => {
                    let k = self.uint(4, "memo index")?;
                    self.memo_get(k)?;
                }
                b'J' => {
                    let v = self.uint(4, "int")? as u32 as i32;
                    self.push_leaf(Value::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.uint(1, "int")?;
                    self.push_leaf(Value::Int(v as i64))?;
                }
                b'M' => {
                    let v = self.uint(2, "int")?;
                    self.push_leaf(Value::Int(v as i64))?;
                }
                0x8a | 0x8b => {
                    let bytes = self.sized(if op == 0x8a { 1 } else { 4 }, "long")?;
                    let value = long_value(bytes);
                    self.push_leaf(value)?;
                }
                0x88 => self.push_leaf(Value::Bool(true))?,
                0x89 => self.push_leaf(Value::Bool(false))?,
                b'N' => self.push_leaf(Value::None)?,
                b'G' => {
                    let b = self.take(8, "float")?;
                    let mut w = [0u8; 8];
                    w.copy_from_slice(b);
                    self.push_leaf(Value::Float(f64::from_be_bytes(w)))?;
                }
                b'c' => {
                    let module = self.line("GLOBAL module")?;
                    let name = self.line("GLOBAL name")?;
                    self.push_leaf(Value::Global { module, name })?;
                }
                0x93 => {
                    let name = self.pop("STACK_GLOBAL")?.value;
                    let module = self.pop("STACK_GLOBAL")?.value;
                    match (module, name) {
                        (Value::Str(module), Value::Str(name)) => self.push_leaf(Value::Global { module, name })?,
                        _ => return Err(self.malformed("STACK_GLOBAL of values that are not strings")),
                    }
                }
                b'R' => {
                    let args = self.pop("REDUCE")?;
                    let func = self.pop("REDUCE")?;
                    let (depth, size) = (args.depth.max(func.depth), args.size.saturating_add(1));
                    let value = reduce(func.value, args.value);
                    self.charge(1)?;
                    self.push(Slot { value, depth, size })?;
                }
                0x81 => {
                    let _args = self.pop("NEWOBJ")?;
                    let cls = self.pop("NEWOBJ")?;
                    self.push_leaf(newobj(cls.value))?;
                }
                0x92 => {
                    let _kwargs = self.pop("NEWOBJ_EX")?;
                    let _args = self.pop("NEWOBJ_EX")?;
                    let cls = self.pop("NEWOBJ_EX")?;
                    self.push_leaf(newobj(cls.value))?;
                }
                b'b' => {
                    // BUILD sets an object's state: dicts (an OrderedDict's `_metadata`), tensors and
                    // unreadable objects stay what they are.
                    let _state = self.pop("BUILD")?;
                    self.top("BUILD")?;
                }
                b'Q' => {
                    let pid = self.pop("BINPERSID")?;
                    let value = persistent(pid.value);
                    self.push_leaf(value)?;
                }
                0x97 | 0x98 => {
                    return Err(
                        self.malformed("out-of-band buffers (protocol 5 NEXT_BUFFER), which torch.save never writes")
                    )
                }
                other => {
                    return Err(FormatError::PickleBadOpcode {
                        file: self.file.to_string(),
                        offset: self.op_at as u64,
                        opcode: other,
                    })
                }
            }
        }
    }

    /// A newline-terminated ASCII line (GLOBAL's operands).
    fn line(&mut self, what: &str) -> Result<String, FormatError> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        let n = rest.iter().take(4096).position(|&b| b == b'\n').ok_or_else(|| self.truncated(what))?;
        let bytes = self.take(n as u64 + 1, what)?;
        self.text(bytes.get(..n).unwrap_or(&[]))
    }

    fn extend_list(&mut self, items: Vec<Slot>, op: &str) -> Result<(), FormatError> {
        let depth = items.iter().map(|s| s.depth + 1).max().unwrap_or(0);
        let size: u64 = items.iter().fold(0u64, |a, s| a.saturating_add(s.size));
        let top = self.top(op)?;
        top.depth = top.depth.max(depth).max(1);
        top.size = top.size.saturating_add(size);
        let new_depth = top.depth;
        match &mut top.value {
            Value::List(list) => list.extend(items.into_iter().map(|s| s.value)),
            // An unreadable object's list items (a custom container) are dropped with it.
            Value::Unreadable { .. } => {}
            other => {
                let kind = other.kind();
                return Err(self.malformed(format!("{op} to {kind}, not a list")));
            }
        }
        if new_depth > MAX_DEPTH {
            return Err(self.over("nesting depth", new_depth, MAX_DEPTH));
        }
        Ok(())
    }

    fn set_items(&mut self, items: Vec<Slot>, op: &str) -> Result<(), FormatError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed(format!("{op} with an odd number of keys and values")));
        }
        let depth = items.iter().map(|s| s.depth + 1).max().unwrap_or(0);
        let size: u64 = items.iter().fold(0u64, |a, s| a.saturating_add(s.size));
        let top = self.top(op)?;
        top.depth = top.depth.max(depth).max(1);
        top.size = top.size.saturating_add(size);
        let new_depth = top.depth;
        match &mut top.value {
            Value::Dict(dict) => {
                let mut it = items.into_iter().map(|s| s.value);
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    dict.push((k, v));
                }
            }
            Value::Unreadable { .. } => {}
            other => {
                let kind = other.kind();
                return Err(self.malformed(format!("{op} on {kind}, not a dict")));
            }
        }
        if new_depth > MAX_DEPTH {
            return Err(self.over("nesting depth", new_depth, MAX_DEPTH));
        }
        Ok(())
    }
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
