//! The target: it goes where the pointer drags it, or follows a figure-eight sweep through the
//! workspace for hands-free demos.
//!
//! Pointer input arrives as world-space [`PointerDrag`] messages, written by the windowed
//! camera plugin from the mouse and by tests directly, so this module never touches a window.

use super::AppSet;
use super::state::arm::Nominal;
use super::state::view::{PointerDrag, Target};
use bevy::prelude::*;
use elbow::{Point2, TwoLinkArm};
use std::f64::consts::TAU;

/// Registers the systems that move the target.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (sweep, follow_pointer).chain().in_set(AppSet::Target));
}

/// Targets are kept within this many reaches of the base, so drawing stays sane.
const MAX_TARGET_REACHES: f64 = 10.0;

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
