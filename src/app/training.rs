//! Training the two-link heads off the frame: one [`Worker`] per head (the app's one training
//! worker, as the chain's nets use it), each running a [`Trainer`]. The app side turns
//! [`TrainCommand`] messages (from the panel or tests) into [`Control`]s, copies snapshots into
//! [`Models`], which the solvers read, and progress into [`Training`], which the panel shows.
//! Workers are joined on reset and on exit (the app's `AppExit` message, or the world dropped).

use super::AppSet;
use super::state::arm::{Nominal, PlantSettings, closed_form};
use super::state::train::{LoadModel, ModelFile, Models, Run, RunState, TrainCommand, Training, TrainingParams};
use super::worker::{Control, Report, Session, TrainRun, Worker};
use bevy::prelude::*;
use elbow::{HeadKind, LearnedModel, Table, TrainConfig, Trainer};

/// Registers the workers and the systems that command them and collect their reports, and
/// starts training at startup when [`TrainingParams::autostart`] is set.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Workers>()
        .add_systems(Startup, autostart.run_if(closed_form))
        .add_systems(
            Update,
            (handle_commands, load_models.run_if(closed_form), collect_reports).chain().in_set(AppSet::Train),
        )
        .add_systems(Last, join_on_exit);
}

/// A two-link head's training loop for the [`Worker`]: a [`Trainer`] of `cfg`, step by step.
fn head_run(cfg: TrainConfig) -> TrainRun<LearnedModel> {
    /// The trainer as the worker sees it between steps.
    struct Head<'a>(&'a mut Trainer);
    impl Session<LearnedModel> for Head<'_> {
        fn snapshot(&self) -> LearnedModel {
            self.0.model().clone()
        }
        fn set_lr(&mut self, lr: f32) {
            self.0.set_lr(lr);
        }
    }
    Box::new(move |watch| {
        let mut trainer = Trainer::new(cfg).map_err(|e| e.to_string())?;
        while trainer.steps_done() < cfg.steps {
            let loss = trainer.step().map_err(|e| e.to_string())?;
            if !watch(trainer.steps_done(), loss, &mut Head(&mut trainer)) {
                return Ok(None);
            }
        }
        Ok(Some(trainer.model().clone()))
    })
}

/// The live workers, one slot per head.
#[derive(Resource, Default)]
struct Workers(Table<HeadKind, Option<Worker<LearnedModel>>>);

impl Workers {
    /// Ends and joins every worker.
    fn stop_all(&mut self) {
        for (_, worker) in self.0.iter_mut() {
            *worker = None;
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
                        *run = Run { total: cfg.steps, ..Run::default() };
                        match Worker::spawn(format!("train-{head}"), params.steps_per_sec, head_run(cfg)) {
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
                    *run = Run::default();
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
        let shown = super::state::train::file_label(path);
        let loaded = LearnedModel::load(path)
            .map_err(|e| e.to_string())
            .and_then(|m| m.check_fits(&nominal.0, None).map(|()| m));
        let outcome = match loaded {
            Err(e) => Err(format!("{}: {e}", path.display())),
            Ok(m) => {
                let head = m.kind;
                workers.0[head] = None; // joins its training thread, if any
                training.0[head] =
                    Run { state: RunState::Loaded(shown.clone()), loaded_from: Some(path.clone()), ..Run::default() };
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
        let mut ended = false;
        for report in worker.drain(&mut ended) {
            match report {
                Report::Loss { steps, loss } => {
                    run.steps_done = steps;
                    if loss.is_finite() {
                        run.losses.push([steps as f64, loss as f64]);
                    }
                }
                Report::Snapshot(model) => models.set(head, Some(*model)),
                Report::Finished => {
                    info!("{head} head: training done after {} steps", run.steps_done);
                    run.state = RunState::Finished;
                }
                Report::Failed(why) => run.state = RunState::Failed(why),
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
