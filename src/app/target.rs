//! The target: it goes where the pointer drags it, or follows a figure-eight sweep through the
//! workspace for hands-free demos.
//!
//! Pointer input arrives as world-space [`PointerDrag`] messages, written by the windowed
//! camera plugin from the mouse and by tests directly, so this module never touches a window.

use super::AppSet;
use super::state::Nominal;
use bevy::prelude::*;
use elbow::{Point2, TwoLinkArm};
use std::f64::consts::TAU;

/// Registers the target, the pointer message and the systems that move the target.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Target>()
        .add_message::<PointerDrag>()
        .add_systems(Update, (sweep, follow_pointer).chain().in_set(AppSet::Target));
}

/// Where the target starts: a point where the two elbow branches are far apart, so the average
/// of them (the MSE head's answer) visibly misses.
pub(crate) const DEFAULT_TARGET: Point2 = Point2::new(1.0, 0.8);

/// Targets are kept within this many reaches of the base, so drawing stays sane.
const MAX_TARGET_REACHES: f64 = 10.0;

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

impl Default for Target {
    fn default() -> Self {
        Self { pos: DEFAULT_TARGET, sweep: false, speed: 0.35, phase: 0.0 }
    }
}

/// A figure-eight (1:2 Lissajous curve) through the upper workspace, crossing over the base so
/// both sides and the near-singular regions are visited.
pub(crate) fn figure_eight(arm: &TwoLinkArm, t: f64) -> Point2 {
    let r = arm.reach();
    Point2::new(0.65 * r * t.sin(), 0.4 * r + 0.3 * r * (2.0 * t).sin())
}

/// Advances the sweep.
fn sweep(time: Res<Time>, nominal: Res<Nominal>, mut target: ResMut<Target>) {
    if !target.sweep {
        return;
    }
    let speed = if target.speed.is_finite() { target.speed } else { 0.0 };
    target.phase = (target.phase + speed * time.delta_secs_f64()).rem_euclid(TAU);
    if !target.phase.is_finite() {
        target.phase = 0.0;
    }
    target.pos = figure_eight(&nominal.0, target.phase);
}

/// Moves the target to the last finite pointer position of the frame; a drag stops the sweep.
fn follow_pointer(mut drags: MessageReader<PointerDrag>, nominal: Res<Nominal>, mut target: ResMut<Target>) {
    let limit = MAX_TARGET_REACHES * nominal.0.reach();
    if let Some(PointerDrag(p)) = drags.read().filter(|d| d.0.x.is_finite() && d.0.y.is_finite()).last() {
        // Scale by the largest coordinate first so the norm of a huge point cannot overflow.
        let direction = if p.amax() > 0.0 { p / p.amax() } else { *p };
        target.pos = if p.norm() <= limit { *p } else { direction.normalize() * limit };
        target.sweep = false;
    }
}
