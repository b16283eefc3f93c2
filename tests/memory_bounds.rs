//! Memory bounded by the work: peak heap allocation, counted by a global allocator,
//! for inputs whose headers claim far more than their data; and the V×V route (`accumulate`) gives
//! the same μ, σ and spectrum as the Gram route. Sparse-autoencoder dictionaries at scale, from
//! files whose values are computed as they are read (never written or held): a million features
//! analysed exactly in O(d²) memory, and a decoder with features in its columns read by panels,
//! giving the ε of the same matrix stored by rows. The geometry of a tall matrix holds O(d²).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::rc::Rc;

use orthoscope::explain::geometry::{self, GeometryTiming};
use orthoscope::fixtures::corpus::corpus;
use orthoscope::fixtures::synth::{self, safetensors_bytes, TensorSpec};
use orthoscope::pass::accumulate::{gram_bytes, route_for, rows_bytes, PairAccumulator, Route, RowPairs};
use orthoscope::pass::analysis::{AnalysisConfig, Phase};
use orthoscope::pass::shares::{PassPartial, Share};
use orthoscope::pass::stats::GramMoments;
use orthoscope::read::matrix::{normalise_row, RowFate};
use orthoscope::read::source::{check_range, ByteSource, ReadError, SliceSource};
use orthoscope::run::error::ReportError;
use orthoscope::run::job::Job;
use orthoscope::run::report::ToReport;
use orthoscope::{Error, Report};

/// Counts the live heap bytes allocated by *this thread* and their high-water mark.
///
/// Per thread, because the test harness runs the other tests of this file on other threads at the
/// same time: global counters would add their fixtures to whatever is being measured (CI's runner
/// once saw 22 MB for a case that needs 2). `Job::run` works on the calling thread only, so the
/// thread's own count is the whole of the work's.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(n: usize) {
    // `try_with`: the allocator is also called while a thread's locals are being torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_add(isize::try_from(n).unwrap_or(isize::MAX));
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

fn shrank(n: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(isize::try_from(n).unwrap_or(isize::MAX))));
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are added, and
// the thread-locals are `const`-initialised `Cell`s, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The memory budget for any input whose embedding data is under 100 MB.
const BUDGET: usize = 600_000_000;

/// Runs `f` and returns its result and the peak bytes this thread allocated above what it held before.
fn peak_of<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|peak| peak.set(base));
    let out = f();
    let peak = PEAK.with(Cell::get);
    (out, usize::try_from(peak.saturating_sub(base)).unwrap_or(0))
}

/// A file that is a header followed by `len − header` zero bytes never held in memory: what a
/// header may claim, without the disk or RAM to back it.
struct ZeroTail {
    header: Vec<u8>,
    len: u64,
}

impl ByteSource for ZeroTail {
    fn name(&self) -> &str {
        "claims.safetensors"
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(self.name(), offset, buf.len() as u64, self.len)?;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = usize::try_from(offset).ok().and_then(|o| self.header.get(o + i)).copied().unwrap_or(0);
        }
        Ok(())
    }
}

fn run(sources: Vec<Rc<dyn ByteSource>>) -> Result<Report, ReportError> {
    let (job, _) = Job::open(sources, None, AnalysisConfig::default())?;
    job.run()?.report_with_geometry(0.0)
}

fn file(name: &str, tensors: &[TensorSpec]) -> Rc<dyn ByteSource> {
    Rc::new(SliceSource::new(name, safetensors_bytes(tensors)))
}

#[test]
fn embedding_and_lm_head_of_two_wide_rows_each_stay_small() {
    let d = 16384;
    let e = synth::trained_like(2, d, 3);
    let u = synth::random_init(2, d, 4);
    let source = file(
        "wide.safetensors",
        &[
            TensorSpec::matrix("model.embed_tokens.weight", orthoscope::read::format::DType::F32, 2, d, &e),
            TensorSpec::matrix("lm_head.weight", orthoscope::read::format::DType::F32, 2, d, &u),
        ],
    );
    let (report, peak) = peak_of(|| run(vec![source]));
    let report = report.expect("two rows of d = 16384 analyse");
    println!("embedding + lm_head, 2 × 16384 each: peak {peak} bytes, accumulator {} bytes", report.accumulator_bytes);
    assert!(peak < BUDGET, "peak {peak} bytes");
    // The row route: two f64 rows and s, not a 1 GiB Gram.
    assert_eq!(report.accumulator_bytes, rows_bytes(2, d));
    assert!(peak < 8_000_000, "peak {peak} bytes for 256 KiB of data");
    assert_eq!((report.rows_used, report.pairs, report.exact), (2, 1, true));
    let cos = cosine(&e[..d], &e[d..]);
    assert!((report.mu - cos).abs() < 1e-12, "μ {} vs the one cosine {cos}", report.mu);
    assert_eq!(report.sigma, 0.0);
    let un = report.unembedding.as_ref().expect("the lm_head is sampled");
    assert_eq!(un.rows_seen, 2);
    assert!((un.mu - cosine(&u[..d], &u[d..])).abs() < 1e-12);
    assert_eq!(report.tied, Some(false));
}

#[test]
fn a_header_claiming_gib_wide_rows_is_refused_before_allocating() {
    // Two tensors of 2 rows × 2²⁸ F32 (1 GiB per row) that the file's length covers: the tied check
    // would compare them row by row, the Gram would be 2⁵⁵ bytes.
    let wide: u64 = 1 << 28;
    let row_bytes = wide * 4;
    let json = format!(
        "{{\"model.embed_tokens.weight\":{{\"dtype\":\"F32\",\"shape\":[2,{wide}],\"data_offsets\":[0,{}]}},\
         \"lm_head.weight\":{{\"dtype\":\"F32\",\"shape\":[2,{wide}],\"data_offsets\":[{},{}]}}}}",
        2 * row_bytes,
        2 * row_bytes,
        4 * row_bytes
    );
    let mut header = (json.len() as u64).to_le_bytes().to_vec();
    header.extend_from_slice(json.as_bytes());
    let len = header.len() as u64 + 4 * row_bytes;
    let source: Rc<dyn ByteSource> = Rc::new(ZeroTail { header, len });
    let (result, peak) = peak_of(|| run(vec![source]));
    println!("header claiming 1 GiB-wide rows: peak {peak} bytes");
    assert!(matches!(result, Err(ReportError::Analysis(Error::DimTooLarge { dim, .. })) if dim == wide), "{result:?}");
    assert!(peak < 1_000_000, "peak {peak} bytes before the refusal");
}

#[test]
fn two_rows_of_d_16384_do_not_allocate_a_gram() {
    let d = 16384;
    let v = synth::random_init(2, d, 9);
    let source = file(
        "two.safetensors",
        &[TensorSpec::matrix("model.embed_tokens.weight", orthoscope::read::format::DType::BF16, 2, d, &v)],
    );
    let (report, peak) = peak_of(|| run(vec![source]));
    let report = report.expect("analyses");
    println!("two rows of d = 16384: peak {peak} bytes, accumulator {} bytes", report.accumulator_bytes);
    assert!(peak < BUDGET);
    assert!(peak < 4_000_000, "peak {peak} bytes");
    assert!(report.accumulator_bytes < gram_bytes(d) / 1000);
    // The geometry comes at every width; two rows make UUᵀ 2×2, so the spectrum is complete.
    let geometry = report.geometry.expect("geometry at d = 16384");
    assert!(geometry.eigenvalues_complete && geometry.eigenvalues.len() == d);
}

#[test]
fn a_wide_unembedding_is_sampled_within_the_embeddings_budget() {
    // Embedding 100 × 64 (Gram route, a few KiB) and an lm_head of 100 × 4096 (its 8192-row sample
    // would hold 100 rows of 32 KiB = 3.2 MB, more than the embedding's accumulator): the unembedding
    // keeps only as many rows as fit the embedding's bytes.
    let e = synth::random_init(100, 64, 1);
    let u = synth::random_init(100, 4096, 2);
    let dt = orthoscope::read::format::DType::F32;
    let source = file(
        "m.safetensors",
        &[
            TensorSpec::matrix("model.embed_tokens.weight", dt.clone(), 100, 64, &e),
            TensorSpec::matrix("lm_head.weight", dt, 100, 4096, &u),
        ],
    );
    let (job, opened) = Job::open(vec![source], None, AnalysisConfig::default()).expect("opens");
    assert_eq!(opened.unembedding.as_deref(), Some("lm_head.weight"));
    let report = job.run().expect("runs").report(0.0).expect("reports");
    let budget = report.accumulator_bytes;
    assert!(route_for(100, 64) == Route::Gram && budget == gram_bytes(64));
    // Fewer than 2 rows of 4096 fit in the embedding's ~17 KiB: no unembedding rather than more memory.
    assert!(rows_bytes(2, 4096) > budget);
    assert!(report.unembedding.is_none(), "{:?}", report.unembedding);
}

#[test]
fn the_worst_peak_over_the_whole_corpus_is_a_few_megabytes() {
    // The worst peak memory over the corpus, as one number: every malformed input of
    // `src/fixtures/corpus.rs`, opened and analysed as the CLI and the page do, heap counted from after its
    // bytes are in memory (the page reads them from a `File`; they are not the work's memory).
    let mut worst = (0usize, String::new());
    let mut measured = 0;
    for case in corpus() {
        let sources: Vec<Rc<dyn ByteSource>> = case
            .files
            .iter()
            .map(|(name, bytes)| Rc::new(SliceSource::new(name.clone(), bytes.clone())) as Rc<dyn ByteSource>)
            .collect();
        let data: usize = case.files.iter().map(|(_, b)| b.len()).sum();
        let (_, peak) = peak_of(|| run(sources));
        measured += 1;
        assert!(peak < BUDGET, "{}: peak {peak} bytes", case.name);
        // Every corpus file is under 2 MB: the work never needs more than a few MB, whatever a
        // header claims (the d = 16384 cases would need a 1 GiB Gram on the naive route).
        assert!(peak < 16_000_000, "{}: peak {peak} bytes for {data} bytes of files", case.name);
        if peak > worst.0 {
            worst = (peak, case.name.clone());
        }
    }
    println!("worst peak heap over {measured} corpus cases: {} bytes ({})", worst.0, worst.1);
    assert!(measured >= 40 && worst.0 > 0);
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum();
    let na: f64 = a.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|&x| x as f64 * x as f64).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// Unit rows of `values` (`rows × dim`), f64, padded as the pass keeps them.
fn unit_rows(values: &[f32], dim: usize) -> Vec<f64> {
    let d = orthoscope::pass::kernel::padded_dim(dim);
    let mut out = Vec::new();
    for row in values.chunks_exact(dim) {
        let at = out.len();
        out.resize(at + d, 0.0);
        if normalise_row(row, &mut out[at..]) != RowFate::Kept {
            out.truncate(at);
        }
    }
    out
}

fn both_routes(values: &[f32], dim: usize) -> (GramMoments, RowPairs) {
    let units = unit_rows(values, dim);
    let d = orthoscope::pass::kernel::padded_dim(dim);
    let mut gram = GramMoments::new(dim);
    let mut rows = RowPairs::new((units.len() / d) as u64, dim);
    for chunk in units.chunks(d * orthoscope::pass::kernel::MAX_CHUNK_ROWS) {
        gram.add_unit_rows(chunk);
        rows.add_unit_rows(chunk);
    }
    for _ in 0..units.len() / d {
        gram.counts.record(RowFate::Kept);
        rows.counts.record(RowFate::Kept);
    }
    (gram, rows)
}

#[test]
fn the_row_route_gives_the_grams_moments_and_spectrum() {
    let (v, dim) = (40, 200);
    let values = synth::class1_like(v, dim, 5);
    let (gram, rows) = both_routes(&values, dim);
    let (a, b) = (gram.moments().expect("40 rows"), rows.moments().expect("40 rows"));
    assert_eq!(a.pairs, b.pairs);
    assert!((a.mu - b.mu).abs() < 1e-12 && (a.sigma - b.sigma).abs() < 1e-12, "{a:?} vs {b:?}");
    let g = geometry::of_pass(&PairAccumulator::Gram(gram), dim, GeometryTiming::WithTheResult).expect("gram spectrum");
    let r = geometry::of_pass(&PairAccumulator::Rows(rows), dim, GeometryTiming::WithTheResult).expect("row spectrum");
    assert_eq!(g.eigenvalues.len(), dim);
    assert_eq!(r.eigenvalues.len(), dim);
    for (k, (x, y)) in g.eigenvalues.iter().zip(&r.eigenvalues).enumerate() {
        assert!((x - y).abs() < 1e-10, "λ{k}: {x} vs {y}");
    }
    // Beyond the rank (40 rows) the spectrum is zero.
    assert!(r.eigenvalues[v..].iter().all(|&l| l == 0.0));
    assert!((g.participation_ratio - r.participation_ratio).abs() < 1e-8);
    assert!((g.effective_rank.unwrap_or(f64::NAN) - r.effective_rank.unwrap_or(f64::NAN)).abs() < 1e-8);
    assert!((g.mean_from_dimensions - r.mean_from_dimensions).abs() < 1e-12);
    assert_eq!(
        g.top_mean_dimensions.iter().map(|m| m.dim).collect::<Vec<_>>(),
        r.top_mean_dimensions.iter().map(|m| m.dim).collect::<Vec<_>>()
    );
}

#[test]
fn row_partials_merge_to_the_whole() {
    let dim = 96;
    let values = synth::trained_like(30, dim, 2);
    let (_, whole) = both_routes(&values, dim);
    let (_, first) = both_routes(&values[..11 * dim], dim);
    let (_, second) = both_routes(&values[11 * dim..], dim);
    let mut merged = PairAccumulator::Rows(first);
    merged.merge(&PairAccumulator::Rows(second.clone()));
    let (m, w) = (merged.moments().expect("merged"), whole.moments().expect("whole"));
    assert_eq!(m.pairs, w.pairs);
    assert!((m.mu - w.mu).abs() < 1e-13 && (m.sigma - w.sigma).abs() < 1e-13, "{m:?} vs {w:?}");
    // A Gram partial and a row partial merge too (into a Gram).
    let (gram_first, _) = both_routes(&values[..11 * dim], dim);
    let mut mixed = PairAccumulator::Gram(gram_first);
    mixed.merge(&PairAccumulator::Rows(second));
    assert_eq!(mixed.route(), Route::Gram);
    let x = mixed.moments().expect("mixed");
    assert!((x.mu - w.mu).abs() < 1e-12 && (x.sigma - w.sigma).abs() < 1e-12, "{x:?} vs {w:?}");
    assert_eq!(mixed.counts().kept, 30);
}

#[test]
fn the_route_is_the_one_that_holds_fewer_bytes() {
    assert_eq!(route_for(2, 16384), Route::Rows);
    assert_eq!(route_for(4000, 16384), Route::Rows);
    assert_eq!(route_for(9000, 16384), Route::Gram);
    assert_eq!(route_for(32000, 4096), Route::Gram);
    assert_eq!(route_for(100, 64), Route::Gram);
    for (rows, dim) in [(2u64, 16384usize), (3000, 512), (100, 512), (3, 8)] {
        let acc = PairAccumulator::new(rows, dim);
        let want = match acc.route() {
            Route::Gram => gram_bytes(dim),
            Route::Rows => rows_bytes(rows, dim),
        };
        assert_eq!(acc.bytes() as u64, want, "{rows} × {dim}");
    }
}

/// A pass split by columns over two workers, as the page runs it, never holds G twice: a helper's
/// pass holds its band and never the whole triangle (G is allocated by its first write, after the
/// band is chosen), the lead's band grows into the whole G in place, and a helper's band sent apart
/// (`PassPartial::into_frame`) is copied straight into it. So at d = 16384 (G is 1.07 GB) two
/// workers fit 1.5 GB each. Measured over the pass, after the histogram's sample (whose pairs
/// take ~34 MB at any width).
#[test]
fn a_split_by_columns_holds_g_once() {
    let (rows, d) = (2100, 4096);
    let values = synth::trained_like(rows, d, 6);
    let bytes = safetensors_bytes(&[TensorSpec::matrix(
        "model.embed_tokens.weight",
        orthoscope::read::format::DType::BF16,
        rows,
        d,
        &values,
    )]);
    let g = gram_bytes(d) as usize;
    let config = AnalysisConfig::default();
    // A share's analysis, stepped through the histogram's sample to its pass.
    let share_at_its_pass = |index| {
        let source: Rc<dyn ByteSource> = Rc::new(SliceSource::new("m.safetensors", bytes.clone()));
        let share = Share::columns(index, 2).expect("a share");
        // Opened, a share holds no G yet, neither the whole nor its band.
        let (opened, open_peak) =
            peak_of(|| Job::open_share(vec![source], "model.embed_tokens.weight", config.clone(), share));
        assert!(open_peak < g / 16, "opening share {index} allocated {open_peak} bytes, G is {g}");
        let mut analysis = opened.expect("opens");
        while analysis.phase() != Phase::Pass {
            analysis.step().expect("steps");
        }
        analysis
    };

    let mut helper = share_at_its_pass(1);
    let ((head, band), helper_peak) = peak_of(|| {
        while helper.step().expect("steps") != Phase::Done {}
        helper.into_partial().into_frame()
    });
    println!("helper of 2 bands, d = {d}: pass peak {helper_peak} bytes, G {g} bytes");
    assert!(helper_peak < g * 3 / 4, "the helper's pass peaked at {helper_peak} bytes, G is {g}: more than its band");
    // The message as the page carries it, read back outside the measurements.
    let mut message = head;
    message.extend(band.iter().flat_map(|v| v.to_le_bytes()));
    drop(band);
    let (partial, band) = PassPartial::from_frame(&message).expect("reads");

    let mut lead = share_at_its_pass(0);
    let ((), lead_peak) = peak_of(|| while lead.step().expect("steps") != Phase::Done {});
    println!("lead of 2 bands: pass peak {lead_peak} bytes");
    assert!(lead_peak < g + g / 8, "the lead's pass peaked at {lead_peak} bytes, G is {g}");
    let (absorbed, absorb_peak) = peak_of(|| lead.absorb_from(&partial, Some(&band.as_slice())));
    absorbed.expect("absorbs");
    println!("lead taking in the helper's band: peak {absorb_peak} bytes");
    assert!(absorb_peak < g / 32, "taking in a band allocated {absorb_peak} bytes, G is {g}");
    let report = lead.report(0.0).expect("reports");
    assert!(report.exact && report.rows_used == rows as u64);
}

/// A safetensors file of one F32 tensor whose values are computed from their index in the stored
/// order as they are read: a dictionary of any size without the disk or RAM to hold it.
struct Computed {
    name: String,
    header: Vec<u8>,
    len: u64,
    value: Box<dyn Fn(u64) -> f32>,
}

impl Computed {
    fn source(name: &str, tensor: &str, shape: [u64; 2], value: impl Fn(u64) -> f32 + 'static) -> Rc<dyn ByteSource> {
        let bytes = shape[0] * shape[1] * 4;
        let mut json = format!(
            "{{\"{tensor}\":{{\"dtype\":\"F32\",\"shape\":[{},{}],\"data_offsets\":[0,{bytes}]}}}}",
            shape[0], shape[1]
        );
        while (json.len() + 8) % 8 != 0 {
            json.push(' ');
        }
        let mut header = (json.len() as u64).to_le_bytes().to_vec();
        header.extend_from_slice(json.as_bytes());
        let len = header.len() as u64 + bytes;
        Rc::new(Computed { name: name.to_string(), header, len, value: Box::new(value) })
    }
}

impl ByteSource for Computed {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        check_range(&self.name, offset, buf.len() as u64, self.len)?;
        let start = self.header.len() as u64;
        let mut at = offset;
        let mut out = 0usize;
        while out < buf.len() {
            if at < start {
                buf[out] = self.header[at as usize];
                at += 1;
                out += 1;
                continue;
            }
            let (elem, byte) = ((at - start) / 4, ((at - start) % 4) as usize);
            let value = (self.value)(elem).to_le_bytes();
            let n = (4 - byte).min(buf.len() - out);
            buf[out..out + n].copy_from_slice(&value[byte..byte + n]);
            at += n as u64;
            out += n;
        }
        Ok(())
    }
}

fn json_file(name: &str, value: serde_json::Value) -> Rc<dyn ByteSource> {
    Rc::new(SliceSource::new(name, value.to_string().into_bytes()))
}

fn f64_config() -> AnalysisConfig {
    AnalysisConfig { precision: orthoscope::pass::kernel::Precision::F64, ..AnalysisConfig::default() }
}

/// The analysis and its Report, without the geometry (an eigensolver's workspace after the pass,
/// not the pass's memory).
fn run_with(sources: Vec<Rc<dyn ByteSource>>, config: AnalysisConfig) -> Report {
    let (job, _) = Job::open(sources, None, config).expect("opens");
    job.run().expect("runs").report(0.0).expect("reports")
}

#[test]
fn a_million_features_at_d_64_are_analysed_exactly_in_memory_of_the_gram() {
    // SAELens's layout, W_dec [2²⁰, 64] (256 MiB of F32, computed as read). Feature i is
    // ±2^e · v_(i mod K) for K directions v: scales that are powers of two leave the unit rows
    // exactly ±v̂_k, so the all-pairs moments follow from the K × K Gram of the directions and
    // the counts: Σ_{i<j} cos = (‖Σ ±v̂‖² − N)/2, Σ_{i<j} cos² = (Σ_kl n_k n_l (v̂_k·v̂_l)² − N)/2.
    const N: u64 = 1 << 20;
    const D: usize = 64;
    const K: u64 = 1021;
    let directions = synth::trained_like(K as usize, D, 40);
    let scale = |i: u64| {
        let sign = if (i / K).is_multiple_of(3) { -1.0 } else { 1.0 };
        sign * 2f32.powi(((i * 7919) % 9) as i32 - 4)
    };
    let table = directions.clone();
    let w_dec = Computed::source("sae_weights.safetensors", "W_dec", [N, D as u64], move |e| {
        let (i, c) = (e / D as u64, (e % D as u64) as usize);
        table[(i % K) as usize * D + c] * scale(i)
    });
    let cfg = json_file(
        "cfg.json",
        serde_json::json!({"d_in": D, "d_sae": N, "architecture": "topk", "hook_name": "blocks.8.hook_resid_post"}),
    );
    let started = std::time::Instant::now();
    let (report, peak) = peak_of(|| run_with(vec![w_dec, cfg], f64_config()));
    println!(
        "{N} features × {D}: peak {peak} bytes for {} MiB of decoder, accumulator {} bytes, {:.0} ms",
        (N * D as u64 * 4) >> 20,
        report.accumulator_bytes,
        started.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(report.tensor_role, orthoscope::read::locate::TensorRole::SaeDecoder);
    let d = &report.dictionary.as_ref().expect("a dictionary").dictionary;
    assert_eq!((d.d_sae, d.d_in, d.layer), (N, D as u64, Some(8)));
    assert!(report.exact);
    assert_eq!((report.rows_used, report.pairs), (N, N * (N - 1) / 2));
    // The Gram route, O(d²): not the rows (2²⁰ × 64 f64 would be 512 MiB).
    assert_eq!(report.accumulator_bytes, gram_bytes(D));
    assert!(peak < 16 << 20, "peak {peak} bytes: not bounded by the work");

    // The oracle, from the K directions and the counts.
    let d_pad = orthoscope::pass::kernel::padded_dim(D);
    let units: Vec<Vec<f64>> = directions
        .chunks_exact(D)
        .map(|v| {
            let mut u = vec![0.0f64; d_pad];
            assert_eq!(normalise_row(v, &mut u), RowFate::Kept);
            u
        })
        .collect();
    let (mut signed, mut count) = (vec![0.0f64; K as usize], vec![0.0f64; K as usize]);
    for i in 0..N {
        let k = (i % K) as usize;
        signed[k] += if (i / K).is_multiple_of(3) { -1.0 } else { 1.0 };
        count[k] += 1.0;
    }
    let (mut sum_sq, mut sq_sum) = (0.0f64, 0.0f64);
    for k in 0..K as usize {
        for l in 0..K as usize {
            let g: f64 = units[k].iter().zip(&units[l]).map(|(a, b)| a * b).sum();
            sum_sq += signed[k] * signed[l] * g;
            sq_sum += count[k] * count[l] * g * g;
        }
    }
    let n = N as f64;
    let pairs = n * (n - 1.0) / 2.0;
    let mu = (sum_sq - n) / 2.0 / pairs;
    let sigma = ((sq_sum - n) / 2.0 / pairs - mu * mu).sqrt();
    assert!((report.mu - mu).abs() < 1e-9, "μ {} vs {mu}", report.mu);
    assert!((report.sigma - sigma).abs() < 1e-9 * sigma.max(1.0), "σ {} vs {sigma}", report.sigma);
    // Pairs ±v̂_k of one direction are antipodal: the sample lists them.
    assert!(
        report.antipodal_pairs.first().is_some_and(|p| p.cosine < -0.999_999),
        "{:?}",
        report.antipodal_pairs.first()
    );
}

#[test]
fn a_decoder_with_features_in_columns_is_read_by_panels_and_gives_the_row_layouts_epsilon() {
    // 131 072 features over d_in = 256 (128 MiB of F32, computed as read), stored both ways: by
    // rows as SAELens's W_dec [d_sae, d_in], and by columns as Llama Scope's decoder.weight
    // [d_model, d_sae], which is read a panel of columns at a time (at most 4 MiB), never
    // transposed in memory. Past its first 1024 blocks in random order the pass sweeps the rest
    // in file order (`Plan::sweep_tail`), where whole panels are read.
    const N: u64 = 1 << 17;
    const D: u64 = 256;
    // Feature j, coordinate c: a hash in [−1, 1) plus a shared offset (μ > 0, as trained rows have).
    fn value(j: u64, c: u64) -> f32 {
        let mut z = (j * D + c).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 40) as f32 / (1u64 << 23) as f32 - 1.0 + 0.05
    }
    let rows = vec![
        Computed::source("sae_weights.safetensors", "W_dec", [N, D], |e| value(e / D, e % D)),
        json_file("cfg.json", serde_json::json!({"d_in": D, "d_sae": N})),
    ];
    let columns = vec![
        Computed::source("final.safetensors", "decoder.weight", [D, N], |e| value(e % N, e / N)),
        json_file(
            "hyperparams.json",
            serde_json::json!({"d_model": D, "d_sae": N, "hook_point_in": "blocks.3.hook_resid_post"}),
        ),
    ];
    let started = std::time::Instant::now();
    let (by_rows, rows_peak) = peak_of(|| run_with(rows, f64_config()));
    let rows_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = std::time::Instant::now();
    let (by_columns, columns_peak) = peak_of(|| run_with(columns, f64_config()));
    let columns_ms = started.elapsed().as_secs_f64() * 1e3;
    println!(
        "{N} features × {D}: by rows peak {rows_peak} bytes, {rows_ms:.0} ms; by columns peak {columns_peak} bytes, {columns_ms:.0} ms"
    );
    let d = &by_columns.dictionary.as_ref().expect("a dictionary").dictionary;
    assert!(d.columns_are_features && d.source_layout == "llama_scope");
    assert_eq!((d.d_sae, d.d_in, by_columns.rows, by_columns.dim), (N, D, N, D));
    assert!(by_rows.exact && by_columns.exact);
    assert_eq!(by_rows.pairs, by_columns.pairs);
    for (what, a, b) in [
        ("μ", by_rows.mu, by_columns.mu),
        ("σ", by_rows.sigma, by_columns.sigma),
        ("ε", by_rows.epsilon, by_columns.epsilon),
    ] {
        assert!((a - b).abs() <= 1e-12 * a.abs().max(1e-3), "{what}: by rows {a}, by columns {b}");
    }
    // The columns' panel (4 MiB) and the sample's rows are the work; the 64 MiB matrix is never held.
    assert!(columns_peak < 24 << 20, "peak {columns_peak} bytes by columns");
    assert!(
        columns_peak < rows_peak + (5 << 20),
        "by columns {columns_peak} vs by rows {rows_peak}: more than a panel"
    );
}

/// G of `rows` unit rows at d = 256 sharing one direction (μ > 0, one large eigenvalue, as trained
/// rows have), built a chunk at a time: the rows are never held.
fn gram_of_rows(rows: usize, dim: usize, seed: u64) -> PairAccumulator {
    let d = orthoscope::pass::kernel::padded_dim(dim);
    let mut gram = GramMoments::new(dim);
    let mut normal = synth::Normal::new(seed);
    let direction: Vec<f32> = (0..dim).map(|_| normal.sample() as f32).collect();
    let mut chunk = vec![0.0f64; d * 1024];
    let mut row = vec![0.0f32; dim];
    for _ in 0..rows / 1024 {
        for unit in chunk.chunks_exact_mut(d) {
            for (x, &c) in row.iter_mut().zip(&direction) {
                *x = 0.3 * c + normal.sample() as f32;
            }
            assert_eq!(normalise_row(&row, unit), RowFate::Kept);
            gram.counts.record(RowFate::Kept);
        }
        gram.add_unit_rows(&chunk);
    }
    PairAccumulator::Gram(gram)
}

/// The report's geometry reads G only: for a matrix of 131 072 rows at d = 256 the eigen step
/// holds O(d²) (G's lower triangle as a dense matrix, the solver's workspace), nothing of the
/// rows. The first eigen step on a thread also reserves faer's matrix-product workspace (on x86,
/// twice the L3 cache's bytes, once per thread, kept for the thread's life): the same for 2048
/// rows as for 131 072, and absent from every later step on that thread.
#[test]
fn the_geometry_of_a_tall_matrix_holds_only_of_the_order_of_d_squared() {
    const D: usize = 256;
    let dense = D * D * 8;
    // Each on a fresh thread, so each first step reserves the workspace anew.
    let peaks = |rows: usize| {
        std::thread::spawn(move || {
            let pass = gram_of_rows(rows, D, 50);
            let spectrum = || geometry::of_pass_on(&pass, D, GeometryTiming::WithTheResult, 1).expect("a spectrum");
            let (first, first_peak) = peak_of(spectrum);
            let (again, again_peak) = peak_of(spectrum);
            assert_eq!(first.eigenvalues, again.eigenvalues);
            assert_eq!(first.eigenvalues.len(), D);
            (first_peak, again_peak)
        })
        .join()
        .expect("the thread finishes")
    };
    let (tall_first, tall) = peaks(1 << 17);
    let (short_first, short) = peaks(2048);
    println!(
        "geometry at d = {D}: 131072 rows peak {tall} bytes ({tall_first} on the thread's first step), \
         2048 rows {short} ({short_first}); d² f64 = {dense}"
    );
    assert!(tall <= 4 * dense + (1 << 20), "peak {tall} bytes for 131072 rows, d² f64 is {dense}");
    assert!(tall.abs_diff(short) <= 1 << 16, "{tall} bytes for 131072 rows, {short} for 2048");
    assert!(tall_first.abs_diff(short_first) <= 1 << 16, "first steps: {tall_first} vs {short_first}");
}
