//! The gap to reality: every solver drives the arm under each perturbation channel, on held-out
//! and out-of-distribution targets, and we count per target whether it *reported* a failure,
//! whether it *missed*, whether it missed *silently*, and whether it raised a *false alarm*.
//!
//! - [`config`]: what defines a run, the protocol choice and the bounds on work;
//! - [`channels`]: the perturbation channels, the sweep, the target sets;
//! - [`protocol`]: the plant and exercise protocols and what each pipeline may report;
//! - [`proposals`]: every head's answers for a target set, batched once and shared;
//! - [`report`]: the cells and lookups; [`claims`]: the lesson's claims with computed verdicts;
//!   [`verdict`]: a claim and the rule from its cases to its verdict;
//! - [`catalog`]: every failure of a run as a self-contained record, and its replay;
//! - [`chain`]: the same run on a redundant chain ([`DegradationConfig::chain`]).

pub mod catalog;
pub mod chain;
#[cfg(test)]
mod chain_tests;
pub mod channels;
pub mod claims;
pub mod config;
pub mod proposals;
pub mod protocol;
pub mod report;
pub mod verdict;

pub use catalog::{CATALOG_VERSION, FailureRecord, Finding, MAX_CATALOG_BYTES, ReplayOutcome, replay, replay_traced};
pub use channels::{Channel, ChannelLevels, OodKind, Perturbation, Setting, Split};
pub use config::{
    ConfigError, DegradationConfig, MAX_LEVELS, MAX_OOD_FRACTION, MAX_PLANT_SECONDS, MAX_TOLERANCE, Protocol,
};
pub use protocol::{MoveTrace, PlantTrace, Tick};
pub use report::{Cell, CheckRates, DegradationReport};
pub use verdict::{Case, Claim, Verdict};

use super::ExperimentError;
use crate::envelope::Envelope;
use crate::kinematics::{Point2, RealArm, Region, TwoLinkArm};
use crate::learned::train::{NetRollbacks, Rollback};
use crate::learned::{HeadKind, LearnedModel, TrainConfig, Trainer};
use crate::lineup::{Lineup, Pipeline, SolverId, Table};
use proposals::Proposals;
use rayon::prelude::*;

/// The pipelines a degradation run measures: the analytic solver (nearest branch), DLS, every
/// head bare, and every head inside the envelope. The fixed branches and the branch average are
/// left out: the first are the analytic solver again, the second is not a solver.
pub fn pipelines() -> Vec<Pipeline> {
    let heads = HeadKind::ALL.map(SolverId::Learned);
    let plain = [SolverId::Analytic, SolverId::Iterative].into_iter().chain(heads).map(Pipeline::plain);
    plain.chain(heads.into_iter().map(Pipeline::enveloped)).collect()
}

/// Trains the heads that `loaded` lacks (in parallel) for the experiment.
pub fn train_heads(
    arm: TwoLinkArm,
    region: Region,
    real: RealArm,
    steps: usize,
    seed: u64,
    loaded: &Table<HeadKind, Option<LearnedModel>>,
) -> Result<(Table<HeadKind, LearnedModel>, Vec<NetRollbacks>), ExperimentError> {
    let trained: Vec<(LearnedModel, Option<NetRollbacks>)> = HeadKind::ALL
        .par_iter()
        .map(|&head| {
            if let Some(m) = &loaded[head] {
                return Ok((m.clone(), None));
            }
            let (model, rollbacks) = train_head(head, arm, region, real, steps, seed)?;
            Ok((model, NetRollbacks::of(head.key(), &rollbacks)))
        })
        .collect::<Result<_, ExperimentError>>()?;
    let (models, rollbacks): (Vec<_>, Vec<_>) = trained.into_iter().unzip();
    let mut models = models.into_iter();
    Ok((
        Table::from_fn(|_| models.next().expect("one model per head, in order")),
        rollbacks.into_iter().flatten().collect(),
    ))
}

/// Trains one head as a degradation run does (a replay trains its head the same way), with its
/// training's divergence roll-backs.
pub fn train_head(
    head: HeadKind,
    arm: TwoLinkArm,
    region: Region,
    real: RealArm,
    steps: usize,
    seed: u64,
) -> Result<(LearnedModel, Vec<Rollback>), ExperimentError> {
    let cfg = TrainConfig { head, arm, region, steps, seed, real, ..TrainConfig::default() };
    let mut t = Trainer::new(cfg)?;
    t.run(|_, _| {})?;
    let rollbacks = t.rollbacks().to_vec();
    Ok((t.into_model(), rollbacks))
}

/// The error of a plant run whose simulated tip left the finite range, naming its cell.
pub(crate) fn diverged(
    pipeline: Pipeline,
    setting: &Setting,
    split: Split,
    d: protocol::Divergence,
) -> ExperimentError {
    ExperimentError::NonFinite(format!(
        "the simulated arm left the finite range in the cell {pipeline}, {} at level {}, {} targets, at target {} ({} s of plant time): nothing was reported",
        setting.channel.map_or("the baseline", |c| c.key()),
        crate::stats::fmt_num(setting.level),
        split.key(),
        d.index,
        crate::stats::fmt_num(d.time),
    ))
}

/// Runs the experiment, training every head.
pub fn degradation(cfg: &DegradationConfig) -> Result<DegradationReport, ExperimentError> {
    degradation_with(cfg, Vec::new())
}

/// Runs the experiment with `models` (from model files) in place of the heads of their kinds;
/// the other heads are trained. Each model must be for the configuration's arm, one per head.
pub fn degradation_with(
    cfg: &DegradationConfig,
    models: Vec<LearnedModel>,
) -> Result<DegradationReport, ExperimentError> {
    degradation_observed(cfg, models, &|_| {})
}

/// Runs the experiment on the configuration's chain with `nets` (a lab's nets, as they stand)
/// in place of training its own: the squared-error net, the MDN and the flow must all be there.
pub fn degradation_with_nets(
    cfg: &DegradationConfig,
    nets: &crate::chain::NetSet,
) -> Result<DegradationReport, ExperimentError> {
    degradation_with_nets_observed(cfg, nets, &|_| {})
}

/// [`degradation_with_nets`], telling `progress` where the run stands (from several threads).
pub fn degradation_with_nets_observed(
    cfg: &DegradationConfig,
    nets: &crate::chain::NetSet,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<DegradationReport, ExperimentError> {
    cfg.validate()?;
    let Some(arm) = &cfg.chain else {
        return Err(ExperimentError::Invalid(
            "nets are a chain's learners; a two-link run takes the heads' model files".into(),
        ));
    };
    if let Some(kind) = crate::chain::nets::NetKind::ALL.into_iter().find(|&k| nets.get(k).is_none()) {
        return Err(ExperimentError::Invalid(format!("waiting for the {kind} net")));
    }
    chain_run(cfg, arm, progress, None, Some(nets))
}

/// Where a run stands, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The heads without a model file are being trained.
    Training,
    /// `done` of `total` (setting, target set) jobs evaluated.
    Evaluating {
        /// Jobs finished.
        done: usize,
        /// Jobs in the run.
        total: usize,
    },
}

/// [`degradation_with`], telling `progress` where the run stands (from several threads).
pub fn degradation_observed(
    cfg: &DegradationConfig,
    models: Vec<LearnedModel>,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<DegradationReport, ExperimentError> {
    degradation_catalogued(cfg, models, progress, None)
}

/// Where a run's failure catalog goes, for [`degradation_catalogued`].
pub struct CatalogSink<'a> {
    /// The most records per cell (pipeline, setting, target set) and pair of verdicts.
    pub cap: usize,
    /// Called with each record, in catalog order, as the run goes.
    pub sink: &'a mut dyn FnMut(&FailureRecord),
}

/// The jobs of a run of `cfg` on `sets` target sets, in order: (protocol, setting, target set),
/// the plant protocol's settings then the exercise's, each over every set. Job `j`'s noise is
/// seeded with `subseed(cfg.seed, Stream::Setting, j)`, which is how a replay finds a record's
/// job again.
pub(crate) fn jobs(cfg: &DegradationConfig, sets: usize) -> Vec<(Protocol, Setting, usize)> {
    let mut jobs = Vec::new();
    for (protocol, chans) in
        [(Protocol::Plant, &Channel::ALL[..]), (Protocol::Exercise, &channels::EXERCISE_CHANNELS[..])]
    {
        let runs = if protocol == Protocol::Plant { cfg.protocol.runs_plant() } else { cfg.protocol.runs_exercise() };
        if runs {
            for s in channels::settings(&cfg.levels, chans) {
                jobs.extend((0..sets).map(|i| (protocol, s, i)));
            }
        }
    }
    jobs
}

/// [`degradation_observed`], and with a `catalog` the failure catalog of the plant protocol: at
/// most `catalog.cap` records per cell and pair of verdicts ([`catalog`]), handed to
/// `catalog.sink` in order while the run goes. With a catalog the jobs run in ordered windows
/// of a few per thread, so only a window's failures are held at a time (compactly). A catalog
/// is replayed by re-training the heads, so it cannot be made with heads loaded from model
/// files, and it holds plant-protocol records only, so an exercise-only run cannot make one.
pub fn degradation_catalogued(
    cfg: &DegradationConfig,
    models: Vec<LearnedModel>,
    progress: &(dyn Fn(Progress) + Sync),
    mut catalog: Option<CatalogSink<'_>>,
) -> Result<DegradationReport, ExperimentError> {
    cfg.validate()?;
    if let Some(arm) = &cfg.chain {
        if !models.is_empty() {
            return Err(ExperimentError::Invalid(format!(
                "a run on {} trains its own nets; model files hold the two-link heads it does not use",
                arm.name
            )));
        }
        if catalog.is_some() && !cfg.protocol.runs_plant() {
            return Err(ExperimentError::Invalid(format!(
                "a failure catalog holds plant-protocol records only, so protocol `{}` would write an empty one; run protocol `plant` or `both`",
                cfg.protocol
            )));
        }
        return chain_run(cfg, arm, progress, catalog, None);
    }
    if catalog.is_some() && !models.is_empty() {
        return Err(ExperimentError::Invalid(
            "a failure catalog is replayed by re-training the heads, so it cannot be made with heads loaded from model files".into(),
        ));
    }
    if catalog.is_some() && !cfg.protocol.runs_plant() {
        return Err(ExperimentError::Invalid(format!(
            "a failure catalog holds plant-protocol records only, so protocol `{}` would write an empty one; run protocol `plant` or `both`",
            cfg.protocol
        )));
    }
    let mut loaded: Table<HeadKind, Option<LearnedModel>> = Table::default();
    for m in models {
        m.check_fits(&cfg.arm, Some(cfg.region)).map_err(ExperimentError::Invalid)?;
        let kind = m.kind;
        if loaded[kind].replace(m).is_some() {
            return Err(ExperimentError::Invalid(format!("two models for the {kind} head")));
        }
    }
    let arm = cfg.arm;
    let real_at = |scale: f64| RealArm::with_mismatch(&arm, Perturbation::scaled(cfg.mismatch, scale));
    let t0 = std::time::Instant::now();
    progress(Progress::Training);
    let (models, rollbacks) = train_heads(arm, cfg.region, real_at(1.0)?, cfg.train_steps, cfg.seed, &loaded)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let mut lineup = Lineup::new(arm, Table::from_fn(|h| Some(&models[h])));
    lineup.envelope = Envelope { arm, config: cfg.envelope };
    let sets = channels::target_sets(&arm, cfg.region, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed);
    let jobs = jobs(cfg, sets.len());
    let pipes = pipelines();
    let t1 = std::time::Instant::now();
    // The heads' answers for the true targets serve every setting without target noise.
    let shared: Vec<Proposals> = sets.par_iter().map(|(_, t)| Proposals::new(&lineup, t)).collect();
    let cap = catalog.as_ref().map(|c| c.cap);
    let run_job = |j: usize, (protocol, setting, set): (Protocol, Setting, usize)| {
        let (split, targets): &(Split, Vec<Point2>) = &sets[set];
        let seed = crate::rng::subseed(cfg.seed, crate::rng::Stream::Setting, j as u64);
        let (mismatch, target_noise) = (setting.perturbation[Channel::Mismatch], setting.perturbation[Channel::Target]);
        let real = real_at(mismatch).expect("validated mismatch");
        let noisy = target_noise > 0.0;
        let seen = if noisy { protocol::sensed(targets, target_noise, seed) } else { Vec::new() };
        let own = noisy.then(|| Proposals::new(&lineup, &seen));
        let (seen, proposals) =
            if noisy { (&seen[..], own.as_ref().expect("made")) } else { (&targets[..], &shared[set]) };
        let mut found = catalog::Found::new(setting, *split, seed);
        let cells = pipes
            .iter()
            .map(|&pipe| {
                let outcome = match protocol {
                    Protocol::Exercise => protocol::exercise_run(&lineup, pipe, &setting, targets, proposals, seed),
                    _ => protocol::plant_run(
                        &lineup,
                        pipe,
                        real,
                        &cfg.body,
                        &setting,
                        targets,
                        seen,
                        proposals,
                        cfg.corrections,
                        cfg.tolerance,
                        cfg.post_move_check,
                        seed,
                        None,
                    ),
                };
                if let Some(d) = outcome.diverged {
                    return Err(diverged(pipe, &setting, *split, d));
                }
                if let (Some(cap), Protocol::Plant) = (cap, protocol) {
                    found.collect(cfg.tolerance, (targets, seen), pipe, &outcome, cap);
                }
                Ok(Cell::of(protocol, pipe, &setting, *split, &outcome, cfg.tolerance))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((cells, found))
    };
    let cells = run_jobs(cfg, &jobs, &mut catalog, progress, run_job)?;
    let loaded = HeadKind::ALL.into_iter().filter(|&h| loaded[h].is_some()).collect();
    Ok(report_of(cfg, &sets, cells, loaded, train_seconds, rollbacks, t1.elapsed().as_secs_f64()))
}

/// The cells of `jobs`, job `j` run by `run_job(j, job)`, telling `progress` how many are done:
/// every job at once, or, with a catalog, in ordered windows of a few per thread, each window's
/// records handed to the sink in order (so only a window's failures are held at a time).
fn run_jobs(
    cfg: &DegradationConfig,
    jobs: &[(Protocol, Setting, usize)],
    catalog: &mut Option<CatalogSink<'_>>,
    progress: &(dyn Fn(Progress) + Sync),
    run_job: impl Fn(usize, (Protocol, Setting, usize)) -> Result<(Vec<Cell>, catalog::Found), ExperimentError> + Sync,
) -> Result<Vec<Cell>, ExperimentError> {
    let (done, total) = (std::sync::atomic::AtomicUsize::new(0), jobs.len());
    progress(Progress::Evaluating { done: 0, total });
    let window = if catalog.is_some() { 4 * rayon::current_num_threads().max(1) } else { total.max(1) };
    let mut cells = Vec::new();
    for (w, chunk) in jobs.chunks(window).enumerate() {
        let per_job: Vec<(Vec<Cell>, catalog::Found)> = chunk
            .par_iter()
            .enumerate()
            .map(|(k, &job)| {
                let out = run_job(w * window + k, job)?;
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress(Progress::Evaluating { done: n, total });
                Ok(out)
            })
            .collect::<Result<_, ExperimentError>>()?;
        for (c, found) in per_job {
            cells.extend(c);
            if let Some(catalog) = catalog.as_mut() {
                found.records(cfg).for_each(|r| (catalog.sink)(&r));
            }
        }
    }
    Ok(cells)
}

/// The report of a run of `cfg` on the target `sets` that gave `cells`, its claims computed. The
/// configuration echoes the OOD sets that ran; the requested ones that came out empty for this
/// arm, region and OOD budget are named apart, never passed off as used.
fn report_of(
    cfg: &DegradationConfig,
    sets: &[(Split, Vec<Point2>)],
    cells: Vec<Cell>,
    loaded: Vec<HeadKind>,
    train_seconds: f64,
    rollbacks: Vec<NetRollbacks>,
    eval_seconds: f64,
) -> DegradationReport {
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
        loaded,
        train_seconds,
        rollbacks,
        eval_seconds,
        targets: sets.iter().map(|(s, t)| (*s, t.len())).collect(),
    };
    report.claims = claims::claims(&report);
    report
}

/// The degradation run of `cfg` on the chain `arm` (validated by the caller), with its failure
/// catalog when `catalog` is given, on the `given` nets instead of training its own when given.
fn chain_run(
    cfg: &DegradationConfig,
    arm: &crate::arm::Arm,
    progress: &(dyn Fn(Progress) + Sync),
    mut catalog: Option<CatalogSink<'_>>,
    given: Option<&crate::chain::NetSet>,
) -> Result<DegradationReport, ExperimentError> {
    let t0 = std::time::Instant::now();
    progress(Progress::Training);
    let (trained, rollbacks) = match given {
        Some(nets) => (crate::experiments::chain::TrainedNets { nets: nets.clone(), ..Default::default() }, Vec::new()),
        None => chain::train(arm, cfg.train_steps, cfg.seed)?,
    };
    let train_seconds = t0.elapsed().as_secs_f64();
    let line = chain::line(arm, trained.nets(), cfg.envelope);
    let sets = chain::target_sets(arm, cfg.targets, cfg.ood_targets(), &cfg.ood, cfg.seed);
    let jobs = jobs(cfg, sets.len());
    let pipes = chain::pipelines();
    let checks = chain_checks(cfg);
    let t1 = std::time::Instant::now();
    let cap = catalog.as_ref().map(|c| c.cap);
    let run_job = |j: usize, (protocol, setting, set): (Protocol, Setting, usize)| {
        let (split, targets) = &sets[set];
        let seed = crate::rng::subseed(cfg.seed, crate::rng::Stream::Setting, j as u64);
        let real =
            chain::real_at(arm, cfg.mismatch, setting.perturbation[Channel::Mismatch]).expect("validated mismatch");
        let plant = chain::plant_config(&cfg.body, arm, &setting, seed);
        let seen = chain::seen(targets, &setting, seed);
        let mut found = catalog::Found::new(setting, *split, seed);
        let cells = pipes
            .iter()
            .map(|&pipe| {
                let outcome = match protocol {
                    Protocol::Exercise => chain::exercise_run(&line, pipe, &setting, targets, seed),
                    _ => chain::plant_run(&line, pipe, &real, plant, &setting, targets, &seen, checks, seed, None),
                };
                if let Some(d) = outcome.diverged {
                    return Err(diverged(pipe, &setting, *split, d));
                }
                if let (Some(cap), Protocol::Plant) = (cap, protocol) {
                    found.collect(cfg.tolerance, (targets, &seen), pipe, &outcome, cap);
                }
                Ok(Cell::of(protocol, pipe, &setting, *split, &outcome, cfg.tolerance))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((cells, found))
    };
    let cells = run_jobs(cfg, &jobs, &mut catalog, progress, run_job)?;
    Ok(report_of(cfg, &sets, cells, Vec::new(), train_seconds, rollbacks, t1.elapsed().as_secs_f64()))
}

/// What a chain's plant run of `cfg` does after each move.
fn chain_checks(cfg: &DegradationConfig) -> chain::Checks {
    chain::Checks { tolerance: cfg.tolerance, corrections: cfg.corrections, post_move_check: cfg.post_move_check }
}

/// Re-runs the move of `record` (a plant-protocol record of a run on the chain `arm`, in
/// `setting`, on `targets`): trains the net its pipeline needs from the configuration as the run
/// did (each net trains alone, so one net is the run's net bit for bit), drives the plant through
/// the set up to the record's index, and returns the sensed target and what happened; every
/// move, and the sub-steps of the last ones, go into `trace` ([`protocol::PlantTrace`]).
pub(crate) fn chain_replay_move(
    record: &FailureRecord,
    arm: &crate::arm::Arm,
    setting: &Setting,
    targets: &[Point2],
    trace: &mut protocol::PlantTrace,
) -> Result<(Point2, catalog::Happened), ExperimentError> {
    let cfg = &record.config;
    let mut recipe = chain::recipe(arm, cfg.train_steps, cfg.seed);
    let settings = crate::chain::SolveSettings::default();
    recipe.methods = chain::NETS.iter().copied().filter(|&m| m == record.pipeline.solver).collect();
    if record.pipeline.solver == SolverId::Hybrid {
        recipe.methods = vec![settings.seeds.solver()];
    }
    let trained = if recipe.methods.is_empty() {
        crate::experiments::chain::TrainedNets::default()
    } else {
        crate::experiments::chain::train_nets(&recipe, &|_| true)?
    };
    let line = chain::line(arm, trained.nets(), cfg.envelope);
    let n = record.index;
    let real = chain::real_at(arm, cfg.mismatch, setting.perturbation[Channel::Mismatch])
        .map_err(|e| ExperimentError::Invalid(format!("the record's real arm cannot be built: {e}")))?;
    let seen = chain::seen(targets, setting, record.seed);
    let plant = chain::plant_config(&cfg.body, arm, setting, record.seed);
    let o = chain::plant_run(
        &line,
        record.pipeline,
        &real,
        plant,
        setting,
        &targets[..=n],
        &seen[..=n],
        chain_checks(cfg),
        record.seed,
        Some(trace),
    );
    if let Some(d) = o.diverged {
        return Err(diverged(record.pipeline, setting, record.split, d));
    }
    let happened =
        catalog::Happened { error: o.errors[n], reported: o.reported[n], camera_reported: o.camera_reported[n] };
    Ok((seen[n], happened))
}
