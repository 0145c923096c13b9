//! Bishop 1994's two-link arm, the set-up of the paper that introduced mixture density networks
//! (C. M. Bishop, "Mixture Density Networks", NCRG/94/004, Aston University, 1994, §6), with our
//! squared-error net and MDN trained on it, and the RMS tip error the paper reports beside ours.
//!
//! The set-up as the report describes it: links of 0.8 and 0.2, joint angles drawn uniformly
//! with the shoulder in (0.3, 1.2) rad and the elbow's interior angle in (π/2, 3π/2), which in
//! our convention (0 = straight) is an elbow angle within ±π/2; 1,000 training and 1,000 test
//! points; one hidden layer of 20 units. The error is the RMS Euclidean distance between the
//! desired tip position and the tip the predicted joints give. The MDN answers with the mean of
//! its likeliest component. Our nets train with Adam on minibatches, not as the report did;
//! only the set-up is the paper's.

use super::ExperimentError;
use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, JointLimits, Point2, Region, SampleMode, TwoLinkArm};
use crate::learned::{HeadKind, LearnedIk, LearnedModel, TrainConfig, Trainer};
use crate::rng::{Stream, rng};
use crate::stats::json_numbers;
use serde::{Deserialize, Serialize};
use std::f64::consts::FRAC_PI_2;

/// The RMS tip error the report gives for the squared-error network, metres.
pub const PAPER_MSE_RMS: f64 = 0.0578;
/// The RMS tip error the report gives for the mixture density network, metres.
pub const PAPER_MDN_RMS: f64 = 0.0053;

/// Everything that defines a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BishopConfig {
    /// Training steps of each net.
    pub steps: usize,
    /// Training points (the report: 1,000).
    pub train: usize,
    /// Test points (the report: 1,000).
    pub test: usize,
    /// Hidden units of the one hidden layer (the report: 20).
    pub hidden: usize,
    /// Seed of the data, the initialisation and the test points.
    pub seed: u64,
}

impl Default for BishopConfig {
    fn default() -> Self {
        Self { steps: TrainConfig::default().steps, train: 1000, test: 1000, hidden: 20, seed: 0 }
    }
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct BishopRow {
    /// What produced the joints.
    pub name: String,
    /// RMS tip error over the test points, metres.
    #[serde(serialize_with = "json_numbers")]
    pub rms: f64,
    /// Median tip error, metres.
    #[serde(serialize_with = "json_numbers")]
    pub median: f64,
    /// The report's RMS figure for this net, when it gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper_rms: Option<f64>,
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct BishopReport {
    /// The run's settings.
    pub config: BishopConfig,
    /// The arm: links and joint limits.
    pub arm: TwoLinkArm,
    /// Test points whose target has both branches inside the limits (where averaging can bite).
    pub two_branch_share: f64,
    /// Rows: squared error, MDN, the branches' average (what a perfect squared-error fit gives
    /// where both branches are in the data).
    pub rows: Vec<BishopRow>,
    /// Training wall time of both nets, seconds.
    #[serde(serialize_with = "json_numbers")]
    pub train_seconds: f64,
    /// The divergence guard's roll-backs in training the two nets (only nets that had any).
    pub rollbacks: Vec<crate::learned::train::NetRollbacks>,
}

/// The report's arm: links 0.8 and 0.2, shoulder in [0.3, 1.2] rad, elbow within ±π/2.
pub fn bishop_arm() -> TwoLinkArm {
    let limits = (JointLimits::new(0.3, 1.2, "shoulder"), JointLimits::new(-FRAC_PI_2, FRAC_PI_2, "elbow"));
    let arm = TwoLinkArm::new(0.8, 0.2).expect("valid lengths");
    arm.with_limits(limits.0.expect("valid range"), limits.1.expect("valid range")).expect("valid limits")
}

impl BishopConfig {
    /// The training configuration of one net on the report's arm and data.
    pub fn train_config(&self, head: HeadKind) -> TrainConfig {
        TrainConfig {
            head,
            arm: bishop_arm(),
            region: Region::Annulus,
            sampling: SampleMode::JointSpace,
            data_size: self.train,
            hidden: self.hidden,
            depth: 1,
            steps: self.steps,
            seed: self.seed,
            ..TrainConfig::default()
        }
    }

    /// The test points: joint angles drawn uniformly inside the limits, through the arm.
    pub fn test_targets(&self) -> Vec<Point2> {
        let mut rng = rng(self.seed, Stream::HeldOut, 1994);
        bishop_arm().sample_targets(&mut rng, self.test, SampleMode::JointSpace, Region::Annulus)
    }
}

/// RMS tip error of `model`'s answers over `targets` on the report's arm (the MDN answers with
/// its likeliest component's mean), metres.
pub fn rms_tip_error(model: &LearnedModel, targets: &[Point2]) -> f64 {
    rms_median(&mut tip_errors(model, targets)).0
}

/// Each target's tip error on the report's arm.
fn tip_errors(model: &LearnedModel, targets: &[Point2]) -> Vec<f64> {
    let arm = bishop_arm();
    targets.iter().map(|&t| arm.miss(model.predict(t, ElbowMode::Down).pose, t)).collect()
}

/// RMS and median of `errors`.
fn rms_median(errors: &mut [f64]) -> (f64, f64) {
    let rms = (errors.iter().map(|e| e * e).sum::<f64>() / errors.len().max(1) as f64).sqrt();
    errors.sort_by(f64::total_cmp);
    let median = errors.get(errors.len() / 2).copied().unwrap_or(f64::NAN);
    (rms, median)
}

/// Trains both nets on the report's set-up and scores them on its test points.
pub fn bishop1994(cfg: &BishopConfig) -> Result<BishopReport, ExperimentError> {
    let arm = bishop_arm();
    let started = std::time::Instant::now();
    let (mut models, mut rollbacks) = (Vec::new(), Vec::new());
    for head in [HeadKind::Mse, HeadKind::Mdn] {
        let mut trainer = Trainer::new(cfg.train_config(head))?;
        trainer.run(|_, _| {})?;
        rollbacks.extend(crate::learned::train::NetRollbacks::of(head.key(), trainer.rollbacks()));
        models.push(trainer.into_model());
    }
    let train_seconds = started.elapsed().as_secs_f64();
    let targets = cfg.test_targets();
    let mut rows = Vec::new();
    for (model, paper) in models.iter().zip([PAPER_MSE_RMS, PAPER_MDN_RMS]) {
        let mut errors = tip_errors(model, &targets);
        let (rms, median) = rms_median(&mut errors);
        rows.push(BishopRow { name: model.kind.key().to_string(), rms, median, paper_rms: Some(paper) });
    }
    let branches: Vec<_> = targets.iter().map(|&t| (t, solve_branches(&arm, t))).collect();
    let both = branches.iter().filter(|(_, b)| b.admissible == [true, true]).count();
    let mut average: Vec<f64> = branches.iter().map(|(t, b)| arm.miss(b.average(), *t)).collect();
    let (rms, median) = rms_median(&mut average);
    rows.push(BishopRow { name: "branch average".into(), rms, median, paper_rms: None });
    Ok(BishopReport {
        config: *cfg,
        arm,
        two_branch_share: both as f64 / targets.len().max(1) as f64,
        rows,
        train_seconds,
        rollbacks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reports_arm_reaches_its_wedge_and_some_targets_have_both_branches() {
        let cfg = BishopConfig { test: 2000, ..BishopConfig::default() };
        let arm = bishop_arm();
        let targets = cfg.test_targets();
        let mut both = 0;
        for &t in &targets {
            let b = solve_branches(&arm, t);
            assert!(b.unreachable.is_none() && b.admissible.contains(&true), "{t:?}");
            let bearing = t.y.atan2(t.x);
            assert!((0.0..1.6).contains(&bearing), "{t:?}");
            both += usize::from(b.admissible == [true, true]);
        }
        assert!(both > 100 && both < targets.len(), "{both}");
    }

    #[test]
    fn the_mdn_beats_the_squared_error_net_on_the_reports_set_up() {
        let cfg = BishopConfig { steps: 1500, ..BishopConfig::default() };
        let r = bishop1994(&cfg).expect("runs");
        let rms = |name: &str| r.rows.iter().find(|row| row.name == name).expect("row").rms;
        assert!(rms("mdn") < 0.5 * rms("mse"), "{:?}", r.rows);
        assert!(rms("mse") > 0.01, "{:?}", r.rows);
    }
}
