//! `orthoscope::result::paper`: where an ε falls among Table 1 (`docs/method.md` §5), the sensitivity series
//! of §2/§7 and the random-init reference of §6 (Fig. 1/2). Table 1's rows themselves are checked
//! against an independent transcription in `tests/paper_formulas.rs`.

use orthoscope::pass::estimate::{class, Class};
use orthoscope::result::paper::{
    capacity_vs_dim, capacity_vs_epsilon, default_dim_window, default_epsilon_window, neighbours, neighbours_sentence,
    random_init_bin_fractions, TABLE1,
};

// ---------------------------------------------------------------------------------------------
// Neighbours in Table 1
// ---------------------------------------------------------------------------------------------

fn name_of(m: Option<&orthoscope::result::paper::Table1Model>) -> Option<&'static str> {
    m.map(|m| m.name)
}

#[test]
fn the_epsilon_of_llama_2_7b_names_it() {
    let n = neighbours(0.06450);
    assert_eq!(name_of(n.below), Some("Llama 2 7B"), "below: {n:?}");
    assert_eq!(name_of(n.above), Some("Qwen 3 30B A3B"), "above: {n:?}");
    // Smaller ε than Llama 2 7B's 0.06450: count them from the table itself.
    let smaller = TABLE1.iter().filter(|m| m.epsilon < 0.06450).count();
    assert_eq!(n.rank, smaller);
    assert_eq!(n.rank, 17, "17 models of Table 1 have ε < 0.06450 (counted by hand from §5)");
    let s = neighbours_sentence(0.06450);
    assert!(s.contains("Llama 2 7B") && s.contains("0.06450"), "sentence: {s}");
}

#[test]
fn an_epsilon_between_two_rows_names_both_with_their_epsilon() {
    let n = neighbours(0.06453);
    assert_eq!((name_of(n.below), name_of(n.above)), (Some("Llama 2 7B"), Some("Qwen 3 30B A3B")));
    assert_eq!(
        neighbours_sentence(0.06453),
        "between Llama 2 7B (0.06450) and Qwen 3 30B A3B (0.06456) among the paper's 45 models"
    );
}

#[test]
fn an_epsilon_below_every_row_and_above_every_row() {
    let low = neighbours(0.01);
    assert_eq!((name_of(low.below), name_of(low.above), low.rank), (None, Some("Llama 3.1 70B"), 0));
    assert_eq!(neighbours_sentence(0.01), "below every model in the paper's Table 1 (lowest: Llama 3.1 70B, 0.04413)");
    let high = neighbours(0.9995);
    assert_eq!((name_of(high.below), name_of(high.above), high.rank), (Some("Gemma 7B"), None, 45));
    assert_eq!(neighbours_sentence(0.9995), "above every model in the paper's Table 1 (highest: Gemma 7B, 0.99918)");
}

#[test]
fn every_row_is_level_with_itself_and_ties_are_named_together() {
    for m in &TABLE1 {
        let n = neighbours(m.epsilon);
        let below = n.below.map(|b| b.epsilon);
        assert_eq!(below, Some(m.epsilon), "{}: below should carry its own ε, got {n:?}", m.name);
        assert!(n.above.is_none_or(|a| a.epsilon > m.epsilon), "{}: above {n:?}", m.name);
        let s = neighbours_sentence(m.epsilon);
        assert!(s.starts_with("level with") && s.contains(m.name), "{}: {s}", m.name);
    }
    assert_eq!(
        neighbours_sentence(0.05917),
        "level with DeepSeek V3.2 Exp and DeepSeek R1 (0.05917) among the paper's 45 models"
    );
}

#[test]
fn rank_counts_the_rows_strictly_below_for_any_epsilon() {
    for i in 0..=1100 {
        let eps = i as f64 * 0.001;
        let n = neighbours(eps);
        assert_eq!(n.rank, TABLE1.iter().filter(|m| m.epsilon < eps).count(), "rank at ε = {eps}");
        if let (Some(b), Some(a)) = (n.below, n.above) {
            assert!(b.epsilon <= eps && eps < a.epsilon, "ε = {eps} not between {b:?} and {a:?}");
            assert!(
                TABLE1.iter().all(|m| m.epsilon <= b.epsilon || m.epsilon >= a.epsilon),
                "a row lies strictly between the neighbours of ε = {eps}"
            );
        }
    }
    let nan = neighbours(f64::NAN);
    assert_eq!((nan.below, nan.above, nan.rank), (None, None, 0));
    assert!(neighbours_sentence(f64::NAN).contains("not a number"));
}

#[test]
fn classes_of_the_table_come_from_epsilon() {
    assert_eq!(TABLE1.iter().filter(|m| class(m.epsilon) == Class::Two).count(), 31);
    assert_eq!(TABLE1.iter().filter(|m| class(m.epsilon) == Class::One).count(), 14);
    assert_eq!(TABLE1.iter().filter(|m| class(m.epsilon) == Class::Between).count(), 0, "§3: none in 0.1–0.2");
}

// ---------------------------------------------------------------------------------------------
// Sensitivity series (§2 worked examples, §7)
// ---------------------------------------------------------------------------------------------

/// True when `got` agrees with the paper's two-significant-digit `printed` value to within one unit
/// of its last digit: the paper truncates some (2.459e8 → "2.4×10⁸") and rounds others
/// (1.985e7 → "2.0×10⁷").
fn agrees_with_printed(got: f64, printed: f64) -> bool {
    let unit = 10f64.powf(printed.log10().floor() - 1.0);
    (got - printed).abs() < unit
}

#[test]
fn sensitivity_d8192_epsilon_0_05_to_0_09_through_the_series() {
    let s = capacity_vs_epsilon(8192, 0.05, 0.09, 41);
    assert_eq!(s.len(), 41);
    let (first, last) = (s[0], s[40]);
    assert_eq!((first.0, last.0), (0.05, 0.09), "the series spans exactly the asked range");
    let (k0, k1) = (10f64.powf(first.1.adjusted_full), 10f64.powf(last.1.adjusted_full));
    assert!(agrees_with_printed(k0, 2.4e8), "d = 8192, ε = 0.05: {k0:.4e}, paper 2.4×10⁸");
    assert!(agrees_with_printed(k1, 2.0e14), "d = 8192, ε = 0.09: {k1:.4e}, paper 2.0×10¹⁴");
    for w in s.windows(2) {
        assert!(w[1].0 > w[0].0, "ε ascending");
        assert!(w[1].1.adjusted_full > w[0].1.adjusted_full, "capacity grows with ε");
    }
}

#[test]
fn sensitivity_epsilon_0_09_d2048_to_3072_through_the_series() {
    let s = capacity_vs_dim(0.09, 2048, 3072, 9);
    assert_eq!(s.first().map(|p| p.0), Some(2048));
    assert_eq!(s.last().map(|p| p.0), Some(3072));
    let k0 = 10f64.powf(s[0].1.adjusted_full);
    let k1 = 10f64.powf(s[s.len() - 1].1.adjusted_full);
    assert!(agrees_with_printed(k0, 2.0e7), "d = 2048, ε = 0.09: {k0:.4e}, paper 2.0×10⁷");
    assert!(agrees_with_printed(k1, 6.0e8), "d = 3072, ε = 0.09: {k1:.4e}, paper 6.0×10⁸");
    for w in s.windows(2) {
        assert!(w[1].0 > w[0].0, "d strictly ascending: {:?} then {:?}", w[0].0, w[1].0);
        assert!(w[1].1.adjusted_full > w[0].1.adjusted_full, "capacity grows with d");
    }
    // Log spacing: the ratio of consecutive d is (3072/2048)^(1/8) ≈ 1.052, within rounding.
    let ratio = (3072f64 / 2048.0).powf(1.0 / 8.0);
    for w in s.windows(2) {
        let r = w[1].0 as f64 / w[0].0 as f64;
        assert!((r - ratio).abs() < 1e-3, "ratio {r} vs {ratio}");
    }
}

#[test]
fn series_points_carry_the_papers_check_values_and_their_spacing() {
    // d from 1024 to 16384 in 7 log-spaced points passes through d = 4096 (1024·16^(3/6)): there,
    // at ε = 0.0645, every formula must give §2's printed Llama 2 7B value.
    let s = capacity_vs_dim(0.0645, 1024, 16384, 7);
    let ds: Vec<u64> = s.iter().map(|p| p.0).collect();
    assert_eq!(ds, vec![1024, 1625, 2580, 4096, 6502, 10321, 16384]);
    let c = s[3].1;
    let near = |got: f64, printed: f64, tol: f64| ((got - printed) / printed).abs() <= tol;
    assert!(near(10f64.powf(c.jl_c8), 8.4, 0.05 / 8.4), "JL C=8 at d=4096: {:.4}", 10f64.powf(c.jl_c8));
    assert!(near(10f64.powf(c.jl_c3029), 277.0, 1.0 / 277.0), "JL C=3.029 at d=4096: {:.4}", 10f64.powf(c.jl_c3029));
    assert!(
        near(10f64.powf(c.adjusted_full), 3.99e7, 0.005),
        "full form at d=4096: {:.4e}",
        10f64.powf(c.adjusted_full)
    );
    // ε evenly spaced, both ends included: 0.03, 0.045, …, 0.12.
    let e = capacity_vs_epsilon(4096, 0.03, 0.12, 7);
    for (i, (eps, _)) in e.iter().enumerate() {
        assert!((eps - (0.03 + 0.015 * i as f64)).abs() < 1e-12, "point {i}: ε = {eps}");
    }
    assert!(capacity_vs_epsilon(4096, 0.03, 0.12, 0).is_empty());
    assert_eq!(capacity_vs_epsilon(4096, 0.03, 0.12, 1).len(), 1);
    // Small ranges repeat integers after rounding: kept once.
    let few = capacity_vs_dim(0.05, 10, 12, 50);
    let ds: Vec<u64> = few.iter().map(|p| p.0).collect();
    assert_eq!(ds, vec![10, 11, 12]);
}

#[test]
fn default_windows_cover_epsilon_and_its_interval_inside_0_1() {
    let (lo, hi) = default_epsilon_window(0.0645, None);
    assert!((lo - 0.03225).abs() < 1e-12 && (hi - 0.1032).abs() < 1e-12, "({lo}, {hi})");
    // A wide interval widens the window past 0.5×/1.6× and keeps a margin.
    let (lo, hi) = default_epsilon_window(0.0645, Some([0.02, 0.12]));
    assert!(lo < 0.02 && lo > 0.0 && hi > 0.12 && hi <= 1.0, "({lo}, {hi})");
    // Class 1 near 1: clamped to 1.
    let (lo, hi) = default_epsilon_window(0.99918, None);
    assert!(lo < 0.99918 && hi == 1.0, "({lo}, {hi})");
    // ε beyond 1 (μ + 2σ can exceed 1): the window still ends at 1 and is not empty.
    let (lo, hi) = default_epsilon_window(1.3, None);
    assert!(0.0 < lo && lo < hi && hi == 1.0, "({lo}, {hi})");
    for bad in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        let (lo, hi) = default_epsilon_window(bad, None);
        assert!(0.0 < lo && lo < hi && hi <= 1.0, "ε = {bad}: ({lo}, {hi})");
    }
    assert_eq!(default_dim_window(4096), (1024, 16384));
    assert_eq!(default_dim_window(0), (1, 4));
    assert_eq!(default_dim_window(u64::MAX).1, u64::MAX);
}

// ---------------------------------------------------------------------------------------------
// Random-init reference (§6): cos of two isotropic vectors in R^d, mean 0, variance 1/d
// ---------------------------------------------------------------------------------------------

fn edges(lo: f64, hi: f64, bins: usize) -> Vec<f64> {
    (0..=bins).map(|i| lo + (hi - lo) * i as f64 / bins as f64).collect()
}

/// Mean and variance of the binned distribution, each bin at its centroid (midpoint).
fn moments(e: &[f64], p: &[f64]) -> (f64, f64) {
    let mid: Vec<f64> = e.windows(2).map(|w| 0.5 * (w[0] + w[1])).collect();
    let mean = mid.iter().zip(p).map(|(m, p)| m * p).sum::<f64>();
    let var = mid.iter().zip(p).map(|(m, p)| (m - mean) * (m - mean) * p).sum::<f64>();
    (mean, var)
}

#[test]
fn random_init_mass_sums_to_one_with_mean_0_and_variance_1_over_d() {
    let fine = edges(-1.0, 1.0, 40_000);
    for d in [64u64, 1024, 4096, 16384] {
        let p = random_init_bin_fractions(d, &fine);
        assert_eq!(p.len(), 40_000);
        let total: f64 = p.iter().sum();
        assert!((total - 1.0).abs() < 1e-9, "d = {d}: mass {total}");
        let (mean, var) = moments(&fine, &p);
        assert!(mean.abs() < 1e-9, "d = {d}: mean {mean}");
        let want = 1.0 / d as f64;
        assert!(((var - want) / want).abs() < 1e-4, "d = {d}: variance {var:.6e}, expected 1/d = {want:.6e}");
        assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0), "d = {d}: a bin is negative or not finite");
    }
}

#[test]
fn random_init_is_symmetric_and_peaks_at_0() {
    for d in [3u64, 64, 4096, 16384] {
        let e = edges(-0.2, 0.2, 300);
        let p = random_init_bin_fractions(d, &e);
        for i in 0..150 {
            let (a, b) = (p[i], p[299 - i]);
            assert!((a - b).abs() <= 1e-12 * a.max(b).max(1e-300), "d = {d}: bin {i} {a} vs mirror {b}");
        }
        if d > 3 {
            let peak = p.iter().cloned().fold(0.0, f64::max);
            assert!(p[149] == peak || p[150] == peak, "d = {d}: peak not at 0");
        }
    }
}

#[test]
fn random_init_on_the_papers_bins_does_not_underflow_at_d_16384() {
    // The zoom of Fig. 1/2: 300 bins on [−0.2, 0.2]. At d = 16384 (σ ≈ 0.0078) the mass sits within
    // a few dozen bins of 0; the bins next to 0 hold most of it and must not read zero.
    let e = edges(-0.2, 0.2, 300);
    let p = random_init_bin_fractions(16384, &e);
    let total: f64 = p.iter().sum();
    assert!((total - 1.0).abs() < 1e-9, "zoom mass {total}");
    assert!(p[149] > 0.05 && p[150] > 0.05, "central bins {} {}", p[149], p[150]);
    // Mass within ±0.03 (≈ 3.8σ) is > 0.9998.
    let near: f64 =
        e.windows(2).zip(&p).filter(|(w, _)| w[0] >= -0.03 - 1e-12 && w[1] <= 0.03 + 1e-12).map(|(_, p)| p).sum();
    assert!(near > 0.9998, "mass within ±0.03: {near}");
    // The full-range bins (2/300 wide) against the same mass: one bin of width 2/300 around 0 holds
    // P(|cos| < 1/300) ≈ erf((1/300)·√(d/2)) ≈ 0.3935.
    let full = random_init_bin_fractions(16384, &edges(-1.0, 1.0, 300));
    assert!((full.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    let centre = full[150].max(full[149]);
    assert!(centre > 0.25, "central full-range bin {centre}");
}

#[test]
fn random_init_for_d_2_is_the_arcsine_law_and_for_d_3_uniform() {
    let e = edges(-1.0, 1.0, 20);
    let p2 = random_init_bin_fractions(2, &e);
    for (w, p) in e.windows(2).zip(&p2) {
        let want = (w[1].asin() - w[0].asin()) / std::f64::consts::PI;
        assert!((p - want).abs() < 1e-12, "d = 2 bin [{}, {}]: {p} vs {want}", w[0], w[1]);
    }
    let p3 = random_init_bin_fractions(3, &e);
    for p in &p3 {
        assert!((p - 0.05).abs() < 1e-12, "d = 3 bins hold 1/20 each, got {p}");
    }
}

#[test]
fn random_init_degenerate_inputs() {
    let e = edges(-1.0, 1.0, 10);
    assert_eq!(random_init_bin_fractions(0, &e), vec![0.0; 10]);
    assert_eq!(random_init_bin_fractions(1, &e), vec![0.0; 10]);
    assert!(random_init_bin_fractions(64, &[]).is_empty());
    assert!(random_init_bin_fractions(64, &[0.0]).is_empty());
    // Edges beyond ±1 carry no mass outside; a reversed bin gets 0.
    let p = random_init_bin_fractions(64, &[-2.0, 0.0, 2.0, 1.5]);
    assert!((p[0] - 0.5).abs() < 1e-12 && (p[1] - 0.5).abs() < 1e-12 && p[2] == 0.0, "{p:?}");
    // Huge d: all mass in the two central bins, still summing to 1.
    let p = random_init_bin_fractions(1 << 24, &e);
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{p:?}");
}
