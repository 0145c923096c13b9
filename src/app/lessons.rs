//! The lessons: opening one ([`OpenLesson`], from the panel's menu or `elbow --lesson NAME`)
//! sets every resource its [`Scene`] names, from a clean state, and the panel shows its caption
//! ([`ActiveLesson`]) until another lesson opens or the user closes it.
//!
//! A lesson on another lab first switches the lab and applies its scene on the next frame, after
//! the lab's switch has rebuilt its state (which would otherwise reset the target it sets). A
//! lesson on its own two-link arm (`bishop1994`) or with its own training data and nets makes
//! that the nominal arm and retrains every head; the others come back to the arm the app opened
//! on and the core's training defaults. A lesson on a chain sets its plant and target too (the
//! gravity lesson's payload and soft servos).

use super::AppSet;
use super::atlas::AtlasView;
use super::state::arm::{Lab, Nominal, PlantSettings, Sim};
use super::state::manifold::ChainView;
use super::state::solve::{BranchLog, Driver};
use super::state::train::{TrainCommand, TrainingParams};
use super::state::view::{CameraView, Target};
use super::sweep::{LiveSweep, SweepChannel};
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::lessons::{Lesson, Scene, SceneArm};
use elbow::{Pipeline, TrainConfig, TwoLinkArm};

/// Registers the lesson request, the caption's resource and the system that opens lessons.
pub(crate) fn plugin(app: &mut App) {
    app.add_message::<OpenLesson>().init_resource::<ActiveLesson>().add_systems(
        Update,
        (open, release_branch_mark.run_if(resource_changed::<ActiveLesson>)).chain().in_set(AppSet::Target),
    );
}

/// Whether `lesson` stages a branch change (it opens the arm at a start pose): while it is open,
/// the latest change stays marked until the next one ([`BranchLog::hold`]).
fn stages_a_branch_change(lesson: Lesson) -> bool {
    lesson.scene().start.is_some()
}

/// Lets the branch mark fade again once the lesson that held it is closed or another opens.
fn release_branch_mark(active: Res<ActiveLesson>, mut branches: ResMut<BranchLog>) {
    let hold = active.0.is_some_and(stages_a_branch_change);
    if branches.hold != hold {
        branches.hold = hold;
    }
}

/// Open this lesson.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenLesson(pub(crate) Lesson);

/// The lesson whose caption the panel shows (`None`: no lesson, or closed).
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ActiveLesson(pub(crate) Option<Lesson>);

/// Everything a scene sets.
#[derive(SystemParam)]
struct SceneState<'w> {
    lab: ResMut<'w, Lab>,
    nominal: ResMut<'w, Nominal>,
    driver: ResMut<'w, Driver>,
    plant: ResMut<'w, PlantSettings>,
    target: ResMut<'w, Target>,
    atlas: ResMut<'w, AtlasView>,
    sweep: ResMut<'w, LiveSweep>,
    camera_view: ResMut<'w, CameraView>,
    chain_view: ResMut<'w, ChainView>,
    params: ResMut<'w, TrainingParams>,
    train: MessageWriter<'w, TrainCommand>,
    sim: ResMut<'w, Sim>,
    branches: ResMut<'w, BranchLog>,
}

/// Opens the latest requested lesson: switches the lab first when the scene is on another one,
/// then, once the lab is the scene's, applies the scene and shows the caption.
fn open(
    mut requests: MessageReader<OpenLesson>,
    mut pending: Local<Option<Lesson>>,
    mut active: ResMut<ActiveLesson>,
    mut home: Local<Option<TwoLinkArm>>,
    mut state: SceneState,
) {
    // The arm the app opened on: lessons without an arm of their own come back to it.
    let home = *home.get_or_insert(state.nominal.0);
    if let Some(&OpenLesson(lesson)) = requests.read().last() {
        *pending = Some(lesson);
    }
    let Some(lesson) = *pending else { return };
    let scene = lesson.scene();
    let wanted = match scene.arm {
        SceneArm::TwoLink { arm, .. } => Lab(Arm::two_link(arm.unwrap_or(home))),
        SceneArm::Chain { arm, .. } => Lab(arm.arm()),
    };
    if *state.lab != wanted {
        *state.lab = wanted;
        return;
    }
    apply(&scene, home, &mut state);
    *pending = None;
    active.0 = Some(lesson);
}

/// The plant knobs `scene` sets: the ideal plant with the scene's channels, on its servos' gain.
fn plant_of(scene: &Scene) -> PlantSettings {
    let servo_kp = scene.kp.unwrap_or(elbow::plant::dynamics::Servo::STS3215.kp);
    PlantSettings { servo_kp, ..PlantSettings::IDEAL.with_levels(&scene.plant) }
}

/// Sets every resource `scene` names; the lab is already the scene's. A scene on another
/// two-link arm, or with other training data or nets, retrains every head for it.
fn apply(scene: &Scene, home: TwoLinkArm, s: &mut SceneState) {
    match scene.arm {
        SceneArm::TwoLink { driver, envelope, arm } => {
            let arm = arm.unwrap_or(home);
            let training = TrainConfig { steps: s.params.config.steps, ..scene.training.unwrap_or_default() };
            if s.nominal.0 != arm || s.params.config != training {
                s.nominal.0 = arm;
                s.params.config = training;
                s.train.write(TrainCommand::Reset);
                s.train.write(TrainCommand::Start);
            }
            s.driver.0 = if envelope { Pipeline::enveloped(driver) } else { Pipeline::plain(driver) };
            *s.plant = plant_of(scene);
            *s.target = Target::at(scene.target * s.nominal.0.reach());
            if let Some(start) = scene.start {
                *s.sim = Sim::new(&Arm::two_link(arm), &s.plant, &start.coords());
                // The change this lesson stages is the one marked, not one from before it.
                s.branches.last_command = Some(start);
                s.branches.latest = None;
            }
            s.atlas.on = true;
            s.atlas.follow_driver = true;
            s.atlas.layer = scene.layer;
            if let Some(channel) = SweepChannel::of(scene.sweep) {
                s.sweep.channel = channel;
            }
            s.camera_view.0 = scene.camera_view;
        }
        SceneArm::Chain { driver, shown, .. } => {
            *s.plant = plant_of(scene);
            if let Some(arm) = s.lab.chain() {
                *s.target = Target::at(scene.target * arm.chain.reach());
            }
            s.chain_view.driver = driver;
            s.chain_view.shown = elbow::lineup::SolverId::CHAIN.map(|m| shown.contains(&m) || m == driver);
            s.chain_view.self_motion = 0.0;
        }
    }
}
