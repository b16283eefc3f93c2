//! The pickle memo shares, never copies (issue 54: one answer per file; work linear in the file;
//! memory bounded before allocation).
//!
//! - a dict memoised and then changed through another reference is the changed dict, as in
//!   CPython (checked against CPython's own unpickler on the same bytes, from the venv of
//!   scripts/oracle_venv.sh, else `python3`);
//! - a list memoised and then appended to is likewise the one list;
//! - fetching one memoised string (1 MiB) N times, or setting one memoised tensor under N keys or N
//!   times under one key, costs work linear in N (opcodes, values charged, nodes written: counted,
//!   never timed), and the string's bytes are charged once whatever N is;
//! - a container that contains itself is refused with its offset.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use orthoscope::fixtures::writers::{zip_bytes, ZipMember};
use orthoscope::read::format::pickle::{parse, parse_with_stats, ParseStats, Value};
use orthoscope::read::format::{read_model, FormatError, ModelInfo};
use orthoscope::read::source::SliceSource;
use serde_json::Value as Json;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The oracle venv's python, or why there is none.
fn venv_python() -> &'static Result<PathBuf, String> {
    static PY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PY.get_or_init(|| {
        let out = Command::new("bash")
            .arg("scripts/oracle_venv.sh")
            .current_dir(ROOT)
            .output()
            .map_err(|e| format!("bash scripts/oracle_venv.sh could not run: {e}"))?;
        if !out.status.success() {
            return Err(format!("scripts/oracle_venv.sh failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    })
}

/// A python whose standard library is the oracle (pickle, zipfile): the venv's, else `python3`.
fn stdlib_python() -> Result<PathBuf, String> {
    if let Ok(py) = venv_python() {
        return Ok(py.clone());
    }
    let venv_why = venv_python().as_ref().err().cloned().unwrap_or_default();
    match Command::new("python3").arg("-c").arg("pass").status() {
        Ok(s) if s.success() => Ok(PathBuf::from("python3")),
        _ => Err(format!("no python3 on PATH, and {venv_why}")),
    }
}

fn run_python(python: &Path, script: &str, args: &[&Path]) -> Result<Json, String> {
    let out = Command::new(python).arg("-c").arg(script).args(args).output().expect("the oracle's python starts");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("the oracle prints JSON"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pickle-memo-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(name: &str, bytes: &[u8]) -> Result<ModelInfo, FormatError> {
    read_model(&SliceSource::new(name, bytes.to_vec()), 0)
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// Protocol-2 pickle opcodes, as `pickle` writes them.
#[derive(Default)]
struct Pickle(Vec<u8>);

impl Pickle {
    fn op(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.0.push(b'X');
        self.0.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.op(s.as_bytes())
    }
    fn global(&mut self, module: &str, name: &str) -> &mut Self {
        self.0.push(b'c');
        self.op(format!("{module}\n{name}\n").as_bytes())
    }
    fn int(&mut self, v: u32) -> &mut Self {
        self.0.push(b'J');
        self.op(&v.to_le_bytes())
    }
    /// `_rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), 0, shape,
    /// strides, False, OrderedDict())`, a contiguous float32 tensor.
    fn tensor(&mut self, key: &str, shape: &[u32]) -> &mut Self {
        let numel: u32 = shape.iter().product();
        self.global("torch._utils", "_rebuild_tensor_v2").op(b"((");
        self.str("storage").global("torch", "FloatStorage").str(key).str("cpu").int(numel).op(b"tQ").int(0);
        self.op(b"(");
        shape.iter().for_each(|&d| {
            self.int(d);
        });
        self.op(b"t(");
        let mut stride = 1;
        let strides: Vec<u32> = shape
            .iter()
            .rev()
            .map(|&d| {
                let s = stride;
                stride *= d;
                s
            })
            .collect();
        strides.iter().rev().for_each(|&s| {
            self.int(s);
        });
        self.op(b"t\x89").global("collections", "OrderedDict").op(b")Rt").op(b"R")
    }
}

/// A torch.save zip of `pickle` and float32 storages `archive/data/<key>`.
fn torch_zip(pickle: Vec<u8>, storages: &[(&str, &[u8])]) -> Vec<u8> {
    let mut members = vec![
        ZipMember { name: "archive/data.pkl".into(), data: pickle, deflate: false },
        ZipMember { name: "archive/byteorder".into(), data: b"little".to_vec(), deflate: false },
    ];
    for (key, data) in storages {
        members.push(ZipMember { name: format!("archive/data/{key}"), data: data.to_vec(), deflate: false });
    }
    members.push(ZipMember { name: "archive/version".into(), data: b"3\n".to_vec(), deflate: false });
    zip_bytes(&members, false, 64)
}

/// CPython's unpickler on `archive/data.pkl`, torch's globals standing in as plain functions:
/// `[[name, storage key, shape], …]` in the state dict's order.
const TORCH_ORACLE: &str = r#"
import collections, io, json, pickle, sys, zipfile
def rebuild(storage, offset, size, stride, *rest):
    return ("tensor", storage[2], list(size))
class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return rebuild
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch" and name.endswith("Storage"):
            return name
        raise pickle.UnpicklingError(f"{module}.{name}")
    def persistent_load(self, pid):
        return pid
data = zipfile.ZipFile(sys.argv[1]).read("archive/data.pkl")
state = Unpickler(io.BytesIO(data)).load()
print(json.dumps([[k, v[1], v[2]] for k, v in state.items()]))
"#;

#[test]
fn a_dict_changed_after_it_was_memoised_is_the_changed_dict() {
    let t1 = f32_bytes((0..6).map(|i| i as f32));
    let t2 = f32_bytes((0..12).map(|i| -(i as f32)));
    let storages: [(&str, &[u8]); 2] = [("0", &t1), ("1", &t2)];
    // EMPTY_DICT, MARK, key, T1, SETITEMS, BINPUT 0, MARK, key, T2, SETITEMS, POP, BINGET 0, STOP.
    let mut p = Pickle::default();
    p.op(b"\x80\x02}(").str("w").tensor("0", &[2, 3]).op(b"uq\x00(").str("w").tensor("1", &[4, 3]);
    p.op(b"u0h\x00.");
    let bytes = torch_zip(p.0, &storages);
    let info = read("mutated.pt", &bytes).unwrap();
    let ours: Vec<(String, Vec<u8>, Vec<u64>)> = info
        .tensors
        .iter()
        .map(|t| (t.name.clone(), bytes[t.byte_range.0 as usize..t.byte_range.1 as usize].to_vec(), t.shape.clone()))
        .collect();
    assert_eq!(ours, vec![("w".to_string(), t2.clone(), vec![4, 3])], "the memo is the dict itself, changed to T2");

    let path = scratch("mutated").join("mutated.pt");
    std::fs::write(&path, &bytes).unwrap();
    match stdlib_python() {
        Ok(py) => {
            let oracle = run_python(&py, TORCH_ORACLE, &[&path]).unwrap_or_else(|e| panic!("oracle: {e}"));
            let theirs: Vec<(String, String, Vec<u64>)> = oracle
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    let shape = row[2].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
                    (row[0].as_str().unwrap().to_string(), row[1].as_str().unwrap().to_string(), shape)
                })
                .collect();
            eprintln!("CPython's unpickler: {theirs:?}");
            assert_eq!(theirs, vec![("w".to_string(), "1".to_string(), vec![4, 3])], "CPython reads another dict");
        }
        Err(why) => eprintln!("oracle skipped (CPython's pickle): {why}"),
    }
}

#[test]
fn a_list_appended_to_after_it_was_memoised_is_the_one_list() {
    // l = [1]; memo 0 = l; a tuple (l,) memoised; l.append(2); the tuple is ([1, 2],).
    let v = parse("t.pkl", b"\x80\x02]q\x00K\x01ah\x00\x85q\x010h\x00K\x02a0h\x01.").unwrap();
    assert_eq!(v, Value::Tuple(vec![Value::List(vec![Value::Int(1), Value::Int(2)])]));
}

#[test]
fn a_container_that_contains_itself_is_refused_with_its_offset() {
    // l = []; l.append(l).
    let err = parse("t.pkl", b"\x80\x02]q\x00h\x00a.").unwrap_err();
    match err {
        FormatError::PickleMalformed { offset, ref reason, .. } => {
            assert_eq!(offset, 2, "{err}");
            assert!(reason.contains("contains itself"), "{err}");
        }
        other => panic!("{other}"),
    }
}

/// Asserts that `count(n)` for n = 10³, 10⁴, 10⁵ is exactly `a + b·n`, with `b` at most `per`.
fn assert_linear(what: &str, counts: [u64; 3], per: u64) {
    let (d1, d2) = (counts[1] - counts[0], counts[2] - counts[1]);
    assert_eq!(d2, 10 * d1, "{what}: {counts:?} is not linear in n");
    assert!(d1 <= per * 9_000, "{what}: {counts:?} grows more than {per} per n");
}

fn row(what: &str, stats: &[ParseStats; 3]) {
    for (n, s) in [1_000, 10_000, 100_000].iter().zip(stats) {
        eprintln!("{what} n={n}: {s:?}");
    }
}

#[test]
fn one_memoised_string_fetched_n_times_is_held_and_charged_once() {
    let big = "x".repeat(1 << 20);
    let stats: Vec<ParseStats> = [1_000usize, 10_000, 100_000]
        .iter()
        .map(|&n| {
            let mut p = Pickle::default();
            p.op(b"\x80\x02").str(&big).op(b"q\x000]");
            for _ in 0..n {
                p.op(b"h\x00a");
            }
            p.op(b".");
            let (v, stats) = parse_with_stats("t.pkl", &p.0).unwrap();
            let Value::List(items) = v else { panic!() };
            assert_eq!(items.len(), n);
            let (Value::Str(first), Value::Str(last)) = (&items[0], &items[n - 1]) else { panic!() };
            assert!(std::sync::Arc::ptr_eq(first, last), "the fetched strings are one string");
            stats
        })
        .collect();
    let stats: [ParseStats; 3] = stats.try_into().unwrap();
    row("string", &stats);
    assert!(stats.iter().all(|s| s.payload_bytes == stats[0].payload_bytes), "the string's bytes are charged once");
    assert_eq!(stats[0].payload_bytes, 1 << 20);
    assert!(stats.iter().all(|s| s.written_bytes == 0 && s.nodes == 2));
    assert_linear("opcodes", stats.map(|s| s.opcodes), 2);
    assert_linear("values charged", stats.map(|s| s.values), 1);
    assert_linear("nodes written", stats.map(|s| s.written), 1);
}

#[test]
fn one_memoised_tensor_set_under_n_keys_or_n_times_costs_linear_work() {
    let data = f32_bytes((0..6).map(|i| i as f32));
    for one_key in [false, true] {
        let what = if one_key { "tensor set n times under one key" } else { "tensor set under n keys" };
        let stats: Vec<ParseStats> = [1_000usize, 10_000, 100_000]
            .iter()
            .map(|&n| {
                let mut p = Pickle::default();
                p.op(b"\x80\x02}q\x00").tensor("0", &[2, 3]).op(b"q\x010");
                for i in 0..n {
                    p.str(&if one_key { "w".to_string() } else { format!("w{i:06}") }).op(b"h\x01s");
                }
                p.op(b".");
                let (_, stats) = parse_with_stats("t.pkl", &p.0).unwrap();
                let bytes = torch_zip(p.0, &[("0", &data)]);
                let info = read("m.pt", &bytes).unwrap();
                assert_eq!(info.tensors.len(), if one_key { 1 } else { n }, "{what}");
                assert!(info.tensors.iter().all(|t| t.shape == [2, 3]));
                stats
            })
            .collect();
        let stats: [ParseStats; 3] = stats.try_into().unwrap();
        row(what, &stats);
        assert_linear("opcodes", stats.map(|s| s.opcodes), 3);
        assert_linear("values charged", stats.map(|s| s.values), 2);
        assert_linear("nodes written", stats.map(|s| s.written), 2);
        assert_linear("bytes copied out", stats.map(|s| s.written_bytes), 64);
        assert_linear("payload bytes", stats.map(|s| s.payload_bytes), 8);
    }
}
