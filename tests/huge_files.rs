//! Huge files: a safetensors shard larger than 4 GiB with the embedding stored past the
//! 4 GiB mark, analysed by the CLI. The file is **sparse** (`orthoscope-fixtures generate-sparse`): 5 GiB long,
//! but only its header and the embedding at its end are written, so the test needs a few MB of disk.
//! It checks that ε equals the one of the same matrix in a small ordinary file, that the reader
//! touches only the header and the embedding's bytes, and prints the CLI's wall time and peak RSS
//! (asserting only a generous bound: timings are never asserted).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use orthoscope::fixtures::recording::{bytes_read, Recording};
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Origin};
use orthoscope::read::format::set::read_model_set;
use orthoscope::read::locate::choose_in_set;
use orthoscope::read::source::{ByteSource, FileSource};
use orthoscope::run::report::ToReport;
use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_orthoscope");
/// The fixture writers (`generate-sparse`) are a binary of their own, never shipped.
const FIXTURE_CLI: &str = env!("CARGO_BIN_EXE_orthoscope-fixtures");
const EMBED: &str = "model.embed_tokens.weight";
const GIB: u64 = 1 << 30;
const ROWS: u64 = 4096;
const DIM: u64 = 256;

/// A temporary directory removed on drop (also when an assertion fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("orthoscope-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run_cli(args: &[&str]) -> String {
    let bin = if args.first() == Some(&"generate-sparse") { FIXTURE_CLI } else { CLI };
    let out = Command::new(bin).args(args).output().expect("run orthoscope");
    assert!(out.status.success(), "orthoscope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// `orthoscope analyze FILE --json` → (report, wall ms, peak RSS in bytes if measured). Peak RSS comes
/// from `/usr/bin/time -v` when present, else from polling the child's VmHWM in /proc.
fn analyze_measured(file: &Path) -> (Value, f64, Option<u64>) {
    let file = file.to_str().expect("UTF-8 path");
    let started = Instant::now();
    let (stdout, rss) = if Path::new("/usr/bin/time").exists() {
        let out = Command::new("/usr/bin/time")
            .args(["-v", CLI, "analyze", file, "--json"])
            .output()
            .expect("run /usr/bin/time");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "orthoscope analyze {file}: {stderr}");
        let kb = stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
            .and_then(|v| v.trim().parse::<u64>().ok());
        (out.stdout, kb.map(|k| k * 1024))
    } else {
        let mut child = Command::new(CLI)
            .args(["analyze", file, "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("run orthoscope");
        let status_path = format!("/proc/{}/status", child.id());
        let mut hwm = None;
        let mut stdout = child.stdout.take().expect("stdout");
        let reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stdout, &mut v);
            v
        });
        loop {
            if let Ok(s) = std::fs::read_to_string(&status_path) {
                let kb = s
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
                hwm = kb.map(|k| k * 1024).max(hwm);
            }
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let status = child.wait().expect("wait");
        assert!(status.success(), "orthoscope analyze {file} failed");
        (reader.join().expect("reader"), hwm)
    };
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let report: Value = serde_json::from_slice(&stdout).expect("report JSON");
    (report, ms, rss)
}

fn f(report: &Value, key: &str) -> f64 {
    report[key].as_f64().unwrap_or_else(|| panic!("report.{key} missing: {report}"))
}

#[test]
fn five_gib_sparse_shard_with_the_embedding_past_4_gib() {
    let dir = TempDir::new("huge");
    let huge = dir.0.join("huge-5gib.safetensors");
    let small = dir.0.join("small.safetensors");
    let (rows, dim) = (ROWS.to_string(), DIM.to_string());
    let common = ["--rows", rows.as_str(), "--dim", dim.as_str(), "--dtype", "BF16", "--seed", "3"];

    let t = Instant::now();
    let said = run_cli(&[&["generate-sparse", huge.to_str().unwrap(), "--size-gib", "5"][..], &common[..]].concat());
    let generate_ms = t.elapsed().as_secs_f64() * 1000.0;
    run_cli(&[&["generate", small.to_str().unwrap()][..], &common[..]].concat());

    let meta = std::fs::metadata(&huge).expect("generated file");
    assert_eq!(meta.len(), 5 * GIB);
    let on_disk = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
    println!("{}; generated in {generate_ms:.0} ms; {} bytes on disk", said.trim(), on_disk);
    if on_disk >= 100_000_000 {
        println!("SKIPPED: {} does not keep holes ({on_disk} bytes on disk for a sparse 5 GiB file)", dir.0.display());
        return;
    }

    // The layout: the embedding ends the file and starts past 4 GiB, after a hole of "padding"
    // tensors whose sizes the reader accepts.
    let source = FileSource::open(&huge).expect("open");
    let refs: [&dyn ByteSource; 1] = [&source];
    let set = read_model_set(&refs).expect("header reads");
    let (info, _) = choose_in_set(&set, None).expect("embedding chosen");
    assert_eq!(info.name, EMBED);
    assert_eq!(info.shape, vec![ROWS, DIM]);
    assert_eq!(info.byte_range, (5 * GIB - ROWS * DIM * 2, 5 * GIB));
    assert!(info.byte_range.0 > 4 * GIB, "embedding at {:?}", info.byte_range);
    let header_end = 8 + {
        let mut b = [0u8; 8];
        source.read_at(0, &mut b).unwrap();
        u64::from_le_bytes(b)
    };

    // Only the header and the embedding's bytes are ever read (the library path the CLI takes).
    let recording = Recording::new(FileSource::open(&huge).expect("open"));
    let reads = recording.reads();
    let refs: [&dyn ByteSource; 1] = [&recording];
    let set = read_model_set(&refs).expect("header reads");
    let (info, reason) = choose_in_set(&set, None).expect("embedding chosen");
    let origin =
        Origin { file: set.files[0].clone(), format: set.format.clone(), tensor_reason: reason, ..Origin::default() };
    let lib_report = Analysis::new(Box::new(recording), info.clone(), origin, AnalysisConfig::default())
        .expect("analysis set up")
        .run()
        .expect("analysis runs")
        .report(0.0)
        .expect("report");
    let total = bytes_read(&reads);
    let reads: Vec<(u64, u64)> = reads.borrow().iter().map(|r| (r.start, r.end)).collect();
    for &(a, b) in reads.iter() {
        let in_header = b <= header_end;
        let in_embedding = a >= info.byte_range.0 && b <= info.byte_range.1;
        assert!(
            in_header || in_embedding,
            "read {a}..{b} is neither header (..{header_end}) nor embedding {:?}",
            info.byte_range
        );
    }
    println!(
        "library pass: {} reads, {total} bytes (header {header_end} B + embedding {} B)",
        reads.len(),
        ROWS * DIM * 2
    );

    // The CLI on the huge file gives the small file's answer.
    let (want, small_ms, _) = analyze_measured(&small);
    let (got, huge_ms, rss) = analyze_measured(&huge);
    assert_eq!(got["tensor"], EMBED);
    assert_eq!(got["rows"].as_u64(), Some(ROWS));
    assert_eq!(got["dim"].as_u64(), Some(DIM));
    assert_eq!(got["exact"], Value::Bool(true));
    assert_eq!(got["pairs"].as_u64(), Some(ROWS * (ROWS - 1) / 2));
    for key in ["epsilon", "mu", "sigma"] {
        assert!((f(&got, key) - f(&want, key)).abs() < 1e-12, "{key}: huge {} small {}", f(&got, key), f(&want, key));
    }
    assert!((lib_report.epsilon - f(&want, "epsilon")).abs() < 1e-12);
    let rss_text = rss.map_or("not measured".to_string(), |b| format!("{:.1} MB", b as f64 / 1e6));
    println!(
        "CLI analyze: 5 GiB sparse file {huge_ms:.0} ms (report {:.0} ms), small file {small_ms:.0} ms; peak RSS {rss_text}; ε = {}",
        f(&got, "timing_ms"),
        f(&got, "epsilon")
    );
    if let Some(bytes) = rss {
        assert!(bytes < 1 << 30, "peak RSS {bytes} B: the CLI must not hold the file");
    }
}
