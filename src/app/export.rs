//! Live plots and their export. Every plot in the panel draws from a list of [`Series`] through
//! [`show`]: a legend, y ticks labelled in the quantity (log10 data in decades of metres or of
//! the loss), and a robust y range ([`robust_range`]: a lone spike runs off the top instead of
//! flattening every other curve). Its `png` and `svg` buttons write the same series, the same
//! range and the same tick labels (plotters, through the command line's figure code) to a new
//! numbered file in the folder the app was started in (`elbow-<plot>-<n>.<ext>`, never replacing
//! an earlier one), atomically, and show the whole path under the plot.

use super::format::color32;
use crate::cli::figure::{Output, Series, YAxis, line_chart};
use bevy::prelude::Color;
use bevy_egui::egui;
use egui_plot::{AxisHints, Corner, GridInput, GridMark, Legend, Line, LineStyle, Plot, PlotPoints, PlotUi};
use std::path::{Path, PathBuf};

/// Height of each plot, logical pixels.
pub(crate) const PLOT_HEIGHT: f32 = 140.0;

/// A series in the app's colours.
pub(crate) fn series(name: impl Into<String>, color: Color, points: Vec<[f64; 2]>, dashed: bool) -> Series {
    let c = color32(color);
    let [r, g, b] = [c.r(), c.g(), c.b()];
    Series { name: name.into(), rgb: [r, g, b], points, dashed }
}

/// What a plot's y values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum YScale {
    /// The values themselves.
    Linear,
    /// log10 of a plain number (a loss): ticks read `1e-3`.
    Log,
    /// log10 of metres: ticks read `1 mm`, `10 cm`.
    LogMetres,
}

impl YScale {
    /// The label of the tick at `v`.
    pub(crate) fn label(self, v: f64) -> String {
        if !v.is_finite() {
            return String::new();
        }
        match self {
            YScale::Linear => {
                let digits = if v.abs() >= 100.0 || v == v.round() { 0 } else { 2 };
                format!("{v:.digits$}")
            }
            YScale::Log => format!("1e{}", v.round() as i64),
            YScale::LogMetres => {
                let x = 10f64.powf(v);
                let (value, unit) = match x {
                    x if x >= 1.0 => (x, "m"),
                    x if x >= 1e-2 => (x * 1e2, "cm"),
                    x if x >= 1e-3 => (x * 1e3, "mm"),
                    x => (x * 1e6, "µm"),
                };
                let digits = if (value - value.round()).abs() < 1e-6 { 0 } else { 1 };
                format!("{value:.digits$} {unit}")
            }
        }
    }

    /// Tick values for a y range `(lo, hi)`: whole decades on a log scale (every second one over
    /// more than eight), or none for a linear one (egui's own spacing then).
    fn decades(self, (lo, hi): (f64, f64)) -> Option<Vec<f64>> {
        if self == YScale::Linear || !(lo.is_finite() && hi.is_finite()) || hi - lo < 1.0 || hi - lo > 40.0 {
            return None;
        }
        let step = if hi - lo > 8.0 { 2 } else { 1 };
        Some((lo.ceil() as i64..=hi.floor() as i64).filter(|k| k % step == 0).map(|k| k as f64).collect())
    }
}

/// The y range a plot shows: the 2nd to the 98th percentile of its finite values, widened by a
/// tenth of that span each way (at least 0.5 either side of a flat line) and to every value of
/// `include`. `None` without data.
pub(crate) fn robust_range(all: &[Series], include: &[f64]) -> Option<(f64, f64)> {
    let mut ys: Vec<f64> = all.iter().flat_map(|s| s.points.iter().map(|p| p[1])).filter(|y| y.is_finite()).collect();
    if ys.is_empty() {
        return None;
    }
    ys.sort_by(f64::total_cmp);
    let at = |q: f64| ys[((ys.len() - 1) as f64 * q).round() as usize];
    let (lo, hi) = (at(0.02), at(0.98));
    let pad = if hi > lo { 0.1 * (hi - lo) } else { 0.5 };
    let (mut lo, mut hi) = (lo - pad, hi + pad);
    for &v in include.iter().filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    Some((lo, hi))
}

/// Draws every series of `all` into a live plot.
fn lines(plot: &mut PlotUi<'_>, all: &[Series]) {
    for s in all {
        let [r, g, b] = s.rgb;
        let mut line =
            Line::new(s.name.clone(), PlotPoints::from(s.points.clone())).color(egui::Color32::from_rgb(r, g, b));
        if s.dashed {
            line = line.style(LineStyle::dashed_dense());
        }
        plot.line(line);
    }
}

/// Plots with more series than this get their legend below ([`legend_row`]), not over the lines.
pub(crate) const LEGEND_INSIDE: usize = 4;

/// A live plot of `all` with `scale`'s tick labels and the robust y range (widened to
/// `include`), its legend inside when it has at most [`LEGEND_INSIDE`] series (else the caller
/// draws [`legend_row`] under it); `extra` draws markers on top (the slider's value).
pub(crate) fn show(
    ui: &mut egui::Ui,
    id: &str,
    scale: YScale,
    include: &[f64],
    all: &[Series],
    extra: impl FnOnce(&mut PlotUi<'_>),
) {
    let range = robust_range(all, include);
    let mut plot = Plot::new(id)
        .height(PLOT_HEIGHT)
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .y_axis_min_width(44.0)
        // Narrow plots still label their x axis (egui's default spacing leaves only the 0).
        .custom_x_axes(vec![AxisHints::new_x().label_spacing(18.0..=40.0)])
        .y_axis_formatter(move |mark, _| scale.label(mark.value));
    if all.len() <= LEGEND_INSIDE {
        let legend = Legend::default().position(Corner::LeftTop).text_style(egui::TextStyle::Small);
        plot = plot.legend(legend.background_alpha(0.7));
    }
    if scale != YScale::Linear {
        plot = plot.y_grid_spacer(move |input: GridInput| match scale.decades(input.bounds) {
            Some(ticks) => ticks.into_iter().map(|value| GridMark { value, step_size: 1.0 }).collect(),
            None => egui_plot::log_grid_spacer(10)(input),
        });
    }
    plot.show(ui, |plot| {
        if let Some((lo, hi)) = range {
            plot.set_auto_bounds([true, false]);
            plot.set_plot_bounds_y(lo..=hi);
        }
        extra(plot);
        lines(plot, all);
    });
}

/// The legend of plots with many series, as a wrapped row of coloured names under them; a name
/// that only differs by the envelope around it (drawn dashed in the same colour) is listed once.
pub(crate) fn legend_row(ui: &mut egui::Ui, all: &[Series], note: &str) {
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 8.0;
        let mut seen = Vec::new();
        for s in all {
            let name = s.name.strip_prefix("envelope(").and_then(|n| n.strip_suffix(')')).unwrap_or(&s.name);
            if seen.contains(&name) {
                continue;
            }
            seen.push(name);
            let [r, g, b] = s.rgb;
            ui.label(egui::RichText::new(format!("— {name}")).small().color(egui::Color32::from_rgb(r, g, b)));
        }
        if !note.is_empty() {
            ui.small(note);
        }
    });
}

/// The first `elbow-<id>-<n>.<ext>` in `dir` that does not exist yet (`n` from 1).
pub(crate) fn fresh_path(dir: &Path, id: &str, ext: &str) -> PathBuf {
    (1u32..)
        .map(|n| dir.join(format!("elbow-{id}-{n}.{ext}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| dir.join(format!("elbow-{id}.{ext}")))
}

/// Writes `all` to a new numbered file in the start folder: the path written, or why not.
fn write(id: &str, ext: &str, title: &str, axes: (&str, &str), all: &[Series], y: &YAxis) -> Result<String, String> {
    let dir = std::env::current_dir().map_err(|e| format!("cannot find the start folder: {e}"))?;
    write_to(&fresh_path(&dir, id, ext), title, axes, all, y)
}

/// Writes `all` to `path` (`.png` or `.svg`): what was written, or why not.
fn write_to(path: &Path, title: &str, axes: (&str, &str), all: &[Series], y: &YAxis) -> Result<String, String> {
    let out = Output::new(path)?;
    line_chart(&out, title, axes, all, y)?;
    Ok(format!("wrote {}", path.display()))
}

/// The `png` and `svg` buttons of one plot (drawn by [`show`] with `scale` and `include`), and
/// the last outcome of either.
#[allow(clippy::too_many_arguments)]
pub(crate) fn buttons(
    ui: &mut egui::Ui,
    id: &str,
    title: &str,
    axes: (&str, &str),
    scale: YScale,
    include: &[f64],
    all: &[Series],
) {
    let key = egui::Id::new(("plot-export", id));
    ui.horizontal_wrapped(|ui| {
        for ext in ["png", "svg"] {
            let hint = format!("save this plot as a new file, elbow-{id}-N.{ext}, in the folder the app started in");
            if ui.small_button(ext).on_hover_text(hint).clicked() {
                let label = move |v: f64| scale.label(v);
                let y = YAxis { range: robust_range(all, include), label: &label };
                let outcome = write(id, ext, title, axes, all, &y);
                ui.data_mut(|d| d.insert_temp(key, outcome));
            }
        }
        match ui.data(|d| d.get_temp::<Result<String, String>>(key)) {
            Some(Ok(done)) => {
                ui.small(done);
            }
            Some(Err(why)) => {
                ui.colored_label(color32(super::format::FLASH_COLOR), egui::RichText::new(why).small());
            }
            None => {}
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: f64) -> String {
        YScale::Linear.label(v)
    }

    #[test]
    fn a_plot_goes_to_png_and_svg_with_its_lines_and_bad_values_left_out() {
        let dir = std::env::temp_dir().join(format!("elbow-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let all = vec![
            series("analytic", Color::srgb(0.2, 0.4, 0.9), vec![[0.0, 1.0], [0.5, f64::NAN], [1.0, 2.0]], false),
            series("envelope(mdn)", Color::srgb(0.9, 0.2, 0.2), vec![[0.0, -1.0], [1.0, f64::INFINITY]], true),
            series("empty", Color::WHITE, Vec::new(), false),
        ];
        let y = YAxis { range: None, label: &plain };
        let svg = dir.join("plot.svg");
        write_to(&svg, "title", ("x", "y"), &all, &y).expect("svg");
        let text = std::fs::read_to_string(&svg).expect("written");
        assert!(text.contains("analytic") && text.contains("envelope(mdn)") && text.contains("title"), "{text}");
        assert!(!text.contains("NaN") && !text.contains("inf"), "non-finite points are left out");
        let png = dir.join("plot.png");
        write_to(&png, "title", ("x", "y"), &all, &y).expect("png");
        assert_eq!(&std::fs::read(&png).expect("written")[1..4], b"PNG");
        write_to(&dir.join("nothing.svg"), "empty", ("x", "y"), &[], &y).expect("an empty plot is a frame");
        assert!(write_to(&dir.join("plot.txt"), "t", ("x", "y"), &all, &y).is_err());
        assert!(write_to(&dir.join("missing").join("plot.png"), "t", ("x", "y"), &all, &y).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn exports_take_a_new_numbered_name_and_never_replace_an_earlier_one() {
        let dir = std::env::temp_dir().join(format!("elbow-export-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let all = vec![series("a", Color::WHITE, vec![[0.0, 1.0], [1.0, 2.0]], false)];
        let y = YAxis { range: None, label: &plain };
        let first = fresh_path(&dir, "tip", "svg");
        write_to(&first, "first", ("x", "y"), &all, &y).expect("written");
        let second = fresh_path(&dir, "tip", "svg");
        assert_ne!(first, second);
        write_to(&second, "second", ("x", "y"), &all, &y).expect("written");
        assert!(std::fs::read_to_string(&first).expect("kept").contains("first"), "the first export is kept");
        assert!(second.ends_with("elbow-tip-2.svg"), "{}", second.display());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_spike_runs_off_the_top_instead_of_flattening_the_rest() {
        let mut points: Vec<[f64; 2]> = (0..200).map(|i| [i as f64, (i as f64 * 0.1).sin()]).collect();
        points[100][1] = 1e6;
        let all = vec![series("loss", Color::WHITE, points, false)];
        let (lo, hi) = robust_range(&all, &[]).expect("data");
        assert!(lo > -1.5 && hi < 1.5, "the range follows the bulk: {lo}..{hi}");
        let (lo, hi) = robust_range(&all, &[-3.0]).expect("data");
        assert!(lo <= -3.0 && hi < 1.5, "an included value widens it: {lo}..{hi}");
        assert_eq!(robust_range(&[], &[]), None);
    }

    #[test]
    fn log_ticks_read_in_the_quantity() {
        assert_eq!(YScale::LogMetres.label(-3.0), "1 mm");
        assert_eq!(YScale::LogMetres.label(-1.0), "10 cm");
        assert_eq!(YScale::LogMetres.label(-5.0), "10 µm");
        assert_eq!(YScale::LogMetres.label(0.0), "1 m");
        assert_eq!(YScale::Log.label(-2.0), "1e-2");
        assert_eq!(YScale::LogMetres.decades((-5.2, -0.8)), Some(vec![-5.0, -4.0, -3.0, -2.0, -1.0]));
        assert_eq!(YScale::Linear.decades((0.0, 100.0)), None);
    }
}
