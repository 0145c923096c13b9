//! The gap to reality on a redundant chain (`rail3`, `3r`, `so101`, an arm from lengths): the
//! two-link run's channels, protocols, target sets and verdict rules, asked of a chain's
//! line-up. The question is the seed's: under noise, backlash, mismatch and latency, does the
//! learned map (MDN and flow draws, with and without the DLS finish) report failure, fail
//! silently, or degrade to the classical answer?
//!
//! **The line-up** ([`pipelines`]), every answer one [`ChainSolver`] answer from where the arm
//! is (its encoder reading): damped least squares (classical: it reports non-convergence), the
//! squared-error net, the MDN and the flow bare (each draw nearest the arm's coordinates; they
//! report nothing), the hybrid (net draws finished by DLS, which reports whether it converged),
//! and the three nets inside the chain's envelope ([`ChainEnvelope`]: a proposal whose FK misses,
//! leaves the ranges or turns a joint too far falls back to DLS). The exact posterior sampler is
//! left out: it is the benchmark's reference, not a controller.
//!
//! **Honest reporting** as on the two-link arm: a pipeline with a classical part (DLS, the
//! hybrid, every enveloped net) reads the encoders after the move and reports a miss of the FK of
//! the reading on the nominal chain (or, counted apart, one the camera sees); a bare net reports
//! nothing.
//!
//! **The plant** is the chain's own body ([`Arm::real`]: the SO-101's measured links, uniform
//! rods otherwise) on the configuration's servo, in a vertical plane where the arm hangs
//! ([`Arm::vertical`]); each setting's channels act on it as the channel table says. Mismatch
//! level 1 is [`RealChain::with_mismatch`] of the configured two-link gap: the first link takes
//! the upper arm's length error and shoulder offset, every later link the forearm's and elbow's.
//! A rail takes the revolute joints' noise and backlash in metres (the plant's coordinates share
//! one noise level).
//!
//! **Targets**: held-out targets are the FK of draws from the arm's prior (how its nets were
//! trained and the chain benchmark tests); the one OOD set is `beyond`, 5 % to 50 % past the
//! reach from the nearest point of the rail (or the base). A chain's links fold back past its
//! base, so it has no hole, and its nets train on the whole prior, so there is no sector.

use super::channels::{Channel, OodKind, Setting, Split};
use super::protocol::{Divergence, Jitter, MoveTrace, Outcome, PlantTrace, Tick, camera_confirms};
use crate::arm::Arm;
use crate::chain::solve::{ChainSolver, Nets};
use crate::envelope::{ChainEnvelope, EnvelopeConfig, Reason};
use crate::experiments::ExperimentError;
use crate::experiments::chain::{ChainConfig, TrainedNets, train_nets};
use crate::kinematics::serial::{Coords, padded};
use crate::kinematics::{Mismatch, Point2};
use crate::learned::HeadKind;
use crate::learned::train::NetRollbacks;
use crate::lineup::{Family, Pipeline, SolverId};
use crate::plant::{Body, Plant, PlantConfig, RealChain};
use crate::rng::{Stream, rng};
use crate::solver::{IkSolver, Solution};
use rand::RngExt;

/// The nets a chain's line-up learns: the squared-error net, the MDN and the flow.
pub const NETS: [SolverId; 3] = [SolverId::Learned(HeadKind::Mse), SolverId::Learned(HeadKind::Mdn), SolverId::Flow];

/// The pipelines a degradation run measures on a chain: DLS, every net and the hybrid bare, then
/// every net inside the envelope.
pub fn pipelines() -> Vec<Pipeline> {
    let plain = [SolverId::Iterative].into_iter().chain(NETS).chain([SolverId::Hybrid]).map(Pipeline::plain);
    plain.chain(NETS.into_iter().map(Pipeline::enveloped)).collect()
}

/// True when `pipeline` has a classical part that may check the encoders (or the camera) after
/// the move: DLS, the hybrid (its DLS finish) and every enveloped net.
pub fn checks_after_move(pipeline: Pipeline) -> bool {
    pipeline.envelope || pipeline.solver.family() == Family::Classical || pipeline.solver == SolverId::Hybrid
}

/// The nets' training recipe for `arm`: the chain benchmark's (the recipe checked at every SIMD
/// level) with `steps` steps and `seed` as its seed.
pub fn recipe(arm: &Arm, steps: usize, seed: u64) -> ChainConfig {
    let mut chain = ChainConfig::new(arm.clone());
    chain.methods = NETS.to_vec();
    chain.net.steps = steps;
    chain.net.seed = seed;
    chain.seed = seed;
    chain
}

/// The `n` held-out targets of a run: the FK of draws from the arm's prior.
pub fn held_out(arm: &Arm, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = rng(seed, Stream::GapTargets, 0);
    let mut x = vec![0.0; arm.coords()];
    (0..n)
        .map(|_| {
            arm.prior.sample(&mut rng, &mut x);
            arm.chain.tip(&x)
        })
        .collect()
}

/// The distance from `p` to the nearest point the chain's base can be at (the rail's segment
/// along `y`, or the origin).
pub fn from_base(arm: &Arm, p: Point2) -> f64 {
    let y = arm.chain.rail().map_or(0.0, |t| p.y.clamp(t.min, t.max));
    (p - Point2::new(0.0, y)).norm()
}

/// `n` targets beyond the reach: 5 % to 50 % further than the reach from the nearest point of
/// the base (so no coordinates reach them), drawn around a random point of the base.
pub fn beyond(arm: &Arm, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = rng(seed, Stream::OodTargets { slot: OodKind::Beyond as u64 }, 1);
    let reach = arm.chain.reach();
    let band = 1.05 * reach..=1.5 * reach;
    (0..n)
        .map(|_| {
            // Along a rail, a point drawn from one carriage position may lie near another: drawn
            // again (rarely more than a few times; the last resort lies straight out).
            for _ in 0..1000 {
                let b: f64 = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
                let r = reach * rng.random_range(1.05..1.5);
                let at = arm.chain.rail().map_or(0.0, |t| rng.random_range(t.min..=t.max));
                let p = Point2::new(r * b.cos(), at + r * b.sin());
                if band.contains(&from_base(arm, p)) {
                    return p;
                }
            }
            Point2::new(1.25 * reach, 0.0)
        })
        .collect()
}

/// Why the OOD set `kind` has no targets on a chain, or `None` when it has some.
pub fn absent_because(kind: OodKind) -> Option<&'static str> {
    match kind {
        OodKind::Beyond => None,
        OodKind::Hole => Some("a chain's links fold back past its base: there is no hole to aim into"),
        OodKind::Sector => Some("a chain's nets train on its whole prior, not a sector"),
    }
}

/// Every target set of a run on `arm`: `held` held-out targets, then `ood` beyond the reach when
/// `kinds` asks for them.
pub fn target_sets(arm: &Arm, held: usize, ood: usize, kinds: &[OodKind], seed: u64) -> Vec<(Split, Vec<Point2>)> {
    let mut sets = vec![(Split::In, held_out(arm, held, seed))];
    if kinds.contains(&OodKind::Beyond) && ood > 0 {
        sets.push((Split::Ood(OodKind::Beyond), beyond(arm, ood, seed)));
    }
    sets
}

/// The trained line-up on one arm: its nets, solver settings and envelope.
pub struct Line<'a> {
    /// The nominal arm every solver plans on.
    pub arm: &'a Arm,
    /// The nets.
    pub nets: Nets<'a>,
    /// The envelope.
    pub envelope: ChainEnvelope<'a>,
    /// How DLS and the hybrid run.
    pub settings: crate::chain::SolveSettings,
}

/// What a pipeline answered for one target.
pub struct Answer {
    /// What goes to the arm.
    pub solution: Solution<Coords>,
    /// Enveloped pipelines: `Some(None)` accepted, `Some(Some(reason))` rejected.
    pub verdict: Option<Option<Reason>>,
}

impl Line<'_> {
    fn solver(&self, id: SolverId, seed: u64) -> ChainSolver<'_> {
        let mut s = ChainSolver::new(self.arm, self.nets, self.settings, id).expect("every net of the line-up trained");
        s.seed = seed;
        s
    }

    /// `pipeline`'s answer for `seen` from coordinates `here`, its draws seeded by `seed`.
    pub fn answer(&self, pipeline: Pipeline, seen: Point2, here: Coords, seed: u64) -> Answer {
        let proposal = self.solver(pipeline.solver, seed).solve(seen, here);
        if !pipeline.envelope {
            return Answer { solution: proposal, verdict: None };
        }
        let fallback = self.solver(SolverId::Iterative, seed);
        let (solution, reason) = self.envelope.review(proposal, seen, here, &fallback);
        Answer { solution, verdict: Some(reason) }
    }
}

/// The targets as the arm's sensor sees them (as [`super::protocol::sensed`]).
fn sensed(targets: &[Point2], std: f64, seed: u64) -> Vec<Point2> {
    super::protocol::sensed(targets, std, seed)
}

/// Where every run on `arm` starts, at rest: the centre of its prior.
pub fn start(arm: &Arm) -> Coords {
    padded(&arm.prior_center())
}

/// What a plant run does after each move: how close is a hit, how many outer corrections, and
/// whether checking pipelines read their sensors after the move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Checks {
    /// A tip error above this (metres) is a miss; the post-move checks use it too.
    pub tolerance: f64,
    /// Outer corrections per target after the servos settle.
    pub corrections: usize,
    /// Checking pipelines read the encoders (and the camera) after the move.
    pub post_move_check: bool,
}

/// The plant protocol for one pipeline over `targets` sensed as `seen`, on the real chain `real`
/// with the plant configuration `cfg` (as [`super::protocol::plant_run`] on the two-link arm),
/// every move and the last moves' sub-steps traced into `trace` when one is given (a replay's).
#[allow(clippy::too_many_arguments)]
pub fn plant_run(
    line: &Line<'_>,
    pipeline: Pipeline,
    real: &RealChain,
    cfg: PlantConfig,
    setting: &Setting,
    targets: &[Point2],
    seen: &[Point2],
    run: Checks,
    seed: u64,
    mut trace: Option<&mut PlantTrace>,
) -> Outcome {
    let arm = line.arm;
    let d = arm.coords();
    let mut plant = Plant::new(real.clone(), cfg, &start(arm)[..d]);
    let mut rng = rng(seed, Stream::Actuator, 0);
    let actuator = Jitter::new(setting.perturbation[Channel::Actuator]);
    let check = run.post_move_check && checks_after_move(pipeline);
    let mut out = Outcome {
        errors: Vec::with_capacity(targets.len()),
        reported: Vec::with_capacity(targets.len()),
        ..Outcome::default()
    };
    for (i, (&target, &seen)) in targets.iter().zip(seen).enumerate() {
        let answer = line.answer(pipeline, seen, plant.measure(), seed);
        if let Some(verdict) = answer.verdict {
            out.log.record(verdict);
        }
        let setpoint = answer.solution.pose;
        let moved_at = plant.time();
        let mut goal = setpoint;
        let mut ticks = Vec::new();
        let watching = trace.as_ref().is_some_and(|t| t.watches(i, targets.len()));
        for correction in 0..=run.corrections {
            if correction > 0 {
                let measured = plant.measure();
                for k in 0..d {
                    goal[k] += setpoint[k] - measured[k];
                }
            }
            let mut sent = goal;
            sent[..d].iter_mut().for_each(|v| *v += actuator.draw(&mut rng));
            plant.command(&sent[..d]);
            if watching {
                plant.settle_watched(|p| ticks.push(Tick::of(p, &sent, correction)));
            } else {
                plant.settle();
            }
        }
        let after = plant.measure();
        let moved_wrong = check && (arm.chain.tip(&after[..d]) - seen).norm() > run.tolerance;
        let seen_wrong = check && !camera_confirms(plant.camera(), moved_at, seen, run.tolerance);
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
                setpoint: setpoint[..d].to_vec(),
                error,
                reported: status || moved_wrong,
                camera_reported: status || seen_wrong,
                ticks,
            });
        }
    }
    out
}

/// The exercise protocol for one pipeline over `targets` on the nominal chain: solve from the
/// start, add Gaussian noise of the actuator level to every coordinate, subtract the backlash in
/// the direction of the change from the previous command, and take the FK error.
pub fn exercise_run(line: &Line<'_>, pipeline: Pipeline, setting: &Setting, targets: &[Point2], seed: u64) -> Outcome {
    let arm = line.arm;
    let d = arm.coords();
    let p = setting.perturbation;
    let noise = Jitter::new(p[Channel::Actuator]);
    let mut rng = rng(seed, Stream::Exercise, 0);
    let start = start(arm);
    let mut previous = start;
    let mut out = Outcome::default();
    for &target in targets {
        let answer = line.answer(pipeline, target, start, seed);
        if let Some(verdict) = answer.verdict {
            out.log.record(verdict);
        }
        let command = answer.solution.pose;
        let mut actual = [0.0; crate::kinematics::serial::MAX_COORDS];
        for k in 0..d {
            let change = command[k] - previous[k];
            let play = p[Channel::Backlash]
                * if change > 0.0 {
                    1.0
                } else if change < 0.0 {
                    -1.0
                } else {
                    0.0
                };
            actual[k] = command[k] + noise.draw(&mut rng) - play;
        }
        previous = command;
        out.errors.push((arm.chain.tip(&actual[..d]) - target).norm());
        out.reported.push(answer.solution.status.is_reported_failure());
    }
    out
}

/// Trains the line-up's nets on `arm` for `steps` steps from `seed`, with their roll-backs.
pub fn train(arm: &Arm, steps: usize, seed: u64) -> Result<(TrainedNets, Vec<NetRollbacks>), ExperimentError> {
    let trained = train_nets(&recipe(arm, steps, seed), &|_| true)?;
    let rollbacks = trained.rollbacks.iter().filter_map(|(k, r)| NetRollbacks::of(k.key(), r)).collect();
    Ok((trained, rollbacks))
}

/// The real chain at level `scale` of the gap `mismatch`, or why it cannot exist.
pub fn real_at(arm: &Arm, mismatch: Mismatch, scale: f64) -> Result<RealChain, crate::chain::arm::ChainError> {
    arm.real().with_mismatch(&super::channels::Perturbation::scaled(mismatch, scale))
}

/// The line-up on `arm` with `nets`, its envelope tuned by `envelope` (falling back to DLS).
pub fn line<'a>(arm: &'a Arm, nets: Nets<'a>, mut envelope: EnvelopeConfig) -> Line<'a> {
    envelope.fallback = crate::envelope::Fallback::Iterative;
    Line {
        arm,
        nets,
        envelope: ChainEnvelope { arm, config: envelope },
        settings: crate::chain::SolveSettings::default(),
    }
}

/// The plant configuration of one job on `arm`: the servo of `body`, the arm's plane, the
/// setting's channels, the job's seed.
pub fn plant_config(body: &Body, arm: &Arm, setting: &Setting, seed: u64) -> PlantConfig {
    let mut plant = PlantConfig { seed, ..PlantConfig::ideal(Default::default()).with_body(body) };
    plant.gravity = arm.vertical();
    setting.perturbation.configure(&mut plant);
    plant
}

/// The targets of `setting` as sensed with the job's `seed`.
pub fn seen(targets: &[Point2], setting: &Setting, seed: u64) -> Vec<Point2> {
    let noise = setting.perturbation[Channel::Target];
    if noise > 0.0 { sensed(targets, noise, seed) } else { targets.to_vec() }
}
