//! The egui side panel. At the top, what users come for: which solver drives the plant, the
//! envelope toggle, the noise and backlash sliders, and the workspace atlas (solver, layer,
//! colour key, the hovered cell's numbers). Below, in collapsible sections: the legend with
//! per-solver readouts and show/hide toggles, loss and tip-error plots, the envelope's
//! intervention counts, and the target, plant and training controls.
//!
//! Each section gets only what it shows or edits: plain values and shared references for what it
//! reads, a [`Mut`] of each resource it edits. Widgets edit copies of the resources, written
//! back only when they changed, so change detection (the plant re-reads its settings on change)
//! sees real edits only. Every number goes through [`metres`] or [`number`], which show "—" for
//! anything not finite.
//!
//! Every solver list here (the driver buttons, the legend, the training table) iterates
//! [`SolverId::TWO_LINK`] or [`HeadKind::ALL`], so a new head appears everywhere by itself.

mod manifold;

use super::atlas::AtlasView;
use super::claims::{BOARD_TARGETS, ClaimsBoard};
use super::export::{self, YScale};
use super::feedback::{self, FeedbackLab, TrainFeedback};
use super::format::{
    BRANCH_COLOR, FLASH_COLOR, LESSON_COLOR, PLANT_COLOR, TARGET_COLOR, color32, finite, key_bar, metres, number,
    solver_color, swatch,
};
use super::keys::{HELP_KEYS, Help, shortcuts};
use super::lessons::{ActiveLesson, OpenLesson};
use super::manifold_atlas::ChainAtlasView;
use super::replay::{self, OpenReplay, ReplayView};
use super::scene_file::{self, LoadView, SaveView, ViewFileField};
use super::state::arm::Lab as LabChoice;
use super::state::arm::{HISTORY_SECS, Nominal, PlantSettings, Sim, TipHistory, home_target, range};
use super::state::manifold::{ChainTraining, ChainView};
use super::state::solve::{BranchLog, Driver, EnvelopeStats, Readout, Shown, Solutions};
use super::state::train::{LoadModel, ModelFile, Models, RunState, TrainCommand, Training, TrainingParams};
use super::state::view::{CameraView, Framing, Hover, PanelWidth, Target, WhyPin};
use super::sweep::{Curve, LiveSweep, SweepChannel};
use crate::cli::figure::Series;
use bevy::ecs::system::InMut;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::{EguiContext, EguiPrimaryContextPass, PrimaryEguiContext, egui};
use egui_plot::VLine;
use elbow::atlas::{Atlas, Layer, paint};
use elbow::envelope::Reason;
use elbow::experiments::degradation::{Channel, DegradationConfig};
use elbow::explain::Explanation;
use elbow::learned::Output;
use elbow::learned::branch::BranchChange;
use elbow::lineup::Family;
use elbow::{HeadKind, Lineup, Pipeline, Point2, SolverId, Table};
use manifold::arm_selector;

/// Registers the panel in egui's pass.
pub(crate) fn plugin(app: &mut App) {
    app.add_systems(EguiPrimaryContextPass, panel);
}

/// A section of the panel: a system that draws into the panel's [`egui::Ui`], reaching only the
/// resources it shows or edits.
type Section = InMut<'static, egui::Ui>;

/// Runs the section `system` into `ui` (a cached system: its `Local`s persist).
fn section<M>(world: &mut World, ui: &mut egui::Ui, system: impl IntoSystem<Section, (), M> + 'static) {
    if let Err(e) = world.run_system_cached_with(system, ui) {
        warn!("a panel section failed: {e}");
    }
}

/// A collapsible section titled `title`, open at first when `open`, running `system` inside.
fn collapsing<M>(
    world: &mut World,
    ui: &mut egui::Ui,
    title: &str,
    open: bool,
    system: impl IntoSystem<Section, (), M> + 'static,
) {
    egui::CollapsingHeader::new(title).default_open(open).show(ui, |ui| section(world, ui, system));
}

/// Shows the panel, section by section, and records its width for the world viewport. Every
/// section runs on every arm: it shows what applies to the arm in force and says in one line
/// what does not.
fn panel(world: &mut World, mut seen: Local<Option<ActiveLesson>>) -> Result {
    // A lesson just opened whose knob sits in the reality gap opens that section with it.
    let active = *world.resource::<ActiveLesson>();
    let gap_open = opens_the_gap(seen.replace(active), active);
    let mut contexts = world.query_filtered::<&mut EguiContext, With<PrimaryEguiContext>>();
    let ctx = contexts.single_mut(world)?.get_mut().clone();
    let mut root = egui::Ui::new(
        ctx.clone(),
        egui::Id::new("elbow-root"),
        egui::UiBuilder::new().layer_id(egui::LayerId::background()).max_rect(ctx.viewport_rect()),
    );
    let shown = side_panel().show(&mut root, |ui| scrolled(ui, |ui| contents(world, ui, gap_open)));
    world.resource_mut::<PanelWidth>().set_if_neq(PanelWidth(shown.response.rect.width()));
    let mut help = *world.resource::<Help>();
    help_overlay(&ctx, world.resource::<LabChoice>(), &mut help);
    world.resource_mut::<Help>().set_if_neq(help);
    Ok(())
}

/// The panel's contents: a vertical scroll area in a child of exactly the panel's room, so no
/// row moves the panel's edge (egui makes a panel as wide as what it holds: a row wider than the
/// panel widened it, and once gone the panel shrank back). A row that cannot wrap is cut at the
/// edge.
pub(crate) fn scrolled<R>(ui: &mut egui::Ui, add: impl FnOnce(&mut egui::Ui) -> R) -> R {
    let room = ui.available_rect_before_wrap();
    let mut child = ui.new_child(egui::UiBuilder::new().max_rect(room));
    child.set_clip_rect(room.intersect(ui.clip_rect()));
    let out = egui::ScrollArea::vertical().auto_shrink([false, false]).show(&mut child, add).inner;
    ui.allocate_rect(room, egui::Sense::hover());
    out
}

/// The side panel's width at first, logical pixels: the user may drag its edge (320 to 720).
pub(crate) const PANEL_WIDTH: f32 = 500.0;

/// The side panel: resizable, [`PANEL_WIDTH`] at first, and no row moves its edge (the scroll
/// area inside it is as wide as it; rows wrap or are cut).
fn side_panel() -> egui::Panel {
    egui::Panel::left("elbow-panel").resizable(true).default_size(PANEL_WIDTH).size_range(320.0..=720.0)
}

/// The panel's sections, top to bottom: the live controls first (driver, envelope, noise and
/// backlash, atlas), so they fit without scrolling at 1280x720; the rest in collapsible
/// sections.
fn contents(world: &mut World, ui: &mut egui::Ui, gap_open: bool) {
    section(world, ui, header);
    section(world, ui, lessons);
    section(world, ui, replay_view);
    if world.resource::<ReplayView>().open.is_some() {
        // The live lab's controls (and its branch banner) would read as the record's.
        ui.small("The live lab's controls are hidden while the replay is open (the lab runs on underneath): close the replay to get them back.");
        return;
    }
    section(world, ui, arms);
    ui.separator();
    section(world, ui, driver);
    section(world, ui, training_pill);
    section(world, ui, branches);
    collapsing(world, ui, "Feedback head: a learner that sees its own feedback", false, feedback_head);
    section(world, ui, perturbations);
    egui::CollapsingHeader::new("Reality gap: friction, flex, latency, camera")
        .default_open(false)
        .open(gap_open.then_some(true))
        .show(ui, |ui| section(world, ui, reality_gap));
    ui.separator();
    section(world, ui, atlas);
    collapsing(world, ui, "Why did it do that? An answer here, taken apart", false, why);
    collapsing(world, ui, "Save or restore this view", false, view_file);
    ui.separator();
    collapsing(world, ui, "Claims board: the lab's claims, judged for this scene", false, claims);
    collapsing(world, ui, "Live degradation: every solver vs the perturbation", true, sweep);
    collapsing(world, ui, "Solvers", true, solvers);
    collapsing(world, ui, "Plots: training loss, plant tip error", false, plots);
    collapsing(world, ui, "Safety envelope", false, envelope);
    collapsing(world, ui, "Target", false, target);
    collapsing(world, ui, "Plant: model mismatch", false, mismatch);
    collapsing(world, ui, "Training", false, training);
    collapsing(world, ui, "Keyboard shortcuts", false, keyboard);
}

/// The title, the help button and the hint line with the keys and the frame time.
fn header(
    InMut(ui): InMut<egui::Ui>,
    time: Res<Time>,
    lab: Res<LabChoice>,
    mut help: ResMut<Help>,
    mut frame_secs: Local<f32>,
) {
    // Smoothed frame time.
    let dt = time.delta_secs();
    *frame_secs = if *frame_secs > 0.0 { 0.95 * *frame_secs + 0.05 * dt } else { dt };
    ui.horizontal(|ui| {
        ui.heading("Elbow — learned IK lab");
        if ui.button(" ? ").on_hover_text("every key and mouse action (? or F1)").clicked() {
            help.0 = !help.0;
        }
    });
    let ms = f64::from(*frame_secs) * 1e3;
    let fps = if ms > 0.0 { Some(1e3 / ms) } else { None };
    let keys: Vec<&str> = shortcuts(&lab).into_iter().map(|(_, key, _)| key).collect();
    ui.small(format!(
        // No break inside the frame time (non-breaking spaces): it wraps as one piece.
        "Drag or click in the view to move the target.  Keys: {} ?.  frame\u{a0}{}\u{a0}ms\u{a0}({}\u{a0}fps)",
        keys.join(" "),
        number(Some(ms), 1),
        number(fps, 0)
    ));
}

/// The lessons menu and the open lesson's caption.
fn lessons(
    InMut(ui): InMut<egui::Ui>,
    active: ResMut<ActiveLesson>,
    mut open: MessageWriter<OpenLesson>,
    models: Res<Models>,
) {
    lesson_section(ui, active.into(), &mut open, &models);
}

/// The open replay, when one is open.
fn replay_view(InMut(ui): InMut<egui::Ui>, mut replay: ResMut<ReplayView>, framing: ResMut<Framing>) {
    if replay.open.is_some() {
        let keep = ui.group(|ui| replay::section(ui, replay.reborrow(), framing.into())).inner;
        if !keep {
            replay.close();
        }
    }
}

/// The arm buttons.
fn arms(InMut(ui): InMut<egui::Ui>, lab: ResMut<LabChoice>, nominal: Res<Nominal>) {
    arm_selector(ui, lab.into(), nominal.0);
}

/// Which solver drives the plant: the closed form's line-up on an arm with one, the chain's
/// methods (with the fans and the self-motion slider) on a chain.
fn driver(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    driver: ResMut<Driver>,
    target: Res<Target>,
    mut chain: manifold::DriverRows,
) {
    match lab.chain() {
        None => driver_section(ui, driver.into()),
        Some(arm) => chain.show(ui, arm, target.pos),
    }
}

/// Training at a glance: the progress pill of the arm's learners.
fn training_pill(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    training: Res<Training>,
    mut train: MessageWriter<TrainCommand>,
    chain: Res<ChainTraining>,
) {
    match lab.chain() {
        None => training_bar(ui, &mut train, &training),
        Some(_) => manifold::training_bar(ui, &chain),
    }
}

/// The latest elbow-branch change of what went to the plant, on an arm with two branches; and
/// who drives while the feedback head does.
fn branches(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    log: Res<BranchLog>,
    time: Res<Time>,
    sim: Res<Sim>,
    feedback: Res<FeedbackLab>,
) {
    if lab.closed_form().is_none() {
        return;
    }
    branch_line(ui, &log, time.elapsed_secs_f64(), sim.plant.config().servo.no_load_speed());
    if feedback.drives {
        ui.colored_label(
            egui::Color32::from_rgb(115, 217, 255),
            egui::RichText::new("The feedback head drives the plant (the driver above is set aside).").small(),
        );
    }
}

/// The feedback head (on an arm with a closed form; a chain's runs headlessly).
fn feedback_head(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    feedback: ResMut<FeedbackLab>,
    mut train: MessageWriter<TrainFeedback>,
    plant: Res<PlantSettings>,
) {
    match lab.chain() {
        None => feedback::section(ui, feedback.into(), &mut train, plant.camera().is_on()),
        Some(arm) => {
            ui.small(format!(
                "In the app the feedback head learns the two-link arm. On {} it runs headlessly: `elbow experiment randomization --arm {}`.",
                arm.name,
                arm.kind.map_or("rail3", |k| k.key())
            ));
        }
    }
}

/// Whether the "Reality gap" section opens this frame: the lesson `now` has just replaced
/// `before` (the previous frame's; `None` on the first frame) and lights a knob inside it.
fn opens_the_gap(before: Option<ActiveLesson>, now: ActiveLesson) -> bool {
    before != Some(now) && lit(&now).is_some_and(in_the_gap)
}

/// Whether `channel`'s slider is one a lesson lights in the collapsed "Reality gap" section.
fn in_the_gap(channel: Channel) -> bool {
    matches!(channel, Channel::Friction | Channel::Flex | Channel::Latency)
}

/// The knob the open lesson sets, if any.
fn lit(active: &ActiveLesson) -> Option<Channel> {
    active.0.and_then(lesson_knob)
}

/// The mismatch line and the two sliders users come for (every arm).
fn perturbations(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    plant: ResMut<PlantSettings>,
    active: Res<ActiveLesson>,
) {
    if let Some(line) = mismatch_line(&plant, lab.chain().is_some()) {
        ui.colored_label(color32(PLANT_COLOR), egui::RichText::new(line).small());
    }
    perturbation_section(ui, plant.into(), lit(&active));
}

/// Friction, flex, latency and the camera (every arm), opened with a lesson about one of them.
fn reality_gap(
    InMut(ui): InMut<egui::Ui>,
    plant: ResMut<PlantSettings>,
    camera_view: ResMut<CameraView>,
    sim: Res<Sim>,
    active: Res<ActiveLesson>,
) {
    gap_section(ui, plant.into(), Some((camera_view.into(), &sim)), lit(&active));
}

/// The workspace atlas of the arm in force.
fn atlas(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    view: ResMut<AtlasView>,
    chain: ResMut<ChainAtlasView>,
    driver: Res<Driver>,
    hover: Res<Hover>,
) {
    match lab.chain() {
        None => atlas_section(ui, view.into(), driver.0, hover.0),
        Some(_) => manifold::atlas_rows(ui, chain.into(), hover.0),
    }
}

/// "Why did it do that?" for the heads, or for a chain's driving net.
#[allow(clippy::too_many_arguments)]
fn why(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    models: Res<Models>,
    params: Res<TrainingParams>,
    target: Res<Target>,
    sim: Res<Sim>,
    driver: Res<Driver>,
    mut pin: ResMut<WhyPin>,
    mut explained: Local<Option<Explanation>>,
    mut chain: manifold::WhyRows,
) {
    let Some(arm) = lab.chain() else {
        let Some(two) = lab.closed_form() else { return };
        let mut p = *pin;
        let asked = WhyAsked { arm: two, models: &models, params: &params, target: target.pos, from: sim.measured() };
        why_section(ui, &asked, &mut explained, &mut p, driver.0);
        pin.set_if_neq(p);
        return;
    };
    chain.show(ui, arm, target.pos);
}

/// Save or restore the scene (every arm), and open a catalog record.
fn view_file(InMut(ui): InMut<egui::Ui>, mut guide: Guides) {
    view_file_section(ui, &mut guide);
}

/// The claims board for the scene on screen (every arm).
fn claims(InMut(ui): InMut<egui::Ui>, board: Res<ClaimsBoard>) {
    claims_section(ui, &board);
}

/// The live degradation sweep (every arm).
fn sweep(InMut(ui): InMut<egui::Ui>, sweep: ResMut<LiveSweep>, plant: Res<PlantSettings>) {
    sweep_section(ui, sweep.into(), &plant);
}

/// Every solver of the arm with its colour, status and live figures.
#[allow(clippy::too_many_arguments)]
fn solvers(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    shown: ResMut<Shown>,
    solutions: Res<Solutions>,
    models: Res<Models>,
    training: Res<Training>,
    sim: Res<Sim>,
    target: Res<Target>,
    chain: manifold::Readouts,
) {
    match lab.chain() {
        None => {
            let plant_miss = (sim.tip() - target.pos).norm();
            legend_section(ui, shown.into(), &solutions, &models, &training, plant_miss, target.pos);
        }
        Some(arm) => chain.show(ui, arm, target.pos),
    }
}

/// The training losses and the plant's tip error.
fn plots(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    training: Res<Training>,
    solutions: Res<Solutions>,
    chain: Res<ChainView>,
    history: Res<TipHistory>,
    time: Res<Time>,
) {
    let now = time.elapsed_secs_f64();
    match lab.closed_form() {
        Some(two) => {
            loss_plots(ui, &training);
            let tolerance = elbow::EnvelopeConfig::for_arm(&two).max_fk_miss;
            tip_plot(ui, &solutions.driver_name, &history, now, (tolerance, "envelope tolerance"));
        }
        None => {
            ui.small("The nets' losses are plotted under Training.");
            let driver = super::state::manifold::method_label(chain.driver);
            tip_plot(ui, driver, &history, now, (super::fans::TOLERANCE, "success radius"));
        }
    }
}

/// The envelope's tally (on an arm with a closed form).
fn envelope(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    stats: ResMut<EnvelopeStats>,
    driver: Res<Driver>,
    models: Res<Models>,
    chain: Res<ChainView>,
) {
    // Only the checks that can fire for this driver on this arm get a counter.
    match lab.closed_form() {
        Some(two) => {
            let lineup = Lineup::new(two, Table::from_fn(|h| models.get(h)));
            let checks = lineup.envelope.active_checks(lineup.fit(driver.0.solver));
            envelope_section(ui, stats.into(), driver.0.envelope, checks);
        }
        None => {
            let arm = lab.arm();
            let envelope = elbow::envelope::ChainEnvelope { arm, config: DegradationConfig::on(arm).envelope };
            let on = chain.envelope && super::state::manifold::enveloped(chain.driver);
            envelope_section(ui, stats.into(), on, envelope.active_checks());
            ui.small("A rejected answer falls back to DLS from where the arm is (a chain has no closed form).");
        }
    }
}

/// The figure-eight sweep and the home target (every arm).
fn target(InMut(ui): InMut<egui::Ui>, lab: Res<LabChoice>, target: ResMut<Target>) {
    target_section(ui, target.into(), home_target(lab.arm()));
}

/// The model mismatch and its presets (every arm).
fn mismatch(InMut(ui): InMut<egui::Ui>, lab: Res<LabChoice>, plant: ResMut<PlantSettings>) {
    plant_section(ui, plant.into(), lab.chain().is_some());
}

/// Training controls: the heads' hyper-parameters and model files, or the chain's nets.
fn training(
    InMut(ui): InMut<egui::Ui>,
    lab: Res<LabChoice>,
    mut controls: TrainingControls,
    training: Res<Training>,
    mut chain: manifold::TrainingRows,
) {
    match lab.chain() {
        None => training_section(ui, &mut controls, &training),
        Some(_) => {
            chain.show(ui);
            ui.separator();
            let TrainingControls { model_file, load, .. } = &mut controls;
            let idle = "A file saved by `elbow train --arm … --out` puts its nets in place of training.";
            model_file_row(ui, model_file.reborrow(), load, idle);
        }
    }
}

/// Every shortcut of the arm in force.
fn keyboard(InMut(ui): InMut<egui::Ui>, lab: Res<LabChoice>) {
    egui::Grid::new("shortcuts").num_columns(2).show(ui, |ui| {
        for (_, key, shortcut) in shortcuts(&lab) {
            ui.strong(key);
            ui.label(shortcut.describe());
            ui.end_row();
        }
    });
}

/// What only the training section edits and sends.
#[derive(SystemParam)]
struct TrainingControls<'w> {
    params: ResMut<'w, TrainingParams>,
    model_file: ResMut<'w, ModelFile>,
    train: MessageWriter<'w, TrainCommand>,
    load: MessageWriter<'w, LoadModel>,
}

/// What the view-file section edits and sends.
#[derive(SystemParam)]
struct Guides<'w, 's> {
    view_field: ResMut<'w, ViewFileField>,
    save: MessageWriter<'w, SaveView>,
    load: MessageWriter<'w, LoadView>,
    replay: ResMut<'w, ReplayView>,
    open_replay: MessageWriter<'w, OpenReplay>,
    /// The replay field's catalog path and record index, as typed, and why the last record
    /// asked for could not be read.
    replay_field: Local<'s, (String, String, Option<String>)>,
}

/// A name field with "save view" (to the name, or to a fresh `elbow-view-<n>.json` when none is
/// typed) and "restore view", a menu of the view files in the start folder, and what the last
/// save or restore said (with the file's whole path).
fn view_file_section(ui: &mut egui::Ui, guide: &mut Guides) {
    let here = std::env::current_dir().unwrap_or_default();
    ui.horizontal(|ui| {
        let mut path = guide.view_field.path.clone();
        let hint = egui::RichText::new("name, e.g. my-scene").italics();
        ui.add(egui::TextEdit::singleline(&mut path).hint_text(hint).desired_width(140.0));
        if path != guide.view_field.path {
            guide.view_field.path = path;
        }
        let typed = guide.view_field.path.trim().to_string();
        let to = scene_file::save_path(&typed, &here);
        let file = to.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        if ui.button("save view").on_hover_text(format!("save the scene to {file} in {}", here.display())).clicked() {
            guide.save.write(SaveView(to));
        }
        if ui
            .add_enabled(!typed.is_empty(), egui::Button::new("restore view"))
            .on_hover_text("restore the file named here")
            .on_disabled_hover_text("type a file's name, or pick one under saved…")
            .clicked()
        {
            guide.load.write(LoadView(scene_file::load_path(&typed, &here)));
        }
        ui.menu_button("saved…", |ui| {
            let files = scene_file::view_files(&here);
            if files.is_empty() {
                ui.small(format!("no view files in {}", here.display()));
            }
            for file in files {
                let name = file.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                if ui.button(&name).on_hover_text("restore this view").clicked() {
                    guide.view_field.path = name;
                    guide.load.write(LoadView(file));
                    ui.close();
                }
            }
        })
        .response
        .on_hover_text("the view files in the start folder, newest first");
    });
    ui.small("The arm, target, driver, every slider, the atlas and sweep, the ghosts and the model files (on a chain its fans, envelope and self-motion); `elbow --view FILE` opens one.");
    ui.horizontal(|ui| {
        let (path, index, problem) = &mut *guide.replay_field;
        ui.add(
            egui::TextEdit::singleline(path)
                .hint_text(egui::RichText::new("catalog, e.g. cat.jsonl").italics())
                .desired_width(150.0),
        );
        ui.add(egui::TextEdit::singleline(index).hint_text(egui::RichText::new("index").italics()).desired_width(50.0));
        let ready = !path.trim().is_empty();
        if ui
            .add_enabled(ready, egui::Button::new("replay record"))
            .on_hover_text("a record of `elbow experiment degradation --catalog FILE`, re-run and scrubbed here")
            .clicked()
        {
            let index = if index.trim().is_empty() { "0" } else { index.trim() };
            let file = std::path::PathBuf::from(path.trim());
            match crate::cli::replay::read_record(&file, index) {
                Ok((at, record)) => {
                    *problem = None;
                    let name = file
                        .file_name()
                        .map_or_else(|| file.display().to_string(), |f| f.to_string_lossy().into_owned());
                    guide.open_replay.write(OpenReplay { record: Box::new(record), name: format!("{name} #{at}") });
                }
                Err(why) => *problem = Some(why),
            }
        }
    });
    let refused = if guide.replay.open.is_none() { guide.replay.error.as_ref() } else { None };
    if let Some(why) = guide.replay_field.2.as_ref().or(refused) {
        ui.colored_label(color32(FLASH_COLOR), egui::RichText::new(why).small());
    }
    match &guide.view_field.outcome {
        Some(Ok(done)) => {
            ui.small(done);
        }
        Some(Err(why)) => {
            ui.colored_label(color32(FLASH_COLOR), egui::RichText::new(why).small());
        }
        None => {}
    }
}

/// The lessons menu, and the open lesson's two-line caption with a button to close it.
fn lesson_section(
    ui: &mut egui::Ui,
    mut active: Mut<ActiveLesson>,
    open: &mut MessageWriter<OpenLesson>,
    models: &Models,
) {
    ui.horizontal(|ui| {
        ui.label("Lesson:");
        let current = active.0.map_or("choose one…", |l| l.title());
        egui::ComboBox::from_id_salt("lesson").selected_text(current).width(300.0).show_ui(ui, |ui| {
            for lesson in elbow::lessons::Lesson::ALL {
                if ui.selectable_label(active.0 == Some(lesson), lesson.title()).clicked() {
                    open.write(OpenLesson(lesson));
                }
            }
        });
    });
    let Some(lesson) = active.0 else { return };
    egui::Frame::group(ui.style()).show(ui, |ui| {
        for line in lesson.caption() {
            ui.label(egui::RichText::new(line).small());
        }
        if lesson == elbow::lessons::Lesson::Bishop1994 {
            bishop_readout(ui, models);
        }
        ui.horizontal(|ui| {
            if ui.small_button("open again").clicked() {
                open.write(OpenLesson(lesson));
            }
            if ui.small_button("close").clicked() {
                active.0 = None;
            }
        });
    });
}

/// What a head's explanation is asked of: the arm and its heads, the training data's
/// configuration, the target and the pose the arm is in.
struct WhyAsked<'a> {
    arm: elbow::TwoLinkArm,
    models: &'a Models,
    params: &'a TrainingParams,
    target: Point2,
    from: elbow::Pose,
}

/// "Why did it do that?": a button per head explains its answer for the current target from the
/// arm's current pose ([`elbow::explain::explain_head`], as `elbow explain` does): the sentences, then
/// each candidate with its weight, the branch it is near and its tip's miss.
fn why_section(ui: &mut egui::Ui, lab: &WhyAsked, why: &mut Option<Explanation>, pin: &mut WhyPin, driver: Pipeline) {
    ui.horizontal_wrapped(|ui| {
        ui.label("explain:");
        for head in HeadKind::ALL {
            let model = lab.models.0[head].as_ref();
            let label =
                if driver.solver == SolverId::Learned(head) { format!("{head} (driver)") } else { head.to_string() };
            if ui.add_enabled(model.is_some(), egui::Button::new(label)).clicked()
                && let Some(model) = model
            {
                let arm = lab.arm;
                let data = elbow::TrainConfig { arm, ..lab.params.config }.data_config().targets();
                let envelope = Lineup::new(arm, Table::from_fn(|h| lab.models.get(h))).envelope;
                let from = lab.from;
                let mode = elbow::ElbowMode::of(from);
                *why = Some(elbow::explain::explain_head(model, lab.target, from, mode, &data, &envelope));
                pin.0 = Some(lab.target);
            }
        }
    });
    let Some(e) = why.as_ref() else {
        ui.small("Pick a head: its raw outputs, the branch each candidate is near, the training data around the target and the envelope's decision, for the target as it is now.");
        return;
    };
    ui.small(format!("{} head at ({:.2}, {:.2}) m:", e.head, e.target[0], e.target[1]));
    let moved = (Point2::new(e.target[0], e.target[1]) - lab.target).norm();
    if moved > 0.005 {
        ui.colored_label(
            color32(LESSON_COLOR),
            egui::RichText::new(format!(
                "The target has moved {} since (✱ on the canvas marks where this was asked): press a head again for here.",
                metres(Some(moved))
            ))
            .small(),
        );
    }
    for line in &e.summary {
        ui.label(egui::RichText::new(format!("• {line}")).small());
    }
    egui::Grid::new("why-candidates").striped(true).show(ui, |ui| {
        for h in ["candidate", "weight", "near", "tip miss"] {
            ui.small(h);
        }
        ui.end_row();
        for (i, c) in e.candidates.iter().enumerate() {
            ui.small(format!("{}", i + 1));
            ui.small(number(Some(c.weight), 2));
            ui.small(c.near.label());
            ui.small(metres(Some(c.fk_miss)));
            ui.end_row();
        }
    });
}

/// The claims board: each claim's verdict for the scene on screen (the run in
/// [`super::claims`]), coloured, with the cases it holds for.
fn claims_section(ui: &mut egui::Ui, board: &ClaimsBoard) {
    use elbow::experiments::degradation::Verdict;
    let Some((claims, scene)) = &board.latest else {
        match &board.note {
            Some(note) => ui.small(note),
            None => ui.small(format!("judging the claims: {}", board.status)),
        };
        return;
    };
    ui.small(format!(
        "{scene}: each knob swept from 0 to its slider, {BOARD_TARGETS} held-out and beyond-reach targets per setting, as `elbow experiment degradation` does ({})",
        board.status
    ));
    for claim in claims.iter() {
        let (colour, verdict) = match &claim.verdict {
            Verdict::Holds => (egui::Color32::from_rgb(90, 200, 120), "HOLDS".to_string()),
            Verdict::DoesNotHold => (egui::Color32::from_rgb(230, 90, 90), "DOES NOT HOLD".to_string()),
            Verdict::HoldsOnlyFor(cases) => {
                (egui::Color32::from_rgb(230, 180, 60), format!("only for {}", cases.join(", ")))
            }
        };
        let tip = format!("{}\n\n{}", claim.statement, claim.evidence.join("\n"));
        ui.horizontal_wrapped(|ui| {
            ui.label(egui::RichText::new(claim.key).strong().small()).on_hover_text(&tip);
            ui.label(egui::RichText::new(verdict).color(colour).small()).on_hover_text(&tip);
        });
    }
    if let Some(note) = &board.note {
        ui.small(note);
    }
}

/// The bishop1994 lesson's numbers: the RMS tip error of the MSE and MDN heads on the report's
/// test points, as they train, beside the report's.
fn bishop_readout(ui: &mut egui::Ui, models: &Models) {
    use elbow::experiments::bishop::{BishopConfig, PAPER_MDN_RMS, PAPER_MSE_RMS, bishop_arm, rms_tip_error};
    static TARGETS: std::sync::OnceLock<Vec<Point2>> = std::sync::OnceLock::new();
    let targets = TARGETS.get_or_init(|| BishopConfig::default().test_targets());
    egui::Grid::new("bishop").striped(true).show(ui, |ui| {
        ui.label("RMS tip error");
        ui.label("ours");
        ui.label("the report");
        ui.end_row();
        for (head, paper) in [(HeadKind::Mse, PAPER_MSE_RMS), (HeadKind::Mdn, PAPER_MDN_RMS)] {
            // A model of another arm (the lesson just opened, retraining) has no figure here yet.
            let ours = models.0[head].as_ref().filter(|m| m.arm == bishop_arm()).map(|m| rms_tip_error(m, targets));
            ui.label(head.to_string());
            ui.label(metres(ours));
            ui.label(metres(Some(paper)));
            ui.end_row();
        }
    });
}

/// The help overlay: every key and mouse action of the open lab. It fits the window whatever
/// the lab: at most [`HELP_WIDTH`] wide (less in a narrow window), each description wrapped in
/// its column, and a scroll bar when a short window cannot hold every row.
fn help_overlay(ctx: &egui::Context, lab: &LabChoice, help: &mut Help) {
    let mut open = help.0;
    let room = ctx.viewport_rect().shrink(16.0);
    let width = HELP_WIDTH.min(room.width()).max(200.0);
    egui::Window::new("Keys and mouse")
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
        .order(egui::Order::Foreground)
        .min_width(width)
        .max_width(width)
        .max_height(room.height().max(120.0) - 40.0)
        .show(ctx, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| {
                egui::Grid::new("help-keys").num_columns(2).striped(true).max_col_width(width - 110.0).show(ui, |ui| {
                    let mut row = |key: &str, what: &str| {
                        ui.strong(key);
                        ui.add(egui::Label::new(what).wrap());
                        ui.end_row();
                    };
                    row("drag or click", "move the target (in the view right of the panel)");
                    row("hover", "read the atlas cell under the pointer (panel, under the atlas)");
                    row("wheel, + or −", "zoom the view in or out (0: as framed again)");
                    for (_, key, shortcut) in shortcuts(lab) {
                        row(key, &shortcut.describe());
                    }
                    for (key, what) in HELP_KEYS {
                        row(key, what);
                    }
                });
            });
        });
    help.0 = open;
}

/// The widest the help overlay gets, logical pixels.
const HELP_WIDTH: f32 = 520.0;

/// The slider of a plant knob with its tooltip, framed in the lesson colour when the open
/// lesson is about it (`lit`).
fn knob(ui: &mut egui::Ui, lit: bool, slider: egui::Slider, tip: &str) {
    let add = |ui: &mut egui::Ui| ui.add(slider).on_hover_text(tip);
    if lit {
        egui::Frame::new()
            .stroke(egui::Stroke::new(2.0, color32(LESSON_COLOR)))
            .inner_margin(3.0)
            .corner_radius(4.0)
            .show(ui, |ui| add(ui).highlight());
    } else {
        add(ui);
    }
}

/// The two perturbation sliders users come for: encoder noise and backlash (`lit`: the knob
/// the open lesson sets).
fn perturbation_section(ui: &mut egui::Ui, mut plant: Mut<PlantSettings>, lit: Option<Channel>) {
    let mut s = *plant;
    knob(
        ui,
        lit == Some(Channel::Encoder),
        egui::Slider::new(&mut s.noise_std, range::NOISE).text("encoder noise σ (rad)"),
        "Gaussian noise on every encoder reading: the pose every solver starts from and checks against. It moves no arm by itself.",
    );
    knob(
        ui,
        lit == Some(Channel::Backlash),
        egui::Slider::new(&mut s.backlash, range::BACKLASH).text("backlash (rad)"),
        "Free play of ± this much between each servo and its link; the encoders read the servo, so where the link rests in its play is invisible to them.",
    );
    plant.set_if_neq(s.sanitized());
}

/// The model mismatch in force, as one line for the panel (`None`: the real arm is the model);
/// on a `chain` the second values act on every link and joint after the first.
fn mismatch_line(s: &PlantSettings, chain: bool) -> Option<String> {
    let s = s.sanitized();
    let later = if chain { " (the second on every later link and joint)" } else { "" };
    (s.length_error != [0.0; 2] || s.joint_offset != [0.0; 2]).then(|| {
        format!(
            "The real arm differs from the model: link lengths {:+.1} % and {:+.1} %, joint offsets {:+.3} and {:+.3} rad{later} (Plant: model mismatch).",
            100.0 * s.length_error[0],
            100.0 * s.length_error[1],
            s.joint_offset[0],
            s.joint_offset[1]
        )
    })
}

/// The atlas toggle, the solver it maps, the layer, its colour key and the hovered cell.
fn atlas_section(ui: &mut egui::Ui, mut view: Mut<AtlasView>, driver: Pipeline, hover: Option<Point2>) {
    let mut v = view.clone();
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut v.on, "atlas of");
        egui::ComboBox::from_id_salt("atlas-solver")
            .selected_text(if v.follow_driver { "the driver".to_string() } else { v.solver.short().to_string() })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut v.follow_driver, true, "the driver");
                for id in driver_choices() {
                    if ui.selectable_label(!v.follow_driver && v.solver == id, id.short()).clicked() {
                        v.follow_driver = false;
                        v.solver = id;
                    }
                }
            });
        for layer in Layer::ALL {
            ui.selectable_value(&mut v.layer, layer, layer.key());
        }
    });
    let mapped = v.mapped(driver);
    if v.on && view.busy {
        ui.horizontal(|ui| {
            ui.add(egui::Spinner::new());
            ui.small("computing the atlas off the frame…");
        });
    }
    match view.latest.as_deref() {
        _ if !v.on => {
            ui.small("Off (A): the whole workspace coloured by one solver's answer.");
        }
        Some(a) if a.missing.is_some() => {
            ui.small(format!("{} — waiting for a model", a.missing.as_deref().unwrap_or_default()));
        }
        Some(a) => {
            let busy = if view.busy { ", updating…" } else { "" };
            let caption = if v.layer == Layer::Confidence && !elbow::atlas::has_confidence(a.solver) {
                "no confidence: it has no mixture"
            } else {
                v.layer.caption()
            };
            ui.small(format!(
                "{}: {caption} ({}×{} cells, {} ms{busy})",
                a.solver.name(),
                a.resolution,
                a.resolution,
                number(Some(view.compute_ms), 0)
            ));
            atlas_key(ui, v.layer);
            hover_readout(ui, a, hover);
        }
        None => {
            ui.small(format!("mapping {}…", mapped.name()));
        }
    }
    if v.on != view.on || v.layer != view.layer || v.follow_driver != view.follow_driver || v.solver != view.solver {
        *view = v;
    }
}

/// Error and silent-failure rate of every solver against the swept channel's level, the
/// current setting marked.
fn sweep_section(ui: &mut egui::Ui, mut sweep: Mut<LiveSweep>, plant: &PlantSettings) {
    let mut channel = sweep.channel;
    ui.horizontal(|ui| {
        ui.label("sweep");
        egui::ComboBox::from_id_salt("sweep-channel").selected_text(channel.channel().key()).show_ui(ui, |ui| {
            for c in SweepChannel::all() {
                ui.selectable_value(&mut channel, c, c.channel().key());
            }
        });
        ui.small(sweep.note.clone().unwrap_or_else(|| sweep.status.clone()));
    });
    if channel != sweep.channel {
        sweep.channel = channel;
    }
    let Some((swept, curves)) = sweep.latest.clone() else {
        ui.small(if sweep.busy {
            "The first sweep is running: its curves show when it ends."
        } else {
            "The first sweep starts once every learner has a model."
        });
        return;
    };
    let now = swept.current(plant);
    let camera = swept.channel().camera_only();
    let series = |points: &dyn Fn(&Curve) -> &[[f64; 2]], log: bool| -> Vec<Series> {
        curves
            .iter()
            .map(|c| {
                let pts =
                    points(c).iter().map(|p| [p[0], if log { p[1].max(1e-6).log10() } else { p[1] * 100.0 }]).collect();
                export::series(c.pipeline.key(), solver_color(c.pipeline.solver), pts, c.pipeline.envelope)
            })
            .collect()
    };
    let x_axis = format!("{} ({})", swept.channel().key(), swept.channel().unit());
    // The camera's own channels move no arm: their first plot is the camera check's false alarms.
    let (first, y, left) = if camera {
        ("camera check: false alarms (%)", "false alarms (%)", series(&|c| &c.false_alarm, false))
    } else {
        ("mean tip error", "mean tip error", series(&|c| &c.error, true))
    };
    ui.columns(2, |cols| {
        cols[0].small(format!("{first} vs {x_axis}"));
        let (scale, include): (YScale, &[f64]) =
            if camera { (YScale::Linear, &[0.0, 100.0]) } else { (YScale::LogMetres, &[]) };
        let title = format!("{first} vs {x_axis}");
        let name = format!("sweep-{}-{}", export::slug(swept.channel().key()), export::slug(y));
        let figure = export::Figure { name: &name, title: &title, axes: (&x_axis, y), scale, include };
        export::show(&mut cols[0], &figure, &left, |plot| {
            if let Some(now) = now {
                plot.vline(VLine::new("slider now", now).color(color32(TARGET_COLOR)));
            }
        });
        export::buttons(&mut cols[0], &figure, &left);
        let title = if camera { "camera check: silent failures (%)" } else { "silent failures (%)" };
        cols[1].small(title);
        let right = series(&|c| &c.silent, false);
        let full = format!("{title} vs {x_axis}");
        let name = format!("sweep-{}-{}", export::slug(swept.channel().key()), export::slug(title));
        let axes = (x_axis.as_str(), title);
        let figure = export::Figure { name: &name, title: &full, axes, scale: YScale::Linear, include: &[0.0, 100.0] };
        export::show(&mut cols[1], &figure, &right, |plot| {
            if let Some(now) = now {
                plot.vline(VLine::new("slider now", now).color(color32(TARGET_COLOR)));
            }
        });
        export::buttons(&mut cols[1], &figure, &right);
    });
    export::legend_row(ui, &left, "(dashed: inside the envelope; yellow line: the slider now)");
    ui.small(format!(
        "{} held-out targets per level, each channel alone from the perfect arm (as `elbow experiment degradation`).",
        super::sweep::SWEEP_TARGETS
    ));
}

/// The colour key of `layer`: a bar with its end values, or the classes.
fn atlas_key(ui: &mut egui::Ui, layer: Layer) {
    match paint::key(layer) {
        paint::Key::Scale { lo, hi, log, unit } => {
            let fmt = |v: f64| if log { metres(Some(v)) } else { format!("{v:.1}") };
            key_bar(ui, &fmt(lo), &format!("{} {unit}", fmt(hi)), |t| paint::scale_color(layer, t));
            // Cells with no value (the confidence of a solver without a mixture) are on no bar.
            if let Some((label, color)) = paint::no_value(layer) {
                ui.horizontal(|ui| key_swatch(ui, label, color));
            }
        }
        paint::Key::Classes(classes) => {
            ui.horizontal_wrapped(|ui| {
                for (label, color) in classes {
                    key_swatch(ui, &label, color);
                }
            });
        }
    }
}

/// A paint colour in egui.
fn rgba(c: paint::Rgba) -> egui::Color32 {
    egui::Color32::from_rgba_unmultiplied(c[0], c[1], c[2], c[3])
}

/// One entry of a colour key: a small square of `color` and its label.
fn key_swatch(ui: &mut egui::Ui, label: &str, color: paint::Rgba) {
    // One piece (swatch, gap, label), so a wrapping row never leaves a swatch at a line's end.
    let font = egui::TextStyle::Small.resolve(ui.style());
    let text = ui.fonts_mut(|f| f.layout_no_wrap(label.to_string(), font, ui.visuals().text_color()));
    let gap = ui.spacing().item_spacing.x;
    let size = egui::vec2(SWATCH_PX + gap + text.size().x, text.size().y.max(SWATCH_PX));
    let (rect, _) = ui.allocate_exact_size(size, egui::Sense::hover());
    let swatch = egui::Rect::from_center_size(
        egui::pos2(rect.min.x + SWATCH_PX / 2.0, rect.center().y),
        egui::Vec2::splat(SWATCH_PX),
    );
    ui.painter().rect_filled(swatch, 2.0, rgba(color));
    let at = egui::pos2(swatch.max.x + gap, rect.center().y - text.size().y / 2.0);
    ui.painter().galley(at, text, ui.visuals().text_color());
}

/// Side of a colour key's swatch, logical pixels.
const SWATCH_PX: f32 = 10.0;

/// The numbers of the cell under the pointer.
fn hover_readout(ui: &mut egui::Ui, atlas: &Atlas, hover: Option<elbow::Point2>) {
    let Some(cell) = hover.and_then(|p| atlas.cell_at(p)) else {
        ui.small("Hover over the map for a cell's numbers.");
        return;
    };
    let verdict = cell.verdict.map_or("accepted".to_string(), |r| format!("rejected: {}", r.label()));
    ui.small(format!(
        "at ({}, {}): miss {}, {}, {}, envelope {verdict}, silent {}{}",
        number(Some(cell.target.x), 2),
        number(Some(cell.target.y), 2),
        metres(finite(cell.miss).filter(|m| *m < 1e6)),
        cell.branch.label(),
        cell.confidence.map_or("no confidence".into(), |w| format!("top weight {}", number(Some(f64::from(w)), 2))),
        if atlas.samples > 0 { format!("{}%", number(Some(cell.silent * 100.0), 0)) } else { "—".into() },
        if cell.reported { ", reported failure" } else { "" },
    ));
}

/// The solvers that can drive the plant (every one but the branch average, which is no solver).
pub(crate) fn driver_choices() -> impl Iterator<Item = SolverId> {
    SolverId::TWO_LINK.into_iter().filter(|id| id.family() != Family::Reference)
}

/// The rows of the legend, in order: every solver.
pub(crate) fn legend_rows() -> impl Iterator<Item = SolverId> {
    SolverId::TWO_LINK.into_iter()
}

/// Which solver drives the plant, and the envelope toggle.
fn driver_section(ui: &mut egui::Ui, mut driver: Mut<Driver>) {
    let mut d = driver.0;
    for family in [Family::Classical, Family::Learned] {
        ui.horizontal_wrapped(|ui| {
            ui.strong(if family == Family::Classical { "Drives the plant:" } else { "learned head:" });
            for id in driver_choices().filter(|id| id.family() == family) {
                ui.selectable_value(&mut d.solver, id, id.short());
            }
        });
    }
    ui.checkbox(&mut d.envelope, "safety envelope around the driver");
    driver.set_if_neq(Driver(d));
}

/// The plant knob a lesson is about: the channel its live sweep runs on, when the lesson sets
/// that knob.
fn lesson_knob(lesson: elbow::lessons::Lesson) -> Option<Channel> {
    let scene = lesson.scene();
    (scene.plant[scene.sweep] > 0.0).then_some(scene.sweep)
}

/// One line of training: every head's progress in one bar, and start, pause and reset (the
/// details are in the Training section).
fn training_bar(ui: &mut egui::Ui, train: &mut MessageWriter<TrainCommand>, training: &Training) {
    ui.horizontal(|ui| {
        super::format::progress_pill(
            ui,
            super::state::train::progress(HeadKind::ALL.iter().map(|&h| training.head(h))),
            "all heads",
            "paused or done",
        );
        if ui.small_button("▶").on_hover_text("start or resume training (Space)").clicked() {
            train.write(TrainCommand::Start);
        }
        if ui.small_button("⏸").on_hover_text("pause training (Space)").clicked() {
            train.write(TrainCommand::Pause);
        }
        if ui.small_button("⟲").on_hover_text("reset: forget every head's model and train again from scratch").clicked()
        {
            train.write(TrainCommand::Reset);
        }
    });
}

/// The latest change of elbow branch, in a slot that is always there and as tall as the longest
/// reason needs, so nothing below it moves when a change is marked: while its mark is on the
/// canvas, when and why (`speed`: the servos' no-load speed, rad/s); otherwise, quietly, how
/// many so far.
fn branch_line(ui: &mut egui::Ui, log: &BranchLog, now: f64, speed: f64) {
    let width = ui.available_width();
    let said = |why: &str, age: f64| {
        format!(
            "⟲ Branch change {} s ago (orange ring): {why}. The swing is bounded by the servos' {} rad/s.",
            number(Some(age), 1),
            number(Some(speed), 1)
        )
    };
    let galley = |ui: &egui::Ui, text: String, color: egui::Color32| {
        egui::WidgetText::from(egui::RichText::new(text).small().color(color)).into_galley(
            ui,
            Some(egui::TextWrapMode::Wrap),
            width,
            egui::TextStyle::Small,
        )
    };
    let reasons = [
        BranchChange::JointLimit,
        BranchChange::WeightsCrossed { kept: 0.0, taken: 1.0 },
        BranchChange::NoCandidate,
        BranchChange::CandidateOutsideLimits,
    ];
    let tallest = reasons
        .iter()
        .map(|c| galley(ui, said(&c.describe(), 999.9), egui::Color32::WHITE).size().y)
        .fold(0.0, f32::max);
    let text = match log.marked(now) {
        Some((event, age)) => galley(ui, said(&event.why, age), color32(BRANCH_COLOR)),
        None => {
            let so_far = match (log.count, &log.latest) {
                (0, _) | (_, None) => "no change so far".to_string(),
                (n, Some(e)) => {
                    let changes = if n == 1 { "1 change".to_string() } else { format!("{n} changes") };
                    format!("{changes} so far, the latest {} s ago", number(Some(now - e.when), 0))
                }
            };
            galley(
                ui,
                format!("⟲ Elbow branch: {so_far} (a change is marked here and on the canvas)."),
                ui.visuals().weak_text_color(),
            )
        }
    };
    let (rect, _) = ui.allocate_exact_size(egui::vec2(width, tallest.max(text.size().y)), egui::Sense::hover());
    ui.painter().galley(rect.min, text, ui.visuals().text_color());
}

/// The status text of a row.
fn status_text(id: SolverId, r: &Readout, models: &Models, training: &Training) -> String {
    if let Some(head) = id.head()
        && models.get(head).is_none()
    {
        return match training.head(head).state {
            RunState::Running | RunState::Paused => "training…".into(),
            _ => "no model".into(),
        };
    }
    match (id.family(), r.status) {
        (Family::Reference, _) => "not a solution".into(),
        (_, Some(s)) => s.label().into(),
        (_, None) => "—".into(),
    }
}

/// Legend with swatches, show toggles and readouts: tip error on the nominal model, status,
/// iterations; then the plant (its tip's miss of the target) and the target.
fn legend_section(
    ui: &mut egui::Ui,
    mut shown_now: Mut<Shown>,
    solutions: &Solutions,
    models: &Models,
    training: &Training,
    plant_miss: f64,
    target: Point2,
) {
    let mut shown = shown_now.clone();
    egui::Grid::new("legend").striped(true).num_columns(5).spacing([8.0, 3.0]).show(ui, |ui| {
        ui.label("");
        ui.strong("solver");
        ui.strong("tip error");
        ui.strong("status");
        ui.strong("iters");
        ui.end_row();
        for id in legend_rows() {
            let r = solutions.row(id);
            ui.horizontal(|ui| {
                ui.checkbox(&mut shown.0[id], "");
                swatch(ui, solver_color(id));
            });
            let components =
                id.head().filter(|h| h.spec().output == Output::Mixture).map(|h| solutions.candidates[h].len());
            ui.label(match components {
                Some(n) if n > 0 => format!("{} ({n} comp.)", id.name()),
                _ => id.name().into(),
            });
            let untrained = id.head().is_some_and(|h| models.get(h).is_none());
            ui.label(if untrained { "—".into() } else { metres(r.tip_error) });
            ui.label(status_text(id, r, models, training));
            ui.label(if r.iterations > 0 { r.iterations.to_string() } else { "—".into() });
            ui.end_row();
        }
        ui.horizontal(|ui| {
            ui.add_space(22.0);
            swatch(ui, PLANT_COLOR);
        });
        ui.label("plant (real arm)");
        ui.label(metres(Some(plant_miss)));
        let status = match (solutions.command, solutions.driver_status) {
            (None, _) => "holding (no model)".to_string(),
            (Some(_), Some(s)) => s.label().to_string(),
            (Some(_), None) => "—".into(),
        };
        ui.label(format!("{}: {status}", solutions.driver_name));
        ui.label("");
        ui.end_row();
        ui.horizontal(|ui| {
            ui.add_space(22.0);
            swatch(ui, TARGET_COLOR);
        });
        ui.label("target");
        ui.label(format!("({}, {})", number(Some(target.x), 2), number(Some(target.y), 2)));
        ui.end_row();
    });
    ui.small(
        "Tip errors are on the nominal model (the residual hybrid's on the real arm it was fitted to); \
         ghost opacity of the MDN follows component weight.",
    );
    shown_now.set_if_neq(shown);
}

/// The two-link heads' training losses (log10; the MDN's negative log-likelihood apart,
/// clamped).
fn loss_plots(ui: &mut egui::Ui, training: &Training) {
    let losses = |mixture: bool, value: &dyn Fn(f64) -> Option<f64>| -> Vec<Series> {
        HeadKind::ALL
            .into_iter()
            .filter(|h| (h.spec().output == Output::Mixture) == mixture)
            .map(|head| {
                let points = training.head(head).losses.iter().filter_map(|p| value(p[1]).map(|v| [p[0], v])).collect();
                export::series(head.spec().short, solver_color(SolverId::Learned(head)), points, false)
            })
            .collect()
    };
    let squared = losses(false, &|l| (l > 0.0).then(|| l.log10().clamp(-12.0, 6.0)));
    let nll = losses(true, &|l| Some(l.clamp(-50.0, 50.0)));
    ui.columns(2, |cols| {
        cols[0].small("training loss (log₁₀), squared-error heads");
        let title = "training loss, squared-error heads";
        let axes = ("training step", "loss");
        let figure = export::Figure { name: "training-loss", title, axes, scale: YScale::Log, include: &[] };
        export::show(&mut cols[0], &figure, &squared, |_| {});
        export::buttons(&mut cols[0], &figure, &squared);
        cols[1].small("mixture negative log-likelihood");
        let title = "mixture negative log-likelihood";
        let axes = ("training step", "NLL (nats)");
        let figure = export::Figure { name: "training-nll", title, axes, scale: YScale::Linear, include: &[] };
        export::show(&mut cols[1], &figure, &nll, |_| {});
        export::buttons(&mut cols[1], &figure, &nll);
    });
}

/// The plant's tip error over the last [`HISTORY_SECS`] against `tolerance` (named `what`), on
/// any arm.
fn tip_plot(ui: &mut egui::Ui, driver_name: &str, history: &TipHistory, now: f64, tolerance: (f64, &str)) {
    let (tolerance, what) = tolerance;
    let title = format!("plant tip error vs target (log₁₀ m, last 15 s) — driver: {driver_name}");
    ui.small(&title);
    let points: Vec<[f64; 2]> =
        history.0.iter().map(|p| [p[0] - now, p[1].max(1e-9).log10().clamp(-6.0, 1.0)]).collect();
    let tip = vec![
        export::series("plant", PLANT_COLOR, points, false),
        export::series(what, FLASH_COLOR, vec![[-HISTORY_SECS, tolerance.log10()], [0.0, tolerance.log10()]], true),
    ];
    let include = [tolerance.log10() - 0.5, tolerance.log10() + 0.5];
    let axes = ("time (s)", "tip error");
    let figure =
        export::Figure { name: "plant-tip-error", title: &title, axes, scale: YScale::LogMetres, include: &include };
    export::show(ui, &figure, &tip, |_| {});
    export::buttons(ui, &figure, &tip);
}

/// Intervention counts per reason (the checks that can fire for `driver` in `lineup`), and the
/// flash.
fn envelope_section(ui: &mut egui::Ui, mut stats: Mut<EnvelopeStats>, on: bool, checks: Vec<Reason>) {
    if !on {
        ui.label("Off: the driver's proposals go to the plant unchecked.");
    }
    if stats.flash > 0.0 {
        let why = stats.last.map_or("", Reason::label);
        ui.colored_label(color32(FLASH_COLOR), format!("INTERVENING: {why}"));
    }
    let log = stats.log;
    egui::Grid::new("interventions").num_columns(2).show(ui, |ui| {
        ui.label("accepted");
        ui.label(log.accepted.to_string());
        ui.end_row();
        for reason in checks {
            ui.label(format!("rejected: {}", reason.label()));
            ui.label(log.count(reason).to_string());
            ui.end_row();
        }
    });
    if ui.button("reset counts").clicked() {
        *stats = EnvelopeStats::default();
    }
}

/// Target position, sweep toggle and speed, and a button back to `home`.
fn target_section(ui: &mut egui::Ui, mut target: Mut<Target>, home: Point2) {
    let mut t = *target;
    ui.checkbox(&mut t.sweep, "auto-sweep along a figure eight");
    ui.add(egui::Slider::new(&mut t.speed, 0.05..=2.0).text("sweep speed (rad/s)"))
        .on_hover_text("How fast the target runs round the figure eight: radians of its path parameter a second.");
    if ui.button(format!("reset target to ({:.1}, {:.1})", home.x, home.y)).clicked() {
        t.pos = home;
        t.sweep = false;
    }
    target.set_if_neq(t);
}

/// The mismatch of the plant (noise and backlash sit at the top), and the presets.
fn plant_section(ui: &mut egui::Ui, mut plant: Mut<PlantSettings>, chain: bool) {
    let mut s = *plant;
    let names = if chain {
        [
            "first link length error",
            "later links' length error",
            "first joint offset (rad)",
            "later joints' offset (rad)",
        ]
    } else {
        ["upper link length error", "forearm length error", "shoulder offset (rad)", "elbow offset (rad)"]
    };
    let lengths = "The real link's length relative to the model's (0.05: 5 % longer). Every solver plans on the model; only the residual hybrid learns the difference.";
    let offsets = "Where the real joint's zero sits relative to the model's, radians: a calibration error the encoders cannot see.";
    knob(ui, false, egui::Slider::new(&mut s.length_error[0], range::LENGTH_ERROR).text(names[0]), lengths);
    knob(ui, false, egui::Slider::new(&mut s.length_error[1], range::LENGTH_ERROR).text(names[1]), lengths);
    knob(ui, false, egui::Slider::new(&mut s.joint_offset[0], range::OFFSET).text(names[2]), offsets);
    knob(ui, false, egui::Slider::new(&mut s.joint_offset[1], range::OFFSET).text(names[3]), offsets);
    let sag = "Under gravity (the SO-101 hangs in a vertical plane) each servo gives way by its joint's gravity torque over kp: the payload adds torque, a lower kp gives way more. On a table they change only how the arm swings.";
    knob(ui, false, egui::Slider::new(&mut s.payload, range::PAYLOAD).text("payload at the tip (kg)"), sag);
    knob(
        ui,
        false,
        egui::Slider::new(&mut s.servo_kp, range::SERVO_KP)
            .logarithmic(true)
            .text("servo gain kp (N m/rad, STS3215: 998)"),
        sag,
    );
    ui.horizontal(|ui| {
        if ui.button("ideal plant").clicked() {
            s = PlantSettings::IDEAL;
        }
        if ui.button("defaults").clicked() {
            s = PlantSettings::default();
        }
    });
    if !chain {
        ui.small("The residual head learns the mismatch in force when training starts.");
    }
    plant.set_if_neq(s.sanitized());
}

/// The newer reality-gap channels: joint friction (stiction), link flex, latency and the
/// camera, and the camera view that shows what the encoders cannot see.
/// On the two-link arm, `camera` holds its camera view toggle and plant.
fn gap_section(
    ui: &mut egui::Ui,
    mut plant: Mut<PlantSettings>,
    camera: Option<(Mut<CameraView>, &Sim)>,
    lit: Option<Channel>,
) {
    let mut s = *plant;
    let servo = elbow::plant::dynamics::Servo::STS3215;
    let friction = format!(
        "Coulomb friction at each joint; the SO-101's servo has {} N m against a gain of {} N m/rad, so a joint sticks at most loss / gain short.",
        servo.frictionloss, servo.kp
    );
    knob(
        ui,
        lit == Some(Channel::Friction),
        egui::Slider::new(&mut s.frictionloss, range::FRICTION).text("friction loss (N m)"),
        &friction,
    );
    knob(
        ui,
        lit == Some(Channel::Flex),
        egui::Slider::new(&mut s.flex, range::FLEX).text("flex: droop stretched out (rad)"),
        "How far the links bend under their own weight, as the shoulder's droop with the arm stretched out horizontally (less when folded). The encoders read the joints, so they cannot see it; the camera can.",
    );
    knob(
        ui,
        lit == Some(Channel::Latency),
        egui::Slider::new(&mut s.latency_ms, range::LATENCY).text("latency (ms)"),
        "How long a goal takes to reach the servos, in milliseconds of simulated time (the same at any frame rate). The servos still close their own loop, so it costs tracking, not the final pose.",
    );
    let eye = "The external camera that sees the tip: its pixel noise at 1 mm per pixel, its calibration offset, and its frame rate (0 turns it off). It moves no arm; the camera check uses it.";
    knob(
        ui,
        false,
        egui::Slider::new(&mut s.camera_noise, range::CAMERA_NOISE).text("camera noise (px at 1 mm/px)"),
        eye,
    );
    knob(ui, false, egui::Slider::new(&mut s.camera_offset[0], range::CAMERA_OFFSET).text("camera offset x (m)"), eye);
    knob(ui, false, egui::Slider::new(&mut s.camera_offset[1], range::CAMERA_OFFSET).text("camera offset y (m)"), eye);
    knob(
        ui,
        false,
        egui::Slider::new(&mut s.camera_fps, range::CAMERA_FPS).text("camera frame rate (fps, 0: off)"),
        eye,
    );
    plant.set_if_neq(s.sanitized());
    let Some((mut view, sim)) = camera else { return };
    let mut on = view.0;
    ui.checkbox(&mut on, "camera view: the arm as the encoders and the camera see it");
    view.set_if_neq(CameraView(on));
    if on {
        let by_camera = sim.plant.camera().map(|f| (f.tip - sim.plant.tip()).norm());
        ui.small(format!(
            "Dashed: the nominal arm at the encoder readings (flex and mismatch are invisible to it). Squares: the camera's last frames of the tip. The camera's latest frame is {} off the true tip.",
            metres(by_camera)
        ));
    }
}

/// Per-head progress, start/pause/reset and the training parameters.
fn training_section(ui: &mut egui::Ui, controls: &mut TrainingControls, training: &Training) {
    egui::Grid::new("training").striped(true).num_columns(4).show(ui, |ui| {
        for head in HeadKind::ALL {
            let run = training.head(head);
            ui.horizontal(|ui| {
                swatch(ui, solver_color(SolverId::Learned(head)));
                ui.label(head.spec().short);
            });
            ui.label(run.state.label());
            ui.label(format!("{}/{}", run.steps_done, run.total));
            ui.label(format!("loss {}", number(run.last_loss(), 4)));
            ui.end_row();
        }
    });
    ui.horizontal(|ui| {
        if ui.button("▶ start / resume").clicked() {
            controls.train.write(TrainCommand::Start);
        }
        if ui.button("⏸ pause").clicked() {
            controls.train.write(TrainCommand::Pause);
        }
        if ui.button("⟲ reset").clicked() {
            controls.train.write(TrainCommand::Reset);
        }
    });
    let mut p = *controls.params;
    let c = &mut p.config;
    let lr = egui::Slider::new(&mut c.lr, 1e-4..=0.1).logarithmic(true).text("learning rate (live)");
    if ui.add(lr).on_hover_text("Adam's step size for every head, applied to the runs in progress.").changed() {
        controls.train.write(TrainCommand::SetLr(c.lr));
    }
    if ui
        .add(egui::Slider::new(&mut p.steps_per_sec, 50.0..=20_000.0).logarithmic(true).text("steps/s per head (live)"))
        .on_hover_text("A ceiling on each head's training speed, so the atlas can show the maps forming.")
        .changed()
    {
        controls.train.write(TrainCommand::SetRate(p.steps_per_sec));
    }
    ui.small("Applied at the next start after a reset:");
    let c = &mut p.config;
    ui.add(egui::Slider::new(&mut c.hidden, 4..=256).text("hidden width")).on_hover_text("Units in each hidden layer.");
    ui.add(egui::Slider::new(&mut c.depth, 1..=4).text("hidden layers")).on_hover_text("How many hidden layers.");
    ui.add(egui::Slider::new(&mut c.components, 1..=8).text("MDN components"))
        .on_hover_text("Gaussians in the MDN's mixture; two fit the two elbow branches.");
    ui.add(egui::Slider::new(&mut c.batch, 16..=1024).logarithmic(true).text("batch"))
        .on_hover_text("Targets per training step.");
    ui.add(egui::Slider::new(&mut c.steps, 100..=50_000).logarithmic(true).text("steps"))
        .on_hover_text("Training steps each head takes before it stops.");
    ui.horizontal(|ui| {
        ui.add(egui::DragValue::new(&mut c.seed)).on_hover_text(
            "The seed of the training data and the initial weights: the same seed trains the same nets.",
        );
        ui.label("seed");
    });
    controls.params.set_if_neq(p);
    ui.separator();
    let TrainingControls { model_file, load, .. } = controls;
    model_file_row(
        ui,
        model_file.reborrow(),
        load,
        "A file saved by `elbow train --out` replaces its head's training.",
    );
}

/// The model-file field, its load button and what the last load said (`idle`: the line shown
/// before any load).
pub(crate) fn model_file_row(
    ui: &mut egui::Ui,
    mut file: Mut<ModelFile>,
    load: &mut MessageWriter<LoadModel>,
    idle: &str,
) {
    ui.horizontal(|ui| {
        ui.label("model file");
        let mut path = file.path.clone();
        ui.add(egui::TextEdit::singleline(&mut path).hint_text("model.json").desired_width(180.0));
        if path != file.path {
            file.path = path;
        }
        if ui.button("load").clicked() && !file.path.trim().is_empty() {
            load.write(LoadModel(file.path.trim().into()));
        }
    });
    match &file.outcome {
        Some(Ok(done)) => ui.small(done),
        Some(Err(why)) => ui.colored_label(color32(FLASH_COLOR), why),
        None => ui.small(idle),
    };
}

#[cfg(test)]
mod layout_tests;
