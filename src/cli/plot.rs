//! `--plot FILE.svg|png`: the degradation report drawn with plotters, one row per protocol and
//! channel, six columns: mean tip error (log scale), the reported, silent and false-alarm rates
//! with the encoder check, and the silent and false-alarm rates with the camera check (plant
//! protocol), each against the channel's level, one curve per pipeline (held-out targets).
//!
//! The file format, the font and the atomic write come from [`super::figure`], shared with
//! `elbow atlas`.

use super::figure::{Canvas, FONT, Output};
use elbow::experiments::DegradationReport;
use elbow::experiments::degradation::{Cell, Channel, Protocol, Split};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Checks, before any work, that `path` ends in `.svg` or `.png` and that its folder exists.
pub(crate) fn check_path(path: &Path) -> Result<Output, String> {
    Output::new(path).map_err(|e| format!("--plot {e}"))
}

const WIDTH: u32 = 2400;
const ROW: u32 = 250;
const HEADER: u32 = 90;

/// The rows: every protocol that ran, every channel it swept.
fn rows(r: &DegradationReport) -> Vec<(Protocol, Channel)> {
    r.protocols().into_iter().flat_map(|p| r.channels(p).into_iter().map(move |c| (p, c))).collect()
}

/// Draws `r` into `out`.
pub(crate) fn draw(r: &DegradationReport, out: &Output) -> Result<(), String> {
    let size = (WIDTH, HEADER + ROW * rows(r).len().max(1) as u32);
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", out.path.display());
    out.render(size, |canvas| match canvas {
        Canvas::Svg(root) => paint(r, root).map_err(|e| fail(&e)),
        Canvas::Bitmap(root) => paint(r, root).map_err(|e| fail(&e)),
    })
}

/// Colours of the pipelines, in line-up order (bare, then enveloped in a lighter shade).
fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 10] = [
        RGBColor(0, 0, 0),
        RGBColor(120, 120, 120),
        RGBColor(214, 39, 40),
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 152, 150),
        RGBColor(120, 180, 230),
        RGBColor(150, 220, 140),
        RGBColor(200, 170, 230),
    ];
    C[i % C.len()]
}

/// The points of a series that can be drawn: a non-finite value (an infinite mean error, a NaN
/// rate) is left out, since plotters' axes loop forever on one (the table and JSON still show
/// it, as `inf` or `NaN`).
fn drawable(points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    points.filter(|(x, y)| x.is_finite() && y.is_finite()).collect()
}

type Panel<'a, DB> = DrawingArea<DB, Shift>;
type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn paint<DB: DrawingBackend>(r: &DegradationReport, root: &Panel<'_, DB>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    head.draw(&Text::new(
        "The gap to reality: held-out targets, one curve per pipeline (lighter: inside the envelope)",
        (10, 8),
        (FONT, 18),
    ))?;
    let pipes = r.pipelines();
    for (i, p) in pipes.iter().enumerate() {
        let (x, y) = (10 + (i as i32 % 5) * 300, 38 + (i as i32 / 5) * 22);
        head.draw(&PathElement::new(vec![(x, y + 8), (x + 30, y + 8)], colour(i).stroke_width(3)))?;
        head.draw(&Text::new(p.key(), (x + 36, y), (FONT, 15)))?;
    }
    let rows = rows(r);
    type Metric = (&'static str, fn(&Cell) -> f64, bool);
    let metrics: [Metric; 6] = [
        ("mean error (m, log)", |c| c.error.mean.max(1e-5), true),
        ("reported", |c| c.reported, false),
        ("SILENT (missed, not reported)", |c| c.silent, false),
        ("false alarm", |c| c.false_alarm, false),
        ("camera check: SILENT", |c| c.camera.map_or(f64::NAN, |k| k.silent), false),
        ("camera check: false alarm", |c| c.camera.map_or(f64::NAN, |k| k.false_alarm), false),
    ];
    let panels = body.split_evenly((rows.len().max(1), metrics.len()));
    for (row, &(protocol, channel)) in rows.iter().enumerate() {
        let series: Vec<Vec<&Cell>> = pipes.iter().map(|&p| r.series(protocol, p, channel, Split::In)).collect();
        let x_max = series.iter().flatten().map(|c| c.level).filter(|v| v.is_finite()).fold(0.0, f64::max).max(1e-9);
        for (col, (name, value, log)) in metrics.iter().enumerate() {
            let area = &panels[row * metrics.len() + col];
            let caption = format!("[{protocol}] {} ({}): {name}", channel.key(), channel.unit());
            let mut chart = ChartBuilder::on(area);
            chart.caption(caption, (FONT, 14)).margin(6).x_label_area_size(22).y_label_area_size(48);
            let points = |cells: &Vec<&Cell>| drawable(cells.iter().map(|c| (c.level, value(c))));
            if *log {
                let finite = series.iter().flatten().map(|c| value(c)).filter(|v| v.is_finite());
                let top = finite.fold(1e-4, f64::max) * 1.5;
                let mut c = chart.build_cartesian_2d(0.0..x_max, (1e-5..top).log_scale())?;
                c.configure_mesh().x_labels(5).y_labels(5).draw()?;
                for (i, s) in series.iter().enumerate() {
                    c.draw_series(LineSeries::new(points(s), colour(i).stroke_width(2)))?;
                }
            } else {
                let mut c = chart.build_cartesian_2d(0.0..x_max, 0.0..1.0)?;
                c.configure_mesh().x_labels(5).y_labels(5).draw()?;
                for (i, s) in series.iter().enumerate() {
                    c.draw_series(LineSeries::new(points(s), colour(i).stroke_width(2)))?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_values_are_left_out_of_the_series() {
        let points = [(0.0, 1.0), (0.1, f64::INFINITY), (0.2, f64::NAN), (f64::NAN, 1.0), (0.3, 2.0)];
        assert_eq!(drawable(points.into_iter()), vec![(0.0, 1.0), (0.3, 2.0)]);
    }
}
