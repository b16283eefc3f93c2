//! The exact pass's Gram sums on a GPU: s and G of docs/method.md §1 computed by a WGSL kernel
//! through `wgpu`, for the same moments as the f32 CPU path ([`crate::pass::stats::GramMoments`]).
//!
//! - [`info`] (always compiled): what a caller asks ([`GpuChoice`]), what a Report says
//!   ([`GpuInfo`]) and what can fail ([`GpuError`]);
//! - this module (cargo feature `gpu`): adapter and device acquisition ([`GpuContext`]), and the
//!   small futures the driver awaits;
//! - [`gram`]: the driver that streams row blocks through `gram.wgsl` and reads back the sums;
//! - `exact` (native): a whole exact pass of an opened matrix, with the Report's numbers.
//!
//! Nothing here blocks: work is submitted, and completions arrive through wgpu's callbacks into
//! one-shot futures, which a browser awaits on its event loop. Natively the futures are ready once
//! the device has been polled, which the driver does before awaiting ([`block_on`] drives them).
//! Errors the device reports (validation, out of memory, a lost device) arrive through its
//! callbacks into the context's error slot, which every GPU call checks first.

pub mod info;

pub use info::{GpuChoice, GpuError, GpuInfo};

// Native: it drives the futures with `block_on`.
#[cfg(all(feature = "gpu", not(target_arch = "wasm32")))]
pub mod exact;
#[cfg(feature = "gpu")]
pub mod gram;
#[cfg(feature = "gpu")]
mod shape;

#[cfg(feature = "gpu")]
pub use context::*;

/// Without the cargo feature `gpu` there is no device: this type has no values, so an
/// `Option<Rc<GpuContext>>` is always `None` and the code that would use one compiles away.
#[cfg(not(feature = "gpu"))]
pub enum GpuContext {}

#[cfg(not(feature = "gpu"))]
impl GpuContext {
    pub fn info(&self) -> &GpuInfo {
        match *self {}
    }

    pub fn lose_device_for_test(&self) {
        match *self {}
    }
}

#[cfg(feature = "gpu")]
mod context {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};

    use super::{GpuChoice, GpuError, GpuInfo};

    /// What the device's callbacks report, shared with them.
    #[derive(Default)]
    struct Shared {
        /// The first error the device reported (a lost device, or an uncaptured error).
        error: Option<GpuError>,
        /// Futures waiting on the device: woken when an error arrives, so none waits forever on a
        /// completion a lost device will never signal.
        waiting: Vec<Waker>,
    }

    fn report(shared: &Mutex<Shared>, error: GpuError) {
        let waiting = match shared.lock() {
            Ok(mut s) => {
                s.error.get_or_insert(error);
                std::mem::take(&mut s.waiting)
            }
            Err(_) => Vec::new(),
        };
        waiting.into_iter().for_each(Waker::wake);
    }

    /// A device and its queue, with the limits the device was created with (the adapter's own).
    pub struct GpuContext {
        pub device: wgpu::Device,
        pub queue: wgpu::Queue,
        pub limits: wgpu::Limits,
        info: GpuInfo,
        shared: Arc<Mutex<Shared>>,
        /// The compiled `gram.wgsl` pipelines, made by the first pass on this device (and the first
        /// of each kernel shape) and reused by the next ones: a software adapter (SwiftShader,
        /// lavapipe) takes seconds to compile them.
        pipelines: std::cell::RefCell<super::shape::PipelineCache>,
    }

    impl GpuContext {
        /// The pass's pipelines on this device with the `gram` kernel of `shape`, compiled once.
        pub(crate) fn pipelines(&self, shape: super::gram::GramShape) -> super::shape::Pipelines {
            self.pipelines.borrow_mut().get(&self.device, shape)
        }

        /// [`GpuContext::acquire_async`], waited for on this thread (native only).
        #[cfg(not(target_arch = "wasm32"))]
        pub fn acquire(choice: GpuChoice) -> Result<GpuContext, GpuError> {
            block_on(Self::acquire_async(choice))
        }

        /// The first adapter of the backends `WGPU_BACKEND` allows (all by default; WebGPU in a
        /// browser), with a device that has the adapter's own limits: the Gram bands are planned
        /// with the largest storage binding the adapter offers, not WebGPU's 128 MiB default.
        /// [`GpuChoice::Auto`] refuses a fallback (software) adapter.
        pub async fn acquire_async(choice: GpuChoice) -> Result<GpuContext, GpuError> {
            if choice == GpuChoice::Off {
                return Err(GpuError::NoAdapter("the GPU was not asked for".into()));
            }
            let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
            let adapter = instance
                .request_adapter(&wgpu::RequestAdapterOptions {
                    power_preference: wgpu::PowerPreference::HighPerformance,
                    ..Default::default()
                })
                .await
                .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
            let info = GpuInfo::of(&adapter.get_info());
            if choice == GpuChoice::Auto && info.fallback_adapter {
                return Err(GpuError::NoAdapter(format!(
                    "only a fallback (software) adapter: {} ({}), no faster than the CPU",
                    info.adapter, info.backend
                )));
            }
            let limits = adapter.limits();
            let (device, queue) = adapter
                .request_device(&wgpu::DeviceDescriptor {
                    label: Some("orthoscope"),
                    required_limits: limits.clone(),
                    ..Default::default()
                })
                .await
                .map_err(|e| GpuError::Device(e.to_string()))?;
            let shared = Arc::new(Mutex::new(Shared::default()));
            // The default handler panics on an error; keep the first one for `check` instead.
            let sink = Arc::clone(&shared);
            device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
                let error = match e {
                    wgpu::Error::OutOfMemory { .. } => GpuError::Reported(format!("out of memory: {e}")),
                    _ => GpuError::Reported(e.to_string()),
                };
                report(&sink, error);
            }));
            let sink = Arc::clone(&shared);
            device.set_device_lost_callback(move |reason, message| {
                let why = if message.is_empty() { format!("{reason:?}") } else { format!("{reason:?}: {message}") };
                report(&sink, GpuError::Lost(why));
            });
            Ok(GpuContext { device, queue, limits, info, shared, pipelines: Default::default() })
        }

        /// The adapter, for the Report.
        pub fn info(&self) -> &GpuInfo {
            &self.info
        }

        /// The first error the device reported, if any: every GPU call checks this first.
        pub fn check(&self) -> Result<(), GpuError> {
            match self.shared.lock() {
                Ok(s) => s.error.clone().map_or(Ok(()), Err),
                Err(_) => Err(GpuError::Reported("the error record was poisoned".into())),
            }
        }

        /// The largest storage binding the device allows, in bytes.
        pub fn max_binding_bytes(&self) -> u64 {
            self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size)
        }

        /// Destroys the device, as a driver reset would lose it: the tests (native and browser)
        /// show that a pass then ends in [`GpuError::Lost`] rather than a panic or a hang.
        /// Harmless otherwise, hence in every build.
        pub fn lose_device_for_test(&self) {
            self.device.destroy();
            // Natively the device is lost once its queue is empty (WebGPU's rule), on a poll: run
            // it now, so the lost callback has reported before the next call. A browser calls it
            // from its event loop.
            #[cfg(not(target_arch = "wasm32"))]
            let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
        }

        /// A one-shot signal for a wgpu callback ([`Signal::setter`]) that [`GpuContext::wait`]
        /// can await.
        pub(crate) fn signal(&self) -> Signal {
            Signal(Arc::new(Mutex::new(Flag::default())))
        }

        /// Waits until `signal` is set, or fails as soon as the device reports an error.
        pub(crate) fn wait<'a>(&'a self, signal: &'a Signal) -> impl Future<Output = Result<(), GpuError>> + 'a {
            Wait { signal, shared: &self.shared }
        }

        /// Waits for `signal`, set by a callback of submission `index`. Natively the device is run
        /// until that submission is done (its callbacks included) first, and a signal still unset
        /// then is an error rather than a wait that would never end; a browser polls by itself.
        #[allow(unused_variables)]
        pub(crate) async fn completion(&self, index: &wgpu::SubmissionIndex, signal: &Signal) -> Result<(), GpuError> {
            self.check()?;
            #[cfg(not(target_arch = "wasm32"))]
            {
                let done =
                    self.device.poll(wgpu::PollType::Wait { submission_index: Some(index.clone()), timeout: None });
                self.check()?;
                done.map_err(|e| GpuError::Poll(e.to_string()))?;
                if !signal.is_set() {
                    return Err(GpuError::Poll("the GPU finished without signalling its work done".into()));
                }
            }
            self.wait(signal).await
        }
    }

    #[derive(Default)]
    struct Flag {
        done: bool,
        waker: Option<Waker>,
    }

    /// A one-shot completion set by a wgpu callback.
    #[derive(Clone)]
    pub(crate) struct Signal(Arc<Mutex<Flag>>);

    impl Signal {
        /// The callback that sets it (wgpu wants `Send + 'static`).
        pub(crate) fn setter(&self) -> impl FnOnce() + Send + 'static {
            let flag = Arc::clone(&self.0);
            move || {
                let waker = match flag.lock() {
                    Ok(mut f) => {
                        f.done = true;
                        f.waker.take()
                    }
                    Err(_) => None,
                };
                if let Some(w) = waker {
                    w.wake();
                }
            }
        }

        pub(crate) fn is_set(&self) -> bool {
            self.0.lock().map(|f| f.done).unwrap_or(false)
        }
    }

    struct Wait<'a> {
        signal: &'a Signal,
        shared: &'a Arc<Mutex<Shared>>,
    }

    impl Future for Wait<'_> {
        type Output = Result<(), GpuError>;

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            {
                let Ok(mut flag) = self.signal.0.lock() else {
                    return Poll::Ready(Err(GpuError::Poll("a completion record was poisoned".into())));
                };
                if flag.done {
                    return Poll::Ready(Ok(()));
                }
                flag.waker = Some(cx.waker().clone());
            }
            let Ok(mut shared) = self.shared.lock() else {
                return Poll::Ready(Err(GpuError::Reported("the error record was poisoned".into())));
            };
            if let Some(e) = shared.error.clone() {
                return Poll::Ready(Err(e));
            }
            // Wakers of finished waits accumulate until the next error or until this many: keep only
            // the recent ones (a finished wait's waker is never needed again).
            if shared.waiting.len() > 64 {
                shared.waiting.drain(..32);
            }
            shared.waiting.push(cx.waker().clone());
            Poll::Pending
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub use native::block_on;

    #[cfg(not(target_arch = "wasm32"))]
    mod native {
        use std::future::Future;
        use std::pin::pin;
        use std::sync::Arc;
        use std::task::{Context, Poll, Wake, Waker};
        use std::thread::Thread;

        struct ThreadWaker(Thread);

        impl Wake for ThreadWaker {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }

        /// Runs a future to completion on this thread (native; a browser awaits instead). wgpu's
        /// native futures are ready once the device has been polled, which the driver does before
        /// awaiting.
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
    }
}
