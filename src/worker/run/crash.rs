//! A test hook, not a feature: the deliberate failure behind `?crash_after_rows=N` (and
//! `?crash=oom`, `?crash=gpu-lost`, `?crash=slow-band`), so the end-to-end tests can show the page
//! recovers from a worker that dies, a lost GPU or a lagging helper. Compiled only with the cargo
//! feature `test-hooks` (the end-to-end tests' build): a shared link can never crash a reader's
//! tab. Without it, this does nothing.

#[cfg(feature = "test-hooks")]
use crate::worker::protocol::CrashKind;
use crate::worker::protocol::TestCrash;

/// The release build has no crash hook.
#[cfg(not(feature = "test-hooks"))]
pub(super) fn crash_if_asked(_crash: Option<TestCrash>, _rows_seen: u64) {}

/// The release build never loses its GPU on purpose.
#[cfg(not(feature = "test-hooks"))]
pub(super) fn gpu_loss_asked(_crash: Option<TestCrash>, _rows_seen: u64) -> bool {
    false
}

/// The release build has no straggler.
#[cfg(not(feature = "test-hooks"))]
pub(super) fn helper_pause_ms(_crash: Option<TestCrash>) -> Option<i32> {
    None
}

/// How long `?crash=slow-band` has a helper pause after each step: enough that the lead of a
/// split by columns ends its own band well before this one.
#[cfg(feature = "test-hooks")]
pub(super) fn helper_pause_ms(crash: Option<TestCrash>) -> Option<i32> {
    crash.filter(|c| c.kind == CrashKind::SlowBand).map(|_| 40)
}

/// Whether `?crash=gpu-lost` asks the GPU device to be destroyed now (the caller does it, as a
/// driver reset would): the pass must then finish on the CPU.
#[cfg(feature = "test-hooks")]
pub(super) fn gpu_loss_asked(crash: Option<TestCrash>, rows_seen: u64) -> bool {
    crash.is_some_and(|c| c.kind == CrashKind::GpuLost && rows_seen >= c.after_rows)
}

/// Fails the way `crash` asks once `rows_seen` reaches its row count: a real panic, as a bug would
/// cause, or a real exhaustion of the wasm memory.
#[cfg(feature = "test-hooks")]
pub(super) fn crash_if_asked(crash: Option<TestCrash>, rows_seen: u64) {
    let Some(TestCrash { after_rows, kind }) = crash else { return };
    if rows_seen < after_rows {
        return;
    }
    match kind {
        CrashKind::Panic => panic!("test crash after {rows_seen} rows (?crash_after_rows={after_rows})"),
        CrashKind::OutOfMemory => {
            web_sys::console::log_1(&format!("test out of memory after {rows_seen} rows (?crash=oom)").into());
            // 1 GiB at a time: the 4 GiB address space ends this within four allocations, and
            // untouched pages cost the machine nothing. The failed one aborts (a trap, no panic).
            let mut held: Vec<Vec<u8>> = Vec::new();
            loop {
                held.push(Vec::with_capacity(1 << 30));
                std::hint::black_box(&held);
            }
        }
        // Not a crash of the worker: the analysis loop destroys its GPU device (`gpu_loss_asked`),
        // or a helper lags (`helper_pause_ms`).
        CrashKind::GpuLost | CrashKind::SlowBand => {}
    }
}
