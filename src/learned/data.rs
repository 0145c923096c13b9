//! Training data: reachable targets, each paired with *both* elbow solutions.
//!
//! This is the data that sets the averaging trap: for every target the set of correct answers has
//! two members, so a squared-error fit can only learn their mean.

use crate::analytic::solve_branches;
use crate::kinematics::{ElbowMode, Point2, Pose, RealArm, Region, SampleMode, TwoLinkArm, wrap_angle};
use crate::rng::{Stream, rng};
use serde::{Deserialize, Serialize};

/// How joint angles are presented to (and read back from) a network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AngleEncoding {
    /// `[cos q1, sin q1, q2 / pi]`: the shoulder as a unit vector (no wrap at +-pi), the elbow as
    /// its raw angle (branches never wrap: up is `<= 0`, down `>= 0`). Continuous everywhere but
    /// at the fully folded arm.
    Circular,
    /// `[q1 / pi, q2 / pi]`: the raw angles, discontinuous where `q1` wraps at +-pi (restrict the
    /// region to a sector to keep the wrap out of the data, or include it to study the failure).
    Raw,
}

crate::keys::keyed!(AngleEncoding, "encoding");

impl AngleEncoding {
    /// Both encodings, default first.
    pub const ALL: [AngleEncoding; 2] = [AngleEncoding::Circular, AngleEncoding::Raw];

    /// The key on the command line.
    pub const fn key(self) -> &'static str {
        match self {
            AngleEncoding::Circular => "circular",
            AngleEncoding::Raw => "raw",
        }
    }

    /// Values per pose.
    pub fn dims(self) -> usize {
        match self {
            AngleEncoding::Circular => 3,
            AngleEncoding::Raw => 2,
        }
    }

    /// Writes the encoding of `pose` into `out[..dims]`.
    pub fn encode(self, pose: Pose, out: &mut [f32]) {
        match self {
            AngleEncoding::Circular => {
                let (s1, c1) = pose.shoulder.sin_cos();
                let q2 = crate::kinematics::wrap_angle(pose.elbow) / std::f64::consts::PI;
                out[..3].copy_from_slice(&[c1 as f32, s1 as f32, q2 as f32]);
            }
            AngleEncoding::Raw => {
                let p = pose.wrapped();
                out[0] = (p.shoulder / std::f64::consts::PI) as f32;
                out[1] = (p.elbow / std::f64::consts::PI) as f32;
            }
        }
    }

    /// Reads a pose back from `v[..dims]` (finite for any finite input).
    pub fn decode(self, v: &[f32]) -> Pose {
        match self {
            AngleEncoding::Circular => {
                Pose::new((v[1] as f64).atan2(v[0] as f64), wrap_angle(v[2] as f64 * std::f64::consts::PI))
            }
            AngleEncoding::Raw => Pose::new(
                wrap_angle(v[0] as f64 * std::f64::consts::PI),
                wrap_angle(v[1] as f64 * std::f64::consts::PI),
            ),
        }
    }
}

/// Where the training targets come from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DataConfig {
    /// The nominal arm the data is solved on.
    pub arm: TwoLinkArm,
    /// The part of the workspace targets are drawn from.
    pub region: Region,
    /// How targets spread over it.
    pub sampling: SampleMode,
    /// Number of targets.
    pub size: usize,
    /// Seed of the target sampler.
    pub seed: u64,
}

impl DataConfig {
    /// The training targets this configuration draws, before any is skipped for lack of an
    /// answer: every dataset of these settings is built on them.
    pub fn targets(&self) -> Vec<Point2> {
        let mut rng = rng(self.seed, Stream::TrainingData, 0);
        self.arm.sample_targets(&mut rng, self.size, self.sampling, self.region)
    }
}

/// One target and the answer for each elbow mode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The tip position asked for.
    pub target: Point2,
    /// What a network should output for it, indexed by [`ElbowMode`] (up, down).
    pub answers: [Pose; 2],
}

impl Sample {
    /// The answer for one mode.
    pub fn answer(&self, mode: ElbowMode) -> Pose {
        self.answers[mode as usize]
    }
}

/// A set of samples drawn from the reachable workspace.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dataset {
    /// The samples.
    pub samples: Vec<Sample>,
}

impl Dataset {
    /// Targets paired with both closed-form solutions on the nominal arm. A target with only one
    /// branch inside the joint limits gets that branch for both modes; one with none is skipped.
    pub fn both_branches(cfg: &DataConfig) -> Self {
        let samples = cfg
            .targets()
            .into_iter()
            .filter_map(|target| {
                let b = solve_branches(&cfg.arm, target);
                let (up, down) = match b.admissible {
                    [true, true] => (b.up, b.down),
                    [true, false] => (b.up, b.up),
                    [false, true] => (b.down, b.down),
                    [false, false] => return None,
                };
                Some(Sample { target, answers: [up, down] })
            })
            .collect();
        Self { samples }
    }

    /// Targets paired with the correction, per mode, that turns the nominal closed-form answer
    /// into the command the `real` arm needs: `answer = command_real - analytic_nominal`, wrapped.
    /// Targets the real arm cannot reach are skipped.
    pub fn residuals(cfg: &DataConfig, real: &RealArm) -> Self {
        let samples = cfg
            .targets()
            .into_iter()
            .filter(|&t| real.arm.is_reachable(t))
            .map(|target| {
                let nominal = solve_branches(&cfg.arm, target);
                let truth = solve_branches(&real.arm, target);
                let delta = |mode: ElbowMode| {
                    let command = real.command_for(truth.pose(mode));
                    let base = nominal.pose(mode);
                    command.wrapped_difference(base)
                };
                Sample { target, answers: [delta(ElbowMode::Up), delta(ElbowMode::Down)] }
            })
            .collect();
        Self { samples }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when there are no samples.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip() {
        let p = Pose::new(2.9, -1.3);
        for enc in [AngleEncoding::Circular, AngleEncoding::Raw] {
            let mut buf = [0f32; 4];
            enc.encode(p, &mut buf);
            let back = enc.decode(&buf);
            assert!(back.max_joint_distance(p) < 1e-6, "{enc:?} {back:?}");
        }
        assert!(AngleEncoding::Circular.decode(&[0.0; 4]).is_finite());
    }

    #[test]
    fn data_holds_both_branches() {
        let cfg = DataConfig {
            arm: TwoLinkArm::default(),
            region: Region::Annulus,
            sampling: SampleMode::UniformArea,
            size: 500,
            seed: 1,
        };
        let data = Dataset::both_branches(&cfg);
        assert_eq!(data.len(), 500);
        for s in &data.samples {
            for mode in ElbowMode::BOTH {
                assert!(cfg.arm.miss(s.answer(mode), s.target) < 1e-9);
            }
            assert!(s.answer(ElbowMode::Up).elbow <= 0.0 && s.answer(ElbowMode::Down).elbow >= 0.0);
        }
    }

    #[test]
    fn residuals_correct_the_nominal_answer_on_the_real_arm() {
        let arm = TwoLinkArm::default();
        let real = RealArm::mismatched(&arm, [0.05, -0.04], Pose::new(0.02, -0.03)).unwrap();
        let cfg = DataConfig { arm, region: Region::Annulus, sampling: SampleMode::UniformArea, size: 300, seed: 2 };
        let data = Dataset::residuals(&cfg, &real);
        assert!(data.len() > 200);
        for s in &data.samples {
            for mode in ElbowMode::BOTH {
                let base = solve_branches(&arm, s.target).pose(mode);
                let d = s.answer(mode);
                let cmd = base + d;
                assert!(real.miss(cmd, s.target) < 1e-9);
            }
        }
    }
}
