//! One answer per file (issue 54, rule 1): crafted files that say one thing twice are read as
//! the format's reference reader reads them, or refused where reference readers disagree.
//!
//! - a pickled state dict that sets one name twice: the last tensor (CPython's dict, so
//!   `torch.load`);
//! - an `.npy` header that repeats a key (or spells it with an escape): the last value
//!   (`ast.literal_eval`, so NumPy);
//! - an ONNX initializer whose `external_data` repeats location, offset and length: the last ones
//!   (`onnx.load`);
//! - a zip with two members of one name: refused (Python's `zipfile` takes the last, a first-match
//!   lookup the first);
//! - a zip member whose local header names another file: refused, as Python's `zipfile` refuses it.
//!
//! Every file is written here. Each answer is also checked against the reference reader run on the
//! same bytes: CPython's own `pickle` and `zipfile`, NumPy and `onnx` from the venv of
//! scripts/oracle_venv.sh. Where no Python can be run the oracle part says why and is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use orthoscope::fixtures::writers::{npy_bytes, npz_bytes, zip_bytes, ZipMember};
use orthoscope::read::format::zip::read_entries;
use orthoscope::read::format::{read_model, FormatError, ModelInfo};
use orthoscope::read::source::SliceSource;
use serde_json::Value as Json;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The oracle venv's python, or why there is none (printed by each test that goes without it).
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

/// Runs `script` with `args` under `python`; its stdout as JSON on success, else its stderr.
fn run_python(python: &Path, script: &str, args: &[&Path]) -> Result<Json, String> {
    let out = Command::new(python).arg("-c").arg(script).args(args).output().expect("the oracle's python starts");
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).expect("the oracle prints JSON"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A fresh scratch folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ambiguous-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(name: &str, bytes: &[u8]) -> Result<ModelInfo, FormatError> {
    read_model(&SliceSource::new(name, bytes.to_vec()), 0)
}

fn f32s(bytes: &[u8]) -> Vec<f64> {
    bytes.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect()
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn json_f64s(v: &Json) -> Vec<f64> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

fn json_u64s(v: &Json) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

// ---------------------------------------------------------------------------------------------
// 1. A pickled state dict that sets one name twice.

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

/// Loads `archive/data.pkl` of a torch zip with CPython's own unpickler (the zip read by
/// `zipfile`), torch's globals standing in as plain functions: `[[name, storage key, shape], …]`
/// in the state dict's order.
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
fn a_state_dict_that_sets_a_name_twice_gives_the_last_tensor() {
    let s0 = f32_bytes((0..6).map(|i| i as f32));
    let s1 = f32_bytes((0..8).map(|i| 100.0 + i as f32));
    let s2 = f32_bytes((0..12).map(|i| -(i as f32)));
    let storages: [(&str, &[u8]); 3] = [("0", &s0), ("1", &s1), ("2", &s2)];

    // SETITEMS of an OrderedDict, then SETITEM of the same name again.
    let mut by_setitem = Pickle::default();
    by_setitem.op(b"\x80\x02").global("collections", "OrderedDict").op(b")R(");
    by_setitem.str("embed.weight").tensor("0", &[2, 3]).str("norm.weight").tensor("1", &[8]).op(b"u");
    by_setitem.str("embed.weight").tensor("2", &[4, 3]).op(b"s.");
    // An OrderedDict built from a list of pairs that repeats the name, then updated by SETITEMS
    // that repeats it again.
    let mut by_pairs = Pickle::default();
    by_pairs.op(b"\x80\x02").global("collections", "OrderedDict").op(b"(]((");
    by_pairs.str("embed.weight").tensor("1", &[2, 4]).op(b"t(").str("norm.weight").tensor("1", &[8]).op(b"t(");
    by_pairs.str("embed.weight").tensor("0", &[3, 2]).op(b"tetR(");
    by_pairs.str("embed.weight").tensor("2", &[4, 3]).op(b"u.");

    let dir = scratch("pickle");
    for (case, pickle) in [("setitem", by_setitem.0), ("pairs", by_pairs.0)] {
        let bytes = torch_zip(pickle, &storages);
        let info = read(&format!("{case}.pt"), &bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        let ours: Vec<(String, Vec<u8>, Vec<u64>)> = info
            .tensors
            .iter()
            .map(|t| {
                (t.name.clone(), bytes[t.byte_range.0 as usize..t.byte_range.1 as usize].to_vec(), t.shape.clone())
            })
            .collect();
        let want = vec![
            ("embed.weight".to_string(), s2.clone(), vec![4, 3]),
            ("norm.weight".to_string(), s1.clone(), vec![8]),
        ];
        assert_eq!(ours, want, "{case}: the tensor of a name set twice is the last one set, in the first one's place");

        let path = dir.join(format!("{case}.pt"));
        std::fs::write(&path, &bytes).unwrap();
        match stdlib_python() {
            Ok(py) => {
                let oracle = run_python(&py, TORCH_ORACLE, &[&path]).unwrap_or_else(|e| panic!("{case}: oracle: {e}"));
                let theirs: Vec<(String, Vec<u8>, Vec<u64>)> = oracle
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|row| {
                        let key = row[1].as_str().unwrap();
                        let data = storages.iter().find(|(k, _)| *k == key).unwrap().1.to_vec();
                        (row[0].as_str().unwrap().to_string(), data, json_u64s(&row[2]))
                    })
                    .collect();
                assert_eq!(ours, theirs, "{case}: CPython's unpickler reads another state dict");
            }
            Err(why) => eprintln!("oracle skipped (CPython's pickle): {why}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// 2. An `.npy` header that repeats a key.

/// A version 1.0 `.npy` of `header` (padded as numpy pads it) and `data`.
fn npy_with_header(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

const NUMPY_ORACLE: &str = r#"
import json, sys
import numpy as np
a = np.load(sys.argv[1])
print(json.dumps({"shape": list(a.shape), "dtype": a.dtype.str, "values": a.ravel().astype(float).tolist()}))
"#;

#[test]
fn an_npy_header_that_repeats_a_key_means_its_last_value() {
    let data = f32_bytes((0..20).map(|i| i as f32 * 0.5));
    let headers = [
        ("repeated", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'shape': (5, 4), }"),
        ("escaped", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'sh\\x61pe': (5, 4), }"),
        ("descr-twice", "{'descr': '<f8', 'fortran_order': False, 'shape': (5, 4), 'descr': '<f4', }"),
    ];
    let dir = scratch("npy");
    for (case, header) in headers {
        let bytes = npy_with_header(header, &data);
        let info = read(&format!("{case}.npy"), &bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        let t = &info.tensors[0];
        assert_eq!(t.shape, vec![5, 4], "{case}: {header}");
        assert_eq!(t.dtype.name(), "F32", "{case}");
        let values = f32s(&bytes[t.byte_range.0 as usize..t.byte_range.1 as usize]);
        assert_eq!(values, f32s(&data), "{case}");

        let path = dir.join(format!("{case}.npy"));
        std::fs::write(&path, &bytes).unwrap();
        match venv_python() {
            Ok(py) => {
                let oracle = run_python(py, NUMPY_ORACLE, &[&path]).unwrap_or_else(|e| panic!("{case}: numpy: {e}"));
                assert_eq!(json_u64s(&oracle["shape"]), t.shape, "{case}: numpy's shape");
                assert_eq!(oracle["dtype"], "<f4", "{case}: numpy's dtype");
                assert_eq!(json_f64s(&oracle["values"]), values, "{case}: numpy's values");
            }
            Err(why) => eprintln!("oracle skipped (numpy): {why}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// 3. An ONNX initializer whose external_data repeats its keys.

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn field_varint(out: &mut Vec<u8>, number: u64, v: u64) {
    varint(out, number << 3);
    varint(out, v);
}

fn field_bytes(out: &mut Vec<u8>, number: u64, bytes: &[u8]) {
    varint(out, (number << 3) | 2);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A `ModelProto` whose graph has one float32 initializer `w` of `dims`, stored externally with
/// the `external_data` entries `entries` in order.
fn onnx_external(dims: &[u64], entries: &[(&str, &str)]) -> Vec<u8> {
    let mut tensor = Vec::new();
    for &d in dims {
        field_varint(&mut tensor, 1, d);
    }
    field_varint(&mut tensor, 2, 1);
    field_bytes(&mut tensor, 8, b"w");
    for (k, v) in entries {
        let mut entry = Vec::new();
        field_bytes(&mut entry, 1, k.as_bytes());
        field_bytes(&mut entry, 2, v.as_bytes());
        field_bytes(&mut tensor, 13, &entry);
    }
    field_varint(&mut tensor, 14, 1);
    let mut graph = Vec::new();
    field_bytes(&mut graph, 2, b"g");
    field_bytes(&mut graph, 5, &tensor);
    let mut opset = Vec::new();
    field_varint(&mut opset, 2, 17);
    let mut model = Vec::new();
    field_varint(&mut model, 1, 8);
    field_bytes(&mut model, 7, &graph);
    field_bytes(&mut model, 8, &opset);
    model
}

const ONNX_ORACLE: &str = r#"
import json, sys
import onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
w = m.graph.initializer[0]
a = numpy_helper.to_array(w)
print(json.dumps({"shape": list(a.shape), "values": a.ravel().astype(float).tolist()}))
"#;

#[test]
fn an_onnx_initializer_whose_external_data_repeats_its_keys_means_the_last_ones() {
    let first = f32_bytes((0..16).map(|i| 1000.0 + i as f32));
    let second = f32_bytes((0..16).map(|i| i as f32 * 0.25));
    let entries = [
        ("location", "first.bin"),
        ("offset", "0"),
        ("length", "40"),
        ("location", "second.bin"),
        ("offset", "16"),
        ("length", "24"),
    ];
    let model = onnx_external(&[2, 3], &entries);
    let info = read("model.onnx", &model).unwrap();
    let t = &info.tensors[0];
    assert_eq!((t.name.as_str(), t.shape.clone(), t.byte_range), ("w", vec![2, 3], (16, 40)));
    assert_eq!(info.external.len(), 1);
    assert_eq!((info.external[0].tensor.as_str(), info.external[0].location.as_str()), ("w", "second.bin"));
    let values = f32s(&second[16..40]);

    let dir = scratch("onnx");
    let path = dir.join("model.onnx");
    std::fs::write(&path, &model).unwrap();
    std::fs::write(dir.join("first.bin"), &first).unwrap();
    std::fs::write(dir.join("second.bin"), &second).unwrap();
    match venv_python() {
        Ok(py) => {
            let oracle = run_python(py, ONNX_ORACLE, &[&path]).unwrap_or_else(|e| panic!("onnx: {e}"));
            assert_eq!(json_u64s(&oracle["shape"]), t.shape, "onnx's shape");
            assert_eq!(json_f64s(&oracle["values"]), values, "onnx.load reads other bytes");
        }
        Err(why) => eprintln!("oracle skipped (onnx): {why}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// 4 and 5. Zips: two members of one name; a local header that names another file.

/// What CPython's `zipfile` makes of `name` in the archive: the names it lists, and the bytes
/// (length) it reads for the name, or its refusal.
const ZIPFILE_ORACLE: &str = r#"
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = z.namelist()
try:
    out = {"names": names, "read": len(z.read(sys.argv[2]))}
except zipfile.BadZipFile as e:
    out = {"names": names, "refused": str(e)}
print(json.dumps(out))
"#;

fn zipfile_oracle(dir: &Path, file: &str, bytes: &[u8], member: &str) -> Option<Json> {
    let path = dir.join(file);
    std::fs::write(&path, bytes).unwrap();
    match stdlib_python() {
        Ok(py) => Some(run_python(&py, ZIPFILE_ORACLE, &[&path, Path::new(member)]).expect("zipfile oracle runs")),
        Err(why) => {
            eprintln!("oracle skipped (CPython's zipfile): {why}");
            None
        }
    }
}

/// A torch zip with one tensor `embed.weight` of storage `0`, whose members are `extra` added.
fn torch_members(extra: Vec<ZipMember>) -> Vec<ZipMember> {
    let mut pickle = Pickle::default();
    pickle.op(b"\x80\x02").global("collections", "OrderedDict").op(b")R");
    pickle.str("embed.weight").tensor("0", &[2, 3]).op(b"s.");
    let mut members = vec![ZipMember { name: "archive/data.pkl".into(), data: pickle.0, deflate: false }];
    members.extend(extra);
    members.push(ZipMember { name: "archive/version".into(), data: b"3\n".to_vec(), deflate: false });
    members
}

fn member(name: &str, data: Vec<u8>) -> ZipMember {
    ZipMember { name: name.into(), data, deflate: false }
}

#[test]
fn a_zip_with_two_members_of_one_name_is_refused() {
    let small = f32_bytes((0..6).map(|i| i as f32));
    let large = f32_bytes((0..12).map(|i| -(i as f32)));
    let npy = |rows: u64| npy_bytes(1, "<f4", false, &[rows, 3], &f32_bytes((0..rows * 3).map(|i| i as f32)));
    let cases = [
        (
            "torch.pt",
            zip_bytes(
                &torch_members(vec![member("archive/data/0", small.clone()), member("archive/data/0", large.clone())]),
                false,
                64,
            ),
            "archive/data/0",
            large.len(),
        ),
        (
            "arrays.npz",
            npz_bytes(&[("x.npy", npy(2)), ("y.npy", npy(3)), ("x.npy", npy(4))], false),
            "x.npy",
            npy(4).len(),
        ),
    ];
    let dir = scratch("zip-duplicate");
    for (file, bytes, name, last_len) in cases {
        let entries = read_entries(&SliceSource::new(file, bytes.clone())).unwrap();
        let offsets: Vec<u64> = entries.iter().filter(|e| e.name == name).map(|e| e.local_header_offset).collect();
        assert_eq!(offsets.len(), 2);
        let err = read(file, &bytes).unwrap_err();
        match &err {
            FormatError::ZipDuplicateEntry { file: f, entry, first_offset, second_offset } => {
                assert_eq!(
                    (f.as_str(), entry.as_str(), *first_offset, *second_offset),
                    (file, name, offsets[0], offsets[1])
                )
            }
            other => panic!("{file}: {other:?}"),
        }
        let message = err.to_string();
        for part in [name, &offsets[0].to_string(), &offsets[1].to_string(), "twice"] {
            assert!(message.contains(part), "{file}: {message}");
        }
        // CPython's zipfile lists both and reads the last: a first-match reader reads the other.
        if let Some(oracle) = zipfile_oracle(&dir, file, &bytes, name) {
            let names = oracle["names"].as_array().unwrap();
            assert_eq!(names.iter().filter(|n| *n == name).count(), 2, "{file}: {oracle}");
            assert_eq!(oracle["read"].as_u64(), Some(last_len as u64), "{file}: zipfile reads the last member");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `bytes` with the local header name of the member whose local header is at `offset` replaced
/// by `local` (of the same length).
fn rename_local(mut bytes: Vec<u8>, offset: u64, local: &str) -> Vec<u8> {
    let at = offset as usize;
    let len = u16::from_le_bytes([bytes[at + 26], bytes[at + 27]]) as usize;
    assert_eq!(len, local.len());
    bytes[at + 30..at + 30 + len].copy_from_slice(local.as_bytes());
    bytes
}

#[test]
fn a_zip_member_whose_local_header_names_another_file_is_refused() {
    let data = f32_bytes((0..6).map(|i| i as f32));
    let npy = npy_bytes(1, "<f4", false, &[2, 3], &data);
    let cases = [
        (
            "torch.pt",
            zip_bytes(&torch_members(vec![member("archive/data/0", data.clone())]), false, 64),
            "archive/data/0",
            "archive/data/9",
        ),
        ("arrays.npz", npz_bytes(&[("x.npy", npy.clone()), ("y.npy", npy)], false), "y.npy", "z.npy"),
    ];
    let dir = scratch("zip-local-name");
    for (file, bytes, name, local) in cases {
        let entries = read_entries(&SliceSource::new(file, bytes.clone())).unwrap();
        let offset = entries.iter().find(|e| e.name == name).unwrap().local_header_offset;
        let bytes = rename_local(bytes, offset, local);
        let err = read(file, &bytes).unwrap_err();
        match &err {
            FormatError::ZipLocalNameMismatch { file: f, entry, local: l, offset: o } => {
                assert_eq!((f.as_str(), entry.as_str(), l.as_str(), *o), (file, name, local, offset))
            }
            other => panic!("{file}: {other:?}"),
        }
        let message = err.to_string();
        for part in [name, local, &offset.to_string()] {
            assert!(message.contains(part), "{file}: {message}");
        }
        if let Some(oracle) = zipfile_oracle(&dir, file, &bytes, name) {
            let refused = oracle["refused"].as_str().unwrap_or_else(|| panic!("{file}: zipfile read it: {oracle}"));
            assert!(refused.contains("differ") && refused.contains(local), "{file}: {refused}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
