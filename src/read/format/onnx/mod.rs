//! ONNX exports (`.onnx`): the graph's initializers as tensors, read lazily.
//!
//! An ONNX file is one protobuf `ModelProto` (onnx/onnx.proto) with no magic. A protobuf crate
//! would decode whole messages, `raw_data` included, into memory; a multi-GB export's weights must
//! never be read at header time. So this is a small wire-format reader over
//! [`ByteSource::read_at`] in windows: a length-delimited field that is not needed is skipped by
//! moving past it, and a tensor's `raw_data` is recorded as its offset and length only.
//!
//! What is read: `ModelProto.graph` (7) → `GraphProto.node` (1), `initializer` (5), `input` (11);
//! in a `TensorProto`, dims (1), data_type (2), float_data (4), int32_data (5), int64_data (7),
//! name (8), raw_data (9), double_data (10), uint64_data (11), external_data (13), data_location
//! (14). Nesting is fixed by that path (model → graph → node/tensor → attribute/entry): no message
//! of unknown type is entered, so a hostile file cannot nest deeper.
//!
//! Tensors whose values are fixed-width little-endian bytes in one run (`raw_data`, packed
//! `float_data` of a FLOAT, packed `double_data` of a DOUBLE, external data) get that run as their
//! `byte_range`. Values in `int32_data`/`int64_data`/`uint64_data` are varints (one to ten bytes
//! each), so a row cannot be found by its offset: such tensors are listed as [`DType::Other`] and
//! never read (an FLOAT16 embedding stored that way is refused with that reason, rather than
//! decoding the whole field into memory).
//!
//! Tensors in an external file ([`ModelInfo::external`]) carry their byte range in that file (an
//! `external_data` key given twice means its last value, as `onnx.load` reads it);
//! [`super::set`] resolves the file among those given. An int8/uint8 initializer dequantised by a
//! `DequantizeLinear` with a per-tensor scale becomes [`DType::I8Affine`]/[`DType::U8Affine`].
//! The input embedding is also found by the graph: the data input of the `Gather` that reads
//! `input_ids` ([`ModelInfo::embedding_hint`]).

// The crate-wide `FormatError` is large (see gguf.rs); errors end a read, so size does not matter.
#![allow(clippy::result_large_err)]

mod quantised;
mod wire;

use std::collections::{BTreeSet, HashMap};

use super::{DType, EmbeddingHint, ExternalData, FormatError, Layout, ModelInfo, TensorInfo};
use crate::read::source::ByteSource;
use quantised::dequantized;
use wire::{Reader, Value};

/// Longest string (a name, an op type, an external-data entry) read.
pub const MAX_STRING_BYTES: u64 = 64 << 10;
/// Most dimensions a tensor may have.
pub const MAX_DIMS: u64 = 64;
/// Most initializers a graph may hold (the largest exports hold a few thousand).
pub const MAX_TENSORS: u64 = 1_000_000;
/// Most nodes a graph may hold (a 70B decoder exports about 10⁵).
pub const MAX_NODES: u64 = 10_000_000;
/// Most inputs or outputs of one node.
pub const MAX_NODE_IO: u64 = 65_536;
/// Most graph inputs.
pub const MAX_GRAPH_INPUTS: u64 = 65_536;
/// Most `external_data` entries of one tensor (the format defines four keys).
pub const MAX_EXTERNAL_ENTRIES: u64 = 64;
/// Most bytes of a scale or zero point read at header time.
pub const MAX_SMALL_BYTES: u64 = 1 << 20;

/// Shape ops or casts followed from `input_ids` to its Gather.
const MAX_ID_HOPS: usize = 4;

/// The graph input whose `Gather` reads the input embedding.
pub const INPUT_IDS: &str = "input_ids";

/// `ModelProto` / `GraphProto` / `NodeProto` / `TensorProto` field numbers (onnx.proto).
mod field {
    pub const MODEL_GRAPH: u64 = 7;
    pub const GRAPH_NODE: u64 = 1;
    pub const GRAPH_INITIALIZER: u64 = 5;
    pub const GRAPH_INPUT: u64 = 11;
    pub const NODE_INPUT: u64 = 1;
    pub const NODE_OUTPUT: u64 = 2;
    pub const NODE_OP_TYPE: u64 = 4;
    pub const NODE_ATTRIBUTE: u64 = 5;
    pub const NODE_DOMAIN: u64 = 7;
    pub const ATTR_NAME: u64 = 1;
    pub const ATTR_I: u64 = 3;
    pub const VALUE_INFO_NAME: u64 = 1;
    pub const TENSOR_DIMS: u64 = 1;
    pub const TENSOR_DATA_TYPE: u64 = 2;
    pub const TENSOR_FLOAT_DATA: u64 = 4;
    pub const TENSOR_INT32_DATA: u64 = 5;
    pub const TENSOR_INT64_DATA: u64 = 7;
    pub const TENSOR_NAME: u64 = 8;
    pub const TENSOR_RAW_DATA: u64 = 9;
    pub const TENSOR_DOUBLE_DATA: u64 = 10;
    pub const TENSOR_UINT64_DATA: u64 = 11;
    pub const TENSOR_EXTERNAL_DATA: u64 = 13;
    pub const TENSOR_DATA_LOCATION: u64 = 14;
    pub const ENTRY_KEY: u64 = 1;
    pub const ENTRY_VALUE: u64 = 2;
}

/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: u64 = 1;

/// ONNX `TensorProto.DataType` → a dtype, and its ONNX name for messages.
fn onnx_dtype(code: u64) -> (DType, &'static str) {
    match code {
        1 => (DType::F32, "FLOAT"),
        2 => (DType::U8, "UINT8"),
        3 => (DType::I8, "INT8"),
        4 => (DType::U16, "UINT16"),
        5 => (DType::I16, "INT16"),
        6 => (DType::I32, "INT32"),
        7 => (DType::I64, "INT64"),
        9 => (DType::Bool, "BOOL"),
        10 => (DType::F16, "FLOAT16"),
        11 => (DType::F64, "DOUBLE"),
        12 => (DType::U32, "UINT32"),
        13 => (DType::U64, "UINT64"),
        16 => (DType::BF16, "BFLOAT16"),
        // FLOAT8E4M3FN is OCP E4M3 with no infinities, what F8E4M3 decodes.
        17 => (DType::F8E4M3, "FLOAT8E4M3FN"),
        19 => (DType::F8E5M2, "FLOAT8E5M2"),
        0 => (DType::Other("UNDEFINED".into()), "UNDEFINED"),
        8 => (DType::Other("STRING".into()), "STRING"),
        14 => (DType::Other("COMPLEX64".into()), "COMPLEX64"),
        15 => (DType::Other("COMPLEX128".into()), "COMPLEX128"),
        18 => (DType::Other("FLOAT8E4M3FNUZ".into()), "FLOAT8E4M3FNUZ"),
        20 => (DType::Other("FLOAT8E5M2FNUZ".into()), "FLOAT8E5M2FNUZ"),
        21 => (DType::Other("UINT4".into()), "UINT4"),
        22 => (DType::Other("INT4".into()), "INT4"),
        23 => (DType::Other("FLOAT4E2M1".into()), "FLOAT4E2M1"),
        _ => (DType::Other(format!("ONNX type {code}")), "an unknown type"),
    }
}

/// Whether the first bytes of a file start like a `ModelProto`: field 1 `ir_version` as a varint
/// (tag `0x08`), as every writer puts it first.
pub fn plausible(head: &[u8]) -> bool {
    head.first() == Some(&0x08)
}

/// Where a tensor's values are in the file.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Payload {
    None,
    Raw {
        start: u64,
        end: u64,
    },
    /// Packed `float_data` (little-endian f32) or `double_data` (f64).
    Fixed {
        field: &'static str,
        start: u64,
        end: u64,
    },
    /// Packed varints (`int32_data`, `int64_data`, `uint64_data`).
    Varints {
        field: &'static str,
        start: u64,
        end: u64,
    },
    /// Values not in one run: unpacked, or in several fields.
    Scattered {
        field: &'static str,
    },
}

/// One `TensorProto` as read.
struct RawTensor {
    name: String,
    at: u64,
    dims: Vec<u64>,
    data_type: u64,
    payload: Payload,
    external: Vec<(String, String)>,
    data_location: u64,
}

impl RawTensor {
    /// The value of an `external_data` key: the last entry of that key, as `onnx.load` reads it
    /// (`ExternalDataInfo` sets an attribute per entry in order, so a repeated key's last value
    /// stands).
    fn external(&self, key: &str) -> Option<&str> {
        self.external.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// One `NodeProto`, for the ops the embedding rules look at.
struct Node {
    inputs: Vec<String>,
    outputs: Vec<String>,
    op_type: String,
    domain: String,
    axis: Option<i64>,
    block_size: Option<i64>,
}

/// Ops whose nodes are kept: the embedding's Gather, its dequantisation, and the shape ops that
/// may stand between `input_ids` and the Gather.
const KEPT_OPS: &[&str] =
    &["Gather", "DequantizeLinear", "GatherBlockQuantized", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten"];

#[derive(Default)]
struct Graph {
    tensors: Vec<RawTensor>,
    nodes: Vec<Node>,
    inputs: Vec<String>,
    node_count: u64,
}

/// Reads the initializers, nodes and inputs of an ONNX model's graph; see the module documentation.
pub fn read_onnx(source: &dyn ByteSource, file: usize) -> Result<ModelInfo, FormatError> {
    let mut r = Reader::new(source);
    let len = r.len;
    if len == 0 {
        return Err(FormatError::TooShort { file: r.file(), format: "ONNX", len });
    }
    let first = r.byte(0, "the first field")?;
    if !plausible(&[first]) {
        return Err(r.malformed(
            0,
            "the first field",
            format!("an ONNX model starts with ir_version (field 1, tag 0x08), this file with byte 0x{first:02x}"),
        ));
    }
    let mut graph = Graph::default();
    let mut have_graph = false;
    let mut pos = 0;
    while let Some(f) = r.field(&mut pos, len, "ModelProto")? {
        if f.number == field::MODEL_GRAPH {
            let (start, end) = r.message(&f, "ModelProto.graph")?;
            // Repeated message fields merge (protobuf); a second graph adds to the first.
            read_graph(&mut r, start, end, &mut graph)?;
            have_graph = true;
        }
    }
    if !have_graph {
        return Err(FormatError::OnnxNoGraph { file: r.file() });
    }
    build(&mut r, graph, file)
}

fn read_graph(r: &mut Reader, start: u64, end: u64, g: &mut Graph) -> Result<(), FormatError> {
    let mut pos = start;
    while let Some(f) = r.field(&mut pos, end, "GraphProto")? {
        match f.number {
            field::GRAPH_NODE => {
                g.node_count += 1;
                r.over(f.at, "nodes in the graph", g.node_count, MAX_NODES)?;
                let (s, e) = r.message(&f, "GraphProto.node")?;
                if let Some(node) = read_node(r, s, e)? {
                    g.nodes.push(node);
                }
            }
            field::GRAPH_INITIALIZER => {
                r.over(f.at, "initializers in the graph", g.tensors.len() as u64 + 1, MAX_TENSORS)?;
                let (s, e) = r.message(&f, "GraphProto.initializer")?;
                g.tensors.push(read_tensor(r, f.at, s, e)?);
            }
            field::GRAPH_INPUT => {
                r.over(f.at, "graph inputs", g.inputs.len() as u64 + 1, MAX_GRAPH_INPUTS)?;
                let (s, e) = r.message(&f, "GraphProto.input")?;
                let mut p = s;
                let mut name = String::new();
                while let Some(f) = r.field(&mut p, e, "ValueInfoProto")? {
                    if f.number == field::VALUE_INFO_NAME {
                        name = r.string(&f, "a graph input's name")?;
                    }
                }
                g.inputs.push(name);
            }
            _ => {}
        }
    }
    Ok(())
}

fn read_node(r: &mut Reader, start: u64, end: u64) -> Result<Option<Node>, FormatError> {
    let mut node = Node {
        inputs: vec![],
        outputs: vec![],
        op_type: String::new(),
        domain: String::new(),
        axis: None,
        block_size: None,
    };
    let mut pos = start;
    while let Some(f) = r.field(&mut pos, end, "NodeProto")? {
        match f.number {
            field::NODE_INPUT => {
                r.over(f.at, "inputs of a node", node.inputs.len() as u64 + 1, MAX_NODE_IO)?;
                node.inputs.push(r.string(&f, "a node input")?);
            }
            field::NODE_OUTPUT => {
                r.over(f.at, "outputs of a node", node.outputs.len() as u64 + 1, MAX_NODE_IO)?;
                node.outputs.push(r.string(&f, "a node output")?);
            }
            field::NODE_OP_TYPE => node.op_type = r.string(&f, "a node's op_type")?,
            field::NODE_DOMAIN => node.domain = r.string(&f, "a node's domain")?,
            field::NODE_ATTRIBUTE => {
                let (s, e) = r.message(&f, "NodeProto.attribute")?;
                let (mut p, mut name, mut i) = (s, String::new(), None);
                while let Some(f) = r.field(&mut p, e, "AttributeProto")? {
                    match (f.number, &f.value) {
                        (field::ATTR_NAME, _) => name = r.string(&f, "an attribute's name")?,
                        // int64, two's complement in a varint.
                        (field::ATTR_I, Value::Varint(v)) => i = Some(*v as i64),
                        _ => {}
                    }
                }
                match name.as_str() {
                    "axis" => node.axis = i,
                    "block_size" => node.block_size = i,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(KEPT_OPS.contains(&node.op_type.as_str()).then_some(node))
}

fn read_tensor(r: &mut Reader, at: u64, start: u64, end: u64) -> Result<RawTensor, FormatError> {
    let mut t = RawTensor {
        name: String::new(),
        at,
        dims: vec![],
        data_type: 0,
        payload: Payload::None,
        external: vec![],
        data_location: 0,
    };
    let mut pos = start;
    let set = |t: &mut RawTensor, field: &'static str, p: Payload| {
        t.payload = if t.payload == Payload::None { p } else { Payload::Scattered { field } };
    };
    while let Some(f) = r.field(&mut pos, end, "TensorProto")? {
        let what = "a tensor's dims";
        match (f.number, &f.value) {
            (field::TENSOR_DIMS, Value::Varint(v)) => {
                r.over(f.at, "dimensions of a tensor", t.dims.len() as u64 + 1, MAX_DIMS)?;
                t.dims.push(dim(r, f.at, *v)?);
            }
            (field::TENSOR_DIMS, Value::Len { start, end }) => {
                let (mut p, e) = (*start, *end);
                while p < e {
                    let at = p;
                    let v = r.varint(&mut p, e, what)?;
                    r.over(at, "dimensions of a tensor", t.dims.len() as u64 + 1, MAX_DIMS)?;
                    t.dims.push(dim(r, at, v)?);
                }
            }
            (field::TENSOR_DATA_TYPE, Value::Varint(v)) => t.data_type = *v,
            (field::TENSOR_NAME, _) => t.name = r.string(&f, "a tensor's name")?,
            (field::TENSOR_RAW_DATA, Value::Len { start, end }) => {
                set(&mut t, "raw_data", Payload::Raw { start: *start, end: *end })
            }
            (field::TENSOR_FLOAT_DATA, Value::Len { start, end }) => {
                set(&mut t, "float_data", Payload::Fixed { field: "float_data", start: *start, end: *end })
            }
            (field::TENSOR_DOUBLE_DATA, Value::Len { start, end }) => {
                set(&mut t, "double_data", Payload::Fixed { field: "double_data", start: *start, end: *end })
            }
            (n @ (field::TENSOR_INT32_DATA | field::TENSOR_INT64_DATA | field::TENSOR_UINT64_DATA), v) => {
                let name = match n {
                    field::TENSOR_INT32_DATA => "int32_data",
                    field::TENSOR_INT64_DATA => "int64_data",
                    _ => "uint64_data",
                };
                match v {
                    Value::Len { start, end } => {
                        set(&mut t, name, Payload::Varints { field: name, start: *start, end: *end })
                    }
                    _ => t.payload = Payload::Scattered { field: name },
                }
            }
            (field::TENSOR_FLOAT_DATA, _) => t.payload = Payload::Scattered { field: "float_data" },
            (field::TENSOR_DOUBLE_DATA, _) => t.payload = Payload::Scattered { field: "double_data" },
            (field::TENSOR_EXTERNAL_DATA, _) => {
                r.over(f.at, "external_data entries of a tensor", t.external.len() as u64 + 1, MAX_EXTERNAL_ENTRIES)?;
                let (s, e) = r.message(&f, "TensorProto.external_data")?;
                let (mut p, mut key, mut value) = (s, String::new(), String::new());
                while let Some(f) = r.field(&mut p, e, "StringStringEntryProto")? {
                    match f.number {
                        field::ENTRY_KEY => key = r.string(&f, "an external_data key")?,
                        field::ENTRY_VALUE => value = r.string(&f, "an external_data value")?,
                        _ => {}
                    }
                }
                t.external.push((key, value));
            }
            (field::TENSOR_DATA_LOCATION, Value::Varint(v)) => t.data_location = *v,
            _ => {}
        }
    }
    Ok(t)
}

/// A dimension: an int64 that must not be negative in an initializer.
fn dim(r: &Reader, at: u64, v: u64) -> Result<u64, FormatError> {
    if (v as i64) < 0 {
        return Err(r.malformed(at, "a tensor's dims", format!("negative dimension {}", v as i64)));
    }
    Ok(v)
}

/// How a tensor's values were found, for the DequantizeLinear step.
struct Built {
    info: TensorInfo,
    /// Where its values are in the .onnx itself (`None` for external data).
    inline: Option<Payload>,
    data_type: u64,
}

fn build(r: &mut Reader, graph: Graph, file: usize) -> Result<ModelInfo, FormatError> {
    let mut built: Vec<Built> = Vec::with_capacity(graph.tensors.len());
    let mut external = Vec::new();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for t in &graph.tensors {
        if !seen.insert(t.name.as_str()) {
            return Err(FormatError::OnnxBadTensor {
                file: r.file(),
                tensor: t.name.clone(),
                offset: t.at,
                reason: "is listed twice among the graph's initializers".into(),
            });
        }
        let b = tensor_info(r, t, file)?;
        if b.inline.is_none() {
            external.push(ExternalData {
                tensor: t.name.clone(),
                location: t.external("location").unwrap_or_default().to_string(),
            });
        }
        built.push(b);
    }
    let index: HashMap<&str, usize> = graph.tensors.iter().enumerate().map(|(i, t)| (t.name.as_str(), i)).collect();

    // DequantizeLinear: an int8/uint8 initializer with a per-tensor scale is decoded as affine.
    let mut notes: HashMap<String, String> = HashMap::new();
    for n in graph.nodes.iter().filter(|n| n.op_type == "DequantizeLinear") {
        let Some(&x) = n.inputs.first().and_then(|x| index.get(x.as_str())) else { continue };
        let Some(b) = built.get(x) else { continue };
        if !matches!(b.info.dtype, DType::I8 | DType::U8) {
            continue;
        }
        let verdict = dequantized(r, n, &graph, &index, &built, x);
        let Some(b) = built.get_mut(x) else { continue };
        match verdict {
            Ok((dtype, note)) => {
                b.info.dtype = dtype;
                notes.insert(b.info.name.clone(), note);
            }
            Err(why) => {
                let q = if b.info.dtype == DType::I8 { "int8" } else { "uint8" };
                b.info.dtype =
                    DType::Other(format!("{q} with DequantizeLinear {why}, which Orthoscope does not read yet"));
            }
        }
    }
    for n in graph.nodes.iter().filter(|n| n.op_type == "GatherBlockQuantized") {
        let Some(b) = n.inputs.first().and_then(|x| index.get(x.as_str())).and_then(|&x| built.get_mut(x)) else {
            continue;
        };
        b.info.dtype = DType::Other(
            "4-bit blocks of com.microsoft GatherBlockQuantized, a layout Orthoscope does not read yet".into(),
        );
    }

    let embedding_hint = gather_of_input_ids(&graph, &index).map(|(x, via_dq)| {
        let mut reason = "the data input of the Gather that reads input_ids".to_string();
        if via_dq {
            reason = format!("the initializer that DequantizeLinear turns into {reason}");
        }
        if let Some(note) = notes.get(x) {
            reason = format!("{reason} ({note})");
        }
        EmbeddingHint { tensor: x.to_string(), reason }
    });
    Ok(ModelInfo {
        format: "onnx".to_string(),
        tensors: built.into_iter().map(|b| b.info).collect(),
        embedding_hint,
        external,
        ..ModelInfo::default()
    })
}

fn tensor_info(r: &mut Reader, t: &RawTensor, file: usize) -> Result<Built, FormatError> {
    let bad =
        |reason: String| FormatError::OnnxBadTensor { file: r.file(), tensor: t.name.clone(), offset: t.at, reason };
    let (mut dtype, onnx_name) = onnx_dtype(t.data_type);
    let elems = t.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let Some(elems) = elems else {
        return Err(bad(format!("dims {:?} overflow an element count", t.dims)));
    };
    let expected = dtype.bytes_for(elems);
    let info = |dtype: DType, byte_range: (u64, u64)| TensorInfo {
        name: t.name.clone(),
        dtype,
        shape: t.dims.clone(),
        byte_range,
        file,
        layout: Layout::Contiguous,
    };
    let check = |len: u64, field: &str| match expected {
        Some(e) if e != len => {
            Err(bad(format!("dims {:?} of {onnx_name} need {e} bytes but its {field} holds {len}", t.dims)))
        }
        _ => Ok(()),
    };
    if t.data_location == EXTERNAL {
        let get = |key: &str| t.external(key);
        let location = get("location").ok_or_else(|| bad("is stored externally but names no location".into()))?;
        check_location(location).map_err(|why| FormatError::OnnxExternalPath {
            file: r.file(),
            tensor: t.name.clone(),
            location: location.to_string(),
            why,
        })?;
        let number = |key: &str| -> Result<Option<u64>, FormatError> {
            get(key)
                .map(|v| {
                    v.trim().parse::<u64>().map_err(|_| bad(format!("external_data {key} '{v}' is not a byte count")))
                })
                .transpose()
        };
        let offset = number("offset")?.unwrap_or(0);
        let length = match (number("length")?, expected) {
            (Some(l), _) => {
                check(l, "external_data length")?;
                l
            }
            (None, Some(e)) => e,
            (None, None) => return Err(bad(format!("is stored externally as {onnx_name} with no length"))),
        };
        let end = offset.checked_add(length).ok_or_else(|| bad("external_data offset + length overflows".into()))?;
        return Ok(Built { info: info(dtype, (offset, end)), inline: None, data_type: t.data_type });
    }
    let range = match t.payload {
        Payload::None if elems == 0 => (0, 0),
        Payload::None => {
            dtype = DType::Other(format!("{onnx_name} with no data"));
            (0, 0)
        }
        Payload::Raw { start, end } => {
            check(end - start, "raw_data")?;
            (start, end)
        }
        Payload::Fixed { field, start, end } => {
            let fits = (field == "float_data" && t.data_type == 1) || (field == "double_data" && t.data_type == 11);
            if fits {
                check(end - start, field)?;
            } else {
                dtype = DType::Other(format!("{onnx_name} in {field}"));
            }
            (start, end)
        }
        Payload::Varints { field, start, end } => {
            // Varints have no fixed width: a row has no offset, so the tensor is listed, not read.
            dtype = DType::Other(format!("{onnx_name} as varints in {field} (re-save the model with raw_data)"));
            (start, end)
        }
        Payload::Scattered { field } => {
            dtype = DType::Other(format!("{onnx_name} in several or unpacked {field} fields"));
            (0, 0)
        }
    };
    Ok(Built { info: info(dtype, range), inline: Some(t.payload), data_type: t.data_type })
}

/// Why an external-data location cannot be opened: it must name a file given beside the model,
/// never one outside its folder.
fn check_location(location: &str) -> Result<(), String> {
    if location.is_empty() {
        return Err("it is empty".into());
    }
    let bytes = location.as_bytes();
    if location.starts_with(['/', '\\'])
        || (bytes.get(1) == Some(&b':') && bytes.first().is_some_and(u8::is_ascii_alphabetic))
    {
        return Err("it is an absolute path".into());
    }
    if location.split(['/', '\\']).any(|part| part == "..") {
        return Err("it leads out of the model's folder (..)".into());
    }
    Ok(())
}

/// The initializer that the `Gather` reading `input_ids` (directly or through shape ops) takes as
/// its data, and whether a `DequantizeLinear` stands between them.
fn gather_of_input_ids<'g>(graph: &'g Graph, index: &HashMap<&str, usize>) -> Option<(&'g str, bool)> {
    if !graph.inputs.iter().any(|i| i == INPUT_IDS) || index.contains_key(INPUT_IDS) {
        return None;
    }
    let mut ids: BTreeSet<&str> = BTreeSet::from([INPUT_IDS]);
    // Shape ops and casts of input_ids are still the ids; a few hops at most.
    for _ in 0..MAX_ID_HOPS {
        let before = ids.len();
        for n in graph
            .nodes
            .iter()
            .filter(|n| matches!(n.op_type.as_str(), "Cast" | "Reshape" | "Unsqueeze" | "Squeeze" | "Flatten"))
        {
            if n.inputs.first().is_some_and(|i| ids.contains(i.as_str())) {
                if let Some(o) = n.outputs.first() {
                    ids.insert(o.as_str());
                }
            }
        }
        if ids.len() == before {
            break;
        }
    }
    let producer = |out: &str| graph.nodes.iter().find(|n| n.outputs.first().is_some_and(|o| o == out));
    let gathers = graph.nodes.iter().filter(|n| {
        matches!(n.op_type.as_str(), "Gather" | "GatherBlockQuantized")
            && n.inputs.get(1).is_some_and(|i| ids.contains(i.as_str()))
    });
    for g in gathers {
        let Some(data) = g.inputs.first() else { continue };
        if index.contains_key(data.as_str()) {
            return Some((data.as_str(), false));
        }
        if let Some(dq) = producer(data).filter(|n| n.op_type == "DequantizeLinear") {
            if let Some(x) = dq.inputs.first().filter(|x| index.contains_key(x.as_str())) {
                return Some((x.as_str(), true));
            }
        }
    }
    None
}
