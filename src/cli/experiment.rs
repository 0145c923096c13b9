//! `elbow experiment averaging|degradation`: arguments become the core's configurations; the
//! reports print as tables, JSON or CSV.

use super::{ArmArgs, Failure, Levels, SignedPair, count, print_json, signals};
use clap::{Args, Subcommand};
use elbow::experiments::{
    AveragingConfig, AveragingReport, DegradationConfig, DegradationReport, GivenNets, Split, averaging_with,
    degradation,
};
use elbow::kinematics::{Mismatch, Pose, Region};
use elbow::learned::{LearnedModel, MAX_EVAL_TARGETS, MAX_STEPS};
use std::path::PathBuf;

/// The experiments.
#[derive(Debug, Subcommand)]
pub(crate) enum ExperimentCommand {
    /// Exercise 1: the averaging trap. MSE output vs branch average vs MDN, FK miss side by side.
    Averaging(AveragingArgs),
    /// The gap to reality: every solver under sensor noise and backlash, honest vs silent failures.
    Degradation(DegradationArgs),
}

/// `elbow experiment ...`.
pub(crate) fn run(command: &ExperimentCommand) -> Result<(), Failure> {
    match command {
        ExperimentCommand::Averaging(a) => {
            let cfg = a.config()?;
            cfg.validate()?;
            let models =
                a.model.iter().map(|p| LearnedModel::load(p).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
            let given = GivenNets::from_models(models, &cfg.arm)?;
            let to_train = [given.mse.is_none(), given.mdn.is_none()];
            let n = to_train.iter().filter(|&&t| t).count();
            let show = !a.json && !a.quiet && n > 0;
            let bar = super::train::progress_bar(show, n * cfg.steps, format!("training {n} net(s)"));
            let polling = signals::Polling::start();
            let mut done_before = 0;
            let mut last_head = None;
            let report = averaging_with(&cfg, given, |head, step| {
                if let Some(bar) = &bar {
                    if last_head.is_some_and(|h| h != head) {
                        done_before += cfg.steps;
                    }
                    last_head = Some(head);
                    if step % 50 == 0 || step == cfg.steps {
                        bar.set_position((done_before + step) as u64);
                        bar.set_message(head.to_string());
                    }
                }
                !signals::interrupted()
            });
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
            let report = report?;
            drop(polling);
            if a.json { print_json(&report)? } else { print_averaging(&report)? }
            Ok(())
        }
        ExperimentCommand::Degradation(a) => {
            let report = degradation(&a.config()?).map_err(|e| e.to_string())?;
            match (a.json, a.csv) {
                (true, _) => print_json(&report)?,
                (_, true) => print_degradation_csv(&report)?,
                _ => print_degradation(&report)?,
            }
            Ok(())
        }
    }
}

fn averaging_defaults() -> AveragingConfig {
    AveragingConfig::default()
}

/// Arguments of `elbow experiment averaging`.
#[derive(Debug, Args)]
pub(crate) struct AveragingArgs {
    /// Training steps for each net, 1 to 10000000.
    #[arg(long, default_value_t = averaging_defaults().steps, value_parser = count::<1, MAX_STEPS>,
          allow_hyphen_values = true)]
    steps: usize,
    /// Held-out targets, 1 to 1000000.
    #[arg(long, default_value_t = averaging_defaults().targets, value_parser = count::<1, MAX_EVAL_TARGETS>,
          allow_hyphen_values = true)]
    targets: usize,
    /// Use this saved model (an `mse` or `mdn` head trained for the same arm, from
    /// `elbow train --out`) instead of training that net; give it once for each head.
    #[arg(long, value_name = "FILE")]
    model: Vec<PathBuf>,
    /// No progress bar on stderr.
    #[arg(long)]
    quiet: bool,
    /// Training region: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value_t = averaging_defaults().region)]
    region: Region,
    /// Seed.
    #[arg(long, default_value_t = averaging_defaults().seed)]
    seed: u64,
    #[command(flatten)]
    arm: ArmArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl AveragingArgs {
    fn config(&self) -> Result<AveragingConfig, String> {
        Ok(AveragingConfig {
            arm: self.arm.arm()?,
            region: self.region,
            steps: self.steps,
            targets: self.targets,
            seed: self.seed,
        })
    }
}

fn degradation_defaults() -> DegradationConfig {
    DegradationConfig::default()
}

/// Arguments of `elbow experiment degradation`.
#[derive(Debug, Args)]
pub(crate) struct DegradationArgs {
    /// Encoder noise levels (standard deviation, radians), comma-separated.
    #[arg(long, default_value_t = Levels(degradation_defaults().noise))]
    noise: Levels,
    /// Backlash levels (dead-zone half-width, radians), comma-separated.
    #[arg(long, default_value_t = Levels(degradation_defaults().backlash))]
    backlash: Levels,
    /// Held-out (in-distribution) targets per setting, 1 to 1000000.
    #[arg(long, default_value_t = degradation_defaults().targets, value_parser = count::<1, MAX_EVAL_TARGETS>,
          allow_hyphen_values = true)]
    targets: usize,
    /// Out-of-distribution targets per setting, as a fraction of `--targets` (beyond the reach,
    /// and outside the training sector when the region is one).
    #[arg(long, default_value_t = degradation_defaults().ood_fraction)]
    ood_fraction: f64,
    /// A tip error above this (metres) counts as a miss.
    #[arg(long, default_value_t = degradation_defaults().tolerance)]
    tolerance: f64,
    /// Joint-servo ticks per target (1: open loop).
    #[arg(long, default_value_t = degradation_defaults().ticks)]
    ticks: usize,
    /// Training steps of each learned head, 1 to 10000000.
    #[arg(long, default_value_t = degradation_defaults().train_steps, value_parser = count::<1, MAX_STEPS>,
          allow_hyphen_values = true)]
    train_steps: usize,
    /// Training region of the learned heads: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value_t = degradation_defaults().region)]
    region: Region,
    /// Real arm's relative link-length errors `E1,E2` (the sim-to-real gap).
    #[arg(long, allow_hyphen_values = true,
          default_value_t = SignedPair(Mismatch::DEFAULT.length_error[0], Mismatch::DEFAULT.length_error[1]))]
    length_error: SignedPair,
    /// Real arm's joint offsets `O1,O2`, radians.
    #[arg(long, allow_hyphen_values = true,
          default_value_t = SignedPair(Mismatch::DEFAULT.joint_offsets.shoulder, Mismatch::DEFAULT.joint_offsets.elbow))]
    joint_offset: SignedPair,
    /// Seed of targets, training and noise.
    #[arg(long, default_value_t = degradation_defaults().seed)]
    seed: u64,
    #[command(flatten)]
    arm: ArmArgs,
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV.
    #[arg(long)]
    csv: bool,
}

impl DegradationArgs {
    fn config(&self) -> Result<DegradationConfig, String> {
        Ok(DegradationConfig {
            arm: self.arm.arm()?,
            noise: self.noise.0.clone(),
            backlash: self.backlash.0.clone(),
            targets: self.targets,
            ood_fraction: self.ood_fraction,
            tolerance: self.tolerance,
            ticks: self.ticks,
            train_steps: self.train_steps,
            region: self.region,
            mismatch: Mismatch {
                length_error: [self.length_error.0, self.length_error.1],
                joint_offsets: Pose::new(self.joint_offset.0, self.joint_offset.1),
            },
            seed: self.seed,
        })
    }
}

fn print_averaging(r: &AveragingReport) -> Result<(), String> {
    outln!(
        "The averaging trap: {} held-out targets, reach {} m (nets trained in {:.1} s)",
        r.targets, r.reach, r.train_seconds
    );
    outln!(
        "{:<20} {:>11} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "pose from", "mean miss", "median", "p95", "% of reach", "Δq to avg", "Δq to branch"
    );
    for row in &r.rows {
        let s = row.fk_miss;
        outln!(
            "{:<20} {:>11.4} {:>11.4} {:>11.4} {:>10.2}% {:>13.3} {:>13.3}",
            row.name,
            s.mean,
            s.median,
            s.p95,
            100.0 * s.mean / r.reach,
            row.mean_distance_to_average,
            row.mean_distance_to_nearest_branch
        );
    }
    outln!(
        "seed target (1.0, 0.8): {}",
        r.seed_target.iter().map(|(n, m)| format!("{n} {m:.4}")).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

fn split_key(split: Split) -> &'static str {
    match split {
        Split::In => "in",
        Split::Ood => "ood",
    }
}

fn print_degradation_csv(r: &DegradationReport) -> Result<(), String> {
    outln!("solver,split,noise,backlash,mean_error,median_error,p95_error,reported,missed,silent,interventions");
    for c in &r.cells {
        outln!(
            "{},{},{},{},{:.6},{:.6},{:.6},{:.4},{:.4},{:.4},{}",
            c.solver,
            split_key(c.split),
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
    Ok(())
}

fn print_degradation(r: &DegradationReport) -> Result<(), String> {
    outln!(
        "Degradation on the simulated real arm: {} held-out + {} out-of-distribution targets per setting, miss = error > {} m",
        r.targets.0, r.targets.1, r.tolerance
    );
    outln!("(heads trained in {:.1} s; evaluation took {:.2} s)", r.train_seconds, r.eval_seconds);
    let mut last = None;
    for c in &r.cells {
        let key = (c.split, c.noise.to_bits(), c.backlash.to_bits());
        if last != Some(key) {
            last = Some(key);
            let split = match c.split {
                Split::In => "held-out targets",
                Split::Ood => "OUT-OF-DISTRIBUTION targets",
            };
            outln!("\n{split}, noise {} rad, backlash {} rad", c.noise, c.backlash);
            outln!(
                "  {:<20} {:>10} {:>10} {:>10} {:>10} {:>9} {:>14}",
                "solver", "mean m", "p95 m", "reported", "missed", "SILENT", "interventions"
            );
        }
        outln!(
            "  {:<20} {:>10.4} {:>10.4} {:>9.1}% {:>9.1}% {:>8.1}% {:>14}",
            c.solver.key(),
            c.error.mean,
            c.error.p95,
            100.0 * c.reported,
            100.0 * c.missed,
            100.0 * c.silent,
            c.envelope.map_or("-".to_string(), |l| l.interventions().to_string())
        );
    }
    outln!("\nThe claims, in numbers:");
    for line in r.claims() {
        outln!("  {line}");
    }
    Ok(())
}
