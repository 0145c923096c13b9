//! The headless command line: `solve`, `train`, `experiment` and `bench`.
//!
//! Every number in the README comes from one of these commands. Bad input gives a clear message
//! and exit code 2; nothing panics on user input.

use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, JointLimits, Point2, Pose, RealArm, Region, TwoLinkArm};
use crate::learned::{AngleEncoding, HeadKind, LearnedModel, TrainConfig, Trainer, evaluate, held_out_targets};
use crate::nn::Activation;
use clap::{Args, Parser, Subcommand};
use serde::Serialize;
use std::path::PathBuf;

/// Elbow: the failure modes of learned inverse kinematics, visible and measurable.
#[derive(Debug, Parser)]
#[command(name = "elbow", version, about, after_help = "With no command, the desktop app opens.")]
pub struct Cli {
    /// What to run; with none, the desktop app opens.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Solve one target analytically: both branches, their average and each one's FK error.
    Solve(SolveArgs),
    /// Train a learned head and report its held-out FK error.
    Train(TrainArgs),
    /// Reproduce an experiment.
    #[command(subcommand)]
    Experiment(ExperimentCommand),
    /// Measure solver, training and inference speed headlessly.
    Bench(crate::bench::BenchArgs),
}

/// The experiments.
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Exercise 1: the averaging trap. MSE output vs branch average vs MDN, FK miss side by side.
    Averaging(crate::experiments::AveragingArgs),
    /// The gap to reality: every solver under sensor noise and backlash, honest vs silent failures.
    Degradation(crate::experiments::DegradationArgs),
}

/// The arm shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub struct ArmArgs {
    /// Link lengths `L1,L2` in metres.
    #[arg(long, default_value = "1,1", value_parser = parse_lengths)]
    pub lengths: (f64, f64),
    /// Elbow joint range `MIN,MAX` in degrees (default: unlimited).
    #[arg(long, value_parser = parse_range_deg)]
    pub elbow_limits: Option<(f64, f64)>,
}

impl ArmArgs {
    /// Builds the validated arm.
    pub fn arm(&self) -> Result<TwoLinkArm, String> {
        let arm = TwoLinkArm::new(self.lengths.0, self.lengths.1).map_err(|e| e.to_string())?;
        match self.elbow_limits {
            None => Ok(arm),
            Some((lo, hi)) => {
                let elbow = JointLimits::new(lo.to_radians(), hi.to_radians(), "elbow").map_err(|e| e.to_string())?;
                arm.with_limits(JointLimits::FULL, elbow).map_err(|e| e.to_string())
            }
        }
    }
}

fn parse_pair(s: &str, what: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("{what} must be two numbers `A,B`, got `{s}`"))?;
    let num = |t: &str| t.trim().parse::<f64>().map_err(|_| format!("`{t}` is not a number"));
    let (a, b) = (num(a)?, num(b)?);
    if !(a.is_finite() && b.is_finite()) {
        return Err(format!("{what} must be finite, got `{s}`"));
    }
    Ok((a, b))
}

/// Parses `L1,L2` (both finite and > 0).
pub fn parse_lengths(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = parse_pair(s, "lengths")?;
    if a <= 0.0 || b <= 0.0 {
        return Err(format!("link lengths must be > 0, got `{s}`"));
    }
    Ok((a, b))
}

fn parse_range_deg(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = parse_pair(s, "range")?;
    if a >= b {
        return Err(format!("range needs MIN < MAX, got `{s}`"));
    }
    Ok((a, b))
}

/// Parses a finite number.
pub fn parse_finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a finite number")),
    }
}

/// A comma-separated list of 1 to 16 finite, non-negative levels (`0,0.01,0.05`).
#[derive(Debug, Clone, PartialEq)]
pub struct Levels(pub Vec<f64>);

impl std::str::FromStr for Levels {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<f64> = s.split(',').map(parse_finite).collect::<Result<_, _>>()?;
        if v.iter().any(|&x| x < 0.0) || v.is_empty() || v.len() > 16 {
            return Err(format!("levels must be 1 to 16 numbers >= 0, got `{s}`"));
        }
        Ok(Levels(v))
    }
}

/// Arguments of `elbow solve`.
#[derive(Debug, Args)]
pub struct SolveArgs {
    /// Target x, metres.
    #[arg(allow_hyphen_values = true, value_parser = parse_finite)]
    pub x: f64,
    /// Target y, metres.
    #[arg(allow_hyphen_values = true, value_parser = parse_finite)]
    pub y: f64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub arm: ArmArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct SolveRow {
    name: &'static str,
    shoulder_deg: f64,
    elbow_deg: f64,
    tip: [f64; 2],
    fk_error: f64,
    admissible: bool,
}

#[derive(Serialize)]
struct SolveReport {
    target: [f64; 2],
    reachable: bool,
    unreachable_reason: Option<String>,
    missed_by: Option<f64>,
    rows: Vec<SolveRow>,
}

fn run_solve(args: &SolveArgs) -> Result<(), String> {
    let arm = args.arm.arm()?;
    let target = Point2::new(args.x, args.y);
    let b = solve_branches(&arm, target);
    let row = |name, pose: Pose, admissible| {
        let tip = arm.tip(pose);
        SolveRow {
            name,
            shoulder_deg: pose.shoulder.to_degrees(),
            elbow_deg: pose.elbow.to_degrees(),
            tip: [tip.x, tip.y],
            fk_error: (tip - target).norm(),
            admissible,
        }
    };
    let report = SolveReport {
        target: [args.x, args.y],
        reachable: b.unreachable.is_none(),
        unreachable_reason: b.unreachable.map(|(r, _)| r.to_string()),
        missed_by: b.unreachable.map(|(_, d)| d),
        rows: vec![
            row("elbow-up", b.up, b.is_admissible(ElbowMode::Up)),
            row("elbow-down", b.down, b.is_admissible(ElbowMode::Down)),
            row("average", b.average(), arm.within_limits(b.average())),
        ],
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serialisable"));
        return Ok(());
    }
    println!("target ({}, {}) on arm l1={} l2={}", args.x, args.y, arm.l1(), arm.l2());
    match b.unreachable {
        None => println!("reachable"),
        Some((reason, d)) => {
            println!("UNREACHABLE: {reason}; solving for the nearest reachable point, missed by {d:.6} m")
        }
    }
    println!(
        "{:<11} {:>12} {:>12} {:>22} {:>12} {:>10}",
        "pose", "shoulder°", "elbow°", "tip (x, y)", "FK error m", "in limits"
    );
    for r in &report.rows {
        let tip = format!("({:.6}, {:.6})", r.tip[0], r.tip[1]);
        println!(
            "{:<11} {:>12.4} {:>12.4} {:>22} {:>12.3e} {:>10}",
            r.name, r.shoulder_deg, r.elbow_deg, tip, r.fk_error, r.admissible
        );
    }
    Ok(())
}

/// Arguments of `elbow train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Which head: mse, mdn, mode or residual.
    #[arg(long, default_value = "mdn")]
    pub head: HeadKind,
    /// Minibatch updates.
    #[arg(long, default_value_t = 6000)]
    pub steps: usize,
    /// Samples per minibatch.
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Width of each hidden layer.
    #[arg(long, default_value_t = 64)]
    pub hidden: usize,
    /// Number of hidden layers.
    #[arg(long, default_value_t = 2)]
    pub depth: usize,
    /// MDN mixture components.
    #[arg(long, default_value_t = 2)]
    pub components: usize,
    /// Peak learning rate (cosine-decayed).
    #[arg(long, default_value_t = 3e-3)]
    pub lr: f32,
    /// Hidden activation: tanh or relu.
    #[arg(long, default_value = "tanh")]
    pub activation: Activation,
    /// Output encoding: circular (shoulder as cos/sin, no wrap) or raw angles (wraps at ±180°).
    #[arg(long, default_value = "circular")]
    pub encoding: AngleEncoding,
    /// Training region: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value = "annulus")]
    pub region: Region,
    /// Training targets.
    #[arg(long, default_value_t = 20_000)]
    pub data_size: usize,
    /// Held-out evaluation targets.
    #[arg(long, default_value_t = 5_000)]
    pub eval_targets: usize,
    /// Seed of data, initialisation and batching.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub arm: ArmArgs,
    /// Save the trained model here (JSON).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl TrainArgs {
    /// The training configuration these arguments describe.
    pub fn config(&self) -> Result<TrainConfig, String> {
        let arm = self.arm.arm()?;
        Ok(TrainConfig {
            head: self.head,
            arm,
            region: self.region,
            data_size: self.data_size,
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth,
            activation: self.activation,
            components: self.components,
            lr: self.lr,
            encoding: self.encoding,
            seed: self.seed,
            real: crate::learned::default_real_arm(&arm),
            ..TrainConfig::default()
        })
    }
}

/// What `elbow train` reports.
#[derive(Debug, Serialize)]
pub struct TrainReport {
    /// Head trained.
    pub head: HeadKind,
    /// Steps run.
    pub steps: usize,
    /// Training samples seen per second (batch × steps / wall time).
    pub samples_per_second: f64,
    /// Wall time of the training loop, seconds.
    pub train_seconds: f64,
    /// Mean loss of the last 100 steps.
    pub final_loss: f32,
    /// Held-out FK miss, metres.
    pub fk_miss: crate::stats::Summary,
    /// Mean miss as a percentage of the reach.
    pub mean_miss_percent_of_reach: f64,
    /// For the residual head: the analytic solver's miss on the same real arm, for comparison.
    pub analytic_on_real_arm: Option<crate::stats::Summary>,
}

/// Trains per `cfg`, with an optional progress bar; returns the model and its report.
pub fn train_and_evaluate(
    cfg: TrainConfig,
    eval_targets: usize,
    progress: bool,
) -> Result<(LearnedModel, TrainReport), String> {
    let mut trainer = Trainer::new(cfg).map_err(|e| e.to_string())?;
    let bar = if progress {
        let bar = indicatif::ProgressBar::new(cfg.steps as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} steps  loss {msg}  eta {eta}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(format!("training {}", cfg.head));
        Some(bar)
    } else {
        None
    };
    let start = std::time::Instant::now();
    trainer.run(|step, loss| {
        if let Some(bar) = &bar
            && (step % 50 == 0 || step == cfg.steps)
        {
            bar.set_position(step as u64);
            bar.set_message(format!("{loss:.4}"));
        }
    });
    let secs = start.elapsed().as_secs_f64();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let history = &trainer.history;
    let tail = &history[history.len().saturating_sub(100)..];
    let final_loss = tail.iter().sum::<f32>() / tail.len().max(1) as f32;
    let model = trainer.into_model();
    let targets = held_out_targets(&cfg.arm, cfg.region, eval_targets.max(1), cfg.seed);
    let fk_miss = evaluate(&model, &targets);
    let analytic_on_real_arm = (cfg.head == HeadKind::Residual).then(|| analytic_miss_on(&cfg.real, &model, &targets));
    let report = TrainReport {
        head: cfg.head,
        steps: cfg.steps,
        samples_per_second: (cfg.steps * cfg.batch) as f64 / secs.max(1e-9),
        train_seconds: secs,
        final_loss,
        mean_miss_percent_of_reach: 100.0 * fk_miss.mean / cfg.arm.reach(),
        fk_miss,
        analytic_on_real_arm,
    };
    Ok((model, report))
}

fn analytic_miss_on(real: &RealArm, model: &LearnedModel, targets: &[Point2]) -> crate::stats::Summary {
    let misses: Vec<f64> = targets
        .iter()
        .flat_map(|&t| ElbowMode::BOTH.map(|m| (real.tip(model.predict_residual(t, m, false).pose) - t).norm()))
        .collect();
    crate::stats::Summary::of(&misses)
}

fn run_train(args: &TrainArgs) -> Result<(), String> {
    let cfg = args.config()?;
    let mut probed = None;
    if let Some(path) = &args.out {
        // Find out now, not after training, whether the model can be written there (appending
        // opens an existing file without touching it).
        let existed = path.exists();
        let probe = std::fs::OpenOptions::new().create(true).append(true).open(path);
        probe.map_err(|e| format!("cannot write the model to {}: {e}", path.display()))?;
        probed = (!existed).then_some(path);
    }
    let (model, report) = train_and_evaluate(cfg, args.eval_targets, !args.quiet && !args.json).inspect_err(|_| {
        if let Some(path) = probed {
            let _ = std::fs::remove_file(path); // the empty file the probe left
        }
    })?;
    if let Some(path) = &args.out {
        model.save(path).map_err(|e| e.to_string())?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).expect("serialisable"));
    } else {
        let s = report.fk_miss;
        println!(
            "head {}: {} steps in {:.2} s ({:.0} samples/s), final loss {:.4}",
            report.head, report.steps, report.train_seconds, report.samples_per_second, report.final_loss
        );
        println!(
            "held-out FK miss over {} answers: mean {:.4} m ({:.2}% of reach), median {:.4}, p95 {:.4}, max {:.4}",
            s.n, s.mean, report.mean_miss_percent_of_reach, s.median, s.p95, s.max
        );
        if let Some(a) = report.analytic_on_real_arm {
            println!(
                "analytic alone on the same real arm: mean {:.4} m, median {:.4}, p95 {:.4}",
                a.mean, a.median, a.p95
            );
        }
        if let Some(path) = &args.out {
            println!("saved {}", path.display());
        }
    }
    Ok(())
}

/// Runs a parsed command; `Err` carries the message for the user.
pub fn run(command: &Command) -> Result<(), String> {
    match command {
        Command::Solve(a) => run_solve(a),
        Command::Train(a) => run_train(a),
        Command::Experiment(ExperimentCommand::Averaging(a)) => crate::experiments::run_averaging(a),
        Command::Experiment(ExperimentCommand::Degradation(a)) => crate::experiments::run_degradation(a),
        Command::Bench(a) => crate::bench::run(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_every_subcommand() {
        for args in [
            vec!["elbow", "solve", "1", "-0.5", "--lengths", "1,0.5", "--json"],
            vec!["elbow", "train", "--head", "residual", "--region", "sector:-90,90", "--steps", "10"],
            vec!["elbow", "experiment", "averaging", "--json"],
            vec!["elbow", "experiment", "degradation", "--noise", "0,0.1", "--backlash", "0", "--csv"],
            vec!["elbow", "bench", "--json"],
        ] {
            Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        for bad in [
            vec!["elbow", "solve", "1", "inf"],
            vec!["elbow", "solve", "1", "1", "--lengths", "-1,1"],
            vec!["elbow", "train", "--head", "mlp"],
            vec!["elbow", "train", "--region", "sector:10,5"],
            vec!["elbow", "experiment", "degradation", "--noise", "-1"],
        ] {
            assert!(Cli::try_parse_from(&bad).is_err(), "{bad:?}");
        }
    }
}
