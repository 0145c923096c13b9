//! A catalog record replayed in the app (`elbow --replay FILE --index N`, or the panel's replay
//! field): the record's arm, plant, solver and target, re-run off the frame by the core's traced
//! replay ([`replay_traced`]), then shown paused at the end of the failing move, with a scrubber
//! over the plant's sub-steps of the last moves, step and play controls, the failure named
//! (silent miss, reported, false alarm) and whether the re-run reproduced the record bit for bit.
//!
//! A record of a chain (`rail3`, `3r`, `so101`, an arm from lengths) opens in the chain lab on
//! its own arm, a two-link record in the two-link lab: opening one switches the lab to the
//! record's first ([`lab_of`]). A switch of the lab by the user closes the replay.
//!
//! While a replay is open its scene takes the canvas: the live arms are not drawn (the live lab
//! runs on underneath and returns when the replay closes), and the camera frames the action of
//! the sub-step shown ([`ReplayView::focus`]: the move's target with its tolerance, the real tip,
//! the goal's tip on the model, the sensed target), which the wheel, `+`/`-` and the section's
//! buttons zoom. The panel shows the record's settings in place of the live lab's controls.

use super::AppSet;
use super::format::{PLANT_COLOR, TARGET_COLOR, color32, metres};
use super::job::Job;
use super::state::arm::{Lab, MAX_FRAME_SECS, Nominal};
use super::state::view::{Focus, Framing, Target};
use bevy::prelude::*;
use bevy_egui::egui;
use elbow::Point2;
use elbow::experiments::degradation::{FailureRecord, Finding, MoveTrace, PlantTrace, Tick, replay_traced};
use elbow::plant::SUBSTEP;

/// How many of the last moves keep every plant sub-step for the scrubber: the failing move and
/// the two before it.
pub(crate) const KEEP_MOVES: usize = 3;

/// Registers the replay's state, its background run and playback.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ReplayView>()
        .init_resource::<ReplayJob>()
        .add_message::<OpenReplay>()
        .add_systems(Update, (close_on_other_lab, open, collect, play, frame).chain().in_set(AppSet::Target));
}

/// Registers the replay's drawing.
pub(crate) fn draw_plugin(app: &mut App) {
    app.insert_gizmo_config(
        ReplayGizmos,
        GizmoConfig { line: GizmoLineConfig { width: 10.0, ..default() }, ..default() },
    )
    .add_systems(Update, draw.in_set(AppSet::Draw).run_if(replaying));
}

/// Opens a record: `name` says where it came from (`catalog.jsonl #12`).
#[derive(Message, Debug, Clone)]
pub(crate) struct OpenReplay {
    /// The record.
    pub(crate) record: Box<FailureRecord>,
    /// Where it came from, for the panel.
    pub(crate) name: String,
}

/// What the replay's background run brings: the re-run's verdicts and differences, and its trace.
type Replayed = Result<(Vec<String>, PlantTrace), String>;

/// The replay's background run, keyed by the number of the opening.
#[derive(Resource, Default)]
struct ReplayJob(Job<u64, Replayed>);

/// The replay the panel and the canvas show.
#[derive(Resource, Debug, Default)]
pub(crate) struct ReplayView {
    /// The record and where it came from, once one is open.
    pub(crate) open: Option<(Box<FailureRecord>, String)>,
    /// The number of openings so far (the background run's key).
    opened: u64,
    /// The trace, once the re-run is done.
    pub(crate) trace: Option<PlantTrace>,
    /// Every field in which the re-run differs from the record (empty: bit for bit).
    pub(crate) differences: Vec<String>,
    /// Why the re-run failed, if it did.
    pub(crate) error: Option<String>,
    /// The sub-steps of the trace in order, as (move, sub-step) positions.
    pub(crate) ticks: Vec<(usize, usize)>,
    /// The scrubber's position in [`ReplayView::ticks`].
    pub(crate) at: usize,
    /// True while it plays.
    pub(crate) playing: bool,
    /// Plant time owed to playback, seconds (less than one sub-step).
    carry: f64,
}

impl ReplayView {
    /// The move and sub-step the scrubber is on.
    pub(crate) fn current(&self) -> Option<(&MoveTrace, &Tick)> {
        let (m, t) = *self.ticks.get(self.at)?;
        let mv = self.trace.as_ref()?.moves.get(m)?;
        Some((mv, mv.ticks.get(t)?))
    }

    /// The position of the first sub-step of the move after (`forward`) or of the move the
    /// scrubber is in (else; the one before when already at its first).
    fn move_start(&self, forward: bool) -> usize {
        let Some(&(m, t)) = self.ticks.get(self.at) else { return 0 };
        let target = if forward {
            m + 1
        } else if t == 0 {
            m.saturating_sub(1)
        } else {
            m
        };
        self.ticks.iter().position(|&(mm, _)| mm == target).unwrap_or(if forward { self.at } else { 0 })
    }

    /// Closes the replay: the live lab is drawn again, and a re-run still going is dropped when
    /// it ends.
    pub(crate) fn close(&mut self) {
        *self = ReplayView { opened: self.opened + 1, ..ReplayView::default() };
    }

    /// Says why a record could not be opened (the panel shows it).
    pub(crate) fn refuse(&mut self, why: String) {
        self.close();
        self.error = Some(why);
    }

    /// The box the camera frames while the replay is open: the shown sub-step's target with its
    /// tolerance circle, the real tip, the goal's tip on the model and the sensed target, with a
    /// margin (before the trace is in: the record's target and tolerance).
    pub(crate) fn focus(&self) -> Option<Focus> {
        let (record, _) = self.open.as_ref()?;
        let tol = record.expected.tolerance.max(0.0);
        let (target, mut points) = match self.current() {
            Some((mv, tick)) => {
                let goal = goal_points(record, &tick.goal).last().copied();
                (mv.target, [Some(tick.tip()), Some(mv.sensed), goal].into_iter().flatten().collect())
            }
            None => (record.target, Vec::new()),
        };
        points.extend([-1.0, 1.0].map(|s| target + Point2::new(s * tol, s * tol)));
        Focus::around(points, FOCUS_MARGIN, FOCUS_LEAST)
    }

    /// Moves the scrubber by `by` sub-steps, within the trace.
    pub(crate) fn step(&mut self, by: isize) {
        let last = self.ticks.len().saturating_sub(1);
        self.at = self.at.saturating_add_signed(by).min(last);
    }
}

/// The margin round a replay's action, a fraction of its larger side on each side.
const FOCUS_MARGIN: f64 = 0.2;
/// The smallest side of the box a replay frames, metres (a tip on its target still shows the
/// arm's last centimetres).
const FOCUS_LEAST: f64 = 0.04;

/// Frames the open replay's action (the zoom starts again as framed when a replay opens or
/// closes); without a replay the camera frames the lab's arm.
fn frame(view: Res<ReplayView>, mut framing: ResMut<Framing>) {
    let focus = view.focus();
    if focus.is_some() != framing.focus.is_some() {
        framing.zoom = 1.0;
    }
    if framing.focus != focus {
        framing.focus = focus;
    }
}

/// Run condition: a replay is open.
pub(crate) fn replaying(view: Res<ReplayView>) -> bool {
    view.open.is_some()
}

/// Run condition: no replay is open.
pub(crate) fn not_replaying(view: Res<ReplayView>) -> bool {
    view.open.is_none()
}

/// The lab a record is replayed in: the chain lab on the record's own chain, or the two-link
/// lab for a two-link record.
pub(crate) fn lab_of(record: &FailureRecord) -> Lab {
    Lab(record.config.chain.clone().unwrap_or_else(|| elbow::arm::Arm::two_link(record.arm)))
}

/// Opens a record asked for: a two-link record of another arm than the one the two-link lab
/// runs is refused (said in the panel). Else the lab switches to the record's ([`lab_of`]) when
/// it is another, and the record opens on the next frame, once the lab's own switch has rebuilt
/// its state; then the target moves to the record's and its re-run is started off the frame
/// ([`collect`]).
fn open(
    mut asked: MessageReader<OpenReplay>,
    mut pending: Local<Option<OpenReplay>>,
    mut lab: ResMut<Lab>,
    nominal: Res<Nominal>,
    mut view: ResMut<ReplayView>,
    mut target: ResMut<Target>,
) {
    if let Some(OpenReplay { record, name }) = asked.read().last().cloned() {
        view.close();
        if record.config.chain.is_none() && record.arm != nominal.0 {
            view.refuse(format!(
                "{name} is a record of the arm {}, and the app runs the arm {}: open it with `elbow --replay FILE --index N`",
                record.arm, nominal.0
            ));
            return;
        }
        *pending = Some(OpenReplay { record, name });
    }
    let Some(OpenReplay { record, name }) = pending.take() else { return };
    let wanted = lab_of(&record);
    if *lab != wanted {
        *lab = wanted;
        *pending = Some(OpenReplay { record, name });
        return;
    }
    *target = Target::at(record.target);
    view.open = Some((record, name));
}

/// Closes the replay when the user switches to another lab than the record's (the replay's own
/// switch comes before it opens).
fn close_on_other_lab(lab: Res<Lab>, mut view: ResMut<ReplayView>) {
    if lab.is_changed() && view.open.as_ref().is_some_and(|(record, _)| *lab != lab_of(record)) {
        view.close();
    }
}

/// Starts the open record's re-run when the job is free (one run at a time: a run for a replay
/// since closed finishes first, its result dropped), and collects it when done, stopped at the
/// end of the failing move.
fn collect(mut view: ResMut<ReplayView>, mut job: ResMut<ReplayJob>) {
    let opened = view.opened;
    if let Some((record, _)) = view.open.as_ref().filter(|_| view.trace.is_none() && view.error.is_none()) {
        job.0.want(&opened);
        if job.0.due() {
            let run = record.clone();
            job.0.start(opened, move || {
                replay_traced(&run, KEEP_MOVES)
                    .map(|(outcome, trace)| (outcome.differences.iter().map(ToString::to_string).collect(), trace))
                    .map_err(|e| e.to_string())
            });
        }
    }
    match job.0.poll(&opened) {
        Some(Ok(Ok((differences, trace)))) => {
            view.ticks =
                trace.moves.iter().enumerate().flat_map(|(m, mv)| (0..mv.ticks.len()).map(move |t| (m, t))).collect();
            view.at = view.ticks.len().saturating_sub(1);
            view.differences = differences;
            view.trace = Some(trace);
        }
        Some(Ok(Err(e)) | Err(e)) => view.error = Some(format!("the replay failed: {e}")),
        None => {}
    }
}

/// Advances a playing replay by the frame time, in real time: the sub-steps of as much plant
/// time as the frame took ([`SUBSTEP`] each); it stops at the end.
fn play(time: Res<Time>, mut view: ResMut<ReplayView>) {
    if !view.playing {
        return;
    }
    view.carry += time.delta_secs_f64().clamp(0.0, MAX_FRAME_SECS);
    let steps = (view.carry / SUBSTEP).floor();
    view.carry -= steps * SUBSTEP;
    view.step(steps as isize);
    if view.at + 1 >= view.ticks.len() {
        view.playing = false;
    }
}

/// The failure a record states, in words.
fn failure(record: &FailureRecord) -> String {
    let tol = record.expected.tolerance;
    let error = metres(Some(record.happened.error));
    let tolerance = metres(Some(tol));
    match record.verdict {
        Finding::Silent => format!(
            "SILENT MISS: the tip ended {error} from the target (tolerance {tolerance}) and nothing was reported."
        ),
        Finding::Reported => {
            format!("REPORTED: the tip ended {error} from the target (tolerance {tolerance}) and the pipeline said so.")
        }
        Finding::FalseAlarm => format!(
            "FALSE ALARM: the tip ended {error} from the target, within the tolerance of {tolerance}, yet a failure was reported."
        ),
        Finding::Ok => format!(
            "no failure with the encoder check (the tip ended {error} from the target); the camera check's verdict is {}.",
            record.camera_verdict.key()
        ),
    }
}

/// The panel's replay section: what the record is, the failure, the scrubber and the controls.
/// Returns false when the user closed the replay.
pub(crate) fn section(ui: &mut egui::Ui, mut view: Mut<ReplayView>, mut framing: Mut<Framing>) -> bool {
    let Some((record, name)) = view.open.clone() else { return true };
    ui.strong(format!("Replay: {name}"));
    zoom_row(ui, &mut framing);
    let channel = record.setting.channel.map_or_else(
        || "no channel (the baseline)".to_string(),
        |c| format!("{} at {}", c.key(), elbow::stats::fmt_num(record.setting.level)),
    );
    let arm = record.config.chain.as_ref().map_or_else(|| format!("the arm {}", record.arm), |c| c.name.clone());
    ui.small(format!(
        "{} on {arm}, the `{}` targets, {channel}; move {} to ({:.3}, {:.3}) m.",
        record.pipeline,
        record.split.key(),
        record.index,
        record.target.x,
        record.target.y
    ));
    ui.colored_label(color32(TARGET_COLOR), failure(&record));
    settings(ui, &record);
    if let Some(e) = &view.error {
        ui.colored_label(egui::Color32::LIGHT_RED, egui::RichText::new(e).small());
    }
    if view.trace.is_none() {
        if view.error.is_none() {
            ui.horizontal(|ui| {
                ui.spinner();
                let learned = if record.config.chain.is_some() { "its net" } else { "its head" };
                ui.small(format!("re-running the record off the frame ({learned} trains as the run's did)…"));
            });
        }
        return !ui.button("close the replay").clicked();
    }
    if view.differences.is_empty() {
        ui.small("The core's replay re-derived every field of the record, floats bit for bit.");
    } else {
        ui.colored_label(
            egui::Color32::LIGHT_RED,
            format!("The re-run differs from the record: {}", view.differences.join("; ")),
        );
    }
    let last = view.ticks.len().saturating_sub(1);
    let mut at = view.at;
    ui.add(egui::Slider::new(&mut at, 0..=last).text(format!("sub-step ({} ms each)", SUBSTEP * 1e3))).on_hover_text(
        "Scrub the plant's sub-steps over the last moves up to the record's; it opens at the end of the failing move.",
    );
    if at != view.at {
        view.at = at;
        view.playing = false;
    }
    ui.horizontal(|ui| {
        if ui.button("⏮ move").on_hover_text("to the start of this move (or the one before)").clicked() {
            view.at = view.move_start(false);
        }
        if ui.button("◀ step").clicked() {
            view.step(-1);
        }
        let playing = view.playing;
        if ui.button(if playing { "⏸ pause" } else { "▶ play" }).clicked() {
            if !playing && view.at >= last {
                view.at = view.move_start(false);
            }
            view.playing = !playing;
        }
        if ui.button("step ▶").clicked() {
            view.step(1);
        }
        if ui.button("move ⏭").on_hover_text("to the start of the next move").clicked() {
            view.at = view.move_start(true);
        }
    });
    if let Some((mv, tick)) = view.current() {
        let miss = (tick.tip() - mv.target).norm();
        let what =
            if tick.correction == 0 { "the answer".to_string() } else { format!("correction {}", tick.correction) };
        ui.small(format!(
            "t = {:.3} s, move {} ({what} sent): the real tip is {} from this move's target.",
            tick.time,
            mv.index,
            metres(Some(miss))
        ));
    }
    if let Some(trace) = &view.trace {
        let shown: Vec<String> = trace
            .moves
            .iter()
            .rev()
            .take(6)
            .rev()
            .map(|m| format!("#{} {}{}", m.index, metres(Some(m.error)), if m.reported { " reported" } else { "" }))
            .collect();
        ui.small(format!("Last moves, error after each: {}", shown.join(", ")));
    }
    let rail =
        if record.config.chain.as_ref().is_some_and(|c| c.chain.rail().is_some()) { "; grey: the rail" } else { "" };
    ui.small(format!("Thick: the real arm; thin: the goal on the model; yellow trail: the tip's path in this move; cross: the target; ring: the target as sensed; circle: the tolerance{rail}."));
    !ui.button("close the replay").clicked()
}

/// The zoom buttons: closer, farther, and back to the action as framed.
fn zoom_row(ui: &mut egui::Ui, framing: &mut Mut<Framing>) {
    ui.horizontal(|ui| {
        ui.small(format!("view ×{:.2}", framing.zoom));
        if ui.small_button("+").on_hover_text("zoom in (the wheel, or +)").clicked() {
            framing.zoom_by(1.0);
        }
        if ui.small_button("−").on_hover_text("zoom out (the wheel, or -)").clicked() {
            framing.zoom_by(-1.0);
        }
        if ui.small_button("fit").on_hover_text("frame the target, the tips and the tolerance again (0)").clicked() {
            framing.zoom = 1.0;
        }
    });
}

/// The record's settings, read-only: what the live lab's controls would show, as the run had
/// them (the controls return when the replay closes).
fn settings(ui: &mut egui::Ui, record: &FailureRecord) {
    egui::CollapsingHeader::new("The record's settings (read-only)").default_open(true).show(ui, |ui| {
        egui::Grid::new("replay-settings").num_columns(2).show(ui, |ui| {
            let mut row = |key: &str, value: String| {
                ui.small(key);
                ui.small(value);
                ui.end_row();
            };
            row("driver", record.pipeline.to_string());
            row("targets", format!("`{}`, move {}", record.split.key(), record.index));
            row("tolerance", metres(Some(record.expected.tolerance)));
            let on: Vec<String> = elbow::experiments::degradation::Channel::ALL
                .into_iter()
                .filter(|&c| {
                    c != elbow::experiments::degradation::Channel::Combined && record.setting.perturbation[c] != 0.0
                })
                .map(|c| format!("{} {} {}", c.key(), elbow::stats::fmt_num(record.setting.perturbation[c]), c.unit()))
                .collect();
            row("plant", if on.is_empty() { "every channel at zero".into() } else { on.join(", ") });
            row("noise seed", record.seed.to_string());
        });
    });
}

/// The gizmos of the replay's scene.
#[derive(Default, Reflect, GizmoConfigGroup)]
struct ReplayGizmos;

fn v(p: Point2) -> Vec2 {
    Vec2::new(p.x as f32, p.y as f32)
}

/// The goal `goal` (in the plant's coordinates) on the record's nominal arm: its base, every
/// joint and its tip.
fn goal_points(record: &FailureRecord, goal: &[f64]) -> Vec<Point2> {
    match &record.config.chain {
        Some(arm) if goal.len() == arm.coords() => arm.chain.points(goal),
        Some(_) => Vec::new(),
        None => record.arm.joints(elbow::Pose::of(goal)).to_vec(),
    }
}

/// Draws the scrubbed sub-step: the real arm, the goal on the model, the tip's path through the
/// move so far, the move's target, the sensed target and the tolerance.
fn draw(view: Res<ReplayView>, scale: Res<super::camera::ViewScale>, mut arm: Gizmos<ReplayGizmos>, mut thin: Gizmos) {
    let Some((record, _)) = &view.open else { return };
    let tolerance = record.expected.tolerance as f32;
    let Some((mv, tick)) = view.current() else {
        // Before the trace is in: the record's target alone.
        thin.circle_2d(v(record.target), tolerance.max(scale.px(6.0)), TARGET_COLOR);
        return;
    };
    // The tip's path through this move so far.
    if let Some(&(m, t)) = view.ticks.get(view.at) {
        let trace = view.trace.as_ref().map(|tr| &tr.moves[m].ticks[..=t]).unwrap_or_default();
        thin.linestrip_2d(trace.iter().map(|k| v(k.tip())), TARGET_COLOR.with_alpha(0.6));
    }
    if let Some(chain) = &record.config.chain {
        // A chain: its rail, and a mark at every joint, so a stretched chain still shows its links.
        if let Some(t) = chain.chain.rail() {
            thin.line_2d(Vec2::new(0.0, t.min as f32), Vec2::new(0.0, t.max as f32), Color::srgb(0.55, 0.57, 0.65));
        }
        let joint = 0.03 * chain.chain.reach() as f32;
        for &p in &tick.points[..tick.points.len().saturating_sub(1)] {
            thin.circle_2d(v(p), joint, PLANT_COLOR);
        }
    }
    arm.linestrip_2d(tick.points.iter().map(|&p| v(p)), PLANT_COLOR.with_alpha(0.85));
    thin.linestrip_2d(goal_points(record, &tick.goal).into_iter().map(v), PLANT_COLOR);
    let t = v(mv.target);
    let r = scale.px(7.0);
    thin.line_2d(t - Vec2::X * r, t + Vec2::X * r, TARGET_COLOR);
    thin.line_2d(t - Vec2::Y * r, t + Vec2::Y * r, TARGET_COLOR);
    thin.circle_2d(t, tolerance.max(scale.px(2.0)), TARGET_COLOR.with_alpha(0.7)).resolution(128);
    thin.circle_2d(v(mv.sensed), scale.px(4.0), TARGET_COLOR.with_alpha(0.5));
    let color = if (tick.tip() - mv.target).norm() > record.expected.tolerance {
        Color::srgb(1.0, 0.3, 0.3)
    } else {
        Color::srgb(0.3, 1.0, 0.5)
    };
    thin.circle_2d(v(tick.tip()), scale.px(3.5), color);
}

#[cfg(test)]
mod tests;
