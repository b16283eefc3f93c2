//! ggml block decoding against gguf-py, llama.cpp's own Python package (tests/oracle/ggml_oracle.py):
//! random blocks of every type it dequantises, value by value, and an embedding of each type through
//! the whole job against numpy's f64 statistics. The oracle must run: a missing venv fails the test.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use orthoscope::fixtures::writers::{gguf_bytes, gguf_model_seeded, GgufTensor};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::pass::kernel::Precision;
use orthoscope::read::format::gguf::GGML_TYPES;
use orthoscope::read::format::{ggml, DType};
use orthoscope::read::source::{ByteSource, SliceSource};
use orthoscope::run::job::Job;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The oracle venv's python (created by scripts/oracle_venv.sh on first use).
fn python() -> PathBuf {
    let out = Command::new("bash")
        .arg("scripts/oracle_venv.sh")
        .current_dir(ROOT)
        .output()
        .expect("bash runs scripts/oracle_venv.sh");
    assert!(out.status.success(), "scripts/oracle_venv.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("orthoscope-ggml-oracle-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn oracle(cmd: &str) -> (PathBuf, Vec<String>) {
    let dir = scratch(cmd);
    let out = Command::new(python())
        .arg("tests/oracle/ggml_oracle.py")
        .arg(cmd)
        .arg(&dir)
        .current_dir(ROOT)
        .output()
        .expect("oracle python runs");
    assert!(out.status.success(), "ggml_oracle.py {cmd} failed: {}", String::from_utf8_lossy(&out.stderr));
    let types = std::fs::read_to_string(dir.join("types.txt")).unwrap().lines().map(str::to_string).collect();
    (dir, types)
}

fn dtype_named(name: &str) -> DType {
    GGML_TYPES.iter().map(|(_, d)| d.clone()).find(|d| d.name() == name).unwrap_or_else(|| panic!("no DType {name}"))
}

/// Ulps between two finite f32 (+0 and −0 are 0 apart).
fn ulps(a: f32, b: f32) -> u64 {
    let ord = |x: f32| {
        let i = x.to_bits() as i32;
        if i < 0 {
            -((i & 0x7fff_ffff) as i64)
        } else {
            i as i64
        }
    };
    ord(a).abs_diff(ord(b))
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Largest difference in ulps allowed per type. Every decoder does ggml's float operations in
/// ggml's order, and gguf-py's numpy does the same ones, so all are bit for bit.
fn ulp_tolerance(_name: &str) -> u64 {
    0
}

#[test]
fn every_block_decodes_as_gguf_py_dequantises_it() {
    let (dir, types) = oracle("blocks");
    assert!(types.len() >= 22, "{types:?}");
    let mut report = Vec::new();
    for name in &types {
        let dtype = dtype_named(name);
        assert!(ggml::is_quantised(&dtype), "{name}");
        let raw = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        let want = read_f32(&dir.join(format!("{name}.f32")));
        let mut got = vec![f32::NAN; want.len()];
        ggml::dequantize(&dtype, &raw, &mut got).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut worst = (0u64, 0usize);
        let mut bit_equal = 0usize;
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(g.is_finite(), "{name}[{i}] = {g}");
            bit_equal += usize::from(g.to_bits() == w.to_bits());
            let u = ulps(g, w);
            if u > worst.0 {
                worst = (u, i);
            }
        }
        assert!(
            worst.0 <= ulp_tolerance(name),
            "{name}: element {} is {} here, {} in gguf-py ({} ulps)",
            worst.1,
            got[worst.1],
            want[worst.1],
            worst.0
        );
        report.push(format!("{name}: {} values, max {} ulps, {bit_equal} bit-equal", want.len(), worst.0));
    }
    println!("{}", report.join("\n"));
    let _ = std::fs::remove_dir_all(dir);
}

#[derive(serde::Deserialize)]
struct Expected {
    rows_used: u64,
    pairs: u64,
    mu: f64,
    sigma: f64,
    epsilon: f64,
    how: String,
}

#[test]
fn an_embedding_of_every_type_gives_numpys_statistics_over_gguf_pys_rows() {
    let (rows, dim) = (300u64, 512u64);
    let (dir, types) = oracle("embedding");
    let mut report = Vec::new();
    for name in &types {
        let dtype = dtype_named(name);
        let data = std::fs::read(dir.join(format!("{name}.q"))).unwrap();
        let want: Expected =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap()).unwrap();
        let file = gguf_bytes(3, &[GgufTensor::new("token_embd.weight", dtype, &[rows, dim], data)], &[]);
        let sources = vec![Rc::new(SliceSource::new(format!("{name}.gguf"), file)) as Rc<dyn ByteSource>];
        let config = AnalysisConfig { precision: Precision::F64, ..Default::default() };
        let (job, _) = Job::open(sources, None, config).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = job.run().unwrap().report(0.0).unwrap();
        assert!(got.exact, "{name}");
        assert_eq!((got.rows_used, got.pairs, got.rows_dropped_zero), (want.rows_used, want.pairs, 1), "{name}");
        let err = (got.mu - want.mu).abs().max((got.sigma - want.sigma).abs()).max((got.epsilon - want.epsilon).abs());
        assert!(
            err < 1e-9,
            "{name}: μ {} σ {} ε {} vs numpy μ {} σ {} ε {}",
            got.mu,
            got.sigma,
            got.epsilon,
            want.mu,
            want.sigma,
            want.epsilon
        );
        report
            .push(format!("{name} ({}): μ {:.6} σ {:.6}, largest difference {err:.1e}", want.how, want.mu, want.sigma));
    }
    println!("{}", report.join("\n"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_committed_grids_are_what_the_generator_writes() {
    let dir = scratch("grids");
    let out = dir.join("ggml_grids");
    let status = Command::new(python())
        .arg("scripts/gen_ggml_grids.py")
        .arg("--out")
        .arg(&out)
        .current_dir(ROOT)
        .status()
        .expect("generator runs");
    assert!(status.success());
    let committed_dir = Path::new(ROOT).join("src/read/format/ggml_grids");
    let names = |d: &Path| {
        let mut v: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&out), names(&committed_dir), "the generator writes the committed files");
    for name in names(&out) {
        let generated = std::fs::read_to_string(out.join(&name)).unwrap();
        let committed = std::fs::read_to_string(committed_dir.join(&name)).unwrap();
        assert!(
            generated == committed,
            "src/read/format/ggml_grids/{name} differs from scripts/gen_ggml_grids.py's output; regenerate it"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn generated_gguf_models_of_the_new_types_read_as_finite_rows() {
    // What `orthoscope-fixtures generate-gguf --type IQ4_XS` (or any type without a quantiser) writes.
    let (rows, dim) = (64usize, 512usize);
    let values = vec![0.01f32; rows * dim];
    for (_, dtype) in GGML_TYPES.iter().filter(|(id, _)| matches!(id, 16..=23 | 29 | 34 | 35 | 39)) {
        let parts = gguf_model_seeded(&values, &values, rows, dim, dtype, 1, 7).unwrap_or_else(|| panic!("{dtype}"));
        let sources: Vec<Rc<dyn ByteSource>> =
            parts.into_iter().map(|b| Rc::new(SliceSource::new("m.gguf", b)) as Rc<dyn ByteSource>).collect();
        let (job, _) = Job::open(sources, None, AnalysisConfig::default()).unwrap_or_else(|e| panic!("{dtype}: {e}"));
        let report = job.run().unwrap().report(0.0).unwrap();
        assert_eq!((report.dtype.as_str(), report.rows_used), (dtype.name(), rows as u64), "{dtype}");
        assert!(report.mu.is_finite() && report.sigma.is_finite(), "{dtype}");
    }
}

#[test]
fn ggml_type_ids_and_block_sizes_are_gguf_pys() {
    let out = Command::new(python())
        .args(["-c", "from gguf import GGML_QUANT_SIZES as S\nfor t, (b, n) in S.items(): print(t.name, int(t), b, n)"])
        .current_dir(ROOT)
        .output()
        .expect("oracle python runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<(String, u32, u64, u64)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[1].parse().unwrap(), f[2].parse().unwrap(), f[3].parse().unwrap())
        })
        .collect();
    for (id, dtype) in &GGML_TYPES {
        let (_, their_id, per_block, bytes) =
            theirs.iter().find(|t| t.0 == dtype.name()).unwrap_or_else(|| panic!("gguf-py has no {dtype}"));
        assert_eq!((id, dtype.block()), (their_id, Some((*per_block, *bytes))), "{dtype}");
    }
}
