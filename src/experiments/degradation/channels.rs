//! The perturbation channels, their levels, the settings a run sweeps, and the target sets
//! (held-out and out of distribution).
//!
//! Every channel is swept on its own, the others at zero, and then all together
//! ([`Channel::Combined`]: every channel at the same fraction of its largest level). Level 0 of
//! every channel is one shared baseline: the perfect arm, watched by a perfect camera (no noise,
//! no offset, a frame at every tick).
//!
//! The channels of the plant itself (friction, flex, latency) act on the arm; the three camera
//! channels act only on what the camera reports, so they change no tip error: they change what a
//! camera-based post-move check sees.

use crate::kinematics::{Point2, Region, SampleMode, TwoLinkArm};
use crate::learned::held_out_targets;
pub use crate::plant::channel::{
    COUNT, Channel, ChannelLevels, LevelError, MAX_CAMERA_PERIOD, MAX_FRICTION, MAX_TARGET_NOISE, METRES_PER_PIXEL,
    Perturbation,
};
use crate::rng::{Stream, rng};
use rand::RngExt;
use serde::{Deserialize, Serialize};

/// The channels of the exercise protocol: noise on the solver's joint angles and backlash.
pub const EXERCISE_CHANNELS: [Channel; 2] = [Channel::Actuator, Channel::Backlash];

/// One point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    /// The channel swept (`None`: the shared baseline, every channel at zero; left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub channel: Option<Channel>,
    /// Its level.
    pub level: f64,
    /// Every channel's value.
    pub perturbation: Perturbation,
}

/// The settings sweeping `channels`: the baseline, then each nonzero level of each channel
/// alone; [`Channel::Combined`] sets every other listed channel to the fraction of its largest
/// level.
pub fn settings(levels: &ChannelLevels, channels: &[Channel]) -> Vec<Setting> {
    let mut out = vec![Setting { channel: None, level: 0.0, perturbation: Perturbation::default() }];
    for &ch in channels {
        for &level in levels.of(ch).iter().filter(|&&l| l > 0.0) {
            let mut p = Perturbation::default();
            if ch == Channel::Combined {
                for &other in channels.iter().filter(|&&c| c != Channel::Combined) {
                    p.set(other, other.combined_level(level, levels.of(other).iter().copied().fold(0.0, f64::max)));
                }
            } else {
                p.set(ch, level);
            }
            out.push(Setting { channel: Some(ch), level, perturbation: p });
        }
    }
    out
}

/// An out-of-distribution target set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OodKind {
    /// Beyond the reach (5% to 50% further out).
    Beyond,
    /// Inside the unreachable hole around the base (only for arms with `l1 != l2`).
    Hole,
    /// Reachable but outside the training sector (only when the heads trained on a sector).
    Sector,
}

impl OodKind {
    /// Every kind.
    pub const ALL: [OodKind; 3] = [OodKind::Beyond, OodKind::Hole, OodKind::Sector];

    /// The key on the command line and in JSON/CSV.
    pub fn key(self) -> &'static str {
        match self {
            OodKind::Beyond => "beyond",
            OodKind::Hole => "hole",
            OodKind::Sector => "sector",
        }
    }

    /// True when this set has any targets for `arm` and `region`.
    pub fn exists(self, arm: &TwoLinkArm, region: Region) -> bool {
        self.absent_because(arm, region).is_none()
    }

    /// Why this set has no targets for `arm` and `region`, or `None` when it has some.
    pub fn absent_because(self, arm: &TwoLinkArm, region: Region) -> Option<&'static str> {
        match self {
            OodKind::Beyond => None,
            OodKind::Hole => (arm.inner_radius() <= 0.01 * arm.reach())
                .then_some("the arm has no hole around its base (l1 = l2, or within 1 % of the reach)"),
            OodKind::Sector => (!matches!(region, Region::Sector { .. }))
                .then_some("the heads trained on the whole annulus (use --region sector:FROM,TO)"),
        }
    }
}

crate::keys::keyed!(OodKind, "OOD set");

/// Which targets a cell covers. Serialised as its [`Split::key`] (and read back from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Split {
    /// Held-out targets from the training distribution.
    In,
    /// An out-of-distribution set.
    Ood(OodKind),
}

impl Split {
    /// `in`, `beyond`, `hole` or `sector`.
    pub fn key(self) -> &'static str {
        match self {
            Split::In => "in",
            Split::Ood(k) => k.key(),
        }
    }
}

impl From<Split> for &'static str {
    fn from(s: Split) -> Self {
        s.key()
    }
}

impl TryFrom<String> for Split {
    type Error = String;

    /// `in`, or an OOD set's key.
    fn try_from(s: String) -> Result<Self, String> {
        if s == "in" {
            return Ok(Split::In);
        }
        s.parse::<OodKind>().map(Split::Ood).map_err(|e| format!("split must be `in` or an OOD set: {e}"))
    }
}

/// `n` targets of one OOD set.
pub fn ood_targets(arm: &TwoLinkArm, region: Region, kind: OodKind, n: usize, seed: u64) -> Vec<Point2> {
    let mut rng = rng(seed, Stream::OodTargets { slot: kind as u64 }, 0);
    let polar = |r: f64, b: f64| Point2::new(r * b.cos(), r * b.sin());
    (0..n)
        .map(|_| {
            let b: f64 = rng.random_range(-std::f64::consts::PI..std::f64::consts::PI);
            match kind {
                OodKind::Beyond => polar(arm.reach() * rng.random_range(1.05..1.5), b),
                OodKind::Hole => polar(arm.inner_radius() * rng.random_range(0.0..0.95), b),
                OodKind::Sector => {
                    for _ in 0..10_000 {
                        let p = arm.sample_target(&mut rng, SampleMode::UniformArea, Region::Annulus);
                        if !region.contains_bearing(p) {
                            return p;
                        }
                    }
                    polar(arm.reach() * 1.1, b)
                }
            }
        })
        .collect()
}

/// Every target set of a run: the held-out targets, then each OOD set that exists, the OOD
/// budget shared evenly among them.
pub fn target_sets(
    arm: &TwoLinkArm,
    region: Region,
    held_out: usize,
    ood_total: usize,
    kinds: &[OodKind],
    seed: u64,
) -> Vec<(Split, Vec<Point2>)> {
    let mut sets = vec![(Split::In, held_out_targets(arm, region, held_out, seed))];
    let live: Vec<OodKind> = OodKind::ALL.into_iter().filter(|k| kinds.contains(k) && k.exists(arm, region)).collect();
    for (i, &kind) in live.iter().enumerate() {
        let n = ood_total / live.len() + usize::from(i < ood_total % live.len());
        if n > 0 {
            sets.push((Split::Ood(kind), ood_targets(arm, region, kind, n, seed)));
        }
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_is_a_baseline_then_each_channel_alone_then_together() {
        let s = settings(&ChannelLevels::default(), &Channel::ALL);
        assert_eq!(s.len(), 1 + 12 * 3);
        assert_eq!(s[0].perturbation, Perturbation::default());
        let enc = s.iter().find(|x| x.channel == Some(Channel::Encoder) && x.level == 0.05).unwrap();
        assert_eq!(enc.perturbation, Perturbation::default().with(Channel::Encoder, 0.05));
        let all = s.iter().find(|x| x.channel == Some(Channel::Combined) && x.level == 0.5).unwrap();
        // Every other channel at half its largest default level (the camera period at 1 s).
        let expected = Channel::ALL
            .into_iter()
            .filter(|&c| c != Channel::Combined)
            .map(|c| (c, 0.5 * c.row().levels.iter().copied().fold(0.0, f64::max)))
            .fold(Perturbation::default(), |p, (c, v)| p.with(c, v));
        assert_eq!(all.perturbation, expected);
        assert_eq!((all.perturbation[Channel::Encoder], all.perturbation[Channel::Latency]), (0.025, 66.5));
        assert_eq!((all.perturbation[Channel::Mismatch], all.perturbation[Channel::CameraPeriod]), (1.0, 1.0));
    }

    #[test]
    fn ood_sets_lie_where_they_say() {
        let arm = TwoLinkArm::new(1.0, 0.5).unwrap();
        let region = Region::Sector { from: -1.0, to: 1.0 };
        let sets = target_sets(&arm, region, 10, 30, &OodKind::ALL, 3);
        assert_eq!(sets.iter().map(|s| s.1.len()).sum::<usize>(), 40);
        for (split, targets) in &sets {
            for p in targets {
                match split {
                    Split::In => assert!(arm.is_reachable(*p) && region.contains_bearing(*p)),
                    Split::Ood(OodKind::Beyond) => assert!(p.norm() > arm.reach()),
                    Split::Ood(OodKind::Hole) => assert!(p.norm() < arm.inner_radius()),
                    Split::Ood(OodKind::Sector) => assert!(arm.is_reachable(*p) && !region.contains_bearing(*p)),
                }
            }
        }
        let default = target_sets(&TwoLinkArm::default(), Region::Annulus, 10, 5, &OodKind::ALL, 3);
        assert_eq!(default.iter().map(|s| s.0).collect::<Vec<_>>(), [Split::In, Split::Ood(OodKind::Beyond)]);
    }
}
