//! Where the user points: the target every solver aims at, the pointer's drags and hover, the
//! width the side panel takes from the world view, and what the camera frames ([`Framing`]: the
//! lab's arm, or an open replay's action, zoomed by the user).

use super::arm::{Lab, home_target};
use bevy::prelude::*;
use elbow::Point2;

/// Registers the target, the pointer's resources and the drag message.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Target>()
        .init_resource::<CameraView>()
        .init_resource::<Hover>()
        .init_resource::<PanelWidth>()
        .init_resource::<WhyPin>()
        .init_resource::<Framing>()
        .add_message::<PointerDrag>();
}

/// The pointer is held down at this world-space point (metres) this frame.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub(crate) struct PointerDrag(pub(crate) Point2);

/// The point every solver aims at.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Target {
    /// Position, metres.
    pub(crate) pos: Point2,
    /// Follow the figure-eight sweep (a drag turns it off).
    pub(crate) sweep: bool,
    /// Sweep speed, radians of the path parameter per second.
    pub(crate) speed: f64,
    /// Current path parameter of the sweep.
    pub(crate) phase: f64,
}

impl Target {
    /// At rest on `pos`, the sweep off.
    pub(crate) fn at(pos: Point2) -> Self {
        Self { pos, sweep: false, speed: 0.35, phase: 0.0 }
    }
}

impl FromWorld for Target {
    /// At the home target of the world's arm.
    fn from_world(world: &mut World) -> Self {
        let lab = world.get_resource::<Lab>().cloned().unwrap_or_default();
        Target::at(home_target(lab.arm()))
    }
}

/// Width of the egui side panel in logical pixels, written by the panel each frame.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PanelWidth(pub(crate) f32);

/// Where the pointer is over the world viewport (metres), pressed or not; `None` off it.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Hover(pub(crate) Option<Point2>);

/// Whether the view shows the arm as its sensors see it: the encoders' arm (the nominal model at
/// the encoder readings) and the camera's recent frames of the tip, beside the true arm.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CameraView(pub(crate) bool);

/// Where the target was when "why did it do that?" was last asked (the panel's answer is for
/// that point; the canvas marks it once the target moves on).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct WhyPin(pub(crate) Option<Point2>);

/// A box of the world, metres: its centre and its width and height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Focus {
    /// The box's centre.
    pub(crate) center: Point2,
    /// Its width and height.
    pub(crate) size: [f64; 2],
}

impl Focus {
    /// The smallest box holding `points`, with `margin` of its larger side added on each side,
    /// and no side under `least`; `None` without a finite point.
    pub(crate) fn around(points: impl IntoIterator<Item = Point2>, margin: f64, least: f64) -> Option<Self> {
        let (mut lo, mut hi) = (Point2::new(f64::INFINITY, f64::INFINITY), Point2::new(-f64::INFINITY, -f64::INFINITY));
        for p in points.into_iter().filter(|p| p.x.is_finite() && p.y.is_finite()) {
            (lo.x, lo.y, hi.x, hi.y) = (lo.x.min(p.x), lo.y.min(p.y), hi.x.max(p.x), hi.y.max(p.y));
        }
        if !(lo.x <= hi.x && lo.y <= hi.y) {
            return None;
        }
        let pad = 2.0 * margin * (hi.x - lo.x).max(hi.y - lo.y);
        let size = [(hi.x - lo.x + pad).max(least), (hi.y - lo.y + pad).max(least)];
        Some(Self { center: Point2::new((lo.x + hi.x) / 2.0, (lo.y + hi.y) / 2.0), size })
    }

    /// Whether `p` lies in the box.
    #[cfg(test)]
    pub(crate) fn contains(&self, p: Point2) -> bool {
        (p.x - self.center.x).abs() <= self.size[0] / 2.0 && (p.y - self.center.y).abs() <= self.size[1] / 2.0
    }
}

/// The closest zoom, times the frame.
pub(crate) const MAX_ZOOM: f32 = 50.0;
/// The farthest zoom, times the frame.
pub(crate) const MIN_ZOOM: f32 = 0.02;
/// One zoom step (a notch of the wheel, a key press, a button), times the zoom.
pub(crate) const ZOOM_STEP: f32 = 1.25;

/// What the camera frames: the lab's arm, or `focus` when set (an open replay's action), shown
/// `zoom` times closer (1: as framed; the wheel, `+`/`-` and the replay's buttons change it).
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Framing {
    /// The box framed instead of the lab's arm.
    pub(crate) focus: Option<Focus>,
    /// How much closer than the frame, within [`MIN_ZOOM`] and [`MAX_ZOOM`].
    pub(crate) zoom: f32,
}

impl Default for Framing {
    /// The lab's arm, as framed.
    fn default() -> Self {
        Self { focus: None, zoom: 1.0 }
    }
}

impl Framing {
    /// Zooms `steps` steps closer (negative: farther), within the bounds.
    pub(crate) fn zoom_by(&mut self, steps: f32) {
        let z = self.zoom * ZOOM_STEP.powf(steps.clamp(-100.0, 100.0));
        if z.is_finite() {
            self.zoom = z.clamp(MIN_ZOOM, MAX_ZOOM);
        }
    }
}
