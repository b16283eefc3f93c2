//! The analyses of this session (and of earlier visits): the rows of the comparison table, the
//! histograms overlaid, the user's points on the Table-1 map.
//!
//! Results (never weights) persist in the browser's own `localStorage`, each as its permalink
//! fragment (~1–2 kB), so a reload keeps the comparison and "Clear" forgets it.

use leptos::prelude::*;

use crate::result::permalink;
use crate::result::report::Report;

/// Storage key; the version changes if the stored form ever does.
const STORAGE_KEY: &str = "orthoscope.session.v1";
/// Rows kept; the oldest go first.
pub const MAX_ENTRIES: usize = 24;
/// Histograms overlaid by default; more get hard to tell apart.
const DEFAULT_OVERLAYS: usize = 4;

/// One analysis in the comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Stable within the page's life (for keyed lists and buttons).
    pub id: u64,
    pub report: Report,
    /// The report's permalink fragment: what is stored (encoded once).
    fragment: String,
    /// Drawn in the overlaid histograms.
    pub overlay: bool,
}

#[derive(Clone, Copy)]
pub struct Session {
    pub entries: RwSignal<Vec<Entry>>,
    next_id: StoredValue<u64>,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// Same model, tensor, seed and result: a re-run of an analysis already in the table.
fn same_result(a: &Report, b: &Report) -> bool {
    a.file == b.file
        && a.tensor == b.tensor
        && a.rows == b.rows
        && a.dim == b.dim
        && a.seed == b.seed
        && a.exact == b.exact
        && a.rows_seen == b.rows_seen
        && (a.epsilon - b.epsilon).abs() < 1e-12
}

impl Session {
    /// The rows stored by earlier visits (unreadable ones are skipped).
    pub fn load() -> Self {
        let stored: Vec<String> = storage()
            .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
            .and_then(|json| serde_json::from_str(&json).ok())
            .unwrap_or_default();
        let entries: Vec<Entry> = stored
            .into_iter()
            .filter_map(|fragment| permalink::decode(&fragment).ok().map(|report| (report, fragment)))
            .enumerate()
            .map(|(i, (report, fragment))| Entry { id: i as u64 + 1, report, fragment, overlay: i < DEFAULT_OVERLAYS })
            .collect();
        let next = entries.len() as u64 + 1;
        Session { entries: RwSignal::new(entries), next_id: StoredValue::new(next) }
    }

    fn save(&self) {
        let Some(storage) = storage() else { return };
        let fragments: Vec<String> = self.entries.with_untracked(|e| e.iter().map(|e| e.fragment.clone()).collect());
        if let Ok(json) = serde_json::to_string(&fragments) {
            // A full or blocked storage only costs persistence, never the page.
            let _ = storage.set_item(STORAGE_KEY, &json);
        }
    }

    /// Adds a finished analysis (a re-run of one already listed is not added twice).
    pub fn add(&self, report: &Report) {
        let id = self.next_id.get_value();
        let mut added = false;
        let mut changed = false;
        self.entries.update(|entries| {
            if let Some(e) = entries.iter_mut().find(|e| same_result(&e.report, report)) {
                // A stored row (decoded from its link) regains the geometry a re-run computed.
                if e.report.geometry.is_none() {
                    e.report.geometry.clone_from(&report.geometry);
                }
                // Another dead-latent threshold sets other rows aside: the row takes the numbers
                // without them that the card now shows.
                if e.report.trained != report.trained {
                    e.report.trained.clone_from(&report.trained);
                    e.fragment = permalink::encode(&e.report);
                    changed = true;
                }
                return;
            }
            let overlay = entries.iter().filter(|e| e.overlay).count() < DEFAULT_OVERLAYS;
            entries.push(Entry { id, report: report.clone(), fragment: permalink::encode(report), overlay });
            if entries.len() > MAX_ENTRIES {
                entries.remove(0);
            }
            added = true;
        });
        if added {
            self.next_id.set_value(id + 1);
        }
        if added || changed {
            self.save();
        }
    }

    /// Adds the geometry that follows a result (d > 2048: the eigen step runs after "done") to its
    /// row. The stored fragment stays as it is: links do not carry the spectrum.
    pub fn set_geometry(&self, report: &Report, geometry: &crate::explain::geometry::Geometry) {
        self.entries.update(|entries| {
            if let Some(e) = entries.iter_mut().find(|e| same_result(&e.report, report)) {
                e.report.geometry = Some(geometry.clone());
            }
        });
    }

    pub fn remove(&self, id: u64) {
        self.entries.update(|e| e.retain(|e| e.id != id));
        self.save();
    }

    /// Moves a row one place up (`-1`) or down (`+1`).
    pub fn shift(&self, id: u64, by: isize) {
        self.entries.update(|e| {
            let Some(i) = e.iter().position(|e| e.id == id) else { return };
            let j = i as isize + by;
            if j >= 0 && (j as usize) < e.len() {
                e.swap(i, j as usize);
            }
        });
        self.save();
    }

    pub fn set_overlay(&self, id: u64, on: bool) {
        self.entries.update(|e| {
            if let Some(e) = e.iter_mut().find(|e| e.id == id) {
                e.overlay = on;
            }
        });
    }

    /// Forgets every stored result.
    pub fn clear(&self) {
        self.entries.set(Vec::new());
        if let Some(s) = storage() {
            let _ = s.remove_item(STORAGE_KEY);
        }
    }
}
