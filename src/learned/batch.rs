//! Batched prediction: a learned head's answers for many targets at once, one GEMM per layer
//! ([`crate::nn::Mlp::forward_batch`]), for whole-workspace atlases and live sweeps.
//!
//! Each answer equals [`LearnedIk::predict`](super::LearnedIk::predict)'s pose for the same
//! target and mode up to float rounding, and adds the mixture's confidence for heads that have
//! one.

use super::head::Output;
use super::model::{BatchAnswer, LearnedModel};
use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, Point2, Pose};
use crate::nn::BatchScratch;

/// Reusable buffers for [`LearnedModel::predict_batch`].
#[derive(Debug, Default)]
pub struct PredictScratch {
    inputs: Vec<f32>,
    outputs: Vec<f32>,
    net: BatchScratch,
}

impl LearnedModel {
    /// The answers for every target in `targets`, asked with elbow mode `mode` (heads that do
    /// not take a mode ignore it), appended to `out` in order.
    pub fn predict_batch(
        &self,
        targets: &[Point2],
        mode: ElbowMode,
        scratch: &mut PredictScratch,
        out: &mut Vec<BatchAnswer>,
    ) {
        let (n_in, n_out) = (self.input_dims(), self.output_dims());
        scratch.inputs.resize(targets.len() * n_in, 0.0);
        scratch.outputs.resize(targets.len() * n_out, 0.0);
        let mut x = [0f32; 4];
        for (t, slot) in targets.iter().zip(scratch.inputs.chunks_exact_mut(n_in)) {
            self.features(*t, mode, &mut x);
            slot.copy_from_slice(&x[..n_in]);
        }
        if !targets.is_empty() {
            self.net.forward_batch(&scratch.inputs, &mut scratch.outputs, &mut scratch.net);
        }
        out.reserve(targets.len());
        for (t, y) in targets.iter().zip(scratch.outputs.chunks_exact(n_out)) {
            let answer = match (self.kind.spec().output, self.mdn) {
                (Output::Mixture, Some(mdn)) => {
                    let (k, d) = (mdn.k, mdn.d);
                    let max = y[..k].iter().copied().fold(f32::NEG_INFINITY, f32::max);
                    let sum: f32 = y[..k].iter().map(|&l| (l - max).exp()).sum();
                    let (mut top, mut top_w) = (0, 0.0f32);
                    for (i, &l) in y[..k].iter().enumerate() {
                        let w = (l - max).exp() / sum;
                        if w > top_w {
                            (top, top_w) = (i, w);
                        }
                    }
                    let pose = self.encoding.decode(&y[k + top * d..k + (top + 1) * d]);
                    BatchAnswer { pose, top_weight: top_w, corrected: false }
                }
                (Output::Correction, _) => {
                    let base = solve_branches(&self.arm, *t).pose(mode);
                    let d = Pose::new(y[0] as f64, y[1] as f64) * (1.0 / self.output_scale as f64);
                    let corrected = d.is_finite() && d.max_abs() <= self.max_correction;
                    let pose = if corrected { (base + d).wrapped() } else { base };
                    BatchAnswer { pose, top_weight: 1.0, corrected }
                }
                (Output::Pose, _) | (Output::Mixture, None) => {
                    BatchAnswer { pose: self.encoding.decode(y), top_weight: 1.0, corrected: false }
                }
            };
            let finite = answer.pose.is_finite() && answer.top_weight.is_finite();
            out.push(if finite {
                answer
            } else {
                BatchAnswer { pose: Pose::default(), top_weight: 0.0, corrected: false }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::{Region, TwoLinkArm};
    use crate::learned::{HeadKind, LearnedIk, TrainConfig, Trainer, held_out_targets};

    #[test]
    fn batched_answers_match_single_predictions() {
        let mut targets = held_out_targets(&TwoLinkArm::default(), Region::Annulus, 600, 3);
        targets.extend([Point2::new(5.0, 0.0), Point2::new(0.0, 0.0), Point2::new(f64::NAN, 1.0)]);
        for head in HeadKind::ALL {
            let cfg = TrainConfig { head, steps: 40, data_size: 512, hidden: 16, ..TrainConfig::default() };
            let mut t = Trainer::new(cfg).unwrap();
            t.run(|_, _| {}).unwrap();
            let model = t.into_model();
            for mode in ElbowMode::BOTH {
                let mut out = Vec::new();
                model.predict_batch(&targets, mode, &mut PredictScratch::default(), &mut out);
                assert_eq!(out.len(), targets.len());
                for (t, a) in targets.iter().zip(&out) {
                    let single = model.predict(*t, mode);
                    assert!(a.pose.max_joint_distance(single.pose) < 1e-4, "{head} {t:?}: {a:?} vs {single:?}");
                    assert!((a.top_weight - single.candidates[0].weight).abs() < 1e-4, "{head}");
                    assert_eq!(a.corrected, single.correction.is_some(), "{head} {t:?}");
                    assert!((0.0..=1.0).contains(&a.top_weight));
                }
            }
        }
    }
}
