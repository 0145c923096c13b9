//! Exercise 1, the averaging trap: an MSE net trained on data holding both elbow branches lands on
//! their (invalid) average, an MDN on that same data picks a real branch.

use super::ExperimentError;
use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, Point2, Pose, Region, TwoLinkArm};
use crate::learned::{
    HeadKind, LearnedIk, LearnedModel, TrainConfig, check_eval_targets, held_out_targets, train_and_evaluate,
};
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
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mean_distance_to_average: f64,
    /// Mean joint-space distance to the nearer true branch.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mean_distance_to_nearest_branch: f64,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct AveragingReport {
    /// Held-out targets used.
    pub targets: usize,
    /// Arm reach, metres.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub reach: f64,
    /// Rows: MSE output, branch average, MDN, and each analytic branch.
    pub rows: Vec<AveragingRow>,
    /// The seed exercise's target (1.0, 0.8) on this arm: FK miss of each.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub seed_target: Vec<(String, f64)>,
    /// Training wall time of the nets trained (given ones take none), seconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub train_seconds: f64,
}

impl AveragingConfig {
    /// The training configuration of one of the two nets.
    pub fn train_config(&self, head: HeadKind) -> TrainConfig {
        TrainConfig {
            head,
            arm: self.arm,
            region: self.region,
            steps: self.steps,
            seed: self.seed,
            ..TrainConfig::default()
        }
    }

    /// Checks every setting (both nets' training runs included) before anything runs.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        check_eval_targets("targets", self.targets)?;
        for head in [HeadKind::Mse, HeadKind::Mdn] {
            self.train_config(head).validate()?;
        }
        Ok(())
    }
}

/// Models given to [`averaging_with`] instead of training them.
#[derive(Debug, Clone, Default)]
pub struct GivenNets {
    /// An MSE head to use instead of training one.
    pub mse: Option<LearnedModel>,
    /// An MDN head to use instead of training one.
    pub mdn: Option<LearnedModel>,
}

impl GivenNets {
    /// Sorts loaded models into their slots: each must be an MSE or MDN head trained for `arm`,
    /// at most one of each.
    pub fn from_models(models: Vec<LearnedModel>, arm: &TwoLinkArm) -> Result<Self, ExperimentError> {
        let mut given = Self::default();
        for m in models {
            m.check_fits(arm, None).map_err(ExperimentError::Invalid)?;
            let slot = match m.kind {
                HeadKind::Mse => &mut given.mse,
                HeadKind::Mdn => &mut given.mdn,
                other => {
                    return Err(ExperimentError::Invalid(format!(
                        "the averaging experiment compares an mse and an mdn head; a {other} model has no place in it"
                    )));
                }
            };
            if slot.is_some() {
                return Err(ExperimentError::Invalid(format!("two {} models given; give at most one of each", m.kind)));
            }
            *slot = Some(m);
        }
        Ok(given)
    }
}

/// Runs the experiment and returns the report (the CLI prints it).
pub fn averaging(cfg: &AveragingConfig) -> Result<AveragingReport, ExperimentError> {
    averaging_with(cfg, GivenNets::default(), |_, _| true)
}

/// [`averaging`], using the given nets instead of training them, and calling
/// `progress(head, step)` after every training step (`false` ends the run with a
/// [`crate::learned::TrainError::Cancelled`] error).
pub fn averaging_with(
    cfg: &AveragingConfig,
    given: GivenNets,
    mut progress: impl FnMut(HeadKind, usize) -> bool,
) -> Result<AveragingReport, ExperimentError> {
    cfg.validate()?;
    let arm = cfg.arm;
    let mut train_seconds = 0.0;
    let mut net = |head: HeadKind, given: Option<LearnedModel>| -> Result<LearnedModel, ExperimentError> {
        if let Some(m) = given {
            return Ok(m);
        }
        let (model, report) = train_and_evaluate(cfg.train_config(head), 1, |step, _| progress(head, step))?;
        train_seconds += report.train_seconds;
        Ok(model)
    };
    let mse = net(HeadKind::Mse, given.mse)?;
    let mdn = net(HeadKind::Mdn, given.mdn)?;
    let targets = held_out_targets(&arm, cfg.region, cfg.targets, cfg.seed);
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
    Ok(AveragingReport { targets: targets.len(), reach: arm.reach(), rows, seed_target, train_seconds })
}
