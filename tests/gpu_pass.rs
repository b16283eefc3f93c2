//! The GPU Gram pass wired into the analysis (`pass::analysis`, `run::job`, `run::threads`, the CLI's
//! `--gpu`): raw BF16/F16/F32 rows decoded by the shader, the whole pass against the CPU pass and the
//! all-pairs f64 loop (|Δε| ≤ 1e-7, |Δσ|/σ ≤ 1e-6, docs/method.md §1), the running estimate and
//! *Stop here*, the cases the GPU declines, a lost device, and the fallback to the CPU; sparse
//! autoencoders' dictionaries by rows and by columns, and stopped early.
//!
//! These tests need a GPU adapter (Mesa's lavapipe will do), so they are `#[ignore]`d and listed as
//! such by a plain `cargo test`; with `--ignored` they fail without an adapter, unless
//! `ORTHOSCOPE_NO_GPU=1` (see `tests/gpu_gram.rs`). Run with:
//! `WGPU_BACKEND=vulkan cargo test --features "gpu fixtures" --test gpu_pass -- --ignored --nocapture`
#![cfg(feature = "gpu")]

use std::path::PathBuf;
use std::rc::Rc;
use std::time::Instant;

use half::{bf16, f16};
use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::fixtures::synth::{safetensors_bytes, trained_like, Normal, TensorSpec};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::gpu::gram::{GpuGram, GramOptions};
use orthoscope::pass::gpu::{block_on, GpuChoice, GpuContext, GpuError};
use orthoscope::read::format::decode::decode_rows;
use orthoscope::read::format::DType;
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::result::report::Report;
use orthoscope::run::job::{Job, JobOptions};
use orthoscope::run::threads::{analyze_paths, PassRequest};
use orthoscope::Error;

const EPSILON_TOL: f64 = 1e-7;
const SIGMA_REL_TOL: f64 = 1e-6;

fn context() -> Option<Rc<GpuContext>> {
    match GpuContext::acquire(GpuChoice::Any) {
        Ok(ctx) => Some(Rc::new(ctx)),
        Err(e) if std::env::var("ORTHOSCOPE_NO_GPU").is_ok_and(|v| v == "1") => {
            eprintln!("skipped: ORTHOSCOPE_NO_GPU=1 and {e}");
            None
        }
        Err(e) => panic!(
            "{e}. These tests need a GPU adapter (Mesa's lavapipe will do: apt-get install \
             mesa-vulkan-drivers; WGPU_BACKEND=vulkan); set ORTHOSCOPE_NO_GPU=1 to skip them"
        ),
    }
}

/// μ, σ, ε by the f64 all-pairs definition, and the (kept, zero, non-finite) counts.
fn all_pairs(values: &[f32], dim: usize) -> ((f64, f64, f64), (u64, u64, u64)) {
    let a = AllPairs::of(values, dim);
    ((a.mu, a.sigma, a.epsilon), (a.kept, a.zero, a.nonfinite))
}

fn gaussian(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut normal = Normal::new(seed);
    (0..rows * dim).map(|_| normal.sample() as f32).collect()
}

/// Rows sharing one direction (μ far from 0), `common` its weight against N(0,1) noise.
fn common_component(rows: usize, dim: usize, common: f64, seed: u64) -> Vec<f32> {
    let mut normal = Normal::new(seed);
    let direction: Vec<f64> = (0..dim).map(|_| normal.sample()).collect();
    let norm = direction.iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut out = Vec::with_capacity(rows * dim);
    for _ in 0..rows {
        for &c in &direction {
            out.push((common * c / norm * (dim as f64).sqrt() + normal.sample()) as f32);
        }
    }
    out
}

/// `values` as F16 bytes, with rows the decoder must get right: all entries subnormal (2⁻²⁰ scale),
/// half subnormal, an infinity, a NaN, zeros and negative zeros.
fn f16_rows_with_specials(values: &[f32], dim: usize) -> Vec<u8> {
    let mut halves: Vec<f16> = values.iter().map(|&x| f16::from_f32(x)).collect();
    for (r, row) in halves.chunks_exact_mut(dim).enumerate() {
        match r % 17 {
            1 => row.iter_mut().for_each(|x| *x = f16::from_f32(x.to_f32() * 2f32.powi(-20))),
            4 => row.iter_mut().step_by(2).for_each(|x| *x = f16::from_f32(x.to_f32() * 2f32.powi(-18))),
            7 => row[dim / 3] = f16::INFINITY,
            9 => row[0] = f16::NAN,
            11 => row.iter_mut().for_each(|x| *x = f16::ZERO),
            13 => row.iter_mut().for_each(|x| *x = f16::NEG_ZERO),
            _ => {}
        }
    }
    halves.iter().flat_map(|h| h.to_le_bytes()).collect()
}

fn bf16_rows_with_specials(values: &[f32], dim: usize) -> Vec<u8> {
    let mut b: Vec<bf16> = values.iter().map(|&x| bf16::from_f32(x)).collect();
    for (r, row) in b.chunks_exact_mut(dim).enumerate() {
        match r % 13 {
            2 => row[1] = bf16::NEG_INFINITY,
            5 => row.iter_mut().for_each(|x| *x = bf16::ZERO),
            8 => row.iter_mut().for_each(|x| *x = bf16::from_f32(x.to_f32() * 2f32.powi(-130))),
            _ => {}
        }
    }
    b.iter().flat_map(|h| h.to_le_bytes()).collect()
}

/// Raw rows of each type straight to the GPU (odd d: rows of an odd number of 16-bit values), fed in
/// uneven slices, against the all-pairs loop over the CPU's decoding of the same bytes.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn raw_rows_are_decoded_on_the_gpu_as_the_cpu_decodes_them() {
    let Some(ctx) = context() else { return };
    for (name, dtype, dim, bytes) in [
        ("F16 specials d=77", DType::F16, 77, f16_rows_with_specials(&gaussian(420, 77, 1), 77)),
        ("F16 μ≈0.5 d=131", DType::F16, 131, f16_rows_with_specials(&common_component(380, 131, 1.0, 2), 131)),
        ("BF16 specials d=95", DType::BF16, 95, bf16_rows_with_specials(&trained_like(400, 95, 3), 95)),
        ("F32 d=63", DType::F32, 63, gaussian(350, 63, 4).iter().flat_map(|x| x.to_le_bytes()).collect()),
    ] {
        let row_bytes = dim * if dtype == DType::F32 { 4 } else { 2 };
        let rows = bytes.len() / row_bytes;
        let mut values = vec![0f32; rows * dim];
        decode_rows(&bytes, &dtype, dim, &mut values).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ((mu, sigma, eps), counts) = all_pairs(&values, dim);
        let options = GramOptions { max_binding_bytes: None, block_rows: 53, ..GramOptions::default() };
        let mut pass = GpuGram::new(Rc::clone(&ctx), dim, None, options).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (mut at, mut slice) = (0, 1);
        while at < rows {
            let take = slice.min(rows - at);
            pass.add_raw_rows(&bytes[at * row_bytes..(at + take) * row_bytes], &dtype)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            at += take;
            slice = slice * 2 + 1;
        }
        let sums = pass.finish().unwrap_or_else(|e| panic!("{name}: {e}"));
        let c = sums.counts;
        assert_eq!((c.kept, c.dropped_zero, c.dropped_nonfinite), counts, "{name}");
        let m = sums.moments().unwrap_or_else(|| panic!("{name}: no moments"));
        let (d_eps, d_sigma) = ((m.mu + 2.0 * m.sigma - eps).abs(), (m.sigma - sigma).abs() / sigma);
        println!("{name}: μ={mu:.6} σ={sigma:.6} counts={counts:?} |Δε|={d_eps:.2e} |Δσ|/σ={d_sigma:.2e}");
        assert!(d_eps <= EPSILON_TOL, "{name}: |Δε| = {d_eps:e}");
        assert!(d_sigma <= SIGMA_REL_TOL, "{name}: |Δσ|/σ = {d_sigma:e}");
    }
}

/// Mixed and malformed raw input: a type the shader does not decode, and a partial row.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn raw_rows_of_other_types_or_partial_rows_are_typed_errors() {
    let Some(ctx) = context() else { return };
    let mut pass = GpuGram::new(Rc::clone(&ctx), 5, None, GramOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(pass.add_raw_rows(&[0u8; 18], &DType::F64), Err(GpuError::RawDType(_))));
    assert!(matches!(pass.add_raw_rows(&[0u8; 12], &DType::BF16), Err(GpuError::PartialRow { .. })));
}

/// A model file written to a fresh temporary directory.
fn model_file(name: &str, dtype: DType, values: &[f32], rows: usize, dim: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orthoscope-gpu-pass-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join("model.safetensors");
    let bytes = safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", dtype, rows, dim, values)]);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
    path
}

fn analyze(path: &PathBuf, gpu: GpuChoice) -> Report {
    let request = PassRequest { gpu, ..PassRequest::default() };
    analyze_paths(std::slice::from_ref(path), &request).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `analyze_paths` (the CLI's `analyze`, `--gpu` being `GpuChoice::Any`) on the GPU gives the CPU
/// threads' Report: ε to 1e-7, the same counts, and says where it ran.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn analyze_paths_on_the_gpu_equals_the_cpu_pass() {
    let Some(ctx) = context() else { return };
    let software = ctx.info().fallback_adapter;
    drop(ctx);
    let (rows, dim) = (3000, 131);
    for (name, dtype) in [("bf16", DType::BF16), ("f16", DType::F16), ("f32", DType::F32)] {
        let path = model_file(name, dtype.clone(), &trained_like(rows, dim, 21), rows, dim);
        let t = Instant::now();
        let cpu = analyze(&path, GpuChoice::Off);
        let cpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let gpu = analyze(&path, GpuChoice::Any);
        let gpu_ms = t.elapsed().as_secs_f64() * 1e3;
        let d_eps = (cpu.epsilon - gpu.epsilon).abs();
        println!(
            "{name}: CPU ε={} ({cpu_ms:.0} ms) GPU ε={} ({gpu_ms:.0} ms) |Δε|={d_eps:.2e} kernel {:?} {:?}",
            cpu.epsilon, gpu.epsilon, gpu.kernel, gpu.gpu
        );
        assert!(d_eps <= EPSILON_TOL, "{name}: |Δε| = {d_eps:e}");
        assert!((cpu.sigma - gpu.sigma).abs() <= SIGMA_REL_TOL * cpu.sigma, "{name}");
        assert_eq!((gpu.rows_used, gpu.rows_dropped, gpu.pairs), (cpu.rows_used, cpu.rows_dropped, cpu.pairs));
        assert!(gpu.exact && cpu.exact);
        let info = gpu.gpu.as_ref().unwrap_or_else(|| panic!("{name}: no GPU in the report: {:?}", gpu.gpu_fallback));
        assert_eq!(gpu.gpu_fallback, None);
        assert_eq!(info.fallback_adapter, software);
        if std::env::var("WGPU_BACKEND").is_ok_and(|b| b == "vulkan") {
            assert_eq!(info.backend, "vulkan");
        }
        assert_eq!(gpu.kernel, format!("wgsl gram ({}) f32", info.backend));
        assert_eq!(gpu.workers, 1);
        assert!(gpu.gram_gflops.is_some_and(|g| g > 0.0), "{name}: {:?}", gpu.gram_gflops);
        assert!(gpu.geometry.is_some(), "{name}: the spectrum reads the GPU's G");
        assert_eq!((cpu.gpu.as_ref(), cpu.gpu_fallback.as_ref()), (None, None));
        // The JSON carries both fields, and a Report without them still parses.
        let json = serde_json::to_value(&cpu).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json.get("gpu"), Some(&serde_json::Value::Null));
        let mut old = json.clone();
        if let Some(o) = old.as_object_mut() {
            o.remove("gpu");
            o.remove("gpu_fallback");
        }
        let parsed: Report = serde_json::from_value(old).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.gpu, None);
        let text = orthoscope::result::text::report(&gpu);
        assert!(text.contains(&format!("GPU: {} ({}", info.adapter, info.backend)), "{text}");
        if software {
            // Auto refuses a software adapter: the CPU ran it, and the report says why.
            let auto = analyze(&path, GpuChoice::Auto);
            assert_eq!(auto.gpu, None);
            let why = auto.gpu_fallback.clone().unwrap_or_default();
            assert!(why.contains("fallback (software) adapter"), "{why}");
            assert!((auto.epsilon - cpu.epsilon).abs() <= 1e-12);
            assert!(orthoscope::result::text::report(&auto).contains("GPU not used: no GPU adapter"));
        }
        let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
    }
}

/// Cosines too concentrated for f32: the analysis declines the GPU, the exact f64 pass runs on the
/// CPU, and the report says why.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn the_gpu_is_declined_where_the_sample_says_f64() {
    let Some(_) = context() else { return };
    let (rows, dim) = (1500, 96);
    let path = model_file("f64", DType::F32, &common_component(rows, dim, 40.0, 14), rows, dim);
    let cpu = analyze(&path, GpuChoice::Off);
    let gpu = analyze(&path, GpuChoice::Any);
    assert_eq!(gpu.gpu, None);
    let why = gpu.gpu_fallback.clone().unwrap_or_default();
    println!("declined: {why}");
    assert!(why.contains("f32 is not enough") && why.contains("f64 pass ran on the CPU"), "{why}");
    assert_eq!(gpu.precision, "f64");
    // One thread against several: the same f64 sums merged in another order.
    assert!((gpu.epsilon - cpu.epsilon).abs() <= 1e-10, "{} vs {}", gpu.epsilon, cpu.epsilon);
    let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
}

fn open_job(bytes: &[u8], gpu: Option<Rc<GpuContext>>, config: AnalysisConfig) -> Job {
    let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("model.safetensors", bytes.to_vec()));
    let options = JobOptions { tensor_bytes_only: false, gpu };
    Job::open_with(vec![source], None, config, options).unwrap_or_else(|e| panic!("{e}")).0
}

/// Steps until at least `rows` rows were read (settling the GPU after each step, as the worker does).
fn step_to(job: &mut Job, rows: u64) {
    while job.progress().rows_seen < rows {
        if job.step().unwrap_or_else(|e| panic!("{e}")) {
            break;
        }
        block_on(job.embedding_mut().settle_gpu()).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Mid-pass, the GPU's running moments (read back on request) give the CPU path's running ε at the
/// same point to a few per cent, and *Stop here* on the GPU gives an estimate over the blocks seen.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn running_estimate_and_stop_here_on_the_gpu() {
    let Some(ctx) = context() else { return };
    let (rows, dim) = (8000, 600);
    let values = trained_like(rows, dim, 31);
    let bytes = safetensors_bytes(&[TensorSpec::matrix("model.embed_tokens.weight", DType::BF16, rows, dim, &values)]);
    let mut gpu = open_job(&bytes, Some(ctx), AnalysisConfig::default());
    let mut cpu = open_job(&bytes, None, AnalysisConfig::default());
    step_to(&mut gpu, 4000);
    assert!(gpu.embedding().on_gpu(), "the pass runs on the GPU");
    assert_eq!(gpu.progress().epsilon, None, "no estimate before a read-back");
    block_on(gpu.embedding_mut().refresh_gpu_estimate()).unwrap_or_else(|e| panic!("{e}"));
    let seen = gpu.progress().rows_seen;
    step_to(&mut cpu, seen);
    assert_eq!(cpu.progress().rows_seen, seen);
    let (g, c) = (gpu.progress(), cpu.progress());
    let (ge, ce) = (g.epsilon.unwrap_or(f64::NAN), c.epsilon.unwrap_or(f64::NAN));
    println!("at {seen} rows: GPU running ε={ge} (se {:?}), CPU running ε={ce} (se {:?})", g.epsilon_se, c.epsilon_se);
    assert!((ge - ce).abs() <= 0.03 * ce, "GPU {ge} vs CPU {ce}");
    assert!(g.epsilon_se.is_some());
    gpu.stop();
    cpu.stop();
    block_on(gpu.finish_gpu()).unwrap_or_else(|e| panic!("{e}"));
    let (g, c) = (gpu.report(0.0).unwrap_or_else(|e| panic!("{e}")), cpu.report(0.0).unwrap_or_else(|e| panic!("{e}")));
    println!("stop here: GPU ε={} {:?}, CPU ε={} {:?}", g.epsilon, g.epsilon_ci, c.epsilon, c.epsilon_ci);
    assert!(!g.exact && g.epsilon_ci.is_some());
    // The estimate on screen is the result, at once (no wait for queued blocks, no read-back of G).
    assert_eq!(g.epsilon, ge, "Stop here keeps the running estimate shown");
    assert_eq!((g.rows_seen, g.rows_used), (c.rows_seen, c.rows_used));
    assert!((g.epsilon - c.epsilon).abs() <= 0.03 * c.epsilon);
    assert!(g.gpu.is_some());
}

/// A device lost mid-pass ends the step, the settle or the read-back in `Error::Gpu(Lost)`: no panic,
/// no hang; the caller then reruns on the CPU.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn a_lost_device_is_an_error_not_a_panic_or_a_hang() {
    let Some(ctx) = context() else { return };
    let (rows, dim) = (3000, 200);
    let bytes = safetensors_bytes(&[TensorSpec::matrix(
        "model.embed_tokens.weight",
        DType::F16,
        rows,
        dim,
        &trained_like(rows, dim, 41),
    )]);
    for when in ["step", "settle", "refresh", "finish"] {
        let ctx = Rc::new(GpuContext::acquire(GpuChoice::Any).unwrap_or_else(|e| panic!("{e}")));
        let mut job = open_job(&bytes, Some(Rc::clone(&ctx)), AnalysisConfig::default());
        step_to(&mut job, 1000);
        assert!(job.embedding().on_gpu());
        ctx.lose_device_for_test();
        let out = match when {
            // The first GPU call after the loss fails: a step submits (and checks first).
            "step" => job.step().map(|_| ()),
            "settle" => block_on(job.embedding_mut().settle_gpu()),
            "refresh" => block_on(job.embedding_mut().refresh_gpu_estimate()),
            _ => {
                job.stop();
                block_on(job.finish_gpu())
            }
        };
        println!("lost before {when}: {out:?}");
        assert!(matches!(out, Err(Error::Gpu(GpuError::Lost(_)))), "{when}: {out:?}");
    }
    drop(ctx);
}

/// `analyze_paths` with the device lost mid-pass: the threads run the pass again, the Report is the
/// CPU's and says why.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn analyze_paths_falls_back_to_the_cpu_when_the_device_is_lost() {
    let Some(_) = context() else { return };
    let (rows, dim) = (3000, 131);
    let path = model_file("lost", DType::BF16, &trained_like(rows, dim, 61), rows, dim);
    let cpu = analyze(&path, GpuChoice::Off);
    let request = PassRequest { gpu: GpuChoice::Any, lose_gpu_after_rows: Some(1000), ..PassRequest::default() };
    let report = analyze_paths(std::slice::from_ref(&path), &request).unwrap_or_else(|e| panic!("{e}"));
    let why = report.gpu_fallback.clone().unwrap_or_default();
    println!("fell back: {why}");
    assert_eq!(report.gpu, None);
    assert!(why.contains("device was lost") && why.contains("the CPU ran the pass"), "{why}");
    assert!((report.epsilon - cpu.epsilon).abs() <= 1e-12);
    let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
}

/// Wall times of the CPU threads and the GPU for a 4096 × 1024 BF16 matrix (by hand:
/// `-- --ignored --nocapture`; on lavapipe the GPU is the same CPU, emulated).
#[test]
#[ignore = "by hand: a timing, not a check (scripts/test.sh skips it)"]
fn timing_4096_by_1024() {
    let Some(_) = context() else { return };
    let (rows, dim) = (4096, 1024);
    let path = model_file("timing", DType::BF16, &trained_like(rows, dim, 51), rows, dim);
    for gpu in [GpuChoice::Off, GpuChoice::Any] {
        let t = Instant::now();
        let r = analyze(&path, gpu);
        println!(
            "{gpu:?}: {:.0} ms (report {:.0} ms), ε={}, kernel {}, {:?} GFLOP/s",
            t.elapsed().as_secs_f64() * 1e3,
            r.timing_ms,
            r.epsilon,
            r.kernel,
            r.gram_gflops
        );
    }
    let _ = std::fs::remove_dir_all(path.parent().unwrap_or(&path));
}

/// A sparse autoencoder's dictionary in a fresh temporary folder: `tensor` (`shape` as stored,
/// `values` in the stored order) in `file`, with the library's config beside it.
fn dictionary_folder(
    name: &str,
    file: &str,
    tensor: &str,
    dtype: DType,
    shape: [usize; 2],
    values: &[f32],
    config: (&str, serde_json::Value),
) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orthoscope-gpu-sae-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let bytes = safetensors_bytes(&[TensorSpec::matrix(tensor, dtype, shape[0], shape[1], values)]);
    std::fs::write(dir.join(file), bytes).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(dir.join(config.0), config.1.to_string()).unwrap_or_else(|e| panic!("{e}"));
    dir
}

/// Feature rows `[features, dim]` of trained-like directions with non-unit norms (0.05 to 20, as
/// decoders' rows are), and the same features stored by columns `[dim, features]`.
fn feature_rows(features: usize, dim: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rows = trained_like(features, dim, seed);
    for (i, row) in rows.chunks_exact_mut(dim).enumerate() {
        let scale = 0.05 * 400f32.powf((i * 7919 % features) as f32 / features as f32);
        row.iter_mut().for_each(|x| *x *= scale);
    }
    let mut columns = vec![0f32; rows.len()];
    for (i, row) in rows.chunks_exact(dim).enumerate() {
        for (c, &x) in row.iter().enumerate() {
            columns[c * features + i] = x;
        }
    }
    (rows, columns)
}

/// A SAELens W_dec [d_sae, d_in] (F32 and BF16) and a Llama Scope decoder.weight [d_model, d_sae]
/// (BF16, features in its columns, read through the transposed view) analysed on the GPU give the
/// CPU's μ, σ, ε, say they ran there, and are still dictionaries.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn a_dictionary_on_the_gpu_equals_the_cpu_pass_in_either_layout() {
    let Some(ctx) = context() else { return };
    drop(ctx);
    let (features, dim) = (3000, 96);
    let (rows, columns) = feature_rows(features, dim, 41);
    let saelens = || ("cfg.json", serde_json::json!({"d_in": dim, "d_sae": features}));
    let llama = ("hyperparams.json", serde_json::json!({"d_model": dim, "d_sae": features}));
    let mut by_rows_bf16 = None;
    for (name, dir, columns_are_features) in [
        (
            "saelens-f32",
            dictionary_folder(
                "saelens-f32",
                "sae_weights.safetensors",
                "W_dec",
                DType::F32,
                [features, dim],
                &rows,
                saelens(),
            ),
            false,
        ),
        (
            "saelens-bf16",
            dictionary_folder(
                "saelens-bf16",
                "sae_weights.safetensors",
                "W_dec",
                DType::BF16,
                [features, dim],
                &rows,
                saelens(),
            ),
            false,
        ),
        (
            "llama-scope-bf16",
            dictionary_folder(
                "llama-bf16",
                "final.safetensors",
                "decoder.weight",
                DType::BF16,
                [dim, features],
                &columns,
                llama.clone(),
            ),
            true,
        ),
    ] {
        let cpu = analyze(&dir, GpuChoice::Off);
        let gpu = analyze(&dir, GpuChoice::Any);
        let d_eps = (cpu.epsilon - gpu.epsilon).abs();
        println!(
            "{name}: CPU μ={} σ={} ε={} GPU μ={} σ={} ε={} |Δε|={d_eps:.2e} {:?}",
            cpu.mu, cpu.sigma, cpu.epsilon, gpu.mu, gpu.sigma, gpu.epsilon, gpu.gpu_fallback
        );
        assert!(gpu.gpu.is_some(), "{name}: not on the GPU: {:?}", gpu.gpu_fallback);
        assert_eq!(gpu.gpu_fallback, None, "{name}");
        assert_eq!(gpu.tensor_role, orthoscope::read::locate::TensorRole::SaeDecoder, "{name}");
        let d = &gpu.dictionary.as_ref().unwrap_or_else(|| panic!("{name}: no dictionary")).dictionary;
        assert_eq!((d.d_sae, d.d_in, d.columns_are_features), (features as u64, dim as u64, columns_are_features));
        assert_eq!((gpu.rows, gpu.dim), (features as u64, dim as u64), "{name}: the rows are the features");
        assert!(gpu.exact && cpu.exact, "{name}");
        assert_eq!((gpu.rows_used, gpu.rows_dropped, gpu.pairs), (cpu.rows_used, cpu.rows_dropped, cpu.pairs));
        assert!(d_eps <= EPSILON_TOL, "{name}: |Δε| = {d_eps:e}");
        assert!((cpu.mu - gpu.mu).abs() <= EPSILON_TOL, "{name}: μ {} vs {}", gpu.mu, cpu.mu);
        assert!((cpu.sigma - gpu.sigma).abs() <= SIGMA_REL_TOL * cpu.sigma, "{name}");
        // The transposed view hands the GPU the features' bytes: the same BF16 features by rows
        // and by columns give one ε.
        if name == "llama-scope-bf16" {
            let by_rows = by_rows_bf16.unwrap_or(f64::NAN);
            assert!((gpu.epsilon - by_rows).abs() <= 1e-12, "by columns {} vs by rows {by_rows}", gpu.epsilon);
        } else if name == "saelens-bf16" {
            by_rows_bf16 = Some(gpu.epsilon);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// An early stop (`stop_after_rows`) on the GPU gives a dictionary's estimate with its interval,
/// near the exact ε, in the columns-as-features layout too.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn an_early_stop_on_the_gpu_estimates_a_dictionary_with_its_interval() {
    let Some(ctx) = context() else { return };
    drop(ctx);
    let (features, dim) = (4000, 64);
    let (_, columns) = feature_rows(features, dim, 43);
    let llama = ("hyperparams.json", serde_json::json!({"d_model": dim, "d_sae": features}));
    let dir = dictionary_folder(
        "llama-stop",
        "final.safetensors",
        "decoder.weight",
        DType::BF16,
        [dim, features],
        &columns,
        llama,
    );
    let exact = analyze(&dir, GpuChoice::Off);
    let config = AnalysisConfig { stop_after_rows: Some(1200), ..AnalysisConfig::default() };
    let request = PassRequest { gpu: GpuChoice::Any, config, ..PassRequest::default() };
    let early = analyze_paths(std::slice::from_ref(&dir), &request).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "stopped at {} of {features} features: ε={} {:?}, exact ε={}",
        early.rows_seen, early.epsilon, early.epsilon_ci, exact.epsilon
    );
    assert!(early.gpu.is_some(), "not on the GPU: {:?}", early.gpu_fallback);
    assert!(early.dictionary.is_some());
    assert!(!early.exact);
    assert!(early.rows_seen >= 1200 && early.rows_seen < features as u64);
    let [lo, hi] = early.epsilon_ci.unwrap_or_else(|| panic!("no interval"));
    assert!(lo <= early.epsilon && early.epsilon <= hi);
    assert!((early.epsilon - exact.epsilon).abs() <= 0.05 * exact.epsilon, "{} vs {}", early.epsilon, exact.epsilon);
    let _ = std::fs::remove_dir_all(&dir);
}
