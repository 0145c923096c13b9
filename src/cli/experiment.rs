//! `elbow experiment averaging|degradation|randomization|tracking|chain|bishop1994`: arguments become the core's configurations; the
//! reports print as tables, JSON or CSV.

mod bishop;
mod chain;
mod channel_flags;
pub(crate) use chain::{ChainLengths, print_budget, print_chain_rows};
mod degradation;
mod randomization;
mod tracking;

use super::{ArmArgs, Failure, count, print_json, seed, signals};
use clap::{Args, Subcommand};
use degradation::DegradationArgs;
use elbow::experiments::{AveragingConfig, AveragingReport, GivenNets, averaging_with};
use elbow::kinematics::Region;
use elbow::learned::{LearnedModel, MAX_EVAL_TARGETS, MAX_STEPS};
use randomization::RandomizationArgs;
use std::path::PathBuf;

/// The experiments.
#[derive(Debug, Subcommand)]
pub(crate) enum ExperimentCommand {
    /// Exercise 1: the averaging trap. MSE output vs branch average vs MDN, FK miss side by side.
    Averaging(AveragingArgs),
    /// The gap to reality: every solver under each perturbation channel (encoder, actuator,
    /// backlash, target, mismatch, friction, flex, latency, camera noise/offset/period, combined;
    /// OOD targets), honest vs silent failures on the encoders and on a camera, the exercise
    /// protocol beside the closed-loop plant.
    Degradation(Box<DegradationArgs>),
    /// Domain randomization put to the test: the MDN and the residual hybrid trained on the
    /// nominal plant and with randomized mismatch, flex, friction and backlash, then tested on
    /// plants inside and outside the randomized ranges, with encoder and camera checks, and a
    /// feedback head against calibration; with `--arm rail3|so101|3r`, the feedback head against
    /// DLS and calibration on that chain.
    Randomization(Box<RandomizationArgs>),
    /// Tracking a moving target: every solver drives the physical plant after a figure eight at
    /// set speeds and control latencies, on the two-link arm or a chain (`--arm rail3|3r|so101`);
    /// mean and worst tip error per latency and speed, and whether latency costs error in
    /// proportion to speed x delay.
    Tracking(Box<tracking::TrackingArgs>),
    /// Redundant chains (`--arm rail3` or `3r`): MSE, MDN, DLS, MDN-seeded DLS and the exact
    /// posterior sampler, scored by re-simulation error, posterior mismatch, success and time.
    Chain(Box<chain::ChainArgs>),
    /// Bishop 1994's two-link set-up (the paper that introduced the MDN): our squared-error net
    /// and MDN trained on its arm, ranges and network size, their RMS tip error beside the
    /// report's.
    #[command(name = "bishop1994")]
    Bishop1994(bishop::BishopArgs),
}

/// `elbow experiment ...`.
pub(crate) fn run(command: &ExperimentCommand) -> Result<(), Failure> {
    match command {
        ExperimentCommand::Averaging(a) => {
            let cfg = a.config()?;
            cfg.validate()?;
            let models = a
                .model
                .iter()
                .map(|p| {
                    let m = LearnedModel::load(p).map_err(|e| e.to_string())?;
                    m.check_fits(&cfg.arm, Some(cfg.region)).map_err(|e| format!("{}: {e}", p.display()))?;
                    Ok(m)
                })
                .collect::<Result<_, String>>()?;
            let given = GivenNets::from_models(models, &cfg.arm)?;
            let to_train = [given.mse.is_none(), given.mdn.is_none()];
            let n = to_train.iter().filter(|&&t| t).count();
            let show = !a.json && !a.quiet && n > 0;
            let bar = super::progress_bar(show, n * cfg.steps, "steps", format!("training {n} net(s)"));
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
            if a.json {
                print_json(&report)?
            } else {
                print_averaging(&report)?
            }
            Ok(())
        }
        ExperimentCommand::Degradation(a) => degradation::run(a),
        ExperimentCommand::Randomization(a) => randomization::run(a),
        ExperimentCommand::Tracking(a) => tracking::run(a),
        ExperimentCommand::Chain(a) => chain::run(a),
        ExperimentCommand::Bishop1994(a) => Ok(bishop::run(a)?),
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
    #[arg(long, default_value_t = averaging_defaults().seed, value_parser = seed, allow_hyphen_values = true)]
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
    outln!(
        "The averaging trap: {} held-out targets, reach {} m (nets trained in {:.1} s)",
        r.targets,
        r.reach,
        r.train_seconds
    );
    outln!(
        "{:<20} {:>11} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "pose from",
        "mean miss",
        "median",
        "p95",
        "% of reach",
        "Δq to avg",
        "Δq to branch"
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
