//! The GGUF header grammar: metadata entries, tensor infos and their placement in the file, each
//! count and length checked against the bytes left before anything is allocated.

use super::cursor::{Cursor, Short};
use super::value::{GgufExtra, GgufType, GgufValue};
use super::*;
use crate::read::format::TensorInfo;

/// A tensor info as written, before its range is placed in the file.
pub(super) struct RawTensor {
    pub(super) name: String,
    pub(super) ne: Vec<u64>,
    pub(super) ggml_type: u32,
    pub(super) offset: u64,
}

pub(super) struct Parser<'a> {
    pub(super) cur: Cursor<'a>,
    pub(super) name: String,
}

impl Parser<'_> {
    fn short(&self, s: Short, what: String) -> FormatError {
        match s {
            Short::Eof { offset } => {
                FormatError::GgufTruncated { file: self.name.clone(), offset, what, file_len: self.cur.len }
            }
            Short::Read(e) => FormatError::Read(e),
        }
    }

    fn bytes<const N: usize>(&mut self, what: impl FnOnce() -> String) -> Result<[u8; N], FormatError> {
        let mut b = [0u8; N];
        match self.cur.read(&mut b) {
            Ok(()) => Ok(b),
            Err(s) => Err(self.short(s, what())),
        }
    }

    pub(super) fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, FormatError> {
        self.bytes::<4>(what).map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self, what: impl FnOnce() -> String) -> Result<u64, FormatError> {
        self.bytes::<8>(what).map(u64::from_le_bytes)
    }

    fn skip(&mut self, n: u64, what: impl FnOnce() -> String) -> Result<(), FormatError> {
        self.cur.skip(n).map_err(|s| self.short(s, what()))
    }

    /// Fails unless `count` items of at least `min_bytes` each fit in the rest of the file.
    /// (`what` is only formatted on failure: this runs once per token.)
    pub(super) fn check_count(
        &self,
        at: u64,
        count: u64,
        min_bytes: u64,
        what: impl FnOnce() -> String,
        unit: &'static str,
    ) -> Result<(), FormatError> {
        let needed = count.checked_mul(min_bytes);
        let available = self.cur.remaining();
        match needed {
            Some(n) if n <= available => Ok(()),
            _ => Err(FormatError::GgufTooLarge {
                file: self.name.clone(),
                offset: at,
                what: what(),
                claimed: count,
                unit,
                needed: needed.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string()),
                available,
            }),
        }
    }

    pub(super) fn check_limit(
        &self,
        at: u64,
        value: u64,
        limit: u64,
        what: impl FnOnce() -> String,
    ) -> Result<(), FormatError> {
        if value > limit {
            return Err(FormatError::GgufOverLimit { file: self.name.clone(), offset: at, what: what(), value, limit });
        }
        Ok(())
    }

    /// Reads a string's length and checks it; returns the length.
    fn string_len(&mut self, what: &dyn Fn() -> String) -> Result<u64, FormatError> {
        let at = self.cur.pos;
        let len = self.u64(|| format!("length of {}", what()))?;
        self.check_count(self.cur.pos, len, 1, || format!("length of {}", what()), "bytes")
            .map_err(|e| with_offset(e, at))?;
        self.check_limit(at, len, MAX_STRING_BYTES, || format!("length of {}", what()))?;
        Ok(len)
    }

    /// Reads a string (lossily decoded: ggml does not require UTF-8, and a stray byte in one token
    /// should not make the whole model unreadable).
    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String, FormatError> {
        let len = self.string_len(what)?;
        // string_len bounded len by the bytes left in the file and by MAX_STRING_BYTES.
        let mut b = vec![0u8; len as usize];
        self.cur.read(&mut b).map_err(|s| self.short(s, what()))?;
        Ok(match String::from_utf8(b) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn skip_string(&mut self, what: &dyn Fn() -> String) -> Result<(), FormatError> {
        let len = self.string_len(what)?;
        self.skip(len, what)
    }

    fn value_type(&mut self, key: &str, what: &dyn Fn() -> String) -> Result<GgufType, FormatError> {
        let at = self.cur.pos;
        let id = self.u32(what)?;
        GgufType::from_id(id).ok_or_else(|| FormatError::GgufBadValueType {
            file: self.name.clone(),
            offset: at,
            key: key.to_string(),
            value_type: id,
        })
    }

    /// Reads one value of type `ty`. Scalars are always returned; strings and arrays only when
    /// `keep` and the metadata budget allow (`None` otherwise, having read past them).
    fn value(
        &mut self,
        key: &str,
        ty: GgufType,
        depth: u64,
        keep: bool,
        budget: &mut usize,
    ) -> Result<Option<GgufValue>, FormatError> {
        let what = || format!("value of key '{key}'");
        Ok(Some(match ty {
            GgufType::U8 => GgufValue::U8(u8::from_le_bytes(self.bytes::<1>(what)?)),
            GgufType::I8 => GgufValue::I8(i8::from_le_bytes(self.bytes::<1>(what)?)),
            GgufType::U16 => GgufValue::U16(u16::from_le_bytes(self.bytes::<2>(what)?)),
            GgufType::I16 => GgufValue::I16(i16::from_le_bytes(self.bytes::<2>(what)?)),
            GgufType::U32 => GgufValue::U32(u32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::I32 => GgufValue::I32(i32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::F32 => GgufValue::F32(f32::from_le_bytes(self.bytes::<4>(what)?)),
            GgufType::Bool => GgufValue::Bool(self.bytes::<1>(what)?[0] != 0),
            GgufType::U64 => GgufValue::U64(u64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::I64 => GgufValue::I64(i64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::F64 => GgufValue::F64(f64::from_le_bytes(self.bytes::<8>(what)?)),
            GgufType::Str => {
                let len = self.string_len(&what)?;
                let cost = (len as usize).saturating_add(32);
                if !keep || cost > *budget {
                    self.skip(len, what)?;
                    return Ok(None);
                }
                *budget -= cost;
                let mut b = vec![0u8; len as usize];
                self.cur.read(&mut b).map_err(|s| self.short(s, what()))?;
                GgufValue::Str(String::from_utf8_lossy(&b).into_owned())
            }
            GgufType::Array => return self.array(key, depth, keep, budget),
        }))
    }

    fn array(
        &mut self,
        key: &str,
        depth: u64,
        keep: bool,
        budget: &mut usize,
    ) -> Result<Option<GgufValue>, FormatError> {
        let at = self.cur.pos;
        self.check_limit(at, depth + 1, MAX_DEPTH, || format!("array nesting depth of key '{key}'"))?;
        let elem = self.value_type(key, &|| format!("element type of array '{key}'"))?;
        let count_at = self.cur.pos;
        let len = self.u64(|| format!("element count of array '{key}'"))?;
        self.check_count(self.cur.pos, len, elem.min_size(), || format!("array '{key}'"), "elements")
            .map_err(|e| with_offset(e, count_at))?;
        let what = || format!("elements of array '{key}'");
        let kept = keep && len <= MAX_KEPT_ARRAY && *budget >= 64;
        if !kept {
            match elem.fixed_size() {
                // check_count proved len · size fits in the file, so this cannot overflow.
                Some(size) => self.skip(len.saturating_mul(size), what)?,
                None => {
                    for _ in 0..len {
                        match elem {
                            GgufType::Str => self.skip_string(&what)?,
                            _ => {
                                self.array(key, depth + 1, false, budget)?;
                            }
                        }
                    }
                }
            }
            return Ok(keep.then_some(GgufValue::SkippedArray { elem, len }));
        }
        *budget = budget.saturating_sub(64);
        // len <= MAX_KEPT_ARRAY, so the allocation is small.
        let mut items = Vec::with_capacity(len as usize);
        // Once an item cannot be kept (budget spent), the rest are read past and the array dropped.
        let mut complete = true;
        for _ in 0..len {
            let v = self.value(key, elem, depth + 1, complete, budget)?;
            match v {
                Some(v) if complete && *budget >= 16 => {
                    *budget -= 16;
                    items.push(v);
                }
                _ => complete = false,
            }
        }
        Ok(complete.then_some(GgufValue::Array { elem, items }))
    }

    pub(super) fn read_kv(&mut self, index: u64, extra: &mut GgufExtra, budget: &mut usize) -> Result<(), FormatError> {
        let key = self.string(&|| format!("key of metadata entry {index}"))?;
        let type_at = self.cur.pos;
        let ty = self.value_type(&key, &|| format!("value type of key '{key}'"))?;
        let wrong = |p: &Self, expected: &'static str, found: String| FormatError::GgufWrongType {
            file: p.name.clone(),
            offset: type_at,
            key: key.clone(),
            expected,
            found,
        };
        let value = match key.as_str() {
            "tokenizer.ggml.tokens" => {
                if ty != GgufType::Array {
                    return Err(wrong(self, "an array of strings", ty.name().to_string()));
                }
                extra.tokens = self.tokens(&key)?;
                Some(GgufValue::SkippedArray { elem: GgufType::Str, len: extra.tokens.len() as u64 })
            }
            _ => {
                let keep = extra.metadata_complete || key == "general.architecture";
                self.value(&key, ty, 0, keep, budget)?
            }
        };
        match key.as_str() {
            "general.alignment" => {
                let a = value
                    .as_ref()
                    .and_then(GgufValue::as_u64)
                    .ok_or_else(|| wrong(self, "an unsigned integer", ty.name().to_string()))?;
                if a == 0 || !a.is_power_of_two() {
                    return Err(FormatError::GgufBadAlignment { file: self.name.clone(), alignment: a });
                }
                extra.alignment = a;
            }
            "split.no" | "split.count" | "split.tensors.count" => {
                let n = value
                    .as_ref()
                    .and_then(GgufValue::as_u64)
                    .ok_or_else(|| wrong(self, "a non-negative integer", ty.name().to_string()))?;
                match key.as_str() {
                    "split.no" => extra.split_no = Some(n),
                    "split.count" => extra.split_count = Some(n),
                    _ => extra.split_tensors_count = Some(n),
                }
            }
            _ => {}
        }
        if extra.metadata_complete {
            match value {
                Some(v) if *budget >= key.len() + 32 => {
                    *budget -= key.len() + 32;
                    extra.metadata.push((key, v));
                }
                _ => extra.metadata_complete = false,
            }
        }
        Ok(())
    }

    /// Reads the `tokenizer.ggml.tokens` array (after its value type) into strings.
    fn tokens(&mut self, key: &str) -> Result<Vec<String>, FormatError> {
        let elem_at = self.cur.pos;
        let elem = self.value_type(key, &|| format!("element type of array '{key}'"))?;
        if elem != GgufType::Str {
            return Err(FormatError::GgufWrongType {
                file: self.name.clone(),
                offset: elem_at,
                key: key.to_string(),
                expected: "an array of strings",
                found: format!("an array of {}", elem.name()),
            });
        }
        let count_at = self.cur.pos;
        let len = self.u64(|| format!("element count of array '{key}'"))?;
        self.check_count(self.cur.pos, len, 8, || format!("array '{key}'"), "strings")
            .map_err(|e| with_offset(e, count_at))?;
        self.check_limit(count_at, len, MAX_TOKENS, || format!("element count of array '{key}'"))?;
        let mut tokens = Vec::with_capacity(len as usize);
        for i in 0..len {
            tokens.push(self.string(&|| format!("token {i} of '{key}'"))?);
        }
        Ok(tokens)
    }

    pub(super) fn read_tensor_info(&mut self, index: u64) -> Result<RawTensor, FormatError> {
        let name = self.string(&|| format!("name of tensor info {index}"))?;
        let dims_at = self.cur.pos;
        let n_dims = self.u32(|| format!("n_dims of tensor '{name}'"))?;
        self.check_limit(dims_at, n_dims.into(), MAX_DIMS, || format!("n_dims of tensor '{name}'"))?;
        let mut ne = Vec::with_capacity(n_dims as usize);
        for d in 0..n_dims {
            ne.push(self.u64(|| format!("ne[{d}] of tensor '{name}'"))?);
        }
        let ggml_type = self.u32(|| format!("type of tensor '{name}'"))?;
        let offset = self.u64(|| format!("data offset of tensor '{name}'"))?;
        Ok(RawTensor { name, ne, ggml_type, offset })
    }

    /// Turns tensor infos into [`TensorInfo`]s with absolute, checked byte ranges.
    pub(super) fn place_tensors(
        &self,
        raw: Vec<RawTensor>,
        data_start: u64,
        alignment: u64,
        file: usize,
    ) -> Result<Vec<TensorInfo>, FormatError> {
        let file_len = self.cur.len;
        // Starts of all tensors, sorted: a tensor of unknown type ends where the next one starts.
        let mut starts: Vec<u64> = raw.iter().filter_map(|t| data_start.checked_add(t.offset)).collect();
        starts.sort_unstable();
        let mut out = Vec::with_capacity(raw.len());
        for t in raw {
            let dtype = dtype_from_ggml(t.ggml_type);
            let bad_shape = |reason: String| FormatError::GgufBadShape {
                file: self.name.clone(),
                tensor: t.name.clone(),
                ne: t.ne.clone(),
                dtype: dtype.name().to_string(),
                reason,
            };
            let past_eof =
                |end: u64| FormatError::PastEof { file: self.name.clone(), tensor: t.name.clone(), end, file_len };
            // ggml places every tensor at a multiple of the alignment and refuses files that do not.
            if !t.offset.is_multiple_of(alignment) {
                return Err(FormatError::GgufMisalignedTensor {
                    file: self.name.clone(),
                    tensor: t.name.clone(),
                    offset: t.offset,
                    alignment,
                });
            }
            let start = data_start.checked_add(t.offset).ok_or_else(|| past_eof(u64::MAX))?;
            let end = match dtype.block() {
                Some((per_block, _)) => {
                    // ggml requires each row (ne[0]) to be whole blocks; rows are decoded alone.
                    let row = t.ne.first().copied().unwrap_or(1);
                    if row % per_block != 0 {
                        return Err(bad_shape(format!(
                            "ne[0] = {row} is not a multiple of the {per_block}-element block"
                        )));
                    }
                    let elems =
                        t.ne.iter()
                            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                            .ok_or_else(|| bad_shape("the element count overflows 64 bits".to_string()))?;
                    let bytes = dtype
                        .bytes_for(elems)
                        .ok_or_else(|| bad_shape("the byte count overflows 64 bits".to_string()))?;
                    start.checked_add(bytes).ok_or_else(|| past_eof(u64::MAX))?
                }
                // Unknown layout: listed (and refused if analysed), spanning up to the next tensor.
                None => starts.iter().copied().find(|&s| s > start).unwrap_or(file_len).max(start),
            };
            if end > file_len {
                return Err(past_eof(end));
            }
            // ggml lists ne innermost first; TensorInfo is row-major, outermost first.
            let shape: Vec<u64> = t.ne.iter().rev().copied().collect();
            out.push(TensorInfo {
                name: t.name,
                dtype,
                shape,
                byte_range: (start, end),
                file,
                layout: Default::default(),
            });
        }
        Ok(out)
    }
}

/// Sets the offset reported by a [`FormatError::GgufTooLarge`] to where the count field starts.
fn with_offset(e: FormatError, at: u64) -> FormatError {
    match e {
        FormatError::GgufTooLarge { file, what, claimed, unit, needed, available, .. } => {
            FormatError::GgufTooLarge { file, offset: at, what, claimed, unit, needed, available }
        }
        other => other,
    }
}
