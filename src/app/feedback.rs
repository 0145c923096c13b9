//! The feedback head drives: the domain-randomized head of `elbow experiment randomization`,
//! trained off the frame on randomized plants, commands the two-link plant from the target and
//! its history window (the last moves' commands and where the camera saw the tip), and the
//! calibrating classical baseline (the closed form on a model fitted to every camera view so
//! far) is judged beside it on the same plant, move by move.
//!
//! A *move* is one target: the head commands it once, from the history as it stands, and the
//! move ends when the plant has settled on that command with a camera frame taken after it:
//! that frame's offset from the nominal tip joins the history, and the move's error (the head's,
//! on the plant; the baseline's, landing its own command on the same plant) joins the plot. The
//! sliders change the plant under both while they run.

use super::AppSet;
use super::export::{self, YScale};
use super::format::metres;
use super::job::Job;
use super::state::arm::{Nominal, PlantSettings, Sim, closed_form};
use super::state::solve::{Command, Solutions};
use super::state::view::Target;
use crate::cli::figure::Series;
use bevy::prelude::*;
use bevy_egui::egui;
use elbow::experiments::feedback::{
    FeedbackConfig, FeedbackHead, History, Observation, calibrated_command, train_feedback_head_watched,
};
use elbow::experiments::plants::{Ranges, landing};
use elbow::plant::Camera;
use elbow::{Point2, Pose, TrainConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Colour of the calibrated model's ghost arm (the classical baseline beside the feedback head).
pub(crate) const CALIBRATED_COLOR: Color = Color::srgb(1.0, 0.55, 0.95);

/// Moves kept for the plot.
pub(crate) const MOVES_KEPT: usize = 200;

/// Registers the feedback lab and its command, which runs after the envelope's decision and
/// before the plant, and the end of each move, after the plant.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<FeedbackLab>()
        .init_resource::<FeedbackJob>()
        .add_message::<TrainFeedback>()
        .add_systems(
            Update,
            (train, command).chain().in_set(AppSet::Envelope).after(super::envelope::decide).run_if(closed_form),
        )
        .add_systems(Update, observe.in_set(AppSet::Plant).after(super::plant::drive).run_if(closed_form));
}

/// Registers the drawing of the history window.
pub(crate) fn draw_plugin(app: &mut App) {
    app.add_systems(Update, draw.in_set(AppSet::Draw).run_if(closed_form).run_if(super::replay::not_replaying));
}

/// Asks for the feedback head to be trained afresh (the panel's button).
#[derive(Message, Debug, Clone, Copy)]
pub(crate) struct TrainFeedback;

/// The head's training, off the frame, keyed by the number of the request, and the flag that
/// stops it (a new request, or the app closing: dropping the job waits for its thread).
#[derive(Resource, Default)]
struct FeedbackJob(Job<u64, Result<(FeedbackHead, usize), String>>, Arc<AtomicBool>);

impl Drop for FeedbackJob {
    fn drop(&mut self) {
        self.1.store(true, Ordering::Relaxed);
    }
}

/// One finished move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MoveError {
    /// Where the head's command left the real tip, metres from the target.
    pub(crate) head: f64,
    /// Where the calibrating baseline's command lands on the same plant, metres from the target.
    pub(crate) calibrated: f64,
}

/// The feedback head, its history on the plant in force, and the per-move errors.
#[derive(Resource, Debug, Default)]
pub(crate) struct FeedbackLab {
    /// The trained head.
    pub(crate) head: Option<FeedbackHead>,
    /// Training moves it learnt from, once trained.
    pub(crate) samples: usize,
    /// Training in progress, or why it failed.
    pub(crate) training: Option<Result<(), String>>,
    /// The share of the training episodes collected, while it trains.
    pub(crate) progress: Option<f64>,
    /// Where the training stands in words ([`Job::status`]).
    pub(crate) status: String,
    /// Requests so far (the job's key).
    requests: u64,
    /// True while the head drives the plant.
    pub(crate) drives: bool,
    /// The history window the head reads, newest first.
    pub(crate) history: History,
    /// Every view since the head took over (the calibration's data).
    pub(crate) seen: Vec<Observation>,
    /// The move in progress: its target, the head's command for it, and the plant time the arm
    /// was first seen settled on it (`None` until then; infinite once the move is recorded).
    pub(crate) pending: Option<(Point2, Pose, Option<f64>)>,
    /// This frame's command.
    pub(crate) command: Option<Pose>,
    /// The calibrating baseline's command for the target now (drawn as a ghost).
    pub(crate) calibrated: Option<Pose>,
    /// The target and the number of views [`FeedbackLab::calibrated`] was fitted for.
    calibrated_for: Option<(Point2, usize)>,
    /// The finished moves, oldest first (at most [`MOVES_KEPT`]).
    pub(crate) moves: Vec<MoveError>,
}

impl FeedbackLab {
    /// Forgets the plant: an empty history, no views, no moves (the head starts over).
    pub(crate) fn restart(&mut self) {
        self.history = History::new(FeedbackConfig::default().history);
        self.seen.clear();
        self.pending = None;
        self.calibrated_for = None;
        self.moves.clear();
    }
}

/// Starts the training asked for and collects it when done.
fn train(
    mut asked: MessageReader<TrainFeedback>,
    nominal: Res<Nominal>,
    mut lab: ResMut<FeedbackLab>,
    mut job: ResMut<FeedbackJob>,
) {
    if asked.read().last().is_some() {
        lab.requests += 1;
        let key = lab.requests;
        lab.training = Some(Ok(()));
        // A run in progress stops at its next step; the new one starts when it has.
        job.1.store(true, Ordering::Relaxed);
        job.1 = Arc::new(AtomicBool::new(false));
        job.0.want(&key);
    }
    let key = lab.requests;
    if job.0.due() && lab.training == Some(Ok(())) {
        let arm = nominal.0;
        let stop = job.1.clone();
        let meter = job.0.meter();
        job.0.start(key, move || {
            let tc = TrainConfig { arm, steps: 4_000, ..TrainConfig::default() };
            let fc = FeedbackConfig::default();
            let episodes = |n: usize| {
                meter.set(n, fc.episodes);
                !stop.load(Ordering::Relaxed)
            };
            let mut keep_going = || !stop.load(Ordering::Relaxed);
            train_feedback_head_watched(&tc, &fc, &Ranges::TRAINING, Camera::default(), &episodes, &mut keep_going)
                .map(|(head, samples, _)| (head, samples))
                .map_err(|e| e.to_string())
        });
    }
    let (progress, status) = (job.0.busy().then(|| job.0.meter().fraction().unwrap_or(0.0)), job.0.status());
    if lab.progress != progress || lab.status != status {
        (lab.progress, lab.status) = (progress, status);
    }
    let key = lab.requests;
    match job.0.poll(&key) {
        Some(Ok(Ok((head, samples)))) => {
            lab.head = Some(head);
            lab.samples = samples;
            lab.training = None;
            lab.restart();
        }
        Some(Ok(Err(e)) | Err(e)) => lab.training = Some(Err(e)),
        None => {}
    }
}

/// The head's command (when it drives), which the plant takes in place of the driver's: one per
/// target, from the target and the history as it stood when the target was set, so a move is one
/// target; and the calibrating baseline's for the ghost.
fn command(
    target: Res<Target>,
    nominal: Res<Nominal>,
    mut lab: ResMut<FeedbackLab>,
    mut solutions: ResMut<Solutions>,
    mut sent: ResMut<Command>,
) {
    let lab = &mut *lab;
    let Some(head) = lab.head.as_ref().filter(|_| lab.drives) else {
        (lab.command, lab.calibrated, lab.pending) = (None, None, None);
        return;
    };
    match lab.pending {
        Some((aim, command, _)) if aim == target.pos => lab.command = Some(command),
        _ => {
            let command = head.command(target.pos, &lab.history);
            lab.command = command.is_finite().then_some(command);
            lab.pending = lab.command.map(|c| (target.pos, c, None));
        }
    }
    // The calibration changes only with the target or the views: fitted again only then.
    let asked = (target.pos, lab.seen.len());
    if lab.calibrated.is_none() || lab.calibrated_for != Some(asked) {
        lab.calibrated = Some(calibrated_command(&nominal.0, target.pos, &lab.seen));
        lab.calibrated_for = Some(asked);
    }
    solutions.command = lab.command;
    *sent = Command::pose(lab.command);
}

/// Ends a move once the plant has settled on the head's command with a camera frame after it:
/// the view joins the history and the move's errors join the plot.
fn observe(nominal: Res<Nominal>, settings: Res<PlantSettings>, sim: Res<Sim>, mut lab: ResMut<FeedbackLab>) {
    let Some((aim, sent, settled)) = lab.pending else { return };
    if settled == Some(f64::INFINITY) {
        return; // recorded; the next move starts when the target moves
    }
    let plant = &sim.plant;
    // The goal at the servos is this move's (the command is sent every frame, so goals stay in
    // flight under latency: what counts is that this one has arrived), and the arm is still.
    let arrived = Pose::of(&plant.commanded()).wrapped_difference(sent).max_abs() < 1e-9;
    if !(arrived && plant.is_settled()) {
        lab.pending = Some((aim, sent, None));
        return;
    }
    let Some(settled) = settled else {
        lab.pending = Some((aim, sent, Some(plant.time())));
        return;
    };
    // The view: the first camera frame taken once the arm had settled.
    let Some(frame) = plant.camera().filter(|f| f.time >= settled) else { return };
    let arm = nominal.0;
    // The baseline's move: the closed form calibrated from the views before this one.
    let baseline = landing(&settings.config(&arm), calibrated_command(&arm, aim, &lab.seen)).tip();
    let observation = Observation { command: sent, offset: frame.tip - arm.tip(sent) };
    lab.history.push(observation);
    lab.seen.push(observation);
    lab.moves.push(MoveError { head: (plant.tip() - aim).norm(), calibrated: (baseline - aim).norm() });
    if lab.moves.len() > MOVES_KEPT {
        lab.moves.remove(0);
    }
    // The move is done; the next starts when the target moves.
    lab.pending = Some((aim, sent, Some(f64::INFINITY)));
}

/// The history window on the canvas: for each view, where the model put the tip for the
/// command (small ring) and where the camera saw it (the arrow's head); and the calibrating
/// baseline's command as a thin ghost arm.
fn draw(
    lab: Res<FeedbackLab>,
    nominal: Res<Nominal>,
    scale: Res<super::camera::ViewScale>,
    mut gizmos: Gizmos,
    mut ghost: Gizmos<super::draw::GhostGizmos>,
) {
    if !lab.drives {
        return;
    }
    let arm = nominal.0;
    let v = |p: Point2| Vec2::new(p.x as f32, p.y as f32);
    let color = Color::srgb(0.45, 0.85, 1.0);
    for (k, o) in lab.history.seen().iter().enumerate() {
        let fade = 1.0 - 0.35 * k as f32;
        let model = v(arm.tip(o.command));
        let seen = v(arm.tip(o.command) + o.offset);
        gizmos.circle_2d(model, scale.px(3.0), color.with_alpha(fade));
        gizmos.arrow_2d(model, seen, color.with_alpha(fade));
    }
    if let Some(q) = lab.calibrated {
        ghost.linestrip_2d(arm.joints(q).map(v), CALIBRATED_COLOR);
        for p in arm.joints(q).into_iter().skip(1) {
            ghost.circle_2d(v(p), scale.px(4.0), CALIBRATED_COLOR);
        }
    }
}

/// The panel's section: train, drive, the history window and the per-move errors.
/// `camera_on`: the plant's camera takes frames (without it no move ends).
pub(crate) fn section(
    ui: &mut egui::Ui,
    mut lab: Mut<FeedbackLab>,
    train: &mut MessageWriter<TrainFeedback>,
    camera_on: bool,
) {
    ui.small(
        "A head trained on randomized plants (mismatch, flex, friction, backlash) that reads its last two moves: each command and where the camera saw the tip. Beside it, what a roboticist runs: the closed form on a model calibrated from every camera view so far (pink ghost).",
    );
    // The buttons wrap rather than widen the panel, and the training's state has a line of its
    // own below them: starting it adds nothing to the row.
    let busy = matches!(lab.training, Some(Ok(())));
    ui.horizontal_wrapped(|ui| {
        let label = if lab.head.is_some() { "train again" } else { "train" };
        if ui
            .add_enabled(!busy, egui::Button::new(label))
            .on_hover_text(format!(
                "Collects {} episodes on randomized plants (nearly all of the time: each move lands on the simulated plant), then fits the head; off the frame.",
                FeedbackConfig::default().episodes
            ))
            .clicked()
        {
            train.write(TrainFeedback);
        }
        let mut drives = lab.drives;
        if ui.add_enabled(lab.head.is_some(), egui::Checkbox::new(&mut drives, "drives the plant")).changed() {
            lab.drives = drives;
            lab.restart();
        }
        if ui
            .add_enabled(lab.drives, egui::Button::new("forget the plant"))
            .on_hover_text("empty the history and the calibration's views: a first move again")
            .clicked()
        {
            lab.restart();
        }
    });
    // Always one row of the same height, whatever it says: while it trains, a bar as high as
    // the line's text fills the panel's width.
    ui.horizontal_wrapped(|ui| {
        if busy {
            let text = format!("collecting episodes on randomized plants: {}", lab.status);
            let bar =
                egui::ProgressBar::new(lab.progress.unwrap_or(0.0) as f32).text(egui::RichText::new(text).small());
            let height = ui.text_style_height(&egui::TextStyle::Small);
            ui.add(bar.desired_width(ui.available_width()).desired_height(height));
        } else if let Some(Err(e)) = &lab.training {
            ui.colored_label(egui::Color32::LIGHT_RED, egui::RichText::new(e).small());
        } else if lab.head.is_some() {
            ui.small(format!("Trained on {} moves of randomized plants.", lab.samples));
        } else {
            ui.small(format!(
                "Not trained yet: training collects {} episodes off the frame (about two minutes of one core).",
                FeedbackConfig::default().episodes
            ));
        }
    });
    if !lab.drives {
        return;
    }
    ui.small(
        "History window, newest first (blue arrows on the canvas: from the model's tip to where the camera saw it):",
    );
    if lab.history.seen().is_empty() {
        ui.small("  empty: the first move is the nominal closed form plus what the head learnt on average.");
    }
    for o in lab.history.seen() {
        ui.small(format!(
            "  command ({:+.3}, {:+.3}) rad, camera off the model by ({:+.1}, {:+.1}) mm",
            o.command.shoulder,
            o.command.elbow,
            o.offset.x * 1e3,
            o.offset.y * 1e3
        ));
    }
    let moves = &lab.moves;
    if let Some(last) = moves.last() {
        ui.small(format!(
            "Move {}: the head's tip {} off, the calibrated closed form's {} (on the same plant).",
            moves.len(),
            metres(Some(last.head)),
            metres(Some(last.calibrated))
        ));
    } else {
        ui.small("Click a target and let the arm settle: each settled move is one point below.");
    }
    if !camera_on {
        ui.colored_label(
            egui::Color32::LIGHT_RED,
            egui::RichText::new("The camera is off (frame rate 0): the head sees no feedback and no move is recorded.")
                .small(),
        );
    }
    let series = |name: &str, rgb: [u8; 3], pick: fn(&MoveError) -> f64| Series {
        name: name.into(),
        rgb,
        points: moves.iter().enumerate().map(|(i, m)| [(i + 1) as f64, pick(m).max(1e-6).log10()]).collect(),
        dashed: false,
    };
    let all = [
        series("feedback head", [115, 217, 255], |m| m.head),
        series("calibrated closed form", [242, 153, 242], |m| m.calibrated),
    ];
    ui.small("Tip error after each move (log scale)");
    let title = "tip error per move";
    let axes = ("move", "tip error");
    let figure =
        export::Figure { name: "feedback-tip-error-per-move", title, axes, scale: YScale::LogMetres, include: &[] };
    export::show(ui, &figure, &all, |_| {});
    export::buttons(ui, &figure, &all);
}

#[cfg(test)]
mod tests;
