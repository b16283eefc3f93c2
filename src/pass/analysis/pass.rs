//! The Gram pass on the CPU: how far each step goes and the step itself, over the plan's blocks.

use super::*;

/// The fate of a raw row read straight from the file (zero: every value ±0; non-finite: an
/// exponent of all ones), as `normalise_row` decides it for the decoded row.
#[cfg(feature = "gpu")]
pub(super) fn raw_fate(row: &[u8], kind: RawType) -> RowFate {
    let (mut zero, mut finite) = (true, true);
    match kind {
        RawType::F32 => {
            for b in row.chunks_exact(4) {
                let bits = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff;
                zero &= bits == 0;
                finite &= bits < 0x7f80_0000;
            }
        }
        RawType::Bf16 | RawType::F16 => {
            let exponent = if kind == RawType::Bf16 { 0x7f80 } else { 0x7c00 };
            for b in row.chunks_exact(2) {
                let bits = u16::from_le_bytes([b[0], b[1]]) & 0x7fff;
                zero &= bits == 0;
                finite &= bits & exponent != exponent;
            }
        }
    }
    if !finite {
        RowFate::NonFinite
    } else if zero {
        RowFate::Zero
    } else {
        RowFate::Kept
    }
}

/// The fate of a decoded row, as `normalise_row` decides it.
#[cfg(feature = "gpu")]
pub(super) fn decoded_fate(row: &[f32]) -> RowFate {
    if row.iter().any(|x| !x.is_finite()) {
        RowFate::NonFinite
    } else if row.iter().all(|&x| x == 0.0) {
        RowFate::Zero
    } else {
        RowFate::Kept
    }
}

/// The within-block measurement of one visited block, given its unit rows (`d` each, f64), added to
/// `within`: its pairs' cosines as f32 dot products through the SIMD kernel (this stratum only
/// steers an estimate). `units` and `dots` are reused buffers. The same on the CPU as for the GPU
/// pass.
pub(super) fn measure_within_block(
    unit_rows: &[f64],
    d: usize,
    units: &mut Vec<f32>,
    dots: &mut Vec<f32>,
    within: &mut WithinBlock,
) {
    let k = unit_rows.len() / d.max(1);
    units.clear();
    units.extend(unit_rows.iter().map(|&x| x as f32));
    dots.resize(k * k, 0.0);
    kernel::dots(units.as_slice(), units.as_slice(), d, dots);
    within.add_block(dots, k);
}

/// The running estimate's within-block stratum is measured on every this-many-th position of the
/// plan's order (⌈d/256⌉), on the CPU as for the GPU pass: a block of k rows costs k²·d
/// multiply-adds of dot products against the pass's k·d²/2, 128/d of it at k = 64, and in a tab
/// the dot products run at half the Gram kernel's rate. Measured on every block, they took
/// 0.32 s of a 6.7 s share at 32000×4096 in a tab. The positions do not depend on how the pass
/// is shared, so one worker and several measure the same blocks.
pub(super) fn within_every(dim: usize) -> usize {
    dim.div_ceil(256).max(1)
}

/// Rows a CPU step of the sweep (`Plan::sweep_tail`) takes at (padded) width `d`: one kernel
/// call's 64 at d = 1024, more below, so that a step stays ~2 MFLOP of arithmetic: in a worker
/// each step is a call from JavaScript with its read-ahead check, pacing and yield around it,
/// which at d = 256 cost about as much as 64 rows' arithmetic. (The random phase keeps one call a
/// step: a split by columns counts its checkpoints in steps, and the estimate moves at each.)
pub(super) fn step_rows(d: usize) -> u64 {
    let calls = (1024 * 1024 / (d * d).max(1)).clamp(1, 16);
    (MAX_CHUNK_ROWS * calls) as u64
}

impl Analysis {
    /// Rows counted so far: the CPU's record of the rows sent while the GPU pass runs.
    pub(super) fn counts(&self) -> RowCounts {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_run() {
            return run.counts;
        }
        self.gram.counts()
    }

    /// Blocks the pass visits: all, or the first ones holding at least `stop_after_rows` rows.
    pub(super) fn pass_target(&self) -> usize {
        match self.config.stop_after_rows {
            Some(limit) => self.plan.blocks_for_rows(limit),
            None => self.plan.blocks.len(),
        }
    }

    /// The position after the last one the next pass step visits. Blocks hold at most
    /// [`MAX_CHUNK_ROWS`] rows (see `new`), so each fits one kernel call; a step of the sweep takes
    /// several ([`step_rows`]; only narrow rows sweep), and a GPU step [`GPU_STEP_ROWS`].
    pub(super) fn step_end(&self) -> usize {
        let target = self.pass_target();
        #[cfg(feature = "gpu")]
        if self.on_gpu() {
            let blocks_per_step = (GPU_STEP_ROWS / self.plan.block_rows.max(1)).max(1) as usize;
            return (self.next_block + blocks_per_step).min(target);
        }
        let sweeping = self.plan.in_sweep(self.next_block);
        let rows = if sweeping { step_rows(self.dim_padded) } else { MAX_CHUNK_ROWS as u64 };
        let blocks_per_step = (rows / self.plan.block_rows).max(1) as usize;
        let end = (self.next_block + blocks_per_step * self.share.stride()).min(target);
        if sweeping {
            end
        } else {
            // A step ends where the sweep begins, so the random phase is kept apart exactly there.
            end.min(self.plan.sweep_from)
        }
    }

    /// How many of [`Analysis::upcoming_reads`] the next step takes: one block of the sample or of
    /// the random phase, several in a step of a sweep or of a GPU pass. A worker reads all of them
    /// ahead, not only the first: a step across the end of a batch read the rest one by one,
    /// ~1–2 ms each in a browser (~900 reads, ~1.8 s, of a 2,000,000×256 pass).
    pub fn step_reads(&self) -> usize {
        match self.stage {
            Stage::Pass(_) => {
                (self.next_block..self.step_end().max(self.next_block)).step_by(self.share.stride()).count().max(1)
            }
            _ => 1,
        }
    }

    pub(super) fn step_pass(&mut self) -> Result<(), Error> {
        let target = self.pass_target();
        if self.next_block >= target {
            // A share with no blocks left (or none at all: more shares than blocks).
            self.pass_done();
            return Ok(());
        }
        if self.plan.in_sweep(self.next_block) && self.random_phase.is_none() {
            // Into the sweep: what is held now is the random phase's, kept apart for the running
            // estimate and for a pass stopped early. A share by rows keeps all of it (small: only
            // narrow shares sweep), which the lead merges; a whole pass only its estimate.
            self.gram.flush();
            self.random_phase = Some(if self.share.of > 1 {
                RandomPhase::Share(Box::new(PassPartial {
                    gram: self.gram.clone(),
                    within: self.within,
                    blocks_seen: self.blocks_seen,
                    random_phase: None,
                }))
            } else {
                let counts = self.gram.counts();
                let estimate = self.gram.moments_so_far().map(|moments| self.snapshot(moments, counts));
                RandomPhase::Whole { counts, estimate }
            });
        }
        let sweeping = self.plan.in_sweep(self.next_block);
        let stride = self.share.stride();
        let end = self.step_end();
        let d = self.dim_padded;
        let every = within_every(self.dim);
        let mut kept = 0usize;
        // No more rows than the matrix has (two rows of d = 16384 need 256 KiB here, not 8 MiB).
        self.scratch.wide.resize(MAX_CHUNK_ROWS.min(self.rows as usize) * d, 0.0);
        // Within-block pairs feed the running estimate only, measured on every `within_every`-th
        // block of the plan's order; the final step of a whole pass skips them. A share by rows
        // cannot tell whether the others will finish, so it always keeps them; of a split by
        // columns, where every share sees every block, only the lead does. Nor does the sweep,
        // whose estimate is the random phase's.
        let estimating = if self.share.columns {
            self.share.index == 0 && end < self.plan.blocks.len()
        } else {
            (stride > 1 || end < self.plan.blocks.len()) && !sweeping
        };
        for bi in (self.next_block..end).step_by(stride) {
            let Some(&block) = self.plan.blocks.get(bi) else { break };
            self.blocks_seen += 1;
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            let decoded = self.read_rows(first, count)?;
            for _ in decoded..count {
                self.gram.record(RowFate::Zero);
            }
            if kept + count > MAX_CHUNK_ROWS {
                self.gram.add_unit_rows(&self.scratch.wide[..kept * d]);
                kept = 0;
            }
            let block_start = kept;
            for r in 0..decoded {
                let fate = normalise_row(
                    &self.scratch.decoded[r * self.dim..(r + 1) * self.dim],
                    &mut self.scratch.wide[kept * d..(kept + 1) * d],
                );
                self.gram.record(fate);
                if fate == RowFate::Kept {
                    kept += 1;
                }
            }
            if estimating && bi % every == 0 {
                let block = &self.scratch.wide[block_start * d..kept * d];
                measure_within_block(block, d, &mut self.scratch.units, &mut self.scratch.dots, &mut self.within);
            }
        }
        if kept > 0 {
            self.gram.add_unit_rows(&self.scratch.wide[..kept * d]);
        }
        self.pass_steps += 1;
        // The next position ≡ share.first() (mod stride) at or after `end`.
        self.next_block = end + (stride - (end - self.share.first()) % stride) % stride;
        if self.next_block >= target {
            self.pass_done();
        }
        Ok(())
    }
}
