//! The GPU Gram pass (`pass::gpu`, cargo feature `gpu`) against an all-pairs f64 loop written here:
//! |Δε| ≤ 1e-7 and |Δσ|/σ ≤ 1e-6 (docs/method.md §1), as `tests/f32_kernel.rs` asks of the f32 CPU
//! kernel, on μ near and far from 0, odd d, d not a multiple of the tile, V smaller than a tile,
//! zero, NaN, subnormal and huge rows, and W split into many bands.
//!
//! These tests need a GPU adapter; on a machine without one, Mesa's lavapipe (`apt-get install
//! mesa-vulkan-drivers`) is one. libtest cannot skip a test at run time, so they are `#[ignore]`d:
//! a plain `cargo test` lists them as ignored rather than counting them as passed, and
//! `scripts/test.sh` runs them once with `--ignored` on lavapipe. Run that way, a missing adapter
//! fails them and says so; `ORTHOSCOPE_NO_GPU=1` states that the machine has none, and then each
//! returns at once (printing why), for runs of every ignored test on such a machine. Run with:
//! `WGPU_BACKEND=vulkan cargo test --features "gpu fixtures" --test gpu_gram -- --ignored --nocapture`
#![cfg(feature = "gpu")]

use std::rc::Rc;
use std::time::Instant;

use orthoscope::fixtures::oracle::AllPairs;
use orthoscope::fixtures::setup::{embedding_file, embedding_report, locate_embedding, GENERATED};
use orthoscope::fixtures::synth::{trained_like, Normal};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::gpu::exact::{gpu_exact_pass, GpuPassError};
use orthoscope::pass::gpu::gram::{GpuGram, GpuGramSums, GramOptions, GramShape};
use orthoscope::pass::gpu::{block_on, GpuChoice, GpuContext, GpuError};
use orthoscope::pass::kernel;
use orthoscope::read::format::DType;
use orthoscope::read::matrix::{normalise_row, Matrix, RowFate};
use orthoscope::read::source::SliceSource;
use orthoscope::result::report::Report;

const EPSILON_TOL: f64 = 1e-7;
const SIGMA_REL_TOL: f64 = 1e-6;

/// The device, or `None` when `ORTHOSCOPE_NO_GPU=1` says there is none to test on.
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

/// μ, σ and ε by the f64 all-pairs definition (zero and non-finite rows dropped).
fn all_pairs(values: &[f32], dim: usize) -> (f64, f64, f64) {
    let a = AllPairs::of(values, dim);
    (a.mu, a.sigma, a.epsilon)
}

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

fn gaussian(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut normal = Normal::new(seed);
    (0..rows * dim).map(|_| normal.sample() as f32).collect()
}

/// Every 7th row zero, every 11th row with a NaN, every 13th with an infinity.
fn with_bad_rows(mut values: Vec<f32>, dim: usize) -> Vec<f32> {
    for (r, row) in values.chunks_exact_mut(dim).enumerate() {
        if r % 7 == 3 {
            row.fill(0.0);
        } else if r % 11 == 5 {
            row[dim / 2] = f32::NAN;
        } else if r % 13 == 6 {
            row[0] = f32::NEG_INFINITY;
        }
    }
    values
}

/// Rows scaled to the ends of f32's range: every 5th row made subnormal (×2⁻¹⁴⁰), every 9th huge
/// (×2¹²⁰). Their directions are unchanged, so the cosines are the same as before scaling.
fn with_extreme_rows(mut values: Vec<f32>, dim: usize) -> Vec<f32> {
    for (r, row) in values.chunks_exact_mut(dim).enumerate() {
        let scale = if r % 5 == 2 {
            2f64.powi(-140)
        } else if r % 9 == 4 {
            2f64.powi(120)
        } else {
            continue;
        };
        row.iter_mut().for_each(|x| *x = (*x as f64 * scale) as f32);
    }
    values
}

/// Mean of the f64 unit rows among the first `rows` rows: the centre, as the analysis takes it from
/// its sample.
fn centre_of(values: &[f32], dim: usize, rows: usize) -> Vec<f64> {
    let d = kernel::padded_dim(dim);
    let (mut c, mut unit, mut n) = (vec![0.0f64; d], vec![0.0f64; d], 0usize);
    for row in values.chunks_exact(dim).take(rows) {
        if normalise_row(row, &mut unit) == RowFate::Kept {
            c.iter_mut().zip(&unit).for_each(|(c, u)| *c += u);
            n += 1;
        }
    }
    c.iter_mut().for_each(|c| *c /= n.max(1) as f64);
    c
}

/// The GPU pass over `values`, fed in uneven slices (to cross block boundaries mid-slice).
fn gpu_sums(ctx: &Rc<GpuContext>, values: &[f32], dim: usize, centred: bool, options: GramOptions) -> GpuGramSums {
    let centre = centred.then(|| centre_of(values, dim, 256));
    let mut pass = GpuGram::new(Rc::clone(ctx), dim, centre.as_deref(), options).unwrap_or_else(|e| panic!("new: {e}"));
    let mut rest = values;
    let mut slice_rows = 1;
    while !rest.is_empty() {
        let take = (slice_rows * dim).min(rest.len());
        pass.add_rows(&rest[..take]).unwrap_or_else(|e| panic!("add_rows: {e}"));
        rest = &rest[take..];
        slice_rows = slice_rows * 3 + 1;
    }
    pass.finish().unwrap_or_else(|e| panic!("finish: {e}"))
}

struct Case {
    name: &'static str,
    values: Vec<f32>,
    dim: usize,
}

fn cases() -> Vec<Case> {
    vec![
        Case { name: "gaussian d=257", values: gaussian(900, 257, 1), dim: 257 },
        Case { name: "trained-like d=771", values: trained_like(700, 771, 3), dim: 771 },
        Case { name: "μ≈0.5 d=333", values: common_component(800, 333, 1.0, 4), dim: 333 },
        Case { name: "μ≈0.9 d=515", values: common_component(800, 515, 3.0, 5), dim: 515 },
        Case { name: "zero/NaN/inf rows d=131", values: with_bad_rows(gaussian(650, 131, 6), 131), dim: 131 },
        Case { name: "μ≈0.8 zero/NaN d=67", values: with_bad_rows(common_component(700, 67, 2.0, 7), 67), dim: 67 },
        Case { name: "subnormal/huge rows d=96", values: with_extreme_rows(gaussian(500, 96, 8), 96), dim: 96 },
        Case { name: "V=9 < tile, d=40", values: common_component(9, 40, 1.5, 9), dim: 40 },
        Case { name: "d=5 < tile", values: common_component(300, 5, 0.7, 10), dim: 5 },
    ]
}

fn check(name: &str, sums: &GpuGramSums, values: &[f32], dim: usize) -> (f64, f64) {
    check_against(name, sums, all_pairs(values, dim))
}

/// [`check`] against (μ, σ, ε) of the all-pairs loop computed once.
fn check_against(name: &str, sums: &GpuGramSums, (mu, sigma, eps): (f64, f64, f64)) -> (f64, f64) {
    let m = sums.moments().unwrap_or_else(|| panic!("{name}: fewer than two rows"));
    let (d_eps, d_sigma) = ((m.mu + 2.0 * m.sigma - eps).abs(), (m.sigma - sigma).abs() / sigma);
    println!("{name}: μ={mu:.6} σ={sigma:.6} |Δε|={d_eps:.2e} |Δσ|/σ={d_sigma:.2e} bands={}", sums.bands);
    assert!(d_eps <= EPSILON_TOL, "{name}: |Δε| = {d_eps:e} (ε {eps}, μ {mu})");
    assert!(d_sigma <= SIGMA_REL_TOL, "{name}: |Δσ|/σ = {d_sigma:e} (σ {sigma})");
    (d_eps, d_sigma)
}

fn kept_rows(values: &[f32], dim: usize) -> (u64, u64, u64) {
    let mut unit = vec![0.0f64; kernel::padded_dim(dim)];
    let mut counts = (0, 0, 0);
    for row in values.chunks_exact(dim) {
        match normalise_row(row, &mut unit) {
            RowFate::Kept => counts.0 += 1,
            RowFate::Zero => counts.1 += 1,
            RowFate::NonFinite => counts.2 += 1,
        }
    }
    counts
}

#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn gpu_gram_matches_all_pairs_f64() {
    let Some(ctx) = context() else { return };
    println!("adapter: {:?}", ctx.info());
    let mut worst = (0.0f64, 0.0f64);
    for case in cases() {
        let sums = gpu_sums(&ctx, &case.values, case.dim, true, GramOptions::default());
        let c = sums.counts;
        assert_eq!((c.kept, c.dropped_zero, c.dropped_nonfinite), kept_rows(&case.values, case.dim), "{}", case.name);
        assert_eq!(c.seen, (case.values.len() / case.dim) as u64, "{}", case.name);
        let (e, s) = check(case.name, &sums, &case.values, case.dim);
        worst = (worst.0.max(e), worst.1.max(s));
    }
    println!("worst: |Δε| = {:.2e}, |Δσ|/σ = {:.2e}", worst.0, worst.1);
}

#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn uncentred_gpu_gram_is_exact_where_mu_is_near_zero() {
    let Some(ctx) = context() else { return };
    let values = gaussian(600, 203, 11);
    let sums = gpu_sums(&ctx, &values, 203, false, GramOptions::default());
    check("uncentred gaussian d=203", &sums, &values, 203);
}

/// W split into many bands over blocks that are not a multiple of the 64-row f32 sums: same answer
/// to the bit as one band (bands do not change the arithmetic), and within tolerance.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn forced_small_bands_give_the_same_sums() {
    let Some(ctx) = context() else { return };
    let dim = 275;
    let values = with_bad_rows(common_component(500, dim, 2.0, 12), dim);
    let small = GramOptions { max_binding_bytes: Some(64 * 1024), block_rows: 37, read_slice_bytes: 1, shape: None };
    let one = GramOptions { max_binding_bytes: None, block_rows: 37, ..GramOptions::default() };
    let banded = gpu_sums(&ctx, &values, dim, true, small);
    let whole = gpu_sums(&ctx, &values, dim, true, one);
    assert!(banded.bands >= 4, "only {} bands", banded.bands);
    assert_eq!(whole.bands, 1);
    assert_eq!(banded.counts, whole.counts);
    assert_eq!(banded.sum(), whole.sum());
    assert_eq!(banded.gram(), whole.gram());
    assert_eq!(banded.moments(), whole.moments());
    check("banded μ≈0.8 d=275", &banded, &values, dim);
    let plain = gpu_sums(&ctx, &values, dim, true, GramOptions::default());
    check("default blocks μ≈0.8 d=275", &plain, &values, dim);
}

/// The kernel's shapes to test on this adapter: the one its limits pick, the ones smaller limits
/// would pick (blocks of 2 and 1, fewer invocations, short stages), an 8 × 8 block and an odd one
/// (asked for, as a measurement may), each where the adapter runs it.
fn shapes(ctx: &GpuContext) -> Vec<GramShape> {
    let mut out = vec![GramShape::for_limits(&ctx.limits)];
    for (threads, block, stage) in
        [(16, 4, 32), (16, 4, 8), (16, 2, 64), (16, 1, 64), (8, 4, 16), (16, 8, 16), (4, 3, 8)]
    {
        let shape = GramShape { threads, block, stage };
        if shape.check(&ctx.limits).is_ok() && !out.contains(&shape) {
            out.push(shape);
        }
    }
    out
}

/// Every shape of the register-blocked kernel against the all-pairs f64 loop: μ near and far from
/// 0, odd d, d and V below a tile, zero/NaN/∞ and extreme rows (`cases`), and forced small bands,
/// whose sums equal one band's to the bit for each shape.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn every_kernel_shape_matches_all_pairs_f64() {
    let Some(ctx) = context() else { return };
    let shapes = shapes(&ctx);
    println!("adapter: {:?}; shapes {shapes:?}", ctx.info());
    assert!(shapes.len() >= 6, "{shapes:?}");
    for case in cases() {
        let oracle = all_pairs(&case.values, case.dim);
        for &shape in &shapes {
            let options = GramOptions { shape: Some(shape), block_rows: 100, ..GramOptions::default() };
            let sums = gpu_sums(&ctx, &case.values, case.dim, true, options);
            let name = format!(
                "{} {}×{} of {}×{}, {} rows staged",
                case.name, shape.threads, shape.threads, shape.block, shape.block, shape.stage
            );
            check_against(&name, &sums, oracle);
        }
    }
    let dim = 275;
    let values = with_bad_rows(common_component(500, dim, 2.0, 12), dim);
    let oracle = all_pairs(&values, dim);
    for &shape in &shapes {
        let small =
            GramOptions { max_binding_bytes: Some(64 * 1024), block_rows: 37, read_slice_bytes: 1, shape: Some(shape) };
        let banded = gpu_sums(&ctx, &values, dim, true, small);
        let whole = gpu_sums(&ctx, &values, dim, true, GramOptions { max_binding_bytes: None, ..small });
        assert!(banded.bands >= 4 && whole.bands == 1, "{shape:?}: {} and {} bands", banded.bands, whole.bands);
        assert_eq!(banded.gram(), whole.gram(), "{shape:?}");
        assert_eq!(banded.sum(), whole.sum(), "{shape:?}");
        check_against(&format!("banded μ≈0.8 d=275 {shape:?}"), &banded, oracle);
    }
}

/// A shape the adapter cannot run is a typed error that says why, not a validation failure.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn a_shape_that_does_not_fit_is_a_typed_error() {
    let Some(ctx) = context() else { return };
    let storage = ctx.limits.max_compute_workgroup_storage_size;
    // 64 rows of a 128-wide tile take 64 KiB of workgroup memory: more than most adapters give (and
    // WebGPU's default 16 KiB), in which case the pass refuses it before compiling anything.
    let too_big = GramShape { threads: 16, block: 8, stage: 64 };
    let expected = too_big.workgroup_bytes() > storage as u64;
    let out = GpuGram::new(Rc::clone(&ctx), 64, None, GramOptions { shape: Some(too_big), ..GramOptions::default() });
    match out {
        Err(GpuError::Shape { why, .. }) => assert!(expected && why.contains("workgroup memory"), "{why}"),
        Ok(_) => assert!(!expected),
        Err(e) => panic!("{e}"),
    }
    let odd = GramShape { threads: 16, block: 4, stage: 24 };
    let out = GpuGram::new(Rc::clone(&ctx), 64, None, GramOptions { shape: Some(odd), ..GramOptions::default() });
    assert!(matches!(out, Err(GpuError::Shape { stage: 24, .. })), "{:?}", out.err());
}

#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn bad_inputs_are_typed_errors() {
    let Some(ctx) = context() else { return };
    let tiny = GramOptions { max_binding_bytes: Some(256), block_rows: 8, ..GramOptions::default() };
    let new = |dim, centre: Option<&[f64]>, options| GpuGram::new(Rc::clone(&ctx), dim, centre, options);
    assert!(matches!(new(100, None, tiny), Err(GpuError::BindingTooSmall { .. })));
    assert!(matches!(new(0, None, GramOptions::default()), Err(GpuError::Dimension(0))));
    let nan = [f64::NAN; 8];
    assert!(matches!(new(8, Some(&nan), GramOptions::default()), Err(GpuError::Centre { dim: 8 })));
    assert!(matches!(new(8, Some(&[0.0; 4]), GramOptions::default()), Err(GpuError::Centre { dim: 8 })));
    let mut pass = new(8, None, GramOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(pass.add_rows(&[1.0; 12]), Err(GpuError::PartialRow { len: 12, dim: 8 })));
}

/// The CPU pass's Report of a generated safetensors file, and the same tensor opened as a Matrix.
fn cpu_report_and_matrix(values: &[f32], dim: usize) -> (Report, Matrix) {
    let source = SliceSource::new(GENERATED, embedding_file(values, dim, DType::F32));
    let (tensor, _) = locate_embedding(&source).expect("embedding located");
    let matrix = Matrix::new(Rc::new(source), tensor, Rc::new(Vec::new()));
    (embedding_report(values, dim, AnalysisConfig::default()).expect("report"), matrix)
}

/// A whole pass of an opened matrix on the GPU gives the CPU pass's Report numbers: ε to 1e-7,
/// the same counts, pairs, class and capacities to the rounding of ε.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn gpu_exact_pass_matches_the_cpu_report() {
    let Some(ctx) = context() else { return };
    // Binding limits small enough for several bands at each d.
    for (name, values, dim, limit) in [
        ("trained-like zero/NaN d=515", with_bad_rows(trained_like(1500, 515, 8), 515), 515, 1 << 20),
        ("μ≈0.8 d=131", common_component(900, 131, 2.0, 13), 131, 64 << 10),
    ] {
        let (cpu, matrix) = cpu_report_and_matrix(&values, dim);
        let small =
            GramOptions { max_binding_bytes: Some(limit), block_rows: 100, read_slice_bytes: 4096, shape: None };
        let gpu = gpu_exact_pass(&ctx, &matrix, small).unwrap_or_else(|e| panic!("{name}: {e}"));
        println!(
            "{name}: CPU ε={} GPU ε={} |Δε|={:.2e} |Δσ|/σ={:.2e} bands={}",
            cpu.epsilon,
            gpu.epsilon,
            (cpu.epsilon - gpu.epsilon).abs(),
            (cpu.sigma - gpu.sigma).abs() / cpu.sigma,
            gpu.sums.bands
        );
        assert!((cpu.epsilon - gpu.epsilon).abs() <= EPSILON_TOL, "{name}");
        assert!((cpu.sigma - gpu.sigma).abs() <= SIGMA_REL_TOL * cpu.sigma, "{name}");
        assert!(gpu.sums.bands > 1, "{name}: one band");
        assert_eq!(
            (gpu.rows_seen, gpu.rows_used, gpu.rows_dropped_zero, gpu.rows_dropped_nonfinite, gpu.pairs),
            (cpu.rows_seen, cpu.rows_used, cpu.rows_dropped_zero, cpu.rows_dropped_nonfinite, cpu.pairs),
            "{name}"
        );
        assert_eq!((gpu.class, gpu.capacity_determinate), (cpu.class, cpu.capacity_determinate), "{name}");
        let c = (gpu.log10_capacity, cpu.log10_capacity);
        for (g, k) in [(c.0.jl_c8, c.1.jl_c8), (c.0.adjusted_full, c.1.adjusted_full)] {
            assert!((g - k).abs() <= 1e-6 * k.abs().max(1.0), "{name}: log10 capacity {g} vs {k}");
        }
        let (_, sigma, eps) = all_pairs(&values, dim);
        assert!(
            (gpu.epsilon - eps).abs() <= EPSILON_TOL && (gpu.sigma - sigma).abs() <= SIGMA_REL_TOL * sigma,
            "{name}"
        );
    }
}

/// Cosines too concentrated for f32 tiles: the GPU pass declines, as the CPU pass would switch to f64.
#[test]
#[ignore = "needs a GPU adapter: run with --ignored (scripts/test.sh does, on lavapipe)"]
fn gpu_exact_pass_declines_where_f32_does_not_suffice() {
    let Some(ctx) = context() else { return };
    let values = common_component(300, 96, 40.0, 14);
    let (_, matrix) = cpu_report_and_matrix(&values, 96);
    let out = gpu_exact_pass(&ctx, &matrix, GramOptions::default());
    assert!(matches!(out, Err(GpuPassError::NeedsF64(_))), "{out:?}");
}

/// d = 16384 (Llama-3.1-405B's width), a few rows: the pass finishes and its G is right, and the
/// read-back holds one slice of W at a time (W alone is 1.6 GB at this width; the process's peak,
/// printed from /proc, is the device's buffers plus G's 1.07 GB, not twice W more). Minutes on
/// lavapipe, so run by hand: `cargo test --release --features "gpu fixtures" --test gpu_gram
/// widest_pass -- --ignored --nocapture`.
#[test]
#[ignore = "by hand, minutes on lavapipe (scripts/test.sh skips it)"]
fn widest_pass_finishes_within_its_memory() {
    let Some(ctx) = context() else { return };
    let dim = 16384;
    let values = trained_like(24, dim, 5);
    let sums = gpu_sums(&ctx, &values, dim, true, GramOptions::default());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status.lines().find(|l| l.starts_with("VmHWM")).unwrap_or("VmHWM: ?");
    println!("d={dim}: {} bands, G {} MB; {peak}", sums.bands, sums.gram().bytes() >> 20);
    check("d=16384", &sums, &values, dim);
}

/// The Gram kernel's rate at d = 4096 (by hand, for `scripts/bench.sh`), for the shape the adapter's
/// limits pick and the others `shapes` lists (1 × 1 blocks being the kernel before register
/// blocking, one entry per invocation): one 256-row block of trained-like rows through [`GpuGram`],
/// timed from its upload to its completion (the read-back of W left out; `prep` and `sums` are
/// O(k·d) against the kernel's k·d²/2), best of three. GFLOP/s as the CPU counts them: k·d² flops
/// per k-row block. Run with `cargo test --features "gpu fixtures" --test gpu_gram
/// gram_kernel_gflops -- --ignored --nocapture`; `ORTHOSCOPE_GRAM_SHAPES=16x4x32,16x8x16` (threads
/// × block × stage) times those shapes instead.
#[test]
#[ignore = "by hand: a timing, not a check (scripts/test.sh skips it)"]
fn gram_kernel_gflops_at_4096() {
    let Some(ctx) = context() else { return };
    let (rows, dim) = (256, 4096);
    let values = trained_like(rows, dim, 71);
    let centre = centre_of(&values, dim, rows);
    let asked: Vec<GramShape> = std::env::var("ORTHOSCOPE_GRAM_SHAPES")
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| match s.split('x').map(str::parse).collect::<Result<Vec<u32>, _>>().ok()?[..] {
            [threads, block, stage] => Some(GramShape { threads, block, stage }),
            _ => None,
        })
        .collect();
    let shapes = if asked.is_empty() { shapes(&ctx) } else { asked };
    for shape in shapes {
        let options = GramOptions { shape: Some(shape), ..GramOptions::default() };
        let mut best = f64::INFINITY;
        let mut flops = 0.0;
        for _ in 0..3 {
            let mut pass =
                GpuGram::new(Rc::clone(&ctx), dim, Some(&centre), options).unwrap_or_else(|e| panic!("new: {e}"));
            let t = Instant::now();
            pass.add_rows(&values).unwrap_or_else(|e| panic!("add_rows: {e}"));
            pass.flush().unwrap_or_else(|e| panic!("flush: {e}"));
            block_on(pass.settle(0)).unwrap_or_else(|e| panic!("settle: {e}"));
            best = best.min(t.elapsed().as_secs_f64());
            flops = pass.flops();
        }
        let picked = if shape == GramShape::for_limits(&ctx.limits) { " (the adapter's)" } else { "" };
        println!(
            "GRAM adapter={:?} d={dim} rows={rows} shape={}x{}x{}{picked} best={best:.3}s GFLOP/s={:.2}",
            ctx.info().adapter,
            shape.threads,
            shape.block,
            shape.stage,
            flops / best / 1e9
        );
    }
}
