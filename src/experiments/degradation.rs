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

use crate::analytic::{AnalyticSolver, BranchChoice};
use crate::cli::{ArmArgs, Levels};
use crate::envelope::{EnvelopeConfig, InterventionLog, SafetyEnvelope};
use crate::iterative::DlsSolver;
use crate::kinematics::{Point2, Pose, RealArm, Region, TwoLinkArm};
use crate::learned::{HeadKind, LearnedModel, LearnedSolver, TrainConfig, Trainer, held_out_targets};
use crate::plant::{Plant, PlantConfig};
use crate::solver::{IkSolver, SolveStatus};
use crate::stats::Summary;
use clap::Args;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;

/// Arguments of `elbow experiment degradation`.
#[derive(Debug, Clone, Args)]
pub struct DegradationArgs {
    /// Encoder noise levels (standard deviation, radians), comma-separated.
    #[arg(long, default_value = "0,0.01,0.05")]
    pub noise: Levels,
    /// Backlash levels (dead-zone half-width, radians), comma-separated.
    #[arg(long, default_value = "0,0.01,0.05")]
    pub backlash: Levels,
    /// Held-out (in-distribution) targets per setting.
    #[arg(long, default_value_t = 10_000)]
    pub targets: usize,
    /// Out-of-distribution targets per setting, as a fraction of `--targets` (beyond the reach,
    /// and outside the training sector when the region is one).
    #[arg(long, default_value_t = 0.2)]
    pub ood_fraction: f64,
    /// A tip error above this (metres) counts as a miss.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,
    /// Joint-servo ticks per target (1: open loop).
    #[arg(long, default_value_t = 3)]
    pub ticks: usize,
    /// Training steps of each learned head.
    #[arg(long, default_value_t = 4000)]
    pub train_steps: usize,
    /// Training region of the learned heads: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value = "annulus")]
    pub region: Region,
    /// Real arm's relative link-length errors `E1,E2` (the sim-to-real gap).
    #[arg(long, default_value = "0.02,-0.02", value_parser = parse_signed_pair)]
    pub length_error: (f64, f64),
    /// Real arm's joint offsets `O1,O2`, radians.
    #[arg(long, default_value = "0.01,-0.01", value_parser = parse_signed_pair)]
    pub joint_offset: (f64, f64),
    /// Seed of targets, training and noise.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub arm: ArmArgs,
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV.
    #[arg(long)]
    pub csv: bool,
}

fn parse_signed_pair(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("expected `A,B`, got `{s}`"))?;
    let (a, b) = (crate::cli::parse_finite(a)?, crate::cli::parse_finite(b)?);
    if a.abs() > 0.5 || b.abs() > 0.5 {
        return Err(format!("values must lie in [-0.5, 0.5], got `{s}`"));
    }
    Ok((a, b))
}

/// One solver's figures in one setting, for one split of the targets.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Solver name.
    pub solver: String,
    /// Encoder noise, radians.
    pub noise: f64,
    /// Backlash half-width, radians.
    pub backlash: f64,
    /// `in` (held-out, reachable by the nominal model) or `ood` (out of distribution).
    pub split: &'static str,
    /// Tip error on the real arm, metres.
    pub error: Summary,
    /// Fraction of targets where the solver reported failure.
    pub reported: f64,
    /// Fraction where it missed by more than the tolerance.
    pub missed: f64,
    /// Fraction where it missed without reporting it.
    pub silent: f64,
    /// Envelope decisions (enveloped solvers only).
    pub envelope: Option<InterventionLog>,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct DegradationReport {
    /// Every cell.
    pub cells: Vec<Cell>,
    /// Training wall time of the four heads, seconds.
    pub train_seconds: f64,
    /// Wall time of the evaluation (all settings, solvers and targets), seconds.
    pub eval_seconds: f64,
    /// In-distribution and OOD targets per setting.
    pub targets: (usize, usize),
    /// Tolerance, metres.
    pub tolerance: f64,
}

impl DegradationReport {
    /// The cell for one solver, split and setting, if present.
    pub fn cell(&self, solver: &str, split: &str, noise: f64, backlash: f64) -> Option<&Cell> {
        self.cells.iter().find(|c| c.solver == solver && c.split == split && c.noise == noise && c.backlash == backlash)
    }

    /// The seed's claims, each with the numbers that support or refute it.
    pub fn claims(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut noises: Vec<f64> = self.cells.iter().map(|c| c.noise).collect();
        noises.sort_by(f64::total_cmp);
        noises.dedup();
        let b0 = self.cells.iter().map(|c| c.backlash).fold(f64::INFINITY, f64::min);
        let series = |solver: &str, f: &dyn Fn(&Cell) -> f64| {
            noises
                .iter()
                .filter_map(|&n| self.cell(solver, "in", n, b0).map(f))
                .map(|v| format!("{v:.4}"))
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        for solver in ["analytic", "mdn", "mse", "envelope(mdn)"] {
            out.push(format!(
                "{solver:<14} held-out mean error as noise rises {noises:?} (backlash {b0}): {} m; silent misses {}",
                series(solver, &|c| c.error.mean),
                series(solver, &|c| c.silent)
            ));
        }
        let ood = |solver: &str| {
            let cells: Vec<&Cell> = self.cells.iter().filter(|c| c.solver == solver && c.split == "ood").collect();
            let n = cells.len().max(1) as f64;
            (cells.iter().map(|c| c.reported).sum::<f64>() / n, cells.iter().map(|c| c.silent).sum::<f64>() / n)
        };
        if self.targets.1 > 0 {
            for solver in
                ["analytic", "iterative (DLS)", "mse", "mdn", "mode", "residual", "envelope(mse)", "envelope(mdn)"]
            {
                let (reported, silent) = ood(solver);
                out.push(format!(
                    "{solver:<16} out-of-distribution: reported failure {:5.1}%, silent failure {:5.1}%",
                    100.0 * reported,
                    100.0 * silent
                ));
            }
        }
        out
    }
}

/// A solver under test: plain, or wrapped in the envelope (so its decisions can be counted).
enum Entry<'m> {
    Plain(Box<dyn IkSolver + Sync + 'm>),
    Enveloped(SafetyEnvelope<LearnedSolver<'m>>),
}

impl Entry<'_> {
    fn name(&self) -> &str {
        match self {
            Entry::Plain(s) => s.name(),
            Entry::Enveloped(e) => e.name(),
        }
    }

    fn solve(&self, aim: Point2, seed: Pose, log: &mut InterventionLog) -> (Pose, SolveStatus) {
        match self {
            Entry::Plain(s) => {
                let s = s.solve(aim, seed);
                (s.pose, s.status)
            }
            Entry::Enveloped(e) => {
                let v = e.vet(aim, seed);
                log.record(v.intervention);
                (v.solution.pose, v.solution.status)
            }
        }
    }
}

/// Trains the four heads (in parallel) for the experiment.
pub fn train_heads(
    arm: TwoLinkArm,
    region: Region,
    real: RealArm,
    steps: usize,
    seed: u64,
) -> Result<Vec<LearnedModel>, String> {
    HeadKind::ALL
        .par_iter()
        .map(|&head| {
            let cfg = TrainConfig { head, arm, region, steps, seed, real, ..TrainConfig::default() };
            let mut t = Trainer::new(cfg).map_err(|e| e.to_string())?;
            t.run(|_, _| {});
            Ok(t.into_model())
        })
        .collect()
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
                    let p = arm.sample_target(&mut rng, crate::SampleMode::UniformArea, Region::Annulus);
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

/// Runs one solver through one setting over `targets`; returns (errors, reported, log).
fn episode(
    entry: &Entry,
    plant_cfg: PlantConfig,
    targets: &[Point2],
    ticks: usize,
) -> (Vec<f64>, Vec<bool>, InterventionLog) {
    let mut plant = Plant::new(plant_cfg, Pose::new(0.0, std::f64::consts::FRAC_PI_2));
    let mut log = InterventionLog::default();
    let mut errors = Vec::with_capacity(targets.len());
    let mut reported = Vec::with_capacity(targets.len());
    for &target in targets {
        let (setpoint, status) = entry.solve(target, plant.measure(), &mut log);
        let mut command = setpoint;
        for tick in 0..ticks.max(1) {
            if tick > 0 {
                let measured = plant.measure();
                command = Pose::new(
                    command.shoulder + crate::kinematics::wrap_angle(setpoint.shoulder - measured.shoulder),
                    command.elbow + crate::kinematics::wrap_angle(setpoint.elbow - measured.elbow),
                );
            }
            plant.command(command);
            plant.settle();
        }
        errors.push((plant.tip() - target).norm());
        reported.push(status.is_reported_failure());
    }
    (errors, reported, log)
}

/// Runs the experiment.
pub fn degradation(args: &DegradationArgs) -> Result<DegradationReport, String> {
    let arm = args.arm.arm()?;
    if args.targets == 0 || args.targets > 1_000_000 {
        return Err(format!("targets must be in 1..=1000000, got {}", args.targets));
    }
    if !(0.0..=10.0).contains(&args.ood_fraction) {
        return Err(format!("ood fraction must be in [0, 10], got {}", args.ood_fraction));
    }
    if !(args.tolerance.is_finite() && args.tolerance > 0.0) {
        return Err(format!("tolerance must be > 0, got {}", args.tolerance));
    }
    if args.ticks == 0 || args.ticks > 100 {
        return Err(format!("ticks must be in 1..=100, got {}", args.ticks));
    }
    let offsets = Pose::new(args.joint_offset.0, args.joint_offset.1);
    let real =
        RealArm::mismatched(&arm, [args.length_error.0, args.length_error.1], offsets).map_err(|e| e.to_string())?;
    let t0 = std::time::Instant::now();
    let models = train_heads(arm, args.region, real, args.train_steps, args.seed)?;
    let train_seconds = t0.elapsed().as_secs_f64();
    let model = |k: HeadKind| models.iter().find(|m| m.kind == k).expect("all heads trained");
    let env_cfg = EnvelopeConfig::for_arm(&arm);
    let mut entries: Vec<Entry> = vec![
        Entry::Plain(Box::new(AnalyticSolver::new(arm, BranchChoice::NearestToSeed))),
        Entry::Plain(Box::new(DlsSolver::new(arm))),
    ];
    for k in HeadKind::ALL {
        entries.push(Entry::Plain(Box::new(LearnedSolver::new(model(k)))));
    }
    for k in [HeadKind::Mse, HeadKind::Mdn] {
        entries.push(Entry::Enveloped(SafetyEnvelope::new(LearnedSolver::new(model(k)), arm, env_cfg)));
    }
    let inside = held_out_targets(&arm, args.region, args.targets, args.seed);
    let n_ood = (args.targets as f64 * args.ood_fraction).round() as usize;
    let ood = ood_targets(&arm, args.region, n_ood, args.seed);
    let settings: Vec<(f64, f64)> =
        args.noise.0.iter().flat_map(|&n| args.backlash.0.iter().map(move |&b| (n, b))).collect();
    let splits = if n_ood > 0 { 2 } else { 1 };
    let n_entries = entries.len();
    let jobs: Vec<(usize, usize, usize)> = (0..settings.len())
        .flat_map(|s| (0..splits).flat_map(move |split| (0..n_entries).map(move |e| (s, e, split))))
        .collect();
    let t1 = std::time::Instant::now();
    let cells: Vec<Cell> = jobs
        .par_iter()
        .map(|&(s, e, split)| {
            let (noise, backlash) = settings[s];
            let seed = args.seed.wrapping_mul(1000).wrapping_add((s * 2 + split) as u64);
            let plant_cfg = PlantConfig { real, backlash, lag: 0.0, noise_std: noise, seed };
            let targets = if split == 0 { &inside } else { &ood };
            let (errors, reported, log) = episode(&entries[e], plant_cfg, targets, args.ticks);
            let n = errors.len().max(1) as f64;
            let missed: Vec<bool> = errors.iter().map(|&err| err.is_nan() || err > args.tolerance).collect();
            let frac = |v: &mut dyn Iterator<Item = bool>| v.filter(|&b| b).count() as f64 / n;
            Cell {
                solver: entries[e].name().to_string(),
                noise,
                backlash,
                split: if split == 0 { "in" } else { "ood" },
                error: Summary::of(&errors),
                reported: frac(&mut reported.iter().copied()),
                missed: frac(&mut missed.iter().copied()),
                silent: frac(&mut missed.iter().zip(&reported).map(|(&m, &r)| m && !r)),
                envelope: matches!(entries[e], Entry::Enveloped(_)).then_some(log),
            }
        })
        .collect();
    let eval_seconds = t1.elapsed().as_secs_f64();
    Ok(DegradationReport {
        cells,
        train_seconds,
        eval_seconds,
        targets: (inside.len(), ood.len()),
        tolerance: args.tolerance,
    })
}

/// `elbow experiment degradation`.
pub fn run_degradation(args: &DegradationArgs) -> Result<(), String> {
    let r = degradation(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serialisable"));
        return Ok(());
    }
    if args.csv {
        println!("solver,split,noise,backlash,mean_error,median_error,p95_error,reported,missed,silent,interventions");
        for c in &r.cells {
            println!(
                "{},{},{},{},{:.6},{:.6},{:.6},{:.4},{:.4},{:.4},{}",
                c.solver,
                c.split,
                c.noise,
                c.backlash,
                c.error.mean,
                c.error.median,
                c.error.p95,
                c.reported,
                c.missed,
                c.silent,
                c.envelope.map_or(String::new(), |l| l.interventions().to_string())
            );
        }
        return Ok(());
    }
    println!(
        "Degradation on the simulated real arm: {} held-out + {} out-of-distribution targets per setting, miss = error > {} m",
        r.targets.0, r.targets.1, r.tolerance
    );
    println!("(heads trained in {:.1} s; evaluation took {:.2} s)", r.train_seconds, r.eval_seconds);
    let mut last = None;
    for c in &r.cells {
        let key = (c.split, c.noise.to_bits(), c.backlash.to_bits());
        if last != Some(key) {
            last = Some(key);
            let split = if c.split == "in" { "held-out targets" } else { "OUT-OF-DISTRIBUTION targets" };
            println!("\n{split}, noise {} rad, backlash {} rad", c.noise, c.backlash);
            println!(
                "  {:<20} {:>10} {:>10} {:>10} {:>10} {:>9} {:>14}",
                "solver", "mean m", "p95 m", "reported", "missed", "SILENT", "interventions"
            );
        }
        println!(
            "  {:<20} {:>10.4} {:>10.4} {:>9.1}% {:>9.1}% {:>8.1}% {:>14}",
            c.solver,
            c.error.mean,
            c.error.p95,
            100.0 * c.reported,
            100.0 * c.missed,
            100.0 * c.silent,
            c.envelope.map_or("-".to_string(), |l| l.interventions().to_string())
        );
    }
    println!("\nThe claims, in numbers:");
    for line in r.claims() {
        println!("  {line}");
    }
    Ok(())
}
