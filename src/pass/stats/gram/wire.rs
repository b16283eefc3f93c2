//! [`GramMoments`] to and from its worker message (`pass::wire::GramMessage`): here, beside the
//! accumulator, so its fields stay its own; the message is checked before anything is built from it.

use std::borrow::Cow;

use super::{GramMoments, InG, Pending};
use crate::pass::kernel::{self, PackedGram};
use crate::pass::shares::PassError;
use crate::pass::wire::{size, unreadable, width, GramMessage, PendingMessage, TriangleMessage};

impl<'a> From<&'a GramMoments> for GramMessage<'a> {
    fn from(g: &'a GramMoments) -> Self {
        let panels = g.gram.panel_range();
        let pending = &g.pending;
        GramMessage {
            counts: g.counts.into(),
            dim: g.dim as u64,
            precision: g.precision.into(),
            sum: Cow::Borrowed(g.sum.as_slice()),
            sum_norm2: g.sum_norm2,
            sum_norm4: g.sum_norm4,
            triangle: TriangleMessage {
                first_panel: panels.start as u64,
                end_panel: panels.end as u64,
                values: Cow::Borrowed(g.gram.values()),
            },
            centre: Cow::Borrowed(g.centre.as_slice()),
            sum_centred: Cow::Borrowed(g.sum_centred.as_slice()),
            rows_centred: g.rows_centred,
            // Nothing waits once the rows are through the kernel (`flush` leaves an empty batch).
            pending: (pending.rows > 0).then_some(PendingMessage {
                rows: pending.rows as u64,
                slots: pending.slots as u64,
                packed: Cow::Borrowed(pending.packed.as_slice()),
                sum: Cow::Borrowed(pending.before.sum.as_slice()),
                sum_norm2: pending.before.sum_norm2,
                sum_norm4: pending.before.sum_norm4,
                sum_centred: Cow::Borrowed(pending.before.sum_centred.as_slice()),
                rows_centred: pending.before.rows_centred,
            }),
            kernel_flops: g.kernel_flops,
            kernel_ms: g.kernel_ms,
        }
    }
}

impl TryFrom<GramMessage<'_>> for GramMoments {
    type Error = PassError;
    /// s is padded to the width's lanes; G holds whole panels of that width, and all their values
    /// or none; a centre and its Σw̃ᵢ are both of that width or both absent; rows waiting fit their
    /// batch, and the kernel finds every value it reads.
    fn try_from(m: GramMessage<'_>) -> Result<Self, PassError> {
        // The width is checked against values the message carries before anything is sized by it.
        let d = m.sum.len();
        let dim = width(m.dim, d)?;
        let panels = size(m.triangle.first_panel, "a panel")?..size(m.triangle.end_panel, "a panel")?;
        if panels.start > panels.end || panels.end > d / kernel::TILE_A {
            return Err(unreadable(format!("panels {panels:?} of a triangle of d = {dim}")));
        }
        let mut gram = PackedGram::band(dim, panels.clone());
        if gram.panel_range() != panels {
            return Err(unreadable(format!("panels {panels:?} are not whole row octets of G")));
        }
        let values = m.triangle.values.len();
        if !gram.set_values(m.triangle.values.into_owned()) {
            return Err(unreadable(format!(
                "a band of G with {values} values where its panels hold {}",
                gram.stored_len()
            )));
        }
        let centred = m.centre.len();
        if !(centred == 0 || centred == d) || m.sum_centred.len() != centred {
            return Err(unreadable(format!(
                "a centre of {centred} values and its sum of {} for d = {dim}",
                m.sum_centred.len()
            )));
        }
        let counts = m.counts.try_into()?;
        let pending = match m.pending {
            None => Box::default(),
            Some(p) => {
                let (rows, slots) = (size(p.rows, "a row count")?, size(p.slots, "a row count")?);
                if rows > slots || slots > kernel::batch_rows(d) || p.rows > m.counts.kept {
                    return Err(unreadable(format!("{rows} rows in {slots} slots waiting for the kernel")));
                }
                if p.packed.len() < kernel::chunks_len(kernel::MAX_CHUNK_ROWS, slots, d)
                    || p.sum.len() != d
                    || p.sum_centred.len() != centred
                {
                    return Err(unreadable(format!("{slots} rows waiting in {} values", p.packed.len())));
                }
                Box::new(Pending {
                    rows,
                    slots,
                    packed: p.packed.into_owned(),
                    before: InG {
                        sum: p.sum.into_owned(),
                        sum_norm2: p.sum_norm2,
                        sum_norm4: p.sum_norm4,
                        sum_centred: p.sum_centred.into_owned(),
                        rows_centred: p.rows_centred,
                    },
                })
            }
        };
        Ok(GramMoments {
            counts,
            dim,
            precision: m.precision.into(),
            sum: m.sum.into_owned(),
            sum_norm2: m.sum_norm2,
            sum_norm4: m.sum_norm4,
            gram,
            wide: Vec::new(),
            centre: m.centre.into_owned(),
            sum_centred: m.sum_centred.into_owned(),
            rows_centred: m.rows_centred,
            pending,
            kernel_flops: m.kernel_flops,
            kernel_ms: m.kernel_ms,
        })
    }
}
