//! Gizmo drawing in world units (metres): the reachable annulus, the plant's real arm as a wide
//! translucent band, the ghost arms of every shown solver (analytic answers dashed, learned
//! heads solid, the MDN's components faded by weight), and the target. Plant and target flash
//! red while the safety envelope intervenes. Marks (joint dots, the target, the camera's
//! frames, the branch rings) are sized in logical pixels ([`ViewScale`]), lines in pixels by
//! their gizmo groups.

use super::AppSet;
use super::camera::ViewScale;
use super::format::{BRANCH_COLOR, FLASH_COLOR, PLANT_COLOR, TARGET_COLOR, solver_color};
use super::state::arm::{Nominal, Sim, closed_form};
use super::state::solve::{BranchLog, EnvelopeStats, FLASH_SECS, Shown, Solutions};
use super::state::view::{CameraView, Target};
use bevy::prelude::*;
use elbow::learned::Output;
use elbow::{HeadKind, Point2, SolverId};

/// Registers the gizmo groups (line widths and styles) and the drawing system.
pub(crate) fn plugin(app: &mut App) {
    let config = |width: f32, style: GizmoLineStyle| GizmoConfig {
        line: GizmoLineConfig { width, style, joints: GizmoLineJoint::Round(6), ..default() },
        ..default()
    };
    app.insert_gizmo_config(PlantGizmos, config(14.0, GizmoLineStyle::Solid))
        .insert_gizmo_config(GhostGizmos, config(4.0, GizmoLineStyle::Solid))
        .insert_gizmo_config(DashedGizmos, config(3.0, GizmoLineStyle::Dashed { gap_scale: 2.5, line_scale: 4.0 }))
        .insert_gizmo_config(WorkspaceGizmos, config(1.5, GizmoLineStyle::Solid))
        .add_systems(Update, draw.in_set(AppSet::Draw).run_if(closed_form).run_if(super::replay::not_replaying));
}

/// Thick lines of the plant.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct PlantGizmos;

/// Lines of the ghost arms.
#[derive(Default, Reflect, GizmoConfigGroup)]
pub(crate) struct GhostGizmos;

/// Dashed lines: the analytic branches and their average.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct DashedGizmos;

/// Thin lines: the workspace and the MSE head's miss.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct WorkspaceGizmos;

/// Camera frames kept for the trail.
const CAMERA_TRAIL: usize = 12;
/// Colour of the encoders' arm.
const ENCODER_COLOR: Color = Color::srgb(0.6, 0.75, 0.95);
/// How long a camera frame's square stays on the canvas, fading, seconds.
pub(crate) const CAMERA_FADE_SECS: f64 = 1.5;
/// Colour of the camera's frames.
const CAMERA_COLOR: Color = Color::srgb(1.0, 1.0, 1.0);

/// World point of a core point.
fn v(p: Point2) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

/// Radius of an elbow's mark, logical pixels (times the arm's `size`).
const ELBOW_PX: f32 = 3.5;
/// Radius of a tip's mark, logical pixels (times the arm's `size`).
const TIP_PX: f32 = 5.0;

/// Draws an arm through `joints` (base, elbow, tip) with joint and tip markers scaled by `size`
/// (`px` turns logical pixels into metres).
fn arm<C: GizmoConfigGroup>(g: &mut Gizmos<C>, joints: [Point2; 3], color: Color, size: f32, px: &ViewScale) {
    let [base, elbow, tip] = joints.map(v);
    if !(elbow.is_finite() && tip.is_finite()) {
        return;
    }
    g.line_2d(base, elbow, color);
    g.line_2d(elbow, tip, color);
    g.circle_2d(elbow, px.px(ELBOW_PX * size), color);
    g.circle_2d(tip, px.px(TIP_PX * size), color);
}

/// The drawing bundle of gizmo groups.
#[derive(bevy::ecs::system::SystemParam)]
struct Pens<'w, 's> {
    plant: Gizmos<'w, 's, PlantGizmos>,
    ghost: Gizmos<'w, 's, GhostGizmos>,
    dashed: Gizmos<'w, 's, DashedGizmos>,
    workspace: Gizmos<'w, 's, WorkspaceGizmos>,
}

/// Draws one frame.
#[allow(clippy::too_many_arguments)]
fn draw(
    mut pens: Pens,
    nominal: Res<Nominal>,
    target: Res<Target>,
    solutions: Res<Solutions>,
    shown: Res<Shown>,
    sim: Res<Sim>,
    stats: Res<EnvelopeStats>,
    camera_view: Res<CameraView>,
    branches: Res<BranchLog>,
    time: Res<Time>,
    scale: Res<ViewScale>,
    mut frames: Local<std::collections::VecDeque<(Vec2, f64)>>,
) {
    let arm_model = nominal.0;
    let reach = arm_model.reach() as f32;

    // Workspace: where the tip reaches inside the joint ranges (the annulus when both joints
    // turn all the way round), the axes and the base.
    let rim = Color::srgb(0.6, 0.63, 0.7);
    for curve in arm_model.outline(128) {
        pens.workspace.linestrip_2d(curve.into_iter().map(v), rim);
    }
    let axis = Color::srgba(0.5, 0.52, 0.6, 0.25);
    pens.workspace.line_2d(Vec2::new(-1.1 * reach, 0.0), Vec2::new(1.1 * reach, 0.0), axis);
    pens.workspace.line_2d(Vec2::new(0.0, -1.1 * reach), Vec2::new(0.0, 1.1 * reach), axis);

    // The plant first, as a wide translucent band under the ghosts: the real arm where it
    // really is (it flashes red while the envelope intervenes).
    let flash = (stats.flash / FLASH_SECS).clamp(0.0, 1.0);
    let plant_color = PLANT_COLOR.mix(&FLASH_COLOR, flash);
    arm(&mut pens.plant, sim.plant.joints(), plant_color.with_alpha(0.3 + 0.4 * flash), 1.6, &scale);
    pens.plant.circle_2d(Vec2::ZERO, scale.px(7.0), PLANT_COLOR.with_alpha(0.6));

    // References and the classical answers are dashed; learned heads are solid, a mixture's
    // components faded by weight. The MSE head goes last, on top of the average it lands on.
    let t = v(target.pos);
    let mse = SolverId::Learned(HeadKind::Mse);
    let order = SolverId::TWO_LINK.into_iter().filter(|&id| id != mse).chain([mse]);
    for id in order.filter(|&id| shown.0[id]) {
        let color = solver_color(id);
        match id.head() {
            None => {
                if let Some(pose) = solutions.row(id).pose {
                    // Closed-form answers and their average are dashed; the iteration is solid.
                    if id == SolverId::Iterative {
                        arm(&mut pens.ghost, arm_model.joints(pose), color, 1.0, &scale);
                    } else {
                        arm(&mut pens.dashed, arm_model.joints(pose), color, 1.0, &scale);
                    }
                }
            }
            Some(head) if head.spec().output == Output::Mixture => {
                for c in solutions.candidates[head].iter().filter(|c| c.pose.is_finite()) {
                    let alpha = 0.15 + 0.85 * c.weight.clamp(0.0, 1.0);
                    arm(&mut pens.ghost, arm_model.joints(c.pose), color.with_alpha(alpha), 1.0, &scale);
                }
            }
            Some(_) => {
                if let Some(pose) = solutions.row(id).pose {
                    let joints = arm_model.joints(pose);
                    arm(&mut pens.ghost, joints, color.with_alpha(if id == mse { 1.0 } else { 0.85 }), 1.0, &scale);
                    if id == mse {
                        // How far the averaged answer misses.
                        pens.workspace.line_2d(v(joints[2]), t, color);
                    }
                }
            }
        }
    }

    // What the sensors see: the nominal arm at the encoder readings (dashed), and the camera's
    // last frames of the tip (squares, the newest brightest), with a line from the encoders'
    // tip to the camera's.
    let now = time.elapsed_secs_f64();
    if let Some(frame) = sim.plant.camera() {
        let p = v(frame.tip);
        if frames.back().map(|f| f.0) != Some(p) {
            frames.push_back((p, now));
            while frames.len() > CAMERA_TRAIL {
                frames.pop_front();
            }
        }
    }
    while frames.front().is_some_and(|f| now - f.1 > CAMERA_FADE_SECS) {
        frames.pop_front();
    }
    if camera_view.0 {
        let believed = arm_model.joints(sim.measured());
        arm(&mut pens.dashed, believed, ENCODER_COLOR, 1.0, &scale);
        // Each frame fades out over CAMERA_FADE_SECS (a label says so).
        for &(p, at) in frames.iter() {
            let alpha = (1.0 - (now - at) / CAMERA_FADE_SECS).clamp(0.1, 1.0) as f32;
            pens.ghost.rect_2d(p, Vec2::splat(scale.px(10.0)), CAMERA_COLOR.with_alpha(alpha));
        }
        if let Some(&(last, _)) = frames.back() {
            pens.workspace.line_2d(v(believed[2]), last, CAMERA_COLOR);
        }
    }

    // Where the latest branch change happened: a double ring, fading out (held in a lesson that
    // stages a change).
    if let Some((event, age)) = branches.marked(now) {
        let alpha = branches.mark_alpha(age);
        let at = v(event.at);
        pens.ghost.circle_2d(at, scale.px(17.0), BRANCH_COLOR.with_alpha(alpha));
        pens.workspace.circle_2d(at, scale.px(24.0), BRANCH_COLOR.with_alpha(alpha));
    }

    // The target: a ring and a cross, red and larger while the envelope intervenes.
    let target_color = TARGET_COLOR.mix(&FLASH_COLOR, flash);
    let r = scale.px(8.5) * (1.0 + flash);
    pens.ghost.circle_2d(t, r, target_color);
    pens.ghost.line_2d(t - Vec2::X * 1.8 * r, t + Vec2::X * 1.8 * r, target_color);
    pens.ghost.line_2d(t - Vec2::Y * 1.8 * r, t + Vec2::Y * 1.8 * r, target_color);
}
