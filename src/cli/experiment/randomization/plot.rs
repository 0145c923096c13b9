//! `elbow experiment randomization --plot FILE.svg|png`: the report as grouped bars, one group
//! per plant set (the nominal plant, plants inside the randomized ranges, plants outside them),
//! one bar per solver and training (the closed form; each head trained nominally, lighter, and
//! with randomization, full colour), in four panels: mean tip error, success rate, and the share
//! of failed moves the encoder check and the camera check catch. Below them, the feedback
//! comparison: mean tip error against the move's index in an episode, one line per pipeline,
//! inside the ranges and outside them.
//!
//! The file format, the font and the atomic write come from [`crate::cli::figure`].

use crate::cli::figure::{Canvas, FONT, Output};
use elbow::experiments::feedback::{FeedbackReport, Pipeline, Role};
use elbow::experiments::feedback_chain::ChainFeedbackReport;
use elbow::experiments::randomization::{PlantSet, RandomizationReport, Row, Training};
use elbow::lineup::SolverId;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Checks, before any work, that `path` ends in `.svg` or `.png` and that its folder exists.
pub(crate) fn check_path(path: &Path) -> Result<Output, String> {
    Output::new(path).map_err(|e| format!("--plot {e}"))
}

const WIDTH: u32 = 1400;
const PANEL: u32 = 380;
const HEADER: u32 = 80;

/// The plant sets, in group order, with their labels.
const SETS: [(PlantSet, &str); 3] = [
    (PlantSet::Nominal, "nominal plant"),
    (PlantSet::Inside, "inside the ranges"),
    (PlantSet::Outside, "outside the ranges"),
];

/// Draws `r` into `out`.
pub(crate) fn draw(r: &RandomizationReport, out: &Output) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", out.path.display());
    out.render((WIDTH, HEADER + 3 * PANEL), |canvas| match canvas {
        Canvas::Svg(root) => paint(r, root).map_err(|e| fail(&e)),
        Canvas::Bitmap(root) => paint(r, root).map_err(|e| fail(&e)),
    })
}

/// Draws a chain's feedback comparison `r` into `out`: the two panels of error against move,
/// inside the ranges and outside them, one line per pipeline.
pub(crate) fn draw_chain(r: &ChainFeedbackReport, out: &Output) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", out.path.display());
    out.render((WIDTH, HEADER + PANEL), |canvas| match canvas {
        Canvas::Svg(root) => paint_chain(r, root).map_err(|e| fail(&e)),
        Canvas::Bitmap(root) => paint_chain(r, root).map_err(|e| fail(&e)),
    })
}

fn paint_chain<DB: DrawingBackend>(r: &ChainFeedbackReport, root: &Area<DB>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    let title = format!(
        "Domain randomization on {}: the feedback head against DLS, its one-step correction and calibration; {} test plants per set",
        r.arm, r.config.plants
    );
    head.draw(&Text::new(title, (10, 8), (FONT, 18)))?;
    paint_feedback_panels(&r.feedback, &body)
}

/// The feedback comparison's two panels, inside the ranges and outside them.
fn paint_feedback_panels<P: Pipeline, DB: DrawingBackend>(f: &FeedbackReport<P>, area: &Area<DB>) -> DrawResult<DB> {
    for (area, (set, name)) in area.split_evenly((1, 2)).iter().zip([
        (PlantSet::Inside, "feedback: mean tip error (mm) by move in an episode, inside the ranges"),
        (PlantSet::Outside, "feedback: mean tip error (mm) by move in an episode, outside the ranges"),
    ]) {
        paint_feedback(f, set, name, area)?;
    }
    Ok(())
}

/// The bars of each group, in the report's row order: every (solver, training) that has a row.
fn series(r: &RandomizationReport) -> Vec<(SolverId, Training)> {
    let mut out: Vec<(SolverId, Training)> = Vec::new();
    for row in &r.rows {
        if !out.contains(&(row.solver, row.training)) {
            out.push((row.solver, row.training));
        }
    }
    out
}

/// Colour of a bar: grey for the closed form, a hue per head, lighter when trained nominally.
fn colour((solver, training): (SolverId, Training)) -> RGBColor {
    const HUES: [RGBColor; 4] =
        [RGBColor(31, 119, 180), RGBColor(214, 39, 40), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];
    let Some(head) = solver.head() else { return RGBColor(90, 90, 90) };
    let RGBColor(r, g, b) = HUES[head.index() % HUES.len()];
    let light = |c: u8| (c as u16 + 2 * (255 - c as u16) / 3) as u8;
    match training {
        Training::Nominal => RGBColor(light(r), light(g), light(b)),
        Training::None | Training::Randomized => RGBColor(r, g, b),
    }
}

/// A bar's legend label (`elbow-down`, `mdn nominal`, `mdn randomized`).
fn label((solver, training): (SolverId, Training)) -> String {
    match training {
        Training::None => solver.key().to_string(),
        Training::Nominal => format!("{} trained nominal", solver.key()),
        Training::Randomized => format!("{} randomized", solver.key()),
    }
}

type Area<DB> = DrawingArea<DB, Shift>;
type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A panel: its title, the value of a row (non-finite values are not drawn), and the top of
/// its axis (`None`: from the data, with each bar's value written on it).
type Metric = (&'static str, fn(&Row) -> f64, Option<f64>);

fn paint<DB: DrawingBackend>(r: &RandomizationReport, root: &Area<DB>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    let title = format!(
        "Domain randomization: {} test plants inside and outside the ranges, {} targets each; failed = tip off by > {} m",
        r.config.plants, r.config.targets, r.config.tolerance
    );
    head.draw(&Text::new(title, (10, 8), (FONT, 18)))?;
    let bars = series(r);
    for (i, &bar) in bars.iter().enumerate() {
        let (x, y) = (10 + i as i32 * 260, 44);
        head.draw(&Rectangle::new([(x, y), (x + 24, y + 14)], colour(bar).filled()))?;
        head.draw(&Text::new(label(bar), (x + 30, y), (FONT, 15)))?;
    }
    let metrics: [Metric; 4] = [
        ("mean tip error (mm)", |row| row.error.mean * 1e3, None),
        ("success rate (%)", |row| row.success_rate * 100.0, Some(100.0)),
        (
            "failed moves the encoder check catches (%; 0 when none failed)",
            |row| row.encoder_check_catches * 100.0,
            Some(100.0),
        ),
        (
            "failed moves the camera check catches (%; 0 when none failed)",
            |row| row.camera_check_catches * 100.0,
            Some(100.0),
        ),
    ];
    let (bars_area, feedback_area) = body.split_vertically(2 * PANEL);
    for (area, (name, value, top)) in bars_area.split_evenly((2, 2)).iter().zip(metrics) {
        let values = |set: PlantSet| -> Vec<f64> {
            bars.iter().map(|&(solver, training)| r.row(solver, training, set).map_or(f64::NAN, value)).collect()
        };
        let highest = SETS.iter().flat_map(|&(set, _)| values(set)).filter(|v| v.is_finite()).fold(0.0, f64::max);
        // Panels scaled to the data show each bar's value.
        let labelled = top.is_none();
        // A finite axis (plotters' axes loop forever on a non-finite one).
        let top = top.unwrap_or(highest * 1.15).clamp(1e-3, 1e12);
        let mut chart = ChartBuilder::on(area)
            .caption(name, (FONT, 16))
            .margin(10)
            .x_label_area_size(26)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.5..SETS.len() as f64 - 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(SETS.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                let near = (x - i).abs() < 1e-9 && i >= 0.0;
                SETS.get(i as usize).filter(|_| near).map_or(String::new(), |s| s.1.to_string())
            })
            .y_labels(6)
            .light_line_style(WHITE)
            .label_style((FONT, 13))
            .draw()?;
        let width = 0.8 / bars.len().max(1) as f64;
        for (g, &(set, _)) in SETS.iter().enumerate() {
            for (k, (&bar, v)) in bars.iter().zip(values(set)).enumerate() {
                if !v.is_finite() {
                    continue;
                }
                let x0 = g as f64 - 0.4 + k as f64 * width;
                let x1 = x0 + 0.9 * width;
                chart.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, v)], colour(bar).filled())))?;
                if labelled {
                    let style = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
                    let text = Text::new(format!("{v:.0}"), ((x0 + x1) / 2.0, v), style);
                    chart.draw_series(std::iter::once(text))?;
                }
            }
        }
    }
    paint_feedback_panels(&r.feedback, &feedback_area)?;
    Ok(())
}

/// Colour of a feedback pipeline's line, by what it does (the same on every arm).
fn feedback_colour(role: Role) -> RGBColor {
    match role {
        Role::OpenLoop => RGBColor(90, 90, 90),
        Role::OneStep => RGBColor(31, 119, 180),
        Role::Calibrated => RGBColor(44, 160, 44),
        Role::HeadNominal => RGBColor(240, 170, 120),
        Role::HeadRandomized => RGBColor(214, 39, 40),
        Role::HeadNoHistory => RGBColor(148, 103, 189),
    }
}

/// One panel of the feedback comparison: error against move index, a line per pipeline.
fn paint_feedback<P: Pipeline, DB: DrawingBackend>(
    f: &FeedbackReport<P>,
    set: PlantSet,
    name: &str,
    area: &Area<DB>,
) -> DrawResult<DB> {
    let rows: Vec<_> = f.rows.iter().filter(|row| row.plants == set).collect();
    let moves = f.config.moves;
    let highest =
        rows.iter().flat_map(|row| row.per_move.iter()).filter(|v| v.is_finite()).fold(0.0, |a, &b| f64::max(a, b));
    let top = (highest * 1e3 * 1.15).clamp(1e-3, 1e12);
    let mut chart = ChartBuilder::on(area)
        .caption(name, (FONT, 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(50)
        .build_cartesian_2d(0.5..moves as f64 + 0.5, 0.0..top)?;
    chart
        .configure_mesh()
        .x_labels(moves)
        .x_label_formatter(&|x| format!("{:.0}", x))
        .x_desc("move (1: no history yet)")
        .y_labels(6)
        .light_line_style(WHITE)
        .label_style((FONT, 13))
        .draw()?;
    for row in rows {
        let colour = feedback_colour(row.pipeline.role());
        let points: Vec<(f64, f64)> = row
            .per_move
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(m, v)| ((m + 1) as f64, v * 1e3))
            .collect();
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
            .label(row.pipeline.name())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((FONT, 12))
        .position(SeriesLabelPosition::LowerLeft)
        .draw()?;
    Ok(())
}
