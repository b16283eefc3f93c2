//! How the `gram` kernel and a pass are cut up: the pass's options ([`GramOptions`]), the kernel's
//! register-blocked sizes ([`GramShape`]) substituted into `gram.wgsl` before it is compiled, and
//! the compiled pipelines of each shape, kept per device ([`PipelineCache`]).

use super::gram::{DEFAULT_BLOCK_ROWS, READ_SLICE_BYTES};
use super::GpuError;

pub(crate) const SHADER: &str = include_str!("gram.wgsl");
/// Rows of one f32 sum before a fold (the shader's `K`): a shape stages a divisor of it.
const K: u32 = 64;

/// How a pass is cut up. The defaults suit any device; tests shrink both to force many bands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GramOptions {
    /// Largest storage buffer to bind, in bytes (`None`: the device's limit). Smaller values split
    /// W into more bands.
    pub max_binding_bytes: Option<u64>,
    /// Rows per block (per submission); at most [`block_rows_for`] the width.
    pub block_rows: usize,
    /// Bytes of W read back at a time when the pass finishes (at least one row of a band).
    pub read_slice_bytes: u64,
    /// The `gram` kernel's sizes (`None`: [`GramShape::for_limits`] of the device); another shape
    /// is for measuring and testing, and must fit the device ([`GramShape::check`]).
    pub shape: Option<GramShape>,
}

impl Default for GramOptions {
    fn default() -> Self {
        Self {
            max_binding_bytes: None,
            block_rows: DEFAULT_BLOCK_ROWS,
            read_slice_bytes: READ_SLICE_BYTES,
            shape: None,
        }
    }
}

/// The sizes of the register-blocked `gram` kernel (the shader's `THREADS`, `BLOCK`, `STAGE`): a
/// workgroup of `threads` × `threads` invocations sums a tile of W of side `threads`·`block`, each
/// invocation `block` × `block` entries of it in registers, from `stage` rows at a time staged in
/// workgroup memory. Every shape gives the same sums to the bit where the f32 sums are not fused
/// differently: each entry's f32 sum still runs over the K rows in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GramShape {
    pub threads: u32,
    pub block: u32,
    pub stage: u32,
}

impl GramShape {
    /// Side of the tile of W one workgroup sums.
    pub fn side(self) -> u32 {
        self.threads * self.block
    }

    /// Bytes of workgroup memory the kernel declares: `stage` rows of both operands' columns.
    pub fn workgroup_bytes(self) -> u64 {
        2 * self.stage as u64 * self.side() as u64 * 4
    }

    /// The shape for a device: 16 × 16 invocations (WebGPU guarantees 256 per workgroup), or fewer
    /// where the limits say so; 4 × 4 entries each, and as many rows staged as workgroup memory
    /// holds, up to one f32 sum's 64 (32 in WebGPU's default 16 KiB). Not 8 × 8: that takes 64
    /// accumulators and 128 words of fixed-point sums per invocation, about 200 registers, which
    /// leaves one workgroup per multiprocessor on most GPUs, and WebGPU reports no register count to
    /// choose by. A stage under 8 rows would spend more on barriers than on multiply-adds, so a
    /// smaller block comes first.
    pub fn for_limits(limits: &wgpu::Limits) -> GramShape {
        for threads in [16, 8, 4, 2, 1] {
            for block in [4, 2, 1] {
                let fits = |stage| GramShape { threads, block, stage }.check(limits).is_ok();
                if let Some(stage) = [64, 32, 16, 8].into_iter().find(|&s| fits(s)) {
                    return GramShape { threads, block, stage };
                }
            }
        }
        // Below any WebGPU adapter's limits; `check` then says why at the pass's start.
        GramShape { threads: 1, block: 1, stage: 1 }
    }

    /// Whether a device with these limits runs this shape, and if not why (checked as each pass
    /// starts, so that a shape asked for is refused in words rather than by a pipeline error).
    pub fn check(self, limits: &wgpu::Limits) -> Result<(), GpuError> {
        let why = if !(1..=16).contains(&self.threads) {
            Some("the side of a workgroup is 1 to 16 invocations".to_string())
        } else if !(1..=8).contains(&self.block) {
            Some("an invocation holds 1×1 to 8×8 entries (more would not stay in registers)".to_string())
        } else if !self.stage.is_power_of_two() || self.stage > K {
            Some(format!("the rows staged at a time divide the {K} rows of one f32 sum"))
        } else if self.threads * self.threads > limits.max_compute_invocations_per_workgroup
            || self.threads > limits.max_compute_workgroup_size_x
            || self.threads > limits.max_compute_workgroup_size_y
        {
            Some(format!(
                "the adapter allows {} invocations per workgroup, {}×{} at most",
                limits.max_compute_invocations_per_workgroup,
                limits.max_compute_workgroup_size_x,
                limits.max_compute_workgroup_size_y
            ))
        } else if self.workgroup_bytes() > limits.max_compute_workgroup_storage_size as u64 {
            Some(format!(
                "the staged rows take {} bytes of workgroup memory; the adapter allows {}",
                self.workgroup_bytes(),
                limits.max_compute_workgroup_storage_size
            ))
        } else {
            None
        };
        match why {
            None => Ok(()),
            Some(why) => Err(GpuError::Shape { threads: self.threads, block: self.block, stage: self.stage, why }),
        }
    }

    /// `gram.wgsl` with this shape's sizes in place of the defaults it is written with (WGSL has no
    /// templates, and private arrays cannot be sized by a pipeline's override constants).
    pub fn shader(self) -> String {
        let mut text = SHADER.to_string();
        for (name, value) in [("THREADS", self.threads), ("BLOCK", self.block), ("STAGE", self.stage)] {
            let head = format!("\nconst {name}: u32 = ");
            let Some(start) = text.find(&head).map(|at| at + head.len()) else { continue };
            let Some(len) = text[start..].find(';') else { continue };
            text.replace_range(start..start + len, &format!("{value}u"));
        }
        text
    }
}

/// The compute pipelines of `gram.wgsl`'s four entry points, `gram` of one shape (cheap to clone:
/// wgpu handles).
#[derive(Clone)]
pub(crate) struct Pipelines {
    pub(crate) prep: wgpu::ComputePipeline,
    pub(crate) sums: wgpu::ComputePipeline,
    pub(crate) gram: wgpu::ComputePipeline,
    pub(crate) frob: wgpu::ComputePipeline,
}

/// A device's compiled pipelines: `prep`, `sums` and `frob` once (the shape does not touch them),
/// `gram` once per shape asked. A software adapter (SwiftShader, lavapipe) takes seconds to compile.
#[derive(Default)]
pub(crate) struct PipelineCache {
    common: Option<[wgpu::ComputePipeline; 3]>,
    gram: Vec<(GramShape, wgpu::ComputePipeline)>,
}

impl PipelineCache {
    pub(crate) fn get(&mut self, device: &wgpu::Device, shape: GramShape) -> Pipelines {
        let found = self.gram.iter().find(|(s, _)| *s == shape).map(|(_, p)| p.clone());
        let (gram, common) = match (found, self.common.clone()) {
            (Some(gram), Some(common)) => (gram, common),
            (found, common) => {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some("gram.wgsl"),
                    source: wgpu::ShaderSource::Wgsl(shape.shader().into()),
                });
                let pipeline = |entry: &str| {
                    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(entry),
                        layout: None,
                        module: &module,
                        entry_point: Some(entry),
                        compilation_options: Default::default(),
                        cache: None,
                    })
                };
                let gram = found.unwrap_or_else(|| pipeline("gram"));
                let common = common.unwrap_or_else(|| [pipeline("prep"), pipeline("sums"), pipeline("frob")]);
                (gram, common)
            }
        };
        if !self.gram.iter().any(|(s, _)| *s == shape) {
            self.gram.push((shape, gram.clone()));
        }
        self.common = Some(common.clone());
        let [prep, sums, frob] = common;
        Pipelines { prep, sums, gram, frob }
    }
}
