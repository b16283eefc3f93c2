//! Random access into a deflate stream (a compressed zip member): the bytes of an `.npz` member
//! as if it were stored. (Being written: see `InflatedSource`.)

use std::rc::Rc;

use crate::read::source::{ByteSource, ReadError};

/// The inflated bytes of the deflate stream at `[start, end)` of `inner`, `len` bytes long.
pub struct InflatedSource {
    name: String,
    #[allow(dead_code)]
    inner: Rc<dyn ByteSource>,
    #[allow(dead_code)]
    start: u64,
    #[allow(dead_code)]
    end: u64,
    len: u64,
}

impl InflatedSource {
    pub fn new(inner: Rc<dyn ByteSource>, start: u64, end: u64, len: u64) -> Result<Self, ReadError> {
        Ok(Self { name: inner.name().to_string(), inner, start, end, len })
    }
}

impl ByteSource for InflatedSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        Err(ReadError::Unavailable {
            message: format!("{}: compressed member at {offset} (+{}): not yet readable", self.name, buf.len()),
        })
    }
}
