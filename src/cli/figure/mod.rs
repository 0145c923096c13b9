//! Figures written by the command line: the file format from the extension, plotters drawing
//! into SVG or an RGB buffer (encoded as PNG by `image`), glyphs from egui's bundled font, and
//! the core's atomic write ([`elbow::files`]), so a failed run never leaves a half-written file
//! where a good one was.

mod glyphs;

use glyphs::Bitmap;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;

pub(crate) use glyphs::FONT;

/// A figure's file format, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Portable Network Graphics.
    Png,
    /// Scalable Vector Graphics.
    Svg,
}

/// A validated output path: a known extension, in an existing directory, not a directory or a
/// special file. Checked before any work starts.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    /// Where the figure goes.
    pub(crate) path: PathBuf,
    /// How it is encoded.
    pub(crate) format: Format,
}

impl Output {
    /// Checks `path` without writing anything.
    pub(crate) fn new(path: &Path) -> Result<Self, String> {
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("png") => Format::Png,
            Some("svg") => Format::Svg,
            _ if path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                let n = n.to_ascii_lowercase();
                n == ".png" || n == ".svg"
            }) =>
            {
                return Err(format!("{}: the figure needs a name before its .png or .svg", path.display()));
            }
            _ => return Err(format!("{}: the figure must end in .png or .svg", path.display())),
        };
        elbow::files::check_destination(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self { path: path.to_path_buf(), format })
    }

    /// Draws a `width` x `height` figure with `draw` (called with the SVG or the bitmap
    /// backend) and writes it atomically.
    pub(crate) fn render(
        &self,
        (width, height): (u32, u32),
        draw: impl Fn(Canvas<'_, '_>) -> Result<(), String>,
    ) -> Result<(), String> {
        register_font();
        let bytes = match self.format {
            Format::Svg => {
                let mut svg = String::new();
                {
                    let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
                    draw(Canvas::Svg(&root))?;
                    root.present().map_err(|e| format!("cannot draw the figure: {e}"))?;
                }
                svg.into_bytes()
            }
            Format::Png => {
                let mut rgb = vec![0u8; width as usize * height as usize * 3];
                {
                    let root = Bitmap(BitMapBackend::with_buffer(&mut rgb, (width, height))).into_drawing_area();
                    draw(Canvas::Bitmap(&root))?;
                    root.present().map_err(|e| format!("cannot draw the figure: {e}"))?;
                }
                let mut png = Vec::new();
                image::ImageEncoder::write_image(
                    image::codecs::png::PngEncoder::new(&mut png),
                    &rgb,
                    width,
                    height,
                    image::ExtendedColorType::Rgb8,
                )
                .map_err(|e| format!("cannot encode the PNG: {e}"))?;
                png
            }
        };
        elbow::files::write_atomic(&self.path, &bytes).map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// The drawing area of either backend, so one drawing function serves both formats.
pub(crate) enum Canvas<'r, 'b> {
    /// An SVG document.
    Svg(&'r DrawingArea<SVGBackend<'b>, Shift>),
    /// An RGB bitmap.
    Bitmap(&'r DrawingArea<Bitmap<'b>, Shift>),
}

/// One line of a [`line_chart`].
#[cfg(feature = "app")]
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    /// Its legend entry.
    pub(crate) name: String,
    /// Its colour, sRGB.
    pub(crate) rgb: [u8; 3],
    /// Its points `[x, y]`; non-finite ones are left out.
    pub(crate) points: Vec<[f64; 2]>,
    /// Drawn dashed (thinner) rather than solid.
    pub(crate) dashed: bool,
}

/// How an app plot's y axis is shown: the range drawn (`None`: the data's) and the label of a
/// tick at a value (so a plot of log10 values is labelled in the quantity itself).
#[cfg(feature = "app")]
pub(crate) struct YAxis<'a> {
    /// The range drawn; data outside it runs off the frame.
    pub(crate) range: Option<(f64, f64)>,
    /// The label of the tick at a value.
    pub(crate) label: &'a dyn Fn(f64) -> String,
}

/// A `title`d line chart of `series` against the axes `x` and `y`, its y axis as `y_axis` says,
/// written to `out` (an app plot exported as it is drawn). Empty or non-finite data gives an
/// empty frame, never an error.
#[cfg(feature = "app")]
pub(crate) fn line_chart(
    out: &Output,
    title: &str,
    axes: (&str, &str),
    series: &[Series],
    y_axis: &YAxis,
) -> Result<(), String> {
    fn paint<DB: DrawingBackend>(
        root: &DrawingArea<DB, Shift>,
        title: &str,
        (x, y): (&str, &str),
        series: &[Series],
        y_axis: &YAxis,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        // The legend goes in a column of its own right of the chart, never over a curve.
        let legend_width = if series.is_empty() { 0 } else { LEGEND_WIDTH };
        let (width, _) = root.dim_in_pixel();
        let (root, legend) = root.split_horizontally(width.saturating_sub(legend_width));
        let finite: Vec<(f64, f64)> = series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|p| p[0].is_finite() && p[1].is_finite())
            .map(|p| (p[0], p[1]))
            .collect();
        let span = |v: &mut dyn Iterator<Item = f64>| {
            let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
            if lo.is_finite() && hi > lo {
                lo..hi
            } else if lo.is_finite() {
                lo - 1.0..lo + 1.0
            } else {
                0.0..1.0
            }
        };
        let xs = span(&mut finite.iter().map(|p| p.0));
        let ys = match y_axis.range {
            Some((lo, hi)) if lo.is_finite() && hi > lo => lo..hi,
            _ => span(&mut finite.iter().map(|p| p.1)),
        };
        let (ys_lo, ys_hi) = (ys.start, ys.end);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 18))
            .margin(10)
            .x_label_area_size(40)
            // Room for a tick label such as "316.2 µm" and, left of it, the rotated axis label.
            .y_label_area_size(84)
            .build_cartesian_2d(xs, ys)?;
        chart
            .configure_mesh()
            .x_desc(x)
            .y_desc(y)
            .y_label_formatter(&|v| (y_axis.label)(*v))
            .label_style((FONT, 13))
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let [r, g, b] = s.rgb;
            let style = RGBColor(r, g, b).stroke_width(if s.dashed { 1 } else { 2 });
            // Data beyond a given range runs to its edge, as in the live plot.
            let (lo, hi) = (ys_lo, ys_hi);
            let points =
                s.points.iter().filter(|p| p[0].is_finite() && p[1].is_finite()).map(|p| (p[0], p[1].clamp(lo, hi)));
            chart.draw_series(LineSeries::new(points, style))?;
            let y = 50 + 22 * i as i32;
            legend.draw(&PathElement::new(vec![(4, y), (24, y)], style))?;
            legend.draw(&Text::new(s.name.as_str(), (30, y - 8), (FONT, 14).into_font().color(&BLACK)))?;
        }
        Ok(())
    }
    out.render((900, 520), |canvas| match canvas {
        Canvas::Svg(root) => {
            paint(root, title, axes, series, y_axis).map_err(|e| format!("cannot draw the figure: {e}"))
        }
        Canvas::Bitmap(root) => {
            paint(root, title, axes, series, y_axis).map_err(|e| format!("cannot draw the figure: {e}"))
        }
    })
}

/// Width of the legend column right of a [`line_chart`], pixels.
#[cfg(feature = "app")]
const LEGEND_WIDTH: u32 = 200;

/// Makes egui's bundled sans-serif font the figures' font (once per process).
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is compiled in and known to parse; a failure would only lose the labels.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, epaint_default_fonts::UBUNTU_LIGHT);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_checked_before_any_work() {
        assert!(Output::new(Path::new("atlas.png")).is_ok_and(|o| o.format == Format::Png));
        assert!(Output::new(Path::new("ATLAS.SVG")).is_ok_and(|o| o.format == Format::Svg));
        for bad in ["atlas.jpg", "atlas", "/no/such/dir/atlas.png", "/", "/tmp"] {
            assert!(Output::new(Path::new(bad)).is_err(), "{bad}");
        }
    }
}
