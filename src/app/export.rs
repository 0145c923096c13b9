//! Plot export: every live plot in the panel draws from a list of [`Series`], and the same list
//! goes to a PNG or SVG file (plotters, through the command line's figure code) when its `png`
//! or `svg` button is pressed. The file is `elbow-<plot>.<ext>` in the folder the app was started
//! in, written atomically; what happened is shown under the plot.

use super::format::color32;
use crate::cli::figure::{Output, Series, line_chart};
use bevy::prelude::Color;
use bevy_egui::egui;
use egui_plot::{Line, LineStyle, PlotPoints, PlotUi};

/// A series in the app's colours.
pub(crate) fn series(name: impl Into<String>, color: Color, points: Vec<[f64; 2]>, dashed: bool) -> Series {
    let c = color32(color);
    let [r, g, b] = [c.r(), c.g(), c.b()];
    Series { name: name.into(), rgb: [r, g, b], points, dashed }
}

/// Draws every series of `all` into a live plot.
pub(crate) fn lines(plot: &mut PlotUi<'_>, all: &[Series]) {
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

/// Writes `all` to `elbow-<id>.<ext>`: what was written, or why not.
pub(crate) fn write(id: &str, ext: &str, title: &str, axes: (&str, &str), all: &[Series]) -> Result<String, String> {
    write_to(std::path::Path::new(&format!("elbow-{id}.{ext}")), title, axes, all)
}

/// Writes `all` to `path` (`.png` or `.svg`): what was written, or why not.
fn write_to(path: &std::path::Path, title: &str, axes: (&str, &str), all: &[Series]) -> Result<String, String> {
    let out = Output::new(path)?;
    line_chart(&out, title, axes, all)?;
    Ok(format!("wrote {}", path.display()))
}

/// The `png` and `svg` buttons of one plot, and the last outcome of either.
pub(crate) fn buttons(ui: &mut egui::Ui, id: &str, title: &str, axes: (&str, &str), all: &[Series]) {
    let key = egui::Id::new(("plot-export", id));
    ui.horizontal(|ui| {
        for ext in ["png", "svg"] {
            if ui.small_button(ext).on_hover_text(format!("save this plot as elbow-{id}.{ext}")).clicked() {
                let outcome = write(id, ext, title, axes, all);
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

    #[test]
    fn a_plot_goes_to_png_and_svg_with_its_lines_and_bad_values_left_out() {
        let dir = std::env::temp_dir().join(format!("elbow-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let all = vec![
            series("analytic", Color::srgb(0.2, 0.4, 0.9), vec![[0.0, 1.0], [0.5, f64::NAN], [1.0, 2.0]], false),
            series("envelope(mdn)", Color::srgb(0.9, 0.2, 0.2), vec![[0.0, -1.0], [1.0, f64::INFINITY]], true),
            series("empty", Color::WHITE, Vec::new(), false),
        ];
        let svg = dir.join("plot.svg");
        write_to(&svg, "title", ("x", "y"), &all).expect("svg");
        let text = std::fs::read_to_string(&svg).expect("written");
        assert!(text.contains("analytic") && text.contains("envelope(mdn)") && text.contains("title"), "{text}");
        assert!(!text.contains("NaN") && !text.contains("inf"), "non-finite points are left out");
        let png = dir.join("plot.png");
        write_to(&png, "title", ("x", "y"), &all).expect("png");
        assert_eq!(&std::fs::read(&png).expect("written")[1..4], b"PNG");
        write_to(&dir.join("nothing.svg"), "empty", ("x", "y"), &[]).expect("an empty plot is a frame");
        assert!(write_to(&dir.join("plot.txt"), "t", ("x", "y"), &all).is_err());
        assert!(write_to(&dir.join("missing").join("plot.png"), "t", ("x", "y"), &all).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
