//! The relaxed-SIMD f32 Gram kernel (`f32x4.relaxed_madd`: a fused multiply-add where the machine
//! has one). Compiled only with the cargo feature `relaxed-simd`, into the second worker build:
//! Safari rejects a whole module holding one relaxed instruction, so the plain build has none
//! (`scripts/test.sh` checks both). The page loads this build only after a `WebAssembly.validate`
//! probe (`worker/client.rs`).
//!
//! Not bit for bit equal to the plain kernel: a fused multiply-add rounds once instead of twice, and
//! relaxed results may differ across machines. The tiles are the plain kernel's, so the results agree
//! within the f32 kernel's tolerance (`tests/wasm_browser.rs`).

use core::arch::wasm32::*;

use super::simd::gram_update_f32_kernel;
use super::{PackedGram, COLUMN_BLOCK, LANES, TILE_A};

gram_update_f32_kernel!(
    /// See [`super::gram_update_f32_chunks`].
    #[target_feature(enable = "relaxed-simd")]
    gram_update_f32_relaxed,
    f32x4_relaxed_madd
);

/// See [`super::gram_update_f32_chunks`].
pub fn gram_update_f32_chunks(packed: &[f32], stride: usize, rows: usize, g: &mut PackedGram) {
    // SAFETY: nothing to uphold on wasm: a module whose engine lacks relaxed SIMD fails validation
    // as a whole, before any code runs; the page loads this build only where the probe validated.
    #[allow(unused_unsafe)]
    unsafe {
        gram_update_f32_relaxed(packed, stride, rows, g)
    }
}

/// See [`super::gram_update_f32`]: one chunk of `k` rows.
pub fn gram_update_f32(packed: &[f32], k: usize, g: &mut PackedGram) {
    gram_update_f32_chunks(packed, k, k, g);
}
