//! The worker's read-ahead policy (`read::ahead`), driven natively over an in-memory source that
//! implements it as the browser's `BlobSource` does (batches held until asked, reads served from
//! them, anything else read directly): for a whole pass and for each share of a split one, every
//! range is fetched once (a sample block twice at most: the sample reads it, the pass again), no
//! step falls back to a direct read, and the result is the in-memory one.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use orthoscope::fixtures::setup::{embedding_file, locate_embedding};
use orthoscope::fixtures::synth::trained_like;
use orthoscope::pass::analysis::{Analysis, AnalysisConfig, Phase};
use orthoscope::pass::shares::Share;
use orthoscope::read::ahead::{Batches, Held, Limits, ReadAhead};
use orthoscope::read::format::DType;
use orthoscope::read::source::{ByteSource, ReadError, SliceSource};
use orthoscope::run::report::ToReport;

/// A file in memory read ahead like a `Blob`: fetches are counted, and so are direct reads.
struct Ahead {
    file: SliceSource,
    held: RefCell<Held<Vec<u8>>>,
    fetched: RefCell<Vec<(u64, u64)>>,
    direct: RefCell<u32>,
    /// Batches fetched and not yet installed: now, and the most at once.
    flying: RefCell<(usize, usize)>,
    /// Whether a batch has always arrived by the time a step asks for it (the arithmetic bounds
    /// the pass) or never (the reading does).
    fast: bool,
}

impl Batches for Ahead {
    type Batch = Vec<(u64, u64)>;
    fn holds(&self, offset: u64, len: u64) -> bool {
        self.held.borrow().holds(offset, len)
    }
    fn fetch(&self, ranges: Vec<(u64, u64)>) -> Option<Self::Batch> {
        (!ranges.is_empty()).then(|| {
            let mut flying = self.flying.borrow_mut();
            *flying = (flying.0 + 1, flying.1.max(flying.0 + 1));
            self.fetched.borrow_mut().extend(&ranges);
            ranges
        })
    }
    fn install(&self, batch: Self::Batch, max_held: u64) -> impl Future<Output = ()> {
        self.flying.borrow_mut().0 -= 1;
        for (offset, len) in batch {
            let mut bytes = vec![0u8; len as usize];
            self.file.read_at(offset, &mut bytes).expect("in the file");
            self.held.borrow_mut().push(offset, len, bytes, max_held);
        }
        std::future::ready(())
    }
    fn arrived(&self, _: &Self::Batch) -> bool {
        self.fast
    }
}

impl ByteSource for Ahead {
    fn name(&self) -> &str {
        self.file.name()
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), ReadError> {
        match self.held.borrow_mut().take(offset, buf.len() as u64) {
            Some(bytes) => buf.copy_from_slice(&bytes),
            None => {
                *self.direct.borrow_mut() += 1;
                self.file.read_at(offset, buf)?;
            }
        }
        Ok(())
    }
}

/// Runs a future that never waits (the in-memory source's installs are ready at once).
fn now<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => panic!("the in-memory source never waits"),
    }
}

fn open(bytes: &[u8], config: &AnalysisConfig, share: Option<Share>, fast: bool) -> (Analysis, Rc<Ahead>) {
    let file = SliceSource::new("generated.safetensors", bytes.to_vec());
    let (tensor, origin) = locate_embedding(&file).expect("embedding located");
    let source = Rc::new(Ahead {
        file,
        held: RefCell::new(Held::default()),
        fetched: RefCell::default(),
        direct: RefCell::new(0),
        flying: RefCell::default(),
        fast,
    });
    let mut a = Analysis::new(Box::new(source.clone()), tensor, origin, config.clone()).expect("analysis");
    if let Some(share) = share {
        a.set_share(share);
    }
    (a, source)
}

#[test]
fn every_range_is_read_ahead_once_for_a_pass_and_for_each_share() {
    // The browser's proportions: blocks of 64 rows (4 KiB, one per step), batches of 16 blocks,
    // 3 batches held; the sample's 32 blocks are 2 batches, and the pass reads some of them again.
    read_ahead_whole((12000, 32), |in_flight| Limits {
        batch_ranges: 1024,
        batch_bytes: 64 << 10,
        in_flight,
        max_held: 192 << 10,
    });
}

#[test]
fn a_step_of_many_reads_is_read_ahead_whole() {
    // A narrow matrix whose tail is swept (`pass::plan`): 1563 blocks of 64 rows (2 KiB), 16 to a
    // step of the sweep, in batches of 23 blocks, so that steps run across the ends of batches.
    // Before a step read ahead only its first block, such a step read the rest directly.
    read_ahead_whole((100_000, 16), |in_flight| Limits {
        batch_ranges: 1024,
        batch_bytes: 23 << 11,
        in_flight,
        max_held: 3 * (23 << 11),
    });
}

/// A pass over a generated `rows × dim` bf16 matrix, whole and by shares, read ahead with
/// `limits(in_flight)` at up to one batch in flight and up to three, with batches that have always
/// arrived when asked for (the arithmetic is slower than the reading) or never (the reading is):
/// no step reads directly, every range is fetched once, the depth reached is the one expected,
/// and the report is the in-memory one.
fn read_ahead_whole((rows, dim): (usize, usize), limits: impl Fn(usize) -> Limits) {
    let values = trained_like(rows, dim, 11);
    let bytes = embedding_file(&values, dim, DType::BF16);
    let config = AnalysisConfig::default();
    let shares = [None, Some(Share::new(0, 2)), Some(Share::new(1, 2)), Some(Share::new(2, 3))];
    let cases = shares
        .map(|s| s.map(|s| s.expect("a share")))
        .into_iter()
        .flat_map(|s| [(s, limits(1), false), (s, limits(3), false), (s, limits(3), true)]);
    for (share, limits, fast) in cases {
        let (mut a, source) = open(&bytes, &config, share, fast);
        let reads = a.upcoming_reads(usize::MAX);
        let mut ahead = ReadAhead::new(vec![Some(source.clone())], limits);
        let mut most_reads = 0;
        while a.phase() != Phase::Done {
            most_reads = most_reads.max(a.step_reads());
            now(ahead.before_step(a.step_reads(), |n| (0, a.upcoming_reads(n))));
            a.step().expect("step");
        }
        assert_eq!(*source.direct.borrow(), 0, "{share:?} {limits:?}: every read was read ahead");
        let expected_reads = if rows > 64 * 1024 { 16 } else { 1 };
        assert_eq!(most_reads, expected_reads, "{share:?}: reads of a step");
        // Steps that waited for a batch read more at once, up to the limit; the others one.
        let depth = if fast { 1 } else { limits.in_flight };
        assert_eq!((source.flying.borrow().1, ahead.depth()), (depth, depth), "{share:?} {limits:?}: read at once");
        let mut fetched = source.fetched.borrow().clone();
        let mut distinct = reads.clone();
        distinct.sort();
        distinct.dedup();
        let fetched_bytes: u64 = fetched.iter().map(|r| r.1).sum();
        let read_bytes: u64 = reads.iter().map(|r| r.1).sum();
        assert!(
            fetched_bytes <= read_bytes,
            "{share:?} {limits:?}: fetched {fetched_bytes} B for {read_bytes} B of reads"
        );
        fetched.sort();
        fetched.dedup();
        assert_eq!(fetched, distinct, "{share:?} {limits:?}: what was fetched is what the pass reads");

        let (whole, _) = open(&bytes, &config, share, fast);
        assert_eq!(
            a.report(0.0).map(|r| (r.epsilon, r.mu, r.sigma)).ok(),
            whole.run().expect("runs").report(0.0).map(|r| (r.epsilon, r.mu, r.sigma)).ok(),
            "{share:?}"
        );
    }
}
