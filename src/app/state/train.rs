//! Models and training: the latest snapshot of each head, the training parameters and runs the
//! panel shows, and the messages that command training and load model files.

use bevy::prelude::*;
use elbow::{HeadKind, LearnedModel, RealArm, Table, TrainConfig, TwoLinkArm};

/// Registers the models, the training parameters and runs, the model-file field, and the
/// training and loading messages.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Models>()
        .init_resource::<Training>()
        .init_resource::<TrainingParams>()
        .init_resource::<ModelFile>()
        .add_message::<TrainCommand>()
        .add_message::<LoadModel>();
}

/// The latest snapshot of each head; `None` until one arrives.
#[derive(Resource, Clone, Default)]
pub(crate) struct Models(pub(crate) Table<HeadKind, Option<LearnedModel>>);

impl Models {
    /// The latest model of `head`.
    pub(crate) fn get(&self, head: HeadKind) -> Option<&LearnedModel> {
        self.0[head].as_ref()
    }

    /// A copy of every head's model, in [`HeadKind::ALL`] order, or why not (a head without
    /// one yet).
    pub(crate) fn every(&self) -> Result<Vec<LearnedModel>, String> {
        HeadKind::ALL
            .iter()
            .map(|&h| self.get(h).cloned().ok_or_else(|| format!("waiting for the {h} head's first model")))
            .collect()
    }

    /// Replaces the model of `head`.
    pub(crate) fn set(&mut self, head: HeadKind, model: Option<LearnedModel>) {
        self.0[head] = model;
    }
}

/// Training parameters shared by all heads. Sizes and the seed apply from the next start after
/// a reset; learning rate and speed apply live. Defaults come from [`TrainConfig::default`].
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct TrainingParams {
    /// Start every head at startup.
    pub(crate) autostart: bool,
    /// Speed limit per head, steps per second (keeps the CPU free for the frame).
    pub(crate) steps_per_sec: f64,
    /// Everything else, as the core defines it (head and real arm are set per run).
    pub(crate) config: TrainConfig,
}

impl Default for TrainingParams {
    fn default() -> Self {
        Self { autostart: true, steps_per_sec: 1500.0, config: TrainConfig::default() }
    }
}

impl TrainingParams {
    /// The core configuration for `head` on `arm`; heads that fit the real arm fit `real`.
    pub(crate) fn config(&self, head: HeadKind, arm: TwoLinkArm, real: RealArm) -> TrainConfig {
        TrainConfig { head, arm, real, ..self.config }
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

/// Load a model file in place of its head's training (the panel's button, `elbow --model`).
#[derive(Message, Debug, Clone, PartialEq)]
pub(crate) struct LoadModel(pub(crate) std::path::PathBuf);

/// The panel's model-file field and the outcome of the last load.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelFile {
    /// The path typed in the panel.
    pub(crate) path: String,
    /// What the last load said: `Ok` with what was loaded, `Err` with why not.
    pub(crate) outcome: Option<Result<String, String>>,
}

/// How a model file is named in the panel: its file name (its whole path when it has none).
pub(crate) fn file_label(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
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
    /// A model loaded from this file; training leaves it alone until a reset.
    Loaded(String),
    /// The configuration was refused, or the thread stopped.
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
            RunState::Loaded(file) => format!("loaded from {file}"),
            RunState::Failed(why) => format!("stopped: {why}"),
        }
    }
}

/// One net's training as the app shows it: a two-link head's or a chain net's (one run state
/// for every net the app trains).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Run {
    /// Where the run stands.
    pub(crate) state: RunState,
    /// Steps done.
    pub(crate) steps_done: usize,
    /// Steps configured.
    pub(crate) total: usize,
    /// `[step, mean loss]` per report, finite losses only.
    pub(crate) losses: Vec<[f64; 2]>,
    /// The model file the head was loaded from, when it was (a view file lists them).
    pub(crate) loaded_from: Option<std::path::PathBuf>,
}

impl Run {
    /// The most recent loss.
    pub(crate) fn last_loss(&self) -> Option<f64> {
        self.losses.last().map(|p| p[1])
    }
}

/// Steps done, steps in all, and whether any is running, over `runs`.
pub(crate) fn progress<'r>(runs: impl Iterator<Item = &'r Run>) -> (usize, usize, bool) {
    runs.fold((0, 0, false), |(d, t, on), r| (d + r.steps_done, t + r.total, on || r.state == RunState::Running))
}

/// Every head's training run.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct Training(pub(crate) Table<HeadKind, Run>);

impl Training {
    /// The run of `head`.
    pub(crate) fn head(&self, head: HeadKind) -> &Run {
        &self.0[head]
    }
}
