//! Training a chain's nets off the frame (the two-link heads' training is [`super::training`]'s): one [`Worker`] per net (the app's one training
//! worker, as the two-link heads use it) running [`ChainNet::train_watched`], so the fans sharpen
//! while it trains. A run stops when its worker is dropped (a new run, another arm, the app's
//! exit): the loop sees it at its next step and the thread is joined.

use super::AppSet;
use super::state::arm::{Lab, manifold};
use super::state::manifold::{ChainNets, ChainTrainCommand, ChainTraining};
use super::state::train::{LoadModel, ModelFile, RunState};
use super::worker::{Report, Session, TrainRun, Worker};
use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
use elbow::chain::{Seeds, solve::net_needed};

/// Registers the workers and the systems that start them, load model files and collect their
/// reports.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetWorkers>()
        .add_systems(Update, (handle_commands, load_nets.run_if(manifold), collect).chain().in_set(AppSet::Train))
        .add_systems(Last, join_on_exit);
}

/// The nets the chain lab trains.
pub(crate) const KINDS: [NetKind; 3] = NetKind::ALL;

/// A chain net's training loop for the [`Worker`]: [`ChainNet::train_watched`].
fn net_run(arm: Arm, kind: NetKind, cfg: NetConfig) -> TrainRun<ChainNet> {
    /// The net as the worker sees it between steps (its learning rate is the schedule's).
    struct Net<'a>(&'a dyn Fn() -> ChainNet);
    impl Session<ChainNet> for Net<'_> {
        fn snapshot(&self) -> ChainNet {
            (self.0)()
        }
    }
    Box::new(move |watch| {
        match ChainNet::train_watched(&arm, kind, &cfg, |step, loss, snapshot| watch(step, loss, &mut Net(snapshot))) {
            Ok((net, _)) => Ok(Some(net)),
            Err(elbow::learned::TrainError::Cancelled { .. }) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    })
}

/// The live workers, one slot per net.
#[derive(Resource, Default)]
pub(crate) struct NetWorkers {
    slots: [Option<Worker<ChainNet>>; NetKind::ALL.len()],
}

impl NetWorkers {
    fn slot(&mut self, kind: NetKind) -> &mut Option<Worker<ChainNet>> {
        &mut self.slots[kind.index()]
    }

    /// Stops and joins every worker.
    pub(crate) fn stop_all(&mut self) {
        self.slots = Default::default();
    }

    /// Starts every net afresh for `arm` (the nets the arm's methods need, the hybrid seeded
    /// by the MDN as the app runs it).
    pub(crate) fn start(&mut self, arm: &Arm, training: &mut ChainTraining) {
        self.stop_all();
        for kind in KINDS {
            let wanted = arm.methods().iter().any(|&m| net_needed(m, Seeds::Mdn) == Some(kind));
            let cfg = training.config;
            let run = training.run_mut(kind);
            *run = Default::default();
            if !wanted {
                continue;
            }
            run.total = cfg.steps;
            if let Err(e) = cfg.validate(kind, arm.coords()) {
                run.state = RunState::Failed(e.to_string());
                continue;
            }
            match Worker::spawn(format!("chain-train-{kind:?}"), 0.0, net_run(arm.clone(), kind, cfg)) {
                Ok(w) => {
                    *self.slot(kind) = Some(w);
                    run.state = RunState::Running;
                }
                Err(e) => run.state = RunState::Failed(format!("cannot start a thread: {e}")),
            }
        }
    }
}

/// Applies training commands on the open chain.
fn handle_commands(
    mut commands: MessageReader<ChainTrainCommand>,
    lab: Res<Lab>,
    mut training: ResMut<ChainTraining>,
    mut workers: ResMut<NetWorkers>,
) {
    for &command in commands.read() {
        match (command, lab.chain()) {
            (ChainTrainCommand::Start, Some(arm)) => workers.start(arm, &mut training),
            (ChainTrainCommand::Start, None) => {}
            (ChainTrainCommand::Stop, _) => {
                workers.stop_all();
                for kind in KINDS {
                    let run = training.run_mut(kind);
                    if run.state == RunState::Running {
                        run.state = RunState::Failed("stopped".into());
                    }
                }
            }
        }
    }
}

/// Loads model files on a chain: a chain model of the arm in force puts its nets in place and
/// stops their training; anything else is reported in [`ModelFile`] and changes nothing.
fn load_nets(
    mut loads: MessageReader<LoadModel>,
    lab: Res<Lab>,
    mut file: ResMut<ModelFile>,
    mut training: ResMut<ChainTraining>,
    mut workers: ResMut<NetWorkers>,
    mut nets: ResMut<ChainNets>,
) {
    for LoadModel(path) in loads.read() {
        let shown = super::state::train::file_label(path);
        let loaded = elbow::learned::ModelFile::load(path).map_err(|e| e.to_string()).and_then(|m| match m {
            elbow::learned::ModelFile::Chain(m) => m.check_fits(lab.arm()).map(|()| m),
            other => Err(format!("it is {}, and the app is on the chain {}", other.describe(), lab.arm().name)),
        });
        file.outcome = Some(match loaded {
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(model) => {
                workers.stop_all();
                training.config = model.net;
                for kind in NetKind::ALL {
                    let run = training.run_mut(kind);
                    *run = Default::default();
                    if model.net(kind).is_some() {
                        run.state = RunState::Loaded(shown.clone());
                        run.loaded_from = Some(path.clone());
                    }
                }
                let set = model.into_nets();
                for kind in NetKind::ALL {
                    nets.set(kind, set.get(kind).cloned());
                }
                Ok(format!("{}'s nets loaded from {shown}", lab.arm().name))
            }
        });
    }
}

/// Copies every worker's reports into the runs and the nets, and lets finished workers go.
fn collect(mut training: ResMut<ChainTraining>, mut workers: ResMut<NetWorkers>, mut nets: ResMut<ChainNets>) {
    for kind in KINDS {
        let slot = workers.slot(kind);
        let Some(worker) = slot.as_mut() else { continue };
        let mut finished = false;
        let run = training.run_mut(kind);
        let mut ended = false;
        for report in worker.drain(&mut ended) {
            match report {
                Report::Loss { steps, loss } => {
                    run.steps_done = steps;
                    if loss.is_finite() {
                        run.losses.push([steps as f64, f64::from(loss)]);
                    }
                }
                Report::Snapshot(net) => nets.set(kind, Some(*net)),
                Report::Finished => {
                    run.steps_done = run.total;
                    run.state = RunState::Finished;
                    finished = true;
                }
                Report::Failed(why) => {
                    run.state = RunState::Failed(why);
                    finished = true;
                }
            }
        }
        if ended && run.state == RunState::Running {
            run.state = RunState::Failed("training thread stopped".into());
        }
        finished |= ended;
        if finished {
            *slot = None;
        }
    }
}

/// Stops and joins the workers when the app exits.
fn join_on_exit(mut exit: MessageReader<AppExit>, mut workers: ResMut<NetWorkers>) {
    if exit.read().next().is_some() {
        workers.stop_all();
    }
}
