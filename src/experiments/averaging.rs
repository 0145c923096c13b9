//! Exercise 1, the averaging trap: an MSE net trained on data holding both elbow branches lands on
//! their (invalid) average, an MDN on that same data picks a real branch.

use super::ExperimentError;
use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, Point2, Pose, Region, TwoLinkArm};
use crate::learned::{HeadKind, LearnedIk, TrainConfig, held_out_targets, train_and_evaluate};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// Everything that defines an averaging run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AveragingConfig {
    /// The arm.
    pub arm: TwoLinkArm,
    /// Training region of both nets.
    pub region: Region,
    /// Training steps for each net.
    pub steps: usize,
    /// Held-out targets.
    pub targets: usize,
    /// Seed.
    pub seed: u64,
}

impl Default for AveragingConfig {
    fn default() -> Self {
        let t = TrainConfig::default();
        Self { arm: t.arm, region: t.region, steps: t.steps, targets: 5000, seed: t.seed }
    }
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
pub fn averaging(cfg: &AveragingConfig) -> Result<AveragingReport, ExperimentError> {
    let arm = cfg.arm;
    let base = TrainConfig { arm, region: cfg.region, steps: cfg.steps, seed: cfg.seed, ..TrainConfig::default() };
    let (mse, mse_report) = train_and_evaluate(TrainConfig { head: HeadKind::Mse, ..base }, 1, |_, _| {})?;
    let (mdn, mdn_report) = train_and_evaluate(TrainConfig { head: HeadKind::Mdn, ..base }, 1, |_, _| {})?;
    let targets = held_out_targets(&arm, cfg.region, cfg.targets.max(1), cfg.seed);
    type PoseOf<'a> = Box<dyn Fn(Point2) -> Pose + 'a>;
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
                misses.push(arm.miss(pose, t));
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
    let seed_target = sources.iter().map(|(name, f)| (name.to_string(), arm.miss(f(seed_t), seed_t))).collect();
    Ok(AveragingReport {
        targets: targets.len(),
        reach: arm.reach(),
        rows,
        seed_target,
        train_seconds: mse_report.train_seconds + mdn_report.train_seconds,
    })
}
