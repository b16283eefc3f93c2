//! The exact pass's Gram sums on a GPU (cargo feature `gpu`): s and G of docs/method.md §1 computed
//! by a WGSL kernel through `wgpu`, for the same moments as the f32 CPU path
//! ([`crate::pass::stats::GramMoments`]).
//!
//! - this module: adapter and device acquisition ([`GpuContext`]) and its errors ([`GpuError`]);
//! - [`gram`]: the driver that streams row blocks through `gram.wgsl` and reads back the sums;
//! - [`exact`]: a whole exact pass of an opened matrix, with the Report's numbers.
//!
//! Only portable wgpu is used (WGSL, no native-only features, the adapter's own limits), so that the
//! WebGPU backend can run the same code in a browser later. Natively the futures wgpu returns are
//! driven by [`block_on`].

pub mod exact;
pub mod gram;

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;

/// Why the GPU pass could not run. Every GPU call that can fail maps to one of these; nothing in
/// this module panics on what the driver or the device reports.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum GpuError {
    /// No adapter matched (no GPU, no driver such as Mesa's lavapipe, or the backend is disabled).
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),
    /// The adapter refused a device with its own limits.
    #[error("the GPU adapter refused a device: {0}")]
    Device(String),
    /// The device reported an error (validation, out of memory, internal) inside an error scope.
    #[error("the GPU reported an error: {0}")]
    Reported(String),
    /// Waiting for submitted work failed (device lost, or a timeout).
    #[error("waiting for the GPU failed: {0}")]
    Poll(String),
    /// Reading a result buffer back failed.
    #[error("reading back from the GPU failed: {0}")]
    Map(String),
    /// The storage-binding limit cannot hold even one tile row of G or one row of the matrix.
    #[error("a GPU storage binding of {limit} bytes cannot hold {needed} bytes")]
    BindingTooSmall { needed: u64, limit: u64 },
    /// The dimension is zero or too large for 32-bit shader indices.
    #[error("dimension {0} is not supported by the GPU pass")]
    Dimension(usize),
    /// The centre has the wrong length or a non-finite value.
    #[error("the centre must be {dim} finite values")]
    Centre { dim: usize },
    /// Rows were given as a slice that is not a whole number of rows.
    #[error("{len} values are not a whole number of rows of {dim}")]
    PartialRow { len: usize, dim: usize },
}

/// A device and its queue, with the limits the device was created with (the adapter's own).
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub limits: wgpu::Limits,
    /// The adapter's name and backend, for the report and for test messages ("llvmpipe …, Vulkan").
    pub adapter: String,
    /// The first error the device reported outside an error scope (checked by the driver).
    uncaptured: Arc<Mutex<Option<String>>>,
}

impl GpuContext {
    /// The first adapter of the backends `WGPU_BACKEND` allows (all by default), with a device
    /// that has the adapter's own limits: the Gram bands are planned with the largest storage
    /// binding the adapter offers, not WebGPU's 128 MiB default.
    pub fn acquire() -> Result<GpuContext, GpuError> {
        block_on(Self::acquire_async())
    }

    pub async fn acquire_async() -> Result<GpuContext, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let limits = adapter.limits();
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("orthoscope"),
                required_limits: limits.clone(),
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device(e.to_string()))?;
        // The default handler panics on an error outside an error scope: keep the first one for
        // `check` instead.
        let uncaptured = Arc::new(Mutex::new(None));
        let sink = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            if let Ok(mut first) = sink.lock() {
                first.get_or_insert_with(|| e.to_string());
            }
        }));
        Ok(GpuContext { device, queue, limits, adapter: format!("{} ({:?})", info.name, info.backend), uncaptured })
    }

    /// Runs `work` inside validation, out-of-memory and internal error scopes: any error the device
    /// reports while it runs (or reported earlier outside a scope) becomes [`GpuError::Reported`].
    pub fn scoped<T>(&self, work: impl FnOnce() -> Result<T, GpuError>) -> Result<T, GpuError> {
        let internal = self.device.push_error_scope(wgpu::ErrorFilter::Internal);
        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = work();
        let errors = [block_on(validation.pop()), block_on(memory.pop()), block_on(internal.pop())];
        if let Some(e) = errors.into_iter().flatten().next() {
            return Err(GpuError::Reported(e.to_string()));
        }
        self.check()?;
        out
    }

    /// The first error reported outside a scope, if any.
    pub fn check(&self) -> Result<(), GpuError> {
        match self.uncaptured.lock() {
            Ok(first) => first.as_ref().map_or(Ok(()), |e| Err(GpuError::Reported(e.clone()))),
            Err(_) => Err(GpuError::Reported("the error record was poisoned".into())),
        }
    }

    /// The largest storage binding the device allows, in bytes.
    pub fn max_binding_bytes(&self) -> u64 {
        self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
    }
}

struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread (native; a browser awaits instead). wgpu's native
/// futures are ready once the device has been polled, which the driver does before awaiting.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => std::thread::park(),
        }
    }
}
