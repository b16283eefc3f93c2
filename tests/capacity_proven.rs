//! The proven capacity bounds (`pass::capacity`, docs/method.md §2) against the configurations
//! known to meet them, their sources' closed forms, the paper's own packings, and each other.

use orthoscope::pass::capacity::{
    self, at_least, at_most, floor_max_cos, proven, AtLeastBy, AtMostBy, FloorBy, UpperBounds,
};
use orthoscope::result::paper::{packing_cells, OPTIMISED_PACKINGS_JSON, RANDOM_PACKINGS_JSON};
use proptest::prelude::*;

/// The tight configurations: (d, lines, max |cos|, the upper bound they meet, the floor they meet).
const TIGHT: [(u64, f64, f64, AtMostBy, FloorBy); 9] = [
    (7, 28.0, 1.0 / 3.0, AtMostBy::Relative, FloorBy::Welch),
    (23, 276.0, 0.2, AtMostBy::Relative, FloorBy::Welch),
    (8, 120.0, 0.5, AtMostBy::Levenshtein, FloorBy::Levenshtein),
    (16, 144.0, 0.25, AtMostBy::Levenshtein, FloorBy::Orthoplex),
    (64, 2112.0, 0.125, AtMostBy::Levenshtein, FloorBy::Orthoplex),
    (256, 33024.0, 0.0625, AtMostBy::Levenshtein, FloorBy::Orthoplex),
    (1024, 525_312.0, 0.03125, AtMostBy::Levenshtein, FloorBy::Orthoplex),
    (4096, 8_392_704.0, 0.015625, AtMostBy::Levenshtein, FloorBy::Orthoplex),
    (24, 98_280.0, 0.5, AtMostBy::Levenshtein, FloorBy::Levenshtein),
];

#[test]
fn every_tight_configuration_meets_its_bounds() {
    for (d, lines, max_cos, most_by, floor_by) in TIGHT {
        let (most, by) = at_most(max_cos, d);
        let most = most.expect("finite below ε = 1");
        // Closed forms to 1e-12 in log10; Leech's degree-4 bound through the recurrences to 1e-9.
        let tol = if d == 24 { 1e-9 } else { 1e-12 };
        assert!((most - lines.log10()).abs() < tol, "d {d}: at most {} against {lines}", 10f64.powf(most));
        assert_eq!(by, most_by, "d {d}");
        let (floor, by) = floor_max_cos(lines.log10(), d);
        let tol = if d == 24 { 1e-9 } else { 1e-12 };
        assert!((floor - max_cos).abs() < tol * max_cos, "d {d}: floor {floor} against {max_cos}");
        assert_eq!(by, floor_by, "d {d}");
        // The construction itself is what at_least names there.
        let (least, _) = at_least(max_cos, d);
        assert!(least.expect("finite") >= lines.log10() - 1e-12, "d {d}");
    }
}

#[test]
fn constructions_are_what_exists_at_their_angles() {
    assert_eq!(at_least(0.015625, 4096), (Some(8_392_704f64.log10()), AtLeastBy::Kerdock));
    // A Kerdock set placed inside a larger d, the rest orthonormal: 64·33 + 36.
    assert_eq!(at_least(0.125, 100), (Some(2148f64.log10()), AtLeastBy::Kerdock));
    assert_eq!(at_least(0.5, 24).1, AtLeastBy::Leech);
    assert_eq!(at_least(0.5, 8).1, AtLeastBy::E8);
    assert_eq!(at_least(1.0 / 3.0, 7).1, AtLeastBy::Equiangular28);
    assert_eq!(at_least(0.2, 23).1, AtLeastBy::Equiangular276);
    assert_eq!(at_least(0.0, 50), (Some(50f64.log10()), AtLeastBy::Orthonormal));
    assert_eq!(at_least(0.02, 50), (Some(51f64.log10()), AtLeastBy::Simplex));
    assert_eq!(at_least(1.0, 50), (None, AtLeastBy::Unbounded));
    assert_eq!(at_most(1.2, 50), (None, AtMostBy::Unbounded));
    assert_eq!(at_most(0.0, 50), (Some(50f64.log10()), AtMostBy::Relative));
}

#[test]
fn covering_and_cap_packing_match_the_sphere_in_three_dimensions() {
    // On S², a cap {⟨z, x⟩ > t} has normalised area (1 − t)/2: covering k ≥ 1/(1 − ε), packing
    // k ≤ 1/(1 − cos(θ/2)) with θ = arccos ε.
    for eps in [0.1f64, 0.5, 0.9] {
        let cover = capacity::log10_covering(eps, 3.0);
        assert!((cover - (1.0 / (1.0 - eps)).log10()).abs() < 1e-12, "{eps}");
        let half = eps.acos() / 2.0;
        let pack = capacity::log10_cap_packing(eps, 3.0);
        assert!((pack - (1.0 / (1.0 - half.cos())).log10()).abs() < 1e-12, "{eps}");
    }
}

#[test]
fn the_floors_are_the_sources_closed_forms() {
    // Welch: the simplex's d + 1 lines at 1/d; orthoplex just past d(d + 1)/2; Levenshtein's
    // degree-2 floor as the count grows.
    let (f, by) = floor_max_cos(101f64.log10(), 100);
    assert!((f - 0.01).abs() < 1e-15 && by == FloorBy::Welch);
    let (f, by) = floor_max_cos(((100 * 101 / 2 + 1) as f64).log10(), 100);
    assert!((f - 0.1).abs() < 1e-15 && by == FloorBy::Orthoplex, "{f} {by:?}");
    // (32000, 32): at least the degree-2 value the paper's optimiser is compared with, 0.2955.
    let (k, d) = (32000f64, 32f64);
    let degree2 = ((3.0 * k - d * d - 2.0 * d) / ((d + 2.0) * (k - d))).sqrt();
    let (f, _) = floor_max_cos(k.log10(), 32);
    assert!((degree2 - 0.2955).abs() < 5e-5 && f >= degree2 - 1e-15, "{f} {degree2}");
    assert_eq!(floor_max_cos(2.0, 100), (0.0, FloorBy::Orthonormal));
    // A count of 10³⁰⁰ still has a finite floor below 1.
    let (f, by) = floor_max_cos(300.0, 4096);
    assert!(f.is_finite() && f > 0.1 && f < 1.0, "{f} {by:?}");
}

#[test]
fn the_paper_s_packings_sit_above_every_floor() {
    let optimised = packing_cells(OPTIMISED_PACKINGS_JSON).expect("the shipped data parse");
    let random = packing_cells(RANDOM_PACKINGS_JSON).expect("the shipped data parse");
    assert_eq!((optimised.len(), random.len()), (166, 256));
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for c in optimised.iter().chain(&random) {
        let (floor, by) = floor_max_cos((c.k as f64).log10(), c.d);
        assert!(floor <= c.max_cos + 1e-12, "({}, {}): ε* {} below the {by:?} floor {floor}", c.k, c.d, c.max_cos);
    }
    for c in optimised.iter().filter(|c| c.k > c.d) {
        let (floor, _) = floor_max_cos((c.k as f64).log10(), c.d);
        lo = lo.min(c.max_cos / floor);
        hi = hi.max(c.max_cos / floor);
    }
    // The reading of the data: every optimised cell 1.3–2.6× above the floor.
    assert!(lo > 1.25 && hi < 2.7, "ε*/floor from {lo} to {hi}");
    for (k, d, want) in [(32000u64, 4096u64, 0.0146), (32000, 256, 0.0623)] {
        let (floor, _) = floor_max_cos((k as f64).log10(), d);
        assert!((floor - want).abs() < 5e-5, "({k}, {d}): {floor}");
    }
}

#[test]
fn llama_2_7b_s_interval() {
    let p = proven(0.0645, 4096, 32000);
    assert_eq!((p.at_least_by, p.at_most_by, p.floor_by), (AtLeastBy::Kerdock, AtMostBy::Levenshtein, FloorBy::Welch));
    assert!((p.log10_at_least.unwrap() - 8_392_704f64.log10()).abs() < 1e-12);
    // Levenshtein's degree-7 bound, 2.103 × 10²³ (an independent f64 evaluation of the same
    // polynomial's linear programme by Gauss quadrature gave 2.10298 × 10²³).
    assert!((p.log10_at_most.unwrap() - 23.3228).abs() < 5e-4, "{:?}", p.log10_at_most);
    assert!((p.floor_max_cos - 0.014591).abs() < 1e-6, "{}", p.floor_max_cos);
    let law = orthoscope::pass::estimate::capacities(4096, 0.0645).adjusted_full;
    assert!(law > p.log10_at_least.unwrap() && law < p.log10_at_most.unwrap());
}

#[test]
fn levenshtein_s_high_degrees_agree_with_an_independent_evaluation() {
    // Values from a 400-digit mpmath evaluation of Levenshtein's bound (the polynomial's expansion
    // checked non-negative there), to four significant digits in log10.
    for (d, eps, want) in [
        (256u64, 0.2, 10.88f64),
        (256, 0.4, 26.62),
        (1024, 0.1, 13.67),
        (1024, 0.2, 33.55),
        (1024, 0.4, 93.17),
        (4096, 0.05, 16.63),
        (4096, 0.1, 42.26),
        (4096, 0.2, 116.4),
        (4096, 0.4, 349.7),
    ] {
        let (most, by) = at_most(eps, d);
        let most = most.unwrap();
        assert_eq!(by, AtMostBy::Levenshtein, "({d}, {eps})");
        // Half a unit of the fourth significant digit.
        let half_unit = 0.051 * 10f64.powf(want.log10().floor() - 2.0);
        assert!((most - want).abs() <= half_unit, "({d}, {eps}): {most} vs {want}");
    }
    // Degree 3 lifts the floor at (32000, 32) to 0.3708 over degree 2's 0.2955.
    let (f, by) = floor_max_cos(32000f64.log10(), 32);
    assert!((f - 0.3708).abs() < 5e-4 && by == FloorBy::Levenshtein, "{f} {by:?}");
}

#[test]
fn the_epsilon_floor_is_welch_s_mean_square() {
    assert_eq!(capacity::floor_epsilon(4096, 4096), 0.0);
    let f = capacity::floor_epsilon(32000, 4096);
    assert!((f - ((32000.0 - 4096.0) / (4096.0 * 31999.0f64)).sqrt()).abs() < 1e-15);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Lower bounds on k never exceed upper bounds, and both move the right way with ε.
    #[test]
    fn lower_never_above_upper(d in 2u64..20_000, eps in 0.0f64..0.99, step in 0.0f64..0.2) {
        let (least, _) = at_least(eps, d);
        let mut upper = UpperBounds::new(d);
        let (most, _) = upper.at_most(eps);
        let (least, most) = (least.unwrap(), most.unwrap());
        prop_assert!(least.is_finite() && most.is_finite());
        prop_assert!(least <= most + 1e-9, "d {} ε {}: at least {} above at most {}", d, eps, least, most);
        let wider = (eps + step).min(0.995);
        prop_assert!(upper.at_most(wider).0.unwrap() >= most - 1e-9 * most.abs().max(1.0));
        prop_assert!(at_least(wider, d).0.unwrap() >= least - 1e-12);
    }

    /// Whatever provably exists at ε has a floor at or below ε; the floor grows with k.
    #[test]
    fn floors_are_below_what_exists(d in 2u64..5000, eps in 0.001f64..0.95, more in 0.0f64..3.0) {
        let (least, by) = at_least(eps, d);
        let least = least.unwrap();
        let (floor, floor_by) = floor_max_cos(least, d);
        prop_assert!(floor <= eps + 1e-9, "d {} ε {}: {:?} gives 10^{} lines but the {:?} floor is {}", d, eps, by, least, floor_by, floor);
        let (higher, _) = floor_max_cos(least + more, d);
        prop_assert!(higher >= floor - 1e-12);
    }

    /// Counts up to 10³⁰⁰ keep finite floors inside [0, 1].
    #[test]
    fn floors_hold_at_any_size(d in 1u64..100_000, log10_k in 0.0f64..300.0) {
        let (floor, _) = floor_max_cos(log10_k, d);
        prop_assert!(floor.is_finite() && (0.0..1.0).contains(&floor), "{}", floor);
    }
}

/// The table of the closing note (printed with `--nocapture`): for d ∈ {256, 1024, 4096} and
/// ε ∈ {1/√d, 0.05, 0.1, 0.2, 0.4}, log10 of Eq. 6, Eq. 7, JL C = 3.029 and the proven interval, which
/// must hold the order lower ≤ upper, with the JL lower bounds under the proven upper one.
#[test]
fn the_interval_beside_the_paper_s_formulas() {
    println!("| d | ε | Eq. 6 | Eq. 7 | JL 3.029 | at least | at most |");
    for d in [256u64, 1024, 4096] {
        for eps in [1.0 / (d as f64).sqrt(), 0.05, 0.1, 0.2, 0.4] {
            let c = orthoscope::pass::estimate::capacities(d, eps);
            let p = proven(eps, d, d);
            let (least, most) = (p.log10_at_least.unwrap(), p.log10_at_most.unwrap());
            println!(
                "| {d} | {eps:.4} | {:.3} | {:.3} | {:.3} | {least:.3} {} | {most:.3} {} |",
                c.adjusted_simple,
                c.adjusted_full,
                c.jl_c3029,
                p.at_least_by.name(),
                p.at_most_by.name()
            );
            assert!(least <= most && c.jl_c8 <= most, "d {d} ε {eps}");
        }
    }
    println!("| (k, d) | ε* (paper) | floor | by |");
    let cells = packing_cells(OPTIMISED_PACKINGS_JSON).unwrap();
    for (k, d) in [(2000u64, 32u64), (32000, 32), (2000, 64), (32000, 256), (32000, 1024), (32000, 4096)] {
        let cell = cells.iter().find(|c| c.k == k && c.d == d).expect("a cell of the paper's grid");
        let (floor, by) = floor_max_cos((k as f64).log10(), d);
        println!("| ({k}, {d}) | {:.4} | {floor:.4} | {} | ratio {:.2}", cell.max_cos, by.name(), cell.max_cos / floor);
        assert!(floor < cell.max_cos);
    }
}
