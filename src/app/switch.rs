//! Switching arms live: when the arm in force changes (the panel's arm buttons, a lesson, or
//! `elbow --arm` at start), the one plant is rebuilt for the new arm at rest, the target goes
//! to the arm's home, and a chain's nets are put in place. The nets trained for an arm are kept,
//! so switching back does not train again; an arm without nets starts training. Back on the
//! two-link arm, its heads start training if they never did.

use super::nets::NetWorkers;
use super::state::arm::{Lab, PlantSettings, Sim, home_target, rest_pose};
use super::state::manifold::{ChainAnswers, ChainNets, ChainTrainCommand, ChainTraining, ChainView};
use super::state::solve::Command;
use super::state::train::{RunState, TrainCommand, Training, TrainingParams};
use super::state::view::Target;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::chain::ChainDls;
use elbow::chain::model::ChainModel;
use elbow::chain::nets::NetKind;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// Registers the nets kept per arm and the switch, which runs before the target moves.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<KeptNets>().add_systems(
        Update,
        switch.run_if(resource_changed::<Lab>).after(super::AppSet::Input).before(super::AppSet::Target),
    );
}

/// The nets and training runs of every chain opened before, by arm name.
#[derive(Resource, Default)]
struct KeptNets(HashMap<String, (ChainNets, ChainTraining)>);

/// Puts the nets of `model` (read from `path`) in place for its arm before the app starts, so
/// the chain lab opens with them instead of training (`elbow --arm rail3 --model m.json`).
pub(crate) fn preload(app: &mut App, model: ChainModel, path: &std::path::Path) {
    let file = super::state::train::file_label(path);
    let mut training = ChainTraining { config: model.net, ..ChainTraining::default() };
    for kind in NetKind::ALL {
        if model.net(kind).is_some() {
            training.run_mut(kind).state = RunState::Loaded(file.clone());
        }
    }
    let name = model.arm.name.clone();
    let nets = ChainNets { set: model.into_nets(), generation: 1 };
    app.world_mut().get_resource_or_insert_with(KeptNets::default).0.insert(name, (nets, training));
}

/// Where a chain starts on `target`: of 64 prior draws finished by DLS, the converged answer
/// nearest the prior's centre (in prior scales), so the chain starts in the middle of its
/// ranges rather than against a bound; the prior's centre when none converges.
fn start_pose(arm: &Arm, target: elbow::Point2) -> Vec<f64> {
    let d = arm.coords();
    let dls = ChainDls::new(&arm.chain);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let score = |x: &[f64]| (0..d).map(|i| ((x[i] - arm.prior.center(i)) / arm.prior.scale(i)).powi(2)).sum::<f64>();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for _ in 0..64 {
        let mut x = vec![0.0; d];
        arm.prior.sample(&mut rng, &mut x);
        if dls.refine(&mut x, target, 64).converged && best.as_ref().is_none_or(|(s, _)| score(&x) < *s) {
            best = Some((score(&x), x));
        }
    }
    best.map_or_else(|| arm.prior_center(), |(_, x)| x)
}

/// The chain lab's state the switch rebuilds.
#[derive(SystemParam)]
struct ChainState<'w> {
    nets: ResMut<'w, ChainNets>,
    training: ResMut<'w, ChainTraining>,
    workers: ResMut<'w, NetWorkers>,
    sim: ResMut<'w, Sim>,
    command: ResMut<'w, Command>,
    answers: ResMut<'w, ChainAnswers>,
    view: ResMut<'w, ChainView>,
    settings: Res<'w, PlantSettings>,
}

/// Rebuilds the lab's state for the newly opened lab.
#[allow(clippy::too_many_arguments)]
fn switch(
    lab: Res<Lab>,
    mut last: Local<Option<String>>,
    mut started: Local<bool>,
    mut kept: ResMut<KeptNets>,
    mut target: ResMut<Target>,
    mut chain: ChainState,
    mut commands: (MessageWriter<ChainTrainCommand>, MessageWriter<TrainCommand>),
    two_link: (Res<Training>, Res<TrainingParams>),
) {
    let ChainState { nets, training, workers, sim, command, answers, view, settings } = &mut chain;
    let name = lab.chain().map(|a| a.name.clone());
    if *last == name && last.is_some() {
        return;
    }
    // The first frame keeps the two-link target the app opened with (a view file's, say).
    let opening = !std::mem::replace(&mut *started, true);
    // Keep what the arm we leave has learnt (a run in progress stops where it stands).
    if let Some(old) = last.take() {
        workers.stop_all();
        let mut runs = training.clone();
        for run in &mut runs.runs {
            if run.state == RunState::Running {
                run.state = RunState::Failed("stopped when the arm changed".into());
            }
        }
        kept.0.insert(old, (std::mem::take(&mut **nets), runs));
    }
    *last = name;
    command.0 = None;
    match lab.chain() {
        Some(arm) => {
            let autostart = training.autostart;
            let config = training.config;
            match kept.0.remove(&arm.name) {
                Some((n, t)) => {
                    **nets = n;
                    **training = ChainTraining { config, autostart, ..t };
                }
                None => {
                    **nets = ChainNets { generation: nets.generation + 1, ..ChainNets::default() };
                    **training = ChainTraining { config, autostart, ..ChainTraining::default() };
                    if autostart {
                        commands.0.write(ChainTrainCommand::Start);
                    }
                }
            }
            let demo = arm.demo_target();
            *target = Target::at(demo);
            **sim = Sim::new(arm, settings, &start_pose(arm, demo));
            **answers = ChainAnswers::default();
            view.self_motion = 0.0;
        }
        None => {
            // The first frame keeps the plant and the target the app opened with.
            if !opening {
                let arm = lab.arm();
                *target = Target::at(home_target(arm));
                **sim = Sim::new(arm, settings, &rest_pose(arm));
            }
            let (runs, params) = &two_link;
            if params.autostart && runs.0.iter().all(|(_, r)| r.state == RunState::Idle) {
                commands.1.write(TrainCommand::Start);
            }
        }
    }
}
