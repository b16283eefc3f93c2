//! The pen over one drawing area and what it draws: the furniture (title, legend, axes, grid, ticks),
//! off-range arrows and centred messages.

use plotters::coord::Shift;
use plotters::element::{DashedPathElement, PathElement, Polygon, Rectangle};
use plotters::prelude::{DrawingArea, DrawingBackend};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, FontStyle, IntoFont, RGBColor, TextStyle};

use super::*;

/// Drawing helpers over one area, mapping errors to [`ChartError`].
pub struct Pen<'a, DB: DrawingBackend> {
    pub area: &'a DrawingArea<DB, Shift>,
    pub s: Sizes,
}

fn backend_error<E: std::fmt::Display>(e: E) -> ChartError {
    ChartError::Backend(e.to_string())
}

impl<DB: DrawingBackend> Pen<'_, DB> {
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &self,
        text: &str,
        (x, y): (i32, i32),
        css: f64,
        colour: RGBColor,
        h: HPos,
        v: VPos,
        bold: bool,
    ) -> Result<(), ChartError> {
        let size = self.s.text_px(css) * self.s.font;
        let font =
            if bold { ("sans-serif", size, FontStyle::Bold).into_font() } else { ("sans-serif", size).into_font() };
        let style = TextStyle::from(font).color(&colour).pos(Pos::new(h, v));
        self.area.draw_text(text, &style, (x, y)).map_err(backend_error)
    }

    pub fn path(&self, points: Vec<(i32, i32)>, colour: RGBColor, css_width: f64) -> Result<(), ChartError> {
        if points.len() < 2 {
            return Ok(());
        }
        self.area.draw(&PathElement::new(points, colour.stroke_width(self.s.stroke(css_width)))).map_err(backend_error)
    }

    pub fn dashed(&self, points: Vec<(i32, i32)>, colour: RGBColor, css_width: f64) -> Result<(), ChartError> {
        if points.len() < 2 {
            return Ok(());
        }
        let (dash, gap) = (self.s.len(5.0).max(2), self.s.len(3.5).max(2));
        self.area
            .draw(&DashedPathElement::new(points, dash, gap, colour.stroke_width(self.s.stroke(css_width))))
            .map_err(backend_error)
    }

    pub fn fill_rect(
        &self,
        (x0, y0): (i32, i32),
        (x1, y1): (i32, i32),
        colour: RGBColor,
        alpha: f64,
    ) -> Result<(), ChartError> {
        if x1 <= x0 || y1 <= y0 {
            return Ok(());
        }
        self.area.draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.mix(alpha).filled())).map_err(backend_error)
    }

    pub fn stroke_rect(
        &self,
        (x0, y0): (i32, i32),
        (x1, y1): (i32, i32),
        colour: RGBColor,
        css_width: f64,
    ) -> Result<(), ChartError> {
        self.area
            .draw(&Rectangle::new([(x0, y0), (x1, y1)], colour.stroke_width(self.s.stroke(css_width))))
            .map_err(backend_error)
    }

    pub fn triangle(&self, points: [(i32, i32); 3], colour: RGBColor) -> Result<(), ChartError> {
        self.area.draw(&Polygon::new(points.to_vec(), colour.filled())).map_err(backend_error)
    }
}

/// Title, legend, axis titles, frame, grid, ticks and tick labels.
#[allow(clippy::too_many_arguments)]
pub fn draw_furniture<DB: DrawingBackend>(
    pen: &Pen<DB>,
    l: &Layout,
    theme: &Theme,
    title: &str,
    legend: &[LegendItem],
    x_ticks: &[(f64, String)],
    y_ticks: &[(f64, String)],
    x_title: &str,
    y_title: &str,
) -> Result<(), ChartError> {
    let s = pen.s;
    let f = l.frame;
    pen.text(title, l.title, FONT_TITLE, theme.text, HPos::Left, VPos::Top, true)?;
    for (item, &(x, y)) in legend.iter().zip(&l.legend) {
        let mid = y + s.line(FONT_LEGEND) / 2;
        let x1 = x + s.len(SWATCH);
        match item.swatch {
            Swatch::Line(c) => pen.path(vec![(x, mid), (x1, mid)], c, 2.0)?,
            Swatch::Dashed(c) => pen.dashed(vec![(x, mid), (x1, mid)], c, 2.0)?,
            Swatch::Band(c) => {
                let half = s.line(FONT_LEGEND) / 3;
                pen.fill_rect((x, mid - half), (x1, mid + half), c, (BAND_ALPHA * 2.0).min(1.0))?
            }
        }
        pen.text(&item.label, (x1 + s.len(GAP), y), FONT_LEGEND, theme.text, HPos::Left, VPos::Top, false)?;
    }
    pen.text(y_title, l.y_title, FONT_AXIS, theme.muted, HPos::Left, VPos::Top, false)?;
    for (v, label) in y_ticks {
        let y = f.py(*v);
        pen.path(vec![(f.left, y), (f.right, y)], theme.grid, 1.0)?;
        pen.path(vec![(f.left - s.len(TICK), y), (f.left, y)], theme.frame, 1.0)?;
        pen.text(
            label,
            (f.left - s.len(TICK) - s.len(GAP), y),
            FONT_TICK,
            theme.text,
            HPos::Right,
            VPos::Center,
            false,
        )?;
    }
    for (v, label) in x_ticks {
        let x = f.px(*v);
        pen.path(vec![(x, f.bottom), (x, f.bottom + s.len(TICK))], theme.frame, 1.0)?;
        pen.text(label, (x, l.x_labels_top), FONT_TICK, theme.text, HPos::Center, VPos::Top, false)?;
    }
    pen.text(x_title, ((f.left + f.right) / 2, l.x_title_top), FONT_AXIS, theme.muted, HPos::Center, VPos::Top, false)?;
    Ok(())
}

/// The frame outline, drawn last over the data so that its edges stay crisp.
pub fn draw_frame<DB: DrawingBackend>(pen: &Pen<DB>, f: &Frame, theme: &Theme) -> Result<(), ChartError> {
    pen.stroke_rect((f.left, f.top), (f.right, f.bottom), theme.frame, 1.0)
}

/// Which side of the frame an off-range value lies on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

/// A small arrowhead in the strip just above the frame, at its `side` corner pointing outwards (the
/// `slot`-th, moving inwards), for a marker whose value lies off the visible range. The strip holds
/// only the upper half of the top y tick label, which sits left of the frame, so the arrow covers
/// neither data nor text.
pub fn draw_off_range_arrow<DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    side: Side,
    slot: i32,
    colour: RGBColor,
) -> Result<(), ChartError> {
    let s = pen.s;
    let half = s.len(ARROW_HALF).max(2);
    let y = f.top - s.len(ARROW_ABOVE);
    let step = slot * (2 * half + s.len(3.0));
    let pts = match side {
        Side::Right => {
            let tip = f.right - step;
            [(tip, y), (tip - 2 * half, y - half), (tip - 2 * half, y + half)]
        }
        Side::Left => {
            let tip = f.left + step;
            [(tip, y), (tip + 2 * half, y - half), (tip + 2 * half, y + half)]
        }
    };
    pen.triangle(pts, colour)
}

/// A message centred in the frame (empty data).
pub fn draw_centred_message<DB: DrawingBackend>(
    pen: &Pen<DB>,
    f: &Frame,
    theme: &Theme,
    text: &str,
) -> Result<(), ChartError> {
    pen.text(
        text,
        ((f.left + f.right) / 2, (f.top + f.bottom) / 2),
        FONT_LEGEND,
        theme.muted,
        HPos::Center,
        VPos::Center,
        false,
    )
}

/// Removes consecutive duplicate pixels, which a 300-bin step line at a few hundred pixels is full of.
pub fn dedup_pixels(points: Vec<(i32, i32)>) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for p in points {
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}
