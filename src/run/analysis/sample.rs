//! The sample phase: the histogram's row sample read, all pairs among it (histogram, uncertainty
//! model), and the arithmetic it chooses for the pass.

use super::*;

impl Analysis {
    pub(super) fn step_sample(&mut self) -> Result<(), Error> {
        // One sample block per step: one read of adjacent rows.
        if let Some(&block) = self.plan.sample().get(self.sample_read) {
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            let decoded = self.read_rows(first, count)?;
            for _ in decoded..count {
                self.sample_counts.record(RowFate::Zero);
            }
            if self.sample_read == 0 {
                // Exactly the sample's rows: grown by doubling, the buffer would take twice their
                // 134 MB at d = 16384, and wasm memory would keep every smaller buffer it outgrew.
                let rows = usize::try_from(self.plan.sample_rows()).unwrap_or(0);
                self.sample_units.reserve_exact(rows.saturating_mul(self.dim_padded));
            }
            let kept_before = self.sample_counts.kept;
            for r in 0..decoded {
                let at = self.sample_units.len();
                self.sample_units.resize(at + self.dim_padded, 0.0);
                let fate = normalise_row(&self.decoded[r * self.dim..(r + 1) * self.dim], &mut self.sample_units[at..]);
                self.sample_counts.record(fate);
                if fate == RowFate::Kept {
                    self.sample_block.push(block);
                    self.sample_row_ids.push(first + r as u64);
                } else {
                    self.sample_units.truncate(at);
                }
            }
            if self.sample_counts.kept > kept_before {
                self.sample_blocks_kept += 1;
            }
            self.sample_read += 1;
        }
        if self.sample_read >= self.plan.sample_blocks {
            self.pair_sample = Some(
                PairSample::new(std::mem::take(&mut self.sample_block))
                    .with_row_ids(std::mem::take(&mut self.sample_row_ids)),
            );
            // Only with rows set aside: `take` must not empty the sample otherwise.
            if let Some(set) = self.set_aside.clone() {
                self.pair_sample = self.pair_sample.take().map(|s| s.with_set_aside(|row| set.mask_of(row)));
            }
            self.phase = Phase::SamplePairs;
            // What the sample shows may make the pass one that sweeps (`read_bound`).
            self.arrange_plan();
        }
        Ok(())
    }

    pub(super) fn step_sample_pairs(&mut self) {
        let d = self.dim_padded;
        let n = self.sample_units.len() / d;
        if self.pair_sample.is_none() {
            self.phase = Phase::Pass;
            return;
        }
        let i0 = self.pair_block * MAX_CHUNK_ROWS;
        if i0 >= n {
            self.phase = Phase::Pass;
            return;
        }
        let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
        // Rows i0..i1 against rows i0..n.
        let a = &self.sample_units[i0 * d..i1 * d];
        let b = &self.sample_units[i0 * d..n * d];
        self.units.resize((i1 - i0) * (n - i0), 0.0);
        kernel::dots(a, b, d, &mut self.units);
        self.take_sample_pairs();
        if i1 >= n {
            self.phase = Phase::Pass;
        }
    }

    /// Takes in block `pair_block` of the sample's pairs from `self.units` (rows i0..i1 against
    /// rows i0..n), keeping pairs i < j, and moves on to the next block.
    pub(super) fn take_sample_pairs(&mut self) {
        let n = self.sample_units.len() / self.dim_padded.max(1);
        // Pairs within a block are left out unless the sample is the whole matrix (see PairSample).
        let whole = self.plan.sample_blocks >= self.plan.blocks.len();
        let Some(sample) = self.pair_sample.as_mut() else { return };
        let i0 = self.pair_block * MAX_CHUNK_ROWS;
        let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
        let nb = n.saturating_sub(i0);
        for i in 0..i1.saturating_sub(i0) {
            for j in i + 1..nb {
                if whole || sample.block.get(i0 + i) != sample.block.get(i0 + j) {
                    sample.add_pair(i0 + i, i0 + j, self.units.get(i * nb + j).copied().unwrap_or(0.0));
                }
            }
        }
        self.pair_block += 1;
    }

    /// The sample's pairs are all in: the precision and the centre are chosen, the GPU offered
    /// starts, and the sample's unit rows (2048 × d f32: 134 MB at d = 16384), which have given the
    /// histogram, the precision and the centre, are freed before G is first written, so that G can
    /// take their room.
    pub(super) fn end_sample(&mut self) -> Result<(), Error> {
        self.choose_precision();
        self.start_gpu()?;
        self.sample_units = Vec::new();
        Ok(())
    }

    /// Ends the sample at once where the caller has cores to spare (the CLI's threads): once the
    /// sample's rows are read (the phase is [`Phase::SamplePairs`]), `dots_of` computes the dot
    /// products of every remaining block of [`MAX_CHUNK_ROWS`] sample rows against the rows from
    /// its own on, as [`kernel::dots`] would — given the unit rows (`dim_padded` each), d_pad and
    /// the blocks' row ranges, it returns one `(i1 − i0) × (n − i0)` array per block, in order —
    /// and the pairs are then taken in exactly as the steps would have taken them, block by block:
    /// the same histogram, moments and verdict, bit for bit. Returns false (nothing done) in
    /// another phase or when `dots_of` returns arrays of the wrong sizes.
    pub fn finish_sample_pairs_with(
        &mut self,
        dots_of: impl FnOnce(&[f32], usize, &[std::ops::Range<usize>]) -> Vec<Vec<f32>>,
    ) -> Result<bool, Error> {
        if self.phase != Phase::SamplePairs {
            return Ok(false);
        }
        let d = self.dim_padded;
        let n = self.sample_units.len() / d.max(1);
        let blocks = self.sample_pair_blocks();
        let dots = dots_of(&self.sample_units, d, &blocks);
        if dots.len() != blocks.len() || blocks.iter().zip(&dots).any(|(b, v)| v.len() != b.len() * (n - b.start)) {
            return Ok(false);
        }
        for products in dots {
            self.units = products;
            self.take_sample_pairs();
        }
        self.phase = Phase::Pass;
        self.end_sample()?;
        Ok(true)
    }

    /// The blocks of the histogram sample's pairs not yet taken in, in order: rows i0..i1 (at most
    /// [`MAX_CHUNK_ROWS`]) of the sample's unit rows, each against rows i0..n. Empty outside
    /// [`Phase::SamplePairs`].
    pub fn sample_pair_blocks(&self) -> Vec<std::ops::Range<usize>> {
        if self.phase != Phase::SamplePairs {
            return Vec::new();
        }
        let n = self.sample_units.len() / self.dim_padded.max(1);
        (self.pair_block * MAX_CHUNK_ROWS..n)
            .step_by(MAX_CHUNK_ROWS)
            .map(|i0| i0..(i0 + MAX_CHUNK_ROWS).min(n))
            .collect()
    }

    /// The dot products of one block of [`Analysis::sample_pair_blocks`], as a step computes them
    /// (empty for a block outside the sample): a page's helper computes some for its lead, whose
    /// [`Analysis::finish_sample_pairs_with`] takes them in.
    pub fn sample_pair_dots(&self, rows: &std::ops::Range<usize>) -> Vec<f32> {
        sample_block_dots(&self.sample_units, self.dim_padded, rows)
    }

    /// What the sample decided for the pass (None until the sample is done): every share of a
    /// split pass must run with its lead's, since partials add only with the same precision and
    /// centre. A share given it ([`Analysis::skip_sample`]) need not read the sample itself.
    pub fn sample_verdict(&self) -> Option<&SampleVerdict> {
        self.verdict.as_ref()
    }

    /// Starts the pass of a share with its lead's [`SampleVerdict`] instead of reading and pairing
    /// the histogram's sample itself: before the first step, or once the sample is read (a page's
    /// helper reads it to pair some of it for its lead) and none of its pairs taken in. The
    /// share's partial is then the one it would have made. False (nothing done) otherwise.
    pub fn skip_sample(&mut self, verdict: &SampleVerdict) -> bool {
        let before = self.phase == Phase::Sample && self.sample_read == 0;
        let read = self.phase == Phase::SamplePairs && self.pair_block == 0;
        if !(before || read) {
            return false;
        }
        // The sample's rows are not needed any more (`end_sample`).
        self.sample_units = Vec::new();
        self.pair_sample = None;
        if verdict.f64 {
            self.gram.use_f64();
        }
        if let Some(centre) = &verdict.centre {
            self.gram.set_centre(centre);
        }
        self.precision_reason = verdict.precision_reason.clone();
        self.verdict = Some(verdict.clone());
        self.phase = Phase::Pass;
        true
    }

    /// Before the pass: keeps f32 only where the sample says it meets the exactness targets
    /// (`kernel::f32_suffices`); the accumulator is still empty, so it is simply replaced.
    pub(super) fn choose_precision(&mut self) {
        let mut verdict = SampleVerdict::default();
        if self.config.precision == Precision::F32 && self.gram.counts().seen == 0 {
            if self.gram.precision() == Precision::F64 {
                // The row route (few rows, wide rows) sums pair cosines in f64 without a Gram kernel.
                self.precision_reason = "few rows: pair cosines summed directly".to_string();
            } else {
                let judged = match self.pair_sample.as_ref().and_then(PairSample::moments) {
                    Some(m) => kernel::f32_suffices(m.mu, m.sigma),
                    None => Err("no sample to judge σ by".to_string()),
                };
                match judged {
                    Err(reason) => {
                        self.gram.use_f64();
                        self.precision_reason = reason;
                        verdict.f64 = true;
                    }
                    Ok(()) => {
                        // The sample's mean unit row as the f32 pass's centre (see `GramMoments`).
                        if let Some(centre) = mean_row(&self.sample_units, self.dim_padded) {
                            self.gram.set_centre(&centre);
                            verdict.centre = Some(centre);
                        }
                    }
                }
            }
        }
        verdict.precision_reason = self.precision_reason.clone();
        self.verdict = Some(verdict);
    }

    /// The Gram pass's arithmetic (decided when the pass begins).
    pub fn precision(&self) -> Precision {
        self.gram.precision()
    }
}
