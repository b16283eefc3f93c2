//! The page's state: where it stands, where the result on display came from, a folder's queue of
//! dictionaries, and the signals every component reads.

use leptos::prelude::*;

use crate::explain::neighbours::Neighbours;
use crate::pass::analysis::Progress;
use crate::result::report::Report;
use crate::run::job::Opened;
use crate::ui::session::Session;

/// Where the page stands; `data-status` on the report element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    Running,
    Done,
    Error,
    Cancelled,
    /// The files hold no input embedding: nothing ran; the picker and a message say why.
    Choose,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Done => "done",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
            Status::Choose => "choose",
        }
    }
}

/// Where the result on display came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// Computed in this tab.
    Analysed,
    /// Decoded from a permalink: nothing was read or computed.
    Permalink,
}

/// A folder of several dictionaries, analysed one after another (`LayersPanel` shows it).
#[derive(Clone, Debug, PartialEq)]
pub struct LayerQueue {
    pub total: usize,
    /// Dictionaries whose Report is in the session.
    pub done: usize,
    /// What runs now ("layer 3 — dictionary 4 of 12 (run/layers.3)").
    pub current: String,
    pub running: bool,
    /// Why the queue ended before its last dictionary (a failure, Cancel, another model opened).
    pub stopped: Option<String>,
}

/// All page state, as copyable signals.
#[derive(Clone, Copy)]
pub struct State {
    pub status: RwSignal<Status>,
    /// The error or cancel message.
    pub message: RwSignal<String>,
    pub progress: RwSignal<Option<Progress>>,
    /// When the current run started (`performance.now()` ms), for elapsed time, ETA and rows/s.
    pub started_ms: RwSignal<f64>,
    /// The result on display: the last finished analysis (kept while the next one runs).
    pub report: RwSignal<Option<Report>>,
    pub provenance: RwSignal<Provenance>,
    pub opened: RwSignal<Option<Opened>>,
    /// What is being analysed, for the progress line ("demo “trained-like”", "model.safetensors").
    pub source_label: RwSignal<String>,
    pub exact_only: RwSignal<bool>,
    /// Id of the current run, `data-run` on the report element: a watcher can tell a new result
    /// from the previous one.
    pub run: RwSignal<u64>,
    /// Every analysis of the session (and earlier ones kept in the browser's storage).
    pub session: Session,
    /// The last status change, read out by screen readers (`aria-live`).
    pub announcement: RwSignal<String>,
    /// The demo the page shows (so the demo list names it instead of "choose…").
    pub demo: RwSignal<String>,
    /// The worker is computing the geometry of the result on display (it comes after the result).
    pub geometry_pending: RwSignal<bool>,
    /// Why the geometry of the result on display is missing, when its eigen step failed.
    pub geometry_message: RwSignal<String>,
    /// The tail explorer's last answer, and why the last search failed.
    pub neighbours: RwSignal<Option<Neighbours>>,
    pub neighbours_message: RwSignal<String>,
    /// Share of the centred pass done while it runs.
    pub centred_progress: RwSignal<Option<f64>>,
    pub centred_message: RwSignal<String>,
    /// The folder of dictionaries being analysed one after another, or last analysed so.
    pub queue: RwSignal<Option<LayerQueue>>,
    /// The dead-latent threshold (log10 firing density) the result on display was analysed with;
    /// None: the default, latents that never fired.
    pub dead_below: RwSignal<Option<f64>>,
}

impl State {
    pub fn new() -> Self {
        Self {
            status: RwSignal::new(Status::Idle),
            message: RwSignal::new(String::new()),
            progress: RwSignal::new(None),
            started_ms: RwSignal::new(0.0),
            report: RwSignal::new(None),
            provenance: RwSignal::new(Provenance::Analysed),
            opened: RwSignal::new(None),
            source_label: RwSignal::new(String::new()),
            exact_only: RwSignal::new(false),
            run: RwSignal::new(0),
            session: Session::load(),
            announcement: RwSignal::new(String::new()),
            demo: RwSignal::new(String::new()),
            geometry_pending: RwSignal::new(false),
            geometry_message: RwSignal::new(String::new()),
            neighbours: RwSignal::new(None),
            neighbours_message: RwSignal::new(String::new()),
            centred_progress: RwSignal::new(None),
            centred_message: RwSignal::new(String::new()),
            queue: RwSignal::new(None),
            dead_below: RwSignal::new(None),
        }
    }
}

impl Default for State {
    fn default() -> Self {
        Self::new()
    }
}
