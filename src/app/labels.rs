//! Text in the world view (bevy has no text here without `bevy_text`, so egui paints it): short
//! labels at the ghost arms and the MSE head's miss, and on a chain with gravity the "g" at its
//! arrow, placed through the world camera and clipped to the world viewport. Offsets are in
//! logical pixels, so labels sit the same on every arm's scale.

use super::camera::{ViewScale, WorldCamera};
use super::feedback::FeedbackLab;
use super::format::{BRANCH_COLOR, LESSON_COLOR, PLANT_COLOR, TARGET_COLOR, color32, metres, solver_color};
use super::manifold_draw::{GRAVITY_COLOR, gravity_arrow, plant_gravity};
use super::state::arm::{Lab, Nominal, Sim, closed_form, manifold};
use super::state::manifold::{ChainAnswers, ChainTraining, ChainView, method_label};
use super::state::solve::{BranchLog, Shown, Solutions};
use super::state::view::{CameraView, Target, WhyPin};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use elbow::learned::Output;
use elbow::{HeadKind, Point2, SolverId};

/// Half the side of the square around the target's cross that labels keep clear of, logical
/// pixels.
const TARGET_CLEAR_PX: f32 = 14.0;

/// Pixels between a label and the view's edge, at least.
const EDGE_MARGIN_PX: f32 = 8.0;

/// Registers the label painter in egui's pass.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(
        EguiPrimaryContextPass,
        (labels.run_if(closed_form).run_if(super::replay::not_replaying), chain_labels.run_if(manifold)),
    );
}

/// Where a label of `rect` goes: inside `clip` (moved in from any edge it crosses), and clear of
/// the labels already `placed` (moved down, then up, by its own height until it is, or where it
/// was when no place near is clear). Every label sits on a dark backing, so it stays legible on
/// every atlas layer.
fn place(rect: egui::Rect, clip: egui::Rect, placed: &[egui::Rect]) -> egui::Rect {
    let inside = |r: egui::Rect| {
        let dx = (clip.min.x - r.min.x).max(0.0) + (clip.max.x - r.max.x).min(0.0);
        let dy = (clip.min.y - r.min.y).max(0.0) + (clip.max.y - r.max.y).min(0.0);
        r.translate(egui::vec2(dx, dy))
    };
    let start = inside(rect);
    let step = rect.height() + 4.0;
    (0..8)
        .flat_map(|k| [k as f32, -(k as f32)])
        .map(|k| inside(start.translate(egui::vec2(0.0, k * step))))
        .find(|r| placed.iter().all(|p| !p.expand(2.0).intersects(*r)))
        .unwrap_or(start)
}

/// Paints world-anchored text in the view: each label on a dark backing, inside the view and
/// clear of the labels placed before it ([`place`]).
struct Labeller<'a> {
    painter: egui::Painter,
    clip: egui::Rect,
    camera: &'a Camera,
    transform: &'a GlobalTransform,
    placed: Vec<egui::Rect>,
}

impl<'a> Labeller<'a> {
    /// A labeller on its own layer `id` over the view of `camera` (`None` without a viewport).
    fn new(ctx: &egui::Context, camera: &'a Camera, transform: &'a GlobalTransform, id: &str) -> Option<Self> {
        let view = camera.logical_viewport_rect()?;
        // A margin inside the view's edges, so a label pushed in from an edge is not flush with it.
        let clip = egui::Rect::from_min_max(egui::pos2(view.min.x, view.min.y), egui::pos2(view.max.x, view.max.y))
            .shrink(EDGE_MARGIN_PX);
        let painter =
            ctx.layer_painter(egui::LayerId::new(egui::Order::Middle, egui::Id::new(id))).with_clip_rect(clip);
        Some(Self { painter, clip, camera, transform, placed: Vec::new() })
    }

    /// Where world point `p` (metres) is on the screen, when it is.
    fn screen(&self, p: Point2) -> Option<egui::Pos2> {
        let w = Vec3::new(p.x as f32, p.y as f32, 0.0);
        self.camera.world_to_viewport(self.transform, w).ok().filter(|s| s.is_finite()).map(|s| egui::pos2(s.x, s.y))
    }

    /// Keeps a square of `half` pixels either side of world point `at` clear of the labels placed
    /// after it: a mark that must stay visible, as the target's cross.
    fn keep_clear(&mut self, at: Point2, half: f32) {
        if let Some(pos) = self.screen(at) {
            self.placed.push(egui::Rect::from_center_size(pos, egui::Vec2::splat(2.0 * half)));
        }
    }

    /// `text` in `color` across the top of the view, wrapped to its width; world labels placed
    /// after it keep clear of it.
    fn note(&mut self, text: String, color: Color) {
        let width = (self.clip.width() - 40.0).max(100.0);
        let galley = self.painter.layout(text, egui::FontId::proportional(15.0), color32(color), width);
        let rect = egui::Align2::CENTER_TOP.anchor_size(self.clip.center_top() + egui::vec2(0.0, 12.0), galley.size());
        self.placed.push(rect);
        self.painter.rect_filled(rect.expand(5.0), 4.0, egui::Color32::from_black_alpha(200));
        self.painter.galley(rect.min, galley, color32(color));
    }

    /// `label` in `color`, anchored by `anchor` at `offset` pixels from world point `at`.
    fn text(&mut self, at: Point2, offset: egui::Vec2, anchor: egui::Align2, label: String, color: Color) {
        let Some(pos) = self.screen(at) else { return };
        let galley = self.painter.layout_no_wrap(label, egui::FontId::proportional(15.0), color32(color));
        let rect = place(anchor.anchor_size(pos + offset, galley.size()), self.clip, &self.placed);
        self.placed.push(rect);
        self.painter.rect_filled(rect.expand(3.0), 4.0, egui::Color32::from_black_alpha(190));
        self.painter.galley(rect.min, galley, color32(color));
    }
}

/// What else the two-link labels mark: the camera's frames, the real arm, the "why?" pin, the
/// view's scale and the feedback head's calibrated ghost.
#[derive(bevy::ecs::system::SystemParam)]
struct Marks<'w> {
    camera_view: Res<'w, CameraView>,
    sim: Res<'w, Sim>,
    why: Res<'w, WhyPin>,
    scale: Res<'w, ViewScale>,
    feedback: Res<'w, FeedbackLab>,
}

/// Paints the labels.
#[allow(clippy::too_many_arguments)]
fn labels(
    mut contexts: EguiContexts,
    camera: Single<(&Camera, &GlobalTransform), With<WorldCamera>>,
    nominal: Res<Nominal>,
    solutions: Res<Solutions>,
    shown: Res<Shown>,
    target: Res<Target>,
    branches: Res<BranchLog>,
    time: Res<Time>,
    marks: Marks,
) -> Result {
    let Marks { camera_view, sim, why, scale, feedback } = marks;
    let now = time.elapsed_secs_f64();
    let (camera, transform) = *camera;
    let Some(mut l) = Labeller::new(contexts.ctx_mut()?, camera, transform, "world-labels") else { return Ok(()) };
    let arm = nominal.0;
    // The target's cross and its label first: every other label keeps clear of them, so they
    // never hide the target nor move with the arms.
    l.keep_clear(target.pos, TARGET_CLEAR_PX);
    l.text(target.pos, egui::vec2(12.0, 6.0), egui::Align2::LEFT_TOP, "target".into(), TARGET_COLOR);
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
            l.text(at, offset, anchor, id.short().into(), solver_color(id));
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
            l.text(at, offset, anchor, format!("{} w={:.2}", id.short(), c.weight), solver_color(id));
        }
    }
    let mse = SolverId::Learned(HeadKind::Mse);
    if shown.0[mse]
        && let Some(pose) = solutions.row(mse).pose
    {
        let tip = arm.tip(pose);
        let label = format!("MSE ≈ average of the branches\nmisses by {}", metres(solutions.row(mse).tip_error));
        l.text(tip, egui::vec2(-14.0, -10.0), egui::Align2::RIGHT_BOTTOM, label, solver_color(mse));
    }
    if let Some(q) = feedback.calibrated.filter(|_| feedback.drives) {
        let label = "calibrated model (what a roboticist runs)".to_string();
        l.text(
            arm.joints(q)[1],
            egui::vec2(0.0, 14.0),
            egui::Align2::CENTER_TOP,
            label,
            super::feedback::CALIBRATED_COLOR,
        );
    }
    if camera_view.0
        && let Some(frame) = sim.plant.camera()
    {
        let label = format!("camera's tip frames (squares, fading over {} s)", super::draw::CAMERA_FADE_SECS);
        l.text(frame.tip, egui::vec2(14.0, -14.0), egui::Align2::LEFT_BOTTOM, label, Color::WHITE);
    }
    if let Some(pin) = why.0
        && (pin - target.pos).norm() > f64::from(scale.px(4.0))
    {
        l.text(pin, egui::vec2(0.0, 0.0), egui::Align2::CENTER_CENTER, "✱ why? asked here".into(), LESSON_COLOR);
    }
    if let Some((event, _)) = branches.marked(now) {
        l.text(event.at, egui::vec2(0.0, 30.0), egui::Align2::CENTER_TOP, "branch change".into(), BRANCH_COLOR);
    }
    Ok(())
}

/// Paints a chain's world text: each fan's name, the target, the squared-error net's answer with
/// its miss, the real arm's tip with its miss, and the "g" beside the gravity arrow where the plant has
/// gravity.
#[allow(clippy::too_many_arguments)]
fn chain_labels(
    mut contexts: EguiContexts,
    camera: Single<(&Camera, &GlobalTransform), With<WorldCamera>>,
    lab: Res<Lab>,
    target: Res<Target>,
    view: Res<ChainView>,
    answers: Res<ChainAnswers>,
    sim: Res<Sim>,
    scale: Res<ViewScale>,
    training: Res<ChainTraining>,
) -> Result {
    let (camera, transform) = *camera;
    let Some(mut l) = Labeller::new(contexts.ctx_mut()?, camera, transform, "chain-labels") else { return Ok(()) };
    let Some(arm) = lab.chain() else { return Ok(()) };
    let t = target.pos;
    // While a shown net trains, its fan misses: say so where the eye is.
    let shown_training = [SolverId::Learned(HeadKind::Mse), SolverId::Learned(HeadKind::Mdn), SolverId::Flow]
        .into_iter()
        .filter(|&m| view.shows(m))
        .filter_map(|m| training.training(m))
        .reduce(f64::min);
    if let Some(share) = shown_training {
        let note = format!(
            "The nets are still training ({:.0} %): their answers miss until they have learnt. The exact posterior needs no training.",
            100.0 * share
        );
        l.note(note, LESSON_COLOR);
    }
    l.keep_clear(t, TARGET_CLEAR_PX);
    l.text(t, egui::vec2(12.0, 6.0), egui::Align2::LEFT_TOP, "target".into(), TARGET_COLOR);
    let mse = SolverId::Learned(HeadKind::Mse);
    if view.shows(mse)
        && let Some(x) = answers.mse.as_ref()
    {
        let tip = arm.chain.tip(x);
        let label = format!("MSE net: the answers' mean\nmisses by {}", metres(Some((tip - t).norm())));
        l.text(tip, egui::vec2(14.0, -10.0), egui::Align2::LEFT_BOTTOM, label, solver_color(mse));
    }
    // Each fan named where its arms' middle joints gather (the mean over its draws), so fans that
    // overlap at the tip are told apart along the arm.
    let d = arm.coords();
    for (m, set) in [
        (SolverId::Exact, &answers.exact.x),
        (SolverId::Learned(HeadKind::Mdn), &answers.mdn),
        (SolverId::Flow, &answers.flow),
    ] {
        let draws: Vec<Vec<Point2>> =
            if view.shows(m) { set.chunks_exact(d).map(|x| arm.chain.points(x)).collect() } else { Vec::new() };
        let Some(k) = draws.first().map(|p| p.len() / 2) else { continue };
        let mean = draws.iter().map(|p| p[k]).sum::<Point2>() / draws.len() as f64;
        if mean.x.is_finite() && mean.y.is_finite() {
            let label = match training.training(m) {
                Some(share) => format!("{} (training, {:.0} %)", method_label(m), 100.0 * share),
                None => method_label(m).into(),
            };
            l.text(mean, egui::vec2(0.0, -16.0), egui::Align2::CENTER_BOTTOM, label, solver_color(m));
        }
    }
    let real = sim.tip();
    let label = format!("real arm: {} off", metres(Some((real - t).norm())));
    l.text(real, egui::vec2(-14.0, 14.0), egui::Align2::RIGHT_TOP, label, PLANT_COLOR);
    let (gravity, base) = plant_gravity(&sim);
    if let Some([from, to]) = gravity_arrow(gravity, base, &scale) {
        let mid = 0.5 * (from + to);
        let at = Point2::new(f64::from(mid.x), f64::from(mid.y));
        l.text(at, egui::vec2(-8.0, 0.0), egui::Align2::RIGHT_CENTER, "g".into(), GRAVITY_COLOR);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::place;
    use bevy_egui::egui::{Rect, pos2, vec2};

    #[test]
    fn labels_stay_inside_the_view_and_clear_of_each_other() {
        let clip = Rect::from_min_max(pos2(400.0, 0.0), pos2(1200.0, 800.0));
        let cut = Rect::from_min_size(pos2(350.0, 100.0), vec2(200.0, 20.0));
        let moved = place(cut, clip, &[]);
        assert!(clip.contains_rect(moved), "a label over the panel edge comes inside: {moved:?}");
        let first = place(Rect::from_min_size(pos2(600.0, 300.0), vec2(120.0, 20.0)), clip, &[]);
        let second = place(Rect::from_min_size(pos2(610.0, 305.0), vec2(120.0, 20.0)), clip, &[first]);
        assert!(!second.intersects(first), "{first:?} {second:?}");
    }
}
