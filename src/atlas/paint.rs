//! How an atlas becomes pixels: one colour per cell for each [`Layer`], and the key (a colour
//! bar or a list of classes) that explains the colours. The app's heatmap and `elbow atlas`'s
//! PNG both paint with these, so they always agree.
//!
//! Continuous layers use perceptually uniform maps from `colorous` (viridis for the miss,
//! inferno for the silent-failure rate, cividis for the confidence); class layers use fixed
//! colours chosen to match the app's ghost arms (elbow-up blue, elbow-down green, the average
//! orange). A cell with no value on a layer (the confidence of a solver without a mixture) gets
//! [`NO_VALUE`], a colour on no bar, and the key names it ([`no_value`]).

use super::chain::{ChainAtlas, ChainLayer};
use super::{Atlas, AtlasCell, BranchClass, Layer, Map, MapLayer};
use crate::envelope::Reason;

/// An sRGB colour with alpha, 0-255 per channel.
pub type Rgba = [u8; 4];

/// Smallest miss on the colour bar, metres (anything closer shows as this).
pub const MISS_FLOOR: f64 = 1e-4;
/// Largest miss on the colour bar, metres.
pub const MISS_CEIL: f64 = 2.0;

/// What the colours of a layer mean.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    /// A continuous colour bar from `lo` to `hi` (log scale when `log`), with a unit.
    Scale {
        /// Value at the bottom of the bar.
        lo: f64,
        /// Value at the top of the bar.
        hi: f64,
        /// Whether the bar is logarithmic.
        log: bool,
        /// Unit or description of the values.
        unit: &'static str,
    },
    /// Discrete classes and their colours.
    Classes(Vec<(String, Rgba)>),
}

/// Colour of a target no solution reaches (the two-link arm's "unreachable, reported" and a
/// chain atlas's unreachable cells).
pub const UNREACHABLE: Rgba = [48, 50, 58, 255];

/// Top of the colour bar of the exact posterior's spread (coordinate units).
pub const SPREAD_CEIL: f64 = 3.0;

/// Colour of a cell with no value on its layer (a pale cyan that no colour bar uses).
pub const NO_VALUE: Rgba = [150, 225, 245, 255];

/// What a cell painted [`NO_VALUE`] means on `layer`, for the key: `None` on layers where every
/// cell has a value.
pub fn no_value(layer: Layer) -> Option<(&'static str, Rgba)> {
    (layer == Layer::Confidence).then_some(("no confidence (no mixture)", NO_VALUE))
}

/// Colour of `t` in [0, 1] on `gradient`, opaque.
fn gradient(g: colorous::Gradient, t: f64) -> Rgba {
    let c = g.eval_continuous(if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 });
    [c.r, c.g, c.b, 255]
}

/// Position of a miss on the log colour bar, in [0, 1].
pub fn miss_fraction(miss: f64) -> f64 {
    let m = if miss.is_finite() { miss.clamp(MISS_FLOOR, MISS_CEIL) } else { MISS_CEIL };
    (m / MISS_FLOOR).ln() / (MISS_CEIL / MISS_FLOOR).ln()
}

/// Colour of a branch class.
pub fn branch_color(class: BranchClass) -> Rgba {
    match class {
        BranchClass::Up => [64, 184, 255, 255],
        BranchClass::Down => [77, 230, 115, 255],
        BranchClass::Average => [255, 158, 26, 255],
        BranchClass::Neither => [150, 60, 70, 255],
        BranchClass::OutsideReported => UNREACHABLE,
        BranchClass::OutsideSilent => [230, 40, 200, 255],
    }
}

/// Colour of an envelope verdict: accepted, or one colour per rejection reason.
pub fn verdict_color(verdict: Option<Reason>) -> Rgba {
    const PALETTE: [Rgba; 6] = [
        [255, 255, 255, 255],
        [255, 200, 40, 255],
        [80, 170, 255, 255],
        [235, 60, 60, 255],
        [200, 110, 255, 255],
        [255, 140, 60, 255],
    ];
    match verdict {
        None => [46, 120, 70, 255],
        Some(r) => PALETTE[Reason::ALL.iter().position(|&x| x == r).unwrap_or(0) % PALETTE.len()],
    }
}

/// Colour of one cell on `layer`.
pub fn cell_color(cell: &AtlasCell, layer: Layer) -> Rgba {
    match layer {
        Layer::Miss => gradient(colorous::VIRIDIS, miss_fraction(cell.miss)),
        Layer::Branch => branch_color(cell.branch),
        Layer::Confidence => cell.confidence.map_or(NO_VALUE, |c| gradient(colorous::CIVIDIS, f64::from(c))),
        Layer::Envelope => verdict_color(cell.verdict),
        Layer::Silent => gradient(colorous::INFERNO, cell.silent),
    }
}

/// The key of `layer`.
pub fn key(layer: Layer) -> Key {
    match layer {
        Layer::Miss => Key::Scale { lo: MISS_FLOOR, hi: MISS_CEIL, log: true, unit: "FK miss, m" },
        Layer::Branch => Key::Classes(BranchClass::ALL.map(|c| (c.label().to_string(), branch_color(c))).to_vec()),
        Layer::Confidence => Key::Scale { lo: 0.0, hi: 1.0, log: false, unit: "top component weight" },
        Layer::Envelope => Key::Classes(
            std::iter::once(("accepted".to_string(), verdict_color(None)))
                .chain(Reason::ALL.iter().map(|&r| (format!("rejected: {}", r.label()), verdict_color(Some(r)))))
                .collect(),
        ),
        Layer::Silent => Key::Scale { lo: 0.0, hi: 1.0, log: false, unit: "silent-failure rate" },
    }
}

/// Colour at `t` in [0, 1] along the bar of a continuous `layer` (for drawing the bar).
pub fn scale_color(layer: Layer, t: f64) -> Rgba {
    match layer {
        Layer::Confidence => gradient(colorous::CIVIDIS, t),
        Layer::Silent => gradient(colorous::INFERNO, t),
        _ => gradient(colorous::VIRIDIS, t),
    }
}

/// The key of a chain atlas's `layer`; unreachable cells are keyed by [`chain_no_value`].
pub fn chain_key(layer: ChainLayer) -> Key {
    let unit = layer.unit();
    match layer {
        ChainLayer::MseMiss | ChainLayer::MdnResim => Key::Scale { lo: MISS_FLOOR, hi: MISS_CEIL, log: true, unit },
        ChainLayer::ExactSpread => Key::Scale { lo: 0.0, hi: SPREAD_CEIL, log: false, unit },
        ChainLayer::HybridSuccess => Key::Scale { lo: 0.0, hi: 1.0, log: false, unit },
    }
}

/// What the chain atlas's cells without a value are, for the key.
pub const fn chain_no_value() -> (&'static str, Rgba) {
    ("unreachable (no solution)", UNREACHABLE)
}

/// Colour at `t` in [0, 1] along the bar of a chain `layer`.
pub fn chain_scale_color(layer: ChainLayer, t: f64) -> Rgba {
    match layer {
        ChainLayer::MseMiss | ChainLayer::MdnResim => gradient(colorous::VIRIDIS, t),
        ChainLayer::ExactSpread => gradient(colorous::CIVIDIS, t),
        ChainLayer::HybridSuccess => gradient(colorous::INFERNO, t),
    }
}

/// Colour of a chain atlas cell holding `value` on `layer` ([`UNREACHABLE`] for `None`).
pub fn chain_color(layer: ChainLayer, value: Option<f64>) -> Rgba {
    let Some(v) = value else { return UNREACHABLE };
    let t = match chain_key(layer) {
        Key::Scale { log: true, .. } => miss_fraction(v),
        Key::Scale { lo, hi, .. } => (v - lo) / (hi - lo),
        Key::Classes(_) => 0.0,
    };
    chain_scale_color(layer, t)
}

/// The chain atlas as RGBA pixels, `resolution` × `resolution`, top row first.
pub fn chain_pixels(atlas: &ChainAtlas) -> Vec<u8> {
    let n = atlas.resolution;
    if atlas.cells.len() != n * n {
        return Vec::new();
    }
    (0..n)
        .rev()
        .flat_map(|row| atlas.cells[row * n..(row + 1) * n].iter())
        .flat_map(|&v| chain_color(atlas.layer, v))
        .collect()
}

/// The key of any map's `layer`.
pub fn layer_key(layer: MapLayer) -> Key {
    match layer {
        MapLayer::TwoLink(l) => key(l),
        MapLayer::Chain(l) => chain_key(l),
    }
}

/// Colour at `t` in [0, 1] along the bar of any map's continuous `layer`.
pub fn layer_scale_color(layer: MapLayer, t: f64) -> Rgba {
    match layer {
        MapLayer::TwoLink(l) => scale_color(l, t),
        MapLayer::Chain(l) => chain_scale_color(l, t),
    }
}

/// What the cells without a value on any map's `layer` are, for the key (`None` where every
/// cell has one).
pub fn layer_no_value(layer: MapLayer) -> Option<(&'static str, Rgba)> {
    match layer {
        MapLayer::TwoLink(l) => no_value(l),
        MapLayer::Chain(_) => Some(chain_no_value()),
    }
}

/// Every cell's colour on `layer`, row by row from the bottom row, each left to right (the
/// order of [`Map::center`]); a chain map paints the layer it holds. Empty for a map without
/// cells or a two-link map asked for a chain's layer.
pub fn cell_colors(map: &Map, layer: MapLayer) -> Vec<Rgba> {
    match (map, layer) {
        (Map::TwoLink(a), MapLayer::TwoLink(l)) => a.cells.iter().map(|c| cell_color(c, l)).collect(),
        (Map::TwoLink(_), MapLayer::Chain(_)) => Vec::new(),
        (Map::Chain(c), _) => c.cells.iter().map(|&v| chain_color(c.layer, v)).collect(),
    }
}

/// The atlas as RGBA pixels, `resolution` × `resolution`, top row (largest y) first as image
/// formats expect. An atlas without cells paints nothing.
pub fn pixels(atlas: &Atlas, layer: Layer) -> Vec<u8> {
    let n = atlas.resolution;
    if atlas.cells.len() != n * n {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(n * n * 4);
    for row in (0..n).rev() {
        for cell in &atlas.cells[row * n..(row + 1) * n] {
            out.extend_from_slice(&cell_color(cell, layer));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::{Point2, TwoLinkArm};
    use crate::lineup::{Lineup, SolverId, Table};

    #[test]
    fn the_miss_scale_is_monotonic_and_clamped() {
        assert_eq!(miss_fraction(0.0), 0.0);
        assert_eq!(miss_fraction(f64::NAN), 1.0);
        assert_eq!(miss_fraction(1e9), 1.0);
        assert!(miss_fraction(1e-3) < miss_fraction(1e-2) && miss_fraction(1e-2) < miss_fraction(0.5));
    }

    /// "No confidence" has its own colour, on no colour bar, and only the confidence key names it.
    #[test]
    fn no_confidence_is_keyed_and_on_no_bar() {
        for layer in Layer::ALL {
            assert_eq!(no_value(layer).is_some(), layer == Layer::Confidence, "{layer}");
            for i in 0..=100 {
                let c = scale_color(layer, f64::from(i) / 100.0);
                let distance: i32 = (0..3).map(|k| (i32::from(c[k]) - i32::from(NO_VALUE[k])).abs()).sum();
                assert!(distance > 60, "{layer} at {i}%: {c:?} is too close to {NO_VALUE:?}");
            }
        }
        assert_eq!(no_value(Layer::Confidence).map(|n| n.1), Some(NO_VALUE));
    }

    #[test]
    fn pixels_put_the_top_row_first_and_every_layer_paints_every_cell() {
        let lineup = Lineup::new(TwoLinkArm::default(), Table::default());
        let cfg = super::super::AtlasConfig { resolution: 16, samples: 1, ..Default::default() };
        let atlas = super::super::tests::compute(&lineup, SolverId::Analytic, &cfg).unwrap();
        for layer in Layer::ALL {
            let px = pixels(&atlas, layer);
            assert_eq!(px.len(), 16 * 16 * 4);
            assert!(px.chunks(4).all(|p| p[3] == 255));
        }
        // The corner cells are beyond reach (reported); the top-left pixel is the cell at
        // (-w, +w), the last row of cells.
        let px = pixels(&atlas, Layer::Branch);
        let top_left = atlas.cell_at(Point2::new(-atlas.half_width * 0.99, atlas.half_width * 0.99)).unwrap();
        assert_eq!(px[0..4], cell_color(top_left, Layer::Branch));
        assert!(matches!(key(Layer::Branch), Key::Classes(c) if c.len() == BranchClass::ALL.len()));
        assert!(matches!(key(Layer::Miss), Key::Scale { log: true, .. }));
    }
}
