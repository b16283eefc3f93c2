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
