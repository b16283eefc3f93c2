//! What a worker sends of its share of the pass: messages of their own, defined here at the
//! boundary, so that the accumulators' memory layout is not the worker protocol.
//!
//! The accumulators (`stats::GramMoments`, `kernel::PackedGram`, `accumulate::PairAccumulator`,
//! `shares::PassPartial`) derive no serde: each converts to its message here (borrowing its values,
//! nothing copied) and back from one, checking what a message claims against what it carries —
//! widths, lengths, counts — so a truncated or forged message is a [`PassError`], never a panic or
//! an accumulator that breaks later. The bytes are postcard: an f64 is its 8 raw bytes, so a
//! partial comes back bit for bit and partials merge exactly as they would in one worker. G's
//! values travel apart from the rest ([`PassPartial::into_frame`]).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::pass::accumulate::PairAccumulator;
use crate::pass::estimate::WithinBlock;
use crate::pass::kernel::Precision;
use crate::pass::shares::{PassError, PassPartial};
use crate::pass::stats::RowCounts;

/// A share's partial ([`PassPartial`]): all it has summed, and its random phase apart once it has
/// gone on into the sweep. The random phase has no random phase of its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialMessage<'a> {
    pub whole: PartMessage<'a>,
    pub random_phase: Option<PartMessage<'a>>,
}

/// The sums over some blocks of the plan, and the blocks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartMessage<'a> {
    pub sums: SumsMessage<'a>,
    pub within: WithinMessage,
    pub blocks_seen: u64,
}

/// The exact pass's sums on either route ([`PairAccumulator`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SumsMessage<'a> {
    Gram(Box<GramMessage<'a>>),
    Rows(RowsMessage<'a>),
}

/// The running estimate's within-block stratum ([`WithinBlock`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct WithinMessage {
    pub sum: f64,
    pub sum_sq: f64,
    pub pairs: u64,
    pub blocks: u64,
}

/// Rows seen, kept and dropped ([`RowCounts`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountsMessage {
    pub seen: u64,
    pub kept: u64,
    pub dropped_zero: u64,
    pub dropped_nonfinite: u64,
}

/// The Gram kernel's arithmetic ([`Precision`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PrecisionMessage {
    F64,
    F32,
}

/// s, G and the diagonal terms of the Gram route (`stats::GramMoments`; its scratch is not sent).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GramMessage<'a> {
    pub counts: CountsMessage,
    pub dim: u64,
    pub precision: PrecisionMessage,
    /// s = Σuᵢ, padded to the kernel's lanes.
    pub sum: Cow<'a, [f64]>,
    pub sum_norm2: f64,
    pub sum_norm4: f64,
    pub triangle: TriangleMessage<'a>,
    /// The f32 pass's centre c, Σw̃ᵢ of its centred rows and their count (both empty: none).
    pub centre: Cow<'a, [f64]>,
    pub sum_centred: Cow<'a, [f64]>,
    pub rows_centred: u64,
    /// Rows taken but not yet through the kernel (None: none waits).
    pub pending: Option<PendingMessage<'a>>,
    pub kernel_flops: f64,
    pub kernel_ms: f64,
}

/// G's packed triangle, or the band of it a share by columns holds (`kernel::PackedGram`): the
/// panels stored and their values (none: all zero, or sent apart).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriangleMessage<'a> {
    pub first_panel: u64,
    pub end_panel: u64,
    pub values: Cow<'a, [f64]>,
}

/// The f32 rows an accumulator holds back for its next kernel batch, and its sums as they were
/// before them (what G matches until they are summed in).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingMessage<'a> {
    pub rows: u64,
    /// Row slots in use, padding included.
    pub slots: u64,
    pub packed: Cow<'a, [f32]>,
    pub sum: Cow<'a, [f64]>,
    pub sum_norm2: f64,
    pub sum_norm4: f64,
    pub sum_centred: Cow<'a, [f64]>,
    pub rows_centred: u64,
}

/// The row route's kept unit rows and their pair sums (`accumulate::RowPairs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RowsMessage<'a> {
    pub counts: CountsMessage,
    pub dim: u64,
    /// The kept unit rows, padded to the kernel's lanes.
    pub units: Cow<'a, [f64]>,
    pub sum: Cow<'a, [f64]>,
    pub sum_cos: f64,
    pub sum_cos_sq: f64,
}

/// A message that does not hold what it claims.
pub(crate) fn unreadable(why: impl Into<String>) -> PassError {
    PassError::Unreadable(why.into())
}

/// The width d of a message whose vectors hold `padded` values each: d rounded up to the kernel's
/// lanes must be `padded` (checked without computing it: a forged d could overflow it).
pub(crate) fn width(dim: u64, padded: usize) -> Result<usize, PassError> {
    let lanes = crate::pass::kernel::LANES;
    let fits = padded.is_multiple_of(lanes) && dim <= padded as u64 && padded as u64 - dim < lanes as u64;
    if !fits {
        return Err(unreadable(format!("a partial of d = {dim} whose vectors hold {padded} values")));
    }
    size(dim, "a width")
}

/// A count or width from a message as a `usize`.
pub(crate) fn size(n: u64, what: &str) -> Result<usize, PassError> {
    usize::try_from(n).map_err(|_| unreadable(format!("{what} of {n} does not fit this machine")))
}

impl From<RowCounts> for CountsMessage {
    fn from(c: RowCounts) -> Self {
        CountsMessage {
            seen: c.seen,
            kept: c.kept,
            dropped_zero: c.dropped_zero,
            dropped_nonfinite: c.dropped_nonfinite,
        }
    }
}

impl TryFrom<CountsMessage> for RowCounts {
    type Error = PassError;
    /// Every row seen was kept or dropped.
    fn try_from(c: CountsMessage) -> Result<Self, PassError> {
        let fates = c.kept.checked_add(c.dropped_zero).and_then(|n| n.checked_add(c.dropped_nonfinite));
        if fates != Some(c.seen) {
            return Err(unreadable(format!(
                "{} rows seen, but {} kept, {} zero and {} non-finite",
                c.seen, c.kept, c.dropped_zero, c.dropped_nonfinite
            )));
        }
        Ok(RowCounts {
            seen: c.seen,
            kept: c.kept,
            dropped_zero: c.dropped_zero,
            dropped_nonfinite: c.dropped_nonfinite,
        })
    }
}

impl From<Precision> for PrecisionMessage {
    fn from(p: Precision) -> Self {
        match p {
            Precision::F64 => PrecisionMessage::F64,
            Precision::F32 => PrecisionMessage::F32,
        }
    }
}

impl From<PrecisionMessage> for Precision {
    fn from(p: PrecisionMessage) -> Self {
        match p {
            PrecisionMessage::F64 => Precision::F64,
            PrecisionMessage::F32 => Precision::F32,
        }
    }
}

impl From<WithinBlock> for WithinMessage {
    fn from(w: WithinBlock) -> Self {
        WithinMessage { sum: w.sum, sum_sq: w.sum_sq, pairs: w.pairs, blocks: w.blocks }
    }
}

impl From<WithinMessage> for WithinBlock {
    fn from(w: WithinMessage) -> Self {
        WithinBlock { sum: w.sum, sum_sq: w.sum_sq, pairs: w.pairs, blocks: w.blocks }
    }
}

impl<'a> From<&'a PairAccumulator> for SumsMessage<'a> {
    fn from(a: &'a PairAccumulator) -> Self {
        match a {
            PairAccumulator::Gram(g) => SumsMessage::Gram(Box::new(g.into())),
            PairAccumulator::Rows(r) => SumsMessage::Rows(r.into()),
        }
    }
}

impl TryFrom<SumsMessage<'_>> for PairAccumulator {
    type Error = PassError;
    fn try_from(m: SumsMessage<'_>) -> Result<Self, PassError> {
        Ok(match m {
            SumsMessage::Gram(g) => PairAccumulator::Gram((*g).try_into()?),
            SumsMessage::Rows(r) => PairAccumulator::Rows(r.try_into()?),
        })
    }
}

impl<'a> From<&'a PassPartial> for PartMessage<'a> {
    fn from(p: &'a PassPartial) -> Self {
        PartMessage { sums: (&p.gram).into(), within: p.within.into(), blocks_seen: p.blocks_seen }
    }
}

impl TryFrom<PartMessage<'_>> for PassPartial {
    type Error = PassError;
    fn try_from(m: PartMessage<'_>) -> Result<Self, PassError> {
        Ok(PassPartial {
            gram: m.sums.try_into()?,
            within: m.within.into(),
            blocks_seen: m.blocks_seen,
            random_phase: None,
        })
    }
}

impl<'a> From<&'a PassPartial> for PartialMessage<'a> {
    fn from(p: &'a PassPartial) -> Self {
        PartialMessage { whole: p.into(), random_phase: p.random_phase.as_deref().map(PartMessage::from) }
    }
}

impl TryFrom<PartialMessage<'_>> for PassPartial {
    type Error = PassError;
    /// The random phase is of the same matrix as the whole, and a part of it.
    fn try_from(m: PartialMessage<'_>) -> Result<Self, PassError> {
        let mut whole = PassPartial::try_from(m.whole)?;
        if let Some(random) = m.random_phase {
            let random = PassPartial::try_from(random)?;
            if random.gram.dim() != whole.gram.dim() {
                return Err(PassError::DimMismatch { expected: whole.gram.dim(), got: random.gram.dim() });
            }
            if random.blocks_seen > whole.blocks_seen {
                return Err(unreadable(format!(
                    "a random phase of {} blocks in a partial of {}",
                    random.blocks_seen, whole.blocks_seen
                )));
            }
            whole.random_phase = Some(Box::new(random));
        }
        Ok(whole)
    }
}

impl PassPartial {
    /// Compact bytes for a worker message ([`PartialMessage`] in postcard: f64 as 8 raw bytes,
    /// counts as varints).
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising plain numbers and slices into a Vec cannot fail.
        postcard::to_allocvec(&PartialMessage::from(self)).unwrap_or_default()
    }

    /// Reads [`PassPartial::to_bytes`], checking the message against itself.
    pub fn from_bytes(bytes: &[u8]) -> Result<PassPartial, PassError> {
        let message: PartialMessage = postcard::from_bytes(bytes).map_err(|e| unreadable(e.to_string()))?;
        PassPartial::try_from(message)
    }

    /// The partial as one worker message, in two parts: the `head` ([`Frame`]'s first fields)
    /// and the values of its G (whole, or its band), which follow the head in the message. G is
    /// most of a partial (67 MB at d = 4096; a band 537 MB at d = 16384 with two); sent apart, it
    /// is not serialised value by value, neither worker copies it within its wasm memory, and the
    /// lead adds it (split by rows) or copies it (a band) from the message straight into its G:
    /// in a tab at d = 4096, the helper's post 0.25 → 0.06 s and the lead's merge 0.45 → 0.02 s.
    pub fn into_frame(mut self) -> (Vec<u8>, Vec<f64>) {
        let values = self.gram.take_values();
        let meta = self.to_bytes();
        let mut head = Vec::with_capacity(Frame::values_at(meta.len()));
        head.extend_from_slice(&(meta.len() as u64).to_le_bytes());
        head.extend_from_slice(&meta);
        head.resize(Frame::values_at(meta.len()), 0);
        (head, values)
    }

    /// Reads a whole frame held in memory (natively, and in tests): the partial and its band's
    /// values, to merge with [`PassPartial::merge_from`].
    pub fn from_frame(bytes: &[u8]) -> Result<(PassPartial, Vec<f64>), PassError> {
        let frame = Frame::read(bytes.get(..8).unwrap_or(bytes), bytes.len() as u64)?;
        let partial = PassPartial::from_bytes(bytes.get(frame.meta.clone()).unwrap_or(&[]))?;
        let values = bytes
            .get(frame.values_at..)
            .unwrap_or(&[])
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect();
        Ok((partial, values))
    }
}

/// Where the parts of a partial's message lie ([`PassPartial::into_frame`]):
/// the length `m` of the rest of the partial (u64, little-endian), that rest (postcard), zero
/// bytes up to a multiple of 8, then G's values, whole or a band (f64, little-endian; none on the
/// row route or for a G that stayed zero).
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Bytes of the partial without its G's values.
    pub meta: std::ops::Range<usize>,
    /// Byte offset of the values: a multiple of 8, so they can be read as f64 in place.
    pub values_at: usize,
    /// How many values.
    pub values: usize,
}

impl Frame {
    fn values_at(meta_len: usize) -> usize {
        (8 + meta_len).next_multiple_of(8)
    }

    /// The parts of a message of `total` bytes whose first 8 bytes are `first`: an error if they
    /// do not fit it (a truncated or foreign message).
    pub fn read(first: &[u8], total: u64) -> Result<Frame, PassError> {
        let length: [u8; 8] =
            first.try_into().map_err(|_| unreadable(format!("{total} bytes, too short for a partial")))?;
        let meta_len = u64::from_le_bytes(length);
        let values_at = meta_len.checked_add(15).map(|n| n / 8 * 8).filter(|&at| at <= total);
        let (Some(values_at), Ok(meta_len)) = (values_at, usize::try_from(meta_len)) else {
            return Err(unreadable(format!("a partial of {meta_len} bytes in a message of {total}")));
        };
        let rest = total - values_at;
        if !rest.is_multiple_of(8) {
            return Err(unreadable(format!("{rest} bytes of band values are not whole f64 values")));
        }
        let (Ok(values_at), Ok(values)) = (usize::try_from(values_at), usize::try_from(rest / 8)) else {
            return Err(unreadable(format!("a message of {total} bytes")));
        };
        Ok(Frame { meta: 8..8 + meta_len, values_at, values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pass::kernel::{padded_dim, BandValues};
    use crate::pass::shares::column_band;
    use crate::pass::stats::GramMoments;
    use crate::read::matrix::RowFate;

    /// `n` unit rows of width `dim` (seeded), each padded to the kernel's lanes.
    fn unit_rows(n: usize, dim: usize, seed: u64) -> Vec<f64> {
        let d = padded_dim(dim);
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut out = vec![0.0; n * d];
        for row in out.chunks_exact_mut(d) {
            for x in row.iter_mut().take(dim) {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                // A shared direction (+0.3) so that μ is not 0 and the centre matters.
                *x = (state >> 11) as f64 / (1u64 << 53) as f64 - 0.2;
            }
            let norm = row.iter().map(|x| x * x).sum::<f64>().sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        out
    }

    /// A partial of `gram` over `n` rows (one zero row among them), over `blocks` blocks.
    fn partial_of(mut gram: PairAccumulator, n: usize, seed: u64, blocks: u64) -> PassPartial {
        let dim = gram.dim();
        gram.add_unit_rows(&unit_rows(n, dim, seed));
        (0..n).for_each(|_| gram.record(RowFate::Kept));
        gram.record(RowFate::Zero);
        let within = WithinBlock { sum: 0.1 * seed as f64, sum_sq: 0.02, pairs: 3 * blocks, blocks };
        PassPartial { gram, within, blocks_seen: blocks, random_phase: None }
    }

    fn f32_centred(dim: usize, seed: u64) -> PairAccumulator {
        let mut g = GramMoments::with_precision(dim, Precision::F32);
        let centre = unit_rows(1, dim, seed + 100);
        g.set_centre(&centre.iter().map(|x| x * 0.5).collect::<Vec<_>>());
        PairAccumulator::Gram(g)
    }

    /// Comes back from its bytes bit for bit (the bytes hold every f64 as its bits), and merges
    /// into another partial exactly as the partial itself does.
    fn round_trips(p: &PassPartial, into: &PassPartial) -> PassPartial {
        let back = PassPartial::from_bytes(&p.to_bytes()).unwrap();
        assert_eq!(back.to_bytes(), p.to_bytes());
        assert_eq!(back.gram.moments().map(|m| m.sigma.to_bits()), p.gram.moments().map(|m| m.sigma.to_bits()));
        let (mut a, mut b) = (into.clone(), into.clone());
        a.merge(p).unwrap();
        b.merge(&back).unwrap();
        // Bit for bit but for the kernel's clock (a merge may run waiting rows through it).
        let untimed = |mut p: PassPartial| {
            if let PairAccumulator::Gram(g) = &mut p.gram {
                g.kernel_ms = 0.0;
            }
            p.to_bytes()
        };
        assert!(untimed(a) == untimed(b), "merged bit for bit");
        back
    }

    #[test]
    fn partials_on_either_route_come_back_bit_for_bit() {
        // The Gram route in f64, and in f32 centred with rows still waiting for the kernel.
        let f64_partial = partial_of(PairAccumulator::new(10_000, 100), 40, 1, 3);
        round_trips(&f64_partial, &partial_of(PairAccumulator::new(10_000, 100), 30, 2, 2));
        let waiting = partial_of(f32_centred(1024, 3), 10, 3, 1);
        let PairAccumulator::Gram(g) = &waiting.gram else { panic!("the Gram route") };
        assert!(g.pending_rows() > 0 && g.centre_parts().is_some(), "rows wait in a centred f32 batch");
        let back = round_trips(&waiting, &partial_of(f32_centred(1024, 3), 20, 4, 2));
        let PairAccumulator::Gram(b) = &back.gram else { panic!("the Gram route") };
        assert_eq!(b.pending_rows(), 10, "a partial is never short of rows");
        // The row route: few rows of a wide matrix.
        let rows = partial_of(PairAccumulator::new(8, 200), 5, 5, 1);
        assert!(matches!(rows.gram, PairAccumulator::Rows(_)));
        round_trips(&rows, &partial_of(PairAccumulator::new(8, 200), 3, 6, 1));
    }

    #[test]
    fn a_random_phase_comes_back_with_its_partial() {
        let mut p = partial_of(PairAccumulator::new(10_000, 40), 50, 7, 4);
        p.random_phase = Some(Box::new(partial_of(PairAccumulator::new(10_000, 40), 20, 8, 2)));
        let back = round_trips(&p, &partial_of(PairAccumulator::new(10_000, 40), 10, 9, 1));
        assert_eq!(back.random_phase.map(|r| r.to_bytes()), p.random_phase.map(|r| r.to_bytes()));
    }

    #[test]
    fn a_band_comes_back_from_its_frame_and_is_placed_bit_for_bit() {
        let dim = 130;
        let band = |index: u32| {
            let mut gram = f32_centred(dim, 11);
            gram.set_band(column_band(dim, index, 2));
            let mut p = partial_of(gram, 30, 12, 5);
            p.gram.flush();
            p
        };
        let (lead, other) = (band(0), band(1));
        assert!(other.gram.is_band());
        let (head, values) = other.clone().into_frame();
        let bytes: Vec<u8> = head.into_iter().chain(values.iter().flat_map(|v| v.to_le_bytes())).collect();
        let (back, apart) = PassPartial::from_frame(&bytes).unwrap();
        assert_eq!(
            apart.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            values.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let (mut a, mut b) = (lead.clone(), lead.clone());
        a.merge(&other).unwrap();
        b.merge_from(&back, Some(&apart.as_slice() as &dyn BandValues)).unwrap();
        assert!(!a.gram.is_band() && a.gram == b.gram, "the bands placed into one G, bit for bit");
        // Values apart that are not the band's are refused, and change nothing.
        let mut c = lead.clone();
        let short = &apart[..apart.len() - 1];
        assert!(matches!(c.merge_from(&back, Some(&short as &dyn BandValues)), Err(PassError::Band(_))));
        assert!(c.gram == lead.gram);
    }

    /// `p`'s message with its Gram sums forged by `forge`, read back.
    fn forged(p: &PassPartial, forge: impl FnOnce(&mut GramMessage)) -> Result<PassPartial, PassError> {
        let mut m = PartialMessage::from(p);
        let SumsMessage::Gram(g) = &mut m.whole.sums else { panic!("the Gram route") };
        forge(g);
        PassPartial::from_bytes(&postcard::to_allocvec(&m).unwrap())
    }

    #[test]
    fn a_truncated_or_forged_message_is_refused() {
        let p = partial_of(PairAccumulator::new(10_000, 100), 40, 1, 3);
        let bytes = p.to_bytes();
        for cut in [0, 1, 9, bytes.len() / 2, bytes.len() - 1] {
            assert!(matches!(PassPartial::from_bytes(&bytes[..cut]), Err(PassError::Unreadable(_))), "{cut} bytes");
        }
        assert!(matches!(PassPartial::from_bytes(&[1, 2, 3]), Err(PassError::Unreadable(_))));
        let unreadable = |r: Result<PassPartial, PassError>| matches!(r, Err(PassError::Unreadable(_)));
        assert!(unreadable(forged(&p, |g| g.dim = 200)), "a width its s does not have");
        assert!(unreadable(forged(&p, |g| g.dim = u64::MAX)), "a width past any machine");
        assert!(
            unreadable(forged(&p, |g| {
                g.triangle.values.to_mut().pop();
            })),
            "G short"
        );
        assert!(unreadable(forged(&p, |g| g.triangle.end_panel += 2)), "panels past the triangle");
        assert!(unreadable(forged(&p, |g| g.triangle.first_panel = 1)), "half an octet");
        assert!(unreadable(forged(&p, |g| g.counts.kept += 1)), "counts that do not add up");
        assert!(unreadable(forged(&p, |g| g.centre = Cow::Owned(vec![0.0; 3]))), "a centre of another width");
        let waiting = partial_of(f32_centred(1024, 3), 10, 3, 1);
        assert!(unreadable(forged(&waiting, |g| {
            if let Some(p) = g.pending.as_mut() {
                p.packed.to_mut().truncate(100);
            }
        })));
        assert!(unreadable(forged(&waiting, |g| {
            if let Some(p) = g.pending.as_mut() {
                p.rows = 500;
            }
        })));
        // The row route: rows of another width, or not those counted.
        let rows = partial_of(PairAccumulator::new(8, 200), 5, 5, 1);
        let mut m = PartialMessage::from(&rows);
        let SumsMessage::Rows(r) = &mut m.whole.sums else { panic!("the row route") };
        let cut = r.units.len() - 8;
        r.units.to_mut().truncate(cut);
        assert!(unreadable(PassPartial::from_bytes(&postcard::to_allocvec(&m).unwrap())));
        // A well-formed partial of another width is refused where it is merged.
        let mut other = PassPartial::empty(6);
        assert_eq!(other.merge(&p), Err(PassError::DimMismatch { expected: 6, got: 100 }));
        // A whole G's values apart that do not fit it.
        let (head, values) = p.clone().into_frame();
        let (back, _) = PassPartial::from_frame(&head).unwrap();
        let mut lead = partial_of(PairAccumulator::new(10_000, 100), 30, 2, 2);
        let short = &values[..values.len() - 1];
        assert!(matches!(lead.merge_from(&back, Some(&short as &dyn BandValues)), Err(PassError::Values(_))));
    }
}
