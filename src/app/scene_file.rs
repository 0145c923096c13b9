//! View files: the whole scene (arm, target, driver, the plant's knobs, the atlas and sweep, the
//! ghosts shown, the model files loaded; on a chain its driver, envelope, fans and self-motion)
//! saved as JSON from the panel and restored from the panel or with `elbow --view FILE`. A view
//! of another arm than the one in force switches to it first, then restores the scene.
//!
//! A file is written atomically (a failed write leaves the old file whole). One of another format
//! version, or of another arm than the one open, is refused with one sentence and changes
//! nothing; `elbow --view FILE` opens the app on the file's arm.

use super::atlas::AtlasView;
use super::state::arm::{Lab, Nominal, PlantSettings};
use super::state::manifold::{ChainView, drives, enveloped};
use super::state::solve::{Driver, Shown};
use super::state::train::{LoadModel, RunState, Training};
use super::state::view::{CameraView, Target};
use super::sweep::{LiveSweep, SweepChannel};
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use elbow::atlas::Layer;
use elbow::{Pipeline, Point2, SolverId, TwoLinkArm};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The format tag of a view file.
const FORMAT: &str = "elbow-view";
/// The layout's version; bumped whenever it changes.
const VERSION: u32 = 1;
/// The largest view file read, bytes (a view is a few kilobytes).
const MAX_BYTES: u64 = 1 << 20;

/// Registers the save and load requests, the panel's path field, and the systems.
pub(crate) fn plugin(app: &mut App) {
    app.add_message::<SaveView>()
        .add_message::<LoadView>()
        .init_resource::<ViewFileField>()
        .init_resource::<PendingView>()
        .add_systems(Update, (save, load).chain().in_set(super::AppSet::Input))
        .add_systems(Update, apply_pending.in_set(super::AppSet::Target));
}

/// Save the scene to this file.
#[derive(Message, Debug, Clone, PartialEq)]
pub(crate) struct SaveView(pub(crate) PathBuf);

/// Restore the scene from this file.
#[derive(Message, Debug, Clone, PartialEq)]
pub(crate) struct LoadView(pub(crate) PathBuf);

/// The panel's path field and what the last save or load said.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct ViewFileField {
    /// The path typed in the panel.
    pub(crate) path: String,
    /// `Ok` with what was done, `Err` with why not.
    pub(crate) outcome: Option<Result<String, String>>,
}

/// What the atlas shows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
struct AtlasKnobs {
    on: bool,
    follow_driver: bool,
    solver: SolverId,
    layer: Layer,
    resolution: usize,
}

/// What a chain's scene adds: the chain and its own knobs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChainKnobs {
    /// The chain in force.
    pub(crate) arm: elbow::arm::Arm,
    driver: SolverId,
    envelope: bool,
    fan: usize,
    shown: Vec<SolverId>,
    self_motion: f64,
}

/// The whole scene, as a view file holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ViewFile {
    format: String,
    version: u32,
    /// The nominal arm the scene is of.
    pub(crate) arm: TwoLinkArm,
    target: [f64; 2],
    driver: Pipeline,
    plant: PlantSettings,
    atlas: AtlasKnobs,
    sweep: String,
    camera_view: bool,
    /// The solvers whose ghosts are drawn.
    shown: Vec<SolverId>,
    /// Model files loaded in place of their heads' training.
    models: Vec<PathBuf>,
    /// The chain in force and its knobs, when the scene is on a chain (`arm` is then the lab's
    /// two-link arm, which the two-link button returns to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) chain: Option<ChainKnobs>,
}

impl ViewFile {
    /// Reads and checks a view file: its format, its version, and finite values; `Err` is one
    /// sentence naming the file.
    pub(crate) fn read(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let bytes = elbow::files::read_bounded(path, MAX_BYTES).map_err(|e| format!("{shown}: {e}"))?;
        // The format and version first, so an older file gets that sentence, not a field error.
        let head: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{shown} is not a view file (JSON: {e})"))?;
        if head.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(format!("{shown} is not an Elbow view file (no \"format\": \"{FORMAT}\")"));
        }
        let version = head.get("version").and_then(|v| v.as_u64());
        if version != Some(u64::from(VERSION)) {
            let found = version.map_or("no version".to_string(), |v| format!("version {v}"));
            return Err(format!(
                "{shown} is a view file of {found}; this Elbow reads version {VERSION} (save the view again)"
            ));
        }
        let view: ViewFile = serde_json::from_value(head).map_err(|e| format!("{shown}: {e}"))?;
        if !view.target.iter().all(|v| v.is_finite()) {
            return Err(format!("{shown}: the target is not a finite point"));
        }
        // The file's own arm, named as the file's: it is not `--lengths`.
        view.arm.validate().map_err(|e| format!("{shown}: its field `arm` is not a valid arm: {e}"))?;
        super::state::arm::slider_room(&view.arm)
            .map_err(|e| format!("{shown}: its field `arm` leaves no room for the link-length sliders: {e}"))?;
        if !SweepChannel::all().any(|c| c.channel().key() == view.sweep) {
            return Err(format!("{shown}: `{}` is no channel the live sweep has", view.sweep));
        }
        if let Some(c) = &view.chain {
            c.arm.chain.validate().map_err(|e| format!("{shown}: its chain is not a valid arm: {e}"))?;
            let methods = c.arm.methods();
            if methods.is_empty() {
                return Err(format!("{shown}: `{}` is no redundant chain", c.arm.name));
            }
            if !(methods.contains(&c.driver) && drives(c.driver)) {
                return Err(format!("{shown}: `{}` cannot drive {}", c.driver.key(), c.arm.name));
            }
            if !c.self_motion.is_finite() {
                return Err(format!("{shown}: the self-motion is not a finite number"));
            }
        }
        Ok(view)
    }

    /// The arm the scene is on.
    pub(crate) fn lab(&self) -> Lab {
        Lab(self.chain.as_ref().map_or_else(|| elbow::arm::Arm::two_link(self.arm), |c| c.arm.clone()))
    }

    /// Why this view cannot open in a lab whose two-link arm is `arm`, if it cannot: one
    /// sentence (a chain's view opens on its chain).
    pub(crate) fn check_arm(&self, arm: &TwoLinkArm, path: &Path) -> Result<(), String> {
        if self.chain.is_none() && self.arm != *arm {
            return Err(format!(
                "{} is a view of the arm `{}`, and the app is open on `{arm}`; open it with `elbow --view {}`",
                path.display(),
                self.arm,
                path.display()
            ));
        }
        Ok(())
    }
}

/// The resources a view holds.
#[derive(SystemParam)]
struct Scene<'w> {
    nominal: Res<'w, Nominal>,
    target: ResMut<'w, Target>,
    driver: ResMut<'w, Driver>,
    plant: ResMut<'w, PlantSettings>,
    atlas: ResMut<'w, AtlasView>,
    sweep: ResMut<'w, LiveSweep>,
    camera_view: ResMut<'w, CameraView>,
    shown: ResMut<'w, Shown>,
    training: Res<'w, Training>,
    lab: ResMut<'w, Lab>,
    chain: ResMut<'w, ChainView>,
}

impl Scene<'_> {
    /// The scene as a file holds it.
    fn view(&self) -> ViewFile {
        let a = &self.atlas;
        let models = self
            .training
            .0
            .iter()
            .filter(|(_, run)| matches!(run.state, RunState::Loaded(_)))
            .filter_map(|(_, run)| run.loaded_from.clone())
            .collect();
        ViewFile {
            format: FORMAT.into(),
            version: VERSION,
            arm: self.nominal.0,
            target: [self.target.pos.x, self.target.pos.y],
            driver: self.driver.0,
            plant: self.plant.sanitized(),
            atlas: AtlasKnobs {
                on: a.on,
                follow_driver: a.follow_driver,
                solver: a.solver,
                layer: a.layer,
                resolution: a.resolution,
            },
            sweep: self.sweep.channel.channel().key().to_string(),
            camera_view: self.camera_view.0,
            shown: SolverId::TWO_LINK.into_iter().filter(|&id| self.shown.0[id]).collect(),
            models,
            chain: self.lab.chain().map(|arm| ChainKnobs {
                arm: arm.clone(),
                driver: self.chain.driver,
                envelope: self.chain.envelope,
                fan: self.chain.fan(),
                shown: SolverId::CHAIN.into_iter().filter(|&m| self.chain.shows(m)).collect(),
                self_motion: self.chain.self_motion(),
            }),
        }
    }

    /// Sets every resource `view` holds (its arm is the open one).
    fn apply(&mut self, view: &ViewFile) {
        *self.target = Target::at(Point2::new(view.target[0], view.target[1]));
        self.driver.0 = view.driver;
        *self.plant = view.plant.sanitized();
        let a = view.atlas;
        self.atlas.on = a.on;
        self.atlas.follow_driver = a.follow_driver;
        self.atlas.solver = a.solver;
        self.atlas.layer = a.layer;
        self.atlas.resolution = a.resolution;
        if let Some(c) = SweepChannel::all().find(|c| c.channel().key() == view.sweep) {
            self.sweep.channel = c;
        }
        self.camera_view.0 = view.camera_view;
        for id in SolverId::TWO_LINK {
            self.shown.0[id] = view.shown.contains(&id);
        }
        if let Some(c) = &view.chain {
            self.chain.driver = c.driver;
            self.chain.envelope = c.envelope && enveloped(c.driver);
            self.chain.fan = c.fan;
            self.chain.shown = SolverId::CHAIN.map(|m| c.shown.contains(&m));
            self.chain.self_motion = c.self_motion;
        }
    }
}

/// Writes the scene to each requested file.
fn save(mut requests: MessageReader<SaveView>, scene: Scene, mut field: ResMut<ViewFileField>) {
    for SaveView(path) in requests.read() {
        let view = scene.view();
        let outcome = serde_json::to_vec_pretty(&view)
            .map_err(|e| e.to_string())
            .and_then(|bytes| elbow::files::write_atomic(path, &bytes).map_err(|e| e.to_string()))
            .map(|()| format!("view saved to {}", path.display()))
            .map_err(|e| format!("{}: {e}", path.display()));
        field.outcome = Some(outcome);
    }
}

/// A view read and checked whose arm is being switched to: it is applied once the switch is done
/// (the switch puts the plant and the target at the arm's home).
#[derive(Resource, Default)]
struct PendingView(Option<(ViewFile, PathBuf)>);

/// Restores the scene from each requested file (switching to its arm first when it is another);
/// a file that fails its checks changes nothing.
fn load(
    mut requests: MessageReader<LoadView>,
    mut scene: Scene,
    mut field: ResMut<ViewFileField>,
    mut pending: ResMut<PendingView>,
    mut models: MessageWriter<LoadModel>,
) {
    for LoadView(path) in requests.read() {
        let outcome = ViewFile::read(path).and_then(|view| {
            view.check_arm(&scene.nominal.0, path)?;
            let lab = view.lab();
            // Another arm, or one just put in force (the app opening on the view's arm): the
            // switch first puts the plant and target at its home, then the view is applied.
            if *scene.lab != lab || scene.lab.is_changed() {
                scene.lab.set_if_neq(lab);
                pending.0 = Some((view, path.clone()));
                return Ok(format!("opening the view of {}…", scene.lab.arm().name));
            }
            restore(&mut scene, &view, &mut models);
            Ok(format!("view restored from {}", path.display()))
        });
        field.outcome = Some(outcome);
    }
}

/// Sets every resource `view` holds and loads its model files.
fn restore(scene: &mut Scene, view: &ViewFile, models: &mut MessageWriter<LoadModel>) {
    scene.apply(view);
    for model in &view.models {
        models.write(LoadModel(model.clone()));
    }
}

/// Restores a view whose arm was switched to, once the switch has run.
fn apply_pending(
    mut pending: ResMut<PendingView>,
    mut scene: Scene,
    mut field: ResMut<ViewFileField>,
    mut models: MessageWriter<LoadModel>,
) {
    let Some((view, path)) = pending.0.take() else { return };
    restore(&mut scene, &view, &mut models);
    field.outcome = Some(Ok(format!("view restored from {}", path.display())));
}
