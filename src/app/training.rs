//! Background training: one thread per learned head, so the frame never waits on a minibatch.
//!
//! Each worker owns a [`Trainer`] and talks to the app over two channels: [`Control`] messages
//! in (pause, resume, learning rate, speed), [`Report`]s out (mean loss per chunk of steps,
//! model snapshots a few times a second, completion or failure). Dropping a worker's handle
//! closes its channel and the thread ends at its next check. The app side turns
//! [`TrainCommand`] messages (from the panel or tests) into these, and copies snapshots into
//! [`Models`], which the solvers read.

use super::AppSet;
use super::plant::PlantSettings;
use super::state::{Nominal, head_index};
use bevy::prelude::*;
use elbow::{HeadKind, LearnedModel, RealArm, TrainConfig, Trainer};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// Registers the training resources and systems, and starts training at startup when
/// [`TrainingParams::autostart`] is set.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<TrainingParams>()
        .init_resource::<Training>()
        .init_resource::<Models>()
        .add_message::<TrainCommand>()
        .add_systems(Startup, autostart)
        .add_systems(Update, (handle_commands, collect_reports).chain().in_set(AppSet::Train));
}

/// Steps per loss report.
const CHUNK: usize = 10;
/// Least time between two model snapshots.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);

/// The latest snapshot of each head, indexed by [`head_index`]; `None` until one arrives.
#[derive(Resource, Default, Clone)]
pub(crate) struct Models(pub(crate) [Option<LearnedModel>; 4]);

impl Models {
    /// The latest model of `head`.
    pub(crate) fn get(&self, head: HeadKind) -> Option<&LearnedModel> {
        self.0[head_index(head)].as_ref()
    }

    /// Replaces the model of `head`.
    pub(crate) fn set(&mut self, head: HeadKind, model: Option<LearnedModel>) {
        self.0[head_index(head)] = model;
    }
}

/// Training parameters shared by all heads. Sizes and the seed apply from the next start after
/// a reset; learning rate and speed apply live.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct TrainingParams {
    /// Start every head at startup.
    pub(crate) autostart: bool,
    /// Peak learning rate.
    pub(crate) lr: f32,
    /// Hidden layer width.
    pub(crate) hidden: usize,
    /// Hidden layers.
    pub(crate) depth: usize,
    /// MDN components.
    pub(crate) components: usize,
    /// Minibatch size.
    pub(crate) batch: usize,
    /// Total steps per head.
    pub(crate) steps: usize,
    /// Training targets per head.
    pub(crate) data_size: usize,
    /// Speed limit per head, steps per second (keeps the CPU free for the frame).
    pub(crate) steps_per_sec: f64,
    /// Seed of data, initialisation and batching.
    pub(crate) seed: u64,
}

impl Default for TrainingParams {
    fn default() -> Self {
        let d = TrainConfig::default();
        Self {
            autostart: true,
            lr: d.lr,
            hidden: d.hidden,
            depth: d.depth,
            components: d.components,
            batch: d.batch,
            steps: d.steps,
            data_size: d.data_size,
            steps_per_sec: 1500.0,
            seed: d.seed,
        }
    }
}

impl TrainingParams {
    /// The core configuration for `head`; the residual head fits corrections for `real`.
    pub(crate) fn config(&self, head: HeadKind, arm: elbow::TwoLinkArm, real: RealArm) -> TrainConfig {
        TrainConfig {
            head,
            arm,
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth,
            components: self.components,
            lr: self.lr,
            data_size: self.data_size,
            seed: self.seed,
            real,
            ..TrainConfig::default()
        }
    }
}

/// What the panel (or a test) asks of training.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub(crate) enum TrainCommand {
    /// Start idle heads with the current parameters and resume paused ones.
    Start,
    /// Pause every running head.
    Pause,
    /// Stop every head and forget its model and losses.
    Reset,
    /// Change the learning rate of the running heads.
    SetLr(f32),
    /// Change the speed limit of the running heads.
    SetRate(f64),
}

/// Where one head's training stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum RunState {
    /// Not started (or reset).
    #[default]
    Idle,
    /// Training on its thread.
    Running,
    /// Paused on its thread.
    Paused,
    /// All configured steps done.
    Finished,
    /// The configuration was refused.
    Failed(String),
}

impl RunState {
    /// A short label for the panel.
    pub(crate) fn label(&self) -> String {
        match self {
            RunState::Idle => "idle".into(),
            RunState::Running => "training…".into(),
            RunState::Paused => "paused".into(),
            RunState::Finished => "done".into(),
            RunState::Failed(why) => format!("failed: {why}"),
        }
    }
}

/// Messages to a worker.
#[derive(Debug, Clone, Copy)]
enum Control {
    Pause,
    Resume,
    SetLr(f32),
    SetRate(f64),
}

/// Messages from a worker.
enum Report {
    /// Mean loss of the steps since the last report, and the steps done.
    Loss { steps: usize, loss: f32 },
    /// The model as trained so far.
    Snapshot(Box<LearnedModel>),
    /// All steps done (a last snapshot was sent just before).
    Finished,
    /// The trainer could not be built.
    Failed(String),
}

/// The app's end of one worker thread.
struct Worker {
    control: Sender<Control>,
    reports: Mutex<Receiver<Report>>,
}

impl Worker {
    /// Spawns a thread training `cfg` at up to `rate` steps per second.
    fn spawn(cfg: TrainConfig, rate: f64) -> std::io::Result<Self> {
        let (control, control_rx) = mpsc::channel();
        let (report_tx, reports) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("train-{}", cfg.head))
            .spawn(move || work(cfg, rate, &control_rx, &report_tx))?;
        Ok(Self { control, reports: Mutex::new(reports) })
    }
}

/// A worker thread's loop; returns when the app drops its end of the channel.
fn work(cfg: TrainConfig, mut rate: f64, control: &Receiver<Control>, reports: &Sender<Report>) {
    let mut trainer = match Trainer::new(cfg) {
        Ok(t) => t,
        Err(e) => {
            let _ = reports.send(Report::Failed(e.to_string()));
            return;
        }
    };
    let mut paused = false;
    let mut last_snapshot: Option<Instant> = None;
    loop {
        // Take every pending message; while paused, block until one comes.
        loop {
            let msg = if paused { control.recv().map_err(|_| TryRecvError::Disconnected) } else { control.try_recv() };
            match msg {
                Ok(Control::Pause) => paused = true,
                Ok(Control::Resume) => paused = false,
                Ok(Control::SetLr(lr)) => trainer.set_lr(lr),
                Ok(Control::SetRate(r)) => rate = r,
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return,
            }
        }
        let started = Instant::now();
        let n = CHUNK.min(cfg.steps.saturating_sub(trainer.steps_done()));
        let mut sum = 0.0f32;
        for _ in 0..n {
            sum += trainer.step();
        }
        let done = trainer.steps_done() >= cfg.steps;
        if n > 0 && reports.send(Report::Loss { steps: trainer.steps_done(), loss: sum / n as f32 }).is_err() {
            return;
        }
        if done || last_snapshot.is_none_or(|t| t.elapsed() >= SNAPSHOT_EVERY) {
            last_snapshot = Some(Instant::now());
            if reports.send(Report::Snapshot(Box::new(trainer.model().clone()))).is_err() {
                return;
            }
        }
        if done {
            let _ = reports.send(Report::Finished);
            // Nothing left to do: wait for the app to let go.
            while control.recv().is_ok() {}
            return;
        }
        if rate.is_finite() && rate > 0.0 {
            let budget = Duration::from_secs_f64(n as f64 / rate);
            if let Some(rest) = budget.checked_sub(started.elapsed()) {
                std::thread::sleep(rest);
            }
        }
    }
}

/// One head's run as the app sees it.
#[derive(Default)]
pub(crate) struct HeadRun {
    worker: Option<Worker>,
    /// Where the run stands.
    pub(crate) state: RunState,
    /// Steps done.
    pub(crate) steps_done: usize,
    /// Steps configured.
    pub(crate) total: usize,
    /// `[step, mean loss]` per report, finite losses only.
    pub(crate) losses: Vec<[f64; 2]>,
}

impl HeadRun {
    /// The most recent loss.
    pub(crate) fn last_loss(&self) -> Option<f64> {
        self.losses.last().map(|p| p[1])
    }

    fn send(&self, msg: Control) {
        if let Some(w) = &self.worker {
            let _ = w.control.send(msg);
        }
    }
}

/// Every head's run, indexed by [`head_index`].
#[derive(Resource, Default)]
pub(crate) struct Training(pub(crate) [HeadRun; 4]);

impl Training {
    /// The run of `head`.
    pub(crate) fn head(&self, head: HeadKind) -> &HeadRun {
        &self.0[head_index(head)]
    }
}

/// Sends [`TrainCommand::Start`] once at startup if asked to.
fn autostart(params: Res<TrainingParams>, mut commands: MessageWriter<TrainCommand>) {
    if params.autostart {
        commands.write(TrainCommand::Start);
    }
}

/// The real arm the residual head should learn to correct for: the plant's.
fn plant_real_arm(nominal: &Nominal, settings: &PlantSettings) -> RealArm {
    settings.real_arm(&nominal.0)
}

/// Applies training commands.
fn handle_commands(
    mut commands: MessageReader<TrainCommand>,
    params: Res<TrainingParams>,
    nominal: Res<Nominal>,
    settings: Res<PlantSettings>,
    mut training: ResMut<Training>,
    mut models: ResMut<Models>,
) {
    for &command in commands.read() {
        for (i, run) in training.0.iter_mut().enumerate() {
            let head = HeadKind::ALL[i];
            match command {
                TrainCommand::Start => match run.state {
                    RunState::Idle | RunState::Failed(_) => {
                        let cfg = params.config(head, nominal.0, plant_real_arm(&nominal, &settings));
                        *run = HeadRun { total: cfg.steps, ..HeadRun::default() };
                        match Worker::spawn(cfg, params.steps_per_sec) {
                            Ok(w) => {
                                run.worker = Some(w);
                                run.state = RunState::Running;
                            }
                            Err(e) => run.state = RunState::Failed(e.to_string()),
                        }
                    }
                    RunState::Paused => {
                        run.send(Control::Resume);
                        run.state = RunState::Running;
                    }
                    RunState::Running | RunState::Finished => {}
                },
                TrainCommand::Pause => {
                    if run.state == RunState::Running {
                        run.send(Control::Pause);
                        run.state = RunState::Paused;
                    }
                }
                TrainCommand::Reset => {
                    *run = HeadRun::default();
                    models.set(head, None);
                }
                TrainCommand::SetLr(lr) => run.send(Control::SetLr(lr)),
                TrainCommand::SetRate(r) => run.send(Control::SetRate(r)),
            }
        }
    }
}

/// Takes in every report that has arrived.
fn collect_reports(mut training: ResMut<Training>, mut models: ResMut<Models>) {
    for (i, run) in training.0.iter_mut().enumerate() {
        let Some(worker) = &mut run.worker else { continue };
        let reports = worker.reports.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut ended = false;
        loop {
            match reports.try_recv() {
                Ok(Report::Loss { steps, loss }) => {
                    run.steps_done = steps;
                    if loss.is_finite() {
                        run.losses.push([steps as f64, loss as f64]);
                    }
                }
                Ok(Report::Snapshot(model)) => models.set(HeadKind::ALL[i], Some(*model)),
                Ok(Report::Finished) => {
                    info!("{} head: training done after {} steps", HeadKind::ALL[i], run.steps_done);
                    run.state = RunState::Finished;
                }
                Ok(Report::Failed(why)) => run.state = RunState::Failed(why),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    ended = true;
                    break;
                }
            }
        }
        if ended {
            if matches!(run.state, RunState::Running | RunState::Paused) {
                run.state = RunState::Failed("training thread stopped".into());
            }
            run.worker = None;
        }
    }
}
