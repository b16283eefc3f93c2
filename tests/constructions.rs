//! The optimal line packings of `read::constructions` against the theory they come from: the
//! number of lines and their dimension as published, every |cos| (or, for the Leech lattice, those
//! of a seeded sample of rows against all rows) in the published set, the largest one exactly the
//! packing's; then the product's own exact pass over each, written as a safetensors file, against
//! μ and σ that follow from the frames' tightness (Σ_{i,j} cos² = k²/d for k unit vectors of a
//! tight frame of R^d), and every proven bound of `pass::capacity` holding at it (the packings in
//! their own dimension meet their floor).

use orthoscope::fixtures::oracle::unit_rows;
use orthoscope::fixtures::setup::{run_job, EMBEDDING};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::capacity;
use orthoscope::read::constructions::{construct, Construction, ConstructionError, CONSTRUCTIONS, MAX_BYTES};
use orthoscope::read::demo::{demo, safetensors_bytes, TensorSpec, DEMOS};
use orthoscope::read::format::DType;
use orthoscope::result::report::Report;

/// Two |cos| closer than this are the same value; the f32 rows are good to ~1e-7.
const SAME: f64 = 1e-6;

/// The distinct |cos| of the pairs seen (sorted, within [`SAME`]) and the largest.
#[derive(Default)]
struct Cosines {
    values: Vec<f64>,
    max: f64,
    pairs: u64,
}

impl Cosines {
    fn add(&mut self, c: f64) {
        let c = c.abs();
        self.pairs += 1;
        self.max = self.max.max(c);
        if !self.values.iter().any(|v| (v - c).abs() < SAME) {
            self.values.push(c);
            self.values.sort_by(f64::total_cmp);
        }
    }

    fn check(&self, case: &str, published: &[f64], max: f64) {
        assert!((self.max - max).abs() < SAME, "{case}: max |cos| {} against {max}", self.max);
        assert_eq!(
            self.values.len(),
            published.len(),
            "{case}: |cos| values {:?}, published {published:?}",
            self.values
        );
        for (got, want) in self.values.iter().zip(published) {
            assert!((got - want).abs() < SAME, "{case}: |cos| values {:?}, published {published:?}", self.values);
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Every pair of rows, in f64 from the stored f32 values.
fn all_pairs(c: &Construction) -> Cosines {
    let (units, zero, nonfinite) = unit_rows(&c.values, c.dim, |_| true);
    assert_eq!((units.len(), zero, nonfinite), (c.rows, 0, 0), "{}: every row a unit vector", c.name);
    let mut out = Cosines::default();
    for i in 0..units.len() {
        for j in i + 1..units.len() {
            out.add(dot(&units[i], &units[j]));
        }
    }
    out
}

/// The shape every construction promises: `rows × dim` unit rows, zero past the native columns.
fn check_shape(c: &Construction, rows: usize, native: usize, dim: usize) {
    assert_eq!((c.rows, c.native_dim, c.dim, c.values.len()), (rows, native, dim, rows * dim), "{}", c.name);
    for row in c.values.chunks_exact(dim) {
        let norm: f64 = row.iter().map(|&x| x as f64 * x as f64).sum();
        assert!((norm - 1.0).abs() < 1e-6, "{}: a row of norm² {norm}", c.name);
        assert!(row[native..].iter().all(|&x| x == 0.0), "{}: a nonzero column past R^{native}", c.name);
    }
}

/// The oracle for the exact pass: μ from the f64 sum s of the unit rows, μ = (‖s‖² − k)/(k(k − 1));
/// E[cos²] = (k/d − 1)/(k − 1) from tightness; σ² = E[cos²] − μ².
fn oracle(c: &Construction) -> (f64, f64) {
    let (units, _, _) = unit_rows(&c.values, c.dim, |_| true);
    let mut s = vec![0.0f64; c.dim];
    for u in &units {
        for (s, x) in s.iter_mut().zip(u) {
            *s += x;
        }
    }
    let k = units.len() as f64;
    let d = c.native_dim as f64;
    let mu = (dot(&s, &s) - k) / (k * (k - 1.0));
    let mean_square = (k / d - 1.0) / (k - 1.0);
    (mu, (mean_square - mu * mu).sqrt())
}

/// The product's exact pass over the construction written as a safetensors file, as the page and
/// the CLI open one, checked against [`oracle`] and, where the histogram's sample holds every row,
/// its most similar and most opposed pairs against the packing's largest |cos|.
fn check_pass(c: &Construction) -> Report {
    let t = TensorSpec::matrix(EMBEDDING, DType::F32, c.rows, c.dim, &c.values);
    let file = format!("{}.safetensors", c.name);
    let report = run_job(vec![(&file, safetensors_bytes(&[t]))], None, AnalysisConfig::default())
        .expect("the pass runs")
        .report(0.0)
        .expect("a report");
    let case = format!("{} in R^{}", c.name, c.dim);
    assert_eq!((report.rows, report.dim, report.rows_used), (c.rows as u64, c.dim as u64, c.rows as u64), "{case}");
    assert!(report.exact, "{case}: exact");
    let (mu, sigma) = oracle(c);
    let relative = |got: f64, want: f64| (got - want).abs() / want.abs();
    assert!(relative(report.mu, mu) < 1e-6, "{case}: μ {} against {mu}", report.mu);
    assert!(relative(report.sigma, sigma) < 1e-6, "{case}: σ {} against {sigma}", report.sigma);
    let top = report.top_pairs.first().map_or(0.0, |p| p.cosine.abs());
    let opposed = report.antipodal_pairs.first().map_or(0.0, |p| p.cosine.abs());
    let seen = top.max(opposed);
    if report.histogram.rows_in_histogram == c.rows as u64 {
        assert!((seen - c.max_abs_cos).abs() < 1e-6, "{case}: the sample's extreme pairs at {seen}");
    } else {
        assert!(seen < c.max_abs_cos + 1e-6, "{case}: a sampled pair at {seen}");
    }
    no_bound_violated(c, &report);
    report
}

/// The packing against the proven bounds (docs/method.md §2): the Report's floor for its rows is at
/// or below the packing's max |cos| (these meet it, in their own dimension), no upper bound at that
/// angle is below its count, and no lower bound above what the bounds allow.
fn no_bound_violated(c: &Construction, report: &Report) {
    let case = format!("{} in R^{}", c.name, c.dim);
    let proven = report.capacity_proven.expect("the Report's proven interval");
    assert!(proven.floor_max_cos <= c.max_abs_cos + 1e-9, "{case}: floor {} above the packing", proven.floor_max_cos);
    if c.dim == c.native_dim {
        assert!((proven.floor_max_cos - c.max_abs_cos).abs() < 1e-9, "{case}: the packing meets its floor");
    }
    let lines = (c.rows as f64).log10();
    let (most, _) = capacity::at_most(c.max_abs_cos, c.dim as u64);
    assert!(most.expect("finite") >= lines - 1e-9, "{case}: at most 10^{most:?} below its {} lines", c.rows);
    let least = capacity::at_least(c.max_abs_cos, c.dim as u64).0.expect("finite");
    assert!(least >= lines - 1e-9, "{case}: the construction is among what exists");
    // Where the packing is tight both are its count, to rounding.
    assert!(least <= most.expect("finite") + 1e-9, "{case}: at least 10^{least} above at most 10^{most:?}");
}

/// Kerdock's bases, exactly: the first d rows the standard basis, every other entry ±1/√d, and
/// every pair of the ±1 rows compared by their sign bits (d − 2·popcount of the difference).
fn kerdock_pairs(c: &Construction) -> Cosines {
    let d = c.native_dim;
    let scale = 1.0 / (d as f32).sqrt();
    for (i, row) in c.values.chunks_exact(c.dim).take(d).enumerate() {
        assert!(row.iter().enumerate().all(|(j, &x)| x == if i == j { 1.0 } else { 0.0 }), "row {i} is e_{i}");
    }
    let words = d.div_ceil(64);
    let mut signs = Vec::with_capacity((c.rows - d) * words);
    for row in c.values.chunks_exact(c.dim).skip(d) {
        let mut bits = vec![0u64; words];
        for (j, &x) in row[..d].iter().enumerate() {
            assert!(x == scale || x == -scale, "an entry {x} is not ±1/√{d}");
            bits[j / 64] |= ((x < 0.0) as u64) << (j % 64);
        }
        signs.extend(bits);
    }
    // A standard basis vector against any other row: 0 or an entry, ±1/√d.
    let mut out = Cosines::default();
    out.add(0.0);
    out.add(scale as f64);
    let dots = differing_signs(&signs, words, d);
    for (dot, &n) in dots.iter().enumerate() {
        if n > 0 {
            out.add(dot as f64 / d as f64);
        }
    }
    out
}

/// How many pairs of the sign rows (`words` u64 each, `d` signs) have each |⟨a, b⟩| = |d − 2·(signs
/// that differ)|, over all pairs.
fn differing_signs(signs: &[u64], words: usize, d: usize) -> Vec<u64> {
    #[inline(always)]
    fn tally(signs: &[u64], words: usize, d: usize) -> Vec<u64> {
        // Padded to 256 signs, the padding equal in every row: the inner loop has a fixed length.
        assert!(words <= 4);
        let rows: Vec<[u64; 4]> =
            signs.chunks_exact(words).map(|r| std::array::from_fn(|k| r.get(k).copied().unwrap_or(0))).collect();
        // By the number of signs that differ; two tables, so that consecutive pairs do not wait on
        // one counter.
        let mut differ = [[0u64; 257]; 2];
        for (i, a) in rows.iter().enumerate() {
            for (j, b) in rows[i + 1..].iter().enumerate() {
                let n: u32 = (0..4).map(|k| (a[k] ^ b[k]).count_ones()).sum();
                differ[j & 1][n as usize] += 1;
            }
        }
        let mut dots = vec![0u64; d + 1];
        for n in 0..=d {
            dots[(d as i64 - 2 * n as i64).unsigned_abs() as usize] += differ[0][n] + differ[1][n];
        }
        dots
    }
    // Half a billion pairs at d = 256: the CPU's popcount, where it has one, is several times the
    // portable bit arithmetic the baseline target compiles `count_ones` to.
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        #[target_feature(enable = "popcnt")]
        fn with_popcnt(signs: &[u64], words: usize, d: usize) -> Vec<u64> {
            tally(signs, words, d)
        }
        // SAFETY: the CPU has the instruction, checked above.
        return unsafe { with_popcnt(signs, words, d) };
    }
    tally(signs, words, d)
}

#[test]
fn kerdock_bases_are_mutually_unbiased_in_4_16_64_and_256_dimensions() {
    for d in [4usize, 16, 64, 256] {
        let c = construct("kerdock", Some(d)).unwrap();
        check_shape(&c, d * (d / 2 + 1), d, d);
        assert_eq!(c.max_abs_cos, 1.0 / (d as f64).sqrt());
        let published = [0.0, 1.0 / (d as f64).sqrt()];
        kerdock_pairs(&c).check(&format!("kerdock {d}"), &published, c.max_abs_cos);
        if d <= 64 {
            all_pairs(&c).check(&format!("kerdock {d}, f64"), &published, c.max_abs_cos);
        }
        check_pass(&c);
    }
}

#[test]
fn kerdock_takes_the_largest_power_of_4_and_places_it() {
    let c = construct("kerdock", None).unwrap();
    assert_eq!((c.rows, c.native_dim, c.dim), (2112, 64, 64));
    let c = construct("kerdock", Some(100)).unwrap();
    check_shape(&c, 2112, 64, 100);
    check_pass(&c);
    assert_eq!(construct("kerdock", Some(1023)).map(|c| c.native_dim), Ok(256));
    assert_eq!(
        construct("kerdock", Some(3)).map(|c| c.rows),
        Err(ConstructionError::DimBelowNative { name: "kerdock", dim: 3, native: 4 })
    );
    // 4096 is 8,392,704 rows: past the limit, refused before anything is allocated.
    let err = construct("kerdock", Some(4096)).map(|c| c.rows).unwrap_err();
    assert!(matches!(err, ConstructionError::TooLarge { rows: 8_392_704, dim: 4096, largest: 2044, .. }), "{err:?}");
    assert!(err.to_string().contains("ask for --dim 2044 or less"), "{err}");
    assert!(matches!(construct("kerdock", Some(usize::MAX)), Err(ConstructionError::TooLarge { .. })));
    // 1024 fits, up to a width of 2044 columns.
    const { assert!(525_312 * 2044 * 4 <= MAX_BYTES && 525_312 * 2045 * 4 > MAX_BYTES) };
    assert!(matches!(construct("kerdock", Some(2045)), Err(ConstructionError::TooLarge { largest: 2044, .. })));
}

#[test]
fn e8_gives_120_lines_at_0_and_one_half_in_r8_and_placed_in_r12() {
    for dim in [None, Some(12)] {
        let c = construct("e8", dim).unwrap();
        check_shape(&c, 120, 8, dim.unwrap_or(8));
        all_pairs(&c).check("e8", &[0.0, 0.5], 0.5);
        assert_eq!(c.max_abs_cos, 0.5);
        check_pass(&c);
    }
}

#[test]
fn equiangular_sets_meet_the_absolute_bound() {
    for (name, rows, native, cos) in [("equiangular-28", 28, 7, 1.0 / 3.0), ("equiangular-276", 276, 23, 0.2)] {
        let c = construct(name, None).unwrap();
        check_shape(&c, rows, native, native);
        assert_eq!(rows, native * (native + 1) / 2);
        assert!((c.max_abs_cos - cos).abs() < 1e-15);
        let pairs = all_pairs(&c);
        pairs.check(name, &[cos], cos);
        assert_eq!(pairs.pairs as usize, rows * (rows - 1) / 2);
        check_pass(&c);
    }
}

/// A seeded sample of rows against every row, in integers: each Leech row is v/√32 for an integral
/// minimal vector v (norm² 32), so ⟨v, v'⟩ ∈ {0, ±8, ±16} between lines, 32 only with itself.
#[test]
fn leech_lines_meet_at_0_one_quarter_and_one_half() {
    let c = construct("leech", None).unwrap();
    check_shape(&c, 98280, 24, 24);
    let root = 32f64.sqrt();
    let lattice: Vec<[i32; 24]> = c
        .values
        .chunks_exact(24)
        .map(|row| {
            std::array::from_fn(|k| {
                let x = row[k] as f64 * root;
                assert!((x - x.round()).abs() < 1e-5, "a coordinate {x} of a minimal vector ×√8 is not an integer");
                x.round() as i32
            })
        })
        .collect();
    assert!(lattice.iter().all(|v| v.iter().map(|x| x * x).sum::<i32>() == 32));
    let mut state = 0x5eed_u64;
    let mut next = || {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let sample: Vec<usize> = (0..1500).map(|_| (next() % lattice.len() as u64) as usize).collect();
    let mut counts = [0u64; 33];
    for &i in &sample {
        let a = &lattice[i];
        for (j, b) in lattice.iter().enumerate() {
            let ip: i32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            if j != i {
                counts[ip.unsigned_abs() as usize] += 1;
            } else {
                assert_eq!(ip, 32);
            }
        }
    }
    let mut cosines = Cosines::default();
    for (ip, &n) in counts.iter().enumerate() {
        if n > 0 {
            cosines.add(ip as f64 / 32.0);
        }
    }
    cosines.check("leech", &[0.0, 0.25, 0.5], 0.5);
    assert_eq!(c.max_abs_cos, 0.5);
    check_pass(&c);
}

#[test]
fn every_name_builds_and_the_errors_say_what_to_write() {
    for name in CONSTRUCTIONS {
        let c = construct(name, None).unwrap();
        assert_eq!(c.name, *name);
        assert!(!c.description.is_empty() && !c.source.is_empty());
    }
    let err = construct("d4", None).map(|c| c.rows).unwrap_err();
    assert_eq!(err, ConstructionError::Unknown { name: "d4".into() });
    for name in CONSTRUCTIONS {
        assert!(err.to_string().contains(name), "{err}");
    }
    let err = construct("leech", Some(23)).map(|c| c.rows).unwrap_err();
    assert_eq!(err, ConstructionError::DimBelowNative { name: "leech", dim: 23, native: 24 });
    assert!(err.to_string().contains("--dim 24"), "{err}");
    let largest = MAX_BYTES / (120 * 4);
    assert!(
        matches!(construct("e8", Some(usize::MAX)), Err(ConstructionError::TooLarge { largest: l, .. }) if l == largest)
    );
    let err = construct("e8", Some(largest as usize + 1)).map(|c| c.rows).unwrap_err();
    assert!(err.to_string().contains(&format!("--dim {largest} or less")), "{err}");
}

#[test]
fn the_kerdock_demo_is_the_64_dimensional_bases_in_f32() {
    assert!(DEMOS.iter().any(|(name, _)| *name == "kerdock-64"));
    let (file, bytes) = demo("kerdock-64").unwrap();
    assert_eq!(file, "demo-kerdock-64.safetensors");
    let report = run_job(vec![(&file, bytes)], None, AnalysisConfig::default()).unwrap().report(0.0).unwrap();
    assert_eq!((report.rows, report.dim, report.dtype.as_str(), report.tensor.as_str()), (2112, 64, "F32", EMBEDDING));
    assert!(report.exact);
    let expected = check_pass(&construct("kerdock", Some(64)).unwrap());
    assert_eq!((report.mu, report.sigma), (expected.mu, expected.sigma));
}

#[test]
fn the_cli_writes_a_construction_that_it_reads_back() {
    let dir = std::env::temp_dir().join(format!("orthoscope-constructions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kerdock-256.safetensors");
    let cli = env!("CARGO_BIN_EXE_orthoscope");
    let out = std::process::Command::new(cli)
        .args(["generate"])
        .arg(&path)
        .args(["--construction", "kerdock", "--dim", "256"])
        .output()
        .expect("orthoscope runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = std::process::Command::new(cli).args(["analyze", "--json"]).arg(&path).output().expect("orthoscope runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((report.rows, report.dim, report.dtype.as_str()), (33024, 256, "F32"));
    assert!(report.exact);
    // A construction with --kind is refused, and so is an unknown one, with the names to write.
    let out = std::process::Command::new(cli)
        .args(["generate"])
        .arg(dir.join("x.safetensors"))
        .args(["--construction", "e8", "--kind", "random-init"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = std::process::Command::new(cli)
        .args(["generate"])
        .arg(dir.join("x.safetensors"))
        .args(["--construction", "d4"])
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("equiangular-276"));
    let _ = std::fs::remove_dir_all(&dir);
}
