//! Figures written by the command line: the file format from the extension, plotters drawing
//! into SVG or an RGB buffer (encoded as PNG by `image`), glyphs from egui's bundled font, and
//! the core's atomic write ([`elbow::files`]), so a failed run never leaves a half-written file
//! where a good one was.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The font family every figure uses.
pub(crate) const FONT: &str = "sans-serif";

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
                    let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
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
    Bitmap(&'r DrawingArea<BitMapBackend<'b>, Shift>),
}

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
