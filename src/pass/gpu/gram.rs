//! The driver of `gram.wgsl`: streams blocks of rows to the GPU (raw F32/BF16/F16 bytes as the file
//! holds them, or f32 decoded on the CPU for other types), which decodes and normalises them,
//! drops zero and non-finite rows, centres them on c and adds s_w = Σwᵢ and W = Σwᵢwᵢᵀ (wᵢ = uᵢ − c,
//! rounded to f32 once) to fixed-point accumulators; [`GpuGram::finish_async`] reads everything back once
//! and recovers s and G in f64 as the centred f32 CPU pass does ([`crate::pass::stats::GramMoments`]):
//! G = W + c·s_wᵀ + s_w·cᵀ + n·ccᵀ, s = s_w + n·c, with Σ‖vᵢ‖², Σ‖vᵢ‖⁴ of the rows vᵢ = c + wᵢ
//! that G holds, so that the diagonal is removed exactly (docs/method.md §1).
//!
//! W is stored as the upper triangle in *bands* of tile rows, each one storage buffer no larger than
//! the device's storage-binding limit (or a smaller one asked for, [`GramOptions::max_binding_bytes`]).
//! One submission per block: a `prep` dispatch, a `sums` dispatch and one `gram` dispatch per band,
//! each over at most [`GramOptions::block_rows`] rows ([`block_rows_for`]), so no dispatch runs long.
//! `gram` is register-blocked, its sizes ([`GramShape`]) chosen from the adapter's limits and
//! substituted into the shader's text before it is compiled.
//! Submitting never waits; [`GpuGram::settle`] bounds the blocks in flight, and
//! [`GpuGram::running_moments`] reads back O(d) words for a running estimate.

use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use super::shape::Pipelines;
#[cfg(test)]
use super::shape::SHADER;
pub use super::shape::{GramOptions, GramShape};
use super::{GpuContext, GpuError, Signal};
use crate::pass::kernel::PackedGram;
use crate::pass::stats::{Moments, RowCounts};
use crate::read::format::DType;

/// Dimensions are padded to a multiple of this, and bands of W start at one: the unit of the band
/// plan, apart from the kernel's tile ([`GramShape::side`]), whose edges the shader masks.
pub const PAD: usize = 16;
/// Rows a block holds unless asked otherwise, and at most: a dispatch then does 256·d²/2
/// multiply-adds, and the shader keeps one block's sums of an entry in two words (`add64`).
pub const DEFAULT_BLOCK_ROWS: usize = 256;
/// Fractional bits of the shader's fixed-point accumulators (`FRAC_BITS`).
const FRAC_BITS: i32 = 48;
/// u32 words per row of `row_stats` (`ROW_WORDS`).
const ROW_WORDS: u64 = 7;
/// Largest dimension the pass takes (d_model is at most a few times 10⁴): keeps shader indices in
/// u32 and a band's dispatch within WebGPU's 65535 workgroups per dimension.
pub const MAX_DIM: usize = 1 << 16;
/// Workgroups of `frob` per band (`FROB_GROUPS`): the partial sums read back are this many per band.
const FROB_GROUPS: u32 = 64;
/// Bytes of W read back at a time when a pass finishes (at least one row of a band).
pub const READ_SLICE_BYTES: u64 = 16 << 20;

struct Band {
    first: usize,
    height: usize,
    width: usize,
    buffer: wgpu::Buffer,
    bind: wgpu::BindGroup,
    /// The same band for `frob` (a bind group belongs to the pipeline whose layout made it).
    bind_frob: wgpu::BindGroup,
}

/// A GPU Gram pass in progress over rows of `dim` values.
pub struct GpuGram {
    ctx: Rc<GpuContext>,
    dim: usize,
    dim_padded: usize,
    capacity: usize,
    shape: GramShape,
    centre: Vec<f32>,
    block_uniform: wgpu::Buffer,
    raw: wgpu::Buffer,
    totals: wgpu::Buffer,
    partials: wgpu::Buffer,
    prep: wgpu::ComputePipeline,
    sums: wgpu::ComputePipeline,
    gram: wgpu::ComputePipeline,
    frob: wgpu::ComputePipeline,
    prep_bind: wgpu::BindGroup,
    sums_bind: wgpu::BindGroup,
    gram_bind: wgpu::BindGroup,
    frob_bind: wgpu::BindGroup,
    bands: Vec<Band>,
    /// Raw rows waiting for a whole block, and their element type.
    pending: Vec<u8>,
    pending_type: RawType,
    /// Submitted blocks not yet known to be done, oldest first ([`GpuGram::settle`]).
    in_flight: VecDeque<(wgpu::SubmissionIndex, Signal)>,
    /// Rows submitted, and the multiply-adds of their Gram dispatches (two flops each).
    rows_sent: u64,
    flops: f64,
    /// Bytes of W per read-back slice ([`GramOptions::read_slice_bytes`]).
    read_slice_bytes: u64,
}

/// The element types the shader decodes from raw little-endian rows (`prep`'s `load_bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawType {
    F32,
    Bf16,
    F16,
}

impl RawType {
    /// The raw type of a tensor's dtype; `None` for the types decoded on the CPU (quantised, F64…).
    pub fn of(dtype: &DType) -> Option<RawType> {
        match dtype {
            DType::F32 => Some(RawType::F32),
            DType::BF16 => Some(RawType::Bf16),
            DType::F16 => Some(RawType::F16),
            _ => None,
        }
    }

    fn bytes(self) -> usize {
        match self {
            RawType::F32 => 4,
            RawType::Bf16 | RawType::F16 => 2,
        }
    }

    /// The shader's code for it (`DTYPE_*` in gram.wgsl).
    fn code(self) -> u32 {
        match self {
            RawType::F32 => 0,
            RawType::Bf16 => 1,
            RawType::F16 => 2,
        }
    }
}

/// Rows per block at width `dim`: one submission stays near 2^33 multiply-adds (a dispatch that runs
/// for seconds can be killed by a browser's or a driver's watchdog), between 16 and 256 rows.
pub fn block_rows_for(dim: usize) -> usize {
    let d2 = (dim.max(1) as u64).saturating_mul(dim.max(1) as u64);
    ((1u64 << 34) / d2).clamp(16, DEFAULT_BLOCK_ROWS as u64) as usize
}

/// What a finished GPU pass read back, in f64: the same quantities `GramMoments` holds for the
/// centred f32 CPU pass, uncentred.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuGramSums {
    pub counts: RowCounts,
    dim: usize,
    /// s = Σvᵢ.
    sum: Vec<f64>,
    /// Σ‖vᵢ‖² and Σ‖vᵢ‖⁴.
    sum_norm2: f64,
    sum_norm4: f64,
    /// G = Σvᵢvᵢᵀ.
    gram: PackedGram,
    /// Bands W was split into.
    pub bands: usize,
}

impl GpuGramSums {
    /// Exact moments over all pairs of kept rows: the formulas of `GramMoments::moments`
    /// (docs/method.md §1), through the same [`Moments::from_ordered_sums`].
    pub fn moments(&self) -> Option<Moments> {
        let s2: f64 = self.sum.iter().map(|x| x * x).sum();
        let g2 = self.gram.frobenius_sq();
        let magnitude = g2 + self.sum_norm4 + 2.0 * (s2 + self.sum_norm2);
        Moments::from_ordered_sums(self.counts.kept, s2 - self.sum_norm2, g2 - self.sum_norm4, magnitude)
    }

    /// s = Σuᵢ (`dim` values).
    pub fn sum(&self) -> &[f64] {
        &self.sum
    }

    /// G = Σuᵢuᵢᵀ, in the CPU pass's packed layout.
    pub fn gram(&self) -> &PackedGram {
        &self.gram
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Σ‖vᵢ‖² and Σ‖vᵢ‖⁴ of the rows G holds.
    pub fn norm_sums(&self) -> (f64, f64) {
        (self.sum_norm2, self.sum_norm4)
    }

    /// G, taken out (for an accumulator that holds it from now on).
    pub fn into_gram(self) -> PackedGram {
        self.gram
    }
}

fn storage(ctx: &GpuContext, label: &str, size: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

fn uniform(ctx: &GpuContext, label: &str, words: &[u32]) -> wgpu::Buffer {
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: (words.len() * 4) as u64,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&buffer, 0, &words_bytes(words));
    buffer
}

fn words_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn floats_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32_of(n: usize) -> Result<u32, GpuError> {
    u32::try_from(n).map_err(|_| GpuError::Dimension(n))
}

fn bind(
    ctx: &GpuContext,
    pipeline: &wgpu::ComputePipeline,
    group: u32,
    entries: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let layout = pipeline.get_bind_group_layout(group);
    let entries: Vec<wgpu::BindGroupEntry> =
        entries.iter().map(|&(binding, b)| wgpu::BindGroupEntry { binding, resource: b.as_entire_binding() }).collect();
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor { label: None, layout: &layout, entries: &entries })
}

/// A 96-bit two's-complement fixed-point number (three words, low first) as f64.
fn fixed(words: &[u32]) -> f64 {
    let [x, y, z] = [0, 1, 2].map(|i| words.get(i).copied().unwrap_or(0));
    let v = ((z as i32 as i128) << 64) | ((y as i128) << 32) | x as i128;
    v as f64 * 2f64.powi(-FRAC_BITS)
}

impl GpuGram {
    /// A pass over rows of `dim` values centred on `centre` (at least `dim` values, f64 as the CPU
    /// pass takes it; rounded to f32 once, and that f32 centre is used throughout), or uncentred.
    pub fn new(
        ctx: Rc<GpuContext>,
        dim: usize,
        centre: Option<&[f64]>,
        options: GramOptions,
    ) -> Result<Self, GpuError> {
        ctx.check()?;
        let shape = options.shape.unwrap_or_else(|| GramShape::for_limits(&ctx.limits));
        shape.check(&ctx.limits)?;
        let dim_padded = dim.div_ceil(PAD) * PAD;
        // Shader indices are u32: a band's 3·height·width words and a block's capacity·dim_padded
        // values stay below 2^32 since every binding is below 4 GiB and d ≤ MAX_DIM.
        let workgroups = ctx.limits.max_compute_workgroups_per_dimension as usize;
        if dim == 0 || dim > MAX_DIM || dim_padded.div_ceil(shape.side() as usize) > workgroups {
            return Err(GpuError::Dimension(dim));
        }
        let centre: Vec<f32> = match centre {
            Some(c) => match c.get(..dim) {
                Some(c) if c.iter().all(|x| x.is_finite() && x.abs() <= 2.0) => c.iter().map(|&x| x as f32).collect(),
                _ => return Err(GpuError::Centre { dim }),
            },
            None => vec![0.0; dim],
        };
        let limit = options.max_binding_bytes.map_or(ctx.max_binding_bytes(), |m| m.min(ctx.max_binding_bytes()));
        let row_bytes = dim_padded as u64 * 4;
        let rows = options.block_rows.clamp(1, block_rows_for(dim));
        let capacity = (limit / row_bytes).min(rows as u64) as usize;
        if capacity == 0 {
            return Err(GpuError::BindingTooSmall { needed: row_bytes, limit });
        }
        let totals_bytes = (3 * (dim_padded as u64 + 2) + 3) * 4;
        if totals_bytes > limit {
            return Err(GpuError::BindingTooSmall { needed: totals_bytes, limit });
        }
        // Bands of W: as many rows (a multiple of PAD) as fit the limit; lower bands are narrower,
        // hence taller. A band need not hold whole kernel tiles: the shader masks their edges.
        let mut plan = Vec::new();
        let mut first = 0;
        while first < dim_padded {
            let width = dim_padded - first;
            let tile_row_bytes = (PAD * width * 12) as u64;
            let tiles = limit / tile_row_bytes;
            if tiles == 0 {
                return Err(GpuError::BindingTooSmall { needed: tile_row_bytes, limit });
            }
            let height = (tiles as usize * PAD).min(width);
            plan.push((first, height, width));
            first += height;
        }

        let Pipelines { prep, sums, gram, frob } = ctx.pipelines(shape);
        let block_uniform = uniform(&ctx, "block", &[0; 8]);
        // Raw rows of any type: 4 bytes per value at most.
        let raw = storage(&ctx, "raw rows", (capacity * dim * 4) as u64);
        let centre_buffer = storage(&ctx, "centre", (dim * 4) as u64);
        ctx.queue.write_buffer(&centre_buffer, 0, &floats_bytes(&centre));
        let centred = storage(&ctx, "centred rows", capacity as u64 * row_bytes);
        let row_stats = storage(&ctx, "row stats", capacity as u64 * ROW_WORDS * 4);
        let totals = storage(&ctx, "totals", totals_bytes);
        let partials = storage(&ctx, "‖G‖² partial sums", (plan.len() as u64 * FROB_GROUPS as u64).max(1) * 4);
        // New buffers are zeroed (WebGPU guarantees it), so the accumulators start at 0.
        let prep_bind = bind(
            &ctx,
            &prep,
            0,
            &[(0, &block_uniform), (1, &raw), (2, &centre_buffer), (3, &centred), (4, &row_stats)],
        );
        let sums_bind = bind(&ctx, &sums, 0, &[(0, &block_uniform), (3, &centred), (4, &row_stats), (5, &totals)]);
        let gram_bind = bind(&ctx, &gram, 0, &[(0, &block_uniform), (3, &centred)]);
        let frob_bind = bind(&ctx, &frob, 0, &[(0, &block_uniform), (2, &centre_buffer), (5, &totals), (6, &partials)]);
        let mut bands = Vec::with_capacity(plan.len());
        for (index, (first, height, width)) in plan.into_iter().enumerate() {
            let words = [u32_of(first)?, u32_of(width)?, u32_of(height)?, u32_of(index)?];
            let params = uniform(&ctx, "band", &words);
            let buffer = storage(&ctx, "band", (height * width * 12) as u64);
            let bind_gram = bind(&ctx, &gram, 1, &[(0, &params), (1, &buffer)]);
            let bind_frob = bind(&ctx, &frob, 1, &[(0, &params), (1, &buffer)]);
            bands.push(Band { first, height, width, buffer, bind: bind_gram, bind_frob });
        }
        // Creation errors arrive through the device's error callback (natively at once).
        ctx.check()?;
        Ok(GpuGram {
            ctx,
            dim,
            dim_padded,
            capacity,
            shape,
            centre,
            block_uniform,
            raw,
            totals,
            partials,
            prep,
            sums,
            gram,
            frob,
            prep_bind,
            sums_bind,
            gram_bind,
            frob_bind,
            bands,
            pending: Vec::new(),
            pending_type: RawType::F32,
            in_flight: VecDeque::new(),
            rows_sent: 0,
            flops: 0.0,
            read_slice_bytes: options.read_slice_bytes,
        })
    }

    /// Bands W is split into.
    pub fn bands(&self) -> usize {
        self.bands.len()
    }

    /// Rows per block.
    pub fn block_rows(&self) -> usize {
        self.capacity
    }

    /// The `gram` kernel's sizes this pass runs with.
    pub fn shape(&self) -> GramShape {
        self.shape
    }

    /// Rows submitted to the GPU so far (those still waiting for a whole block not counted).
    pub fn rows_sent(&self) -> u64 {
        self.rows_sent
    }

    /// Flops of the Gram dispatches submitted so far (k·d² per k-row block, as the CPU counts).
    pub fn flops(&self) -> f64 {
        self.flops
    }

    /// Blocks submitted and not yet known to be done.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Adds rows of `dim` decoded values each (raw, not normalised; any count: whole blocks are
    /// submitted now, the rest with the next call, [`GpuGram::flush`] or [`GpuGram::finish_async`]).
    /// Never waits for the GPU.
    pub fn add_rows(&mut self, rows: &[f32]) -> Result<(), GpuError> {
        if !rows.len().is_multiple_of(self.dim) {
            return Err(GpuError::PartialRow { len: rows.len(), dim: self.dim });
        }
        self.add_typed(&floats_bytes(rows), RawType::F32)
    }

    /// Adds rows as the file stores them (little-endian F32, BF16 or F16, `dim` values each, rows
    /// back to back): the bytes go to the GPU as they are and the shader decodes them. Other element
    /// types go through [`GpuGram::add_rows`] decoded on the CPU. Never waits for the GPU.
    pub fn add_raw_rows(&mut self, bytes: &[u8], dtype: &DType) -> Result<(), GpuError> {
        let kind = RawType::of(dtype).ok_or_else(|| GpuError::RawDType(dtype.name().to_string()))?;
        let row_bytes = self.dim * kind.bytes();
        if !bytes.len().is_multiple_of(row_bytes) {
            return Err(GpuError::PartialRow { len: bytes.len() / kind.bytes(), dim: self.dim });
        }
        self.add_typed(bytes, kind)
    }

    fn add_typed(&mut self, bytes: &[u8], kind: RawType) -> Result<(), GpuError> {
        self.ctx.check()?;
        if kind != self.pending_type {
            self.flush()?;
            self.pending_type = kind;
        }
        let block = self.capacity * self.dim * kind.bytes();
        let mut bytes = bytes;
        if !self.pending.is_empty() {
            let take = (block - self.pending.len()).min(bytes.len());
            let (now, rest) = bytes.split_at(take);
            self.pending.extend_from_slice(now);
            bytes = rest;
            if self.pending.len() < block {
                return Ok(());
            }
            let pending = std::mem::take(&mut self.pending);
            self.run_block(&pending, kind)?;
        }
        let mut chunks = bytes.chunks_exact(block);
        for chunk in &mut chunks {
            self.run_block(chunk, kind)?;
        }
        self.pending.extend_from_slice(chunks.remainder());
        Ok(())
    }

    /// Submits the rows waiting for a whole block as a shorter block.
    pub fn flush(&mut self) -> Result<(), GpuError> {
        let pending = std::mem::take(&mut self.pending);
        self.run_block(&pending, self.pending_type)
    }

    /// One block: upload, `prep`, `sums`, one `gram` dispatch per band, one submission. Nothing
    /// waits: the queue runs submissions in order and a `write_buffer` after a submission lands
    /// after it on the queue timeline (WebGPU's ordering, wgpu's too), so reusing the buffers is
    /// safe; only the staging memory of queued uploads grows, which [`GpuGram::settle`] bounds.
    fn run_block(&mut self, bytes: &[u8], kind: RawType) -> Result<(), GpuError> {
        let n = bytes.len() / (self.dim * kind.bytes());
        if n == 0 {
            return Ok(());
        }
        let ctx = Rc::clone(&self.ctx);
        ctx.check()?;
        let words =
            [u32_of(self.dim)?, u32_of(self.dim_padded)?, u32_of(n)?, u32_of(self.capacity)?, kind.code(), 0, 0, 0];
        ctx.queue.write_buffer(&self.block_uniform, 0, &words_bytes(&words));
        // Whole 4-byte words (an odd count of 16-bit values leaves half a word; the shader indexes
        // by element and never reads it).
        if bytes.len().is_multiple_of(4) {
            ctx.queue.write_buffer(&self.raw, 0, bytes);
        } else {
            let mut padded = Vec::with_capacity(bytes.len() + 3);
            padded.extend_from_slice(bytes);
            padded.resize(bytes.len().next_multiple_of(4), 0);
            ctx.queue.write_buffer(&self.raw, 0, &padded);
        }
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("block") });
        {
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(&self.prep);
            pass.set_bind_group(0, &self.prep_bind, &[]);
            pass.dispatch_workgroups(u32_of(self.capacity.div_ceil(64))?, 1, 1);
            pass.set_pipeline(&self.sums);
            pass.set_bind_group(0, &self.sums_bind, &[]);
            pass.dispatch_workgroups(u32_of((self.dim_padded + 1).div_ceil(64))?, 1, 1);
            pass.set_pipeline(&self.gram);
            pass.set_bind_group(0, &self.gram_bind, &[]);
            // Tiles counted from each band's first dimension, so that the diagonal ones are whole.
            let side = self.shape.side() as usize;
            for band in &self.bands {
                pass.set_bind_group(1, &band.bind, &[]);
                pass.dispatch_workgroups(u32_of(band.width.div_ceil(side))?, u32_of(band.height.div_ceil(side))?, 1);
            }
        }
        let index = ctx.queue.submit([encoder.finish()]);
        let done = ctx.signal();
        ctx.queue.on_submitted_work_done(done.setter());
        self.in_flight.push_back((index, done));
        self.rows_sent += n as u64;
        self.flops += n as f64 * (self.dim_padded * self.dim_padded) as f64;
        Ok(())
    }

    /// Waits until at most `max_in_flight` submitted blocks are still running: the backpressure
    /// that bounds the memory of queued uploads. Natively the device is polled; in a browser the
    /// completions arrive on the event loop.
    pub async fn settle(&mut self, max_in_flight: usize) -> Result<(), GpuError> {
        let ctx = Rc::clone(&self.ctx);
        ctx.check()?;
        while self.in_flight.front().is_some_and(|(_, done)| done.is_set()) {
            self.in_flight.pop_front();
        }
        while self.in_flight.len() > max_in_flight {
            let Some((index, done)) = self.in_flight.pop_front() else { break };
            ctx.completion(&index, &done).await?;
        }
        Ok(())
    }

    /// Copies a buffer back and returns its u32 words.
    async fn read(&self, buffer: &wgpu::Buffer) -> Result<Vec<u32>, GpuError> {
        self.read_range(buffer, 0, buffer.size()).await
    }

    /// Copies `size` bytes of a buffer from byte `offset` (both multiples of 4) back as u32 words.
    async fn read_range(&self, buffer: &wgpu::Buffer, offset: u64, size: u64) -> Result<Vec<u32>, GpuError> {
        let ctx = &self.ctx;
        ctx.check()?;
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read back") });
        encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, size);
        let index = ctx.queue.submit([encoder.finish()]);
        let mapped: Arc<Mutex<Option<Result<(), wgpu::BufferAsyncError>>>> = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&mapped);
        let done = ctx.signal();
        let set = done.setter();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            if let Ok(mut slot) = sink.lock() {
                *slot = Some(r);
            }
            set();
        });
        ctx.completion(&index, &done).await?;
        let outcome = mapped.lock().map_err(|_| GpuError::Map("poisoned".into()))?.take();
        match outcome {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(ctx.check().err().unwrap_or(GpuError::Map(e.to_string()))),
            None => return Err(GpuError::Map("the mapping did not complete".into())),
        }
        let words = {
            let view = staging.get_mapped_range(..).map_err(|e| GpuError::Map(e.to_string()))?;
            view.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        };
        staging.unmap();
        Ok(words)
    }

    /// Counts, s_w, Σ‖v‖² and Σ‖v‖⁴ from the `totals` words.
    fn totals_parts(&self, totals: &[u32]) -> (RowCounts, Vec<f64>, f64, f64) {
        let dp = self.dim_padded;
        let word = |i: usize| totals.get(i).copied().unwrap_or(0) as u64;
        let at = |i: usize| fixed(totals.get(3 * i..3 * i + 3).unwrap_or(&[]));
        let kept = word(3 * (dp + 2));
        let (zero, nonfinite) = (word(3 * (dp + 2) + 1), word(3 * (dp + 2) + 2));
        let counts =
            RowCounts { seen: kept + zero + nonfinite, kept, dropped_zero: zero, dropped_nonfinite: nonfinite };
        (counts, (0..self.dim).map(at).collect(), at(dp), at(dp + 1))
    }

    /// Moments of all pairs among the rows submitted so far, for a running estimate: the last rows
    /// are flushed, then only O(d) words come back (the totals, and ‖G‖²_F summed on the GPU by
    /// `frob` in f32 partial sums, which only steer an estimate). The exact sums are untouched.
    pub async fn running_moments(&mut self) -> Result<Option<Moments>, GpuError> {
        self.flush()?;
        let ctx = Rc::clone(&self.ctx);
        ctx.check()?;
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("‖G‖²") });
        {
            let mut pass =
                encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
            pass.set_pipeline(&self.frob);
            pass.set_bind_group(0, &self.frob_bind, &[]);
            for band in &self.bands {
                pass.set_bind_group(1, &band.bind_frob, &[]);
                pass.dispatch_workgroups(FROB_GROUPS, 1, 1);
            }
        }
        ctx.queue.submit([encoder.finish()]);
        let totals = self.read(&self.totals).await?;
        let partials = self.read(&self.partials).await?;
        let (counts, sum_centred, n2, n4) = self.totals_parts(&totals);
        let n = counts.kept as f64;
        let s2: f64 = sum_centred.iter().zip(&self.centre).map(|(s, &c)| (s + n * c as f64).powi(2)).sum();
        let g2: f64 = partials.iter().map(|&w| f32::from_bits(w) as f64).sum();
        let magnitude = g2 + n4 + 2.0 * (s2 + n2);
        Ok(Moments::from_ordered_sums(counts.kept, s2 - n2, g2 - n4, magnitude))
    }

    /// Sends the last rows, reads s_w, W, Σ‖v‖², Σ‖v‖⁴ and the counts back once, and recovers s and
    /// G in f64. W comes back a slice of rows at a time ([`GramOptions::read_slice_bytes`]), each slice added to G
    /// as it arrives: at d = 16384 all of W is 1.6 GB, more than a tab's worker can hold next to G.
    /// Natively the device is polled; in a browser the mappings complete on the event loop.
    pub async fn finish_async(mut self) -> Result<GpuGramSums, GpuError> {
        self.flush()?;
        let totals = self.read(&self.totals).await?;
        let (counts, sum_centred, sum_norm2, sum_norm4) = self.totals_parts(&totals);
        let centre: Vec<f64> = self.centre.iter().map(|&c| c as f64).collect();
        let n = counts.kept as f64;
        let sum: Vec<f64> = sum_centred.iter().zip(&centre).map(|(s, c)| s + n * c).collect();
        let mut gram = PackedGram::new(self.dim);
        for band in &self.bands {
            let row_bytes = band.width as u64 * 12;
            let slice_rows = (self.read_slice_bytes / row_bytes).max(1) as usize;
            let mut top = 0;
            while top < band.height && band.first + top < self.dim {
                let rows = slice_rows.min(band.height - top);
                let words = self.read_range(&band.buffer, top as u64 * row_bytes, rows as u64 * row_bytes).await?;
                let first_row = band.first + top;
                // W entry (a, b), a ≤ b, of this slice: row a - first_row, column b - band.first.
                let w = |a: usize, b: usize| -> f64 {
                    let o = 3 * ((a - first_row) * band.width + (b - band.first));
                    fixed(words.get(o..o + 3).unwrap_or(&[]))
                };
                gram.add_entries_in_rows(first_row..first_row + rows, |a, b| {
                    match (centre.get(a), centre.get(b), sum_centred.get(a), sum_centred.get(b)) {
                        (Some(&ca), Some(&cb), Some(&sa), Some(&sb)) => w(a, b) + ca * sb + sa * cb + n * ca * cb,
                        _ => 0.0,
                    }
                });
                top += rows;
            }
        }
        Ok(GpuGramSums { counts, dim: self.dim, sum, sum_norm2, sum_norm4, gram, bands: self.bands.len() })
    }

    /// [`GpuGram::finish_async`], waited for on this thread (native only).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn finish(self) -> Result<GpuGramSums, GpuError> {
        super::block_on(self.finish_async())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shader's text for a shape differs from the file in the three sizes only, each found once.
    #[test]
    fn a_shape_is_substituted_into_the_shader() {
        let shape = GramShape { threads: 8, block: 3, stage: 16 };
        let text = shape.shader();
        for line in ["const THREADS: u32 = 8u;", "const BLOCK: u32 = 3u;", "const STAGE: u32 = 16u;"] {
            assert_eq!(text.matches(line).count(), 1, "{line}");
        }
        let changed = SHADER.lines().zip(text.lines()).filter(|(a, b)| a != b).count();
        assert_eq!((changed, SHADER.lines().count()), (3, text.lines().count()));
        let default = GramShape::for_limits(&wgpu::Limits::default());
        assert_eq!(default, GramShape { threads: 16, block: 4, stage: 32 });
        assert_eq!(default.shader(), SHADER, "the file is written with WebGPU's default shape");
    }

    /// The shape follows the limits: fewer invocations or less workgroup memory give a smaller tile,
    /// never one that fails its own check; a shape asked for that does not fit says why.
    #[test]
    fn the_shape_fits_the_limits() {
        let base = wgpu::Limits::default();
        let big = wgpu::Limits { max_compute_workgroup_storage_size: 65536, ..base.clone() };
        assert_eq!(GramShape::for_limits(&big), GramShape { threads: 16, block: 4, stage: 64 });
        let few = wgpu::Limits { max_compute_invocations_per_workgroup: 64, ..base.clone() };
        assert_eq!(GramShape::for_limits(&few), GramShape { threads: 8, block: 4, stage: 64 });
        let small = wgpu::Limits { max_compute_workgroup_storage_size: 2048, ..base.clone() };
        assert_eq!(GramShape::for_limits(&small), GramShape { threads: 16, block: 2, stage: 8 });
        for limits in [&base, &big, &few, &small] {
            assert!(GramShape::for_limits(limits).check(limits).is_ok());
        }
        let wide = GramShape { threads: 16, block: 8, stage: 32 };
        let err = wide.check(&base).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("32768 bytes of workgroup memory") && err.contains("16384"), "{err}");
        assert!(GramShape { threads: 16, block: 8, stage: 16 }.check(&base).is_ok());
        assert!(GramShape { threads: 16, block: 4, stage: 48 }.check(&big).is_err());
        assert!(GramShape { threads: 32, block: 1, stage: 8 }.check(&base).is_err());
    }
}
