//! Exercise 1, the averaging trap: an MSE net trained on data holding both elbow branches lands on
//! their (invalid) average, an MDN on that same data picks a real branch.

use crate::analytic::solve_branches;
use crate::cli::{ArmArgs, train_and_evaluate};
use crate::kinematics::{ElbowMode, Point2, Region};
use crate::learned::{HeadKind, LearnedIk, TrainConfig, held_out_targets};
use crate::stats::Summary;
use clap::Args;
use serde::Serialize;

/// Arguments of `elbow experiment averaging`.
#[derive(Debug, Args)]
pub struct AveragingArgs {
    /// Training steps for each net.
    #[arg(long, default_value_t = 6000)]
    pub steps: usize,
    /// Held-out targets.
    #[arg(long, default_value_t = 5000)]
    pub targets: usize,
    /// Training region: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value = "annulus")]
    pub region: Region,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub arm: ArmArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct AveragingRow {
    /// What produced the pose.
    pub name: String,
    /// FK miss statistics over the held-out targets, metres.
    pub fk_miss: Summary,
    /// Mean joint-space distance (max over the two joints, radians) to the branch average.
    pub mean_distance_to_average: f64,
    /// Mean joint-space distance to the nearer true branch.
    pub mean_distance_to_nearest_branch: f64,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct AveragingReport {
    /// Held-out targets used.
    pub targets: usize,
    /// Arm reach, metres.
    pub reach: f64,
    /// Rows: MSE output, branch average, MDN, and each analytic branch.
    pub rows: Vec<AveragingRow>,
    /// The seed exercise's target (1.0, 0.8) on this arm: FK miss of each.
    pub seed_target: Vec<(String, f64)>,
    /// Training wall time of the two nets, seconds.
    pub train_seconds: f64,
}

/// Runs the experiment and returns the report (the CLI prints it).
pub fn averaging(args: &AveragingArgs) -> Result<AveragingReport, String> {
    let arm = args.arm.arm()?;
    let base = TrainConfig { arm, region: args.region, steps: args.steps, seed: args.seed, ..TrainConfig::default() };
    let (mse, mse_report) = train_and_evaluate(TrainConfig { head: HeadKind::Mse, ..base }, 1, false)?;
    let (mdn, mdn_report) = train_and_evaluate(TrainConfig { head: HeadKind::Mdn, ..base }, 1, false)?;
    let targets = held_out_targets(&arm, args.region, args.targets.max(1), args.seed);
    type PoseOf<'a> = Box<dyn Fn(Point2) -> crate::Pose + 'a>;
    let sources: Vec<(&str, PoseOf)> = vec![
        ("MSE net", Box::new(|t| mse.predict(t, ElbowMode::Down).pose)),
        ("branch average", Box::new(|t| solve_branches(&arm, t).average())),
        ("MDN net", Box::new(|t| mdn.predict(t, ElbowMode::Down).pose)),
        ("analytic elbow-up", Box::new(|t| solve_branches(&arm, t).up)),
        ("analytic elbow-down", Box::new(|t| solve_branches(&arm, t).down)),
    ];
    let rows = sources
        .iter()
        .map(|(name, f)| {
            let mut misses = Vec::with_capacity(targets.len());
            let (mut to_avg, mut to_branch) = (0.0, 0.0);
            for &t in &targets {
                let pose = f(t);
                let b = solve_branches(&arm, t);
                misses.push((arm.tip(pose) - t).norm());
                to_avg += pose.max_joint_distance(b.average());
                to_branch += pose.max_joint_distance(b.up).min(pose.max_joint_distance(b.down));
            }
            let n = targets.len() as f64;
            AveragingRow {
                name: name.to_string(),
                fk_miss: Summary::of(&misses),
                mean_distance_to_average: to_avg / n,
                mean_distance_to_nearest_branch: to_branch / n,
            }
        })
        .collect();
    let seed_t = Point2::new(1.0, 0.8);
    let seed_target =
        sources.iter().map(|(name, f)| (name.to_string(), (arm.tip(f(seed_t)) - seed_t).norm())).collect();
    Ok(AveragingReport {
        targets: targets.len(),
        reach: arm.reach(),
        rows,
        seed_target,
        train_seconds: mse_report.train_seconds + mdn_report.train_seconds,
    })
}

/// `elbow experiment averaging`.
pub fn run_averaging(args: &AveragingArgs) -> Result<(), String> {
    let r = averaging(args)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).expect("serialisable"));
        return Ok(());
    }
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
