//! The sample phase: the histogram's row sample read, all pairs among it (histogram, uncertainty
//! model), and the arithmetic it chooses for the pass.

use super::*;

/// Takes in block `pair_block` of the sample's pairs from `products` (rows i0..i1 against rows
/// i0..n of the sample's `n` rows), keeping pairs i < j; pairs within a block are left out unless
/// the sample is the whole matrix (`whole`, see PairSample).
fn take_sample_pairs(sample: &mut PairSample, products: &[f32], pair_block: usize, n: usize, whole: bool) {
    let i0 = pair_block * MAX_CHUNK_ROWS;
    let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
    let nb = n.saturating_sub(i0);
    for i in 0..i1.saturating_sub(i0) {
        for j in i + 1..nb {
            if whole || sample.block.get(i0 + i) != sample.block.get(i0 + j) {
                sample.add_pair(i0 + i, i0 + j, products.get(i * nb + j).copied().unwrap_or(0.0));
            }
        }
    }
}

impl Analysis {
    pub(super) fn step_sample(&mut self) -> Result<(), Error> {
        let mut s = match std::mem::replace(&mut self.stage, Stage::Sample(SampleRead::default())) {
            Stage::Sample(s) => s,
            other => {
                self.stage = other;
                return Ok(());
            }
        };
        let read = self.read_sample_block(&mut s);
        if read.is_err() || s.read < self.plan.sample_blocks {
            self.stage = Stage::Sample(s);
            return read;
        }
        let mut sample = PairSample::new(s.blocks).with_row_ids(s.row_ids);
        // Only with rows set aside: `take` must not empty the sample otherwise.
        if let Some(set) = self.set_aside.clone() {
            sample = sample.with_set_aside(|row| set.mask_of(row));
        }
        self.pair_sample = Some(sample);
        self.sample_blocks_kept = Some(s.blocks_kept);
        self.stage = Stage::SamplePairs(SamplePairs { units: s.units, pair_block: 0, counts: s.counts });
        // What the sample shows may make the pass one that sweeps (`read_bound`).
        self.arrange_plan();
        Ok(())
    }

    /// Reads the next block of the sample into `s`: one sample block per step, one read of
    /// adjacent rows.
    fn read_sample_block(&mut self, s: &mut SampleRead) -> Result<(), Error> {
        let Some(&block) = self.plan.sample().get(s.read) else { return Ok(()) };
        let (first, stop) = self.plan.block_range(block);
        let count = (stop - first) as usize;
        let decoded = self.read_rows(first, count)?;
        for _ in decoded..count {
            s.counts.record(RowFate::Zero);
        }
        if s.read == 0 {
            // Exactly the sample's rows: grown by doubling, the buffer would take twice their
            // 134 MB at d = 16384, and wasm memory would keep every smaller buffer it outgrew.
            let rows = usize::try_from(self.plan.sample_rows()).unwrap_or(0);
            s.units.reserve_exact(rows.saturating_mul(self.dim_padded));
        }
        let kept_before = s.counts.kept;
        for r in 0..decoded {
            let at = s.units.len();
            s.units.resize(at + self.dim_padded, 0.0);
            let fate = normalise_row(&self.scratch.decoded[r * self.dim..(r + 1) * self.dim], &mut s.units[at..]);
            s.counts.record(fate);
            if fate == RowFate::Kept {
                s.blocks.push(block);
                s.row_ids.push(first + r as u64);
            } else {
                s.units.truncate(at);
            }
        }
        if s.counts.kept > kept_before {
            s.blocks_kept += 1;
        }
        s.read += 1;
        Ok(())
    }

    /// One block of the sample's pairs; the pass begins after the last.
    pub(super) fn step_sample_pairs(&mut self) -> Result<(), Error> {
        let d = self.dim_padded;
        // Pairs within a block are left out unless the sample is the whole matrix (see PairSample).
        let whole = self.plan.sample_blocks >= self.plan.blocks.len();
        let Stage::SamplePairs(p) = &mut self.stage else { return Ok(()) };
        let n = p.units.len() / d;
        let i0 = p.pair_block * MAX_CHUNK_ROWS;
        let more = match self.pair_sample.as_mut() {
            Some(sample) if i0 < n => {
                let i1 = (i0 + MAX_CHUNK_ROWS).min(n);
                // Rows i0..i1 against rows i0..n.
                let a = &p.units[i0 * d..i1 * d];
                let b = &p.units[i0 * d..n * d];
                self.scratch.units.resize((i1 - i0) * (n - i0), 0.0);
                kernel::dots(a, b, d, &mut self.scratch.units);
                take_sample_pairs(sample, &self.scratch.units, p.pair_block, n, whole);
                p.pair_block += 1;
                i1 < n
            }
            _ => false,
        };
        if more {
            return Ok(());
        }
        self.end_sample()
    }

    /// The sample's pairs are all in: the precision and the centre are chosen, the GPU offered
    /// starts, and the pass begins. The sample's unit rows (2048 × d f32: 134 MB at d = 16384),
    /// which have given the histogram, the precision and the centre, are freed with their stage
    /// before G is first written, so that G can take their room.
    fn end_sample(&mut self) -> Result<(), Error> {
        let units = match std::mem::replace(&mut self.stage, Stage::Pass(Driver::Cpu)) {
            Stage::SamplePairs(p) => p.units,
            other => {
                self.stage = other;
                return Ok(());
            }
        };
        self.choose_precision(&units);
        self.stage = Stage::Pass(self.cpu_driver());
        self.start_gpu(&units)
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
        let d = self.dim_padded;
        let whole = self.plan.sample_blocks >= self.plan.blocks.len();
        let blocks = self.sample_pair_blocks();
        let Stage::SamplePairs(p) = &mut self.stage else { return Ok(false) };
        let n = p.units.len() / d.max(1);
        let dots = dots_of(&p.units, d, &blocks);
        if dots.len() != blocks.len() || blocks.iter().zip(&dots).any(|(b, v)| v.len() != b.len() * (n - b.start)) {
            return Ok(false);
        }
        for products in dots {
            if let Some(sample) = self.pair_sample.as_mut() {
                take_sample_pairs(sample, &products, p.pair_block, n, whole);
            }
            p.pair_block += 1;
            self.scratch.units = products;
        }
        self.end_sample()?;
        Ok(true)
    }

    /// The blocks of the histogram sample's pairs not yet taken in, in order: rows i0..i1 (at most
    /// [`MAX_CHUNK_ROWS`]) of the sample's unit rows, each against rows i0..n. Empty outside
    /// [`Phase::SamplePairs`].
    pub fn sample_pair_blocks(&self) -> Vec<std::ops::Range<usize>> {
        let Stage::SamplePairs(p) = &self.stage else { return Vec::new() };
        let n = p.units.len() / self.dim_padded.max(1);
        (p.pair_block * MAX_CHUNK_ROWS..n).step_by(MAX_CHUNK_ROWS).map(|i0| i0..(i0 + MAX_CHUNK_ROWS).min(n)).collect()
    }

    /// The dot products of one block of [`Analysis::sample_pair_blocks`], as a step computes them
    /// (empty for a block outside the sample): a page's helper computes some for its lead, whose
    /// [`Analysis::finish_sample_pairs_with`] takes them in.
    pub fn sample_pair_dots(&self, rows: &std::ops::Range<usize>) -> Vec<f32> {
        match &self.stage {
            Stage::SamplePairs(p) => sample_block_dots(&p.units, self.dim_padded, rows),
            _ => Vec::new(),
        }
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
        match &self.stage {
            Stage::Sample(s) if s.read == 0 => self.sample_blocks_kept = Some(0),
            Stage::SamplePairs(p) if p.pair_block == 0 => {}
            _ => return false,
        }
        // The sample's rows are not needed any more (`end_sample`): they go with their stage.
        self.pair_sample = None;
        if verdict.f64 {
            self.gram.use_f64();
        }
        if let Some(centre) = &verdict.centre {
            self.gram.set_centre(centre);
        }
        self.precision_reason = verdict.precision_reason.clone();
        self.verdict = Some(verdict.clone());
        self.stage = Stage::Pass(self.cpu_driver());
        true
    }

    /// Before the pass: keeps f32 only where the sample says it meets the exactness targets
    /// (`kernel::f32_suffices`); the accumulator is still empty, so it is simply replaced.
    pub(super) fn choose_precision(&mut self, sample_units: &[f32]) {
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
                        if let Some(centre) = mean_row(sample_units, self.dim_padded) {
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
