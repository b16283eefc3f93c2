//! `Report::trained` of a finished analysis: for the default choice of rules and every other one
//! the user may switch to, the statistics without the rows those rules name — exact from the
//! pass's own s and G once the pass was exact (`pass::set_aside::moments_without`, which re-reads
//! only the set-aside rows), else from the histogram sample's pairs among the rest.

use std::cell::RefCell;

use crate::explain::suspected;
use crate::pass::analysis::Analysis;
use crate::pass::error::Error;
use crate::pass::kernel;
use crate::pass::set_aside::{moments_without, UnitRows};
use crate::pass::stats::TopPair;
use crate::read::matrix::Matrix;
use crate::read::untrained::{RowRanges, SetAside, UntrainedRule};
use crate::result::trained::{choices, default_rules, Measured, RuleRows, TrainedReport, Without};

/// The unit rows of a matrix, read again for the removal (`pass::set_aside::UnitRows`).
pub struct MatrixRows<'a> {
    matrix: &'a Matrix,
    /// Rows of the ranges read so far, for the cost of a removal in tests and the note.
    pub read: RefCell<u64>,
}

impl<'a> MatrixRows<'a> {
    pub fn new(matrix: &'a Matrix) -> Self {
        Self { matrix, read: RefCell::new(0) }
    }
}

impl UnitRows for MatrixRows<'_> {
    fn for_each_chunk(&self, ranges: &RowRanges, each: &mut dyn FnMut(&[f64])) -> Result<(), String> {
        let mut reader = self.matrix.rows().map_err(|e| e.to_string())?;
        let d = reader.dim();
        let padded = kernel::padded_dim(d);
        let mut chunk: Vec<f64> = Vec::with_capacity(kernel::MAX_CHUNK_ROWS * padded);
        for &(start, end) in ranges.ranges() {
            let mut at = start;
            while at < end {
                let n = (kernel::MAX_CHUNK_ROWS as u64).min(end - at);
                chunk.clear();
                reader
                    .rows_at(at, n, |_, unit| {
                        chunk.extend_from_slice(unit);
                        chunk.resize(chunk.len() + (padded - d), 0.0);
                    })
                    .map_err(|e| e.to_string())?;
                if !chunk.is_empty() {
                    each(&chunk);
                }
                *self.read.borrow_mut() += n;
                at += n;
            }
        }
        Ok(())
    }
}

/// The rows of `matrix` the suspected rule names (`explain::suspected`), against the rows the
/// names set aside in `analysis` (its pass over the same matrix); `whole_pass` when that pass
/// visited every row, so that its G gives the principal direction; `untied` when the matrix is an
/// input embedding with an output matrix of its own (then short rows are suspected too). None when
/// the rule does not apply, names no row, or the matrix cannot be read again (which costs the rule,
/// not the result).
pub fn suspected_rows(analysis: &Analysis, matrix: &Matrix, whole_pass: bool, untied: bool) -> Option<RowRanges> {
    let set = analysis.set_aside_rows()?;
    // The rows a token's name sets aside; a dictionary's dead latents are not a token matrix's
    // untrained rows, and the indicator is not calibrated for them.
    let known = set.union(UntrainedRule::PastVocabulary.bit() | UntrainedRule::UnusedToken.bit());
    let pass = whole_pass.then(|| analysis.accumulator());
    suspected::suspected_rows(matrix, &known, pass, untied).ok().flatten().map(|s| s.rows)
}

/// The trained-rows report of `analysis` (over `matrix`, the same tensor), with `extra` rows a
/// rule found after the pass (the suspected ones); None when no rule named a row or the pass has
/// no result yet.
pub fn trained_report(
    analysis: &Analysis,
    matrix: &Matrix,
    extra: Option<RowRanges>,
) -> Result<Option<TrainedReport>, Error> {
    let Some(before) = analysis.set_aside_rows() else { return Ok(None) };
    let mut set = before.clone();
    if let Some(rows) = extra {
        set = set.with_rule(UntrainedRule::Suspected, rows);
    }
    if set.is_empty() {
        return Ok(None);
    }
    let default = default_rules(&set);
    let default = if default == 0 { set.present() } else { default };
    let read = MatrixRows::new(matrix);
    let mut measured: Vec<Without> = Vec::new();
    for enabled in choices(&set, default) {
        if let Some(w) = without(analysis, &set, before, enabled, &read)? {
            measured.push(w);
        }
    }
    if measured.is_empty() {
        return Ok(None);
    }
    let without = measured.remove(0);
    let rules = set
        .rules
        .iter()
        .map(|(r, rows)| RuleRows { rule: r.name().to_string(), rows: rows.rows(), enabled: default & r.bit() != 0 })
        .collect();
    Ok(Some(TrainedReport { rules, without, variants: measured }))
}

/// The statistics without the rules in `enabled`; `before` is what the sample was told of (the
/// rules found after the pass are filtered out of its pairs instead). None with under two rows left.
fn without(
    analysis: &Analysis,
    set: &SetAside,
    before: &SetAside,
    enabled: u8,
    read: &MatrixRows<'_>,
) -> Result<Option<Without>, Error> {
    let aside = set.union(enabled);
    let known = enabled & before.present();
    let later = set.union(enabled & !before.present());
    let exact = analysis.is_exact();
    let moments = if exact {
        moments_without(analysis.accumulator(), &aside, analysis.rows(), read)
            .map_err(|reason| Error::SetAside { tensor: analysis.tensor().name.clone(), reason })?
    } else {
        analysis.pair_sample().and_then(|s| s.aside.as_ref()).and_then(|a| a.kept_moments(known))
    };
    let Some(moments) = moments.filter(|m| m.rows >= 2) else { return Ok(None) };
    let (top_pairs, antipodal_pairs, aside_counts) = match analysis.pair_sample() {
        Some(sample) => match &sample.aside {
            Some(a) => (
                a.kept_top(known, &sample.row_ids, &later),
                a.kept_opposed(known, &sample.row_ids, &later),
                a.aside_counts(known),
            ),
            None => {
                let kept = |p: &TopPair| !aside.contains(p.a) && !aside.contains(p.b);
                let mut top = sample.top_pairs();
                top.retain(kept);
                let mut opposed = sample.antipodal_pairs();
                opposed.retain(kept);
                (top, opposed, Vec::new())
            }
        },
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let m = Measured { moments, exact, top_pairs, antipodal_pairs, aside_counts };
    Ok(Some(Without::new(set, enabled, &aside, analysis.dim() as u64, m)))
}
