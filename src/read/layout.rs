//! The byte source a tensor's rows are read from: its file as stored, or a view over the files
//! ([`Layout`]): an inflated zip member, or rows assembled from several stored tensors. The pass
//! and every later request read rows through [`tensor_source`], so they never know which.

use std::cell::RefCell;
use std::rc::Rc;

use crate::read::format::{InterleavePart, Layout, TensorInfo};
use crate::read::inflate::{InflatedSource, SharedCheckpoints};
use crate::read::source::{ByteSource, ReadError};

/// The source to read `tensor`'s `byte_range` from, over the request's `sources` (by file index).
/// An inflated member's checkpoints are its own: see [`tensor_source_sharing`].
pub fn tensor_source(sources: &[Rc<dyn ByteSource>], tensor: &TensorInfo) -> Result<Rc<dyn ByteSource>, ReadError> {
    tensor_source_sharing(sources, tensor, &SharedCheckpoints::default())
}

/// [`tensor_source`] whose inflated member keeps its checkpoints in `checkpoints`, with every
/// other source of the same member opened through it (on any thread, over the same `sources`):
/// deflate has no index, so only the first source inflates the member from its start.
pub fn tensor_source_sharing(
    sources: &[Rc<dyn ByteSource>],
    tensor: &TensorInfo,
    checkpoints: &SharedCheckpoints,
) -> Result<Rc<dyn ByteSource>, ReadError> {
    let file = |i: usize| {
        sources.get(i).cloned().ok_or_else(|| ReadError::Unavailable {
            message: format!("internal: tensor '{}' lives in file {i}, which was not given", tensor.name),
        })
    };
    match &tensor.layout {
        Layout::Contiguous => file(tensor.file),
        Layout::Deflate { start, end, inflated_len } => {
            let inner = file(tensor.file)?;
            // Checkpoints at whole rows of a matrix, so that the pass's blocks begin at one.
            let (first_row, stop) = tensor.byte_range;
            let rows = tensor.matrix().and_then(|(rows, _)| {
                let bytes = stop.checked_sub(first_row)?;
                bytes.checked_div(rows).filter(|&row| row > 0 && row * rows == bytes).map(|row| (first_row, row))
            });
            let member = checkpoints.member(tensor.file, *start, *end, *inflated_len, rows);
            Ok(Rc::new(InflatedSource::sharing(inner, member)?.with_tensor_name(&tensor.name)))
        }
        Layout::Interleave { parts } => {
            let opened = parts.iter().map(|p| Ok((file(p.file)?, p.clone()))).collect::<Result<Vec<_>, ReadError>>()?;
            Ok(Rc::new(InterleavedSource::new(&tensor.name, opened, tensor.byte_range.1)?))
        }
        Layout::Transposed { start, stored_rows, stored_cols, elem_bytes, inner } => {
            // The stored matrix's own source (its file as stored, or an inflated member).
            let stored = TensorInfo { layout: (**inner).clone(), ..tensor.clone() };
            let inner = tensor_source(sources, &stored)?;
            Ok(Rc::new(TransposedSource::new(&tensor.name, inner, *start, *stored_rows, *stored_cols, *elem_bytes)?))
        }
    }
}

/// Bytes of one panel of a [`TransposedSource`]: the most a column read holds at once.
pub const PANEL_BYTES: u64 = 4 << 20;

/// The rows of a [`Layout::Transposed`] view: the columns of a stored matrix, read without
/// transposing the file. A panel of adjacent columns (at most [`PANEL_BYTES`]) is read as one
/// strided read — from each stored row, the slice of those columns — and kept until a read needs
/// columns outside it, so a pass in file order reads each stored byte once and a random block
/// costs one read per stored row, whatever the matrix's size.
pub struct TransposedSource {
    name: String,
    inner: Rc<dyn ByteSource>,
    start: u64,
    stored_rows: u64,
    stored_cols: u64,
    elem: u64,
    /// Bytes of one view row: `stored_rows · elem`.
    row_bytes: u64,
    /// View rows (stored columns) per panel.
    panel_rows: u64,
    /// The first view row of the panel held, and its rows as view rows (`len / row_bytes` of them).
    panel: RefCell<(Option<u64>, Vec<u8>)>,
    scratch: RefCell<Vec<u8>>,
}

impl TransposedSource {
    /// A view of the `[stored_rows, stored_cols]` matrix at `start` of `inner`, `elem` bytes a
    /// value; refused when its size overflows or it does not lie in `inner`.
    pub fn new(
        name: &str,
        inner: Rc<dyn ByteSource>,
        start: u64,
        stored_rows: u64,
        stored_cols: u64,
        elem: u64,
    ) -> Result<Self, ReadError> {
        Self::with_panel_bytes(name, inner, start, stored_rows, stored_cols, elem, PANEL_BYTES)
    }

    /// [`TransposedSource::new`] with panels of at most `panel_bytes` (at least one view row).
    pub fn with_panel_bytes(
        name: &str,
        inner: Rc<dyn ByteSource>,
        start: u64,
        stored_rows: u64,
        stored_cols: u64,
        elem: u64,
        panel_bytes: u64,
    ) -> Result<Self, ReadError> {
        let bad =
            |why: String| ReadError::Unavailable { message: format!("internal: transposed view of '{name}': {why}") };
        let row_bytes = stored_rows.checked_mul(elem).filter(|&b| b > 0).ok_or_else(|| bad("empty rows".into()))?;
        let len = row_bytes.checked_mul(stored_cols).ok_or_else(|| bad("size overflows".into()))?;
        if start.checked_add(len).is_none_or(|end| end > inner.len()) {
            return Err(bad(format!("{len} bytes from {start} run past the end of {}", inner.name())));
        }
        // Whole blocks of the pass (64 rows) where a panel holds that many.
        let fit = (panel_bytes / row_bytes).max(1);
        let panel_rows = if fit >= 64 { fit / 64 * 64 } else { fit }.min(stored_cols.max(1));
        Ok(Self {
            name: name.to_string(),
            inner,
            start,
            stored_rows,
            stored_cols,
            elem,
            row_bytes,
            panel_rows,
            panel: RefCell::new((None, Vec::new())),
            scratch: RefCell::new(Vec::new()),
        })
    }

    /// Loads a panel that holds view rows `row..row + wanted` (stored columns), or as many of them
    /// as a panel holds. A read that goes on where the panel held ends (a pass in file order) loads
    /// a whole panel ahead; any other (a block in random order) loads only the rows it wants, so
    /// a random block reads its own columns and no more.
    fn load(&self, row: u64, wanted: u64) -> Result<(), ReadError> {
        let mut panel = self.panel.borrow_mut();
        let held = (panel.1.len() as u64) / self.row_bytes;
        if let Some(first) = panel.0 {
            if first <= row && row < first + held {
                return Ok(());
            }
        }
        let ahead = panel.0.is_some_and(|first| first + held == row);
        let first = row;
        let rows = if ahead { self.panel_rows } else { wanted.clamp(1, self.panel_rows) }.min(self.stored_cols - first);
        let (e, rb) = (self.elem as usize, self.row_bytes as usize);
        // rows · row_bytes ≤ PANEL_BYTES, or one row: both were sized from the validated shape.
        panel.1.resize(rows as usize * rb, 0);
        panel.0 = None;
        let mut scratch = self.scratch.borrow_mut();
        scratch.resize(rows as usize * e, 0);
        for j in 0..self.stored_rows {
            // Stored row j, columns first..first + rows: within the range `new` checked.
            let at = self.start + (j * self.stored_cols + first) * self.elem;
            self.inner.read_at(at, &mut scratch)?;
            let column = j as usize * e;
            for (f, value) in scratch.chunks_exact(e).enumerate() {
                if let Some(dst) = panel.1.get_mut(f * rb + column..f * rb + column + e) {
                    dst.copy_from_slice(value);
                }
            }
        }
        panel.0 = Some(first);
        Ok(())
    }
}

impl ByteSource for TransposedSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.row_bytes * self.stored_cols
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        crate::read::source::check_range(&self.name, offset, buf.len() as u64, self.len())?;
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let row = at / self.row_bytes;
            let end_row = (offset + buf.len() as u64).div_ceil(self.row_bytes);
            self.load(row, end_row - row)?;
            let panel = self.panel.borrow();
            let first = panel.0.unwrap_or(row);
            let from = ((row - first) * self.row_bytes + at % self.row_bytes) as usize;
            let src = panel.1.get(from..).unwrap_or(&[]);
            let n = src.len().min(buf.len() - done);
            if n == 0 {
                return Err(ReadError::OutOfBounds {
                    file: self.name.clone(),
                    offset: at,
                    len: (buf.len() - done) as u64,
                    file_len: self.len(),
                });
            }
            if let (Some(dst), Some(src)) = (buf.get_mut(done..done + n), src.get(..n)) {
                dst.copy_from_slice(src);
            }
            done += n;
        }
        Ok(())
    }
}

/// Rows of a [`Layout::Interleave`] view: each read is turned into one read of every part's rows
/// it covers (so a block of rows costs as many reads as there are parts), interleaved block by block.
pub struct InterleavedSource {
    name: String,
    parts: Vec<(Rc<dyn ByteSource>, InterleavePart)>,
    /// Σ row_bytes: one row of the view.
    row_bytes: u64,
    /// Blocks per row (the same for every part).
    blocks: u64,
    len: u64,
    scratch: RefCell<Vec<u8>>,
}

impl InterleavedSource {
    /// A view of `len` bytes over `parts`; refused unless every part has the same whole number of
    /// blocks per row and `len` is a whole number of rows.
    pub fn new(name: &str, parts: Vec<(Rc<dyn ByteSource>, InterleavePart)>, len: u64) -> Result<Self, ReadError> {
        let bad = |why: String| ReadError::Unavailable { message: format!("internal: view of '{name}': {why}") };
        let first = parts.first().ok_or_else(|| bad("no parts".into()))?;
        let blocks = first.1.row_bytes.checked_div(first.1.chunk_bytes).ok_or_else(|| bad("zero chunk".into()))?;
        let mut row_bytes = 0u64;
        for (_, p) in &parts {
            if p.chunk_bytes == 0
                || p.row_bytes.checked_div(p.chunk_bytes) != Some(blocks)
                || !p.row_bytes.is_multiple_of(p.chunk_bytes)
            {
                return Err(bad(format!("part '{}' is not {blocks} blocks a row", p.tensor)));
            }
            row_bytes = row_bytes.checked_add(p.row_bytes).ok_or_else(|| bad("row size overflows".into()))?;
        }
        if row_bytes == 0 || !len.is_multiple_of(row_bytes) {
            return Err(bad(format!("{len} bytes are not whole rows of {row_bytes}")));
        }
        Ok(Self { name: name.to_string(), parts, row_bytes, blocks, len, scratch: RefCell::new(Vec::new()) })
    }
}

impl ByteSource for InterleavedSource {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        crate::read::source::check_range(&self.name, offset, buf.len() as u64, self.len)?;
        if buf.is_empty() {
            return Ok(());
        }
        // The rows the range touches, read whole from every part (reads are row blocks in practice).
        let first = offset / self.row_bytes;
        let stop = (offset + buf.len() as u64).div_ceil(self.row_bytes);
        let rows = stop - first;
        let view_start = first * self.row_bytes;
        let mut assembled = vec![
            0u8;
            usize::try_from(rows * self.row_bytes).map_err(|_| ReadError::OutOfBounds {
                file: self.name.clone(),
                offset,
                len: buf.len() as u64,
                file_len: self.len,
            })?
        ];
        let mut scratch = self.scratch.borrow_mut();
        let mut at_in_row = 0usize;
        for (source, part) in &self.parts {
            let pr = part.row_bytes as usize;
            let pc = part.chunk_bytes as usize;
            scratch.resize(rows as usize * pr, 0);
            let start = part.start.checked_add(first * part.row_bytes).ok_or_else(|| ReadError::OutOfBounds {
                file: source.name().to_string(),
                offset: part.start,
                len: rows * part.row_bytes,
                file_len: source.len(),
            })?;
            source.read_at(start, &mut scratch)?;
            let row_bytes = self.row_bytes as usize;
            // Within a view row, block j holds every part's chunk j: this part's chunk sits after
            // the chunks of the parts before it.
            let block_bytes = row_bytes / self.blocks as usize;
            for (r, src_row) in scratch.chunks_exact(pr).enumerate() {
                for (j, chunk) in src_row.chunks_exact(pc).enumerate() {
                    let at = r * row_bytes + j * block_bytes + at_in_row;
                    if let Some(dst) = assembled.get_mut(at..at + pc) {
                        dst.copy_from_slice(chunk);
                    }
                }
            }
            at_in_row += pc;
        }
        let skip = (offset - view_start) as usize;
        match assembled.get(skip..skip + buf.len()) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(ReadError::OutOfBounds {
                file: self.name.clone(),
                offset,
                len: buf.len() as u64,
                file_len: self.len,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::source::SliceSource;

    /// Every read of the view, at any offset and length, gives the stored matrix's columns, with
    /// panels of one row, of several, and of the whole matrix.
    #[test]
    fn a_transposed_view_reads_the_stored_columns() {
        let (rows, cols, elem) = (7u64, 13u64, 2u64);
        let start = 5u64;
        let mut bytes = vec![0xAAu8; start as usize];
        for j in 0..rows {
            for f in 0..cols {
                bytes.extend_from_slice(&((j * 100 + f) as u16).to_le_bytes());
            }
        }
        bytes.extend_from_slice(&[0xBB; 3]);
        let want: Vec<u8> =
            (0..cols).flat_map(|f| (0..rows).flat_map(move |j| ((j * 100 + f) as u16).to_le_bytes())).collect();
        let inner: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m", bytes));
        for panel in [1, 30, 64, 10_000] {
            let view = TransposedSource::with_panel_bytes("v", inner.clone(), start, rows, cols, elem, panel).unwrap();
            assert_eq!(view.len(), want.len() as u64);
            for (offset, len) in [(0, want.len()), (14, 14), (3, 40), (27, 1), (100, 82), (181, 1)] {
                let mut buf = vec![0u8; len];
                view.read_at(offset as u64, &mut buf).unwrap();
                assert_eq!(buf, want[offset..offset + len], "panel {panel}, offset {offset}, len {len}");
            }
            // Block by block in file order, as a pass's sweep reads.
            for block in [1usize, 3, 5] {
                let step = block * (rows * elem) as usize;
                let mut got = Vec::new();
                for at in (0..want.len()).step_by(step) {
                    let mut buf = vec![0u8; step.min(want.len() - at)];
                    view.read_at(at as u64, &mut buf).unwrap();
                    got.extend(buf);
                }
                assert_eq!(got, want, "panel {panel}, blocks of {block}");
            }
            let mut past = [0u8; 2];
            assert!(view.read_at(want.len() as u64 - 1, &mut past).is_err());
        }
        // A view that would run past its file is refused.
        assert!(TransposedSource::new("v", inner, start, rows, cols + 1, elem).is_err());
    }
}
