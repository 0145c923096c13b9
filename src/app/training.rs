//! Background training: one thread per learned head, so the frame never waits on a minibatch.
//!
//! Each worker owns a [`Trainer`] and talks to the app over two channels: [`Control`] messages
//! in (pause, resume, learning rate, speed), [`Report`]s out (mean loss per chunk of steps,
//! model snapshots a few times a second, completion or failure). The app side turns
//! [`TrainCommand`] messages (from the panel or tests) into these, copies snapshots into
//! [`Models`], which the solvers read, and progress into [`Training`], which the panel shows.
//!
//! Workers are joined, never left detached: dropping a [`Worker`] closes its channel, which
//! wakes the thread wherever it waits, and then waits for it to end. That happens on reset, and
//! on exit (the app's `AppExit` message, or the world being dropped).

use super::AppSet;
use super::state::arm::{Nominal, PlantSettings, two_link_lab};
use super::state::train::{HeadRun, LoadModel, ModelFile, Models, RunState, TrainCommand, Training, TrainingParams};
use bevy::prelude::*;
use elbow::{HeadKind, LearnedModel, Table, TrainConfig, Trainer};
use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Registers the workers and the systems that command them and collect their reports, and
/// starts training at startup when [`TrainingParams::autostart`] is set.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Workers>()
        .add_systems(Startup, autostart.run_if(two_link_lab))
        .add_systems(Update, (handle_commands, load_models, collect_reports).chain().in_set(AppSet::Train))
        .add_systems(Last, join_on_exit);
}

/// Steps per loss report.
const CHUNK: usize = 10;
/// Least time between two model snapshots.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);
/// The slowest speed limit a worker honours, steps per second (slower limits are raised to it,
/// so a worker never sleeps for long).
const MIN_RATE: f64 = 10.0;

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

/// The app's end of one worker thread; dropping it ends and joins the thread.
struct Worker {
    control: Option<Sender<Control>>,
    reports: Mutex<Receiver<Report>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Spawns a thread training `cfg` at up to `rate` steps per second.
    fn spawn(cfg: TrainConfig, rate: f64) -> std::io::Result<Self> {
        let (control, control_rx) = mpsc::channel();
        let (report_tx, reports) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(format!("train-{}", cfg.head))
            .spawn(move || work(cfg, rate, &control_rx, &report_tx))?;
        Ok(Self { control: Some(control), reports: Mutex::new(reports), thread: Some(thread) })
    }

    fn send(&self, msg: Control) {
        if let Some(control) = &self.control {
            let _ = control.send(msg);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        drop(self.control.take()); // wakes the thread: its next receive sees the channel closed
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The live workers, one slot per head.
#[derive(Resource, Default)]
struct Workers(Table<HeadKind, Option<Worker>>);

impl Workers {
    /// Ends and joins every worker.
    fn stop_all(&mut self) {
        for (_, worker) in self.0.iter_mut() {
            *worker = None;
        }
    }
}

/// A speed limit as the worker honours it: `None` for no limit.
fn sane_rate(rate: f64) -> Option<f64> {
    (rate.is_finite() && rate > 0.0).then(|| rate.max(MIN_RATE))
}

/// Applies one control message; `paused` and `rate` are the worker's state.
fn apply(msg: Control, trainer: &mut Trainer, paused: &mut bool, rate: &mut f64) {
    match msg {
        Control::Pause => *paused = true,
        Control::Resume => *paused = false,
        Control::SetLr(lr) => trainer.set_lr(lr),
        Control::SetRate(r) => *rate = r,
    }
}

/// A worker thread's loop; returns when the app drops its end of the control channel.
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
                Ok(msg) => apply(msg, &mut trainer, &mut paused, &mut rate),
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
        // Keep to the speed limit, waking at once for a message (or the app letting go).
        if let Some(limit) = sane_rate(rate)
            && let Some(rest) = Duration::from_secs_f64(n as f64 / limit).checked_sub(started.elapsed())
        {
            match control.recv_timeout(rest) {
                Ok(msg) => apply(msg, &mut trainer, &mut paused, &mut rate),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

/// Sends [`TrainCommand::Start`] once at startup if asked to.
fn autostart(params: Res<TrainingParams>, mut commands: MessageWriter<TrainCommand>) {
    if params.autostart {
        commands.write(TrainCommand::Start);
    }
}

/// Applies training commands.
#[allow(clippy::too_many_arguments)]
fn handle_commands(
    mut commands: MessageReader<TrainCommand>,
    params: Res<TrainingParams>,
    nominal: Res<Nominal>,
    settings: Res<PlantSettings>,
    mut training: ResMut<Training>,
    mut workers: ResMut<Workers>,
    mut models: ResMut<Models>,
) {
    for &command in commands.read() {
        for head in HeadKind::ALL {
            let run = &mut training.0[head];
            let worker = &mut workers.0[head];
            let send = |msg| worker.as_ref().inspect(|w| w.send(msg)).is_some();
            match command {
                TrainCommand::Start => match run.state {
                    RunState::Idle | RunState::Failed(_) => {
                        // The residual head learns the mismatch of the plant it drives.
                        let cfg = params.config(head, nominal.0, settings.real_arm(&nominal.0));
                        *run = HeadRun { total: cfg.steps, ..HeadRun::default() };
                        match Worker::spawn(cfg, params.steps_per_sec) {
                            Ok(w) => {
                                *worker = Some(w);
                                run.state = RunState::Running;
                            }
                            Err(e) => run.state = RunState::Failed(e.to_string()),
                        }
                    }
                    RunState::Paused => {
                        send(Control::Resume);
                        run.state = RunState::Running;
                    }
                    RunState::Running | RunState::Finished | RunState::Loaded(_) => {}
                },
                TrainCommand::Pause => {
                    if run.state == RunState::Running {
                        send(Control::Pause);
                        run.state = RunState::Paused;
                    }
                }
                TrainCommand::Reset => {
                    *worker = None; // joins the thread
                    *run = HeadRun::default();
                    models.set(head, None);
                }
                TrainCommand::SetLr(lr) => {
                    send(Control::SetLr(lr));
                }
                TrainCommand::SetRate(r) => {
                    send(Control::SetRate(r));
                }
            }
        }
    }
}

/// Loads model files: a valid model for the nominal arm replaces its head's model and stops
/// that head's training; anything else is reported in [`ModelFile`] and changes nothing.
fn load_models(
    mut loads: MessageReader<LoadModel>,
    nominal: Res<Nominal>,
    mut file: ResMut<ModelFile>,
    mut training: ResMut<Training>,
    mut workers: ResMut<Workers>,
    mut models: ResMut<Models>,
) {
    for LoadModel(path) in loads.read() {
        let shown = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let loaded = LearnedModel::load(path)
            .map_err(|e| e.to_string())
            .and_then(|m| m.check_fits(&nominal.0, None).map(|()| m));
        let outcome = match loaded {
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(m) => {
                let head = m.kind;
                workers.0[head] = None; // joins its training thread, if any
                training.0[head] = HeadRun {
                    state: RunState::Loaded(shown.clone()),
                    loaded_from: Some(path.clone()),
                    ..HeadRun::default()
                };
                models.set(head, Some(m));
                Ok(format!("{head} head loaded from {shown}"))
            }
        };
        file.outcome = Some(outcome);
    }
}

/// Takes in every report that has arrived.
fn collect_reports(mut training: ResMut<Training>, mut workers: ResMut<Workers>, mut models: ResMut<Models>) {
    for head in HeadKind::ALL {
        let run = &mut training.0[head];
        let slot = &mut workers.0[head];
        let Some(worker) = slot else { continue };
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
                Ok(Report::Snapshot(model)) => models.set(head, Some(*model)),
                Ok(Report::Finished) => {
                    info!("{head} head: training done after {} steps", run.steps_done);
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
            *slot = None;
        }
    }
}

/// Ends and joins every worker when the app exits.
fn join_on_exit(mut exits: MessageReader<AppExit>, mut workers: ResMut<Workers>) {
    if exits.read().next().is_some() {
        workers.stop_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropping_a_worker_joins_its_thread_even_mid_wait() {
        let cfg =
            TrainConfig { steps: 1_000_000, data_size: 256, batch: 16, hidden: 4, depth: 1, ..TrainConfig::default() };
        for paused in [false, true] {
            // A slow speed limit: the worker spends its time waiting between chunks; paused, it
            // waits for a message with no timeout at all.
            let mut worker = Worker::spawn(cfg, 0.001).expect("spawns");
            let (_, stand_in) = mpsc::channel();
            let reports = std::mem::replace(&mut worker.reports, Mutex::new(stand_in));
            let reports = reports.into_inner().expect("not poisoned");
            assert!(reports.recv().is_ok(), "the worker reports its first chunk");
            if paused {
                worker.send(Control::Pause);
            }
            // Dropped on another thread, watched from this one: a worker that dropping does not
            // wake never ends (paused), so the watch fails rather than waiting forever; a woken
            // one ends at once, so the watch's ten minutes are a hang guard, not a speed check.
            let (dropped, watch) = mpsc::channel();
            std::thread::spawn(move || {
                drop(worker);
                let _ = dropped.send(());
            });
            assert!(watch.recv_timeout(Duration::from_secs(600)).is_ok(), "not woken (paused: {paused})");
            // Joined: the thread has ended when the drop returns, so its report sender is gone.
            while reports.try_recv().is_ok() {}
            assert!(matches!(reports.try_recv(), Err(TryRecvError::Disconnected)), "not joined (paused: {paused})");
        }
        assert_eq!(sane_rate(0.001), Some(MIN_RATE));
        assert_eq!(sane_rate(f64::NAN), None);
        assert_eq!(sane_rate(0.0), None);
    }
}
