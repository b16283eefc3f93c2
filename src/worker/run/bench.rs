//! The benchmark request (`scripts/bench.sh`), and the size of this instance's memory.

use js_sys::Reflect;

use super::pacer::sleep_ms;
use crate::pass::kernel::{self, Precision};
use crate::worker::protocol::Response;

/// Runs the peak loops and the Gram kernels of this build (a few seconds at most for sane sizes).
pub(super) async fn benchmark(peak_iterations: u64, dim: u64, rows: u64) -> Response {
    let (dim, rows) = (dim.clamp(8, 16384) as usize, rows.clamp(64, 1 << 16) as usize);
    // Short runs first make every timed function hot. V8 compiles the optimised code in the
    // background and only later calls use it (a running call is never switched: the "tier-up trap"
    // of ARCHITECTURE.md, "Facts the code relies on"), so the timed runs wait for it; measured
    // without this wait, the peak loop ran at 4 GFLOP/s instead of ~40.
    for _ in 0..2 {
        let _ = kernel::bench::peak_f32x4_gflops(peak_iterations / 1000 + 1, false);
        let _ = kernel::bench::peak_f32x4_gflops(peak_iterations / 1000 + 1, true);
        let _ = kernel::bench::gram_gflops(dim.min(512), 64, Precision::F32);
        let _ = kernel::bench::gram_gflops(dim.min(512), 64, Precision::F64);
        sleep_ms(300).await;
    }
    Response::Benchmark {
        kernel: kernel::kernel_name(Precision::F32).to_string(),
        peak_gflops: kernel::bench::peak_f32x4_gflops(peak_iterations, false),
        peak_relaxed_gflops: kernel::bench::peak_f32x4_gflops(peak_iterations, true),
        kernel_gflops: kernel::bench::gram_gflops(dim, rows, Precision::F32),
        kernel_f64_gflops: kernel::bench::gram_gflops(dim, rows, Precision::F64),
    }
}

/// Current size of this instance's linear memory (it only grows, so this is the peak).
pub(super) fn wasm_memory_bytes() -> Option<u64> {
    let memory = wasm_bindgen::memory();
    let buffer = Reflect::get(&memory, &"buffer".into()).ok()?;
    let len = Reflect::get(&buffer, &"byteLength".into()).ok()?.as_f64()?;
    Some(len as u64)
}
