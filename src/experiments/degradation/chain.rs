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

use super::catalog::{FailureRecord, Found, Happened};
use super::channels::{Channel, OodKind, Setting, Split};
use super::config::{DegradationConfig, Protocol};
use super::protocol::{Divergence, Outcome, camera_confirms};
use super::report::{Cell, DegradationReport};
use super::{CatalogSink, Progress, jobs};
use crate::arm::Arm;
use crate::chain::solve::{ChainSolver, Nets};
use crate::envelope::{ChainEnvelope, Reason};
use crate::experiments::ExperimentError;
use crate::experiments::chain::{ChainConfig, TrainedNets, train_nets};
use crate::kinematics::Point2;
use crate::kinematics::serial::{Coords, padded};
use crate::learned::HeadKind;
use crate::learned::train::NetRollbacks;
use crate::lineup::{Family, Pipeline, SolverId};
use crate::plant::{Plant, PlantConfig, RealChain};
use crate::rng::{Stream, rng};
use crate::solver::{IkSolver, Solution};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;

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

/// The nets' training recipe for `arm` on a run of `cfg`: the chain benchmark's (the recipe
/// checked at every SIMD level) with `cfg.train_steps` steps and `cfg.seed` as its seed.
pub fn recipe(cfg: &DegradationConfig, arm: &Arm) -> ChainConfig {
    let mut chain = ChainConfig::new(arm.clone());
    chain.methods = NETS.to_vec();
    chain.net.steps = cfg.train_steps;
    chain.net.seed = cfg.seed;
    chain.seed = cfg.seed;
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
fn from_base(arm: &Arm, p: Point2) -> f64 {
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

/// Every target set of a run on `arm`: the held-out targets, then `beyond` when asked for.
pub fn target_sets(arm: &Arm, cfg: &DegradationConfig) -> Vec<(Split, Vec<Point2>)> {
    let mut sets = vec![(Split::In, held_out(arm, cfg.targets, cfg.seed))];
    let n = cfg.ood_targets();
    if cfg.ood.contains(&OodKind::Beyond) && n > 0 {
        sets.push((Split::Ood(OodKind::Beyond), beyond(arm, n, cfg.seed)));
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

/// Gaussian draws with standard deviation `std` (none at 0).
struct Jitter(Option<Normal<f64>>);

impl Jitter {
    fn new(std: f64) -> Self {
        Jitter((std > 0.0).then(|| Normal::new(0.0, std).expect("validated finite std")))
    }

    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        self.0.as_ref().map_or(0.0, |n| n.sample(rng))
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

/// The plant protocol for one pipeline over `targets` sensed as `seen`, on the real chain `real`
/// with the plant configuration `cfg` (as [`super::protocol::plant_run`] on the two-link arm).
#[allow(clippy::too_many_arguments)]
pub fn plant_run(
    line: &Line<'_>,
    pipeline: Pipeline,
    real: &RealChain,
    cfg: PlantConfig,
    setting: &Setting,
    targets: &[Point2],
    seen: &[Point2],
    run: &DegradationConfig,
    seed: u64,
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
            plant.settle();
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

/// Trains the line-up's nets for a run of `cfg` on `arm`, with their roll-backs.
pub fn train(cfg: &DegradationConfig, arm: &Arm) -> Result<(TrainedNets, Vec<NetRollbacks>), ExperimentError> {
    let trained = train_nets(&recipe(cfg, arm), &|_| true)?;
    let rollbacks = trained.rollbacks.iter().filter_map(|(k, r)| NetRollbacks::of(k.key(), r)).collect();
    Ok((trained, rollbacks))
}

/// The real chain at mismatch level `scale` of `cfg`'s gap, or why it cannot exist.
pub fn real_at(cfg: &DegradationConfig, arm: &Arm, scale: f64) -> Result<RealChain, crate::chain::arm::ChainError> {
    arm.real().with_mismatch(&super::Perturbation::scaled(cfg.mismatch, scale))
}

/// The line-up of a run of `cfg` on `arm` with `nets`.
fn line<'a>(cfg: &DegradationConfig, arm: &'a Arm, nets: Nets<'a>) -> Line<'a> {
    let mut envelope = cfg.envelope;
    envelope.fallback = crate::envelope::Fallback::Iterative;
    Line {
        arm,
        nets,
        envelope: ChainEnvelope { arm, config: envelope },
        settings: crate::chain::SolveSettings::default(),
    }
}

/// The plant configuration of one job of a run of `cfg` on `arm`: the servo of the run's body,
/// the arm's plane, the setting's channels, the job's seed.
fn plant_config(cfg: &DegradationConfig, arm: &Arm, setting: &Setting, seed: u64) -> PlantConfig {
    let mut plant = PlantConfig { seed, ..PlantConfig::ideal(Default::default()).with_body(&cfg.body) };
    plant.gravity = arm.vertical();
    setting.perturbation.configure(&mut plant);
    plant
}

/// The targets of `setting` as sensed with the job's `seed`.
fn seen(targets: &[Point2], setting: &Setting, seed: u64) -> Vec<Point2> {
    let noise = setting.perturbation[Channel::Target];
    if noise > 0.0 { sensed(targets, noise, seed) } else { targets.to_vec() }
}

/// Re-runs the move of `record` (a plant-protocol record of a run on `arm`, in `setting`, on
/// `targets`): trains the net its pipeline needs from the configuration as the run did (each
/// net trains alone, so one net is the run's net bit for bit), drives the plant through the set
/// up to the record's index, and returns the sensed target and what happened.
pub(super) fn replay_move(
    record: &FailureRecord,
    arm: &Arm,
    setting: &Setting,
    targets: &[Point2],
) -> Result<(Point2, Happened), ExperimentError> {
    let cfg = &record.config;
    let mut recipe = recipe(cfg, arm);
    let settings = crate::chain::SolveSettings::default();
    recipe.methods = NETS.iter().copied().filter(|&m| m == record.pipeline.solver).collect();
    if record.pipeline.solver == SolverId::Hybrid {
        recipe.methods = vec![settings.seeds.solver()];
    }
    let trained = if recipe.methods.is_empty() { TrainedNets::default() } else { train_nets(&recipe, &|_| true)? };
    let line = line(cfg, arm, trained.nets());
    let n = record.index;
    let real = real_at(cfg, arm, setting.perturbation[Channel::Mismatch])
        .map_err(|e| ExperimentError::Invalid(format!("the record's real arm cannot be built: {e}")))?;
    let seen = seen(targets, setting, record.seed);
    let plant = plant_config(cfg, arm, setting, record.seed);
    let o = plant_run(&line, record.pipeline, &real, plant, setting, &targets[..=n], &seen[..=n], cfg, record.seed);
    if let Some(d) = o.diverged {
        return Err(super::diverged(record.pipeline, setting, record.split, d));
    }
    let happened = Happened { error: o.errors[n], reported: o.reported[n], camera_reported: o.camera_reported[n] };
    Ok((seen[n], happened))
}

/// The degradation run of `cfg` on the chain `arm` (validated by the caller), with its failure
/// catalog when `catalog` is given (as on the two-link arm: ordered windows of jobs).
pub(super) fn run(
    cfg: &DegradationConfig,
    arm: &Arm,
    progress: &(dyn Fn(Progress) + Sync),
    mut catalog: Option<CatalogSink<'_>>,
) -> Result<DegradationReport, ExperimentError> {
    let t0 = std::time::Instant::now();
    progress(Progress::Training);
    let (trained, rollbacks) = train(cfg, arm)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let line = line(cfg, arm, trained.nets());
    let sets = target_sets(arm, cfg);
    let jobs = jobs(cfg, sets.len());
    let pipes = pipelines();
    let t1 = std::time::Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let total = jobs.len();
    progress(Progress::Evaluating { done: 0, total });
    let cap = catalog.as_ref().map(|c| c.cap);
    let run_job = |j: usize, (protocol, setting, set): (Protocol, Setting, usize)| {
        let (split, targets) = &sets[set];
        let seed = crate::rng::subseed(cfg.seed, Stream::Setting, j as u64);
        let real = real_at(cfg, arm, setting.perturbation[Channel::Mismatch]).expect("validated mismatch");
        let plant = plant_config(cfg, arm, &setting, seed);
        let seen = seen(targets, &setting, seed);
        let mut found = Found::new(setting, *split, seed);
        let cells = pipes
            .iter()
            .map(|&pipe| {
                let outcome = match protocol {
                    Protocol::Exercise => exercise_run(&line, pipe, &setting, targets, seed),
                    _ => plant_run(&line, pipe, &real, plant, &setting, targets, &seen, cfg, seed),
                };
                if let Some(d) = outcome.diverged {
                    return Err(super::diverged(pipe, &setting, *split, d));
                }
                if let (Some(cap), Protocol::Plant) = (cap, protocol) {
                    found.collect(cfg.tolerance, (targets, &seen), pipe, &outcome, cap);
                }
                Ok(Cell::of(protocol, pipe, &setting, *split, &outcome, cfg.tolerance))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(Progress::Evaluating { done: n, total });
        Ok((cells, found))
    };
    let window = if catalog.is_some() { 4 * rayon::current_num_threads().max(1) } else { total.max(1) };
    let mut cells = Vec::new();
    for (w, chunk) in jobs.chunks(window).enumerate() {
        let per_job: Vec<(Vec<Cell>, Found)> = chunk
            .par_iter()
            .enumerate()
            .map(|(k, &job)| run_job(w * window + k, job))
            .collect::<Result<_, ExperimentError>>()?;
        for (c, found) in per_job {
            cells.extend(c);
            if let Some(catalog) = catalog.as_mut() {
                found.records(cfg).for_each(|r| (catalog.sink)(&r));
            }
        }
    }
    let eval_seconds = t1.elapsed().as_secs_f64();
    let ran: Vec<OodKind> =
        sets.iter().filter_map(|(s, _)| if let Split::Ood(k) = s { Some(*k) } else { None }).collect();
    let mut ood_empty: Vec<OodKind> = Vec::new();
    for &kind in &cfg.ood {
        if !ran.contains(&kind) && !ood_empty.contains(&kind) {
            ood_empty.push(kind);
        }
    }
    let mut report = DegradationReport {
        config: DegradationConfig { ood: ran, ..cfg.clone() },
        ood_empty,
        cells,
        claims: Vec::new(),
        loaded: Vec::new(),
        train_seconds,
        rollbacks,
        eval_seconds,
        targets: sets.iter().map(|(s, t)| (*s, t.len())).collect(),
    };
    report.claims = super::claims::claims(&report);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::experiments::degradation::{ChannelLevels, ConfigError, degradation};

    /// A small run on `arm`: tiny nets, a few targets, one level of a few channels.
    fn small(arm: &Arm) -> DegradationConfig {
        let levels = ChannelLevels::baseline()
            .with(Channel::Actuator, vec![0.0, 0.05])
            .with(Channel::Mismatch, vec![0.0, 2.0])
            .with(Channel::Flex, vec![0.0, 0.05]);
        DegradationConfig {
            targets: 12,
            ood_fraction: 0.5,
            train_steps: 150,
            protocol: Protocol::Plant,
            levels,
            ..DegradationConfig::on(arm)
        }
    }

    #[test]
    fn a_chain_run_measures_its_line_up_and_judges_it_by_the_chains_cast() {
        let arm = ArmKind::Rail3.arm();
        let r = degradation(&small(&arm)).unwrap();
        assert_eq!(r.pipelines(), pipelines());
        let cell = |pipe: Pipeline, split: Split| r.cell(Protocol::Plant, pipe, Channel::Encoder, 0.0, split).unwrap();
        let beyond = Split::Ood(OodKind::Beyond);
        // Beyond the reach DLS, the hybrid and every enveloped net say so; the bare nets never do.
        for pipe in pipelines() {
            let c = cell(pipe, beyond);
            assert_eq!(c.missed, 1.0, "{pipe}: nothing beyond the reach is reached");
            let expected = if checks_after_move(pipe) { 1.0 } else { 0.0 };
            assert_eq!(c.reported, expected, "{pipe}");
        }
        // On the perfect arm DLS and the hybrid land on the held-out targets.
        for pipe in [Pipeline::plain(SolverId::Iterative), Pipeline::plain(SolverId::Hybrid)] {
            assert!(cell(pipe, Split::In).error.p95 < 1e-3, "{pipe}: {:?}", cell(pipe, Split::In).error);
        }
        // The envelope logs a decision per target.
        let env = cell(Pipeline::enveloped(SolverId::Flow), Split::In).envelope.unwrap();
        assert_eq!(env.accepted + env.interventions(), 12);
        let keys: Vec<&str> = r.claims.iter().map(|c| c.key).collect();
        assert_eq!(
            keys,
            [
                "dls-graceful",
                "classical-reports",
                "classical-reports-on-camera",
                "learned-degrades-faster",
                "learned-confident",
                "envelope-reports",
                "hybrid-worst-case-classical",
                "unseen-by-encoders-silent"
            ]
        );
        let confident = r.claims.iter().find(|c| c.key == "learned-confident").unwrap();
        assert!(confident.statement.contains("MSE, MDN, flow"), "{}", confident.statement);
    }

    #[test]
    fn a_chains_failure_catalog_replays_bit_for_bit() {
        let arm = ArmKind::ThreeR.arm();
        let cfg = DegradationConfig { targets: 6, ..small(&arm) };
        let mut records = Vec::new();
        let mut sink = |r: &FailureRecord| records.push(r.clone());
        let catalog = CatalogSink { cap: 1, sink: &mut sink };
        let report = super::super::degradation_catalogued(&cfg, Vec::new(), &|_| {}, Some(catalog)).unwrap();
        assert!(!report.cells.is_empty());
        assert!(records.iter().all(|r| r.config.chain.as_ref() == Some(&arm)));
        // One record of a bare net (its net trained alone for the replay), one of the hybrid
        // (its seeds' net) and one of an enveloped net under mismatch.
        let pick = |f: &dyn Fn(&FailureRecord) -> bool| records.iter().find(|r| f(r)).cloned().unwrap();
        let chosen = [
            pick(&|r| r.pipeline == Pipeline::plain(SolverId::Flow)),
            pick(&|r| r.pipeline.solver == SolverId::Hybrid),
            pick(&|r| r.pipeline.envelope && r.setting.channel == Some(Channel::Mismatch)),
        ];
        for r in &chosen {
            let out = super::super::replay(r).unwrap();
            assert!(out.identical(), "{}: {:?}", r.pipeline, out.differences);
        }
        // A result edited in the record is found, bit for bit.
        let mut edited = chosen[0].clone();
        edited.happened.error = f64::from_bits(edited.happened.error.to_bits() + 1);
        let out = super::super::replay(&edited).unwrap();
        assert_eq!(out.differences.len(), 1, "{:?}", out.differences);
    }

    #[test]
    fn the_so101_run_is_scaled_to_its_size() {
        let arm = ArmKind::So101.arm();
        let cfg = DegradationConfig::on(&arm);
        assert_eq!(cfg.tolerance, 0.01, "2.5 % of its 0.411 m reach");
        assert_eq!(cfg.levels.of(Channel::Target), [0.0, 0.0021, 0.0041, 0.01]);
        assert_eq!(cfg.levels.of(Channel::Encoder), ChannelLevels::default().of(Channel::Encoder));
        assert_eq!(cfg.envelope.max_fk_miss, 0.01 * arm.chain.reach());
        cfg.validate().unwrap();
        // Held-out targets are reached by their own draw; beyond ones by nothing.
        let targets = target_sets(&arm, &cfg);
        assert_eq!(
            targets.iter().map(|(s, t)| (*s, t.len())).collect::<Vec<_>>(),
            [(Split::In, 200), (Split::Ood(OodKind::Beyond), 40)]
        );
        for p in &targets[1].1 {
            assert!(from_base(&arm, *p) >= 1.05 * arm.chain.reach(), "{p:?}");
        }
        let rail = ArmKind::Rail3.arm();
        for p in beyond(&rail, 200, 3) {
            let d = from_base(&rail, p) / rail.chain.reach();
            assert!((1.05..=1.5).contains(&d), "{p:?} at {d} reaches");
        }
    }

    #[test]
    fn a_chain_configuration_is_json_without_null_and_reads_back() {
        for arm in [ArmKind::Rail3.arm(), Arm::from_lengths(&[1.0, 0.8, 0.6]).unwrap()] {
            let cfg = DegradationConfig::on(&arm);
            let json = serde_json::to_string(&cfg).unwrap();
            assert!(!json.contains("null"), "{json}");
            let back: DegradationConfig = serde_json::from_str(&json).unwrap();
            assert_eq!(back, cfg);
        }
    }

    #[test]
    fn two_link_settings_that_do_nothing_on_a_chain_are_refused_by_name() {
        let arm = ArmKind::ThreeR.arm();
        let cfg = DegradationConfig::on(&arm);
        let refused = |c: DegradationConfig| match c.validate() {
            Err(ConfigError::NotOnChain { what, .. }) => what,
            other => panic!("{other:?}"),
        };
        let sector = crate::kinematics::Region::Sector { from: 0.0, to: 1.0 };
        assert_eq!(refused(DegradationConfig { region: sector, ..cfg.clone() }), "a training region");
        let heavy = crate::plant::Body { link_mass: [1.0, 1.0], ..cfg.body };
        assert_eq!(refused(DegradationConfig { body: heavy, ..cfg.clone() }), "link masses");
        let vertical = crate::plant::Body { gravity: true, ..cfg.body };
        assert_eq!(refused(DegradationConfig { body: vertical, ..cfg.clone() }), "the gravity switch");
        let analytic =
            crate::envelope::EnvelopeConfig { fallback: crate::envelope::Fallback::Analytic, ..cfg.envelope };
        assert_eq!(refused(DegradationConfig { envelope: analytic, ..cfg.clone() }), "the analytic fallback");
        // A mismatch level whose real chain cannot exist is refused with the largest that can.
        let levels = cfg.levels.clone().with(Channel::Mismatch, vec![0.0, 30.0]);
        let e = DegradationConfig { levels, ..cfg }.validate().unwrap_err().to_string();
        assert!(e.contains("--mismatch-scale 30") && e.contains("largest level is 24.98"), "{e}");
    }
}
