//! NumPy `.npy` reader (format versions 1.0, 2.0, 3.0).
//!
//! Layout (numpy `lib/format.py`): `\x93NUMPY`, major u8, minor u8, header length (u16 LE for
//! version 1, u32 LE for 2 and 3), then the header: a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (50257, 768), }` padded with spaces and a
//! newline so the data (immediately after it) is aligned. The file holds one array, listed as a
//! tensor named [`TENSOR_NAME`].
//!
//! Only the dict literal numpy writes is understood: string keys, string / bool / tuple-of-int
//! values; anything else in a value (a structured dtype's list) is kept as raw text for the message.
//! It means what `ast.literal_eval` (numpy's reader) makes of it: a key given twice keeps the last
//! value, and a string's backslash escapes are Python's (`'sh\x61pe'` is `'shape'`); an escape
//! that cannot be interpreted so (`\N{…}`, a short `\x`) is refused rather than read otherwise.

// As in the GGUF reader: the crate-wide `FormatError` is 128 bytes and ends the read.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;

use super::{show_magic, DType, FormatError, ModelInfo, TensorInfo};
use crate::read::source::ByteSource;

/// The first six bytes of every .npy file.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// The name given to the file's single array.
pub const TENSOR_NAME: &str = "array";
/// Longest header accepted: numpy itself refuses headers over 10 000 bytes by default, so real
/// files are far below this.
pub const MAX_NPY_HEADER: u64 = 1 << 20;

/// Reads the header of a .npy file (only the header bytes are read).
pub fn read_header(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    read(source, file, false)
}

/// [`read_header`], but an array of a dtype Orthoscope does not decode is listed (as
/// [`DType::Other`], its bytes the rest of the source) instead of refused: one array of an archive
/// of several (an `.npz`), which must not stop the others from being read.
pub fn read_header_listing_any_dtype(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    read(source, file, true)
}

fn read(source: &dyn ByteSource, file: usize, any_dtype: bool) -> Result<ModelInfo, FormatError> {
    let name = source.name().to_string();
    let file_len = source.len();
    let truncated = |offset: u64, what: &str| FormatError::NpyTruncated {
        file: name.clone(),
        offset,
        what: what.to_string(),
        file_len,
    };
    let mut pre = [0u8; 8];
    let head = file_len.min(8) as usize;
    source.read_at(0, pre.get_mut(..head).unwrap_or(&mut []))?;
    if !pre.starts_with(MAGIC) || head < MAGIC.len() {
        return Err(FormatError::NpyBadMagic { file: name, magic: show_magic(pre.get(..head.min(6)).unwrap_or(&[])) });
    }
    if head < 8 {
        return Err(truncated(6, "version"));
    }
    let (major, minor) = (pre[6], pre[7]);
    let len_bytes: u64 = match (major, minor) {
        (1, 0) => 2,
        (2, 0) | (3, 0) => 4,
        _ => return Err(FormatError::NpyUnsupportedVersion { file: name, major, minor }),
    };
    if file_len < 8 + len_bytes {
        return Err(truncated(8, "header length"));
    }
    let mut lb = [0u8; 4];
    source.read_at(8, lb.get_mut(..len_bytes as usize).unwrap_or(&mut []))?;
    let header_len = u64::from(u32::from_le_bytes(lb));
    let header_start = 8 + len_bytes;
    if header_len > MAX_NPY_HEADER {
        return Err(FormatError::HeaderTooLarge { file: name, len: header_len, max: MAX_NPY_HEADER });
    }
    if header_len > file_len - header_start {
        return Err(truncated(header_start, &format!("header of {header_len} bytes")));
    }
    // header_len <= 1 MiB, so it fits in usize on every target.
    let mut header = vec![0u8; header_len as usize];
    source.read_at(header_start, &mut header)?;
    let data_start = header_start + header_len;

    let bad = |reason: String| FormatError::NpyBadHeader { file: name.clone(), reason };
    let dict = parse_dict(&header).map_err(&bad)?;
    let get = |key: &str| dict.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Py::Str(s)) => s.clone(),
        Some(Py::Raw(raw)) if any_dtype => raw.clone(),
        Some(Py::Raw(raw)) => return Err(FormatError::NpyUnsupportedDtype { file: name, descr: raw.clone() }),
        Some(_) => return Err(bad("'descr' is not a string".to_string())),
        None => return Err(bad("no 'descr' key".to_string())),
    };
    match get("fortran_order") {
        Some(Py::Bool(false)) => {}
        Some(Py::Bool(true)) => return Err(FormatError::NpyFortranOrder { file: name }),
        Some(_) => return Err(bad("'fortran_order' is not True or False".to_string())),
        None => return Err(bad("no 'fortran_order' key".to_string())),
    }
    let shape = match get("shape") {
        Some(Py::Tuple(dims)) => dims.clone(),
        Some(_) => return Err(bad("'shape' is not a tuple of integers".to_string())),
        None => return Err(bad("no 'shape' key".to_string())),
    };
    let dtype = match dtype_from_descr(&descr) {
        Some(dtype) => dtype,
        None if any_dtype => DType::Other(descr.clone()),
        None => return Err(FormatError::NpyUnsupportedDtype { file: name.clone(), descr: descr.clone() }),
    };
    let end = if let DType::Other(_) = dtype {
        file_len
    } else {
        let bytes = shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| dtype.bytes_for(n))
            .ok_or_else(|| bad(format!("shape {shape:?} overflows 64 bits")))?;
        data_start.saturating_add(bytes)
    };
    if end > file_len {
        return Err(FormatError::PastEof { file: name, tensor: TENSOR_NAME.to_string(), end, file_len });
    }
    Ok(ModelInfo {
        format: "npy".to_string(),
        tensors: vec![TensorInfo {
            name: TENSOR_NAME.to_string(),
            dtype,
            shape,
            byte_range: (data_start, end),
            file,
            layout: Default::default(),
        }],
        ..ModelInfo::default()
    })
}

/// The dtype of a numpy type string. `<` is little-endian; `|` ("not applicable") and `=`
/// (native) are read as little-endian too, since numpy never writes them for multi-byte floats and
/// every platform that writes them by hand in practice is little-endian. `>` (big-endian) is refused.
pub fn dtype_from_descr(descr: &str) -> Option<DType> {
    let code = descr.strip_prefix(['<', '|', '=']).unwrap_or(descr);
    match code {
        "f2" => Some(DType::F16),
        "f4" => Some(DType::F32),
        "f8" => Some(DType::F64),
        _ => None,
    }
}

/// A value in the header dict.
#[derive(Debug, PartialEq)]
enum Py {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    /// Any other value, as written (lists of a structured dtype, None, …).
    Raw(String),
}

/// Parses the header's dict literal into (key, value) pairs, each key once: as in a Python dict
/// display, a key given again keeps its first place and takes the later value.
fn parse_dict(text: &[u8]) -> Result<Vec<(String, Py)>, String> {
    let mut p = Lexer { s: text, i: 0 };
    p.ws();
    p.expect_byte(b'{')?;
    let mut out: Vec<(String, Py)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect_byte(b':')?;
        p.ws();
        let value = p.value()?;
        match index.get(&key).and_then(|&i| out.get_mut(i)) {
            Some(slot) => slot.1 = value,
            None => {
                index.insert(key.clone(), out.len());
                out.push((key, value));
            }
        }
        p.ws();
        if p.eat(b',') {
            continue;
        }
        p.expect_byte(b'}')?;
        break;
    }
    p.ws();
    if p.i != text.len() {
        return Err(format!("unexpected text after the dict at byte {}", p.i));
    }
    Ok(out)
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect_byte(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(got) => format!("expected '{}' at byte {} but found '{}'", c as char, self.i, got.escape_ascii()),
                None => format!("expected '{}' at byte {} but the header ended", c as char, self.i),
            })
        }
    }
    fn string(&mut self) -> Result<String, String> {
        let quote = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at byte {}", self.i)),
        };
        let start = self.i;
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(format!("unterminated string from byte {start}")),
                Some(c) if c == quote => {
                    self.i += 1;
                    break;
                }
                Some(b'\n' | b'\r') => return Err(format!("a line break inside the string at byte {start}")),
                Some(b'\\') => {
                    let at = self.i;
                    self.i += 1;
                    self.escape(at, &mut out)?;
                }
                Some(c) => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
    /// A backslash escape (the backslash at byte `at` consumed) as a Python string literal reads
    /// it, appended to `out` as UTF-8.
    fn escape(&mut self, at: usize, out: &mut Vec<u8>) -> Result<(), String> {
        let Some(c) = self.peek() else {
            return Err(format!("unterminated string (a backslash at byte {at} ends the header)"));
        };
        self.i += 1;
        let simple = match c {
            b'\n' => return Ok(()),
            b'\\' | b'\'' | b'"' => Some(c),
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            return Ok(());
        }
        let code = match c {
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.i += 1;
                        }
                        _ => break,
                    }
                }
                v
            }
            b'x' | b'u' | b'U' => {
                let n = match c {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let digits = self.s.get(self.i..self.i + n).unwrap_or(&[]);
                let v = std::str::from_utf8(digits)
                    .ok()
                    .filter(|d| d.len() == n && d.bytes().all(|b| b.is_ascii_hexdigit()))
                    .and_then(|d| u32::from_str_radix(d, 16).ok())
                    .ok_or_else(|| format!("a \\{} escape at byte {at} without {n} hex digits", c as char))?;
                self.i += n;
                v
            }
            b'N' => return Err(format!("a \\N{{…}} escape at byte {at}, which Orthoscope does not interpret")),
            // Python keeps an unknown escape as written.
            other => {
                out.push(b'\\');
                out.push(other);
                return Ok(());
            }
        };
        let ch = char::from_u32(code).ok_or_else(|| format!("the escape at byte {at} is not a character"))?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }
    fn value(&mut self) -> Result<Py, String> {
        match self.peek() {
            Some(b'\'' | b'"') => self.string().map(Py::Str),
            Some(b'(') => self.tuple(),
            _ if self.s.get(self.i..).is_some_and(|r| r.starts_with(b"True")) => {
                self.i += 4;
                Ok(Py::Bool(true))
            }
            _ if self.s.get(self.i..).is_some_and(|r| r.starts_with(b"False")) => {
                self.i += 5;
                Ok(Py::Bool(false))
            }
            _ => self.raw(),
        }
    }
    /// `()`, `(n,)`, `(n, m, …)`; Python 2 headers may suffix integers with `L`.
    fn tuple(&mut self) -> Result<Py, String> {
        self.expect_byte(b'(')?;
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(b')') {
                break;
            }
            let start = self.i;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
            let digits = self.s.get(start..self.i).unwrap_or(&[]);
            if digits.is_empty() {
                return Err(format!("expected a non-negative integer in 'shape' at byte {start}"));
            }
            let n = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<u64>().ok())
                .ok_or_else(|| format!("dimension at byte {start} does not fit in 64 bits"))?;
            dims.push(n);
            self.eat(b'L');
            self.ws();
            if self.eat(b',') {
                continue;
            }
            self.expect_byte(b')')?;
            break;
        }
        Ok(Py::Tuple(dims))
    }
    /// Any other value up to the next top-level `,` or `}`, brackets balanced.
    fn raw(&mut self) -> Result<Py, String> {
        let start = self.i;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' => depth = depth.saturating_sub(1),
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b',' if depth == 0 => break,
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
        let text = self.s.get(start..self.i).unwrap_or(&[]);
        let text = String::from_utf8_lossy(text).trim().to_string();
        if text.is_empty() {
            return Err(format!("expected a value at byte {start}"));
        }
        Ok(Py::Raw(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_numpy_headers() {
        let d = parse_dict(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }    \n").unwrap();
        assert_eq!(d[0], ("descr".into(), Py::Str("<f4".into())));
        assert_eq!(d[1], ("fortran_order".into(), Py::Bool(false)));
        assert_eq!(d[2], ("shape".into(), Py::Tuple(vec![3, 4])));
        let d = parse_dict(b"{\"shape\": (7L,), \"descr\": [('a', '<f4')], 'fortran_order': True}").unwrap();
        assert_eq!(d[0].1, Py::Tuple(vec![7]));
        assert_eq!(d[1].1, Py::Raw("[('a', '<f4')]".into()));
        assert_eq!(d[2].1, Py::Bool(true));
        assert_eq!(parse_dict(b"{'shape': ()}").unwrap()[0].1, Py::Tuple(vec![]));
        assert!(parse_dict(b"{'shape': (3, 4}").is_err());
        assert!(parse_dict(b"{'descr'").is_err());
    }

    #[test]
    fn reads_the_header_as_ast_literal_eval_does() {
        // A key given again keeps its first place and takes the last value.
        let d = parse_dict(b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'shape': (5, 4), }").unwrap();
        assert_eq!(d.len(), 3);
        assert_eq!(d[2], ("shape".into(), Py::Tuple(vec![5, 4])));
        // Python's escapes: 'sh\x61pe' is 'shape', "\'" a quote, an unknown escape stays as written.
        let d = parse_dict(b"{'shape': (1,), 'sh\\x61pe': (2,), 'a\\'\\q\\101\\u00e9': 'x'}").unwrap();
        assert_eq!(d[0], ("shape".into(), Py::Tuple(vec![2])));
        assert_eq!(d[1].0, "a'\\qA\u{e9}");
        for bad in [&b"{'a\\x4': 1}"[..], b"{'\\N{DIGIT ONE}': 1}", b"{'a\nb': 1}", b"{'a\\"] {
            assert!(parse_dict(bad).is_err(), "{}", bad.escape_ascii());
        }
    }
}
