//! A forward reader over a [`ByteSource`] that fetches a window of bytes at a time, so that the
//! header is never read whole.

use crate::read::source::{ByteSource, ReadError};

/// Why a cursor read failed, before the caller names what it was reading.
pub(super) enum Short {
    Eof { offset: u64 },
    Read(ReadError),
}

/// A forward reader over a [`ByteSource`] that fetches `window` bytes at a time.
pub(super) struct Cursor<'a> {
    pub(super) src: &'a dyn ByteSource,
    pub(super) len: u64,
    pub(super) pos: u64,
    pub(super) buf: Vec<u8>,
    pub(super) buf_start: u64,
    pub(super) window: usize,
}

impl Cursor<'_> {
    pub(super) fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }

    pub(super) fn read(&mut self, out: &mut [u8]) -> Result<(), Short> {
        if out.len() as u64 > self.remaining() {
            return Err(Short::Eof { offset: self.pos });
        }
        // Large pieces (long strings) go straight from the source rather than through the window.
        if out.len() >= self.window {
            self.src.read_at(self.pos, out).map_err(Short::Read)?;
            self.pos += out.len() as u64;
            return Ok(());
        }
        let mut done = 0;
        while done < out.len() {
            let offset_in_buf = self.pos.checked_sub(self.buf_start).filter(|&o| o < self.buf.len() as u64);
            let start = match offset_in_buf {
                Some(o) => o as usize,
                None => {
                    // remaining() > 0 here, since out.len() - done bytes are known to be left.
                    let n = (self.window as u64).min(self.remaining()) as usize;
                    self.buf.resize(n, 0);
                    self.src.read_at(self.pos, &mut self.buf).map_err(Short::Read)?;
                    self.buf_start = self.pos;
                    0
                }
            };
            let avail = self.buf.get(start..).unwrap_or(&[]);
            let want = out.get_mut(done..).unwrap_or(&mut []);
            let n = avail.len().min(want.len());
            if n == 0 {
                return Err(Short::Eof { offset: self.pos });
            }
            want[..n].copy_from_slice(&avail[..n]);
            done += n;
            self.pos += n as u64;
        }
        Ok(())
    }

    pub(super) fn skip(&mut self, n: u64) -> Result<(), Short> {
        if n > self.remaining() {
            return Err(Short::Eof { offset: self.pos });
        }
        self.pos += n;
        Ok(())
    }
}
