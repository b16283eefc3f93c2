//! What only wasm in a real browser shows: the simd128 kernels against the portable ones, the
//! `Blob` source read with `FileReaderSync` inside a dedicated worker, and a kernel benchmark that
//! prints speed ratios (never asserts times). Run by `scripts/test.sh` in headless Chromium.
#![cfg(target_arch = "wasm32")]

use orthoscope::analysis::{Analysis, AnalysisConfig, Origin};
use orthoscope::format::read_model;
use orthoscope::kernel::{portable, simd, PackedGram};
use orthoscope::locate::choose;
use orthoscope::source::{ByteSource, SliceSource};
use orthoscope::synth;
use orthoscope::worker::blob_source::BlobSource;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_dedicated_worker);

fn unit_rows(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let d = orthoscope::kernel::padded_dim(dim);
    let raw = synth::trained_like(rows, dim, seed);
    let mut out = vec![0.0f32; rows * d];
    for r in 0..rows {
        orthoscope::stats::normalise_row(&raw[r * dim..(r + 1) * dim], &mut out[r * d..(r + 1) * d]);
    }
    out
}

#[wasm_bindgen_test]
fn simd_gram_update_equals_portable_bit_for_bit() {
    for &(rows, dim) in &[(64, 64), (37, 100), (64, 13), (1, 8), (64, 1024)] {
        let mut packed = Vec::new();
        let wide: Vec<f64> = unit_rows(rows, dim, 3).iter().map(|&x| x as f64).collect();
        let k = orthoscope::kernel::pack_rows(&wide, orthoscope::kernel::padded_dim(dim), &mut packed);
        let mut a = PackedGram::new(dim);
        let mut b = PackedGram::new(dim);
        simd::gram_update(&packed, k, &mut a);
        portable::gram_update(&packed, k, &mut b);
        // Same tiling, same order of f64 adds, no fused multiply-add on either path.
        assert_eq!(a, b, "rows {rows} dim {dim}");
        assert!(a.frobenius_sq() > 0.0);
    }
}

#[wasm_bindgen_test]
fn simd_dots_equal_portable_bit_for_bit() {
    for &(na, nb, dim) in &[(5, 7, 64), (64, 64, 1024), (1, 3, 13), (2, 1, 100)] {
        let d = orthoscope::kernel::padded_dim(dim);
        let a = unit_rows(na, dim, 4);
        let b = unit_rows(nb, dim, 5);
        let mut x = vec![0.0f32; na * nb];
        let mut y = vec![0.0f32; na * nb];
        simd::dots(&a, &b, d, &mut x);
        portable::dots(&a, &b, d, &mut y);
        assert_eq!(x, y, "{na}×{nb} dim {dim}");
    }
}

fn blob_of(bytes: &[u8]) -> web_sys::Blob {
    let array = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&array);
    web_sys::Blob::new_with_u8_array_sequence(&parts).expect("Blob")
}

#[wasm_bindgen_test]
fn blob_source_reads_the_right_bytes_at_offsets_of_a_multi_megabyte_blob() {
    let len = 12 * 1024 * 1024 + 13;
    let bytes: Vec<u8> = (0..len as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
    let source = BlobSource::new("pattern.bin".into(), blob_of(&bytes)).expect("FileReaderSync in a worker");
    assert_eq!(source.len(), len as u64);
    for &(off, n) in &[(0usize, 8usize), (1, 1), (4_194_301, 70_000), (len - 10, 10), (9_000_000, 3_000_000)] {
        let mut buf = vec![0u8; n];
        source.read_at(off as u64, &mut buf).expect("read");
        assert_eq!(buf, bytes[off..off + n], "offset {off}");
    }
    let mut past = [0u8; 4];
    assert!(source.read_at(len as u64 - 2, &mut past).is_err(), "a read past the end is an error, not garbage");
}

#[wasm_bindgen_test]
fn analysis_through_a_blob_equals_analysis_of_the_same_bytes_in_memory() {
    let values = synth::trained_like(700, 96, 9);
    let file = synth::safetensors_bytes(&[synth::TensorSpec::matrix(
        "model.embed_tokens.weight",
        orthoscope::format::DType::BF16,
        700,
        96,
        &values,
    )]);
    let run = |source: Box<dyn ByteSource>| {
        let model = read_model(source.as_ref(), 0).expect("header");
        let (t, why) = choose(&model, None, "f").expect("embedding");
        let a = Analysis::new(source, t, Origin { tensor_reason: why, ..Origin::default() }, AnalysisConfig::default())
            .expect("analysis");
        a.run(&mut |_| {}).expect("run").report(0.0).expect("report")
    };
    let from_blob = run(Box::new(BlobSource::new("f".into(), blob_of(&file)).expect("blob")));
    let in_memory = run(Box::new(SliceSource::new("f", file)));
    assert_eq!(from_blob, in_memory);
    assert!(from_blob.exact && from_blob.kernel == "wasm-simd128");
}

fn now() -> f64 {
    js_sys::Date::now()
}

/// Prints GFLOP/s of both kernels and their ratio. Numbers only: never a timed assertion.
#[wasm_bindgen_test]
fn bench_kernels_print_ratios() {
    for (dim, rows) in [(1024, 1024), (4096, 384)] {
        bench_at(dim, rows);
    }
}

fn bench_at(dim: usize, rows: usize) {
    let u = unit_rows(rows, dim, 11);
    let d = orthoscope::kernel::padded_dim(dim);
    let wide: Vec<f64> = u.iter().map(|&x| x as f64).collect();
    let chunks: Vec<Vec<f64>> = wide
        .chunks(64 * d)
        .map(|c| {
            let mut p = Vec::new();
            orthoscope::kernel::pack_rows(c, d, &mut p);
            p
        })
        .collect();
    let gram = |f: fn(&[f64], usize, &mut PackedGram)| {
        let mut g = PackedGram::new(dim);
        // Warm-up calls let V8 tier up; then time 64-row calls, as the worker makes them.
        for c in chunks.iter().take(2) {
            f(c, 64, &mut g);
        }
        let t = now();
        for c in &chunks {
            f(c, 64, &mut g);
        }
        let secs = ((now() - t) / 1000.0).max(1e-6);
        // Upper triangle only: rows · d²/2 multiply-adds, 2 flops each.
        rows as f64 * (d * d) as f64 / secs / 1e9
    };
    // Each kernel runs twice and the second run counts: V8 compiles hot functions in the background,
    // and the first kernel timed would otherwise pay for both.
    let (_, _) = (gram(simd::gram_update), gram(portable::gram_update));
    let g_simd = gram(simd::gram_update);
    let g_port = gram(portable::gram_update);
    let dots = |f: fn(&[f32], &[f32], usize, &mut [f32])| {
        let mut out = vec![0.0f32; 64 * rows];
        f(&u[..64 * d], &u, d, &mut out);
        let t = now();
        for c in u.chunks(64 * d) {
            f(c, &u, d, &mut out);
        }
        let secs = ((now() - t) / 1000.0).max(1e-6);
        (rows * rows * d * 2) as f64 / secs / 1e9
    };
    let (_, _) = (dots(simd::dots), dots(portable::dots));
    let d_simd = dots(simd::dots);
    let d_port = dots(portable::dots);
    console_log!(
        "BENCH gram_update d={dim}: simd128 {g_simd:.1} GFLOP/s, portable {g_port:.1} GFLOP/s, ratio {:.2}x",
        g_simd / g_port
    );
    console_log!(
        "BENCH dots d={dim}: simd128 {d_simd:.1} GFLOP/s, portable {d_port:.1} GFLOP/s, ratio {:.2}x",
        d_simd / d_port
    );
    assert!(g_simd.is_finite() && d_simd.is_finite());
}
