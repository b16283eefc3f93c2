//! The geometry past the full eigen solver's width (`docs/method.md` §8): Lanczos's leading
//! eigenvalues against an independent float64 reference (nalgebra's symmetric solver on UUᵀ, whose
//! non-zero eigenvalues are G's), the participation ratio's closed form (tr G)²/‖G‖²_F against
//! (Σλ)²/Σλ², the effective-rank interval around the true value, and degenerate matrices.

use nalgebra::DMatrix;
use orthoscope::explain::geometry::{
    self, effective_rank, participation_ratio, Geometry, GeometryTiming, SpectrumMethod, FULL_SPECTRUM_MAX_DIM,
    LEADING_EIGENVALUES,
};
use orthoscope::explain::lanczos::{self, LanczosOptions, PackedOp};
use orthoscope::pass::accumulate::{PairAccumulator, RowPairs};
use orthoscope::pass::kernel::{self, PackedGram, Precision, MAX_CHUNK_ROWS};
use orthoscope::pass::stats::{mean_row, GramMoments};
use orthoscope::read::matrix::RowFate;

const TIMING: GeometryTiming = GeometryTiming::WithTheResult;

/// A small deterministic generator (SplitMix64), independent of the crate's.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// V unit rows of width d (padded to the kernel's lanes): a shared direction, a rank-`rank`
/// component with decaying weights, and isotropic noise — the shape of a trained embedding.
fn low_rank_plus_noise(rows: usize, dim: usize, rank: usize, seed: u64) -> Vec<f64> {
    let mut rng = Mix(seed);
    let shared: Vec<f64> = (0..dim).map(|_| rng.next()).collect();
    let factors: Vec<Vec<f64>> = (0..rank).map(|_| (0..dim).map(|_| rng.next()).collect()).collect();
    let d = kernel::padded_dim(dim);
    let mut out = vec![0.0f64; rows * d];
    for row in out.chunks_exact_mut(d) {
        let mut r: Vec<f64> = shared.iter().map(|s| 0.6 * s + 0.15 * rng.next()).collect();
        for (k, f) in factors.iter().enumerate() {
            let w = rng.next() / (1.0 + k as f64).powf(0.6);
            for (x, &y) in r.iter_mut().zip(f) {
                *x += w * y;
            }
        }
        let norm = r.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (o, x) in row.iter_mut().zip(&r) {
            *o = x / norm;
        }
    }
    out
}

fn gram_of(units: &[f64], dim: usize, precision: Precision) -> GramMoments {
    let d = kernel::padded_dim(dim);
    let mut gram = GramMoments::with_precision(dim, precision);
    if precision == Precision::F32 {
        // As the pass does: the f32 kernel sums rows centred on a mean row.
        let narrow: Vec<f32> = units.chunks_exact(d).flat_map(|r| r[..dim].iter().map(|&x| x as f32)).collect();
        if let Some(centre) = mean_row(&narrow, dim) {
            gram.set_centre(&centre);
        }
    }
    for chunk in units.chunks(d * MAX_CHUNK_ROWS) {
        gram.add_unit_rows(chunk);
    }
    // The f32 accumulator batches rows for its kernel; the pass flushes at its end.
    gram.flush();
    for _ in 0..units.len() / d {
        gram.counts.record(RowFate::Kept);
    }
    gram
}

fn rows_of(units: &[f64], dim: usize) -> RowPairs {
    let d = kernel::padded_dim(dim);
    let mut rows = RowPairs::new((units.len() / d) as u64, dim);
    rows.add_unit_rows(units);
    for _ in 0..units.len() / d {
        rows.counts.record(RowFate::Kept);
    }
    rows
}

/// All non-zero eigenvalues of G/V, descending, from the V×V matrix UUᵀ/V (nalgebra).
fn reference_eigenvalues(units: &[f64], dim: usize) -> Vec<f64> {
    let d = kernel::padded_dim(dim);
    let v = units.len() / d;
    let rows: Vec<&[f64]> = units.chunks_exact(d).map(|r| &r[..dim]).collect();
    let m =
        DMatrix::<f64>::from_fn(v, v, |i, j| rows[i].iter().zip(rows[j]).map(|(a, b)| a * b).sum::<f64>() / v as f64);
    let mut values: Vec<f64> = m.symmetric_eigenvalues().iter().copied().collect();
    values.sort_by(|a, b| b.total_cmp(a));
    values
}

fn check_leading(case: &str, g: &Geometry, want: &[f64], tolerance: f64) {
    assert_eq!(g.method, SpectrumMethod::Lanczos, "{case}");
    assert!(!g.eigenvalues_complete, "{case}: only the leading ones");
    assert_eq!(g.eigenvalues.len(), LEADING_EIGENVALUES, "{case}");
    assert!(g.eigenvalues.windows(2).all(|w| w[0] >= w[1]), "{case}: descending");
    let lambda1 = want.first().copied().unwrap_or(1.0);
    for (k, (got, want)) in g.eigenvalues.iter().zip(want).enumerate() {
        let err = (got - want).abs() / lambda1;
        assert!(err <= tolerance, "{case}: λ{} = {got:e}, reference {want:e}, error {err:e} of λ₁", k + 1);
    }
    let lanczos = g.lanczos.as_ref().expect("Lanczos summary");
    assert_eq!(lanczos.converged as usize, LEADING_EIGENVALUES, "{case}: {lanczos:?}");
    // The reported bound holds against the reference (beyond the difference between the pass's G
    // and the reference's, `tolerance`: the f32 kernel's G is not the f64 one).
    for (got, want) in g.eigenvalues.iter().zip(want) {
        let slack = lanczos.max_error + tolerance.min(1e-12) * lambda1;
        let slack = if tolerance > 1e-10 { slack + tolerance * lambda1 } else { slack };
        assert!((got - want).abs() <= slack, "{case}: |{got:e} − {want:e}| > bound {:e}", lanczos.max_error);
    }
    // The closed-form participation ratio is the reference's (Σλ)²/Σλ² over every eigenvalue.
    let pr = participation_ratio(want);
    assert!((g.participation_ratio - pr).abs() <= 1e-10 * pr, "{case}: PR {} vs {pr}", g.participation_ratio);
    assert_eq!(g.effective_rank, None, "{case}: no exact effective rank without every eigenvalue");
    let [lo, hi] = g.effective_rank_bounds.expect("bounds");
    let er = effective_rank(want);
    println!("{case}: effective rank {er:.2} in [{lo:.2}, {hi:.2}], {} Lanczos steps", lanczos.steps);
    assert!(lo <= er * (1.0 + 1e-9) && er <= hi * (1.0 + 1e-9), "{case}: effective rank {er} outside [{lo}, {hi}]");
}

#[test]
fn lanczos_matches_a_float64_reference_at_moderate_width() {
    let (rows, dim) = (900, 600);
    let units = low_rank_plus_noise(rows, dim, 120, 7);
    let want = reference_eigenvalues(&units, dim);
    for precision in [Precision::F64, Precision::F32] {
        let pass = PairAccumulator::Gram(gram_of(&units, dim, precision));
        // Forced onto the Lanczos path (the full solver would take d = 600 itself).
        let g = geometry::of_pass_with(&pass, dim, TIMING, 0).expect("lanczos geometry");
        // The f32 kernel's G differs from the f64 one by ~1e-9 relative: its spectrum does too.
        let tolerance = if precision == Precision::F64 { 1e-10 } else { 1e-7 };
        check_leading(&format!("d = {dim}, {precision:?}"), &g, &want, tolerance);
        // The full path on the same pass: the same leading values, and the same PR to rounding.
        let full = geometry::of_pass(&pass, dim, TIMING).expect("full geometry");
        assert_eq!(full.method, SpectrumMethod::Full);
        assert!(full.eigenvalues_complete && full.eigenvalues.len() == dim);
        for (a, b) in g.eigenvalues.iter().zip(&full.eigenvalues) {
            assert!((a - b).abs() <= 1e-10 * full.eigenvalues[0], "{a:e} vs full {b:e}");
        }
        assert!((g.participation_ratio - full.participation_ratio).abs() <= 1e-12 * full.participation_ratio);
    }
    // The row route's Lanczos (products through the rows) agrees too.
    let g = geometry::of_pass_with(&PairAccumulator::Rows(rows_of(&units, dim)), dim, TIMING, 0).expect("rows lanczos");
    check_leading("row route", &g, &want, 1e-10);
}

#[test]
fn lanczos_matches_a_float64_reference_past_the_full_solvers_width() {
    // d = 4200 > FULL_SPECTRUM_MAX_DIM with V = 300 rows: G has rank 300, whose non-zero eigenvalues
    // nalgebra finds from the 300×300 UUᵀ, independently of G.
    let (rows, dim) = (300, 4200);
    assert!(dim > FULL_SPECTRUM_MAX_DIM);
    let units = low_rank_plus_noise(rows, dim, 80, 11);
    let want = reference_eigenvalues(&units, dim);
    let pass = PairAccumulator::Gram(gram_of(&units, dim, Precision::F64));
    let g = geometry::of_pass(&pass, dim, TIMING).expect("geometry at d = 4200");
    check_leading("Gram route, d = 4200", &g, &want, 1e-10);
    assert!((g.trace - 1.0).abs() < 1e-12, "trace {}", g.trace);
    // The row route at the same width: 300 rows make UUᵀ cheap, so its spectrum is complete.
    let r = geometry::of_pass(&PairAccumulator::Rows(rows_of(&units, dim)), dim, TIMING).expect("rows geometry");
    assert!(r.eigenvalues_complete && r.eigenvalues.len() == dim);
    for (a, b) in r.eigenvalues.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-12, "{a:e} vs {b:e}");
    }
    assert!((r.participation_ratio - g.participation_ratio).abs() <= 1e-10 * g.participation_ratio);
    assert!((r.mean_from_dimensions - g.mean_from_dimensions).abs() <= 1e-12);
}

#[test]
fn the_eigen_step_on_threads_equals_the_one_on_one_thread() {
    // The CLI runs the eigen step on its threads: faer's solver on its rayon pool (full path), and
    // Lanczos's products with G by bands of panels. The same spectrum to rounding, the same values
    // on every run with a given number of threads, and the float64 reference's leading values.
    let cases = [(900, 600, usize::MAX, SpectrumMethod::Full), (300, 4200, 0, SpectrumMethod::Lanczos)];
    for (rows, dim, full_max, method) in cases {
        let units = low_rank_plus_noise(rows, dim, 80, 13);
        let want = reference_eigenvalues(&units, dim);
        let pass = PairAccumulator::Gram(gram_of(&units, dim, Precision::F64));
        let one = geometry::of_pass_by(&pass, dim, TIMING, full_max, 1).expect("one thread");
        assert_eq!(one.method, method);
        for threads in [2, 3, 7] {
            let many = geometry::of_pass_by(&pass, dim, TIMING, full_max, threads).expect("threads");
            let again = geometry::of_pass_by(&pass, dim, TIMING, full_max, threads).expect("threads again");
            let case = format!("d = {dim}, {threads} threads");
            assert_eq!(many.eigenvalues, again.eigenvalues, "{case}: the same values on every run");
            assert_eq!((many.method, many.eigenvalues.len()), (one.method, one.eigenvalues.len()), "{case}");
            for (k, (a, b)) in many.eigenvalues.iter().zip(&one.eigenvalues).enumerate() {
                assert!((a - b).abs() <= 1e-12 * one.eigenvalues[0], "{case}: λ{k} {a:e} vs one thread's {b:e}");
            }
            if method == SpectrumMethod::Lanczos {
                check_leading(&case, &many, &want, 1e-10);
            } else {
                assert!(many.eigenvalues_complete && many.eigenvalues.len() == dim, "{case}");
                for (k, (a, b)) in many.eigenvalues.iter().zip(&want).enumerate() {
                    assert!((a - b).abs() <= 1e-10 * want[0], "{case}: λ{k} {a:e}, reference {b:e}");
                }
            }
            assert!((many.participation_ratio - one.participation_ratio).abs() <= 1e-12 * one.participation_ratio);
        }
    }
}

#[test]
fn closed_form_participation_ratio_equals_the_eigenvalue_form() {
    for (rows, dim, seed) in [(400, 64, 1u64), (150, 200, 2), (1000, 37, 3)] {
        let units = low_rank_plus_noise(rows, dim, 10, seed);
        for pass in
            [PairAccumulator::Gram(gram_of(&units, dim, Precision::F64)), PairAccumulator::Rows(rows_of(&units, dim))]
        {
            let g = geometry::of_pass(&pass, dim, TIMING).expect("geometry");
            let from_eigenvalues = participation_ratio(&g.eigenvalues);
            assert!(
                (g.participation_ratio - from_eigenvalues).abs() <= 1e-12 * from_eigenvalues,
                "V = {rows}, d = {dim}: (tr G)²/‖G‖²_F = {} vs (Σλ)²/Σλ² = {from_eigenvalues}",
                g.participation_ratio
            );
            assert_eq!(g.effective_rank, Some(effective_rank(&g.eigenvalues)));
            assert!(g.eigenvalues.windows(2).all(|w| w[0] >= w[1]));
        }
    }
}

#[test]
fn degenerate_matrices_neither_hang_nor_panic() {
    let dim = 200;
    // Every row the same unit vector: G/V = uuᵀ, one eigenvalue 1, the rest 0.
    let d = kernel::padded_dim(dim);
    let mut row = vec![0.0f64; d];
    for (k, x) in row.iter_mut().take(dim).enumerate() {
        *x = ((k % 7) as f64 - 3.0) / 10.0;
    }
    let n = row.iter().map(|x| x * x).sum::<f64>().sqrt();
    row.iter_mut().for_each(|x| *x /= n);
    let units: Vec<f64> = (0..100).flat_map(|_| row.iter().copied()).collect();
    for pass in
        [PairAccumulator::Gram(gram_of(&units, dim, Precision::F64)), PairAccumulator::Rows(rows_of(&units, dim))]
    {
        let g = geometry::of_pass_with(&pass, dim, TIMING, 0).expect("rank one");
        assert!((g.eigenvalues[0] - 1.0).abs() < 1e-12, "λ₁ = {}", g.eigenvalues[0]);
        assert!(g.eigenvalues[1..].iter().all(|l| l.abs() < 1e-12), "{:?}", &g.eigenvalues[..4]);
        assert!((g.participation_ratio - 1.0).abs() < 1e-12);
        let [lo, hi] = g.effective_rank_bounds.expect("bounds");
        assert!((lo - 1.0).abs() < 1e-9 && (hi - 1.0).abs() < 1e-9, "[{lo}, {hi}]");
    }
    // G = 0 (given directly: a pass drops zero rows) and G ∝ I.
    let sum = vec![0.0; dim];
    let zero = Geometry::compute_with(&sum, |_, _| 0.0, dim, 2, TIMING, 0).expect("zero G");
    assert!(zero.eigenvalues.iter().all(|&l| l == 0.0) && zero.participation_ratio == 0.0);
    let identity =
        Geometry::compute_with(&sum, |a, b| if a == b { 1.0 } else { 0.0 }, dim, 2, TIMING, 0).expect("G = I");
    assert!(identity.eigenvalues.iter().all(|&l| (l - 0.5).abs() < 1e-12), "{:?}", &identity.eigenvalues[..4]);
    assert!((identity.participation_ratio - dim as f64).abs() < 1e-9);
    let [lo, hi] = identity.effective_rank_bounds.expect("bounds");
    assert!(lo <= dim as f64 * (1.0 + 1e-12) && hi >= dim as f64 * (1.0 - 1e-12), "[{lo}, {hi}]");
}

#[test]
fn old_reports_read_as_full_spectra_and_lanczos_ones_round_trip() {
    let old = r#"{"eigenvalues":[0.6,0.4],"participation_ratio":1.923,"effective_rank":1.96,"mean_vector_norm":0.1,
        "top_mean_dimensions":[],"mean_from_dimensions":0.01,"eigen_ms":3.0,"timing":"with the result"}"#;
    let g: Geometry = serde_json::from_str(old).expect("old geometry parses");
    assert!(g.eigenvalues_complete && g.method == SpectrumMethod::Full);
    assert_eq!(g.effective_rank, Some(1.96));
    assert!((g.leading_share() - 0.6).abs() < 1e-15);
    let units = low_rank_plus_noise(200, 96, 20, 4);
    let g = geometry::of_pass_with(&PairAccumulator::Gram(gram_of(&units, 96, Precision::F64)), 96, TIMING, 0)
        .expect("lanczos");
    let json = serde_json::to_value(&g).expect("json");
    assert_eq!(json["method"], "lanczos");
    assert_eq!(json["eigenvalues_complete"], false);
    assert!(json["effective_rank"].is_null() && json["effective_rank_bounds"].is_array());
    let back: Geometry = serde_json::from_value(json).expect("round trip");
    assert_eq!(back, g);
    assert!(g.spectrum_label(96).starts_with("leading 64 of 96"));
}

/// A d×d packed G with a trained-embedding-like spectrum: λₖ ∝ k^−0.8 on the diagonal plus a shared
/// direction (rank one) and a weak coupling of neighbours.
fn timing_gram(dim: usize) -> PackedGram {
    let mut gram = PackedGram::new(dim);
    let m = |a: usize| 0.5 + 0.5 * ((a * 37 % 101) as f64 / 101.0);
    gram.add_entries(|a, b| {
        if a >= dim || b >= dim {
            return 0.0;
        }
        let diagonal = if a == b { 50.0 / (1.0 + a as f64).powf(0.8) } else { 0.0 };
        let neighbour = if b == a + 1 { 0.01 } else { 0.0 };
        diagonal + neighbour + 0.02 * m(a) * m(b)
    });
    gram
}

/// Lanczos's time at the widths the issue names (printed, never asserted): run with
/// `cargo test --release --test geometry_wide -- --ignored --nocapture`.
#[test]
#[ignore]
fn lanczos_timing() {
    for dim in [4096usize, 8192, 16384] {
        let gram = timing_gram(dim);
        let op = PackedOp::new(&gram, dim, None);
        let started = std::time::Instant::now();
        let found = lanczos::leading_eigenvalues(&op, LanczosOptions::leading(LEADING_EIGENVALUES));
        let lanczos_s = started.elapsed().as_secs_f64();
        let started = std::time::Instant::now();
        let mut y = vec![0.0; dim];
        orthoscope::explain::lanczos::SymOp::apply(&op, &vec![1.0; dim], &mut y);
        let product_ms = started.elapsed().as_secs_f64() * 1e3;
        println!(
            "d = {dim}: Lanczos {lanczos_s:.2} s, {} steps, {} of {} converged, max error {:.1e} (λ₁ = {:.3}); one product {product_ms:.1} ms",
            found.steps,
            found.converged,
            found.values.len(),
            found.errors.iter().fold(0.0f64, |m, &e| m.max(e)),
            found.values[0]
        );
    }
    let dim = 4096;
    let gram = timing_gram(dim);
    let started = std::time::Instant::now();
    let (values, _) = geometry::eigenvalues_scaled(dim, |a, b| gram.get(a, b), 1.0).expect("full");
    println!("d = {dim}: full eigen step {:.2} s ({} values)", started.elapsed().as_secs_f64(), values.len());
}
