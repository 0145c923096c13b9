//! `--plot FILE.svg|png`: the degradation report drawn with plotters, one row per protocol and
//! channel, four columns: mean tip error (log scale) and the reported, silent and false-alarm
//! rates, each against the channel's level, one curve per pipeline (held-out targets).
//!
//! SVG is written by plotters' SVG backend; PNG is drawn into an RGB buffer and encoded with the
//! `image` crate. Text uses the Hack font that egui ships. The file is written to a temporary
//! name beside it, then renamed, so a failed run never leaves half a plot.

use elbow::experiments::DegradationReport;
use elbow::experiments::degradation::{Cell, Channel, Protocol, Split};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A plot file format, from the file's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Scalable vector graphics.
    Svg,
    /// A PNG bitmap.
    Png,
}

/// The temporary file beside `path` that the plot is written to before the rename.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(|| "plot".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Checks, before any work, that `path` ends in `.svg` or `.png` and that its folder exists and
/// takes a new file.
pub(crate) fn check_path(path: &Path) -> Result<Format, String> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    let format = match ext.as_deref() {
        Some("svg") => Format::Svg,
        Some("png") => Format::Png,
        _ => return Err(format!("--plot {}: the file must end in .svg or .png", path.display())),
    };
    if path.is_dir() {
        return Err(format!("--plot {}: is a folder", path.display()));
    }
    let tmp = temp_path(path);
    std::fs::write(&tmp, b"").map_err(|e| format!("--plot {}: cannot write there: {e}", path.display()))?;
    let _ = std::fs::remove_file(&tmp);
    Ok(format)
}

const WIDTH: u32 = 1800;
const ROW: u32 = 270;
const HEADER: u32 = 90;

/// The rows: every protocol that ran, every channel it swept.
fn rows(r: &DegradationReport) -> Vec<(Protocol, Channel)> {
    r.protocols().into_iter().flat_map(|p| r.channels(p).into_iter().map(move |c| (p, c))).collect()
}

/// Draws `r` into `path` in `format`.
pub(crate) fn draw(r: &DegradationReport, path: &Path, format: Format) -> Result<(), String> {
    // Registering twice only replaces the entry; a font that fails to parse is a build defect.
    plotters::style::register_font("sans-serif", FontStyle::Normal, epaint_default_fonts::HACK_REGULAR)
        .map_err(|_| "the embedded plot font could not be read".to_string())?;
    let size = (WIDTH, HEADER + ROW * rows(r).len().max(1) as u32);
    let tmp = temp_path(path);
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", path.display());
    match format {
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                paint(r, &root).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            std::fs::write(&tmp, text).map_err(|e| fail(&e))?;
        }
        Format::Png => {
            let mut buf = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
                paint(r, &root).map_err(|e| fail(&e))?;
                root.present().map_err(|e| fail(&e))?;
            }
            let img = image::RgbImage::from_raw(size.0, size.1, buf).ok_or_else(|| fail(&"buffer size"))?;
            img.save_with_format(&tmp, image::ImageFormat::Png).map_err(|e| fail(&e))?;
        }
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(&e)
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

type Panel<'a, DB> = DrawingArea<DB, Shift>;
type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn paint<DB: DrawingBackend>(r: &DegradationReport, root: &Panel<'_, DB>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    head.draw(&Text::new(
        "The gap to reality: held-out targets, one curve per pipeline (lighter: inside the envelope)",
        (10, 8),
        ("sans-serif", 18),
    ))?;
    let pipes = r.pipelines();
    for (i, p) in pipes.iter().enumerate() {
        let (x, y) = (10 + (i as i32 % 5) * 300, 38 + (i as i32 / 5) * 22);
        head.draw(&PathElement::new(vec![(x, y + 8), (x + 30, y + 8)], colour(i).stroke_width(3)))?;
        head.draw(&Text::new(p.key(), (x + 36, y), ("sans-serif", 15)))?;
    }
    let rows = rows(r);
    let panels = body.split_evenly((rows.len().max(1), 4));
    type Metric = (&'static str, fn(&Cell) -> f64, bool);
    let metrics: [Metric; 4] = [
        ("mean error (m, log)", |c| c.error.mean.max(1e-5), true),
        ("reported", |c| c.reported, false),
        ("SILENT (missed, not reported)", |c| c.silent, false),
        ("false alarm", |c| c.false_alarm, false),
    ];
    for (row, &(protocol, channel)) in rows.iter().enumerate() {
        let series: Vec<Vec<&Cell>> = pipes.iter().map(|&p| r.series(protocol, p, channel, Split::In)).collect();
        let x_max = series.iter().flatten().map(|c| c.level).fold(0.0, f64::max).max(1e-9);
        for (col, (name, value, log)) in metrics.iter().enumerate() {
            let area = &panels[row * 4 + col];
            let caption = format!("[{protocol}] {} ({}): {name}", channel.key(), channel.unit());
            let mut chart = ChartBuilder::on(area);
            chart.caption(caption, ("sans-serif", 14)).margin(6).x_label_area_size(22).y_label_area_size(48);
            let points = |cells: &Vec<&Cell>| cells.iter().map(|c| (c.level, value(c))).collect::<Vec<_>>();
            if *log {
                let top = series.iter().flatten().map(|c| value(c)).fold(1e-4, f64::max) * 1.5;
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
