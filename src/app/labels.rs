//! Text in the world view (bevy has no text here without `bevy_text`, so egui paints it): short
//! labels at the ghost arms and the MSE head's miss, placed through the world camera and
//! clipped to the world viewport.

use super::camera::WorldCamera;
use super::format::{TARGET_COLOR, color32, metres, solver_color};
use super::state::arm::{Nominal, two_link_lab};
use super::state::solve::{Shown, Solutions};
use super::state::view::Target;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use elbow::learned::Output;
use elbow::{HeadKind, Point2, SolverId};

/// Registers the label painter in egui's pass.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, labels.run_if(two_link_lab));
}

/// Paints the labels.
fn labels(
    mut contexts: EguiContexts,
    camera: Single<(&Camera, &GlobalTransform), With<WorldCamera>>,
    nominal: Res<Nominal>,
    solutions: Res<Solutions>,
    shown: Res<Shown>,
    target: Res<Target>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let (camera, transform) = *camera;
    let Some(view) = camera.logical_viewport_rect() else { return Ok(()) };
    let clip = egui::Rect::from_min_max(egui::pos2(view.min.x, view.min.y), egui::pos2(view.max.x, view.max.y));
    let painter =
        ctx.layer_painter(egui::LayerId::new(egui::Order::Middle, egui::Id::new("world-labels"))).with_clip_rect(clip);
    let screen = |p: Point2| {
        let w = Vec3::new(p.x as f32, p.y as f32, 0.0);
        camera.world_to_viewport(transform, w).ok().filter(|s| s.is_finite()).map(|s| egui::pos2(s.x, s.y))
    };
    let font = egui::FontId::proportional(15.0);
    let text = |at: Point2, offset: egui::Vec2, anchor: egui::Align2, label: String, color: Color| {
        if let Some(pos) = screen(at) {
            painter.text(pos + offset, anchor, label, font.clone(), color32(color));
        }
    };
    let arm = nominal.0;
    // Elbow labels go on the side away from the forearm, so the arm does not cross them.
    let beside = |pose: elbow::Pose, dy: f32| {
        let [_, elbow, tip] = arm.joints(pose);
        if tip.x >= elbow.x {
            (elbow, egui::vec2(-10.0, dy), egui::Align2::RIGHT_CENTER)
        } else {
            (elbow, egui::vec2(10.0, dy), egui::Align2::LEFT_CENTER)
        }
    };
    for id in [SolverId::ElbowUp, SolverId::ElbowDown] {
        if let Some(pose) = solutions.row(id).pose.filter(|_| shown.0[id]) {
            let (at, offset, anchor) = beside(pose, 0.0);
            text(at, offset, anchor, id.short().into(), solver_color(id));
        }
    }
    // Each mixture component at its elbow, below the analytic branch label it usually sits on.
    for head in HeadKind::ALL.into_iter().filter(|h| h.spec().output == Output::Mixture) {
        let id = SolverId::Learned(head);
        if !shown.0[id] {
            continue;
        }
        for c in solutions.candidates[head].iter().filter(|c| c.pose.is_finite() && c.weight >= 0.05) {
            let (at, offset, anchor) = beside(c.pose, 18.0);
            text(at, offset, anchor, format!("{} w={:.2}", id.short(), c.weight), solver_color(id));
        }
    }
    let mse = SolverId::Learned(HeadKind::Mse);
    if shown.0[mse]
        && let Some(pose) = solutions.row(mse).pose
    {
        let tip = arm.tip(pose);
        let label = format!("MSE ≈ average of the branches\nmisses by {}", metres(solutions.row(mse).tip_error));
        text(tip, egui::vec2(-14.0, -10.0), egui::Align2::RIGHT_BOTTOM, label, solver_color(mse));
    }
    text(target.pos, egui::vec2(12.0, 6.0), egui::Align2::LEFT_TOP, "target".into(), TARGET_COLOR);
    Ok(())
}
