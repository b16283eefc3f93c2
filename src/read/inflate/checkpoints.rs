//! The checkpoint index of a deflated member: where along its inflated bytes a resumable
//! [`Point`] is kept ([`Checkpoints`]: their spacing, at whole rows of a matrix where that
//! helps the pass), and the index shared by every source and thread of one request
//! ([`SharedCheckpoints`]). The inflating itself is the parent module's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::Point;

/// The closest checkpoints are ever kept (bytes of output).
pub const MIN_SPACING: u64 = 256 << 10;

/// Most checkpoints a member keeps (besides the one at its start). One is ~43 KiB (the
/// decompressor's tables and the 32 KiB window), so this bounds them at ~22 MiB: the size of G
/// at d = 1536, and a few times less than the f32 accumulators of the widths that are compressed.
pub const MAX_CHECKPOINTS: u64 = 512;

/// The closest checkpoints of a member `len` bytes long may be: at most [`MAX_CHECKPOINTS`].
fn least_spacing(len: u64) -> u64 {
    len.div_ceil(MAX_CHECKPOINTS).max(MIN_SPACING)
}

/// The spacing of [`Checkpoints::at_rows`]: the least spacing rounded up to a power of two rows
/// (None where that overflows).
fn spacing_at_rows(len: u64, row_bytes: u64) -> Option<u64> {
    let least = least_spacing(len);
    let rows = least.div_ceil(row_bytes.max(1)).checked_next_power_of_two();
    rows.and_then(|r| r.checked_mul(row_bytes)).filter(|&s| s >= least)
}

/// Output bytes between the checkpoints of a member `len` bytes long holding rows `row_bytes`
/// long ([`Checkpoints::at_rows`]): a block of the pass shorter than this, read in random order,
/// inflates on average half of it before its own bytes; read in file order, nothing more.
pub fn checkpoint_spacing(len: u64, row_bytes: u64) -> u64 {
    spacing_at_rows(len, row_bytes).unwrap_or_else(|| least_spacing(len))
}

/// The checkpoints of one member, shared by every source that reads it, on any thread: whichever
/// source first inflates past a spacing boundary keeps the checkpoint there for all of them, so a
/// second source (another thread's share, the neighbours' matrix, the tied check) goes back to the
/// nearest checkpoint instead of inflating the member again from its start. Checkpoints are the
/// same whoever makes them (inflating is deterministic), so the order they come in does not matter.
#[derive(Clone)]
pub struct Checkpoints {
    pub(super) shared: Arc<SharedPoints>,
}

pub(super) struct SharedPoints {
    /// The member: compressed bytes `[start, end)` of the file, `len` bytes inflated.
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) len: u64,
    /// Checkpoints fall at output offsets `phase + j * spacing` (`phase < spacing`), and the
    /// stream's start is one too.
    phase: u64,
    spacing: u64,
    /// The start, then the checkpoint at each boundary in order ([`Checkpoints::slot`]), made the
    /// first time any source passes there.
    points: Mutex<Vec<Point>>,
    /// Output bytes inflated by all the sources of the member (measurement: what reading costs).
    pub(super) inflated: AtomicU64,
}

impl Checkpoints {
    /// No checkpoint yet but the member's start; the others [`Checkpoints::spacing`] apart.
    pub fn new(start: u64, end: u64, len: u64) -> Checkpoints {
        Self::with_spacing(start, end, len, 0, least_spacing(len))
    }

    /// Checkpoints at whole rows of a matrix whose row 0 is at output offset `first_row`, rows
    /// `row_bytes` long, a power of two rows apart: the pass reads blocks of a power of two rows
    /// from row 0 (64), so each block at least as long as the spacing begins at a checkpoint and
    /// a block read in random order inflates only itself; a shorter block inflates on average
    /// half the spacing before it. Never closer than [`Checkpoints::new`]'s.
    pub fn at_rows(start: u64, end: u64, len: u64, first_row: u64, row_bytes: u64) -> Checkpoints {
        match spacing_at_rows(len, row_bytes) {
            Some(spacing) => Self::with_spacing(start, end, len, first_row % spacing, spacing),
            None => Self::new(start, end, len),
        }
    }

    fn with_spacing(start: u64, end: u64, len: u64, phase: u64, spacing: u64) -> Checkpoints {
        let points = Mutex::new(vec![Point::start(start)]);
        let inflated = AtomicU64::new(0);
        Checkpoints { shared: Arc::new(SharedPoints { start, end, len, phase, spacing, points, inflated }) }
    }

    /// The index in `points` of the last checkpoint at or before output offset `offset`.
    pub(super) fn slot(&self, offset: u64) -> u64 {
        let SharedPoints { phase, spacing, .. } = *self.shared;
        match offset.checked_sub(phase) {
            None => 0,
            Some(past) => past / spacing + u64::from(phase > 0),
        }
    }

    /// Whether a checkpoint belongs at output offset `out`.
    pub(super) fn is_boundary(&self, out: u64) -> bool {
        out.checked_sub(self.shared.phase).is_some_and(|past| past.is_multiple_of(self.shared.spacing))
    }

    /// The first checkpoint's place after output offset `out`.
    pub(super) fn next_boundary(&self, out: u64) -> u64 {
        let SharedPoints { phase, spacing, .. } = *self.shared;
        match out.checked_sub(phase) {
            None => phase,
            Some(past) => (past / spacing).saturating_add(1).saturating_mul(spacing).saturating_add(phase),
        }
    }

    /// Output bytes between checkpoints.
    pub fn spacing(&self) -> u64 {
        self.shared.spacing
    }

    /// Memory held by the checkpoints now (not the sources' cursors).
    pub fn bytes(&self) -> u64 {
        self.points().len() as u64 * Point::bytes()
    }

    /// Output bytes inflated by every source of the member so far, re-inflation included.
    pub fn inflated_bytes(&self) -> u64 {
        self.shared.inflated.load(Ordering::Relaxed)
    }

    fn is_for(&self, start: u64, end: u64, len: u64) -> bool {
        (self.shared.start, self.shared.end, self.shared.len) == (start, end, len)
    }

    /// A source that panicked while holding the lock left the points as they were between two
    /// whole pushes, so they are still good.
    pub(super) fn points(&self) -> MutexGuard<'_, Vec<Point>> {
        self.shared.points.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The [`Checkpoints`] of every deflated member one request reads, by file and place: each thread
/// of a pass opens the files itself, and gets the same checkpoints for the same member from here.
/// Only sources over the same files, in the same order, may share one.
#[derive(Clone, Default)]
pub struct SharedCheckpoints {
    members: Arc<Mutex<HashMap<(usize, u64), Checkpoints>>>,
}

impl SharedCheckpoints {
    /// The checkpoints of the member at compressed bytes `[start, end)` of file `file`, `len`
    /// bytes inflated: those made so far by any source of it, or none yet.
    /// `rows`: where its matrix's row 0 is and how long a row is ([`Checkpoints::at_rows`]).
    pub fn member(&self, file: usize, start: u64, end: u64, len: u64, rows: Option<(u64, u64)>) -> Checkpoints {
        let make = || match rows {
            Some((first_row, row_bytes)) => Checkpoints::at_rows(start, end, len, first_row, row_bytes),
            None => Checkpoints::new(start, end, len),
        };
        let mut members = self.members.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match members.get(&(file, start)) {
            Some(c) if c.is_for(start, end, len) => c.clone(),
            // Another member at that place (the caller mixed files): kept apart, never shared.
            Some(_) => make(),
            None => members.entry((file, start)).or_insert_with(make).clone(),
        }
    }

    /// Output bytes inflated so far, over every member and every source of each.
    pub fn inflated_bytes(&self) -> u64 {
        let members = self.members.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        members.values().map(Checkpoints::inflated_bytes).sum()
    }

    /// Memory held by every member's checkpoints now.
    pub fn bytes(&self) -> u64 {
        let members = self.members.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        members.values().map(Checkpoints::bytes).sum()
    }
}
