//! Every frame, every solver answers for the target from the plant's measured pose: both
//! analytic branches, their average, damped least squares and each learned head that has a
//! model. Then the driving solver (optionally inside the safety envelope) picks the command
//! the plant gets; envelope interventions are counted and start a flash.

use super::AppSet;
use super::plant::Sim;
use super::state::{Driver, DriverKind, Nominal, Row};
use super::target::Target;
use super::training::Models;
use bevy::prelude::*;
use elbow::envelope::{InterventionLog, Reason};
use elbow::learned::Candidate;
use elbow::{
    AnalyticSolver, BranchChoice, DlsSolver, ElbowMode, EnvelopeConfig, IkSolver, LearnedIk, LearnedSolver, Point2,
    Pose, SafetyEnvelope, Solution, SolveStatus, TwoLinkArm, solve_branches,
};

/// Registers the solver results and the envelope statistics, and the system that fills them.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<Solutions>()
        .init_resource::<EnvelopeStats>()
        .add_systems(Update, solve_all.in_set(AppSet::Solve));
}

/// How long an intervention flash lasts, seconds.
pub(crate) const FLASH_SECS: f32 = 0.3;

/// One solver's answer this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Readout {
    /// The pose, `None` when the solver has nothing to say (an untrained head).
    pub(crate) pose: Option<Pose>,
    /// What the solver says of it (`None` for the average, which is no solver).
    pub(crate) status: Option<SolveStatus>,
    /// Tip miss on the nominal model (the residual hybrid: on the real arm it was fitted to),
    /// metres; `None` when not finite.
    pub(crate) tip_error: Option<f64>,
    /// Iterations used.
    pub(crate) iterations: u32,
}

/// Every solver's answer this frame, and what goes to the plant.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct Solutions {
    /// One readout per [`Row`], indexed by [`Row::index`].
    pub(crate) rows: [Readout; 8],
    /// The MDN's components with their weights, likeliest first.
    pub(crate) mdn_candidates: Vec<Candidate>,
    /// The pose commanded to the plant (`None`: the driver has no model yet, the plant holds).
    pub(crate) command: Option<Pose>,
    /// The driving solver's status.
    pub(crate) driver_status: Option<SolveStatus>,
    /// The driving solver's name.
    pub(crate) driver_name: String,
    /// Why the envelope rejected this frame's proposal, if it did.
    pub(crate) intervention: Option<Reason>,
    /// Frames solved so far.
    pub(crate) frame: u64,
}

impl Solutions {
    /// The readout of `row`.
    pub(crate) fn row(&self, row: Row) -> &Readout {
        &self.rows[row.index()]
    }
}

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

/// `v` if finite.
pub(crate) fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// The readout of a solution for `target` on `arm`.
fn readout(arm: &TwoLinkArm, target: Point2, s: Solution) -> Readout {
    Readout {
        pose: s.pose.is_finite().then_some(s.pose),
        status: Some(s.status),
        tip_error: finite((arm.tip(s.pose) - target).norm()),
        iterations: s.iterations,
    }
}

/// Runs every solver and the driver.
fn solve_all(
    nominal: Res<Nominal>,
    target: Res<Target>,
    models: Res<Models>,
    sim: Res<Sim>,
    driver: Res<Driver>,
    mut out: ResMut<Solutions>,
    mut stats: ResMut<EnvelopeStats>,
) {
    let arm = nominal.0;
    let t = target.pos;
    let seed = sim.measured;
    let out = &mut *out;

    let fixed = |mode| AnalyticSolver::new(arm, BranchChoice::Fixed(mode)).solve(t, seed);
    out.rows[Row::ElbowUp.index()] = readout(&arm, t, fixed(ElbowMode::Up));
    out.rows[Row::ElbowDown.index()] = readout(&arm, t, fixed(ElbowMode::Down));
    let average = solve_branches(&arm, t).average();
    out.rows[Row::Average.index()] = Readout {
        pose: average.is_finite().then_some(average),
        status: None,
        tip_error: finite((arm.tip(average) - t).norm()),
        iterations: 0,
    };
    let iterative = DlsSolver::new(arm).solve(t, seed);
    out.rows[Row::Iterative.index()] = readout(&arm, t, iterative);

    out.mdn_candidates.clear();
    for row in [Row::Mse, Row::Mdn, Row::Mode, Row::Residual] {
        let model = row.head().and_then(|h| models.get(h));
        out.rows[row.index()] = match model {
            Some(m) => {
                let mut r = readout(&arm, t, LearnedSolver::new(m).solve(t, seed));
                // The hybrid exists to fit the real arm: judge it there.
                if let (Some(real), Some(pose)) = (m.real, r.pose) {
                    r.tip_error = finite((real.tip(pose) - t).norm());
                }
                r
            }
            None => Readout::default(),
        };
        if let (Row::Mdn, Some(m)) = (row, model) {
            out.mdn_candidates = m.predict(t, ElbowMode::of(seed)).candidates;
        }
    }

    out.intervention = None;
    out.driver_name = driver.name();
    let command = match driver.kind {
        DriverKind::Analytic => Some(AnalyticSolver::new(arm, BranchChoice::NearestToSeed).solve(t, seed)),
        DriverKind::Iterative => Some(iterative),
        DriverKind::Learned => models.get(driver.head).map(|m| {
            let learned = LearnedSolver::new(m);
            if driver.envelope {
                let vetted = SafetyEnvelope::new(learned, arm, EnvelopeConfig::for_arm(&arm)).vet(t, seed);
                stats.log.record(vetted.intervention);
                if let Some(reason) = vetted.intervention {
                    stats.flash = FLASH_SECS;
                    stats.last = Some(reason);
                }
                out.intervention = vetted.intervention;
                vetted.solution
            } else {
                learned.solve(t, seed)
            }
        }),
    };
    out.command = command.map(|s| s.pose).filter(|p| p.is_finite());
    out.driver_status = command.map(|s| s.status);
    out.frame += 1;
}
