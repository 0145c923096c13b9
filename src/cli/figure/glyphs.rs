//! The PNG figures' text: plotters' bitmap backend with each glyph placed at its left bearing.
//!
//! plotters 0.3.7 draws a glyph's pixels from where its advance starts, ignoring how far right of
//! that its outline begins (the left bearing): a narrow "1", whose bearing is wide, lands too far
//! left and leaves a gap after it ("31 6.2 µm" for "316.2 µm", "0.01 5"). [`Bitmap`] is the bitmap
//! backend with its text drawn here instead, the same way but with the bearing; every other
//! drawing call goes to plotters' backend unchanged. SVG figures name the font and let the viewer
//! place the glyphs, so they never had the gap.

use ab_glyph::{Font, FontRef, ScaleFont};
use plotters::prelude::BitMapBackend;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

/// The font family every figure uses (egui's bundled sans-serif, registered with plotters by
/// the figure module).
pub(crate) const FONT: &str = "sans-serif";

/// plotters' bitmap backend, its text drawn by [`draw_glyphs`].
pub(crate) struct Bitmap<'a>(pub(crate) BitMapBackend<'a>);

/// The figures' font (the one the figure module registers with plotters), parsed once.
fn font() -> Option<&'static FontRef<'static>> {
    static FONT: std::sync::OnceLock<Option<FontRef<'static>>> = std::sync::OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(epaint_default_fonts::UBUNTU_LIGHT).ok()).as_ref()
}

/// Calls `put(x, y, coverage)` for every pixel of `text` at `size` pixels, laid out as plotters
/// lays it out (the advance and kerning of each glyph, `y` from half the size above the
/// baseline), each glyph's outline starting at its left bearing.
pub(crate) fn draw_glyphs(font: &FontRef<'_>, text: &str, size: f32, mut put: impl FnMut(i32, i32, f32)) {
    let font = font.as_scaled(size);
    let mut pen = 0f32;
    let mut prev = None;
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(p) = prev {
            pen += font.kern(p, id);
        }
        prev = Some(id);
        if let Some(outline) = font.outline_glyph(font.scaled_glyph(c)) {
            let bounds = outline.px_bounds();
            let (dx, dy) = ((pen + bounds.min.x) as i32, (size / 2.0 + bounds.min.y) as i32);
            outline.draw(|x, y, coverage| put(x as i32 + dx, y as i32 + dy, coverage));
        }
        pen += font.h_advance(id);
    }
}

impl<'a> DrawingBackend for Bitmap<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.0.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.0.blit_bitmap(pos, (iw, ih), src)
    }

    /// plotters' own `draw_text` (the same layout box, anchor and rotation), its glyphs drawn by
    /// [`draw_glyphs`]; a font other than the figures' goes to plotters.
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        let Some(font) = font().filter(|_| style.family().as_str() == FONT) else {
            return self.0.draw_text(text, style, pos);
        };
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) =
            style.layout_box(text).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let (width, height) = (max_x - min_x, max_y - min_y);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let turn = style.transform();
        let (w, h) = self.get_size();
        let mut result = Ok(());
        draw_glyphs(font, text, style.size() as f32, |x, y, coverage| {
            let (x, y) = turn.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if result.is_ok() && (0..w as i32).contains(&x) && (0..h as i32).contains(&y) {
                let BackendColor { alpha, rgb } = color;
                result = self.0.draw_pixel((x, y), BackendColor { alpha: alpha * f64::from(coverage), rgb });
            }
        });
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Columns of `text`'s pixels that any glyph covers.
    fn inked(text: &str, size: f32) -> Vec<bool> {
        let mut cols = vec![false; 400];
        draw_glyphs(font().expect("the font parses"), text, size, |x, _, c| {
            if c > 0.3 && (0..400).contains(&x) {
                cols[x as usize] = true;
            }
        });
        cols
    }

    /// Where a glyph's outline begins right of its pen position at `size`, pixels.
    fn bearing(c: char, size: f32) -> f32 {
        let f = font().expect("the font parses").as_scaled(size);
        f.outline_glyph(f.scaled_glyph(c)).expect("an outline").px_bounds().min.x
    }

    /// A narrow "1" is inked from its left bearing on, after the "3" before it, as the font
    /// places it (plotters' own text inked it from its pen position, a bearing too far left:
    /// "31 6.2" for "316.2").
    #[test]
    fn a_narrow_digit_is_inked_at_its_bearing() {
        let size = 48.0;
        let one = bearing('1', size);
        assert!(one >= 2.0, "the font's one is narrow, right of its pen: {one}");
        let first = |cols: &[bool], from: usize| cols[from..].iter().position(|&c| c).map(|k| k + from);
        // Within a pixel of it (the first column the outline touches may be barely covered).
        let near = |at: Option<usize>, want: f32| at.is_some_and(|x| (x as f32 - want).abs() <= 1.0);
        let alone = first(&inked("1", size), 0);
        assert!(near(alone, one), "a one alone is inked from {alone:?}, its bearing is {one}");
        let scaled = font().expect("the font parses").as_scaled(size);
        let three = scaled.h_advance(scaled.glyph_id('3')) + scaled.kern(scaled.glyph_id('3'), scaled.glyph_id('1'));
        let after = first(&inked("31", size), three as usize + 1);
        assert!(near(after, three + one), "after a three it is inked from {after:?}, not {}", three + one);
    }
}
