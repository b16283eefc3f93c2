//! Speed measurements: a clock the kernels can read in every build, and the peak microbenchmark
//! that the Gram kernel's GFLOP/s is compared with ("kernel GFLOP/s next to a peak").
//!
//! `std::time::Instant` panics on wasm32-unknown-unknown, so the browser worker hands in its own
//! clock ([`set_clock`], `performance.now`); native builds default to `Instant`.

use std::sync::OnceLock;

static CLOCK: OnceLock<fn() -> f64> = OnceLock::new();

/// Sets the millisecond clock used for kernel timings (first call wins).
pub fn set_clock(now_ms: fn() -> f64) {
    let _ = CLOCK.set(now_ms);
}

/// Milliseconds from an arbitrary origin, or None where no clock was given (wasm without
/// [`set_clock`]).
pub fn now_ms() -> Option<f64> {
    if let Some(clock) = CLOCK.get() {
        return Some(clock());
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
        Some(ORIGIN.get_or_init(std::time::Instant::now).elapsed().as_secs_f64() * 1e3)
    }
    #[cfg(target_arch = "wasm32")]
    None
}

/// Independent dependency chains in the peak loop: enough to cover the add/multiply latency (3–4
/// cycles) times two pipes, few enough to stay in 16 vector registers.
pub const PEAK_CHAINS: usize = 12;
/// Floating-point operations per peak-loop iteration: each chain does one 4-lane multiply and one
/// 4-lane add (or one fused multiply-add, counted as two).
pub const PEAK_FLOPS_PER_ITERATION: f64 = (PEAK_CHAINS * 4 * 2) as f64;

/// The peak multiply-add rate of f32x4 registers, in GFLOP/s: [`PEAK_CHAINS`] chains of
/// `x = x·m + c` with no memory traffic. `relaxed` uses `f32x4.relaxed_madd` (None unless built with
/// the `relaxed-simd` feature on wasm). Portable builds run the same loop in plain Rust. None also
/// when there is no clock.
pub fn peak_f32x4_gflops(iterations: u64, relaxed: bool) -> Option<f64> {
    let mut checksum = 0.0f32;
    let mut available = true;
    let ms = fastest_ms(|| match if relaxed { peak_relaxed(iterations) } else { Some(peak_plain(iterations)) } {
        Some(sum) => checksum += sum,
        None => available = false,
    })?;
    // The checksum keeps the loop from being optimised away.
    std::hint::black_box(checksum);
    available.then(|| iterations as f64 * PEAK_FLOPS_PER_ITERATION / ms / 1e6)
}

/// [`PEAK_CHAINS`] chains of `x = madd(x, m, c)` in f32x4 registers; inlined into its caller so the
/// relaxed one compiles `madd` with that caller's target feature.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
fn peak_chains(
    iterations: u64,
    madd: impl Fn(core::arch::wasm32::v128, core::arch::wasm32::v128, core::arch::wasm32::v128) -> core::arch::wasm32::v128,
) -> f32 {
    use core::arch::wasm32::*;
    let m = f32x4_splat(std::hint::black_box(0.999_9));
    let c = f32x4_splat(std::hint::black_box(1e-4));
    let mut x = [f32x4_splat(1.0); PEAK_CHAINS];
    for _ in 0..iterations {
        for v in x.iter_mut() {
            *v = madd(*v, m, c);
        }
    }
    x.iter().map(|&v| f32x4_extract_lane::<0>(v)).sum()
}

// Never inlined: inlined into the timing loop of `fastest_ms`, LLVM compiled the chains so that
// the plain peak ran at a third of its rate (16.7 GFLOP/s instead of ~46, measured in Chromium).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(never)]
fn peak_plain(iterations: u64) -> f32 {
    use core::arch::wasm32::*;
    peak_chains(iterations, |x, m, c| f32x4_add(f32x4_mul(x, m), c))
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
#[inline(never)]
fn peak_plain(iterations: u64) -> f32 {
    let m = std::hint::black_box(0.999_9f32);
    let c = std::hint::black_box(1e-4f32);
    let mut x = [[1.0f32; 4]; PEAK_CHAINS];
    for _ in 0..iterations {
        for v in x.iter_mut() {
            for l in v.iter_mut() {
                *l = *l * m + c;
            }
        }
    }
    x.iter().map(|v| v[0]).sum()
}

/// The peak loop with one relaxed multiply-add per chain (the relaxed build only).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd"))]
#[inline(never)]
fn peak_relaxed(iterations: u64) -> Option<f32> {
    use core::arch::wasm32::*;
    #[target_feature(enable = "relaxed-simd")]
    fn chains(iterations: u64) -> f32 {
        peak_chains(iterations, |x, m, c| f32x4_relaxed_madd(x, m, c))
    }
    // SAFETY: nothing to uphold on wasm: a module whose engine lacks relaxed SIMD fails validation
    // as a whole, before any code runs (see `super::relaxed`).
    #[allow(unused_unsafe)]
    Some(unsafe { chains(iterations) })
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128", feature = "relaxed-simd")))]
fn peak_relaxed(_iterations: u64) -> Option<f32> {
    None
}

/// GFLOP/s of the Gram update this build runs at `precision`, on `rows` pseudo-random unit rows of
/// `dim` dimensions fed as the pass feeds them: f32 in batches of [`super::batch_rows`], f64 in
/// [`super::MAX_CHUNK_ROWS`]-row calls (two warm-up calls first, for V8's tier-up). Flops:
/// rows · d_pad² (the upper triangle's d²/2 multiply-adds, two flops each). None without a clock.
pub fn gram_gflops(dim: usize, rows: usize, precision: super::Precision) -> Option<f64> {
    match precision {
        super::Precision::F32 => gram_f32_gflops(dim, rows, super::batch_rows(super::padded_dim(dim))),
        super::Precision::F64 => gram_f64_gflops(dim, rows),
    }
}

/// `rows` xorshift values in [−0.5, 0.5) for each of `dim` dimensions, zero-padded to `d`: any
/// values will do, only the speed is measured.
fn noise_rows(dim: usize, d: usize, rows: usize) -> Vec<f64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut wide = vec![0.0f64; rows * d];
    for (i, x) in wide.iter_mut().enumerate() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *x = if i % d < dim { (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5 } else { 0.0 };
    }
    wide
}

/// GFLOP/s of the f32 Gram update fed `batch` rows per call ([`super::gram_update_f32_batch`]; a
/// batch of [`super::MAX_CHUNK_ROWS`] is one chunk per call, G streaming through memory each time,
/// as before the batches), over at least `rows` rows.
pub fn gram_f32_gflops(dim: usize, rows: usize, batch: usize) -> Option<f64> {
    use super::{padded_dim, PackedGram};
    let d = padded_dim(dim);
    let batch = batch.max(1);
    let wide = noise_rows(dim, d, batch);
    let (mut packed, mut rounded) = (Vec::new(), Vec::new());
    for (r, row) in wide.chunks_exact(d.max(1)).enumerate() {
        super::pack_row_f32_into(row, &[], r, &mut packed, &mut rounded);
    }
    let mut g = PackedGram::new(dim);
    let call = |g: &mut PackedGram| super::gram_update_f32_batch(&packed, batch, g);
    call(&mut g);
    call(&mut g);
    let calls = rows.div_ceil(batch).max(1);
    let ms = fastest_ms(|| {
        for _ in 0..calls {
            call(&mut g);
        }
    })?;
    std::hint::black_box(g.frobenius_sq());
    Some((calls * batch) as f64 * (d * d) as f64 / ms / 1e6)
}

/// Times of a measurement this many times; the fastest counts.
pub const REPEATS: usize = 3;

/// The fastest of [`REPEATS`] runs of `run`, in milliseconds: the benchmark shares the machine
/// (other processes, a hypervisor), and what it compares is the kernel's speed when nothing else
/// intrudes, not the noise. None without a clock.
fn fastest_ms(mut run: impl FnMut()) -> Option<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = now_ms()?;
        run();
        best = best.min(now_ms()? - start);
    }
    Some(best.max(1e-3))
}

/// GFLOP/s of the f64 Gram update in [`super::MAX_CHUNK_ROWS`]-row calls.
fn gram_f64_gflops(dim: usize, rows: usize) -> Option<f64> {
    use super::{padded_dim, PackedGram, MAX_CHUNK_ROWS};
    let d = padded_dim(dim);
    let wide = noise_rows(dim, d, MAX_CHUNK_ROWS);
    let mut g = PackedGram::new(dim);
    let mut p64 = Vec::new();
    let k64 = super::pack_rows(&wide, d, &mut p64);
    let call = |g: &mut PackedGram| super::gram_update(&p64, k64, g);
    call(&mut g);
    call(&mut g);
    let calls = rows.div_ceil(MAX_CHUNK_ROWS).max(1);
    let ms = fastest_ms(|| {
        for _ in 0..calls {
            call(&mut g);
        }
    })?;
    std::hint::black_box(g.frobenius_sq());
    Some((calls * MAX_CHUNK_ROWS) as f64 * (d * d) as f64 / ms / 1e6)
}
