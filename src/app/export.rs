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
                // The unit from the exponent (with a margin: 10^-3 computes to 0.000999…, which
                // is 1 mm, not 1000 µm).
                let (shift, unit) = match v {
                    v if v >= -1e-9 => (0, "m"),
                    v if v >= -2.0 - 1e-9 => (2, "cm"),
                    v if v >= -3.0 - 1e-9 => (3, "mm"),
                    _ => (6, "µm"),
                };
                let value = 10f64.powf(v + f64::from(shift));
                let digits = if (value - value.round()).abs() < 1e-6 { 0 } else { 1 };
                format!("{value:.digits$} {unit}")
            }
        }
    }

    /// Tick values for a y range `(lo, hi)` where a pixel is `per_px` decades: whole decades on
    /// a log scale, every one, second or fifth so that labelled ticks stay [`Y_LABEL_PX`] apart
    /// (every second one over more than eight decades when the height is unknown), or none for a
    /// linear one (egui's own spacing then).
    fn decades(self, (lo, hi): (f64, f64), per_px: Option<f64>) -> Option<Vec<f64>> {
        if self == YScale::Linear || !(lo.is_finite() && hi.is_finite()) || hi - lo < 1.0 || hi - lo > 40.0 {
            return None;
        }
        let step = match per_px.filter(|p| p.is_finite() && *p > 0.0) {
            Some(p) => [1, 2, 5, 10].into_iter().find(|k| *k as f64 / p >= Y_LABEL_PX).unwrap_or(10),
            None if hi - lo > 8.0 => 2,
            None => 1,
        };
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

/// One plot: its name (the egui id and the exported file's, `elbow-<name>-<n>.<ext>`: the plot
/// and, for a sweep, the channel), its title (the exported figure's), its axes' labels with
/// units, its y scale and the y values it always shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Figure<'a> {
    /// The plot's name, words joined by `-` (e.g. `sweep-encoder-tip-error`).
    pub(crate) name: &'a str,
    /// The exported figure's title.
    pub(crate) title: &'a str,
    /// The x and y axes' labels, with units.
    pub(crate) axes: (&'a str, &'a str),
    /// What the y values are.
    pub(crate) scale: YScale,
    /// y values the range always includes.
    pub(crate) include: &'a [f64],
}

/// Pixels between two labelled x ticks at least: room for a label of five characters
/// ([`tick`]'s longest usual, `-0.05`, `1.5k`) and a gap, so labels never run together.
const X_LABEL_PX: f64 = 52.0;

/// Pixels between two labelled y ticks at least (egui_plot hides y labels closer than 20 px).
const Y_LABEL_PX: f64 = 24.0;

/// The grid spacing floor the plots give egui_plot, pixels (it scales `GridInput::base_step_size`).
const GRID_MIN_PX: f32 = 8.0;

/// The smallest step of 1, 2 or 5 times a power of ten that is at least `min` (1 when `min` is
/// not a positive number).
pub(crate) fn nice_step(min: f64) -> f64 {
    if !(min.is_finite() && min > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf(min.log10().floor());
    [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * decade).find(|s| *s >= min * (1.0 - 1e-12)).unwrap_or(10.0 * decade)
}

/// The x grid of a plot `(lo, hi)` wide where one pixel is `per_px`: labelled marks a
/// [`nice_step`] apart, at least [`X_LABEL_PX`] pixels, and unlabelled lines a fifth or half of
/// that step apart. Empty for a bad range.
pub(crate) fn x_marks((lo, hi): (f64, f64), per_px: f64) -> Vec<GridMark> {
    if !(lo.is_finite() && hi.is_finite() && hi > lo && per_px.is_finite() && per_px > 0.0) {
        return Vec::new();
    }
    let major = nice_step(per_px * X_LABEL_PX);
    // 1 and 5 split in five, 2 in four: the finer lines stay on round values.
    let parts = if (major / 10f64.powf(major.log10().floor()) - 2.0).abs() < 1e-9 { 4.0 } else { 5.0 };
    let minor = major / parts;
    let (first, last) = ((lo / minor).ceil() as i64, (hi / minor).floor() as i64);
    if last - first > 2000 {
        return Vec::new();
    }
    (first..=last)
        .map(|k| {
            let on_major = k.rem_euclid(parts as i64) == 0;
            GridMark { value: k as f64 * minor, step_size: if on_major { major } else { minor } }
        })
        .collect()
}

/// The label of a tick at `v` among ticks `step` apart: as many decimals as the step needs and
/// no more, thousands as `k` and millions as `M` once the step reaches them, so that labels
/// stay short (and fit [`X_LABEL_PX`]) and two ticks never read the same.
pub(crate) fn tick(v: f64, step: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let step = if step.is_finite() && step > 0.0 { step } else { v.abs().max(1.0) };
    let (unit, suffix) = match step {
        s if s >= 1e5 => (1e6, "M"),
        s if s >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    let decimals = (-(step / unit).log10().floor() + 1e-9).clamp(0.0, 12.0).floor() as usize;
    let mut text = format!("{:.decimals$}", v / unit);
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    if text == "-0" {
        text = "0".into();
    }
    if text == "0" { text } else { format!("{text}{suffix}") }
}

/// The x range a plot shows when its data has no width (one sample, or none): a unit either
/// side of the one x value (of 0 without data); `None` when the data spans a range of its own.
pub(crate) fn flat_x_range(all: &[Series]) -> Option<(f64, f64)> {
    let xs = all.iter().flat_map(|s| s.points.iter()).filter(|p| p[0].is_finite() && p[1].is_finite()).map(|p| p[0]);
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
    if !lo.is_finite() {
        return Some((-1.0, 1.0));
    }
    let flat = hi - lo <= 1e-9 * hi.abs().max(lo.abs()).max(1.0);
    flat.then_some((lo - 1.0, hi + 1.0))
}

/// Pixels a live plot leaves free on its right, so the last x tick's label is not cut.
const RIGHT_ROOM_PX: f32 = 14.0;

/// A live plot of `all` as `figure` says: both axes labelled, x ticks from [`x_marks`] and
/// [`tick`], y ticks in `scale`'s quantity, the robust y range (widened to `include`), a sensible
/// x span for a single sample ([`flat_x_range`]), its legend inside when it has at most
/// [`LEGEND_INSIDE`] series (else the caller draws [`legend_row`] under it); `extra` draws
/// markers on top (the slider's value).
pub(crate) fn show(ui: &mut egui::Ui, figure: &Figure<'_>, all: &[Series], extra: impl FnOnce(&mut PlotUi<'_>)) {
    let Figure { name, axes: (x_label, y_label), scale, include, .. } = *figure;
    let range = robust_range(all, include);
    let flat_x = flat_x_range(all);
    let mut plot = Plot::new(name)
        .height(PLOT_HEIGHT)
        // Room on the right for half the last x tick's label, which is centred on the plot's edge.
        .width((ui.available_width() - RIGHT_ROOM_PX).max(100.0))
        .allow_drag(false)
        .allow_zoom(false)
        .allow_scroll(false)
        .allow_boxed_zoom(false)
        .y_axis_min_width(44.0)
        .grid_spacing(GRID_MIN_PX..=300.0)
        // Labelled ticks at least X_LABEL_PX apart, short labels: none overlap, even on a narrow plot.
        .custom_x_axes(vec![
            AxisHints::new_x()
                .label(egui::RichText::new(x_label).small())
                .label_spacing((X_LABEL_PX as f32 - 12.0)..=X_LABEL_PX as f32)
                .formatter(|mark, _| tick(mark.value, mark.step_size)),
        ])
        .x_grid_spacer(|input: GridInput| x_marks(input.bounds, input.base_step_size / f64::from(GRID_MIN_PX)))
        .y_axis_label(egui::RichText::new(y_label).small())
        .y_axis_formatter(move |mark, _| match scale {
            YScale::Linear => tick(mark.value, mark.step_size),
            _ => scale.label(mark.value),
        });
    if all.len() <= LEGEND_INSIDE {
        let legend = Legend::default().position(Corner::LeftTop).text_style(egui::TextStyle::Small);
        plot = plot.legend(legend.background_alpha(0.7));
    }
    if scale != YScale::Linear {
        plot = plot.y_grid_spacer(move |input: GridInput| {
            let per_px = input.base_step_size / f64::from(GRID_MIN_PX);
            match scale.decades(input.bounds, Some(per_px)) {
                Some(ticks) => {
                    // The step between labelled ticks: egui_plot hides labels closer than 20 px by it.
                    let step_size = if ticks.len() > 1 { ticks[1] - ticks[0] } else { 1.0 };
                    ticks.into_iter().map(|value| GridMark { value, step_size }).collect()
                }
                None => egui_plot::log_grid_spacer(10)(input),
            }
        });
    }
    plot.show(ui, |plot| {
        plot.set_auto_bounds([flat_x.is_none(), range.is_none()]);
        if let Some((lo, hi)) = range {
            plot.set_plot_bounds_y(lo..=hi);
        }
        if let Some((lo, hi)) = flat_x {
            plot.set_plot_bounds_x(lo..=hi);
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

/// The `png` and `svg` buttons of the plot `figure` (drawn by [`show`]), and the last outcome
/// of either.
pub(crate) fn buttons(ui: &mut egui::Ui, figure: &Figure<'_>, all: &[Series]) {
    let Figure { name, title, axes, scale, include } = *figure;
    let key = egui::Id::new(("plot-export", name));
    ui.horizontal_wrapped(|ui| {
        for ext in ["png", "svg"] {
            let hint = format!("save this plot as a new file, elbow-{name}-N.{ext}, in the folder the app started in");
            if ui.small_button(ext).on_hover_text(hint).clicked() {
                let label = move |v: f64| scale.label(v);
                let y = YAxis { range: robust_range(all, include), label: &label };
                let outcome = write(name, ext, title, axes, all, &y);
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

/// `words` as a file-name part: lower case, each run of other characters than letters and
/// digits one `-` (`"mean tip error"` → `mean-tip-error`, `"silent failures (%)"` →
/// `silent-failures`).
pub(crate) fn slug(words: &str) -> String {
    let mut out = String::new();
    for c in words.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
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

    /// The labels a plot `px` pixels wide over `range` shows: the marks at least the label
    /// spacing apart, labelled.
    fn shown_ticks(range: (f64, f64), px: f64) -> Vec<(f64, String)> {
        let per_px = (range.1 - range.0) / px;
        x_marks(range, per_px)
            .into_iter()
            .filter(|m| m.step_size / per_px > X_LABEL_PX - 12.0)
            .map(|m| (m.value, tick(m.value, m.step_size)))
            .collect()
    }

    #[test]
    fn x_ticks_are_distinct_short_and_apart_at_every_range() {
        for range in
            [(0.0, 10.0), (0.0, 3000.0), (0.0, 1e6), (0.99997, 1.00003), (-0.05, 0.05), (-15.0, 0.0), (0.0, 0.05)]
        {
            for px in [150.0, 200.0, 400.0] {
                let ticks = shown_ticks(range, px);
                let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
                // A span of a few parts in a hundred thousand (what egui made of one sample) has
                // room for one label of seven characters; every other range shows two or more.
                let tiny = range.1 - range.0 < 1e-3;
                assert!(ticks.len() >= if tiny { 1 } else { 2 }, "{range:?} at {px} px: {labels:?}");
                for (i, (v, label)) in ticks.iter().enumerate() {
                    assert!(!label.is_empty() && label.chars().count() <= 7, "{range:?}: {label:?}");
                    assert!(labels.iter().filter(|l| *l == label).count() == 1, "{range:?}: {labels:?} repeat");
                    if let Some((next, _)) = ticks.get(i + 1) {
                        let gap = (next - v) / (range.1 - range.0) * px;
                        // A label of n characters is at most 8 px a character at 13.5 px text.
                        assert!(gap > 8.0 * label.chars().count() as f64 + 6.0, "{range:?} {px}: {labels:?} touch");
                    }
                }
            }
        }
        assert_eq!(
            shown_ticks((0.0, 3000.0), 200.0).into_iter().map(|t| t.1).collect::<Vec<_>>(),
            ["0", "1k", "2k", "3k"]
        );
        assert_eq!(tick(1e6, 5e5), "1M");
        assert_eq!(tick(1500.0, 500.0), "1500");
        assert_eq!(tick(0.99997, 1e-5), "0.99997");
        assert_eq!(tick(-0.0, 0.01), "0");
        assert_eq!(tick(f64::NAN, 1.0), "");
    }

    #[test]
    fn a_single_sample_gets_a_span_of_its_own() {
        let one = vec![series("head", Color::WHITE, vec![[1.0, -3.0]], false)];
        assert_eq!(flat_x_range(&one), Some((0.0, 2.0)), "one move: moves 0 to 2, not 0.99997..1.00003");
        assert_eq!(flat_x_range(&[]), Some((-1.0, 1.0)));
        let two = vec![series("head", Color::WHITE, vec![[1.0, -3.0], [2.0, -2.0]], false)];
        assert_eq!(flat_x_range(&two), None, "data with a width keeps egui's own bounds");
        let ticks = shown_ticks((0.0, 2.0), 200.0);
        assert!(ticks.iter().any(|(v, l)| *v == 1.0 && l == "1"), "{ticks:?}");
    }

    #[test]
    fn export_names_say_the_plot_and_the_channel() {
        assert_eq!(slug("mean tip error"), "mean-tip-error");
        assert_eq!(slug("camera check: silent failures (%)"), "camera-check-silent-failures");
        assert_eq!(slug("Encoder"), "encoder");
        let dir = std::env::temp_dir();
        let name = format!("sweep-{}-{}", slug("encoder"), slug("mean tip error"));
        let path = fresh_path(&dir.join("elbow-no-such-dir"), &name, "png");
        assert!(path.ends_with("elbow-sweep-encoder-mean-tip-error-1.png"), "{}", path.display());
    }

    #[test]
    fn an_exported_legend_sits_beside_the_chart_not_on_it() {
        let dir = std::env::temp_dir().join(format!("elbow-export-legend-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let all = vec![series("mdn fan", Color::WHITE, vec![[0.0, -4.0], [1.0, -3.0]], false)];
        let label = |v: f64| YScale::LogMetres.label(v);
        let y = YAxis { range: None, label: &label };
        let svg = dir.join("legend.svg");
        write_to(&svg, "t", ("x (rad)", "tip error"), &all, &y).expect("svg");
        let text = std::fs::read_to_string(&svg).expect("written");
        let at = text.find("mdn fan").unwrap_or_else(|| panic!("the legend names the series: {text}"));
        let tag = &text[text[..at].rfind("<text").expect("a text element")..at];
        let x: f64 =
            tag.split("x=\"").nth(1).and_then(|r| r.split('"').next()).and_then(|v| v.parse().ok()).expect("x");
        // The chart is 900 px wide; its plotting area ends where the legend column starts.
        assert!(x >= 700.0, "the legend is over the plotting area at x = {x}: {tag}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn log_ticks_read_in_the_quantity() {
        assert_eq!(YScale::LogMetres.label(-3.0 - 1e-12), "1 mm", "a tick a hair under a decade: not 1000 µm");
        assert_eq!(YScale::LogMetres.label(-3.5), "316.2 µm");
        assert_eq!(YScale::LogMetres.label(-3.0), "1 mm");
        assert_eq!(YScale::LogMetres.label(-1.0), "10 cm");
        assert_eq!(YScale::LogMetres.label(-5.0), "10 µm");
        assert_eq!(YScale::LogMetres.label(0.0), "1 m");
        assert_eq!(YScale::Log.label(-2.0), "1e-2");
        assert_eq!(YScale::LogMetres.decades((-5.2, -0.8), None), Some(vec![-5.0, -4.0, -3.0, -2.0, -1.0]));
        // Six decades over 100 px: every second one, 33 px apart, so the labels never touch.
        assert_eq!(YScale::LogMetres.decades((-6.0, 0.0), Some(0.06)), Some(vec![-6.0, -4.0, -2.0, 0.0]));
        assert_eq!(YScale::Linear.decades((0.0, 100.0), None), None);
    }
}
