//! The driver of `gram.wgsl`: streams blocks of decoded f32 rows to the GPU, which normalises them,
//! drops zero and non-finite rows, centres them on c and adds s_w = Σwᵢ and W = Σwᵢwᵢᵀ (wᵢ = uᵢ − c,
//! rounded to f32 once) to fixed-point accumulators; [`GpuGram::finish`] reads everything back once
//! and recovers s and G in f64 as the centred f32 CPU pass does ([`crate::pass::stats::GramMoments`]):
//! G = W + c·s_wᵀ + s_w·cᵀ + n·ccᵀ, s = s_w + n·c, with Σ‖vᵢ‖², Σ‖vᵢ‖⁴ of the rows vᵢ = c + wᵢ
//! that G holds, so that the diagonal is removed exactly (docs/method.md §1).
//!
//! W is stored as the upper triangle in *bands* of tile rows, each one storage buffer no larger than
//! the device's storage-binding limit (or a smaller one asked for, [`GramOptions::max_binding_bytes`]).
//! One submission per block: a `prep` dispatch, a `sums` dispatch and one `gram` dispatch per band,
//! each over at most [`GramOptions::block_rows`] rows, so no dispatch runs long.

use std::sync::{Arc, Mutex};

use super::{GpuContext, GpuError};
use crate::pass::kernel::PackedGram;
use crate::pass::stats::{Moments, RowCounts};

/// Side of a Gram tile (the shader's `TILE`): dimensions are padded to a multiple of it.
pub const TILE: usize = 16;
/// Rows a block holds unless asked otherwise: a dispatch then does 256·d²/2 multiply-adds.
pub const DEFAULT_BLOCK_ROWS: usize = 256;
/// Fractional bits of the shader's fixed-point accumulators (`FRAC_BITS`).
const FRAC_BITS: i32 = 48;
/// u32 words per row of `row_stats` (`ROW_WORDS`).
const ROW_WORDS: u64 = 7;
/// Largest dimension the pass takes (d_model is at most a few times 10⁴): keeps shader indices in
/// u32 and a band's dispatch within WebGPU's 65535 workgroups per dimension.
pub const MAX_DIM: usize = 1 << 16;
const SHADER: &str = include_str!("gram.wgsl");

/// How a pass is cut up. The defaults suit any device; tests shrink both to force many bands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GramOptions {
    /// Largest storage buffer to bind, in bytes (`None`: the device's limit). Smaller values split
    /// W into more bands.
    pub max_binding_bytes: Option<u64>,
    /// Rows per block (per submission).
    pub block_rows: usize,
}

impl Default for GramOptions {
    fn default() -> Self {
        Self { max_binding_bytes: None, block_rows: DEFAULT_BLOCK_ROWS }
    }
}

struct Band {
    first: usize,
    height: usize,
    width: usize,
    buffer: wgpu::Buffer,
    bind: wgpu::BindGroup,
}

/// A GPU Gram pass in progress over rows of `dim` values.
pub struct GpuGram<'a> {
    ctx: &'a GpuContext,
    dim: usize,
    dim_padded: usize,
    capacity: usize,
    centre: Vec<f32>,
    block_uniform: wgpu::Buffer,
    raw: wgpu::Buffer,
    totals: wgpu::Buffer,
    prep: wgpu::ComputePipeline,
    sums: wgpu::ComputePipeline,
    gram: wgpu::ComputePipeline,
    prep_bind: wgpu::BindGroup,
    sums_bind: wgpu::BindGroup,
    gram_bind: wgpu::BindGroup,
    bands: Vec<Band>,
    /// Rows waiting for a whole block.
    pending: Vec<f32>,
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
}

fn storage(ctx: &GpuContext, label: &str, size: u64) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

fn uniform(ctx: &GpuContext, label: &str, words: [u32; 4]) -> wgpu::Buffer {
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: 16,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    ctx.queue.write_buffer(&buffer, 0, &words_bytes(&words));
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

impl<'a> GpuGram<'a> {
    /// A pass over rows of `dim` values centred on `centre` (at least `dim` values, f64 as the CPU
    /// pass takes it; rounded to f32 once, and that f32 centre is used throughout), or uncentred.
    pub fn new(
        ctx: &'a GpuContext,
        dim: usize,
        centre: Option<&[f64]>,
        options: GramOptions,
    ) -> Result<Self, GpuError> {
        let dim_padded = dim.div_ceil(TILE) * TILE;
        // Shader indices are u32: a band's 3·height·width words and a block's capacity·dim_padded
        // values stay below 2^32 since every binding is below 4 GiB and d ≤ MAX_DIM.
        let workgroups = ctx.limits.max_compute_workgroups_per_dimension as usize;
        if dim == 0 || dim > MAX_DIM || dim_padded / TILE > workgroups {
            return Err(GpuError::Dimension(dim));
        }
        let centre: Vec<f32> = match centre {
            Some(c) if c.len() < dim || c[..dim].iter().any(|x| !x.is_finite() || x.abs() > 2.0) => {
                return Err(GpuError::Centre { dim })
            }
            Some(c) => c[..dim].iter().map(|&x| x as f32).collect(),
            None => vec![0.0; dim],
        };
        let limit = options.max_binding_bytes.map_or(ctx.max_binding_bytes(), |m| m.min(ctx.max_binding_bytes()));
        let row_bytes = dim_padded as u64 * 4;
        let capacity = (limit / row_bytes).min(options.block_rows.max(1) as u64) as usize;
        if capacity == 0 {
            return Err(GpuError::BindingTooSmall { needed: row_bytes, limit });
        }
        let totals_bytes = (3 * (dim_padded as u64 + 2) + 3) * 4;
        if totals_bytes > limit {
            return Err(GpuError::BindingTooSmall { needed: totals_bytes, limit });
        }
        // Bands of W: as many tile rows as fit the limit; lower bands are narrower, hence taller.
        let mut plan = Vec::new();
        let mut first = 0;
        while first < dim_padded {
            let width = dim_padded - first;
            let tile_row_bytes = (TILE * width * 12) as u64;
            let tiles = limit / tile_row_bytes;
            if tiles == 0 {
                return Err(GpuError::BindingTooSmall { needed: tile_row_bytes, limit });
            }
            let height = (tiles as usize * TILE).min(width);
            plan.push((first, height, width));
            first += height;
        }

        ctx.scoped(|| {
            let module = ctx.device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("gram.wgsl"),
                source: wgpu::ShaderSource::Wgsl(SHADER.into()),
            });
            let pipeline = |entry: &str| {
                ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(entry),
                    layout: None,
                    module: &module,
                    entry_point: Some(entry),
                    compilation_options: Default::default(),
                    cache: None,
                })
            };
            let (prep, sums, gram) = (pipeline("prep"), pipeline("sums"), pipeline("gram"));
            let block_uniform = uniform(ctx, "block", [0; 4]);
            let raw = storage(ctx, "raw rows", (capacity * dim * 4) as u64);
            let centre_buffer = storage(ctx, "centre", (dim * 4) as u64);
            ctx.queue.write_buffer(&centre_buffer, 0, &floats_bytes(&centre));
            let centred = storage(ctx, "centred rows", capacity as u64 * row_bytes);
            let row_stats = storage(ctx, "row stats", capacity as u64 * ROW_WORDS * 4);
            let totals = storage(ctx, "totals", totals_bytes);
            // New buffers are zeroed (WebGPU guarantees it), so the accumulators start at 0.
            let prep_bind = bind(
                ctx,
                &prep,
                0,
                &[(0, &block_uniform), (1, &raw), (2, &centre_buffer), (3, &centred), (4, &row_stats)],
            );
            let sums_bind = bind(ctx, &sums, 0, &[(0, &block_uniform), (3, &centred), (4, &row_stats), (5, &totals)]);
            let gram_bind = bind(ctx, &gram, 0, &[(0, &block_uniform), (3, &centred)]);
            let mut bands = Vec::with_capacity(plan.len());
            for (first, height, width) in plan {
                let words = [u32_of(first)?, u32_of(width)?, u32_of(height)?, 0];
                let params = uniform(ctx, "band", words);
                let buffer = storage(ctx, "band", (height * width * 12) as u64);
                let bind = bind(ctx, &gram, 1, &[(0, &params), (1, &buffer)]);
                bands.push(Band { first, height, width, buffer, bind });
            }
            Ok(GpuGram {
                ctx,
                dim,
                dim_padded,
                capacity,
                centre,
                block_uniform,
                raw,
                totals,
                prep,
                sums,
                gram,
                prep_bind,
                sums_bind,
                gram_bind,
                bands,
                pending: Vec::new(),
            })
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

    /// Adds rows of `dim` decoded values each (raw, not normalised; any count: whole blocks are
    /// sent now, the rest with the next call or [`GpuGram::finish`]).
    pub fn add_rows(&mut self, rows: &[f32]) -> Result<(), GpuError> {
        if !rows.len().is_multiple_of(self.dim) {
            return Err(GpuError::PartialRow { len: rows.len(), dim: self.dim });
        }
        let block = self.capacity * self.dim;
        let mut rows = rows;
        if !self.pending.is_empty() {
            let take = (block - self.pending.len()).min(rows.len());
            self.pending.extend_from_slice(&rows[..take]);
            rows = &rows[take..];
            if self.pending.len() < block {
                return Ok(());
            }
            let pending = std::mem::take(&mut self.pending);
            self.run_block(&pending)?;
        }
        let mut chunks = rows.chunks_exact(block);
        for chunk in &mut chunks {
            self.run_block(chunk)?;
        }
        self.pending.extend_from_slice(chunks.remainder());
        Ok(())
    }

    fn run_block(&mut self, rows: &[f32]) -> Result<(), GpuError> {
        let n = rows.len() / self.dim;
        if n == 0 {
            return Ok(());
        }
        let ctx = self.ctx;
        ctx.scoped(|| {
            let words = [u32_of(self.dim)?, u32_of(self.dim_padded)?, u32_of(n)?, u32_of(self.capacity)?];
            ctx.queue.write_buffer(&self.block_uniform, 0, &words_bytes(&words));
            ctx.queue.write_buffer(&self.raw, 0, &floats_bytes(rows));
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("block") });
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
                for band in &self.bands {
                    pass.set_bind_group(1, &band.bind, &[]);
                    pass.dispatch_workgroups(u32_of(self.dim_padded / TILE)?, u32_of(band.height / TILE)?, 1);
                }
            }
            let index = ctx.queue.submit([encoder.finish()]);
            // One block in flight: the next block's uploads overwrite this one's buffers.
            ctx.device
                .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })
                .map_err(|e| GpuError::Poll(e.to_string()))?;
            Ok(())
        })
    }

    /// Copies a buffer back and returns its u32 words.
    fn read(&self, buffer: &wgpu::Buffer) -> Result<Vec<u32>, GpuError> {
        let ctx = self.ctx;
        let size = buffer.size();
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read back"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("read back") });
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
        let index = ctx.queue.submit([encoder.finish()]);
        let mapped: Arc<Mutex<Option<Result<(), wgpu::BufferAsyncError>>>> = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&mapped);
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            if let Ok(mut slot) = sink.lock() {
                *slot = Some(r);
            }
        });
        ctx.device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: None })
            .map_err(|e| GpuError::Poll(e.to_string()))?;
        let outcome = mapped.lock().map_err(|_| GpuError::Map("poisoned".into()))?.take();
        match outcome {
            Some(Ok(())) => {}
            Some(Err(e)) => return Err(GpuError::Map(e.to_string())),
            None => return Err(GpuError::Map("the mapping did not complete".into())),
        }
        let words = {
            let view = staging.get_mapped_range(..).map_err(|e| GpuError::Map(e.to_string()))?;
            view.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        };
        staging.unmap();
        Ok(words)
    }

    /// Sends the last rows, reads s_w, W, Σ‖v‖², Σ‖v‖⁴ and the counts back once, and recovers s and
    /// G in f64.
    pub fn finish(mut self) -> Result<GpuGramSums, GpuError> {
        let pending = std::mem::take(&mut self.pending);
        self.run_block(&pending)?;
        let ctx = self.ctx;
        let (totals, bands) = ctx.scoped(|| {
            let totals = self.read(&self.totals)?;
            let bands = self.bands.iter().map(|b| self.read(&b.buffer)).collect::<Result<Vec<_>, _>>()?;
            Ok((totals, bands))
        })?;
        let dp = self.dim_padded;
        let word = |i: usize| totals.get(i).copied().unwrap_or(0) as u64;
        let at = |i: usize| fixed(totals.get(3 * i..3 * i + 3).unwrap_or(&[]));
        let kept = word(3 * (dp + 2));
        let counts = RowCounts {
            seen: kept + word(3 * (dp + 2) + 1) + word(3 * (dp + 2) + 2),
            kept,
            dropped_zero: word(3 * (dp + 2) + 1),
            dropped_nonfinite: word(3 * (dp + 2) + 2),
        };
        let centre: Vec<f64> = self.centre.iter().map(|&c| c as f64).collect();
        let sum_centred: Vec<f64> = (0..self.dim).map(at).collect();
        let n = kept as f64;
        let sum: Vec<f64> = sum_centred.iter().zip(&centre).map(|(s, c)| s + n * c).collect();
        // W entry (a, b), a ≤ b < dim, from the band holding row a.
        let w = |a: usize, b: usize| -> f64 {
            let Some((band, words)) = self.bands.iter().zip(&bands).find(|(band, _)| a < band.first + band.height)
            else {
                return 0.0;
            };
            let o = 3 * ((a - band.first) * band.width + (b - band.first));
            fixed(words.get(o..o + 3).unwrap_or(&[]))
        };
        let mut gram = PackedGram::new(self.dim);
        gram.add_entries(|a, b| {
            if b >= self.dim {
                return 0.0;
            }
            w(a, b) + centre[a] * sum_centred[b] + sum_centred[a] * centre[b] + n * centre[a] * centre[b]
        });
        Ok(GpuGramSums {
            counts,
            dim: self.dim,
            sum,
            sum_norm2: at(dp),
            sum_norm4: at(dp + 1),
            gram,
            bands: self.bands.len(),
        })
    }
}
