//! The Gram pass driven on a GPU: started after the sample where f32 suffices, stepped
//! synchronously (reads and submissions), settled, refreshed and finished by the caller's awaits.

#[cfg(feature = "gpu")]
use super::pass::{decoded_fate, measure_within_block, raw_fate, within_every};
use super::*;

/// Whether `driver` runs the pass on the GPU.
pub(super) fn is_gpu(driver: &Driver) -> bool {
    #[cfg(feature = "gpu")]
    return matches!(driver, Driver::Gpu(_));
    #[cfg(not(feature = "gpu"))]
    {
        let _ = driver;
        false
    }
}

impl Analysis {
    /// Offers a GPU for the Gram pass; call before the first step. It runs there when the sample
    /// says f32 suffices, the pass uses the Gram route and is not split over workers; otherwise on
    /// the CPU, and [`Analysis::gpu_declined`] says why.
    pub fn set_gpu(&mut self, gpu: Rc<GpuContext>) {
        self.gpu.offered = Some(gpu);
        self.arrange_plan();
    }

    /// Why the GPU offered did not run the pass (None: none was offered, or it ran it).
    pub fn gpu_declined(&self) -> Option<&str> {
        self.gpu.declined.as_deref()
    }

    /// The adapter that ran the Gram pass, once its sums were read back.
    pub fn gpu_info(&self) -> Option<&GpuInfo> {
        self.gpu.ran.as_ref()
    }

    /// Whether the Gram pass is running on the GPU (its sums not yet read back).
    pub fn on_gpu(&self) -> bool {
        self.driver().is_some_and(is_gpu)
    }

    /// The GPU pass, while it runs.
    #[cfg(feature = "gpu")]
    pub(super) fn gpu_run(&self) -> Option<&GpuRun> {
        match self.driver() {
            Some(Driver::Gpu(run)) => Some(run),
            _ => None,
        }
    }

    #[cfg(feature = "gpu")]
    fn gpu_run_mut(&mut self) -> Option<&mut GpuRun> {
        match self.driver_mut() {
            Some(Driver::Gpu(run)) => Some(run),
            _ => None,
        }
    }

    /// After `choose_precision`: starts the GPU pass where it gives the CPU pass's answer (f32
    /// with the Gram route, the whole pass), or records why not. The GPU's centre is the CPU f32
    /// pass's: the sample's mean unit row.
    pub(super) fn start_gpu(&mut self, sample_units: &[f32]) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        {
            let Some(ctx) = self.gpu.offered.clone() else { return Ok(()) };
            let cpu = "the pass ran on the CPU";
            let declined = if self.share.of > 1 {
                Some(format!("the pass is split over {} workers; {cpu}", self.share.of))
            } else {
                match &self.gram {
                    PairAccumulator::Rows(_) => Some(format!("few rows: pair cosines summed directly; {cpu}")),
                    PairAccumulator::Gram(g) if g.precision() == Precision::F64 => {
                        Some(if self.config.precision == Precision::F64 {
                            "f64 was asked for (precision=f64); the exact f64 pass ran on the CPU".to_string()
                        } else {
                            format!(
                                "the sample says f32 is not enough: {}; the exact f64 pass ran on the CPU",
                                self.precision_reason
                            )
                        })
                    }
                    PairAccumulator::Gram(_) => None,
                }
            };
            if let Some(why) = declined {
                self.gpu.declined = Some(why);
                return Ok(());
            }
            let centre = mean_row(sample_units, self.dim_padded);
            let options = GramOptions { block_rows: block_rows_for(self.dim), ..GramOptions::default() };
            let info = ctx.info().clone();
            let gram = GpuGram::new(ctx, self.dim, centre.as_deref(), options)?;
            // The CPU accumulator's d²/2 values are not needed until the sums come back.
            self.gram = PairAccumulator::Gram(GramMoments::with_precision(0, Precision::F32));
            self.within.blocks = 0;
            self.stage = Stage::Pass(Driver::Gpu(Box::new(GpuRun {
                gram,
                info,
                counts: RowCounts::default(),
                started_ms: crate::pass::kernel::bench::now_ms(),
                snapshot: None,
            })));
        }
        #[cfg(not(feature = "gpu"))]
        let _ = sample_units;
        Ok(())
    }

    /// One step of the GPU pass: up to [`GPU_STEP_ROWS`] rows read in the plan's order and
    /// submitted (raw F32/BF16/F16 bytes as they are, other types decoded here); nothing waits for
    /// the GPU. The running estimate's within-block stratum is measured on the CPU for every
    /// ⌈d/256⌉-th block of the plan's seeded random order only: k²·d/2 multiply-adds for a block
    /// of k rows against the GPU's k·d²/2, so the CPU keeps up, and the blocks measured are an
    /// unbiased sample of those visited (`WithinBlock::scaled_to`). It never touches the exact sums.
    #[cfg(feature = "gpu")]
    pub(super) fn step_pass_gpu(&mut self) -> Result<(), Error> {
        let target = self.pass_target();
        let end = self.step_end();
        let Stage::Pass(Driver::Gpu(run)) = &mut self.stage else { return Ok(()) };
        if self.next_block >= target {
            self.pass_done();
            return Ok(());
        }
        let estimating = end < self.plan.blocks.len();
        let every = within_every(self.dim);
        let kind = RawType::of(&self.tensor.dtype);
        let (dim, d, row_bytes) = (self.dim, self.dim_padded, self.row_bytes as usize);
        for bi in self.next_block..end {
            let Some(&block) = self.plan.blocks.get(bi) else { break };
            self.blocks_seen += 1;
            let (first, stop) = self.plan.block_range(block);
            let count = (stop - first) as usize;
            self.scratch.raw.resize(count * row_bytes, 0);
            self.source.read_at(self.tensor.byte_range.0 + first * self.row_bytes, &mut self.scratch.raw)?;
            let measure = estimating && bi % every == 0;
            if kind.is_none() || measure {
                self.scratch.decoded.resize(count * dim, 0.0);
                decode_rows(&self.scratch.raw, &self.tensor.dtype, dim, &mut self.scratch.decoded)
                    .map_err(|source| Error::Decode { tensor: self.tensor.name.clone(), source })?;
            }
            match kind {
                Some(kind) => {
                    for row in self.scratch.raw.chunks_exact(row_bytes.max(1)).take(count) {
                        run.counts.record(raw_fate(row, kind));
                    }
                    run.gram.add_raw_rows(&self.scratch.raw, &self.tensor.dtype)?;
                }
                None => {
                    for row in self.scratch.decoded.chunks_exact(dim.max(1)).take(count) {
                        run.counts.record(decoded_fate(row));
                    }
                    run.gram.add_rows(&self.scratch.decoded[..count * dim])?;
                }
            }
            if measure {
                self.scratch.wide.resize(count * d, 0.0);
                let mut kept = 0;
                for r in 0..count {
                    let (Some(row), Some(out)) = (
                        self.scratch.decoded.get(r * dim..(r + 1) * dim),
                        self.scratch.wide.get_mut(kept * d..(kept + 1) * d),
                    ) else {
                        break;
                    };
                    if normalise_row(row, out) == RowFate::Kept {
                        kept += 1;
                    }
                }
                measure_within_block(
                    &self.scratch.wide[..kept * d],
                    d,
                    &mut self.scratch.units,
                    &mut self.scratch.dots,
                    &mut self.within,
                );
            }
        }
        self.next_block = end;
        if self.next_block >= target {
            self.pass_done();
        }
        Ok(())
    }

    #[cfg(not(feature = "gpu"))]
    pub(super) fn step_pass_gpu(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// Waits until the GPU has at most a few blocks queued (the memory of their uploads); the
    /// caller awaits it after each step. Nothing to do on the CPU.
    pub async fn settle_gpu(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_run_mut() {
            run.gram.settle(GPU_IN_FLIGHT).await?;
        }
        Ok(())
    }

    /// Reads the GPU pass's running moments back (O(d) words) for [`Analysis::progress`]'s
    /// running ε; the caller awaits it when a progress message is due. Nothing to do on the CPU.
    pub async fn refresh_gpu_estimate(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.gpu_run_mut().filter(|run| run.counts.kept >= 2) {
            let counts = run.counts;
            if let Some(moments) = run.gram.running_moments().await? {
                let snapshot = self.snapshot(moments, counts);
                if let Some(run) = self.gpu_run_mut() {
                    run.snapshot = Some(snapshot);
                }
            }
        }
        Ok(())
    }

    /// *Stop here* on a GPU pass: the running estimate last read back (what the page shows)
    /// becomes the result, without waiting for the blocks still queued on the GPU or reading G
    /// back (seconds at d = 16384, more on a software adapter). True if it did; false (nothing
    /// changed) when no estimate was read back yet, and [`Analysis::finish_gpu`] must run instead.
    pub fn stop_gpu_at_estimate(&mut self) -> bool {
        #[cfg(feature = "gpu")]
        if let Some((snapshot, info)) = self.gpu_run().and_then(|run| Some((run.snapshot?, run.info.clone()))) {
            // The GPU's queued blocks and its G are dropped with its driver.
            self.gpu.ran = Some(info);
            self.stop_at(snapshot);
            return true;
        }
        false
    }

    /// Reads the GPU pass's s and G back once, into the accumulator the CPU pass would have made,
    /// so that the report and the spectrum read them unchanged. Call when `step` says done, or
    /// after a stop (the estimate then covers the blocks seen, as on the CPU). Nothing to do on
    /// the CPU.
    pub async fn finish_gpu(&mut self) -> Result<(), Error> {
        #[cfg(feature = "gpu")]
        if let Some(run) = self.take_gpu_run().map(|run| *run) {
            let flops = run.gram.flops();
            let sums = run.gram.finish_async().await?;
            if sums.counts != run.counts {
                return Err(GpuError::Reported(format!(
                    "the GPU counted {:?} rows where the CPU counted {:?}",
                    sums.counts, run.counts
                ))
                .into());
            }
            let ms = match (run.started_ms, crate::pass::kernel::bench::now_ms()) {
                (Some(start), Some(end)) => end - start,
                _ => 0.0,
            };
            let (counts, dim, (n2, n4)) = (sums.counts, sums.dim(), sums.norm_sums());
            let sum = sums.sum().to_vec();
            let gram = sums.into_gram();
            self.gram = PairAccumulator::Gram(GramMoments::from_sums(
                counts,
                dim,
                Precision::F32,
                &sum,
                n2,
                n4,
                gram,
                (flops, ms),
            ));
            self.gpu.ran = Some(run.info);
        }
        Ok(())
    }
}
