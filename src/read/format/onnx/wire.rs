//! Protocol buffers' wire format, read in windows from a byte source: varints, tags and
//! length-delimited fields as offsets (a payload is located, never read, unless asked for), each
//! failure an ONNX error naming the offset and what was being read.

use super::MAX_STRING_BYTES;
use crate::read::format::FormatError;
use crate::read::source::ByteSource;

/// Bytes read per window of the file.
const WINDOW: u64 = 64 << 10;

/// A file read in windows.
pub(super) struct Reader<'a> {
    source: &'a dyn ByteSource,
    pub(super) len: u64,
    base: u64,
    buf: Vec<u8>,
}

/// One field of a message.
pub(super) struct Field {
    pub(super) number: u64,
    /// Offset of its tag, for messages.
    pub(super) at: u64,
    pub(super) value: Value,
}

pub(super) enum Value {
    Varint(u64),
    Fixed64,
    Fixed32,
    /// A length-delimited payload at `[start, end)`.
    Len {
        start: u64,
        end: u64,
    },
}

impl<'a> Reader<'a> {
    pub(super) fn new(source: &'a dyn ByteSource) -> Self {
        Reader { source, len: source.len(), base: 0, buf: Vec::new() }
    }

    pub(super) fn file(&self) -> String {
        self.source.name().to_string()
    }

    pub(super) fn truncated(&self, offset: u64, what: &str) -> FormatError {
        FormatError::OnnxTruncated { file: self.file(), offset, what: what.to_string(), file_len: self.len }
    }

    pub(super) fn malformed(&self, offset: u64, what: &str, reason: String) -> FormatError {
        FormatError::OnnxMalformed { file: self.file(), offset, what: what.to_string(), reason }
    }

    pub(super) fn byte(&mut self, offset: u64, what: &str) -> Result<u8, FormatError> {
        if offset < self.base || offset - self.base >= self.buf.len() as u64 {
            if offset >= self.len {
                return Err(self.truncated(offset, what));
            }
            // offset < len, so the window is at least one byte; at most WINDOW fits in usize.
            let n = WINDOW.min(self.len - offset) as usize;
            self.buf.resize(n, 0);
            self.source.read_at(offset, &mut self.buf)?;
            self.base = offset;
        }
        // In the window by the check above.
        usize::try_from(offset - self.base)
            .ok()
            .and_then(|i| self.buf.get(i).copied())
            .ok_or_else(|| self.truncated(offset, what))
    }

    /// `[start, end)`, at most [`MAX_SMALL_BYTES`] or [`MAX_STRING_BYTES`] long (the caller checks).
    pub(super) fn bytes(&mut self, start: u64, end: u64) -> Result<Vec<u8>, FormatError> {
        let len = end.saturating_sub(start);
        let n = usize::try_from(len).map_err(|_| self.truncated(start, "a field"))?;
        let mut out = vec![0u8; n];
        self.source.read_at(start, &mut out)?;
        Ok(out)
    }

    pub(super) fn varint(&mut self, pos: &mut u64, end: u64, what: &str) -> Result<u64, FormatError> {
        let at = *pos;
        let mut value = 0u64;
        for i in 0..10u32 {
            if *pos >= end {
                return Err(if end >= self.len {
                    self.truncated(at, what)
                } else {
                    self.malformed(at, what, "a varint runs past the end of its message".into())
                });
            }
            let b = self.byte(*pos, what)?;
            *pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.malformed(at, what, "a varint longer than 10 bytes".into()))
    }

    /// The next field of the message `[.., end)` at `pos`, or `None` at its end.
    pub(super) fn field(&mut self, pos: &mut u64, end: u64, what: &str) -> Result<Option<Field>, FormatError> {
        if *pos >= end {
            return Ok(None);
        }
        let at = *pos;
        let tag = self.varint(pos, end, what)?;
        let number = tag >> 3;
        if number == 0 {
            return Err(self.malformed(at, what, "field number 0 (not a protobuf message here)".into()));
        }
        let skip = |r: &mut Self, pos: &mut u64, n: u64| -> Result<(), FormatError> {
            match pos.checked_add(n) {
                Some(next) if next <= end => {
                    *pos = next;
                    Ok(())
                }
                _ if end >= r.len => Err(r.truncated(at, what)),
                _ => Err(r.malformed(at, what, format!("field {number} runs past the end of its message"))),
            }
        };
        let value = match tag & 7 {
            0 => Value::Varint(self.varint(pos, end, what)?),
            1 => {
                skip(self, pos, 8)?;
                Value::Fixed64
            }
            5 => {
                skip(self, pos, 4)?;
                Value::Fixed32
            }
            2 => {
                let len = self.varint(pos, end, what)?;
                let start = *pos;
                skip(self, pos, len)?;
                Value::Len { start, end: *pos }
            }
            wire => {
                return Err(self.malformed(
                    at,
                    what,
                    format!("field {number} has wire type {wire}, which ONNX never uses"),
                ))
            }
        };
        Ok(Some(Field { number, at, value }))
    }

    pub(super) fn string(&mut self, f: &Field, what: &str) -> Result<String, FormatError> {
        let Value::Len { start, end } = f.value else {
            return Err(self.malformed(f.at, what, "a string field that is not length-delimited".into()));
        };
        if end - start > MAX_STRING_BYTES {
            return Err(FormatError::OnnxOverLimit {
                file: self.file(),
                offset: f.at,
                what: format!("{what} (bytes)"),
                value: end - start,
                limit: MAX_STRING_BYTES,
            });
        }
        Ok(String::from_utf8_lossy(&self.bytes(start, end)?).into_owned())
    }

    pub(super) fn message(&self, f: &Field, what: &str) -> Result<(u64, u64), FormatError> {
        match f.value {
            Value::Len { start, end } => Ok((start, end)),
            _ => Err(self.malformed(f.at, what, "a message field that is not length-delimited".into())),
        }
    }

    pub(super) fn over(&self, offset: u64, what: &str, value: u64, limit: u64) -> Result<(), FormatError> {
        if value > limit {
            return Err(FormatError::OnnxOverLimit { file: self.file(), offset, what: what.to_string(), value, limit });
        }
        Ok(())
    }
}
