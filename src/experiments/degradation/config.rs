//! What defines a degradation run ([`DegradationConfig`]), which protocol runs ([`Protocol`]),
//! and the bounds a configuration must respect before any work starts.

use super::channels::{Channel, ChannelLevels, LevelError, OodKind, Perturbation};
use crate::arm::Arm;
use crate::envelope::EnvelopeConfig;
use crate::experiments::PlantTime;
use crate::kinematics::{Mismatch, RealArm, Region, TwoLinkArm};
use crate::plant::{Body, SETTLE_TIMEOUT};
use serde::{Deserialize, Serialize};

/// Which protocol a run follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// The exercise as written: solve from a fixed start pose, add Gaussian noise to the joint
    /// angles, backlash relative to the previous command, FK error of the perturbed pose on the
    /// nominal arm. Open loop; the only report is the solver's own status.
    Exercise,
    /// The closed-loop plant: the arm carries over from target to target, a joint servo runs,
    /// every channel acts, and honest pipelines check the encoders after the move.
    Plant,
    /// Both, side by side.
    Both,
}

impl Protocol {
    /// Every protocol.
    pub const ALL: [Protocol; 3] = [Protocol::Exercise, Protocol::Plant, Protocol::Both];

    /// True when the exercise protocol runs.
    pub fn runs_exercise(self) -> bool {
        matches!(self, Protocol::Exercise | Protocol::Both)
    }

    /// True when the plant protocol runs.
    pub fn runs_plant(self) -> bool {
        matches!(self, Protocol::Plant | Protocol::Both)
    }

    /// The key on the command line and in JSON/CSV.
    pub fn key(self) -> &'static str {
        match self {
            Protocol::Exercise => "exercise",
            Protocol::Plant => "plant",
            Protocol::Both => "both",
        }
    }
}

crate::keys::keyed!(Protocol, "protocol");

/// Everything that defines a degradation run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DegradationConfig {
    /// The nominal arm every solver plans on.
    pub arm: TwoLinkArm,
    /// Which protocol(s) run.
    pub protocol: Protocol,
    /// The levels of every perturbation channel (each swept alone, then all together).
    pub levels: ChannelLevels,
    /// Which out-of-distribution target sets run (those that exist for the arm and region).
    pub ood: Vec<OodKind>,
    /// Held-out (in-distribution) targets per setting.
    pub targets: usize,
    /// Out-of-distribution targets per setting, as a fraction of `targets`, shared among the
    /// OOD sets that run.
    pub ood_fraction: f64,
    /// A tip error above this (metres) counts as a miss; the post-move check uses it too.
    pub tolerance: f64,
    /// Outer corrections per target in the plant protocol after the servos settle on the
    /// solver's goal (0: the plain goal). Each waits until its goal has arrived and the arm has
    /// settled, then sends `goal + (setpoint − measured)`.
    pub corrections: usize,
    /// Plant protocol: classical and enveloped pipelines read the encoders after the move and
    /// report a failure when the FK of the measured joints misses the target.
    pub post_move_check: bool,
    /// Training steps of each learned head not loaded from a file.
    pub train_steps: usize,
    /// Training region of the learned heads.
    pub region: Region,
    /// The real arm's departure from the nominal one at mismatch level 1 (the residual hybrid is
    /// trained against exactly this).
    pub mismatch: Mismatch,
    /// The safety envelope's tuning.
    pub envelope: EnvelopeConfig,
    /// Seed of targets, training and noise.
    pub seed: u64,
    /// The physical arm: servo, link masses, plane. On a chain only the servo applies: the
    /// chain has its own bodies ([`Arm::real`]) and plane ([`Arm::vertical`]).
    pub body: Body,
    /// The redundant chain the run is on ([`super::chain`]); `None`: the two-link arm
    /// [`DegradationConfig::arm`]. On a chain the region and the two-link arm do not apply, and
    /// `train_steps` are the steps of each of its nets. Left out of JSON when `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chain: Option<Arm>,
}

impl Default for DegradationConfig {
    fn default() -> Self {
        let arm = TwoLinkArm::default();
        Self {
            arm,
            protocol: Protocol::Both,
            levels: ChannelLevels::default(),
            ood: OodKind::ALL.to_vec(),
            targets: 400,
            ood_fraction: 0.2,
            tolerance: 0.05,
            corrections: 0,
            post_move_check: true,
            train_steps: 4000,
            region: Region::Annulus,
            mismatch: Mismatch::DEFAULT,
            envelope: EnvelopeConfig::for_arm(&arm),
            seed: 0,
            body: Body::default(),
            chain: None,
        }
    }
}

/// The two-link arm's reach, metres, against which a chain's default tolerances and metre
/// levels are scaled ([`DegradationConfig::on`]).
const TWO_LINK_REACH: f64 = 2.0;

impl DegradationConfig {
    /// The default run on `arm`: on an arm with a closed form, the two-link run on it; on a
    /// chain, the same run scaled to its size. Its tolerance is 2.5 % of the reach (the two-link
    /// arm's 5 cm of 2 m) and the envelope's FK tolerance 1 % of it, with DLS as the fallback;
    /// the levels in metres (target noise, camera offset) scale with the reach likewise (to
    /// two significant digits); the nets train for the chain benchmark's steps; the one OOD set
    /// that exists on a chain (`beyond`) runs; 200 held-out targets per setting keep the run
    /// within a minute on two cores.
    pub fn on(arm: &Arm) -> Self {
        if let Some(two_link) = arm.closed_form() {
            return Self { arm: two_link, envelope: EnvelopeConfig::for_arm(&two_link), ..Self::default() };
        }
        let reach = arm.chain.reach();
        let scale = reach / TWO_LINK_REACH;
        let mut levels = ChannelLevels::default();
        for ch in Channel::ALL.into_iter().filter(|c| c.unit() == "m") {
            for v in levels.of_mut(ch) {
                *v = crate::stats::round_sig(*v * scale, 2);
            }
        }
        let envelope =
            EnvelopeConfig { fallback: crate::envelope::Fallback::Iterative, ..EnvelopeConfig::for_reach(reach) };
        Self {
            levels,
            ood: vec![OodKind::Beyond],
            targets: 200,
            tolerance: crate::stats::round_sig(0.025 * reach, 2),
            train_steps: crate::chain::nets::NetConfig::default().steps,
            envelope,
            chain: Some(arm.clone()),
            ..Self::default()
        }
    }

    /// The pipelines the run measures: the chain's ([`super::chain::pipelines`]) or the two-link
    /// arm's ([`super::pipelines`]).
    pub fn pipelines(&self) -> Vec<super::Pipeline> {
        if self.chain.is_some() { super::chain::pipelines() } else { super::pipelines() }
    }

    /// Why the OOD set `kind` has no targets on this run's arm, or `None` when it has some.
    pub fn absent_because(&self, kind: OodKind) -> Option<&'static str> {
        match &self.chain {
            Some(_) => super::chain::absent_because(kind),
            None => kind.absent_because(&self.arm, self.region),
        }
    }
}

/// Most levels per perturbation channel.
pub const MAX_LEVELS: usize = 16;
/// Most targets per setting.
pub const MAX_TARGETS: usize = 1_000_000;
/// Most moves (plant moves, corrections included, or exercise solves) one solver may be asked for in a run.
pub const MAX_TICKS_PER_SOLVER: u64 = 2_000_000;
/// Most training steps per head.
pub const MAX_TRAIN_STEPS: usize = 10_000_000;
/// Most simulated plant time one run may ask for, seconds, every move counted at its settle
/// timeout ([`DegradationConfig::plant_time`]; the default run: up to 1.8e6 s, of which its
/// moves, 1 to 2 s each, use about 2.7e5 s in some 20 s on two cores). A run at the limit takes
/// a few minutes; one whose every move ran to its timeout, about half an hour.
pub const MAX_PLANT_SECONDS: f64 = 2e7;
/// The largest miss tolerance accepted, metres.
pub const MAX_TOLERANCE: f64 = 1e3;
/// The most OOD targets per setting, as a multiple of the in-distribution targets.
pub const MAX_OOD_FRACTION: f64 = 10.0;
/// The envelope's slowest joint-speed limit, rad/s (infinite: no limit).
pub const MIN_JOINT_SPEED: f64 = 1e-3;
/// The envelope's fastest finite joint-speed limit, rad/s.
pub const MAX_JOINT_SPEED: f64 = 1e4;
/// The shortest control period, seconds: the plant's step.
pub const MIN_CONTROL_PERIOD: f64 = 1e-3;
/// The longest control period, seconds (an hour).
pub const MAX_CONTROL_PERIOD: f64 = 3600.0;

/// Why a degradation configuration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A channel's levels are empty, too many, negative or not finite.
    #[error("{channel} levels must be 1 to {MAX_LEVELS} finite numbers >= 0, got {levels:?}")]
    Levels {
        /// The channel's key.
        channel: &'static str,
        /// What was given.
        levels: Vec<f64>,
    },
    /// A level is outside its channel's range.
    #[error(transparent)]
    Level(#[from] LevelError),
    /// A fraction of the combined channel takes another channel outside its range.
    #[error("--combined {}: {error}", crate::stats::fmt_num(*fraction))]
    Combined {
        /// The combined channel's level (a fraction of every channel's largest level).
        fraction: f64,
        /// What the other channel's level was refused for.
        error: LevelError,
    },
    /// A quantity of the physical arm (servo, masses) is out of its range.
    #[error(transparent)]
    Body(#[from] crate::plant::PlantError),
    /// A setting is out of its range.
    #[error("{what} must be in {range}, got {got}")]
    OutOfRange {
        /// The setting.
        what: &'static str,
        /// The accepted range, in words.
        range: &'static str,
        /// What was given.
        got: String,
    },
    /// The run would ask a solver for more work than a run may.
    #[error(
        "the run would take {ticks} moves per solver ({settings} settings x {targets} targets x {per_target} each), above the limit of {MAX_TICKS_PER_SOLVER}; use fewer targets, levels or corrections"
    )]
    TooMuchWork {
        /// Ticks (or solves) per solver.
        ticks: u64,
        /// Settings.
        settings: usize,
        /// Targets per setting, OOD included.
        targets: usize,
        /// Ticks per target.
        per_target: usize,
    },
    /// The plant protocol would simulate more plant time than a run may
    /// ([`MAX_PLANT_SECONDS`]).
    #[error("{0}")]
    PlantTime(String),
    /// A two-link setting was given for a run on a chain, where it does nothing.
    #[error("{what} does not apply on {arm}: {why}")]
    NotOnChain {
        /// The chain's name.
        arm: String,
        /// The setting, in words.
        what: &'static str,
        /// Why it does not apply.
        why: &'static str,
    },
    /// A mismatch level gives an arm that cannot exist.
    #[error(
        "{source_of_level} gives mismatch level {}, whose real arm cannot exist ({reason}); with this --length-error and --joint-offset the largest level is {}",
        crate::stats::fmt_num(*scale),
        crate::stats::fmt_num(*largest)
    )]
    Mismatch {
        /// Where the level comes from (`--mismatch-scale 30`, `--combined 0.5`).
        source_of_level: String,
        /// The level.
        scale: f64,
        /// Why the arm was refused.
        reason: String,
        /// The largest level that gives a valid arm (to a part in a million).
        largest: f64,
    },
}

impl DegradationConfig {
    /// OOD targets per setting.
    pub fn ood_targets(&self) -> usize {
        (self.targets as f64 * self.ood_fraction).round() as usize
    }

    /// The plant protocol's simulated time, at most: every pipeline, plant setting and target
    /// (OOD included), each send (the goal and every correction) settling for at most
    /// [`SETTLE_TIMEOUT`]. Zero when the plant protocol does not run.
    pub fn plant_time(&self) -> PlantTime {
        let pipelines = self.pipelines().len();
        let settings =
            if self.protocol.runs_plant() { super::channels::settings(&self.levels, &Channel::ALL).len() } else { 0 };
        let targets = self.targets + self.ood_targets();
        let sends = self.corrections + 1;
        let seconds = (pipelines * settings) as f64 * targets as f64 * sends as f64 * SETTLE_TIMEOUT;
        let parts = format!(
            "{pipelines} pipelines x {settings} plant settings x {targets} targets x {sends} move(s) of at most {SETTLE_TIMEOUT} s, the settle timeout"
        );
        PlantTime { seconds, bound: true, parts }
    }

    /// Checks every field, with an error naming the first bad one; also refuses runs above
    /// [`MAX_TICKS_PER_SOLVER`] moves per solver or [`MAX_PLANT_SECONDS`] of plant time.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let num = crate::stats::fmt_num;
        for ch in Channel::ALL {
            let levels = self.levels.of(ch);
            if levels.is_empty() || levels.len() > MAX_LEVELS {
                return Err(ConfigError::Levels { channel: ch.key(), levels: levels.to_vec() });
            }
            for &v in levels {
                ch.check_level(v)?;
            }
        }
        // The combined channel takes every other channel to a fraction of its largest level.
        for &fraction in self.levels.of(Channel::Combined) {
            for ch in Channel::ALL.into_iter().filter(|&c| c != Channel::Combined) {
                let top = self.levels.of(ch).iter().copied().fold(0.0, f64::max);
                let level = ch.combined_level(fraction, top);
                ch.check_level(level).map_err(|error| ConfigError::Combined { fraction, error })?;
            }
        }
        let range = |what, range, ok: bool, got: String| {
            if ok { Ok(()) } else { Err(ConfigError::OutOfRange { what, range, got }) }
        };
        self.body.validate().map_err(ConfigError::Body)?;
        range("targets", "1..=1000000", (1..=MAX_TARGETS).contains(&self.targets), self.targets.to_string())?;
        range(
            "ood fraction",
            "[0, 10]",
            (0.0..=MAX_OOD_FRACTION).contains(&self.ood_fraction),
            num(self.ood_fraction),
        )?;
        range("tolerance", "[1e-9, 1e3] m", (1e-9..=MAX_TOLERANCE).contains(&self.tolerance), num(self.tolerance))?;
        range("corrections", "0..=10", self.corrections <= 10, self.corrections.to_string())?;
        range(
            "train steps",
            "1..=10000000",
            (1..=MAX_TRAIN_STEPS).contains(&self.train_steps),
            self.train_steps.to_string(),
        )?;
        let e = &self.envelope;
        let positive = |v: f64| v.is_finite() && v > 0.0;
        range("envelope FK tolerance", "(0, inf)", positive(e.max_fk_miss), num(e.max_fk_miss))?;
        let speed = e.max_joint_speed;
        let speed_ok = (MIN_JOINT_SPEED..=MAX_JOINT_SPEED).contains(&speed) || speed == f64::INFINITY;
        range("max joint speed", "[1e-3, 1e4] rad/s, or inf (no limit)", speed_ok, num(speed))?;
        let period_ok = (MIN_CONTROL_PERIOD..=MAX_CONTROL_PERIOD).contains(&e.control_period);
        range("control period", "[1e-3, 3600] s", period_ok, num(e.control_period))?;
        range(
            "max correction",
            "[0, inf)",
            e.max_correction >= 0.0 && e.max_correction.is_finite(),
            num(e.max_correction),
        )?;
        if let Some(arm) = &self.chain {
            self.validate_chain(arm)?;
        }
        let mismatch_levels = self.levels.of(Channel::Mismatch);
        let top = mismatch_levels.iter().copied().fold(0.0, f64::max);
        let scales = mismatch_levels.iter().map(|&s| (s, format!("--mismatch-scale {}", crate::stats::fmt_num(s))));
        let combined = self
            .levels
            .of(Channel::Combined)
            .iter()
            .map(|&c| (c * top, format!("--combined {}", crate::stats::fmt_num(c))));
        // The real arm of a mismatch level: the two-link arm's, or the chain's.
        let real = |s: f64| -> Result<(), String> {
            match &self.chain {
                Some(arm) => super::chain::real_at(arm, self.mismatch, s).map(|_| ()).map_err(|e| e.to_string()),
                None => RealArm::with_mismatch(&self.arm, Perturbation::scaled(self.mismatch, s))
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            }
        };
        for (scale, source_of_level) in scales.chain(combined) {
            if let Err(e) = real(scale) {
                // The largest valid level, by bisection between 0 (the nominal arm) and this one.
                let valid = |s: f64| real(s).is_ok();
                let (mut lo, mut hi) = (0.0, scale);
                while hi - lo > 1e-6 * scale.abs().max(1.0) {
                    let mid = 0.5 * (lo + hi);
                    if valid(mid) { lo = mid } else { hi = mid }
                }
                let largest = (lo * 1e6).floor() / 1e6;
                return Err(ConfigError::Mismatch { source_of_level, scale, reason: e.to_string(), largest });
            }
        }
        let targets = self.targets + self.ood_targets();
        let mut work = [(0usize, 0usize); 2];
        if self.protocol.runs_plant() {
            work[0] = (super::channels::settings(&self.levels, &Channel::ALL).len(), self.corrections + 1);
        }
        if self.protocol.runs_exercise() {
            work[1] = (super::channels::settings(&self.levels, &super::channels::EXERCISE_CHANNELS).len(), 1);
        }
        for (settings, per_target) in work {
            let ticks = settings as u64 * targets as u64 * per_target as u64;
            if ticks > MAX_TICKS_PER_SOLVER {
                return Err(ConfigError::TooMuchWork { ticks, settings, targets, per_target });
            }
        }
        self.plant_time()
            .check(MAX_PLANT_SECONDS, "use fewer targets, levels or corrections")
            .map_err(ConfigError::PlantTime)?;
        Ok(())
    }

    /// What a run on the chain `arm` refuses: a two-link setting that would do nothing there.
    fn validate_chain(&self, arm: &Arm) -> Result<(), ConfigError> {
        let not_here =
            |what: &'static str, why: &'static str| Err(ConfigError::NotOnChain { arm: arm.name.clone(), what, why });
        arm.chain.validate().map_err(|e| ConfigError::OutOfRange {
            what: "arm",
            range: "a valid chain",
            got: e.to_string(),
        })?;
        if self.region != Region::Annulus {
            return not_here("a training region", "its nets train on the arm's whole prior");
        }
        if self.body.link_mass != Body::default().link_mass {
            return not_here("link masses", "the chain has its own bodies");
        }
        if self.body.gravity {
            return not_here(
                "the gravity switch",
                "the arm's plane is its own (the SO-101 hangs, the others lie flat)",
            );
        }
        if self.envelope.fallback != crate::envelope::Fallback::Iterative {
            return not_here("the analytic fallback", "a chain has no closed form; its envelope falls back to DLS");
        }
        Ok(())
    }
}
