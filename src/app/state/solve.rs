//! The driver and this frame's answers: which pipeline drives the plant, which ghost arms are
//! drawn, every solver's readout, the command, and the envelope's tally.

use bevy::prelude::*;
use elbow::Point2;
use elbow::envelope::{InterventionLog, Reason};
use elbow::learned::Candidate;
use elbow::learned::branch::BranchChange;
use elbow::{HeadKind, Pipeline, Pose, Solution, SolveStatus, SolverId, Table};

/// Registers the driver, the ghost toggles, this frame's answers and the envelope's tally.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Driver>()
        .init_resource::<Shown>()
        .init_resource::<Solutions>()
        .init_resource::<EnvelopeStats>()
        .init_resource::<BranchLog>()
        .init_resource::<Command>();
}

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
    /// Why the driving head's pick changes elbow branch this frame, when it does.
    pub(crate) branch_change: Option<BranchChange>,
    /// Frames solved so far.
    pub(crate) frame: u64,
}

impl Solutions {
    /// The readout of `id`.
    pub(crate) fn row(&self, id: SolverId) -> &Readout {
        &self.rows[id]
    }
}

/// What goes to the plant this frame, coordinate by coordinate, on any arm (`None`: the driver
/// has no answer yet, and the plant holds): the envelope's decision on an arm with a closed
/// form (or the feedback head's command while it drives), the driver's walked answer on a chain.
#[derive(Resource, Debug, Clone, Default, PartialEq)]
pub(crate) struct Command(pub(crate) Option<Vec<f64>>);

impl Command {
    /// A two-link pose as the command.
    pub(crate) fn pose(pose: Option<Pose>) -> Self {
        Self(pose.map(|p| p.coords().to_vec()))
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

/// How long the canvas marks a branch change, seconds.
pub(crate) const BRANCH_MARK_SECS: f64 = 12.0;

/// One change of elbow branch in what went to the plant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BranchEvent {
    /// The target when it happened, metres.
    pub(crate) at: Point2,
    /// App time when it happened, seconds.
    pub(crate) when: f64,
    /// Why, in one sentence.
    pub(crate) why: String,
}

/// The branch changes of the command sent to the plant: how many, and the latest.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct BranchLog {
    /// The last pose commanded.
    pub(crate) last_command: Option<Pose>,
    /// Branch changes so far.
    pub(crate) count: u32,
    /// The latest one.
    pub(crate) latest: Option<BranchEvent>,
    /// True while a lesson that stages a branch change is open: the latest change stays marked
    /// (ring and reason) until the next one, instead of fading after [`BRANCH_MARK_SECS`].
    pub(crate) hold: bool,
}

impl BranchLog {
    /// The change marked on the canvas and in the panel at app time `now`, with its age in
    /// seconds: the latest, for [`BRANCH_MARK_SECS`], or for good while [`BranchLog::hold`].
    pub(crate) fn marked(&self, now: f64) -> Option<(&BranchEvent, f64)> {
        let event = self.latest.as_ref()?;
        let age = now - event.when;
        (age >= 0.0 && (self.hold || age < BRANCH_MARK_SECS)).then_some((event, age))
    }

    /// How strongly the mark is drawn at `age` seconds: from 1 down to 0.3 over
    /// [`BRANCH_MARK_SECS`]; while held, no fainter than 0.6.
    pub(crate) fn mark_alpha(&self, age: f64) -> f32 {
        let alpha = (1.0 - 0.7 * (age / BRANCH_MARK_SECS).clamp(0.0, 1.0)) as f32;
        if self.hold { alpha.max(0.6) } else { alpha }
    }
}
