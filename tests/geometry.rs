//! `Report.geometry` against float64 references computed here, independently of
//! the crate: the eigenvalues of an explicit G/V built from the normalised rows (nalgebra's
//! symmetric solver as the oracle; the crate ships faer's), cₖ = (sₖ² − Gₖₖ)/(V(V−1)) summed over
//! the coordinates against μ, and participation ratio / effective rank on matrices whose spectrum
//! is known by construction.

use orthoscope::explain::geometry::{self, Geometry, GeometryTiming, TOP_MEAN_DIMENSIONS};
use orthoscope::fixtures::oracle;
use orthoscope::fixtures::setup::{embedding_analysis, embedding_file, report_of, GENERATED};
use orthoscope::fixtures::synth::{class1_like, trained_like};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig};
use orthoscope::read::format::DType;
use orthoscope::result::report::Report;
use orthoscope::run::report::ToReport;

fn analysis(values: &[f32], rows: usize, dim: usize, config: AnalysisConfig) -> Analysis {
    // The f64 Gram path: the eigenvalues are checked to 1e-9 relative, beyond the f32 kernel (whose
    // G gave λ within 4e-9 here).
    let config = AnalysisConfig { precision: orthoscope::pass::kernel::Precision::F64, ..config };
    embedding_analysis(&values[..rows * dim], dim, DType::F32, config).expect("analysis set up")
}

/// The exact report and its geometry, through the whole chain.
fn run(values: &[f32], rows: usize, dim: usize) -> (Report, Geometry) {
    let done = analysis(values, rows, dim, AnalysisConfig::default()).run().expect("analysis runs");
    let report = done.report(0.0).expect("report");
    let geometry = geometry::of_analysis(&done, GeometryTiming::WithTheResult, 1)
        .expect("eigen step")
        .expect("exact pass has geometry");
    (report, geometry)
}

/// The unit rows in f64 (zero and non-finite rows dropped, `docs/method.md` §1).
fn unit_rows(values: &[f32], rows: usize, dim: usize) -> Vec<Vec<f64>> {
    oracle::unit_rows(&values[..rows * dim], dim, |_| true).0
}

struct Reference {
    eigenvalues: Vec<f64>,
    contributions: Vec<f64>,
    mean_vector_norm: f64,
    /// μ by the all-pairs definition.
    mu: f64,
}

fn reference(values: &[f32], rows: usize, dim: usize) -> Reference {
    let units = unit_rows(values, rows, dim);
    let v = units.len() as f64;
    let mut g = nalgebra::DMatrix::<f64>::zeros(dim, dim);
    let mut s = vec![0.0f64; dim];
    for u in &units {
        for a in 0..dim {
            s[a] += u[a];
            for b in 0..dim {
                g[(a, b)] += u[a] * u[b];
            }
        }
    }
    let contributions = (0..dim).map(|k| (s[k] * s[k] - g[(k, k)]) / (v * (v - 1.0))).collect();
    let mut eigenvalues: Vec<f64> = (g / v).symmetric_eigenvalues().iter().copied().collect();
    eigenvalues.sort_by(|a, b| b.total_cmp(a));
    Reference {
        eigenvalues,
        contributions,
        mean_vector_norm: s.iter().map(|x| x * x).sum::<f64>().sqrt() / v,
        mu: oracle::AllPairs::of(&values[..rows * dim], dim).mu,
    }
}

fn check_against_reference(case: &str, values: &[f32], rows: usize, dim: usize) {
    let (report, geometry) = run(values, rows, dim);
    let want = reference(values, rows, dim);
    assert_eq!(geometry.eigenvalues.len(), dim, "{case}: all d eigenvalues");
    assert!(geometry.eigenvalues.windows(2).all(|w| w[0] >= w[1]), "{case}: eigenvalues descending");
    for (k, (got, want)) in geometry.eigenvalues.iter().zip(&want.eigenvalues).take(10).enumerate() {
        let rel = (got - want).abs() / want.abs();
        assert!(rel <= 1e-9, "{case}: λ{} = {got:e}, reference {want:e}, relative error {rel:e}", k + 1);
    }
    let trace: f64 = geometry.eigenvalues.iter().sum();
    assert!((trace - 1.0).abs() < 1e-9, "{case}: Σλ of G/V = {trace}, expected 1");
    // Σₖ cₖ = μ: with the crate's own μ and with the all-pairs definition.
    assert!(
        (geometry.mean_from_dimensions - report.mu).abs() <= 1e-12,
        "{case}: Σₖ cₖ = {:e} but the report's μ = {:e}",
        geometry.mean_from_dimensions,
        report.mu
    );
    let sum_reference: f64 = want.contributions.iter().sum();
    assert!((sum_reference - want.mu).abs() <= 1e-12, "{case}: reference Σₖ cₖ {sum_reference:e} vs μ {:e}", want.mu);
    assert!((geometry.mean_from_dimensions - want.mu).abs() <= 1e-12, "{case}: Σₖ cₖ vs all-pairs μ");
    // The top dimensions: the same coordinates, in order of |cₖ|, with the same values.
    let mut order: Vec<usize> = (0..dim).collect();
    order.sort_by(|&a, &b| want.contributions[b].abs().total_cmp(&want.contributions[a].abs()));
    assert_eq!(geometry.top_mean_dimensions.len(), TOP_MEAN_DIMENSIONS.min(dim), "{case}");
    for (got, &k) in geometry.top_mean_dimensions.iter().zip(&order) {
        assert_eq!(got.dim, k as u64, "{case}: top mean dimensions differ");
        assert!((got.contribution - want.contributions[k]).abs() <= 1e-12, "{case}: c_{k}");
    }
    assert!((geometry.mean_vector_norm - want.mean_vector_norm).abs() <= 1e-12, "{case}: ‖s/V‖");
    let pr = want.eigenvalues.iter().sum::<f64>().powi(2) / want.eigenvalues.iter().map(|l| l * l).sum::<f64>();
    assert!((geometry.participation_ratio - pr).abs() <= 1e-9 * pr, "{case}: participation ratio");
}

#[test]
fn geometry_matches_an_independent_float64_reference() {
    check_against_reference("trained-like 2000×96", &trained_like(2000, 96, 11), 2000, 96);
    // A strong common direction: one eigenvalue dominates and μ is large.
    check_against_reference("class1-like 1500×64", &class1_like(1500, 64, 5), 1500, 64);
}

#[test]
fn dropped_rows_and_odd_widths_leave_the_geometry_exact() {
    let (rows, dim) = (700, 37);
    let mut values = trained_like(rows, dim, 3);
    for r in [0, 5, 399] {
        values[r * dim..(r + 1) * dim].iter_mut().for_each(|x| *x = 0.0);
    }
    values[17 * dim + 4] = f32::NAN;
    values[600 * dim] = f32::INFINITY;
    check_against_reference("zero and non-finite rows, d = 37", &values, rows, dim);
}

/// Row i of the Sylvester–Hadamard matrix of order `dim` (a power of two): entries ±1, rows exactly
/// orthogonal, so after normalisation the spectrum of G/V is known to rounding.
fn hadamard_row(i: usize, dim: usize) -> Vec<f32> {
    (0..dim).map(|j| if (i & j).count_ones().is_multiple_of(2) { 1.0 } else { -1.0 }).collect()
}

/// `counts[k]` copies of ±(Hadamard row k + 1), signs alternating: G/V has eigenvalues counts[k]/V
/// and zeros.
fn spectrum_matrix(counts: &[usize], dim: usize) -> (Vec<f32>, usize) {
    let mut values = Vec::new();
    for (k, &n) in counts.iter().enumerate() {
        let row = hadamard_row(k + 1, dim);
        for c in 0..n {
            let sign = if c % 2 == 0 { 1.0 } else { -1.0 };
            values.extend(row.iter().map(|x| x * sign));
        }
    }
    (values, counts.iter().sum())
}

#[test]
fn participation_ratio_and_effective_rank_on_known_spectra() {
    let dim = 64;
    // Equal weights on r orthonormal directions: both measures are r.
    for r in [1usize, 3, 8] {
        let (values, rows) = spectrum_matrix(&vec![50; r], dim);
        let (_, g) = run(&values, rows, dim);
        assert!(
            (g.participation_ratio - r as f64).abs() < 1e-9,
            "rank {r}: participation ratio {}",
            g.participation_ratio
        );
        let er = g.effective_rank.expect("full spectrum");
        assert!((er - r as f64).abs() < 1e-9, "rank {r}: effective rank {er}");
        for (k, l) in g.eigenvalues.iter().enumerate() {
            let want = if k < r { 1.0 / r as f64 } else { 0.0 };
            assert!((l - want).abs() < 1e-12, "rank {r}: λ{} = {l}, expected {want}", k + 1);
        }
    }
    // Unequal weights: p = counts/V, PR = 1/Σp², ER = exp(−Σ p ln p).
    let counts = [40usize, 30, 20, 7, 3];
    let (values, rows) = spectrum_matrix(&counts, dim);
    let (_, g) = run(&values, rows, dim);
    let p: Vec<f64> = counts.iter().map(|&n| n as f64 / rows as f64).collect();
    let pr = 1.0 / p.iter().map(|x| x * x).sum::<f64>();
    let er = (-p.iter().map(|x| x * x.ln()).sum::<f64>()).exp();
    assert!((g.participation_ratio - pr).abs() < 1e-9, "participation ratio {} vs {pr}", g.participation_ratio);
    let got = g.effective_rank.expect("full spectrum");
    assert!((got - er).abs() < 1e-9, "effective rank {got} vs {er}");
    assert!((g.leading_share() - 0.4).abs() < 1e-12, "λ₁/Σλ = {}", g.leading_share());
    // The signs alternate within each even count, so s = 0 for those directions… but 7 and 3
    // copies leave one row over each: the mean is not zero, and its norm is known.
    let s2 = 2.0 / (rows as f64).powi(2);
    assert!((g.mean_vector_norm - s2.sqrt()).abs() < 1e-12, "‖s/V‖ = {}", g.mean_vector_norm);
}

#[test]
fn an_early_stopped_run_has_no_geometry() {
    let (rows, dim) = (3000, 32);
    let values = trained_like(rows, dim, 9);
    let config = AnalysisConfig { stop_after_rows: Some(500), ..AnalysisConfig::default() };
    let done = analysis(&values, rows, dim, config).run().expect("runs");
    let report = done.report(0.0).expect("report");
    assert!(!report.exact);
    assert_eq!(geometry::of_analysis(&done, GeometryTiming::WithTheResult, 1).expect("no error"), None);
    assert!(report.geometry.is_none());
    assert!(!serde_json::to_string(&report).expect("json").contains("\"geometry\""));
}

#[test]
fn the_job_report_carries_geometry_in_its_json() {
    let (rows, dim) = (1200, 48);
    let values = class1_like(rows, dim, 2);
    let file = (GENERATED, embedding_file(&values, dim, DType::F32));
    let report = report_of(vec![file], None, AnalysisConfig::default()).expect("report");
    let geometry = report.geometry.as_ref().expect("geometry");
    let json: serde_json::Value = serde_json::to_value(&report).expect("json");
    let g = &json["geometry"];
    assert_eq!(g["eigenvalues"].as_array().map(Vec::len), Some(dim));
    assert_eq!(g["top_mean_dimensions"].as_array().map(Vec::len), Some(TOP_MEAN_DIMENSIONS));
    assert!(g["top_mean_dimensions"][0]["dim"].is_u64() && g["top_mean_dimensions"][0]["contribution"].is_f64());
    for field in ["participation_ratio", "effective_rank", "mean_vector_norm", "eigen_ms"] {
        assert!(g[field].is_f64(), "geometry.{field} missing");
    }
    assert_eq!(g["timing"], "with the result");
    // A Class 1-like matrix: one direction carries most of the second moment.
    assert!(geometry.leading_share() > 0.3 && geometry.participation_ratio < 10.0, "{geometry:?}");
    let back: Report = serde_json::from_value(json).expect("round trip");
    assert_eq!(back.geometry.as_ref(), Some(geometry));
}

/// The eigen step's time at the sizes the issue names (printed, never asserted): run with
/// `cargo test --release --test geometry -- --ignored --nocapture`.
#[test]
#[ignore]
fn eigen_step_timing() {
    for dim in [1024usize, 4096] {
        let gram = |a: usize, b: usize| {
            let x = (a * 31 + b * 17) as f64;
            if a == b {
                1.0 + 0.01 * x.sin()
            } else {
                0.5 / (1.0 + (a as f64 - b as f64).abs()) + 1e-3 * (x * 0.37).cos()
            }
        };
        let sum = vec![1.0; dim];
        let g = Geometry::compute(&sum, gram, dim, 1000, GeometryTiming::WithTheResult).expect("eigen");
        println!("d = {dim}: eigen step {:.0} ms, participation ratio {:.1}", g.eigen_ms, g.participation_ratio);
    }
}
