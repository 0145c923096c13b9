//! Where the user points: the target every solver aims at, the pointer's drags and hover, and
//! the width the side panel takes from the world view.

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
