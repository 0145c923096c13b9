//! Training the chain's nets off the frame: one thread per net ([`ChainNet::train_watched`]),
//! reporting its mean loss every few steps and a snapshot of the net a few times a second, so
//! the fans sharpen while it trains. A run stops when its [`NetWorker`] is dropped (a new run,
//! another arm, the app's exit): the thread sees the flag at its next step and is joined.

use super::super::AppSet;
use super::super::state::arm::Lab;
use super::state::{ChainNets, ChainTrainCommand, ChainTraining, RunPhase};
use bevy::prelude::*;
use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
use elbow::chain::{ChainArm, Seeds, solve::net_needed};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, mpsc::Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Registers the workers and the systems that start them and collect their reports.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NetWorkers>()
        .add_systems(Update, (handle_commands, collect).chain().in_set(AppSet::Train))
        .add_systems(Last, join_on_exit);
}

/// Steps per loss report.
const CHUNK: usize = 20;
/// Least time between two snapshots of a net.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(400);
/// The nets the chain lab trains.
pub(crate) const KINDS: [NetKind; 3] = NetKind::ALL;

/// Messages from a worker.
enum Report {
    /// Mean loss of the steps since the last report, and the steps done.
    Loss { steps: usize, loss: f32 },
    /// The net as trained so far (the last one when the run ends).
    Snapshot(Box<ChainNet>),
    /// All steps done.
    Done,
    /// The run was refused or diverged.
    Failed(String),
}

/// The app's end of one training thread; dropping it stops and joins the thread.
pub(crate) struct NetWorker {
    stop: Arc<AtomicBool>,
    reports: Mutex<Receiver<Report>>,
    thread: Option<JoinHandle<()>>,
}

impl NetWorker {
    /// Starts training a `kind` net for `arm` with `cfg`.
    fn spawn(arm: ChainArm, kind: NetKind, cfg: NetConfig) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, reports) = mpsc::channel();
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("chain-train-{kind:?}"))
            .spawn(move || work(&arm, kind, &cfg, &flag, &tx))?;
        Ok(Self { stop, reports: Mutex::new(reports), thread: Some(thread) })
    }
}

impl Drop for NetWorker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A training thread: trains, reporting as it goes, until done, failed or stopped.
fn work(arm: &ChainArm, kind: NetKind, cfg: &NetConfig, stop: &AtomicBool, tx: &Sender<Report>) {
    let (mut sum, mut n) = (0.0f32, 0usize);
    let mut last = Instant::now();
    let result = ChainNet::train_watched(arm, kind, cfg, |step, loss, snapshot| {
        sum += loss;
        n += 1;
        if n == CHUNK {
            let _ = tx.send(Report::Loss { steps: step, loss: sum / n as f32 });
            (sum, n) = (0.0, 0);
        }
        if last.elapsed() >= SNAPSHOT_EVERY {
            last = Instant::now();
            let _ = tx.send(Report::Snapshot(Box::new(snapshot())));
        }
        !stop.load(Ordering::Relaxed)
    });
    match result {
        Ok(net) => {
            let _ = tx.send(Report::Snapshot(Box::new(net)));
            let _ = tx.send(Report::Done);
        }
        Err(elbow::learned::TrainError::Cancelled { .. }) => {}
        Err(e) => {
            let _ = tx.send(Report::Failed(e.to_string()));
        }
    }
}

/// The live workers, one slot per net.
#[derive(Resource, Default)]
pub(crate) struct NetWorkers {
    slots: [Option<NetWorker>; NetKind::ALL.len()],
}

impl NetWorkers {
    fn slot(&mut self, kind: NetKind) -> &mut Option<NetWorker> {
        &mut self.slots[kind.index()]
    }

    /// Stops and joins every worker.
    pub(crate) fn stop_all(&mut self) {
        self.slots = Default::default();
    }

    /// Starts every net afresh for `arm` (the nets the arm's methods need, the hybrid seeded
    /// by the MDN as the app runs it).
    pub(crate) fn start(&mut self, arm: &ChainArm, training: &mut ChainTraining) {
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
                run.state = RunPhase::Failed(e.to_string());
                continue;
            }
            match NetWorker::spawn(arm.clone(), kind, cfg) {
                Ok(w) => {
                    *self.slot(kind) = Some(w);
                    run.state = RunPhase::Running;
                }
                Err(e) => run.state = RunPhase::Failed(format!("cannot start a thread: {e}")),
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
                    if run.state == RunPhase::Running {
                        run.state = RunPhase::Failed("stopped".into());
                    }
                }
            }
        }
    }
}

/// Copies every worker's reports into the runs and the nets, and lets finished workers go.
fn collect(mut training: ResMut<ChainTraining>, mut workers: ResMut<NetWorkers>, mut nets: ResMut<ChainNets>) {
    for kind in KINDS {
        let slot = workers.slot(kind);
        let Some(worker) = slot.as_mut() else { continue };
        let mut finished = false;
        let run = training.run_mut(kind);
        let reports = worker.reports.get_mut().unwrap_or_else(|e| e.into_inner());
        loop {
            match reports.try_recv() {
                Ok(Report::Loss { steps, loss }) => {
                    run.steps = steps;
                    if loss.is_finite() {
                        run.losses.push([steps as f64, f64::from(loss)]);
                    }
                }
                Ok(Report::Snapshot(net)) => nets.set(kind, Some(*net)),
                Ok(Report::Done) => {
                    run.steps = run.total;
                    run.state = RunPhase::Done;
                    finished = true;
                }
                Ok(Report::Failed(why)) => {
                    run.state = RunPhase::Failed(why);
                    finished = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    finished = true;
                    break;
                }
            }
        }
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
