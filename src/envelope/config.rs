//! The envelope's tuning: tolerances, the joint-speed limit and control period behind the
//! joint-step check, the residual hybrid's trust region, and the fallback solver.

use crate::kinematics::TwoLinkArm;
use serde::{Deserialize, Serialize};

/// Which classical solver takes over from a rejected proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fallback {
    /// Closed form, the branch nearest the current pose.
    Analytic,
    /// Damped least squares, warm-started from the current pose.
    Iterative,
}

/// Tuning of the envelope. Its numbers may be infinite (no limit); JSON writes those as
/// `"inf"` ([`crate::stats::json_numbers`]), never `null`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnvelopeConfig {
    /// Largest accepted FK miss on the nominal model, metres (pose heads).
    #[serde(serialize_with = "crate::stats::json_numbers", deserialize_with = "crate::stats::json_f64")]
    pub max_fk_miss: f64,
    /// Fastest a joint may turn, radians per second.
    #[serde(serialize_with = "crate::stats::json_numbers", deserialize_with = "crate::stats::json_f64")]
    pub max_joint_speed: f64,
    /// Time between two proposals, seconds: a proposal may move each joint at most
    /// `max_joint_speed * control_period` from the current pose.
    #[serde(serialize_with = "crate::stats::json_numbers", deserialize_with = "crate::stats::json_f64")]
    pub control_period: f64,
    /// Trust region of the residual hybrid: the largest accepted learned correction on either
    /// joint, radians.
    #[serde(serialize_with = "crate::stats::json_numbers", deserialize_with = "crate::stats::json_f64")]
    pub max_correction: f64,
    /// Who answers instead of a rejected proposal.
    pub fallback: Fallback,
}

impl EnvelopeConfig {
    /// Default joint-speed limit, radians per second.
    pub const DEFAULT_MAX_JOINT_SPEED: f64 = 2.5;
    /// Default control period, seconds: the experiments send the arm one new target a second.
    pub const DEFAULT_CONTROL_PERIOD: f64 = 1.0;
    /// Default trust region of residual corrections, radians.
    pub const DEFAULT_MAX_CORRECTION: f64 = 0.2;

    /// Defaults for `arm`: an FK tolerance of 1% of the reach, 2.5 rad/s over a 1 s control
    /// period (a 2.5 rad joint step), corrections up to 0.2 rad, analytic fallback.
    pub fn for_arm(arm: &TwoLinkArm) -> Self {
        Self::for_reach(arm.reach())
    }

    /// Defaults for an arm of `reach` metres ([`EnvelopeConfig::for_arm`]'s, by the reach).
    pub fn for_reach(reach: f64) -> Self {
        Self {
            max_fk_miss: 0.01 * reach,
            max_joint_speed: Self::DEFAULT_MAX_JOINT_SPEED,
            control_period: Self::DEFAULT_CONTROL_PERIOD,
            max_correction: Self::DEFAULT_MAX_CORRECTION,
            fallback: Fallback::Analytic,
        }
    }

    /// The largest accepted change of any joint in one proposal, radians: speed times period
    /// (infinite when either is not a finite positive number, which switches the check off).
    pub fn max_joint_step(&self) -> f64 {
        let step = self.max_joint_speed * self.control_period;
        if step.is_finite() && step > 0.0 { step } else { f64::INFINITY }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_numbers_are_written_inf_and_read_back() {
        let cfg = EnvelopeConfig {
            max_joint_speed: f64::INFINITY,
            max_correction: f64::INFINITY,
            ..EnvelopeConfig::for_arm(&TwoLinkArm::default())
        };
        let text = serde_json::to_string(&cfg).unwrap();
        assert!(!text.contains("null") && text.contains(r#""max_joint_speed":"inf""#), "{text}");
        assert_eq!(serde_json::from_str::<EnvelopeConfig>(&text).unwrap(), cfg);
    }
}
