//! The pickle machine: the opcodes run over a stack, marks and a memo, every count charged before it
//! allocates.
//!
//! Values live in an arena ([`Node`]s by index); the stack, the memo and the containers hold
//! indices. `BINPUT`/`PUT`/`MEMOIZE` store the index of the value on top of the stack and
//! `BINGET`/`GET`/`DUP` push that same index again, so a memo entry is the *same* object, as in
//! Python: a dict or list memoised and then changed by `SETITEM(S)`/`APPEND(S)` is changed for
//! every reference to it, and a fetch costs one reference, never a copy. The budget is charged once
//! per value created (and once per reference pushed); strings and bytes are written out shared
//! ([`Value::Str`] holds an `Arc`), so a string fetched a million times is held once.
//!
//! The answer is a tree of [`Value`]s: a container reached by several references is written out
//! once per reference, each node written charged against [`MAX_VALUES`]; a container that contains
//! itself (which Python can build) is refused with its offset, as is a tree deeper than
//! [`MAX_DEPTH`].

use std::collections::HashMap;
use std::sync::Arc;

use super::*;

type Id = usize;

/// A value in the arena.
enum Node {
    /// Anything but a container: never a `List`, `Tuple` or `Dict`.
    Leaf(Value),
    List(Vec<Id>),
    Tuple(Vec<Id>),
    /// In the order set; a key set again is merged as Python would when the tree is written.
    Dict(Vec<(Id, Id)>),
}

impl Node {
    fn kind(&self) -> String {
        match self {
            Node::Leaf(v) => v.kind(),
            Node::List(_) => "a list".into(),
            Node::Tuple(_) => "a tuple".into(),
            Node::Dict(_) => "a dict".into(),
        }
    }
}

/// What a parse did, counted deterministically (for tests of how the work grows).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseStats {
    /// Opcodes run.
    pub opcodes: u64,
    /// Distinct values created (arena nodes).
    pub nodes: u64,
    /// What the budget [`MAX_VALUES`] was charged while parsing: each value created, each
    /// reference pushed by a memo fetch or `DUP`, each item a rebuilt container copies.
    pub values: u64,
    /// String, bytes and name bytes created (each value's once, however often it is fetched),
    /// charged against [`MAX_PAYLOAD_BYTES`].
    pub payload_bytes: u64,
    /// Nodes of the tree written out (a shared container once per reference), charged against
    /// [`MAX_VALUES`].
    pub written: u64,
    /// Bytes copied while writing the tree out (names of globals and storages, tensor shapes;
    /// strings and bytes are shared, not copied), charged against [`MAX_PAYLOAD_BYTES`].
    pub written_bytes: u64,
}

struct Parser<'a> {
    file: &'a str,
    data: &'a [u8],
    pos: usize,
    /// Offset of the opcode being run, for messages.
    op_at: usize,
    nodes: Vec<Node>,
    /// Offset of the opcode that created each node.
    made_at: Vec<usize>,
    /// Each node's nesting depth as far as its own items show (a scalar is 0): refuses a deep
    /// tree while it is built; what a change to a shared container adds below it is checked when
    /// the tree is written.
    depth: Vec<u64>,
    stack: Vec<Id>,
    marks: Vec<usize>,
    memo: HashMap<u64, Id>,
    stats: ParseStats,
}

/// Parses a pickle stream up to its `STOP`. `file` names it in messages (e.g.
/// `model.pt: archive/data.pkl`).
pub fn parse(file: &str, data: &[u8]) -> Result<Value, FormatError> {
    parse_with_stats(file, data).map(|(v, _)| v)
}

/// [`parse`], with what the parse did.
pub fn parse_with_stats(file: &str, data: &[u8]) -> Result<(Value, ParseStats), FormatError> {
    if data.len() as u64 > MAX_PICKLE_BYTES {
        return Err(FormatError::PickleOverLimit {
            file: file.to_string(),
            what: "pickle stream length".to_string(),
            offset: 0,
            value: data.len() as u64,
            limit: MAX_PICKLE_BYTES,
        });
    }
    let mut p = Parser {
        file,
        data,
        pos: 0,
        op_at: 0,
        nodes: Vec::new(),
        made_at: Vec::new(),
        depth: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        stats: ParseStats::default(),
    };
    let top = p.run()?;
    let mut on_path = vec![false; p.nodes.len()];
    let mut value = p.write(top, 0, &mut on_path)?;
    // SETITEM(S) append; a key set again keeps its first place and its last value, as in Python.
    last_value_wins(&mut value);
    Ok((value, p.stats))
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
        self.malformed_at(self.op_at, reason)
    }

    fn malformed_at(&self, at: usize, reason: impl Into<String>) -> FormatError {
        FormatError::PickleMalformed { file: self.file.to_string(), offset: at as u64, reason: reason.into() }
    }

    fn over(&self, what: &str, value: u64, limit: u64) -> FormatError {
        self.over_at(self.op_at, what, value, limit)
    }

    fn over_at(&self, at: usize, what: &str, value: u64, limit: u64) -> FormatError {
        FormatError::PickleOverLimit {
            file: self.file.to_string(),
            what: what.to_string(),
            offset: at as u64,
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

    /// Charges `n` values to the budget.
    fn charge(&mut self, n: u64) -> Result<(), FormatError> {
        self.stats.values = self.stats.values.saturating_add(n);
        if self.stats.values > MAX_VALUES {
            return Err(self.over("number of values", self.stats.values, MAX_VALUES));
        }
        Ok(())
    }

    fn charge_bytes(&mut self, n: u64) -> Result<(), FormatError> {
        self.stats.payload_bytes = self.stats.payload_bytes.saturating_add(n);
        if self.stats.payload_bytes > MAX_PAYLOAD_BYTES {
            return Err(self.over("bytes of strings and names", self.stats.payload_bytes, MAX_PAYLOAD_BYTES));
        }
        Ok(())
    }

    /// A new node, charged (one value, and a leaf's bytes), not yet on the stack.
    fn alloc(&mut self, node: Node) -> Result<Id, FormatError> {
        self.charge(1)?;
        if let Node::Leaf(v) = &node {
            let (shared, owned) = held_bytes(v);
            self.charge_bytes(shared.saturating_add(owned))?;
        }
        let depth = match &node {
            Node::Leaf(_) => 0,
            Node::List(items) | Node::Tuple(items) => self.depth_over(items.iter().copied()),
            Node::Dict(items) => self.depth_over(items.iter().flat_map(|&(k, v)| [k, v])),
        };
        if depth > MAX_DEPTH {
            return Err(self.over("nesting depth", depth, MAX_DEPTH));
        }
        self.stats.nodes += 1;
        self.nodes.push(node);
        self.made_at.push(self.op_at);
        self.depth.push(depth);
        Ok(self.nodes.len() - 1)
    }

    /// The depth of a container of `items`.
    fn depth_over(&self, items: impl Iterator<Item = Id>) -> u64 {
        items.map(|i| self.depth[i] + 1).max().unwrap_or(1)
    }

    /// `target` gets `items`: its depth grows to hold them.
    fn deepen(&mut self, target: Id, items: &[Id]) -> Result<(), FormatError> {
        let depth = self.depth_over(items.iter().copied()).max(self.depth[target]);
        if depth > MAX_DEPTH {
            return Err(self.over("nesting depth", depth, MAX_DEPTH));
        }
        self.depth[target] = depth;
        Ok(())
    }

    fn push_new(&mut self, node: Node) -> Result<(), FormatError> {
        let id = self.alloc(node)?;
        self.stack.push(id);
        Ok(())
    }

    fn push_leaf(&mut self, value: Value) -> Result<(), FormatError> {
        self.push_new(Node::Leaf(value))
    }

    /// Pushes another reference to an existing value (a memo fetch, `DUP`).
    fn push_ref(&mut self, id: Id) -> Result<(), FormatError> {
        self.charge(1)?;
        self.stack.push(id);
        Ok(())
    }

    fn node(&self, id: Id) -> &Node {
        // Every index on the stack, in the memo or in a container was returned by `alloc`.
        &self.nodes[id]
    }

    fn leaf(&self, id: Id) -> Option<&Value> {
        match self.node(id) {
            Node::Leaf(v) => Some(v),
            _ => None,
        }
    }

    fn pop(&mut self, op: &str) -> Result<Id, FormatError> {
        match self.stack.pop() {
            Some(s) if self.marks.last().is_none_or(|&m| self.stack.len() >= m) => Ok(s),
            _ => Err(self.malformed(format!("{op} on an empty stack"))),
        }
    }

    fn top(&self, op: &str) -> Result<Id, FormatError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(&id) if self.stack.len() > floor => Ok(id),
            _ => Err(self.malformed(format!("{op} on an empty stack"))),
        }
    }

    /// The values since the last MARK, which is removed.
    fn pop_mark(&mut self, op: &str) -> Result<Vec<Id>, FormatError> {
        let mark = self.marks.pop().ok_or_else(|| self.malformed(format!("{op} without a MARK")))?;
        Ok(self.stack.split_off(mark.min(self.stack.len())))
    }

    fn memo_put(&mut self, key: u64) -> Result<(), FormatError> {
        let id = *self.stack.last().ok_or_else(|| self.malformed("memo put on an empty stack"))?;
        if key >= MAX_MEMO {
            return Err(self.over("memo index", key, MAX_MEMO));
        }
        if !self.memo.contains_key(&key) && self.memo.len() as u64 >= MAX_MEMO {
            return Err(self.over("memo entries", self.memo.len() as u64 + 1, MAX_MEMO));
        }
        // The memo holds the same value, not a copy.
        self.memo.insert(key, id);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Result<(), FormatError> {
        let id = *self.memo.get(&key).ok_or_else(|| self.malformed(format!("memo key {key} was never stored")))?;
        self.push_ref(id)
    }

    /// The tree of `id`, each node written charged; `on_path` marks the containers being written.
    fn write(&mut self, id: Id, depth: u64, on_path: &mut [bool]) -> Result<Value, FormatError> {
        let at = self.made_at[id];
        self.stats.written = self.stats.written.saturating_add(1);
        if self.stats.written > MAX_VALUES {
            return Err(self.over_at(
                at,
                "number of values once values shared by the memo are written out as a tree",
                self.stats.written,
                MAX_VALUES,
            ));
        }
        if let Node::Leaf(v) = self.node(id) {
            let v = v.clone();
            self.stats.written_bytes = self.stats.written_bytes.saturating_add(held_bytes(&v).1);
            if self.stats.written_bytes > MAX_PAYLOAD_BYTES {
                return Err(self.over_at(
                    at,
                    "bytes of names copied once values shared by the memo are written out as a tree",
                    self.stats.written_bytes,
                    MAX_PAYLOAD_BYTES,
                ));
            }
            return Ok(v);
        }
        if on_path[id] {
            let kind = self.node(id).kind();
            return Err(self.malformed_at(
                at,
                format!(
                    "{kind} that contains itself (through the memo); Python builds such a cycle, but a \
                     checkpoint's tree never has one and Orthoscope reads trees only"
                ),
            ));
        }
        if depth >= MAX_DEPTH {
            return Err(self.over_at(at, "nesting depth", depth + 1, MAX_DEPTH));
        }
        on_path[id] = true;
        let children: Vec<Id> = match self.node(id) {
            Node::List(items) | Node::Tuple(items) => items.clone(),
            Node::Dict(items) => items.iter().flat_map(|&(k, v)| [k, v]).collect(),
            Node::Leaf(_) => Vec::new(),
        };
        let mut out = Vec::with_capacity(children.len());
        for c in children {
            out.push(self.write(c, depth + 1, on_path)?);
        }
        on_path[id] = false;
        Ok(match self.node(id) {
            Node::List(_) => Value::List(out),
            Node::Tuple(_) => Value::Tuple(out),
            _ => {
                let mut pairs = Vec::with_capacity(out.len() / 2);
                let mut it = out.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                Value::Dict(pairs)
            }
        })
    }

    /// The items of a tuple or list of non-negative ints.
    fn uint_list(&self, id: Id) -> Option<Vec<u64>> {
        match self.node(id) {
            Node::Tuple(items) | Node::List(items) => items
                .iter()
                .map(|&i| match self.leaf(i) {
                    Some(Value::Int(n)) => u64::try_from(*n).ok(),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    fn unreadable(&mut self, global: String) -> Result<Id, FormatError> {
        self.alloc(Node::Leaf(Value::Unreadable { global }))
    }

    /// What calling `func(*args)` would build, for the globals torch writes; anything else is
    /// [`Value::Unreadable`].
    fn reduce(&mut self, func: Id, args: Id) -> Result<Id, FormatError> {
        let func_name = match self.node(func) {
            Node::Leaf(v) => global_name(v),
            other => other.kind(),
        };
        let (Some(Value::Global { module, name }), Node::Tuple(args)) = (self.leaf(func), self.node(args)) else {
            return self.unreadable(func_name);
        };
        let args = args.clone();
        match (module.as_str(), name.as_str()) {
            ("collections", "OrderedDict") => match args.as_slice() {
                [] => self.alloc(Node::Dict(Vec::new())),
                [pairs] => {
                    let Node::List(pairs) = self.node(*pairs) else { return self.unreadable(func_name) };
                    let mut dict = Vec::with_capacity(pairs.len());
                    for &pair in pairs {
                        match self.node(pair) {
                            Node::Tuple(kv) | Node::List(kv) if kv.len() == 2 => dict.push((kv[0], kv[1])),
                            _ => return self.unreadable(func_name),
                        }
                    }
                    self.charge(dict.len() as u64)?;
                    self.alloc(Node::Dict(dict))
                }
                _ => self.unreadable(func_name),
            },
            ("torch._utils", "_rebuild_tensor_v2" | "_rebuild_tensor") => {
                let rebuilt = format!("{module}.{name}");
                let [storage, offset, size, stride, ..] = args.as_slice() else { return self.unreadable(func_name) };
                match (self.leaf(*storage), self.leaf(*offset)) {
                    (Some(Value::Storage(storage)), Some(Value::Int(offset))) => {
                        match (u64::try_from(*offset), self.uint_list(*size), self.uint_list(*stride)) {
                            (Ok(storage_offset), Some(size), Some(stride)) if size.len() == stride.len() => {
                                let t = Tensor { storage: storage.clone(), storage_offset, size, stride };
                                self.alloc(Node::Leaf(Value::Tensor(t)))
                            }
                            _ => self.unreadable(format!("{rebuilt} with a negative or odd shape")),
                        }
                    }
                    (Some(Value::Unreadable { global }), _) => {
                        let global = global.clone();
                        self.unreadable(global)
                    }
                    _ => self.unreadable(func_name),
                }
            }
            ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
                match args.first().map(|&a| (a, self.leaf(a))) {
                    // The parameter's data, the same tensor.
                    Some((data, Some(Value::Tensor(_)))) => Ok(data),
                    Some((_, Some(Value::Unreadable { global }))) => {
                        let global = global.clone();
                        self.unreadable(global)
                    }
                    _ => self.unreadable(func_name),
                }
            }
            ("torch", "Size") => match args.as_slice() {
                // An immutable tuple: shared.
                [t] if matches!(self.node(*t), Node::Tuple(_)) => Ok(*t),
                _ => self.unreadable(func_name),
            },
            ("builtins" | "__builtin__", "set" | "frozenset") => match args.as_slice() {
                [] => self.alloc(Node::List(Vec::new())),
                [items] => match self.node(*items) {
                    Node::List(items) => {
                        let items = items.clone();
                        self.charge(items.len() as u64)?;
                        self.alloc(Node::List(items))
                    }
                    _ => self.unreadable(func_name),
                },
                _ => self.unreadable(func_name),
            },
            // Protocol 2 pickles bytes as `_codecs.encode(text, 'latin1')`.
            ("_codecs", "encode") => match args.as_slice() {
                [text, enc] => match (self.leaf(*text), self.leaf(*enc)) {
                    (Some(Value::Str(s)), Some(Value::Str(enc))) if &**enc == "latin1" || &**enc == "latin-1" => {
                        if s.chars().any(|c| u32::from(c) > 0xff) {
                            return Err(self.malformed(
                                "_codecs.encode(text, 'latin1') of a character past U+00FF, which Python refuses",
                            ));
                        }
                        let bytes: Vec<u8> = s.chars().map(|c| u32::from(c) as u8).collect();
                        self.alloc(Node::Leaf(Value::Bytes(bytes.into())))
                    }
                    _ => self.unreadable(func_name),
                },
                _ => self.unreadable(func_name),
            },
            _ => self.unreadable(func_name),
        }
    }

    fn newobj(&mut self, cls: Id) -> Result<(), FormatError> {
        match self.leaf(cls) {
            Some(Value::Global { module, name }) if module == "collections" && name == "OrderedDict" => {
                self.push_new(Node::Dict(Vec::new()))
            }
            Some(v) => {
                let global = global_name(v);
                self.push_leaf(Value::Unreadable { global })
            }
            None => {
                let global = self.node(cls).kind();
                self.push_leaf(Value::Unreadable { global })
            }
        }
    }

    /// A persistent id: torch's `('storage', storage_type, key, location, numel)`.
    fn persistent(&mut self, pid: Id) -> Result<(), FormatError> {
        let items: Option<Vec<Value>> = match self.node(pid) {
            Node::Tuple(items) => items.iter().map(|&i| self.leaf(i).cloned()).collect(),
            _ => None,
        };
        let value = match items {
            Some(items) => persistent(Value::Tuple(items)),
            None => persistent(Value::None),
        };
        self.push_leaf(value)
    }

    /// Runs the opcodes up to `STOP`; the index of the value it returns.
    fn run(&mut self) -> Result<Id, FormatError> {
        loop {
            self.op_at = self.pos;
            let op = *self.take(1, "opcode")?.first().unwrap_or(&0);
            self.stats.opcodes += 1;
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
                b'.' => return self.pop("STOP"),
                b'}' => self.push_new(Node::Dict(Vec::new()))?,
                b']' => self.push_new(Node::List(Vec::new()))?,
                b')' => self.push_new(Node::Tuple(Vec::new()))?,
                0x8f | 0x90 => {
                    // EMPTY_SET / ADDITEMS: a set is kept as a list.
                    if op == 0x8f {
                        self.push_new(Node::List(Vec::new()))?;
                    } else {
                        let items = self.pop_mark("ADDITEMS")?;
                        self.extend_list(items, "ADDITEMS")?;
                    }
                }
                0x91 => {
                    let items = self.pop_mark("FROZENSET")?;
                    self.push_new(Node::List(items))?;
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
                    let top = self.top("DUP")?;
                    self.push_ref(top)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let floor = self.marks.last().copied().unwrap_or(0);
                    if self.stack.len() < floor + n {
                        return Err(self.malformed(format!("TUPLE{n} with fewer than {n} values on the stack")));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push_new(Node::Tuple(items))?;
                }
                b't' => {
                    let items = self.pop_mark("TUPLE")?;
                    self.push_new(Node::Tuple(items))?;
                }
                b'l' => {
                    let items = self.pop_mark("LIST")?;
                    self.push_new(Node::List(items))?;
                }
                b'd' => {
                    let items = self.pop_mark("DICT")?;
                    self.push_new(Node::Dict(Vec::new()))?;
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
                    self.push_leaf(Value::Str(s.into()))?;
                }
                b'U' | b'T' => {
                    // Python 2 byte strings: torch's legacy keys are ASCII.
                    let bytes = self.sized(if op == b'U' { 1 } else { 4 }, "string")?;
                    self.push_leaf(Value::Str(String::from_utf8_lossy(bytes).into()))?;
                }
                b'C' | b'B' | 0x8e | 0x96 => {
                    let n = match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    };
                    let bytes = self.sized(n, "bytes")?;
                    self.push_leaf(Value::Bytes(Arc::from(bytes)))?;
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
                    let name = self.pop("STACK_GLOBAL")?;
                    let module = self.pop("STACK_GLOBAL")?;
                    match (self.leaf(module), self.leaf(name)) {
                        (Some(Value::Str(module)), Some(Value::Str(name))) => {
                            let len = (module.len() + name.len()) as u64;
                            if len > MAX_GLOBAL_NAME {
                                return Err(self.over("length of a global's module and name", len, MAX_GLOBAL_NAME));
                            }
                            let (module, name) = (module.to_string(), name.to_string());
                            self.push_leaf(Value::Global { module, name })?
                        }
                        _ => return Err(self.malformed("STACK_GLOBAL of values that are not strings")),
                    }
                }
                b'R' => {
                    let args = self.pop("REDUCE")?;
                    let func = self.pop("REDUCE")?;
                    let id = self.reduce(func, args)?;
                    self.stack.push(id);
                }
                0x81 => {
                    let _args = self.pop("NEWOBJ")?;
                    let cls = self.pop("NEWOBJ")?;
                    self.newobj(cls)?;
                }
                0x92 => {
                    let _kwargs = self.pop("NEWOBJ_EX")?;
                    let _args = self.pop("NEWOBJ_EX")?;
                    let cls = self.pop("NEWOBJ_EX")?;
                    self.newobj(cls)?;
                }
                b'b' => {
                    // BUILD sets an object's state (its attributes, never a dict's items): dicts (an
                    // OrderedDict's `_metadata`), tensors and unreadable objects stay what they are.
                    let _state = self.pop("BUILD")?;
                    self.top("BUILD")?;
                }
                b'Q' => {
                    let pid = self.pop("BINPERSID")?;
                    self.persistent(pid)?;
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

    /// APPEND(S)/ADDITEMS: the list on top of the stack (the one object, wherever else it is
    /// referenced) gets `items`.
    fn extend_list(&mut self, items: Vec<Id>, op: &str) -> Result<(), FormatError> {
        let top = self.top(op)?;
        if matches!(self.nodes[top], Node::List(_)) {
            self.deepen(top, &items)?;
        }
        match &mut self.nodes[top] {
            Node::List(list) => list.extend(items),
            // An unreadable object's list items (a custom container) are dropped with it.
            Node::Leaf(Value::Unreadable { .. }) => {}
            other => {
                let kind = other.kind();
                return Err(self.malformed(format!("{op} to {kind}, not a list")));
            }
        }
        Ok(())
    }

    /// SETITEM(S)/DICT: the dict on top of the stack (the one object, wherever else it is
    /// referenced) gets the pairs of `items`.
    fn set_items(&mut self, items: Vec<Id>, op: &str) -> Result<(), FormatError> {
        if !items.len().is_multiple_of(2) {
            return Err(self.malformed(format!("{op} with an odd number of keys and values")));
        }
        let top = self.top(op)?;
        if matches!(self.nodes[top], Node::Dict(_)) {
            self.deepen(top, &items)?;
        }
        match &mut self.nodes[top] {
            Node::Dict(dict) => dict.extend(items.chunks_exact(2).map(|kv| (kv[0], kv[1]))),
            Node::Leaf(Value::Unreadable { .. }) => {}
            other => {
                let kind = other.kind();
                return Err(self.malformed(format!("{op} on {kind}, not a dict")));
            }
        }
        Ok(())
    }
}
