//! The pickle machine: the opcodes run over a stack, marks and a memo, every count charged before it
//! allocates.

use std::collections::HashMap;

use super::*;

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
