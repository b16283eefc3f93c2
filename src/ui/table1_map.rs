//! The paper's Table 1 as a map (its Fig. 5: d_model against ε, the two classes and the empty gap,
//! and a zoom on Class 2), with every model of this session placed on it with its interval, and the
//! same data as a sortable table.
//!
//! Drawn as SVG by hand rather than with plotters: every point is an element a keyboard can focus
//! and a screen reader can name, which a bitmap cannot offer.

use leptos::prelude::*;

use wasm_bindgen::JsCast;

use super::chart::{click_download, download_text, drawn_width};
use super::controller::State;
use super::session::Entry;
use crate::charts::{Axis, FrameSpec, PlotFrame, Sizes, YTitle};
use crate::pass::estimate::{self, Class};
use crate::read::locate::TensorRole;
use crate::result::paper::{self, TABLE1};
use crate::result::report::{group_digits, scientific_from_log10, significant};

/// Outer size of each map in SVG user units (CSS px at full width); its margins and scales are the
/// charts' [`PlotFrame`], sized from its tick labels and axis titles.
const W: f64 = 600.0;
const H: f64 = 330.0;
/// The narrowest the map is laid out (a 320 px phone less the page's margins).
const MIN_W: f64 = 280.0;
/// d_model ticks: the powers of two the paper's models sit on.
const D_TICKS: [u64; 6] = [512, 1024, 2048, 4096, 8192, 16384];
/// How far past the d axis's ends a point may sit (as a fraction of its length) before it is
/// pinned there: a model narrower than 512 still shows, just outside the frame.
const D_OVERHANG: f64 = 0.02;

/// The d axis: log scale from 512 to 2¹⁴·⁵ (room right of 16384).
fn d_axis() -> Axis {
    Axis::log10(512.0, 2f64.powf(14.5))
}

/// One point on the map.
#[derive(Clone, Debug, PartialEq)]
struct Point {
    name: String,
    d: u64,
    epsilon: f64,
    ci: Option<[f64; 2]>,
    capacity: String,
    /// log10 of the Eq. 7 capacity (None: indeterminate), for sorting.
    log10_capacity: Option<f64>,
    class: Class,
    /// Analysed in this session (not from the paper).
    user: bool,
    /// An SAE dictionary's features (docs/method.md §10): its own marker, never an embedding's.
    features: bool,
}

impl Point {
    fn describe(&self) -> String {
        let ci = self
            .ci
            .map_or(String::new(), |[lo, hi]| format!(" (95 % [{}, {}])", significant(lo, 4), significant(hi, 4)));
        format!(
            "{}{}: d = {}, ε = {}{ci}, {}, capacity {}",
            self.name,
            if self.user { " (yours)" } else { "" },
            group_digits(self.d),
            significant(self.epsilon, 4),
            self.class.label(),
            self.capacity
        )
    }
}

fn paper_points() -> Vec<Point> {
    TABLE1
        .iter()
        .map(|m| Point {
            name: m.name.to_string(),
            d: m.d_model,
            epsilon: m.epsilon,
            ci: None,
            capacity: m.capacity.map_or_else(|| "indeterminate".to_string(), |c| scientific_from_log10(c.log10())),
            log10_capacity: m.capacity.map(f64::log10),
            class: estimate::class(m.epsilon),
            user: false,
            features: false,
        })
        .collect()
}

fn user_points(entries: &[Entry]) -> Vec<Point> {
    entries
        .iter()
        .map(|e| {
            let r = &e.report;
            Point {
                // A tensor that is not the input embedding is placed, but named for what it is.
                name: match r.tensor_role {
                    TensorRole::InputEmbedding => {
                        format!("{} · {}", r.model_name(), r.tensor)
                    }
                    TensorRole::OutputMatrix => {
                        format!("{} · {} (output matrix: not comparable with Table 1)", r.model_name(), r.tensor)
                    }
                    TensorRole::Other => format!(
                        "{} · {} (not the input embedding: not comparable with Table 1)",
                        r.model_name(),
                        r.tensor
                    ),
                    TensorRole::SaeDecoder => format!(
                        "{} · {} (an SAE dictionary's features: not comparable with Table 1)",
                        r.model_name(),
                        r.tensor
                    ),
                },
                d: r.dim,
                epsilon: r.epsilon,
                ci: r.epsilon_ci,
                capacity: super::result::headline_capacity(r),
                log10_capacity: r.capacity_determinate.then_some(r.log10_capacity.adjusted_full),
                class: r.class,
                user: true,
                features: r.tensor_role == TensorRole::SaeDecoder,
            }
        })
        .collect()
}

/// One scatter, drawn at the width its box has (`drawn_width`): bands, axes, the paper's points
/// and the user's.
#[component]
fn Scatter(
    /// ε range shown.
    range: (f64, f64),
    /// y ticks.
    ticks: Vec<f64>,
    /// Accessible title.
    title: &'static str,
    /// `data-testid` of the `<svg>`.
    testid: &'static str,
    /// Points can take keyboard focus (only on one of the two maps, to keep the tab order short).
    focusable: bool,
    /// Every point, paper's and user's.
    points: Signal<Vec<Point>>,
    /// The description of the point under the pointer or focus.
    readout: RwSignal<String>,
) -> impl IntoView {
    let wrapper = NodeRef::<leptos::html::Div>::new();
    let width = drawn_width(wrapper, W, MIN_W);
    let ticks = StoredValue::new(ticks);
    view! {
        <div class="map-box" node_ref=wrapper>
            {move || scatter(width.get(), range, ticks.get_value(), title, testid, focusable, points, readout)}
        </div>
    }
}

/// The scatter laid out `width` CSS pixels wide.
#[allow(clippy::too_many_arguments)]
fn scatter(
    width: f64,
    range: (f64, f64),
    ticks: Vec<f64>,
    title: &'static str,
    testid: &'static str,
    focusable: bool,
    points: Signal<Vec<Point>>,
    readout: RwSignal<String>,
) -> AnyView {
    let (lo, hi) = range;
    let y_labels: Vec<String> = ticks.iter().map(|t| format!("{t}")).collect();
    let d_labels: Vec<String> = D_TICKS.iter().map(|d| d.to_string()).collect();
    let spec = FrameSpec {
        left_labels: &y_labels,
        x_labels: &d_labels,
        x_title: true,
        y_title: YTitle::Beside,
        ..FrameSpec::new(width, H, Sizes::new(1.0, 1.0))
    };
    let frame = match PlotFrame::new(&spec) {
        Ok(frame) => frame,
        Err(e) => {
            return view! { <p class="note" data-testid=testid>{format!("The map cannot be drawn: {e}.")}</p> }
                .into_any()
        }
    };
    let (d_axis, eps_axis) = (d_axis(), Axis::linear(lo, hi));
    let x_of = move |d: u64| frame.x_at(d_axis.fraction(d.max(1) as f64).clamp(-D_OVERHANG, 1.0 + D_OVERHANG));
    let y_of = move |eps: f64| frame.y(&eps_axis, eps);
    let band = move |from: f64, to: f64, class: &'static str, label: &'static str| {
        let (a, b) = (from.max(lo), to.min(hi));
        (a < b).then(|| {
            let (y0, y1) = (y_of(b), y_of(a));
            view! {
                <rect class=format!("band {class}") x=frame.left y=y0 width=frame.plot_width() height=y1 - y0></rect>
                // Labels in the first corner of their band that no point covers, in the order
                // top left (no model of the paper has d < 640), top right, bottom left, bottom right;
                // in a band too short or too crowded for one (a phone's Class 2 band is ~25 px),
                // only the legend under the map names it.
                {move || {
                    let width = 7.0 * label.chars().count() as f64;
                    let corners = [
                        (frame.left + 6.0, y0 + 14.0, "start"),
                        (frame.right - 6.0, y0 + 14.0, "end"),
                        (frame.left + 6.0, y1 - 6.0, "start"),
                        (frame.right - 6.0, y1 - 6.0, "end"),
                    ];
                    // How many points a label there would lie on; the first corner with fewest.
                    let covering = |&(x, y, anchor): &(f64, f64, &str)| {
                        let (left, right) = if anchor == "start" { (x, x + width) } else { (x - width, x) };
                        points.with(|ps| {
                            ps.iter()
                                .filter(|p| p.epsilon >= lo && p.epsilon <= hi)
                                .filter(|p| {
                                    let (px, py) = (x_of(p.d), y_of(p.epsilon));
                                    px > left - 6.0 && px < right + 6.0 && py > y - 18.0 && py < y + 6.0
                                })
                                // The user's own models weigh most: their diamond must stay clear.
                                .map(|p| if p.user { 10 } else { 1 })
                                .sum::<usize>()
                        })
                    };
                    let (x, y, anchor) = corners.into_iter().find(|c| covering(c) == 0)?;
                    (y1 - y0 >= 20.0).then(|| view! { <text class="band-label" x=x y=y text-anchor=anchor>{label}</text> })
                }}
            }
        })
    };
    let plotted = move || {
        points
            .get()
            .into_iter()
            .filter(|p| p.epsilon >= lo && p.epsilon <= hi)
            .map(|p| {
                let (x, y) = (x_of(p.d), y_of(p.epsilon));
                let text = p.describe();
                let (enter, focus, label) = (text.clone(), text.clone(), text.clone());
                let whisker = p.ci.map(|[a, b]| {
                    let class = if p.features { "whisker features" } else { "whisker" };
                    view! { <line class=class x1=x x2=x y1=y_of(b.min(hi)) y2=y_of(a.max(lo))></line> }
                });
                let class = match (p.user, p.features, p.class) {
                    (true, true, _) => "pt user features",
                    (true, false, _) => "pt user",
                    (false, _, Class::One) => "pt c1",
                    (false, _, _) => "pt c2",
                };
                let marker = match (p.user, p.features) {
                    (true, true) => Marker::Features,
                    (true, false) => Marker::Yours,
                    (false, _) => Marker::Paper,
                };
                let shape = marker.shape(x, y);
                view! {
                    {whisker}
                    <g
                        class=class
                        tabindex=if focusable { Some("0") } else { None }
                        role="img"
                        aria-label=label
                        on:mouseenter=move |_| readout.set(enter.clone())
                        on:focus=move |_| readout.set(focus.clone())
                    >
                        <title>{text}</title>
                        {shape}
                    </g>
                }
            })
            .collect_view()
    };
    let hidden_count = move || points.with(|ps| ps.iter().filter(|p| p.epsilon < lo || p.epsilon > hi).count());
    // The floors as polylines over the d axis's whole range, cut where they leave the ε range.
    let d_end = 2f64.powf(14.5) as u64;
    let floors = FLOORS
        .into_iter()
        .map(|(rows, class, _)| {
            let pts: Vec<String> = paper::floor_vs_dim(rows, 512, d_end, 48)
                .into_iter()
                .filter(|&(_, e)| e >= lo && e <= hi)
                .map(|(d, e)| format!("{:.1},{:.1}", x_of(d), y_of(e)))
                .collect();
            (pts.len() >= 2)
                .then(|| view! { <polyline class=format!("floor {class}") points=pts.join(" ")></polyline> })
        })
        .collect_view();
    // The y title is turned a quarter left, centred on the frame's height in its own column.
    let (title_x, title_y) = (frame.y_title.map_or(frame.inset, |c| c.middle()), (frame.top + frame.bottom) / 2.0);
    view! {
        <svg class="map" xmlns="http://www.w3.org/2000/svg" viewBox=format!("0 0 {width} {H}") data-testid=testid role="group" aria-label=title>
            {BANDS.into_iter().map(|(from, to, class, label)| band(from, to, class, label)).collect_view()}
            <line class="axis" x1=frame.left x2=frame.right y1=frame.bottom y2=frame.bottom></line>
            <line class="axis" x1=frame.left x2=frame.left y1=frame.top y2=frame.bottom></line>
            {D_TICKS.into_iter().zip(d_labels).map(|(d, label)| view! {
                <line class="grid" x1=x_of(d) x2=x_of(d) y1=frame.top y2=frame.bottom></line>
                <text class="tick" x=x_of(d) y=frame.x_labels.middle() text-anchor="middle" dominant-baseline="central">{label}</text>
            }).collect_view()}
            {ticks.into_iter().zip(y_labels).map(|(t, label)| view! {
                <text class="tick" x=frame.left_labels_end y=y_of(t) text-anchor="end" dominant-baseline="central">{label}</text>
            }).collect_view()}
            <text class="axis-title" x=(frame.left + frame.right) / 2.0 y=frame.x_title.middle() text-anchor="middle" dominant-baseline="central">"d_model (log scale)"</text>
            <text class="axis-title" x=title_x y=title_y text-anchor="middle" dominant-baseline="central" transform=format!("rotate(-90 {title_x} {title_y})")>"ε = μ + 2σ"</text>
            {floors}
            {plotted}
            {move || {
                let n = hidden_count();
                (n > 0).then(|| view! {
                    <text class="tick" x=frame.right - 6.0 y=frame.top + 12.0 text-anchor="end">{format!("{n} model(s) outside this range")}</text>
                })
            }}
        </svg>
        // The key of the bands, always there: a label inside a band gives way to the points. Then
        // the markers: a dictionary's features only when the session holds one.
        <ul class="map-legend" aria-label="Key of the map: bands and markers">
            {BANDS.into_iter().filter(|&(from, to, _, _)| from.max(lo) < to.min(hi)).map(|(_, _, class, label)| view! {
                <li><svg class="swatch" viewBox="0 0 12 12" width="12" height="12" aria-hidden="true"><rect class=format!("band {class}") width="12" height="12"></rect></svg>{label}</li>
            }).collect_view()}
            {FLOORS.into_iter().filter(|&(rows, _, _)| {
                // Only where the line shows: a floor below the range is not drawn.
                paper::floor_vs_dim(rows, 512, d_end, 48).iter().any(|&(_, e)| e >= lo && e <= hi)
            }).map(|(_, class, label)| view! {
                <li data-floor=class><svg class="swatch-line" viewBox="0 0 16 12" width="16" height="12" aria-hidden="true"><line class=format!("floor {class}") x1="0" x2="16" y1="6" y2="6"></line></svg>{label}</li>
            }).collect_view()}
            {move || {
                let any_features = points.with(|ps| ps.iter().any(|p| p.features));
                Marker::ALL
                    .into_iter()
                    .filter(|&m| m != Marker::Features || any_features)
                    .map(|m| view! {
                        <li data-marker=m.name()>
                            <svg class="marker" viewBox=format!("0 0 {} 16", m.sample_width()) width=m.sample_width() height="16" aria-hidden="true">
                                {m.sample()}
                            </svg>
                            {m.label()}
                        </li>
                    })
                    .collect_view()
            }}
        </ul>
    }
    .into_any()
}

/// The shapes a point is drawn with: the paper's models, the session's embeddings (and other
/// matrices), and the session's SAE dictionaries, whose features are not embeddings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Marker {
    Paper,
    Yours,
    Features,
}

impl Marker {
    const ALL: [Marker; 3] = [Marker::Paper, Marker::Yours, Marker::Features];

    /// `data-marker` of its legend entry.
    fn name(self) -> &'static str {
        match self {
            Marker::Paper => "paper",
            Marker::Yours => "yours",
            Marker::Features => "features",
        }
    }

    /// Width of its legend sample: the paper's circle twice, in the colours of its two classes.
    fn sample_width(self) -> u32 {
        if self == Marker::Paper {
            26
        } else {
            16
        }
    }

    /// The legend's sample of the marker, classed as a point is.
    fn sample(self) -> AnyView {
        match self {
            Marker::Paper => view! {
                <g class="pt c1">{self.shape(6.0, 8.0)}</g>
                <g class="pt c2">{self.shape(19.0, 8.0)}</g>
            }
            .into_any(),
            Marker::Yours => view! { <g class="pt user">{self.shape(8.0, 8.0)}</g> }.into_any(),
            Marker::Features => view! { <g class="pt user features">{self.shape(8.0, 8.0)}</g> }.into_any(),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Marker::Paper => "a model of the paper's Table 1 (coloured by its class)",
            Marker::Yours => "a matrix analysed here",
            Marker::Features => "an SAE dictionary's features, analysed here",
        }
    }

    /// The marker centred on (x, y): a circle, a diamond, or a triangle pointing up.
    fn shape(self, x: f64, y: f64) -> AnyView {
        match self {
            Marker::Paper => view! { <circle cx=x cy=y r="4.5"></circle> }.into_any(),
            Marker::Yours => {
                let s = 6.5;
                view! { <path d=format!("M{x} {} L{} {y} L{x} {} L{} {y} Z", y - s, x + s, y + s, x - s)></path> }
                    .into_any()
            }
            Marker::Features => {
                // About the diamond's area, its centroid on the point.
                let s = 7.0;
                view! {
                    <path d=format!("M{x} {} L{} {} L{} {} Z", y - s, x + s, y + s / 2.0, x - s, y + s / 2.0)></path>
                }
                .into_any()
            }
        }
    }
}

/// The map's bands of ε: (from, to, CSS class, label).
/// The vocabularies whose ε floor the map draws (`pass::capacity::floor_epsilon`: no V unit
/// vectors in R^d have a smaller ε), with their line's class: Llama 2's and Llama 3's.
const FLOORS: [(u64, &str, &str); 2] = [
    (32_000, "v32k", "no 32,000 rows can have ε below this (Welch)"),
    (128_256, "v128k", "no 128,256 rows can (Welch)"),
];

const BANDS: [(f64, f64, &str, &str); 3] = [
    (0.0, estimate::FINITE_CAPACITY_BELOW, "class2", "Class 2 (ε < 0.1)"),
    (estimate::FINITE_CAPACITY_BELOW, estimate::CLASS_1_ABOVE, "gap", "no model (0.1–0.2)"),
    (estimate::CLASS_1_ABOVE, 2.0, "class1", "Class 1 (ε > 0.2)"),
];

/// Which column the table is sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SortKey {
    Name,
    D,
    Epsilon,
    Capacity,
}

/// The map and the table.
#[component]
pub fn Table1Map(
    /// Page state.
    state: State,
) -> impl IntoView {
    let points = Signal::derive(move || {
        let mut all = paper_points();
        all.extend(state.session.entries.with(|e| user_points(e)));
        all
    });
    let readout = RwSignal::new(String::from("Point at or Tab to a model to read its values."));
    let sort = RwSignal::new((SortKey::Epsilon, true));
    let sorted = move || {
        let (key, ascending) = sort.get();
        let mut rows = points.get();
        rows.sort_by(|a, b| {
            let o = match key {
                SortKey::Name => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
                SortKey::D => a.d.cmp(&b.d),
                SortKey::Epsilon => a.epsilon.total_cmp(&b.epsilon),
                SortKey::Capacity => capacity_order(a).total_cmp(&capacity_order(b)),
            };
            if ascending {
                o
            } else {
                o.reverse()
            }
        });
        rows.into_iter()
            .map(|p| {
                view! {
                    <tr class:user=p.user>
                        <th scope="row">{p.name.clone()}{p.user.then_some(" (yours)")}</th>
                        <td>{group_digits(p.d)}</td>
                        <td>{significant(p.epsilon, 4)}</td>
                        <td>{p.class.label()}</td>
                        <td>{p.capacity.clone()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let header = move |key: SortKey, label: &'static str| {
        let aria = move || match sort.get() {
            (k, true) if k == key => "ascending",
            (k, false) if k == key => "descending",
            _ => "none",
        };
        view! {
            <th scope="col" aria-sort=aria>
                <button type="button" class="sort" on:click=move |_| sort.update(|(k, asc)| {
                    if *k == key { *asc = !*asc } else { *k = key; *asc = true }
                })>{label}</button>
            </th>
        }
    };
    view! {
        <section class="table1" aria-labelledby="table1-title">
            <h2 id="table1-title">"Where it sits: the paper's 45 models"</h2>
            <p class="note">
                "d_model against ε for every model of the paper's Table 1 (circles) and every model analysed here (diamonds, or triangles for an SAE dictionary's features, placed at d = the decoder's width; with their 95 % interval when estimated). "
                <a href=paper::PAPER_URL target="_blank" rel="noopener noreferrer">"The paper"</a>
                " finds two families and nothing between ε = 0.1 and 0.2."
            </p>
            <div class="maps">
                <Scatter range=(0.0, 1.05) ticks=vec![0.0, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0] title="All 45 models: d_model against ε" testid="table1-map" focusable=true points=points readout=readout />
                <Scatter range=(0.035, 0.105) ticks=vec![0.04, 0.06, 0.08, 0.1] title="Zoom on Class 2" testid="table1-map-zoom" focusable=false points=points readout=readout />
            </div>
            <p class="readout" aria-live="polite" data-testid="map-readout">{move || readout.get()}</p>
            <p class="buttons">
                <button type="button" class="small" on:click=move |_| export_map("table1-map", false)>"Map as SVG"</button>
                <button type="button" class="small" on:click=move |_| export_map("table1-map", true)>"Map as PNG"</button>
            </p>
            <details>
                <summary>"Table 1 as a table (sortable)"</summary>
                <div class="table-scroll" tabindex="0" role="region" aria-label="Table 1">
                    <table class="table1-table" data-testid="table1-table">
                        <thead>
                            <tr>
                                {header(SortKey::Name, "Model")}
                                {header(SortKey::D, "d_model")}
                                {header(SortKey::Epsilon, "ε")}
                                <th scope="col">"Class"</th>
                                {header(SortKey::Capacity, "Capacity (Eq. 7)")}
                            </tr>
                        </thead>
                        <tbody>{sorted}</tbody>
                    </table>
                </div>
            </details>
        </section>
    }
}

/// Sort order of capacities: indeterminate (Class 1) above every finite one.
fn capacity_order(p: &Point) -> f64 {
    p.log10_capacity.unwrap_or(f64::INFINITY)
}

/// The map's SVG as a standalone file: its colours come from the page's style sheet, so the rules it
/// uses are written into it with the theme's current values.
fn standalone_svg(testid: &str) -> Option<(String, f64)> {
    let window = web_sys::window()?;
    let document = window.document()?;
    let svg = document.query_selector(&format!("[data-testid=\"{testid}\"]")).ok()??;
    let root = document.document_element()?;
    let css = window.get_computed_style(&root).ok()??;
    let var = |name: &str| css.get_property_value(name).unwrap_or_default().trim().to_string();
    let style = format!(
        "<style>text{{font-family:system-ui,sans-serif}} .band.class1{{fill:{}}} .band.class2{{fill:{}}} .band.gap{{fill:{}}} \
         .band-label{{fill:{};font-size:12px}} .axis{{stroke:{}}} .grid{{stroke:{}}} .tick{{fill:{};font-size:12px}} \
         .axis-title{{fill:{};font-size:12px}} .pt.c1 circle{{fill:{}}} .pt.c2 circle{{fill:{}}} .pt.user path{{fill:{};stroke:{}}} \
         .pt.user.features path{{fill:{}}} .whisker{{stroke:{};stroke-width:2}} .whisker.features{{stroke:{}}} rect.bg{{fill:{}}}</style><rect class=\"bg\" width=\"100%\" height=\"100%\"/>",
        var("--class1"),
        var("--class2"),
        var("--gap"),
        var("--muted"),
        var("--fg"),
        var("--line"),
        var("--fg"),
        var("--fg"),
        var("--pt1"),
        var("--pt2"),
        var("--user"),
        var("--fg"),
        var("--features"),
        var("--user"),
        var("--features"),
        var("--card"),
    );
    let html = svg.outer_html();
    // The map is laid out at the width it is drawn at (`drawn_width`): its viewBox says which.
    let w = svg.get_attribute("viewBox").and_then(|v| v.split_whitespace().nth(2)?.parse::<f64>().ok()).unwrap_or(W);
    // Right after the opening tag, so the background is drawn first.
    let open_end = html.find('>')? + 1;
    let (head, body) = html.split_at(open_end);
    Some((
        format!(
            "{}{style}{body}",
            head.replacen("<svg", &format!("<svg width=\"{}\" height=\"{}\"", w * 2.0, H * 2.0), 1)
        ),
        w,
    ))
}

/// Downloads the map as SVG, or as PNG (the SVG drawn on a canvas: nothing leaves the machine).
fn export_map(testid: &'static str, png: bool) {
    let Some((svg, w)) = standalone_svg(testid) else { return };
    if !png {
        download_text("orthoscope-table1-map.svg", "image/svg+xml", &svg);
        return;
    }
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(&svg));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("image/svg+xml");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
    let Ok(image) = web_sys::HtmlImageElement::new() else { return };
    let loaded = image.clone();
    let source = url.clone();
    let on_load = wasm_bindgen::closure::Closure::once_into_js(move || {
        let _ = web_sys::Url::revoke_object_url(&source);
        let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
        let Some(canvas) =
            document.create_element("canvas").ok().and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
        else {
            return;
        };
        canvas.set_width((w * 2.0) as u32);
        canvas.set_height((H * 2.0) as u32);
        let Some(context) = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok())
        else {
            return;
        };
        let _ = context.draw_image_with_html_image_element(&loaded, 0.0, 0.0);
        if let Ok(data) = canvas.to_data_url_with_type("image/png") {
            click_download("orthoscope-table1-map.png", &data);
        }
    });
    image.set_onload(Some(on_load.unchecked_ref()));
    image.set_src(&url);
}
