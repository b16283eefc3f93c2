//! What a caller asks of the GPU and what a Report says about it. Compiled with or without the
//! cargo feature `gpu`, so that `Report`, `Error` and the request types never depend on it.

use serde::{Deserialize, Serialize};

/// Whether a pass may run on a GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuChoice {
    /// The CPU only.
    #[default]
    Off,
    /// A hardware adapter if there is one; a fallback (software) adapter is refused, since the CPU
    /// pass is faster than a GPU emulated on the same CPU.
    Auto,
    /// The first adapter, software ones included (the user asked for the GPU explicitly).
    Any,
}

/// The adapter a pass ran on, for the Report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// The adapter's name ("llvmpipe (LLVM 19.1.7, 256 bits)"), or what WebGPU tells of it.
    pub adapter: String,
    /// "webgpu", "vulkan", "metal", "dx12" or "gl".
    pub backend: String,
    /// True for a software adapter (Mesa's lavapipe, WARP): correct, but no faster than the CPU.
    pub fallback_adapter: bool,
}

/// Why the GPU pass could not run. Every GPU call that can fail maps to one of these; nothing in
/// the GPU code panics on what the driver or the device reports. The caller of a failed GPU pass
/// reruns it on the CPU.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// No adapter matched (no GPU, no driver, the backend is disabled, only a software adapter where
    /// a hardware one was asked for, or the build has no GPU support).
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The adapter refused a device with its own limits.
    #[error("the GPU adapter refused a device: {0}")]
    Device(String),
    /// The device reported an error (validation, out of memory, internal).
    #[error("the GPU reported an error: {0}")]
    Reported(String),
    /// The device was lost (driver reset, a browser reclaiming it, or destroyed).
    #[error("the GPU device was lost: {0}")]
    Lost(String),
    /// Waiting for submitted work failed.
    #[error("waiting for the GPU failed: {0}")]
    Poll(String),
    /// Reading a result buffer back failed.
    #[error("reading back from the GPU failed: {0}")]
    Map(String),
    /// The storage-binding limit cannot hold even one tile row of G or one row of the matrix.
    #[error("a GPU storage binding of {limit} bytes cannot hold {needed} bytes")]
    BindingTooSmall { needed: u64, limit: u64 },
    /// A Gram kernel shape asked for (for a measurement or a test) that this adapter cannot run.
    #[error(
        "a Gram kernel of {threads}×{threads} invocations holding {block}×{block} entries each, \
         {stage} rows staged at a time, does not fit this GPU: {why}"
    )]
    Shape { threads: u32, block: u32, stage: u32, why: String },
    /// The dimension is zero or too large for 32-bit shader indices.
    #[error("dimension {0} is not supported by the GPU pass")]
    Dimension(usize),
    /// The centre has the wrong length or a non-finite value.
    #[error("the centre must be {dim} finite values")]
    Centre { dim: usize },
    /// Rows were given as a slice that is not a whole number of rows.
    #[error("{len} values are not a whole number of rows of {dim}")]
    PartialRow { len: usize, dim: usize },
    /// Raw rows of an element type the shader does not decode (only F32, BF16 and F16 go as they are).
    #[error("the GPU pass takes raw F32, BF16 or F16 rows, not {0}")]
    RawDType(String),
    /// The pass's sums were asked for before the GPU pass was read back (`finish_gpu`).
    #[error("the GPU pass has not been read back yet")]
    NotFinished,
}

#[cfg(feature = "gpu")]
impl GpuInfo {
    /// From wgpu's adapter description. WebGPU leaves the name empty (browsers hide it); the
    /// vendor and architecture it may give stand in.
    pub fn of(info: &wgpu::AdapterInfo) -> GpuInfo {
        let backend = match info.backend {
            wgpu::Backend::BrowserWebGpu => "webgpu",
            wgpu::Backend::Vulkan => "vulkan",
            wgpu::Backend::Metal => "metal",
            wgpu::Backend::Dx12 => "dx12",
            wgpu::Backend::Gl => "gl",
            wgpu::Backend::Noop => "noop",
        };
        let adapter = if !info.name.trim().is_empty() {
            info.name.trim().to_string()
        } else {
            let parts: Vec<&str> =
                [info.driver.trim(), info.driver_info.trim()].into_iter().filter(|s| !s.is_empty()).collect();
            if parts.is_empty() {
                "WebGPU adapter".to_string()
            } else {
                parts.join(" ")
            }
        };
        GpuInfo { adapter, backend: backend.to_string(), fallback_adapter: info.device_type == wgpu::DeviceType::Cpu }
    }
}
