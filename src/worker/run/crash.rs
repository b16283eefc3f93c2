//! A test hook, not a feature: the deliberate failure behind `?crash_after_rows=N` (and
//! `?crash=oom`), so the end-to-end tests can show the page recovers from a worker that dies.
//! Compiled only with the cargo feature `test-hooks` (the end-to-end tests' build): a shared link
//! can never crash a reader's tab. Without it, this does nothing.

#[cfg(feature = "test-hooks")]
use crate::worker::protocol::CrashKind;
use crate::worker::protocol::TestCrash;

/// The release build has no crash hook.
#[cfg(not(feature = "test-hooks"))]
pub(super) fn crash_if_asked(_crash: Option<TestCrash>, _rows_seen: u64) {}

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
    }
}
