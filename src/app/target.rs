//! The target: it goes where the pointer drags it, or follows a figure-eight sweep through the
//! workspace for hands-free demos.
//!
//! Pointer input arrives as world-space [`PointerDrag`] messages, written by the windowed
//! camera plugin from the mouse and by tests directly, so this module never touches a window.

use super::AppSet;
use super::state::arm::Lab;
use super::state::view::{PointerDrag, Target};
use bevy::prelude::*;
use elbow::Point2;
use elbow::arm::Arm;
use std::f64::consts::TAU;

/// Registers the systems that move the target.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Update, (sweep, follow_pointer).chain().in_set(AppSet::Target));
}

/// Targets are kept within this many reaches of the base, so drawing stays sane.
const MAX_TARGET_REACHES: f64 = 10.0;

/// A figure-eight (1:2 Lissajous curve) through the arm's workspace. On an arm with a closed
/// form it runs through the upper workspace, crossing over the base so both sides and the
/// near-singular regions are visited; on a chain it circles the arm's demo target, a quarter of
/// the reach either way and a seventh up and down, inside the region its ranges reach.
pub(crate) fn figure_eight(arm: &Arm, t: f64) -> Point2 {
    let r = arm.chain.reach();
    match arm.closed_form() {
        Some(_) => Point2::new(0.65 * r * t.sin(), 0.4 * r + 0.3 * r * (2.0 * t).sin()),
        None => arm.demo_target() + Point2::new(0.25 * r * t.sin(), 0.15 * r * (2.0 * t).sin()),
    }
}

/// Advances the sweep.
fn sweep(time: Res<Time>, lab: Res<Lab>, mut target: ResMut<Target>) {
    if !target.sweep {
        return;
    }
    let speed = if target.speed.is_finite() { target.speed } else { 0.0 };
    target.phase = (target.phase + speed * time.delta_secs_f64()).rem_euclid(TAU);
    if !target.phase.is_finite() {
        target.phase = 0.0;
    }
    target.pos = figure_eight(lab.arm(), target.phase);
}

/// Moves the target to the last finite pointer position of the frame; a drag stops the sweep.
fn follow_pointer(mut drags: MessageReader<PointerDrag>, lab: Res<Lab>, mut target: ResMut<Target>) {
    let limit = MAX_TARGET_REACHES * lab.arm().extent();
    if let Some(PointerDrag(p)) = drags.read().filter(|d| d.0.x.is_finite() && d.0.y.is_finite()).last() {
        // Scale by the largest coordinate first so the norm of a huge point cannot overflow.
        let direction = if p.amax() > 0.0 { p / p.amax() } else { *p };
        target.pos = if p.norm() <= limit { *p } else { direction.normalize() * limit };
        target.sweep = false;
    }
}
