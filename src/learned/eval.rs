//! Held-out evaluation: targets the net never saw, each answer's FK miss on the arm the head is
//! judged on, and a whole train-then-evaluate run with its report.

use super::head::HeadKind;
use super::model::{LearnedIk, LearnedModel};
use super::train::{TrainConfig, TrainError, Trainer};
use crate::kinematics::{ElbowMode, Point2, Region, SampleMode, TwoLinkArm};
use crate::rng::{Stream, rng};
use crate::stats::Summary;
use serde::Serialize;

/// The most held-out evaluation targets one run may use (and the fewest: 1).
pub const MAX_EVAL_TARGETS: usize = 1_000_000;

/// `Ok` when `n` held-out targets are within `1..=MAX_EVAL_TARGETS`.
pub fn check_eval_targets(field: &'static str, n: usize) -> Result<(), TrainError> {
    if (1..=MAX_EVAL_TARGETS).contains(&n) {
        Ok(())
    } else {
        Err(TrainError::OutOfRange { field, limit: format!("in 1..={MAX_EVAL_TARGETS}"), value: n.to_string() })
    }
}

/// Held-out evaluation targets for a model: the same region, another seed.
pub fn held_out_targets(arm: &TwoLinkArm, region: Region, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = rng(seed, Stream::HeldOut, 0);
    arm.sample_targets(&mut rng, n, SampleMode::UniformArea, region)
}

/// The elbow modes a model is asked for: both for heads that take one, else one (ignored).
fn modes(model: &LearnedModel) -> &'static [ElbowMode] {
    if model.kind.takes_mode() { &ElbowMode::BOTH } else { &[ElbowMode::Down] }
}

/// Tip misses of a model on `targets`, on the arm it is judged on
/// ([`LearnedModel::judged_on`]). Heads that take a mode are asked for both modes (two misses
/// per target).
pub fn fk_misses(model: &LearnedModel, targets: &[Point2]) -> Vec<f64> {
    let arm = model.judged_on();
    let modes = modes(model);
    let mut misses = Vec::with_capacity(targets.len() * modes.len());
    for &t in targets {
        for &mode in modes {
            misses.push(arm.miss(model.predict(t, mode).pose, t));
        }
    }
    misses
}

/// Summary of [`fk_misses`].
pub fn evaluate(model: &LearnedModel, targets: &[Point2]) -> Summary {
    Summary::of(&fk_misses(model, targets))
}

/// What a train-then-evaluate run reports.
#[derive(Debug, Clone, Serialize)]
pub struct TrainReport {
    /// Head trained.
    pub head: HeadKind,
    /// Steps run.
    pub steps: usize,
    /// Training samples seen per second (batch × steps / wall time).
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub samples_per_second: f64,
    /// Wall time of the training loop, seconds.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub train_seconds: f64,
    /// Mean loss of the last 100 steps.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub final_loss: f32,
    /// Held-out FK miss, metres.
    pub fk_miss: Summary,
    /// Mean miss as a percentage of the reach.
    #[serde(serialize_with = "crate::stats::json_numbers")]
    pub mean_miss_percent_of_reach: f64,
    /// For heads that fit the real arm: the analytic solver's miss on that same arm, for
    /// comparison (the residual hybrid with its correction off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub analytic_on_real_arm: Option<Summary>,
    /// For heads that fit the real arm: the share of held-out answers whose learned correction
    /// was applied; the others came out above the model's bound
    /// ([`super::LearnedModel::max_correction`]) and kept the analytic answer uncorrected.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "crate::stats::json_numbers")]
    pub corrections_applied: Option<f64>,
    /// The divergence guard's roll-backs during training (empty: none).
    pub rollbacks: Vec<super::train::Rollback>,
}

/// Held-out targets evaluated between two calls of the progress callback.
const EVAL_CHUNK: usize = 4096;

/// Trains per `cfg`, calling `progress(step, loss)` after every step, then evaluates on
/// `eval_targets` held-out targets (`1..=`[`MAX_EVAL_TARGETS`]); returns the model and its
/// report.
///
/// `progress` returns whether to go on: `false` ends the run with [`TrainError::Cancelled`].
/// It is called again, with the last step, before each chunk of the held-out evaluation, so a
/// cancel also ends a long evaluation.
/// A run whose loss becomes non-finite or exceeds [`super::train::DIVERGED_LOSS`] ends with
/// [`TrainError::Diverged`]; in both cases no model is returned.
pub fn train_and_evaluate(
    cfg: TrainConfig,
    eval_targets: usize,
    mut progress: impl FnMut(usize, f32) -> bool,
) -> Result<(LearnedModel, TrainReport), TrainError> {
    check_eval_targets("evaluation targets", eval_targets)?;
    cfg.validate()?;
    let eval_flops = 4.0 * cfg.parameter_count() * eval_targets as f64;
    if cfg.work_estimate() + eval_flops > super::limits::MAX_TRAIN_FLOPS {
        let (estimate, limit) = (cfg.work_estimate() + eval_flops, super::limits::MAX_TRAIN_FLOPS);
        return Err(TrainError::TooLarge { unit: "FLOP of work", estimate, limit });
    }
    let mut trainer = Trainer::new(cfg)?;
    let start = std::time::Instant::now();
    trainer.run_checked(&mut progress)?;
    let secs = start.elapsed().as_secs_f64();
    let rollbacks = trainer.rollbacks().to_vec();
    let history = &trainer.history;
    let tail = &history[history.len().saturating_sub(100)..];
    let final_loss = tail.iter().sum::<f32>() / tail.len().max(1) as f32;
    let model = trainer.into_model();
    let targets = held_out_targets(&cfg.arm, cfg.region, eval_targets, cfg.seed);
    // The evaluation may be long (a million targets through a wide net): it asks `progress`
    // again between chunks, so a cancel stops it as promptly as it stops the training.
    let mut misses = Vec::with_capacity(targets.len() * modes(&model).len());
    for chunk in targets.chunks(EVAL_CHUNK) {
        if !progress(cfg.steps, final_loss) {
            return Err(TrainError::Cancelled { step: cfg.steps, steps: cfg.steps });
        }
        misses.extend(fk_misses(&model, chunk));
    }
    let fk_miss = Summary::of(&misses);
    let analytic_on_real_arm = cfg.head.fits_real_arm().then(|| analytic_miss_on_real_arm(&model, &targets));
    let corrections_applied = cfg.head.fits_real_arm().then(|| corrections_applied(&model, &targets));
    let report = TrainReport {
        head: cfg.head,
        steps: cfg.steps,
        samples_per_second: (cfg.steps * cfg.batch) as f64 / secs.max(1e-9),
        train_seconds: secs,
        final_loss,
        mean_miss_percent_of_reach: 100.0 * fk_miss.mean / cfg.arm.reach(),
        fk_miss,
        analytic_on_real_arm,
        corrections_applied,
        rollbacks,
    };
    Ok((model, report))
}

/// The analytic answer's miss (the residual hybrid with its correction off) on the real arm the
/// model was fitted to, for both modes of every target.
fn analytic_miss_on_real_arm(model: &LearnedModel, targets: &[Point2]) -> Summary {
    let arm = model.judged_on();
    let misses: Vec<f64> = targets
        .iter()
        .flat_map(|&t| ElbowMode::BOTH.map(|m| arm.miss(model.predict_residual(t, m, false).pose, t)))
        .collect();
    Summary::of(&misses)
}

/// The share of answers (both modes of every target) whose learned correction the residual
/// hybrid applied.
fn corrections_applied(model: &LearnedModel, targets: &[Point2]) -> f64 {
    let applied = targets
        .iter()
        .flat_map(|&t| ElbowMode::BOTH.map(|m| model.predict_residual(t, m, true).correction.is_some()))
        .filter(|&a| a)
        .count();
    applied as f64 / (2 * targets.len()).max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mse_falls_into_the_averaging_trap_and_mdn_escapes_it() {
        let arm = TwoLinkArm::default();
        let targets = held_out_targets(&arm, Region::Annulus, 1000, 1);
        let quick = |head| TrainConfig { head, steps: 1500, data_size: 4000, hidden: 32, ..TrainConfig::default() };
        let mut mse = Trainer::new(quick(HeadKind::Mse)).unwrap();
        mse.run(|_, _| {}).unwrap();
        let mut mdn = Trainer::new(quick(HeadKind::Mdn)).unwrap();
        mdn.run(|_, _| {}).unwrap();
        let (mse, mdn) = (evaluate(mse.model(), &targets), evaluate(mdn.model(), &targets));
        assert!(mse.mean > 0.2, "MSE mean miss {}", mse.mean);
        assert!(mdn.mean < mse.mean / 4.0, "MDN {} vs MSE {}", mdn.mean, mse.mean);
    }
}
