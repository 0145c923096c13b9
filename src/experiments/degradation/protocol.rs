//! The two protocols, one pipeline over one target set in one setting, and what each pipeline
//! may honestly report.
//!
//! **Honest reporting.** A classical pipeline (analytic, DLS) may use what it can measure: its
//! own residual (its status) and, in the plant protocol, the encoders after the move: it reads
//! them once more and reports a failure when the FK of the measured joints on the nominal model
//! misses the *sensed* target by more than the tolerance. (An accepted residual proposal aims,
//! on the nominal model, at the FK of its own setpoint, not at the target: it corrects for the
//! real arm. Its check compares with that aim, or it would flag every correction it was trained
//! to make.) A bare learned head reports nothing
//! (the residual hybrid passes on the analytic solver's "unreachable"). An enveloped head reports
//! what the envelope's checks catch: the fallback's status, and the same post-move check, since
//! the envelope is the classical part. What no sensor can see (model mismatch under perfect
//! encoders, noise on the sensed target) stays silent for everyone.
//!
//! **Plant protocol**, per pipeline, setting and target set: the plant carries over from target to
//! target. For each target the pipeline is asked once, warm-started from the encoder reading, for
//! the sensed target (the true one plus target noise); its answer (plus actuator noise) is sent
//! once as the servos' goal, and the servos close their own loop, as a position-servoed arm does.
//! The move ends when the goal has arrived (after the latency) and the arm has settled
//! ([`Plant::settle`]). With `corrections` > 0 an outer loop follows, one that waits for its
//! command to take effect: each correction sends `goal + (setpoint − measured)` and settles again.
//! (An outer loop that corrects every tick without waiting winds up under latency: it sends the
//! whole move again before the encoders show the first one.) The tip error is measured on the
//! real arm against the true target.
//!
//! **Two post-move checks.** Each checking pipeline's outcome is counted twice: once with the
//! encoder check above, once with a camera check instead, which compares the camera's newest
//! frame of the tip with the sensed target. A camera sees what the encoders cannot (mismatch,
//! flex) but brings its own noise and calibration offset, and a frame older than the move's first
//! tick cannot confirm the move: the check then reports it (a conservative check never passes a
//! move it has not seen).
//!
//! **Exercise protocol**, as written: solve from a fixed start pose, add Gaussian noise to the
//! solver's joint angles, subtract backlash in the direction of the change from the previous
//! command, and take the FK error of the perturbed pose on the nominal arm. The only report is the
//! solver's status.

use super::channels::{Channel, Setting};
use super::proposals::Proposals;
use crate::envelope::{Fit, InterventionLog};
use crate::kinematics::{ElbowMode, Point2, Pose, RealArm, TwoLinkArm};
use crate::lineup::{Answer, Family, Lineup, Pipeline};
use crate::plant::{Body, Frame, Plant, PlantConfig};
use crate::rng::{Stream, rng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::Serialize;

/// The pose every run starts from (and the exercise solves from).
pub const START: Pose = Pose::new(0.0, std::f64::consts::FRAC_PI_2);

/// Per-target outcome of one pipeline on one target set.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Tip error against the true target, metres.
    pub errors: Vec<f64>,
    /// Whether the pipeline reported a failure (with the encoder check).
    pub reported: Vec<bool>,
    /// Whether it reported a failure with the camera check instead (plant protocol only).
    pub camera_reported: Vec<bool>,
    /// Envelope decisions.
    pub log: InterventionLog,
    /// Plant protocol: where the simulated tip left the finite range, if it did; the run stopped
    /// there (the outcome holds the targets before it).
    pub diverged: Option<Divergence>,
}

/// Where a plant run's tip left the finite range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Divergence {
    /// The target's index in its set.
    pub index: usize,
    /// Plant time, seconds.
    pub time: f64,
}

/// True when `pipeline` may check the encoders after the move: classical solvers, and every
/// enveloped head (the envelope is the classical part).
pub fn checks_after_move(pipeline: Pipeline) -> bool {
    pipeline.envelope || pipeline.solver.family() == Family::Classical
}

/// Gaussian draws with standard deviation `std` (none at 0).
pub(super) struct Jitter(Option<Normal<f64>>);

impl Jitter {
    /// Draws of standard deviation `std` (none at 0; `std` is a validated finite level).
    pub(super) fn new(std: f64) -> Self {
        Jitter((std > 0.0).then(|| Normal::new(0.0, std).expect("validated finite std")))
    }

    /// One draw.
    pub(super) fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.0.as_ref().map_or(0.0, |n| n.sample(rng))
    }

    fn pose(&self, rng: &mut ChaCha8Rng) -> Pose {
        Pose::new(self.draw(rng), self.draw(rng))
    }
}

/// The targets as the arm's sensor sees them: each true target plus Gaussian noise of `std`
/// metres per axis (the same draws for every pipeline of a setting).
pub fn sensed(targets: &[Point2], std: f64, seed: u64) -> Vec<Point2> {
    let noise = Jitter::new(std);
    let mut rng = rng(seed, Stream::Sensed, 0);
    targets.iter().map(|&t| t + noise.pose(&mut rng).to_vector()).collect()
}

/// `pipeline`'s answer for target `i` (sensed as `seen`) from the current pose `seed`: a learned
/// head's proposal comes from `proposals`, everything else is solved here; the envelope vets.
fn answer(
    lineup: &Lineup,
    proposals: &Proposals,
    pipeline: Pipeline,
    i: usize,
    seen: Point2,
    seed: Pose,
) -> Option<Answer> {
    let proposal = match pipeline.solver.head() {
        Some(h) => proposals.get(h, i, ElbowMode::of(crate::solver::sane_seed(seed)))?,
        None => lineup.solve(pipeline.solver, seen, seed)?,
    };
    Some(lineup.vet(pipeline, proposal, seen, seed))
}

/// True when the camera confirms a move that began at time `moved_at`: its newest frame was
/// taken since then and shows the tip within `tolerance` of `aim`. No frame, or one older than
/// the move (it shows where the arm was), confirms nothing.
pub fn camera_confirms(frame: Option<Frame>, moved_at: f64, aim: Point2, tolerance: f64) -> bool {
    frame.is_some_and(|f| f.time >= moved_at && (f.tip - aim).norm() <= tolerance)
}

/// The plant protocol for one pipeline over `targets`, sensed as `seen` (with `proposals` made
/// for `seen`).
#[allow(clippy::too_many_arguments)]
pub fn plant_run(
    lineup: &Lineup,
    pipeline: Pipeline,
    real: RealArm,
    body: &Body,
    setting: &Setting,
    targets: &[Point2],
    seen: &[Point2],
    proposals: &Proposals,
    corrections: usize,
    tolerance: f64,
    post_move_check: bool,
    seed: u64,
    mut trace: Option<&mut PlantTrace>,
) -> Outcome {
    let p = setting.perturbation;
    let mut cfg = PlantConfig { real, seed, ..PlantConfig::ideal(real.arm).with_body(body) };
    p.configure(&mut cfg);
    let mut plant = Plant::new(cfg.two_link_real(), cfg, &START.coords());
    let mut rng = rng(seed, Stream::Actuator, 0);
    let actuator = Jitter::new(p[Channel::Actuator]);
    let check = post_move_check && checks_after_move(pipeline);
    let mut out = Outcome {
        errors: Vec::with_capacity(targets.len()),
        reported: Vec::with_capacity(targets.len()),
        ..Outcome::default()
    };
    for (i, (&target, &seen)) in targets.iter().zip(seen).enumerate() {
        let Some(answer) = answer(lineup, proposals, pipeline, i, seen, Pose::of(&plant.measure())) else { continue };
        if let Some(verdict) = answer.verdict {
            out.log.record(verdict);
        }
        let setpoint = answer.solution.pose;
        // A frame confirms the move only if taken after the goal was sent.
        let moved_at = plant.time();
        let mut goal = setpoint;
        let mut ticks = Vec::new();
        let watching = trace.as_ref().is_some_and(|t| t.watches(i, targets.len()));
        for correction in 0..=corrections {
            if correction > 0 {
                goal = goal + setpoint.wrapped_difference(Pose::of(&plant.measure()));
            }
            let sent = goal + actuator.pose(&mut rng);
            plant.command(&sent.coords());
            if watching {
                plant.settle_watched(|p| ticks.push(Tick::of(p, &sent.coords(), correction)));
            } else {
                plant.settle();
            }
        }
        // Every pipeline reads the encoders once more, so all share one noise stream.
        let after = Pose::of(&plant.measure());
        let aim = match (answer.verdict, lineup.fit(pipeline.solver)) {
            (Some(None), Fit::Correction { .. }) => lineup.arm.tip(setpoint),
            _ => seen,
        };
        let moved_wrong = check && lineup.arm.miss(after, aim) > tolerance;
        // The camera sees the real tip, so it compares with the sensed target itself.
        let seen_wrong = check && !camera_confirms(plant.camera(), moved_at, seen, tolerance);
        let status = answer.solution.status.is_reported_failure();
        let error = (plant.tip() - target).norm();
        if !error.is_finite() {
            out.diverged = Some(Divergence { index: i, time: plant.time() });
            break;
        }
        out.errors.push(error);
        out.reported.push(status || moved_wrong);
        out.camera_reported.push(status || seen_wrong);
        if let Some(t) = trace.as_deref_mut() {
            t.moves.push(MoveTrace {
                index: i,
                target,
                sensed: seen,
                setpoint: setpoint.coords().to_vec(),
                error,
                reported: status || moved_wrong,
                camera_reported: status || seen_wrong,
                ticks,
            });
        }
    }
    out
}

/// The plant at one sub-step of a traced move, on the two-link arm or a chain alike: every
/// coordinate is the plant's own (radians, metres for a rail), one per coordinate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tick {
    /// Plant time, seconds.
    pub time: f64,
    /// The goal sent (the setpoint, corrected and jittered), in the plant's coordinates.
    pub goal: Vec<f64>,
    /// Which send of the move it belongs to: 0 the setpoint, 1.. the corrections.
    pub correction: usize,
    /// The real arm's base (on its rail, when it has one), every joint and the tip.
    pub points: Vec<Point2>,
    /// The servos' outputs (what a perfect encoder reads), in the plant's coordinates.
    pub servos: Vec<f64>,
}

impl Tick {
    /// The plant as it is now, with the goal sent (`goal`'s first coordinates, one per plant
    /// coordinate) and which send of the move it was.
    pub(super) fn of(plant: &Plant, goal: &[f64], correction: usize) -> Self {
        let d = plant.dim();
        Self {
            time: plant.time(),
            goal: goal[..d].to_vec(),
            correction,
            points: plant.points(),
            servos: plant.link()[..d].to_vec(),
        }
    }

    /// Where the real tip is.
    pub fn tip(&self) -> Point2 {
        self.points.last().copied().unwrap_or_else(Point2::zeros)
    }
}

/// One move of a traced plant run: its target, the answer, what came of it and, for the last
/// moves, every plant sub-step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoveTrace {
    /// The target's index in its set.
    pub index: usize,
    /// The true target.
    pub target: Point2,
    /// The target as sensed.
    pub sensed: Point2,
    /// The pipeline's answer, sent as the goal, in the plant's coordinates.
    pub setpoint: Vec<f64>,
    /// How far the real tip ended from the true target, metres.
    pub error: f64,
    /// Whether the pipeline (or its encoder check) reported a failure.
    pub reported: bool,
    /// The same with the camera check.
    pub camera_reported: bool,
    /// Every sub-step of the move (empty for moves before the last [`PlantTrace::keep`]).
    pub ticks: Vec<Tick>,
}

/// What a traced plant run keeps: every move, and the sub-steps of the last `keep` of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlantTrace {
    /// How many of the last moves keep their sub-steps.
    pub keep: usize,
    /// The moves, in order.
    pub moves: Vec<MoveTrace>,
}

impl PlantTrace {
    /// An empty trace keeping the sub-steps of the last `keep` moves.
    pub fn new(keep: usize) -> Self {
        Self { keep, moves: Vec::new() }
    }

    /// True when move `i` of `n` keeps its sub-steps.
    pub(crate) fn watches(&self, i: usize, n: usize) -> bool {
        i + self.keep >= n
    }
}

/// The exercise protocol for one pipeline over `targets`, on the nominal arm.
pub fn exercise_run(
    lineup: &Lineup,
    pipeline: Pipeline,
    setting: &Setting,
    targets: &[Point2],
    proposals: &Proposals,
    seed: u64,
) -> Outcome {
    let p = setting.perturbation;
    let arm: &TwoLinkArm = &lineup.arm;
    let noise = Jitter::new(p[Channel::Actuator]);
    let mut rng = rng(seed, Stream::Exercise, 0);
    let mut previous = START;
    let mut out = Outcome::default();
    let play = |change: f64| {
        if change > 0.0 {
            p[Channel::Backlash]
        } else if change < 0.0 {
            -p[Channel::Backlash]
        } else {
            0.0
        }
    };
    for (i, &target) in targets.iter().enumerate() {
        let Some(answer) = answer(lineup, proposals, pipeline, i, target, START) else { continue };
        if let Some(verdict) = answer.verdict {
            out.log.record(verdict);
        }
        let command = answer.solution.pose;
        let change = command.wrapped_difference(previous);
        let noisy = command + noise.pose(&mut rng);
        let actual = Pose::new(noisy.shoulder - play(change.shoulder), noisy.elbow - play(change.elbow));
        previous = command;
        out.errors.push(arm.miss(actual, target));
        out.reported.push(answer.solution.status.is_reported_failure());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineup::{SolverId, Table};

    #[test]
    fn a_plant_run_that_leaves_the_finite_range_stops_and_says_where() {
        // A real arm whose joint offset skipped its checks (NaN) puts the simulated tip out of
        // the finite range: the run stops at the first target, with no NaN among its errors, and
        // the experiment turns it into an error naming the cell.
        let arm = TwoLinkArm::default();
        let lineup = Lineup::new(arm, Table::from_fn(|_| None));
        let real = RealArm { arm, joint_offsets: Pose::new(f64::NAN, 0.0) };
        let setting = super::super::channels::settings(&Default::default(), &[])[0];
        let targets = [Point2::new(1.0, 0.5), Point2::new(0.5, 1.0)];
        let proposals = Proposals::new(&lineup, &targets);
        let analytic = Pipeline::plain(SolverId::Analytic);
        let run = |real: RealArm| {
            let body = Body::default();
            plant_run(&lineup, analytic, real, &body, &setting, &targets, &targets, &proposals, 0, 0.05, true, 0, None)
        };
        let out = run(real);
        assert_eq!(out.diverged.map(|d| d.index), Some(0), "{:?}", out.diverged);
        assert!(out.errors.iter().all(|e| e.is_finite()), "{:?}", out.errors);
        let e = super::super::diverged(analytic, &setting, super::super::Split::In, out.diverged.unwrap()).to_string();
        assert!(e.contains("cell analytic, the baseline at level 0, in targets, at target 0"), "{e}");
        // The same run on the real arm as it should be is whole.
        let fine = run(RealArm::ideal(arm));
        assert!(fine.diverged.is_none() && fine.errors.len() == 2 && fine.errors.iter().all(|e| *e < 1e-3));
    }

    #[test]
    fn only_a_fresh_frame_on_the_aim_confirms_a_move() {
        let aim = Point2::new(1.0, 0.5);
        let frame = |x: f64, time: f64| Some(Frame { tip: Point2::new(x, 0.5), time });
        assert!(camera_confirms(frame(1.01, 2.0), 2.0, aim, 0.05));
        assert!(!camera_confirms(frame(1.1, 2.0), 2.0, aim, 0.05), "a miss the camera sees");
        // A frame from before the move shows where the arm was, however close that is.
        assert!(!camera_confirms(frame(1.0, 1.9), 2.0, aim, 0.05), "a stale frame confirms nothing");
        assert!(!camera_confirms(None, 2.0, aim, 0.05));
        assert!(!camera_confirms(frame(f64::NAN, 2.0), 2.0, aim, 0.05), "a NaN frame confirms nothing");
    }
}
