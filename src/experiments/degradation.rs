//! The gap to reality: every solver drives the simulated real arm under each noise and backlash
//! level, on held-out targets and on out-of-distribution ones, and we count how often each one
//! *reported* failure against how often it *actually* missed (a silent failure).
//!
//! Protocol, per solver and setting: the plant carries over from target to target (so backlash
//! acts in changing directions). For each target the solver is asked once, warm-started from the
//! noisy encoder reading, and its answer becomes the joint setpoint. A joint servo then runs
//! `ticks` ticks: command, settle, read the encoders, `command += setpoint - measured`. The servo
//! takes up the backlash the encoders can see and feeds in the noise they add; the model mismatch
//! (link lengths, joint offsets) stays invisible to it. The tip error is measured on the real arm
//! after the last tick.

use super::ExperimentError;
use crate::envelope::InterventionLog;
use crate::kinematics::{Mismatch, Point2, Pose, RealArm, Region, SampleMode, TwoLinkArm};
use crate::learned::{HeadKind, LearnedModel, TrainConfig, Trainer, held_out_targets};
use crate::lineup::{Lineup, Pipeline, SolverId, Table};
use crate::plant::{Plant, PlantConfig};
use crate::stats::Summary;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Everything that defines a degradation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DegradationConfig {
    /// The nominal arm every solver plans on.
    pub arm: TwoLinkArm,
    /// Encoder noise levels (standard deviation, radians).
    pub noise: Vec<f64>,
    /// Backlash levels (dead-zone half-width, radians).
    pub backlash: Vec<f64>,
    /// Held-out (in-distribution) targets per setting.
    pub targets: usize,
    /// Out-of-distribution targets per setting, as a fraction of `targets` (beyond the reach,
    /// and outside the training sector when the region is one).
    pub ood_fraction: f64,
    /// A tip error above this (metres) counts as a miss.
    pub tolerance: f64,
    /// Joint-servo ticks per target (1: open loop).
    pub ticks: usize,
    /// Training steps of each learned head.
    pub train_steps: usize,
    /// Training region of the learned heads.
    pub region: Region,
    /// How the real arm departs from the nominal one (the sim-to-real gap).
    pub mismatch: Mismatch,
    /// Seed of targets, training and noise.
    pub seed: u64,
}

impl Default for DegradationConfig {
    fn default() -> Self {
        Self {
            arm: TwoLinkArm::default(),
            noise: vec![0.0, 0.01, 0.05],
            backlash: vec![0.0, 0.01, 0.05],
            targets: 10_000,
            ood_fraction: 0.2,
            tolerance: 0.05,
            ticks: 3,
            train_steps: 4000,
            region: Region::Annulus,
            mismatch: Mismatch::DEFAULT,
            seed: 0,
        }
    }
}

/// Most levels per perturbation channel.
pub const MAX_LEVELS: usize = 16;

impl DegradationConfig {
    /// Checks every field, with a message naming the first bad one.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |m: String| Err(ExperimentError::Invalid(m));
        for (name, levels) in [("noise", &self.noise), ("backlash", &self.backlash)] {
            if levels.is_empty() || levels.len() > MAX_LEVELS || levels.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
                return bad(format!("{name} levels must be 1 to {MAX_LEVELS} finite numbers >= 0, got {levels:?}"));
            }
        }
        if self.targets == 0 || self.targets > 1_000_000 {
            return bad(format!("targets must be in 1..=1000000, got {}", self.targets));
        }
        if !(0.0..=10.0).contains(&self.ood_fraction) {
            return bad(format!("ood fraction must be in [0, 10], got {}", self.ood_fraction));
        }
        if !(self.tolerance.is_finite() && self.tolerance > 0.0) {
            return bad(format!("tolerance must be > 0, got {}", self.tolerance));
        }
        if self.ticks == 0 || self.ticks > 100 {
            return bad(format!("ticks must be in 1..=100, got {}", self.ticks));
        }
        Ok(())
    }
}

/// Which targets a cell covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Held-out targets from the training distribution.
    In,
    /// Out-of-distribution targets.
    Ood,
}

/// One pipeline's figures in one setting, for one split of the targets.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The solver (and whether the envelope wraps it).
    pub solver: Pipeline,
    /// Encoder noise, radians.
    pub noise: f64,
    /// Backlash half-width, radians.
    pub backlash: f64,
    /// Held-out or out-of-distribution targets.
    pub split: Split,
    /// Tip error on the real arm, metres.
    pub error: Summary,
    /// Fraction of targets where the solver reported failure.
    pub reported: f64,
    /// Fraction where it missed by more than the tolerance.
    pub missed: f64,
    /// Fraction where it missed without reporting it.
    pub silent: f64,
    /// Envelope decisions (enveloped pipelines only).
    pub envelope: Option<InterventionLog>,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct DegradationReport {
    /// The configuration that produced it.
    pub config: DegradationConfig,
    /// Every cell.
    pub cells: Vec<Cell>,
    /// Training wall time of the heads, seconds.
    pub train_seconds: f64,
    /// Wall time of the evaluation (all settings, solvers and targets), seconds.
    pub eval_seconds: f64,
    /// In-distribution and OOD targets per setting.
    pub targets: (usize, usize),
    /// Tolerance, metres.
    pub tolerance: f64,
}

impl DegradationReport {
    /// The cell for one pipeline, split and setting, if present.
    pub fn cell(&self, solver: impl Into<Pipeline>, split: Split, noise: f64, backlash: f64) -> Option<&Cell> {
        let solver = solver.into();
        self.cells.iter().find(|c| c.solver == solver && c.split == split && c.noise == noise && c.backlash == backlash)
    }

    /// The seed's claims, each with the numbers that support or refute it.
    pub fn claims(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut noises: Vec<f64> = self.cells.iter().map(|c| c.noise).collect();
        noises.sort_by(f64::total_cmp);
        noises.dedup();
        let b0 = self.cells.iter().map(|c| c.backlash).fold(f64::INFINITY, f64::min);
        let series = |solver: Pipeline, f: &dyn Fn(&Cell) -> f64| {
            noises
                .iter()
                .filter_map(|&n| self.cell(solver, Split::In, n, b0).map(f))
                .map(|v| format!("{v:.4}"))
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        let mdn = SolverId::Learned(HeadKind::Mdn);
        let mse = SolverId::Learned(HeadKind::Mse);
        for solver in
            [Pipeline::plain(SolverId::Analytic), Pipeline::plain(mdn), Pipeline::plain(mse), Pipeline::enveloped(mdn)]
        {
            out.push(format!(
                "{:<14} held-out mean error as noise rises {noises:?} (backlash {b0}): {} m; silent misses {}",
                solver.key(),
                series(solver, &|c| c.error.mean),
                series(solver, &|c| c.silent)
            ));
        }
        let ood = |solver: Pipeline| {
            let cells: Vec<&Cell> =
                self.cells.iter().filter(|c| c.solver == solver && c.split == Split::Ood).collect();
            let n = cells.len().max(1) as f64;
            (cells.iter().map(|c| c.reported).sum::<f64>() / n, cells.iter().map(|c| c.silent).sum::<f64>() / n)
        };
        if self.targets.1 > 0 {
            for solver in Pipeline::lineup() {
                let (reported, silent) = ood(solver);
                out.push(format!(
                    "{:<16} out-of-distribution: reported failure {:5.1}%, silent failure {:5.1}%",
                    solver.key(),
                    100.0 * reported,
                    100.0 * silent
                ));
            }
        }
        out
    }
}

/// Trains every head (in parallel) for the experiment.
pub fn train_heads(
    arm: TwoLinkArm,
    region: Region,
    real: RealArm,
    steps: usize,
    seed: u64,
) -> Result<Table<HeadKind, LearnedModel>, ExperimentError> {
    let models: Vec<LearnedModel> = HeadKind::ALL
        .par_iter()
        .map(|&head| {
            let cfg = TrainConfig { head, arm, region, steps, seed, real, ..TrainConfig::default() };
            let mut t = Trainer::new(cfg)?;
            t.run(|_, _| {});
            Ok(t.into_model())
        })
        .collect::<Result<_, ExperimentError>>()?;
    let mut models = models.into_iter();
    Ok(Table::from_fn(|_| models.next().expect("one model per head, in order")))
}

/// Out-of-distribution targets: beyond the reach, and outside the training sector if any.
fn ood_targets(arm: &TwoLinkArm, region: Region, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0d0d);
    (0..n)
        .map(|i| {
            if i % 2 == 1
                && let Region::Sector { .. } = region
            {
                // Reachable, but outside the sector the nets were trained on.
                for _ in 0..1000 {
                    let p = arm.sample_target(&mut rng, SampleMode::UniformArea, Region::Annulus);
                    if !region.contains_bearing(p) {
                        return p;
                    }
                }
            }
            let r = arm.reach() * rng.random_range(1.05..1.5);
            let b: f64 = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
            Point2::new(r * b.cos(), r * b.sin())
        })
        .collect()
}

/// Runs one pipeline through one setting over `targets`; returns (errors, reported, log).
fn episode(
    lineup: &Lineup,
    pipeline: Pipeline,
    plant_cfg: PlantConfig,
    targets: &[Point2],
    ticks: usize,
) -> (Vec<f64>, Vec<bool>, InterventionLog) {
    let mut plant = Plant::new(plant_cfg, Pose::new(0.0, std::f64::consts::FRAC_PI_2));
    let mut log = InterventionLog::default();
    let mut errors = Vec::with_capacity(targets.len());
    let mut reported = Vec::with_capacity(targets.len());
    for &target in targets {
        let Some(answer) = lineup.run(pipeline, target, plant.measure()) else { continue };
        if let Some(verdict) = answer.verdict {
            log.record(verdict);
        }
        let setpoint = answer.solution.pose;
        let mut command = setpoint;
        for tick in 0..ticks.max(1) {
            if tick > 0 {
                command = command + setpoint.wrapped_difference(plant.measure());
            }
            plant.command(command);
            plant.settle();
        }
        errors.push((plant.tip() - target).norm());
        reported.push(answer.solution.status.is_reported_failure());
    }
    (errors, reported, log)
}

/// Runs the experiment.
pub fn degradation(cfg: &DegradationConfig) -> Result<DegradationReport, ExperimentError> {
    cfg.validate()?;
    let arm = cfg.arm;
    let real = RealArm::with_mismatch(&arm, cfg.mismatch)?;
    let t0 = std::time::Instant::now();
    let models = train_heads(arm, cfg.region, real, cfg.train_steps, cfg.seed)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let lineup = Lineup::new(arm, Table::from_fn(|h| Some(&models[h])));
    let pipelines = &Pipeline::lineup();
    let inside = held_out_targets(&arm, cfg.region, cfg.targets, cfg.seed);
    let n_ood = (cfg.targets as f64 * cfg.ood_fraction).round() as usize;
    let ood = ood_targets(&arm, cfg.region, n_ood, cfg.seed);
    let settings: Vec<(f64, f64)> =
        cfg.noise.iter().flat_map(|&n| cfg.backlash.iter().map(move |&b| (n, b))).collect();
    let splits: &[Split] = if n_ood > 0 { &[Split::In, Split::Ood] } else { &[Split::In] };
    let jobs: Vec<(usize, Pipeline, Split)> = (0..settings.len())
        .flat_map(|s| splits.iter().flat_map(move |&split| pipelines.iter().map(move |&p| (s, p, split))))
        .collect();
    let t1 = std::time::Instant::now();
    let cells: Vec<Cell> = jobs
        .par_iter()
        .map(|&(s, solver, split)| {
            let (noise, backlash) = settings[s];
            let split_index = if split == Split::In { 0 } else { 1 };
            let seed = cfg.seed.wrapping_mul(1000).wrapping_add((s * 2 + split_index) as u64);
            let plant_cfg = PlantConfig { real, backlash, lag: 0.0, noise_std: noise, seed };
            let targets = if split == Split::In { &inside } else { &ood };
            let (errors, reported, log) = episode(&lineup, solver, plant_cfg, targets, cfg.ticks);
            let n = errors.len().max(1) as f64;
            let missed: Vec<bool> = errors.iter().map(|&err| err.is_nan() || err > cfg.tolerance).collect();
            let frac = |v: &mut dyn Iterator<Item = bool>| v.filter(|&b| b).count() as f64 / n;
            Cell {
                solver,
                noise,
                backlash,
                split,
                error: Summary::of(&errors),
                reported: frac(&mut reported.iter().copied()),
                missed: frac(&mut missed.iter().copied()),
                silent: frac(&mut missed.iter().zip(&reported).map(|(&m, &r)| m && !r)),
                envelope: solver.envelope.then_some(log),
            }
        })
        .collect();
    let eval_seconds = t1.elapsed().as_secs_f64();
    Ok(DegradationReport {
        config: cfg.clone(),
        cells,
        train_seconds,
        eval_seconds,
        targets: (inside.len(), ood.len()),
        tolerance: cfg.tolerance,
    })
}
