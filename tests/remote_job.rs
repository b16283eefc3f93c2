//! A job for a model opened by URL (`JobOptions::tensor_bytes_only`): it must read the headers and
//! the embedding's rows and nothing else (every byte read over HTTP is downloaded), while the
//! embedding's statistics stay those of the ordinary job.

use std::rc::Rc;

use orthoscope::fixtures::recording::Recording;
use orthoscope::fixtures::synth::{random_init, safetensors_bytes, trained_like, TensorSpec};
use orthoscope::pass::analysis::AnalysisConfig;
use orthoscope::read::format::DType;
use orthoscope::read::source::SliceSource;
use orthoscope::run::job::{Job, JobOptions};
use orthoscope::Report;

const EMBED: &str = "model.embed_tokens.weight";

/// A large tensor before the embedding, then the embedding, then `output` (if given).
fn model(output: Option<(usize, usize, u64)>) -> Vec<u8> {
    let (rows, dim) = (3000, 64);
    let mut tensors = vec![
        TensorSpec::matrix("model.layers.0.mlp.up_proj.weight", DType::F32, 1024, 256, &random_init(1024, 256, 9)),
        TensorSpec::matrix(EMBED, DType::F32, rows, dim, &trained_like(rows, dim, 1)),
    ];
    if let Some((r, d, seed)) = output {
        tensors.push(TensorSpec::matrix("lm_head.weight", DType::F32, r, d, &trained_like(r, d, seed)));
    }
    safetensors_bytes(&tensors)
}

fn run(bytes: Vec<u8>, options: JobOptions) -> (Report, Vec<(u64, u64)>) {
    let source = Recording::new(SliceSource::new("model.safetensors", bytes));
    let reads = source.reads();
    let (job, _) = Job::open_with(vec![Rc::new(source)], None, AnalysisConfig::default(), options)
        .unwrap_or_else(|e| panic!("open: {e}"));
    let report = job.run().and_then(|j| j.report(0.0)).unwrap_or_else(|e| panic!("run: {e}"));
    let reads = reads.borrow().iter().map(|r| (r.start, r.end)).collect();
    (report, reads)
}

/// Header end and the byte range of a tensor, from the file's own header.
fn layout(bytes: &[u8], name: &str) -> (u64, (u64, u64)) {
    let source = SliceSource::new("m.safetensors", bytes.to_vec());
    let info = orthoscope::read::format::read_model(&source, 0).unwrap_or_else(|e| panic!("{e}"));
    let t = info.tensors.iter().find(|t| t.name == name).unwrap_or_else(|| panic!("no {name}"));
    let header_end = u64::from_le_bytes(bytes[..8].try_into().unwrap_or_default()) + 8;
    (header_end, t.byte_range)
}

const URL_ONLY: JobOptions = JobOptions { tensor_bytes_only: true, gpu: None };

#[test]
fn only_the_header_and_the_embedding_are_read() {
    let bytes = model(Some((3000, 64, 2)));
    let (header_end, embedding) = layout(&bytes, EMBED);
    let (_, output) = layout(&bytes, "lm_head.weight");
    let (report, reads) = run(bytes.clone(), URL_ONLY);
    for &(s, e) in &reads {
        let in_header = e <= header_end;
        let in_embedding = s >= embedding.0 && e <= embedding.1;
        assert!(
            in_header || in_embedding,
            "read {s}..{e} is neither header (..{header_end}) nor embedding {embedding:?}"
        );
    }
    assert!(reads.iter().any(|&(s, _)| s >= embedding.0), "the embedding was read");
    assert_eq!(report.unembedding, None, "no sampled unembedding pass");
    assert_eq!(report.tied, None);
    assert!(report.tied_evidence.contains("not compared"), "{}", report.tied_evidence);

    // The ordinary job reads the output matrix (sample and tied rows) and gets the same ε.
    let (full, full_reads) = run(bytes, JobOptions::default());
    assert!(full_reads.iter().any(|&(s, e)| s >= output.0 && e <= output.1));
    assert!(full.unembedding.is_some());
    assert_eq!(full.tied, Some(false));
    assert_eq!(report.epsilon, full.epsilon);
    assert_eq!(report.mu, full.mu);
    assert_eq!(report.sigma, full.sigma);
}

#[test]
fn what_the_header_decides_about_tying_is_still_said() {
    let (report, _) = run(model(None), URL_ONLY);
    assert_eq!(report.tied, Some(true), "{}", report.tied_evidence);
    let (report, reads) = run(model(Some((1000, 64, 2))), URL_ONLY);
    assert_eq!(report.tied, Some(false), "{}", report.tied_evidence);
    assert!(report.tied_evidence.contains("shape [1000, 64]"), "{}", report.tied_evidence);
    let bytes = model(Some((1000, 64, 2)));
    let (_, output) = layout(&bytes, "lm_head.weight");
    assert!(reads.iter().all(|&(_, e)| e <= output.0), "nothing of the output matrix is read");
}
