//! Every resource and message the plugins share, in one place, so that plugins depend on this
//! module (and [`super::format`]) and never on each other.
//!
//! Per-solver and per-head data live in [`Table`]s keyed by [`SolverId`] and [`HeadKind`], so a
//! new head gets its row, model slot, training run and toggle without touching this file.

use bevy::prelude::*;
use elbow::atlas::{Atlas, Layer};
use elbow::envelope::{InterventionLog, Reason};
use elbow::experiments::degradation::Channel;
use elbow::learned::Candidate;
use elbow::{
    HeadKind, LearnedModel, Mismatch, Pipeline, Plant, PlantConfig, Point2, Pose, RealArm, Solution, SolveStatus,
    SolverId, Table, TrainConfig, TwoLinkArm, solve_branches,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Registers every shared resource with its default, and the shared messages.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Nominal>()
        .init_resource::<Driver>()
        .init_resource::<Shown>()
        .init_resource::<Target>()
        .init_resource::<Solutions>()
        .init_resource::<EnvelopeStats>()
        .init_resource::<PlantSettings>()
        .init_resource::<TipHistory>()
        .init_resource::<Sim>()
        .init_resource::<Models>()
        .init_resource::<Training>()
        .init_resource::<TrainingParams>()
        .init_resource::<PanelWidth>()
        .init_resource::<AtlasView>()
        .init_resource::<Hover>()
        .init_resource::<LiveSweep>()
        .add_message::<PointerDrag>()
        .init_resource::<ModelFile>()
        .add_message::<TrainCommand>()
        .add_message::<LoadModel>();
}

/// The nominal arm model every solver plans on (the plant's real arm differs from it).
#[derive(Resource, Debug, Clone, Copy, Default)]
pub(crate) struct Nominal(pub(crate) TwoLinkArm);

/// Which pipeline's answer is sent to the plant: a solver, inside the envelope or not.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Driver(pub(crate) Pipeline);

impl Default for Driver {
    fn default() -> Self {
        Self(Pipeline::plain(SolverId::Learned(HeadKind::Mdn)))
    }
}

/// Which ghost arms are drawn.
#[derive(Resource, Debug, Clone, PartialEq)]
pub(crate) struct Shown(pub(crate) Table<SolverId, bool>);

impl Default for Shown {
    fn default() -> Self {
        use SolverId::*;
        let on = [ElbowUp, ElbowDown, Average, Learned(HeadKind::Mse), Learned(HeadKind::Mdn)];
        Self(Table::from_fn(|id| on.contains(&id)))
    }
}

/// Where the target starts: a point where the two elbow branches are far apart, so the average
/// of them (the MSE head's answer) visibly misses.
pub(crate) const DEFAULT_TARGET: Point2 = Point2::new(1.0, 0.8);

/// The pointer is held down at this world-space point (metres) this frame.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub(crate) struct PointerDrag(pub(crate) Point2);

/// The point every solver aims at.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct Target {
    /// Position, metres.
    pub(crate) pos: Point2,
    /// Follow the figure-eight sweep (a drag turns it off).
    pub(crate) sweep: bool,
    /// Sweep speed, radians of the path parameter per second.
    pub(crate) speed: f64,
    /// Current path parameter of the sweep.
    pub(crate) phase: f64,
}

impl Default for Target {
    fn default() -> Self {
        Self { pos: DEFAULT_TARGET, sweep: false, speed: 0.35, phase: 0.0 }
    }
}

/// One solver's answer this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Readout {
    /// The pose, `None` when the solver has nothing to say (an untrained head).
    pub(crate) pose: Option<Pose>,
    /// What the solver says of it.
    pub(crate) status: Option<SolveStatus>,
    /// Tip miss on the arm the solver is judged on (the nominal model; the real arm for heads
    /// that fit it), metres; `None` when not finite.
    pub(crate) tip_error: Option<f64>,
    /// Iterations used.
    pub(crate) iterations: u32,
}

/// Every solver's answer this frame, and what goes to the plant.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct Solutions {
    /// One readout per solver.
    pub(crate) rows: Table<SolverId, Readout>,
    /// Every head's candidates with their weights, likeliest first (the MDN: one per component).
    pub(crate) candidates: Table<HeadKind, Vec<Candidate>>,
    /// The driving solver's own answer, before any envelope.
    pub(crate) proposal: Option<Solution>,
    /// The pose commanded to the plant (`None`: the driver has no model yet, the plant holds).
    pub(crate) command: Option<Pose>,
    /// The status of what goes to the plant.
    pub(crate) driver_status: Option<SolveStatus>,
    /// The driving pipeline's label.
    pub(crate) driver_name: String,
    /// Why the envelope rejected this frame's proposal, if it did.
    pub(crate) intervention: Option<Reason>,
    /// Frames solved so far.
    pub(crate) frame: u64,
}

impl Solutions {
    /// The readout of `id`.
    pub(crate) fn row(&self, id: SolverId) -> &Readout {
        &self.rows[id]
    }
}

/// How long an intervention flash lasts, seconds.
pub(crate) const FLASH_SECS: f32 = 0.3;

/// The envelope's running tally and flash.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct EnvelopeStats {
    /// Decisions so far, by reason.
    pub(crate) log: InterventionLog,
    /// Seconds of flash left.
    pub(crate) flash: f32,
    /// The reason of the latest intervention.
    pub(crate) last: Option<Reason>,
}

/// The plant knobs the panel exposes. Every value is clamped to its range before use.
#[derive(Resource, Debug, Clone, Copy, PartialEq)]
pub(crate) struct PlantSettings {
    /// Encoder noise standard deviation, radians.
    pub(crate) noise_std: f64,
    /// Backlash half-width, radians.
    pub(crate) backlash: f64,
    /// Motor time constant, seconds.
    pub(crate) lag: f64,
    /// Relative link length errors of the real arm.
    pub(crate) length_error: [f64; 2],
    /// Joint offsets of the real arm (shoulder, elbow), radians.
    pub(crate) joint_offset: [f64; 2],
}

/// Slider ranges of the plant knobs.
pub(crate) mod range {
    use std::ops::RangeInclusive;
    /// Encoder noise, radians.
    pub(crate) const NOISE: RangeInclusive<f64> = 0.0..=0.05;
    /// Backlash half-width, radians.
    pub(crate) const BACKLASH: RangeInclusive<f64> = 0.0..=0.1;
    /// Motor lag, seconds.
    pub(crate) const LAG: RangeInclusive<f64> = 0.0..=0.5;
    /// Relative link length error.
    pub(crate) const LENGTH_ERROR: RangeInclusive<f64> = -0.2..=0.2;
    /// Joint offset, radians.
    pub(crate) const OFFSET: RangeInclusive<f64> = -0.2..=0.2;
}

impl Default for PlantSettings {
    /// The core's default mismatch, so the residual head trains against the plant it drives.
    fn default() -> Self {
        let m = Mismatch::DEFAULT;
        Self {
            noise_std: 0.002,
            backlash: 0.0,
            lag: 0.06,
            length_error: m.length_error,
            joint_offset: [m.joint_offsets.shoulder, m.joint_offsets.elbow],
        }
    }
}

/// `v` clamped into `range`; non-finite values become 0 clamped into it.
fn clamp(v: f64, range: &std::ops::RangeInclusive<f64>) -> f64 {
    let v = if v.is_finite() { v } else { 0.0 };
    v.clamp(*range.start(), *range.end())
}

impl PlantSettings {
    /// No noise, backlash, lag or mismatch.
    pub(crate) const IDEAL: PlantSettings =
        PlantSettings { noise_std: 0.0, backlash: 0.0, lag: 0.0, length_error: [0.0; 2], joint_offset: [0.0; 2] };

    /// Every knob clamped into its range.
    pub(crate) fn sanitized(&self) -> Self {
        Self {
            noise_std: clamp(self.noise_std, &range::NOISE),
            backlash: clamp(self.backlash, &range::BACKLASH),
            lag: clamp(self.lag, &range::LAG),
            length_error: self.length_error.map(|e| clamp(e, &range::LENGTH_ERROR)),
            joint_offset: self.joint_offset.map(|o| clamp(o, &range::OFFSET)),
        }
    }

    /// The mismatch these settings describe.
    pub(crate) fn mismatch(&self) -> Mismatch {
        let s = self.sanitized();
        Mismatch { length_error: s.length_error, joint_offsets: Pose::new(s.joint_offset[0], s.joint_offset[1]) }
    }

    /// The real arm these settings describe for `nominal`.
    pub(crate) fn real_arm(&self, nominal: &TwoLinkArm) -> RealArm {
        self.mismatch().real_arm(nominal)
    }

    /// The plant configuration for `nominal`.
    pub(crate) fn config(&self, nominal: &TwoLinkArm) -> PlantConfig {
        let s = self.sanitized();
        PlantConfig {
            real: self.real_arm(nominal),
            backlash: s.backlash,
            lag: s.lag,
            noise_std: s.noise_std,
            seed: 7,
            ..PlantConfig::ideal(*nominal)
        }
    }
}

/// The plant and its latest encoder reading (the seed of every solver).
#[derive(Resource, Debug, Clone)]
pub(crate) struct Sim {
    /// The simulated arm.
    pub(crate) plant: Plant,
    /// What the encoders read at the end of the last frame.
    pub(crate) measured: Pose,
}

impl Sim {
    /// A plant at rest in `pose`.
    pub(crate) fn new(cfg: PlantConfig, pose: Pose) -> Self {
        let plant = Plant::new(cfg, pose);
        Self { measured: plant.link_pose(), plant }
    }
}

impl FromWorld for Sim {
    /// The plant for the world's nominal arm and settings, resting on the elbow-down answer for
    /// the default target.
    fn from_world(world: &mut World) -> Self {
        let nominal = world.get_resource::<Nominal>().copied().unwrap_or_default().0;
        let settings = world.get_resource::<PlantSettings>().copied().unwrap_or_default();
        Sim::new(settings.config(&nominal), solve_branches(&nominal, DEFAULT_TARGET).down)
    }
}

/// Seconds of tip error kept for the plot.
pub(crate) const HISTORY_SECS: f64 = 15.0;

/// Rolling `[time s, plant tip error m]` samples over the last [`HISTORY_SECS`].
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct TipHistory(pub(crate) VecDeque<[f64; 2]>);

/// The latest snapshot of each head; `None` until one arrives.
#[derive(Resource, Clone, Default)]
pub(crate) struct Models(pub(crate) Table<HeadKind, Option<LearnedModel>>);

impl Models {
    /// The latest model of `head`.
    pub(crate) fn get(&self, head: HeadKind) -> Option<&LearnedModel> {
        self.0[head].as_ref()
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
            RunState::Failed(why) => format!("failed: {why}"),
        }
    }
}

/// One head's training as the app shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HeadRun {
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
}

/// Every head's training run.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct Training(pub(crate) Table<HeadKind, HeadRun>);

impl Training {
    /// The run of `head`.
    pub(crate) fn head(&self, head: HeadKind) -> &HeadRun {
        &self.0[head]
    }
}

/// Width of the egui side panel in logical pixels, written by the panel each frame.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct PanelWidth(pub(crate) f32);

/// Where the pointer is over the world viewport (metres), pressed or not; `None` off it.
#[derive(Resource, Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Hover(pub(crate) Option<Point2>);

/// The workspace atlas: what to map, how, and the latest map.
#[derive(Resource, Debug, Clone)]
pub(crate) struct AtlasView {
    /// Draw the heatmap under the arm.
    pub(crate) on: bool,
    /// Map the driving solver (else [`AtlasView::solver`]).
    pub(crate) follow_driver: bool,
    /// The solver mapped when not following the driver.
    pub(crate) solver: SolverId,
    /// The layer painted.
    pub(crate) layer: Layer,
    /// Cells per side.
    pub(crate) resolution: usize,
    /// The latest finished map.
    pub(crate) latest: Option<Arc<Atlas>>,
    /// Wall time of the latest map, milliseconds.
    pub(crate) compute_ms: f64,
    /// Maps finished so far (the heatmap repaints when it changes).
    pub(crate) generation: u64,
    /// A map is being computed.
    pub(crate) busy: bool,
}

impl Default for AtlasView {
    fn default() -> Self {
        Self {
            on: true,
            follow_driver: true,
            solver: SolverId::Learned(HeadKind::Mse),
            layer: Layer::Miss,
            resolution: 128,
            latest: None,
            compute_ms: 0.0,
            generation: 0,
            busy: false,
        }
    }
}

impl AtlasView {
    /// Cells per side, clamped to what the app draws (16 to 512).
    pub(crate) fn cells_per_side(&self) -> usize {
        self.resolution.clamp(16, 512)
    }

    /// The solver mapped, given the driving pipeline.
    pub(crate) fn mapped(&self, driver: Pipeline) -> SolverId {
        if self.follow_driver { driver.solver } else { self.solver }
    }
}

/// A computation on its own thread; the frame only polls it. Dropping it waits for the thread,
/// so no work outlives the app.
#[derive(Debug)]
pub(crate) struct Background<T> {
    handle: Option<JoinHandle<T>>,
}

impl<T> Default for Background<T> {
    fn default() -> Self {
        Self { handle: None }
    }
}

impl<T: Send + 'static> Background<T> {
    /// Whether a computation is running.
    pub(crate) fn busy(&self) -> bool {
        self.handle.is_some()
    }

    /// Starts `work` on a new thread; the caller checks [`Background::busy`] first.
    pub(crate) fn start(&mut self, work: impl FnOnce() -> T + Send + 'static) {
        self.handle = Some(std::thread::spawn(work));
    }

    /// The result once the thread has finished (never blocks): `Some(Err)` if it panicked.
    pub(crate) fn poll(&mut self) -> Option<Result<T, String>> {
        if !self.handle.as_ref().is_some_and(JoinHandle::is_finished) {
            return None;
        }
        self.handle.take().map(|h| h.join().map_err(|_| "the computation stopped unexpectedly".to_string()))
    }
}

impl<T> Drop for Background<T> {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// What a keyboard shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shortcut {
    /// This learned head drives the plant.
    Head(HeadKind),
    /// The safety envelope on or off.
    Envelope,
    /// The atlas on or off.
    Atlas,
    /// The next atlas layer.
    Layer,
    /// Pause training if a head is running, else start or resume it.
    Training,
}

/// The number keys, `1` to `9`: the n-th head of [`HeadKind::ALL`] (the head registry) is driven
/// by the n-th.
const DIGITS: [(KeyCode, &str); 9] = [
    (KeyCode::Digit1, "1"),
    (KeyCode::Digit2, "2"),
    (KeyCode::Digit3, "3"),
    (KeyCode::Digit4, "4"),
    (KeyCode::Digit5, "5"),
    (KeyCode::Digit6, "6"),
    (KeyCode::Digit7, "7"),
    (KeyCode::Digit8, "8"),
    (KeyCode::Digit9, "9"),
];

/// The shortcuts that are not heads.
const TOGGLES: [(KeyCode, &str, Shortcut); 4] = [
    (KeyCode::KeyE, "E", Shortcut::Envelope),
    (KeyCode::KeyA, "A", Shortcut::Atlas),
    (KeyCode::KeyL, "L", Shortcut::Layer),
    (KeyCode::Space, "Space", Shortcut::Training),
];

/// Every shortcut with its key and what it does, for the panel and the README: a number key per
/// head of the registry, in its order, then the toggles.
pub(crate) const SHORTCUTS: [(KeyCode, &str, Shortcut); HeadKind::COUNT + TOGGLES.len()] = {
    assert!(HeadKind::COUNT <= DIGITS.len(), "more heads than number keys");
    let mut all = [TOGGLES[0]; HeadKind::COUNT + TOGGLES.len()];
    let mut i = 0;
    while i < HeadKind::COUNT {
        all[i] = (DIGITS[i].0, DIGITS[i].1, Shortcut::Head(HeadKind::ALL[i]));
        i += 1;
    }
    let mut t = 0;
    while t < TOGGLES.len() {
        all[HeadKind::COUNT + t] = TOGGLES[t];
        t += 1;
    }
    all
};

impl Shortcut {
    /// What the shortcut does, in a few words.
    pub(crate) fn describe(self) -> String {
        match self {
            Shortcut::Head(h) => format!("drive with {}", h.spec().short),
            Shortcut::Envelope => "safety envelope on/off".into(),
            Shortcut::Atlas => "atlas on/off".into(),
            Shortcut::Layer => "next atlas layer".into(),
            Shortcut::Training => "pause training, or start/resume it".into(),
        }
    }
}

/// The perturbation channel the live degradation plot sweeps: one of the two sliders at the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SweepChannel {
    /// Encoder noise.
    #[default]
    Encoder,
    /// Backlash.
    Backlash,
}

impl SweepChannel {
    /// Both, in menu order.
    pub(crate) const ALL: [SweepChannel; 2] = [SweepChannel::Encoder, SweepChannel::Backlash];

    /// The core's channel.
    pub(crate) fn channel(self) -> Channel {
        match self {
            SweepChannel::Encoder => Channel::Encoder,
            SweepChannel::Backlash => Channel::Backlash,
        }
    }

    /// The slider's range, swept from 0 to its end.
    pub(crate) fn range(self) -> std::ops::RangeInclusive<f64> {
        match self {
            SweepChannel::Encoder => range::NOISE,
            SweepChannel::Backlash => range::BACKLASH,
        }
    }

    /// The slider's current value.
    pub(crate) fn current(self, plant: &PlantSettings) -> f64 {
        let s = plant.sanitized();
        match self {
            SweepChannel::Encoder => s.noise_std,
            SweepChannel::Backlash => s.backlash,
        }
    }
}

/// Held-out targets per level of the live degradation sweep: enough for smooth curves within a
/// second.
pub(crate) const SWEEP_TARGETS: usize = 1500;

/// One pipeline's curve: `[level, value]` points.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    /// The pipeline.
    pub(crate) pipeline: Pipeline,
    /// Mean tip error on held-out targets, metres.
    pub(crate) error: Vec<[f64; 2]>,
    /// Silent-failure rate on held-out targets.
    pub(crate) silent: Vec<[f64; 2]>,
}

/// The live degradation sweep: every solver's error and silent-failure rate against the level
/// of one channel, recomputed in the background as the sliders and the models change.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct LiveSweep {
    /// The channel swept.
    pub(crate) channel: SweepChannel,
    /// The latest curves, and the channel they sweep.
    pub(crate) latest: Option<(SweepChannel, Arc<Vec<Curve>>)>,
    /// Wall time of the latest sweep, milliseconds.
    pub(crate) compute_ms: f64,
    /// A sweep is running.
    pub(crate) busy: bool,
    /// Why no sweep can run yet (a head without a model), or why the last one failed.
    pub(crate) note: Option<String>,
}
