//! `elbow experiment averaging|degradation`: arguments become the core's configurations; the
//! reports print as tables, JSON or CSV.

mod degradation;

use super::{ArmArgs, print_json};
use clap::{Args, Subcommand};
use degradation::DegradationArgs;
use elbow::experiments::{AveragingConfig, AveragingReport, averaging};
use elbow::kinematics::Region;

/// The experiments.
#[derive(Debug, Subcommand)]
pub(crate) enum ExperimentCommand {
    /// Exercise 1: the averaging trap. MSE output vs branch average vs MDN, FK miss side by side.
    Averaging(AveragingArgs),
    /// The gap to reality: every solver under each perturbation channel (encoder, actuator,
    /// backlash, target, mismatch, combined; OOD targets), honest vs silent failures, the exercise
    /// protocol beside the closed-loop plant.
    Degradation(Box<DegradationArgs>),
}

/// `elbow experiment ...`.
pub(crate) fn run(command: &ExperimentCommand) -> Result<(), String> {
    match command {
        ExperimentCommand::Averaging(a) => {
            let report = averaging(&a.config()?).map_err(|e| e.to_string())?;
            if a.json { print_json(&report) } else { print_averaging(&report) }
        }
        ExperimentCommand::Degradation(a) => degradation::run(a),
    }
}

fn averaging_defaults() -> AveragingConfig {
    AveragingConfig::default()
}

/// Arguments of `elbow experiment averaging`.
#[derive(Debug, Args)]
pub(crate) struct AveragingArgs {
    /// Training steps for each net.
    #[arg(long, default_value_t = averaging_defaults().steps)]
    steps: usize,
    /// Held-out targets.
    #[arg(long, default_value_t = averaging_defaults().targets)]
    targets: usize,
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

fn print_averaging(r: &AveragingReport) -> Result<(), String> {
    println!(
        "The averaging trap: {} held-out targets, reach {} m (nets trained in {:.1} s)",
        r.targets, r.reach, r.train_seconds
    );
    println!(
        "{:<20} {:>11} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "pose from", "mean miss", "median", "p95", "% of reach", "Δq to avg", "Δq to branch"
    );
    for row in &r.rows {
        let s = row.fk_miss;
        println!(
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
    println!(
        "seed target (1.0, 0.8): {}",
        r.seed_target.iter().map(|(n, m)| format!("{n} {m:.4}")).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}
