//! View files: the whole scene (arm, target, driver, the elbow branch the plant is on, the
//! plant's knobs, the atlas and sweep, the ghosts shown, the model files loaded; on a chain its
//! driver, envelope, fans and self-motion) saved as JSON from the panel and restored from the
//! panel or with `elbow --view FILE`. A view of another arm than the one in force switches to it
//! first, then restores the scene. The panel saves to a name typed (`.json` added when it has no
//! extension) or to a fresh `elbow-view-<n>.json` ([`save_path`]), and lists the view files of
//! the start folder to restore ([`view_files`]); what it says names the file's whole path.
//!
//! A file is written atomically (a failed write leaves the old file whole). One of another format
//! version, or of another arm than the one open, is refused with one sentence and changes
//! nothing; `elbow --view FILE` opens the app on the file's arm.

use super::atlas::AtlasView;
use super::state::arm::{Lab, Nominal, PlantSettings, Sim};
use super::state::manifold::{ChainView, drives, enveloped};
use super::state::solve::{BranchLog, Driver, Shown};
use super::state::train::{LoadModel, RunState, Training};
use super::state::view::{CameraView, Target};
use super::sweep::{LiveSweep, SweepChannel};
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use elbow::atlas::Layer;
use elbow::{ElbowMode, Pipeline, Point2, SolverId, TwoLinkArm};
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
    /// The elbow branch the two-link plant is on (the driver keeps it from there); absent in
    /// older files and on a chain, where the restored plant starts at the arm's rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    branch: Option<ElbowMode>,
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
    sim: ResMut<'w, Sim>,
    branches: ResMut<'w, BranchLog>,
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
            branch: self.lab.closed_form().map(|_| ElbowMode::of(self.sim.measured())),
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
        // The plant at rest on the view's branch, on the closed form's answer for its target (the
        // driver keeps the branch the plant is on); no branch change is logged for the move.
        if let (Some(mode), Some(arm)) = (view.branch, self.lab.closed_form()) {
            let branches = elbow::analytic::solve_branches(&arm, self.target.pos);
            let pose = if mode == ElbowMode::Up { branches.up } else { branches.down };
            if pose.is_finite() {
                *self.sim = Sim::new(self.lab.arm(), &self.plant, &pose.coords());
                self.branches.last_command = Some(pose);
            }
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
            .map(|()| format!("view saved to {}", whole(path).display()))
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
            Ok(format!("view restored from {}", whole(path).display()))
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
    field.outcome = Some(Ok(format!("view restored from {}", whole(&path).display())));
}

/// `path` from the root (relative to the start folder when it is relative), for what the panel
/// says: the user sees where the file is.
fn whole(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The file the panel saves to for the name `typed` in the folder `dir`: a fresh
/// `elbow-view-<n>.json` there when nothing is typed (an earlier one is never replaced), else
/// the name, with `.json` added when it has no extension (relative to `dir`).
pub(crate) fn save_path(typed: &str, dir: &Path) -> PathBuf {
    let typed = typed.trim();
    if typed.is_empty() {
        return super::export::fresh_path(dir, "view", "json");
    }
    let path = dir.join(typed);
    if path.extension().is_none() { path.with_extension("json") } else { path }
}

/// The file the panel restores for the name `typed` in the folder `dir`: the name as typed, or
/// with `.json` added when only that exists.
pub(crate) fn load_path(typed: &str, dir: &Path) -> PathBuf {
    let path = dir.join(typed.trim());
    let json = path.with_extension("json");
    if !path.exists() && path.extension().is_none() && json.exists() { json } else { path }
}

/// The most view files [`view_files`] lists.
const LISTED: usize = 30;

/// The view files in `dir`, newest first (at most [`LISTED`]): the `.json` files whose opening
/// names the view format.
pub(crate) fn view_files(dir: &Path) -> Vec<PathBuf> {
    use std::io::Read;
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .filter(|p| {
            let mut head = [0u8; 256];
            let n = std::fs::File::open(p).and_then(|mut f| f.read(&mut head)).unwrap_or(0);
            String::from_utf8_lossy(&head[..n]).contains(FORMAT)
        })
        .map(|p| (p.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH), p))
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.into_iter().take(LISTED).map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::{LoadView, SaveView, ViewFileField, load_path, save_path, view_files};
    use crate::app::logic_plugin;
    use crate::app::state::arm::{Nominal, PlantSettings, Sim};
    use crate::app::state::solve::{Driver, Solutions};
    use crate::app::state::train::TrainingParams;
    use crate::app::state::view::Target;
    use bevy::prelude::*;
    use bevy::time::TimeUpdateStrategy;
    use elbow::{ElbowMode, Pipeline, Point2, SolverId};
    use std::time::Duration;

    /// The logic plugins on a fixed 16 ms clock, no training, an ideal plant.
    fn app() -> App {
        let mut app = App::new();
        app.insert_resource(TrainingParams { autostart: false, ..TrainingParams::default() });
        app.insert_resource(PlantSettings::IDEAL);
        app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
        app.update();
        app
    }

    /// The plant at rest on the branch `mode` of the closed form's answer for `target`, the
    /// target there.
    fn rest_on(app: &mut App, target: Point2, mode: ElbowMode) {
        let arm = app.world().resource::<Nominal>().0;
        let b = elbow::analytic::solve_branches(&arm, target);
        let pose = if mode == ElbowMode::Up { b.up } else { b.down };
        let settings = *app.world().resource::<PlantSettings>();
        *app.world_mut().resource_mut::<Sim>() = Sim::new(&elbow::arm::Arm::two_link(arm), &settings, &pose.coords());
        *app.world_mut().resource_mut::<Target>() = Target::at(target);
    }

    /// The branch the plant is on, and the branch of the driver's answer.
    fn branches(app: &App) -> (ElbowMode, Option<ElbowMode>) {
        let sim = app.world().resource::<Sim>();
        let proposal = app.world().resource::<Solutions>().proposal.map(|s| ElbowMode::of(s.pose));
        (ElbowMode::of(sim.measured()), proposal)
    }

    #[test]
    fn a_restored_view_puts_the_plant_back_on_its_elbow_branch() {
        let dir = std::env::temp_dir().join(format!("elbow-view-branch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("up.json");
        let mut app = app();
        app.world_mut().resource_mut::<Driver>().0 = Pipeline::plain(SolverId::Analytic);
        let target = Point2::new(0.9, 0.7);
        // Elbow-up, and the nearest-branch driver stays there.
        rest_on(&mut app, target, ElbowMode::Up);
        for _ in 0..5 {
            app.update();
        }
        assert_eq!(branches(&app), (ElbowMode::Up, Some(ElbowMode::Up)));
        app.world_mut().write_message(SaveView(path.clone()));
        app.update();
        let saved = std::fs::read_to_string(&path).expect("saved");
        assert!(saved.contains("\"branch\": \"Up\""), "{saved}");
        // The plant on the other branch, then the view restored: elbow-up again, and the driver
        // with it.
        rest_on(&mut app, target, ElbowMode::Down);
        for _ in 0..5 {
            app.update();
        }
        assert_eq!(branches(&app), (ElbowMode::Down, Some(ElbowMode::Down)));
        app.world_mut().write_message(LoadView(path.clone()));
        for _ in 0..5 {
            app.update();
        }
        assert_eq!(branches(&app), (ElbowMode::Up, Some(ElbowMode::Up)), "restored onto its branch");
        // What the panel says names the whole path.
        let said = app.world().resource::<ViewFileField>().outcome.clone();
        assert!(
            matches!(&said, Some(Ok(s)) if s.ends_with(&path.display().to_string()) && path.is_absolute()),
            "{said:?}"
        );
        // A file of before the branch was kept (no `branch`) still restores, on the branch the
        // plant is on.
        let old = dir.join("old.json");
        std::fs::write(&old, saved.replace(",\n  \"branch\": \"Up\"", "")).expect("write");
        rest_on(&mut app, target, ElbowMode::Down);
        app.world_mut().write_message(LoadView(old));
        for _ in 0..3 {
            app.update();
        }
        let said = app.world().resource::<ViewFileField>().outcome.clone();
        assert!(matches!(said, Some(Ok(_))), "{said:?}");
        assert_eq!(branches(&app).0, ElbowMode::Down);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_panel_saves_to_a_fresh_default_name_and_lists_the_view_files() {
        let dir = std::env::temp_dir().join(format!("elbow-view-names-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        assert_eq!(save_path("  ", &dir), dir.join("elbow-view-1.json"));
        assert_eq!(save_path("my-scene", &dir), dir.join("my-scene.json"));
        assert_eq!(save_path("a.view", &dir), dir.join("a.view"));
        let mut app = app();
        for name in ["", "", "my-scene"] {
            app.world_mut().write_message(SaveView(save_path(name, &dir)));
            app.update();
        }
        assert!(dir.join("elbow-view-2.json").exists(), "a second default save takes the next number");
        std::fs::write(dir.join("other.json"), "{\"not\": \"a view\"}").expect("write");
        let mut listed: Vec<String> =
            view_files(&dir).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        listed.sort();
        assert_eq!(listed, ["elbow-view-1.json", "elbow-view-2.json", "my-scene.json"]);
        assert_eq!(load_path("my-scene", &dir), dir.join("my-scene.json"), "the name as saved restores");
        assert_eq!(load_path("missing", &dir), dir.join("missing"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
