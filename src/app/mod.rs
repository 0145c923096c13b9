//! The desktop app: a bevy window over the headless core.
//!
//! One plugin per concern (`pub(crate) fn plugin(app: &mut App)` in each module). Resources and
//! messages several plugins share live in [`state`], split by concern (the arm, the view, the
//! answers, training), and display helpers in [`format`]; a resource one plugin owns lives with
//! that plugin (the atlas view in [`atlas`], the live sweep in [`sweep`], the shortcuts in
//! [`keys`]), where the panel reads it. The atlas and the sweep are both a background [`job`].
//! The import graph has no cycle (a test checks).
//!
//! **One lab for every arm.** The arm in force is one value ([`state::arm::Lab`]); the plant
//! ([`plant`]), the target ([`target`]), the reality-gap knobs, the claims board ([`claims`]),
//! the live sweep ([`sweep`]), the plots and every panel section ([`panel`]) serve every arm.
//! What differs is data the arm answers: an arm with a closed form runs the two-link solvers,
//! heads and envelope ([`solvers`], [`training`], [`envelope`], [`feedback`]); an arm whose
//! answers form a manifold runs a chain's fans, nets and self-motion ([`fans`], [`nets`],
//! [`manifold_atlas`]). Switching arms rebuilds what the arm needs ([`switch`]).
//!
//! The plugins split in two halves. The logic half ([`logic_plugin`]: state, target, training,
//! solvers, envelope, plant) needs no window or renderer, so tests drive it with
//! [`MinimalPlugins`]. The presentation half (camera and pointer, gizmo drawing, the egui panel
//! and world labels, the screenshot hook) is added by [`plugin`] only, which [`run`] uses.
//!
//! Every frame runs the [`AppSet`]s in order: read the pointer, move the target, collect
//! training progress, run every solver (and start or collect a workspace atlas off the frame),
//! let the envelope decide, step the plant, draw.

mod atlas;
mod camera;
mod claims;
mod draw;
mod envelope;
mod export;
mod fans;
mod feedback;
mod format;
mod heatmap;
mod job;
mod keys;
mod labels;
mod lessons;
mod manifold_atlas;
mod manifold_draw;
mod nets;
mod panel;
mod plant;
mod replay;
mod scene_file;
mod screenshot;
mod solvers;
mod state;
mod sweep;
mod switch;
mod target;
mod training;
mod window;
mod worker;

#[cfg(test)]
mod manifold_tests;
#[cfg(test)]
mod tests;

use crate::cli::AppArm;
use bevy::prelude::*;
use bevy_egui::EguiPlugin;
use elbow::TwoLinkArm;
use std::process::ExitCode;

/// The stages of a frame, chained in this order in [`Update`].
#[derive(SystemSet, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum AppSet {
    /// Devices become messages (mouse to world-space pointer drags).
    Input,
    /// The target follows the pointer or the sweep.
    Target,
    /// Training commands go out, model snapshots and losses come in.
    Train,
    /// Every solver answers for the target; the driver's answer is the proposal.
    Solve,
    /// The envelope (when on) turns the proposal into the command, and counts its decisions.
    Envelope,
    /// The command goes to the plant and the plant steps.
    Plant,
    /// Gizmos.
    Draw,
}

/// Opens the window and runs the lab on `lab` (`elbow --arm`, `--lengths`) until it closes,
/// with the model files in `models` loaded in place of their heads' training, on `lesson` when
/// one is given, or on the view file `view`, in a window of `size` logical pixels (else fitted
/// to the screen), replaying the catalog record `replay` (its arm is `lab`'s) when one is given.
pub(crate) fn run(
    lab: AppArm,
    models: Vec<std::path::PathBuf>,
    lesson: Option<elbow::lessons::Lesson>,
    view: Option<std::path::PathBuf>,
    size: Option<(u32, u32)>,
    replay: Option<(elbow::experiments::degradation::FailureRecord, String)>,
) -> ExitCode {
    if let Some(problem) = missing_display() {
        crate::cli::note(format_args!(
            "error: {problem}; the desktop app needs a graphical session (headless commands: `elbow --help`)"
        ));
        return ExitCode::from(2);
    }
    let (w, h) = size.unwrap_or(window::PREFERRED);
    let window =
        Window { title: "Elbow: the failure modes of learned IK".into(), resolution: (w, h).into(), ..default() };
    let mut app = App::new();
    let chain = match &lab {
        AppArm::Chain(arm) => match chain_model(arm, &models) {
            Ok(m) => m.map(|m| (m, models.first().cloned().unwrap_or_default())),
            Err(e) => {
                crate::cli::note(format_args!("error: {e}"));
                return ExitCode::from(2);
            }
        },
        AppArm::TwoLink(_) => None,
    };
    on_lab(&mut app, lab);
    app.insert_resource(window::WindowFit::new(size));
    if let Some((model, path)) = chain {
        switch::preload(&mut app, model, &path);
    }
    app.add_plugins(DefaultPlugins.set(WindowPlugin { primary_window: Some(window), ..default() }))
        .add_plugins(EguiPlugin::default())
        .add_plugins(plugin);
    if app.world().resource::<state::arm::Lab>().closed_form().is_some() {
        for path in models {
            app.world_mut().write_message(state::train::LoadModel(path));
        }
    }
    if let Some(lesson) = lesson {
        app.world_mut().write_message(lessons::OpenLesson(lesson));
    }
    if let Some(path) = view {
        app.world_mut().write_message(scene_file::LoadView(path));
    }
    if let Some((record, name)) = replay {
        app.world_mut().write_message(replay::OpenReplay { record: Box::new(record), name });
    }
    let exit = app.run();
    match exit {
        AppExit::Success => ExitCode::SUCCESS,
        AppExit::Error(code) => ExitCode::from(code.get()),
    }
}

/// The lab a view file opens on: its own arm (a chain's, or its two-link arm). With `--arm` or
/// `--lengths` given (`explicit`), they must name that arm; `Err` is one sentence.
pub(crate) fn lab_of_view(path: &std::path::Path, lab: AppArm, explicit: bool) -> Result<AppArm, String> {
    let view = scene_file::ViewFile::read(path)?;
    if let Some(chain) = &view.chain {
        return match lab {
            AppArm::Chain(arm) if explicit && arm != chain.arm => Err(format!(
                "{} is a view of the chain `{}`, not of the `{}` that --arm or --lengths name; leave them out",
                path.display(),
                chain.arm.name,
                arm.name
            )),
            AppArm::TwoLink(_) if explicit => Err(format!(
                "{} is a view of the chain `{}`; leave out --arm and --lengths",
                path.display(),
                chain.arm.name
            )),
            _ => Ok(AppArm::Chain(chain.arm.clone())),
        };
    }
    match lab {
        AppArm::TwoLink(arm) if explicit && arm != view.arm => Err(format!(
            "{} is a view of the arm `{}`, not of the `{arm}` that --arm or --lengths name; leave them out",
            path.display(),
            view.arm
        )),
        AppArm::Chain(_) if explicit => {
            Err(format!("{} is a view of the two-link lab; leave out --arm and --lengths", path.display()))
        }
        _ => Ok(AppArm::TwoLink(view.arm)),
    }
}

/// Why the app cannot open on `lab` with `models`, if it cannot: on the two-link arm every
/// plant its sliders allow must exist, and every model file must load and fit the arm.
pub(crate) fn check_lab(lab: &AppArm, models: &[std::path::PathBuf]) -> Result<(), String> {
    match lab {
        AppArm::TwoLink(arm) => {
            check_arm(arm)?;
            for path in models {
                let problem = match elbow::learned::ModelFile::load(path) {
                    Err(e) => Some(e.to_string()),
                    Ok(elbow::learned::ModelFile::TwoLink(heads)) => {
                        heads.iter().find_map(|m| m.check_fits(arm, None).err())
                    }
                    Ok(other) => {
                        Some(format!("it is {}, and the app is open on the two-link arm (use --arm)", other.describe()))
                    }
                };
                if let Some(problem) = problem {
                    return Err(format!("{}: {problem}", path.display()));
                }
            }
            Ok(())
        }
        AppArm::Chain(arm) => {
            if models.len() > 1 {
                return Err("the chain lab takes one --model (a chain model holds both its nets)".into());
            }
            chain_model(arm, models).map(|_| ())
        }
    }
}

/// The chain model in `models` (at most one), checked against `arm`.
fn chain_model(
    arm: &elbow::arm::Arm,
    models: &[std::path::PathBuf],
) -> Result<Option<elbow::chain::model::ChainModel>, String> {
    let Some(path) = models.first() else { return Ok(None) };
    let shown = path.display();
    match elbow::learned::ModelFile::load(path).map_err(|e| e.to_string())? {
        elbow::learned::ModelFile::Chain(m) => {
            m.check_fits(arm).map_err(|e| format!("{shown}: {e}"))?;
            Ok(Some(*m))
        }
        other => Err(format!("{shown}: it is {}, and the app is open on the chain {}", other.describe(), arm.name)),
    }
}

/// Why the app cannot open on `arm`, if it cannot: every plant its sliders allow must exist.
pub(crate) fn check_arm(arm: &TwoLinkArm) -> Result<(), String> {
    state::arm::check_slider_room(arm)
}

/// Makes `lab` the lab the app opens on; called before the plugins, so everything built for the
/// arm at start (the plant, the target, the camera's span) is built for this one.
pub(crate) fn on_lab(app: &mut App, lab: AppArm) {
    match lab {
        AppArm::TwoLink(arm) => on_arm(app, arm),
        AppArm::Chain(arm) => {
            app.insert_resource(state::arm::Lab(arm));
        }
    }
}

/// Makes `arm` the nominal arm; called before the plugins, so everything built for the arm at
/// start (the plant, the target, the camera's span) is built for this one.
pub(crate) fn on_arm(app: &mut App, arm: TwoLinkArm) {
    app.insert_resource(state::arm::Nominal(arm)).insert_resource(state::arm::Lab(elbow::arm::Arm::two_link(arm)));
}

/// Why no window can open, when that can be told before bevy tries (and panics).
fn missing_display() -> Option<&'static str> {
    let unix_desktop = cfg!(all(unix, not(target_os = "macos")));
    let set = |v: &str| std::env::var_os(v).is_some_and(|s| !s.is_empty());
    let any = set("DISPLAY") || set("WAYLAND_DISPLAY") || set("WAYLAND_SOCKET");
    (unix_desktop && !any).then_some("no display found (DISPLAY and WAYLAND_DISPLAY are unset)")
}

/// Everything the windowed app adds on top of bevy's and egui's plugins.
pub(crate) fn plugin(app: &mut App) {
    app.add_plugins((
        logic_plugin,
        camera::plugin,
        heatmap::plugin,
        draw::plugin,
        manifold_draw::plugin,
        panel::plugin,
        labels::plugin,
        screenshot::plugin,
        window::plugin,
        replay::draw_plugin,
        feedback::draw_plugin,
    ));
}

/// The headless half: resources and systems that need no window, renderer or egui.
pub(crate) fn logic_plugin(app: &mut App) {
    app.configure_sets(
        Update,
        (AppSet::Input, AppSet::Target, AppSet::Train, AppSet::Solve, AppSet::Envelope, AppSet::Plant, AppSet::Draw)
            .chain(),
    );
    app.add_plugins((
        state::plugin,
        target::plugin,
        training::plugin,
        solvers::plugin,
        envelope::plugin,
        plant::plugin,
        atlas::plugin,
        sweep::plugin,
        keys::plugin,
        (switch::plugin, nets::plugin, fans::plugin, manifold_atlas::plugin),
        lessons::plugin,
        claims::plugin,
        scene_file::plugin,
        replay::plugin,
        feedback::plugin,
    ));
}
