//! Tracking a moving target under control latency: what latency costs while the target moves,
//! on every arm of the registry ([`Arm`]).
//!
//! The target runs a figure eight, `x(t) = cx + ax sin(2π t/T)`, `y(t) = cy + ay sin(4π t/T)`, at
//! set mean speeds: the period `T` of each is the path's length over the speed. On the two-link
//! arm the path is the MuJoCo reference's `2r_track_*` scenario (centre (1.2, 0) m, amplitudes
//! 0.4 m and 0.3 m on the 1 m + 1 m arm); on a redundant chain it is scaled to the arm
//! ([`FigureEight::for_arm`]: centred on the arm's demo target, the reference's amplitudes as
//! shares of the arm's reach) and checked to lie inside the reachable workspace with a margin
//! ([`chain::unreachable`]).
//!
//! Each pipeline of the arm's line-up ([`arm_pipelines`]) drives the physical plant ([`Plant`]:
//! position servos, rigid-body dynamics, nothing perturbed but the latency) at a set control
//! rate: at every control tick it solves for the target at that instant, warm-started from the
//! encoder reading, sends the answer as the servos' goal ([`Plant::command`], which reaches them
//! [`PlantConfig::latency_ms`] later) and lets the plant run one control period.
//!
//! - On the two-link arm the line-up is the degradation experiment's ([`pipelines`]: the analytic
//!   solver, DLS, every learned head bare and inside the envelope); every run starts at rest on
//!   the elbow-down closed-form pose of the path's starting point.
//! - On a chain it is the chain's line-up as [`ChainSolver`](crate::chain::solve::ChainSolver) answers it, one answer from where
//!   the arm is ([`CHAIN_SOLVERS`]): DLS (classical: it reports non-convergence), the
//!   squared-error net, the MDN, the flow (bare learned proposals) and the hybrid (net draws
//!   finished by DLS). The exact posterior sampler is left out: it is the reference the chain's
//!   methods are scored against, not a controller. The nets are the chain experiment's
//!   ([`train_nets`] on a [`ChainConfig::new`] recipe: the default chain [`NetConfig`], for
//!   [`TrackingConfig::train_steps`] steps from [`TrackingConfig::seed`]). The plant is the arm's
//!   body ([`Arm::real`]), under gravity when the arm hangs vertically ([`Arm::vertical`], the
//!   SO-101); every run starts at rest on a converged DLS solution of the path's starting point
//!   ([`chain::start_pose`]).
//!
//! Every run runs whole laps; the last lap is scored (the first is the warm-up): at every
//! control tick the distance from the real tip ([`Plant::tip`]) to the target at that instant, as
//! a mean and a worst case, per pipeline, latency and speed.
//!
//! The claim "latency costs tracking error in proportion to speed x delay" is judged by the run:
//! for each classical pipeline (analytic and DLS on the two-link arm, DLS on a chain), the
//! *added* mean error (at latency `L` minus at 0 ms, same speed) is fitted against `v L` (mean
//! speed times latency) by least squares through the origin; the case holds when the fit explains
//! the data (R² >= [`MIN_R_SQUARED`], R² centred on the mean, so a flat cloud of points does not
//! pass) with a positive slope. The no-latency error, the servos' own lag at that speed, is
//! reported beside it as the baseline. The learned pipelines are reported beside it, unjudged.
//!
//! Nothing is tuned to make the claim hold: the verdict is whatever the numbers give, on every
//! arm with the same rule.

pub mod chain;

use super::ExperimentError;
use super::chain::{ChainConfig, Progress, train_nets};
use super::degradation::verdict::{Claim, claim};
use super::degradation::{pipelines, train_heads};
use crate::analytic::solve_branches;
use crate::arm::Arm;
use crate::chain::nets::NetConfig;
use crate::chain::solve::NetSet;
use crate::envelope::{Envelope, EnvelopeConfig};
use crate::kinematics::serial::Coords;
use crate::kinematics::{Point2, RealArm, Region, TwoLinkArm};
use crate::learned::train::NetRollbacks;
use crate::learned::{HeadKind, LearnedModel};
use crate::lineup::{Family, Lineup, Pipeline, SolverId, Table};
use crate::plant::{Body, MAX_LATENCY_MS, Plant, PlantConfig};
use crate::stats::json_numbers;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::f64::consts::PI;

/// Most latencies (or speeds) one run sweeps.
pub const MAX_LEVELS: usize = 16;
/// The fastest mean target speed accepted, m/s.
pub const MAX_SPEED: f64 = 5.0;
/// The slowest control rate accepted, Hz.
pub const MIN_RATE: f64 = 1.0;
/// The fastest control rate accepted, Hz (one goal per plant sub-step).
pub const MAX_RATE: f64 = 1000.0;
/// Fewest laps: the first is the warm-up, the last is scored.
pub const MIN_LAPS: usize = 2;
/// Most laps.
pub const MAX_LAPS: usize = 100;
/// Most training steps per head.
pub const MAX_TRAIN_STEPS: usize = 10_000_000;
/// Fewest control ticks in a lap: a lap shorter than this many control periods is not tracked.
pub const MIN_TICKS_PER_LAP: f64 = 4.0;
/// Most simulated plant time one run may ask for, seconds, over every cell (150 million
/// sub-steps of [`SUBSTEP`](crate::plant::SUBSTEP): about a minute of one core, a control solve at every tick included).
pub const MAX_PLANT_SECONDS: f64 = 150_000.0;
/// The least R² of the latency fit for the claim's case to hold.
pub const MIN_R_SQUARED: f64 = 0.9;
/// Training steps of the two-link heads by default.
pub const TWO_LINK_TRAIN_STEPS: usize = 4000;

/// A chain's tracking line-up, in the chain's table order ([`SolverId::CHAIN`] without the exact
/// posterior sampler, which is a reference, not a controller).
pub const CHAIN_SOLVERS: [SolverId; 5] = [
    SolverId::Learned(HeadKind::Mse),
    SolverId::Learned(HeadKind::Mdn),
    SolverId::Flow,
    SolverId::Iterative,
    SolverId::Hybrid,
];

/// The figure eight the target runs: `x(t) = cx + ax sin(2π t/T)`, `y(t) = cy + ay sin(4π t/T)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FigureEight {
    /// Centre `(cx, cy)`, metres.
    pub centre: [f64; 2],
    /// Amplitudes `(ax, ay)`, metres.
    pub amplitude: [f64; 2],
}

impl Default for FigureEight {
    /// The MuJoCo reference's path (`reference/mujoco_plant.py`, scenario `2r_track_*`): centre
    /// (1.2, 0) m, amplitudes 0.4 m and 0.3 m.
    fn default() -> Self {
        Self { centre: [1.2, 0.0], amplitude: [0.4, 0.3] }
    }
}

/// The reference path's amplitudes as shares of its arm's reach (0.4 m and 0.3 m of 2 m).
pub const AMPLITUDE_SHARE: [f64; 2] = [0.2, 0.15];

impl FigureEight {
    /// The path on `arm`: the reference path ([`FigureEight::default`]) on an arm with a closed
    /// form; on a chain, centred on the arm's demo target ([`Arm::demo_target`]) with amplitudes
    /// [`AMPLITUDE_SHARE`] of its reach (the sum of its links; a rail adds travel along `y`
    /// only).
    pub fn for_arm(arm: &Arm) -> Self {
        if arm.closed_form().is_some() {
            return Self::default();
        }
        let centre = arm.demo_target();
        let reach = arm.chain.reach();
        Self { centre: [centre.x, centre.y], amplitude: AMPLITUDE_SHARE.map(|s| s * reach) }
    }

    /// The point at phase `phase` (radians; a lap is `2π`).
    pub fn at_phase(&self, phase: f64) -> Point2 {
        Point2::new(
            self.centre[0] + self.amplitude[0] * phase.sin(),
            self.centre[1] + self.amplitude[1] * (2.0 * phase).sin(),
        )
    }

    /// The target at time `t` seconds on a lap of `period` seconds.
    pub fn at(&self, t: f64, period: f64) -> Point2 {
        self.at_phase(2.0 * PI * t / period)
    }

    /// The length of one lap, metres (the trapezoid rule on the periodic speed, exact to
    /// rounding for a path this smooth).
    pub fn length(&self) -> f64 {
        const N: usize = 4096;
        let [ax, ay] = self.amplitude;
        let speed = |p: f64| ((ax * p.cos()).powi(2) + (2.0 * ay * (2.0 * p).cos()).powi(2)).sqrt();
        (0..N).map(|i| speed(2.0 * PI * i as f64 / N as f64)).sum::<f64>() * 2.0 * PI / N as f64
    }

    /// The lap period, seconds, that gives a mean speed of `speed` m/s.
    pub fn period_for(&self, speed: f64) -> f64 {
        self.length() / speed
    }
}

/// The pipelines a tracking run on `arm` measures, in line-up order: the degradation line-up on
/// an arm with a closed form ([`pipelines`]), else [`CHAIN_SOLVERS`].
pub fn arm_pipelines(arm: &Arm) -> Vec<Pipeline> {
    if arm.closed_form().is_some() { pipelines() } else { CHAIN_SOLVERS.map(Pipeline::plain).to_vec() }
}

/// The arm in JSON: an arm with a closed form as that two-link arm (its lengths and limits, as
/// this experiment always wrote it), a chain as its name (`rail3`, `lengths 1,0.8,0.6`), which
/// names it whole.
mod arm_json {
    use crate::arm::{Arm, ArmKind};
    use crate::kinematics::TwoLinkArm;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(arm: &Arm, s: S) -> Result<S::Ok, S::Error> {
        match arm.closed_form() {
            Some(two) => two.serialize(s),
            None => arm.name.serialize(s),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Chain(String),
        TwoLink(TwoLinkArm),
    }

    /// The arm named `name`: a named arm's key, or `lengths L1,L2,...`.
    pub(super) fn by_name(name: &str) -> Result<Arm, String> {
        if let Some(lengths) = name.strip_prefix("lengths ") {
            let lengths: Vec<f64> = lengths
                .split(',')
                .map(|l| l.trim().parse::<f64>().map_err(|e| format!("arm `{name}`: {e}")))
                .collect::<Result<_, _>>()?;
            return Arm::from_lengths(&lengths).map_err(|e| e.to_string());
        }
        name.parse::<ArmKind>().map(ArmKind::arm)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arm, D::Error> {
        match Either::deserialize(d)? {
            Either::Chain(name) => by_name(&name).map_err(D::Error::custom),
            Either::TwoLink(two) => Ok(Arm::two_link(two)),
        }
    }
}

/// Everything that defines a tracking run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrackingConfig {
    /// The arm, nominal and real (the plant has no mismatch): the two-link arm, or a redundant
    /// chain. In JSON an arm with a closed form is that two-link arm (`l1`, `l2`, `limits`), a
    /// chain its name.
    #[serde(with = "arm_json")]
    pub arm: Arm,
    /// The target's path.
    pub path: FigureEight,
    /// Control latencies, milliseconds; 0 ms (the baseline) always runs.
    pub latencies_ms: Vec<f64>,
    /// Mean target speeds, m/s.
    pub speeds: Vec<f64>,
    /// Control rate, Hz: one goal per tick.
    pub rate: f64,
    /// Laps per run; the last is scored.
    pub laps: usize,
    /// Training steps of each learned head (two-link arm) or net (chain).
    pub train_steps: usize,
    /// Seed of the heads' or nets' training (and of a chain's sampled answers).
    pub seed: u64,
    /// The physical arm: servo, link masses, plane. On a chain only the servo applies (every
    /// joint's); the links' mass properties are the arm's ([`Arm::real`]) and its plane is
    /// vertical when the arm hangs ([`Arm::vertical`]).
    pub body: Body,
    /// The solvers whose pipelines run (on the two-link arm a head's bare and enveloped
    /// pipelines); empty: every pipeline of the arm ([`arm_pipelines`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub solvers: Vec<SolverId>,
}

impl Default for TrackingConfig {
    /// The two-link arm ([`TrackingConfig::for_arm`]): the figure eight at about 0.1, 0.2 and
    /// 0.4 m/s, latencies 0, 33, 67 and 133 ms, 30 Hz, two laps, heads trained for 4000 steps.
    fn default() -> Self {
        Self::for_arm(Arm::two_link(TwoLinkArm::default()))
    }
}

impl TrackingConfig {
    /// The default run on `arm`: its path ([`FigureEight::for_arm`]), 0.1, 0.2 and 0.4 m/s,
    /// latencies 0, 33, 67 and 133 ms, 30 Hz, two laps, every pipeline; the two-link heads
    /// trained for [`TWO_LINK_TRAIN_STEPS`] steps, a chain's nets for the chain recipe's
    /// ([`NetConfig::default`]).
    pub fn for_arm(arm: Arm) -> Self {
        let train_steps = if arm.closed_form().is_some() { TWO_LINK_TRAIN_STEPS } else { NetConfig::default().steps };
        Self {
            path: FigureEight::for_arm(&arm),
            arm,
            latencies_ms: vec![0.0, 33.0, 67.0, 133.0],
            speeds: vec![0.1, 0.2, 0.4],
            rate: 30.0,
            laps: 2,
            train_steps,
            seed: 0,
            body: Body::default(),
            solvers: Vec::new(),
        }
    }

    /// The latencies that run: the given ones with 0 ms added, sorted, without repeats.
    pub fn latencies(&self) -> Vec<f64> {
        sorted_unique(std::iter::once(0.0).chain(self.latencies_ms.iter().copied()))
    }

    /// The speeds that run: sorted, without repeats.
    pub fn speeds(&self) -> Vec<f64> {
        sorted_unique(self.speeds.iter().copied())
    }

    /// The pipelines that run: the arm's ([`arm_pipelines`]) whose solver is listed in
    /// [`TrackingConfig::solvers`] (all when it is empty).
    pub fn pipelines(&self) -> Vec<Pipeline> {
        let all = arm_pipelines(&self.arm);
        if self.solvers.is_empty() {
            return all;
        }
        all.into_iter().filter(|p| self.solvers.contains(&p.solver)).collect()
    }

    /// The chain run's training recipe: the chain experiment's ([`ChainConfig::new`], the
    /// default chain [`NetConfig`]) for the learned solvers that run, trained for
    /// [`TrackingConfig::train_steps`] from [`TrackingConfig::seed`].
    pub fn chain_config(&self) -> ChainConfig {
        let mut c = ChainConfig::new(self.arm.clone());
        c.methods = self.pipelines().into_iter().map(|p| p.solver).collect();
        c.net = NetConfig { steps: self.train_steps, seed: self.seed, ..c.net };
        c
    }

    /// The plant time the run simulates, exactly: every pipeline and latency runs `laps` laps at
    /// each speed (a lap of the path's length over the speed).
    pub fn plant_time(&self) -> super::PlantTime {
        let length = self.path.length();
        let per_pipeline: f64 = self.speeds().iter().map(|v| self.laps as f64 * length / v).sum();
        let (pipelines, latencies) = (self.pipelines().len(), self.latencies().len());
        let laps: Vec<String> = self.speeds().iter().map(|v| format!("{:.3} s", length / v)).collect();
        super::PlantTime {
            seconds: per_pipeline * latencies as f64 * pipelines as f64,
            bound: false,
            parts: format!(
                "{pipelines} pipelines x {latencies} latencies x {} laps of {} (the speeds {:?} m/s)",
                self.laps,
                laps.join(", "),
                self.speeds()
            ),
        }
    }

    /// Checks every field, naming the first bad one in its unit: latencies from 0 to
    /// [`MAX_LATENCY_MS`] ms, speeds in `(0, `[`MAX_SPEED`]`]` m/s (1 to [`MAX_LEVELS`] of each),
    /// the rate from [`MIN_RATE`] to [`MAX_RATE`] Hz, laps and training steps, solvers that
    /// apply to the arm with a classical one among them, a path inside the arm's reach (on a
    /// chain: every point reachable with a margin, [`chain::unreachable`]), at least two points
    /// for the claim's fit (speeds x latencies above 0 ms), at least [`MIN_TICKS_PER_LAP`]
    /// control ticks per lap, and at most [`MAX_PLANT_SECONDS`] of plant time in all.
    pub fn validate(&self) -> Result<(), ExperimentError> {
        let bad = |m: String| Err(ExperimentError::Invalid(m));
        self.body.validate()?;
        if self.latencies_ms.is_empty() || self.latencies_ms.len() > MAX_LEVELS {
            return bad(format!("latency: give 1 to {MAX_LEVELS} values in ms, got {}", self.latencies_ms.len()));
        }
        for &l in &self.latencies_ms {
            if !(l.is_finite() && (0.0..=MAX_LATENCY_MS).contains(&l)) {
                return bad(format!("each latency must be a number from 0 to {MAX_LATENCY_MS} ms, got {l}"));
            }
        }
        if self.speeds.is_empty() || self.speeds.len() > MAX_LEVELS {
            return bad(format!("speeds: give 1 to {MAX_LEVELS} values in m/s, got {}", self.speeds.len()));
        }
        for &v in &self.speeds {
            if !(v.is_finite() && v > 0.0 && v <= MAX_SPEED) {
                return bad(format!("each speed must be a number in (0, {MAX_SPEED}] m/s, got {v}"));
            }
        }
        if !(self.rate.is_finite() && (MIN_RATE..=MAX_RATE).contains(&self.rate)) {
            return bad(format!(
                "the control rate must be a number from {MIN_RATE} to {MAX_RATE} Hz, got {}",
                self.rate
            ));
        }
        if !(MIN_LAPS..=MAX_LAPS).contains(&self.laps) {
            return bad(format!(
                "laps must be a whole number from {MIN_LAPS} to {MAX_LAPS} (the first is the warm-up, the last is scored), got {}",
                self.laps
            ));
        }
        if !(1..=MAX_TRAIN_STEPS).contains(&self.train_steps) {
            return bad(format!(
                "train steps must be a whole number from 1 to {MAX_TRAIN_STEPS}, got {}",
                self.train_steps
            ));
        }
        self.validate_arm()?;
        let p = &self.path;
        if !(p.centre.iter().chain(&p.amplitude).all(|v| v.is_finite()) && p.amplitude.iter().all(|&a| a >= 0.0)) {
            return bad(format!("the path's centre and amplitudes must be finite metres, amplitudes >= 0, got {p:?}"));
        }
        if p.length() <= 0.0 {
            return bad("the path must move: give it a nonzero amplitude (m)".into());
        }
        match self.arm.closed_form() {
            Some(arm) => {
                // Inside the reach, clear of the rim and of the inner hole by 1 mm.
                let (inner, outer) = (arm.inner_radius() + 1e-3, arm.reach() - 1e-3);
                if let Some(out) = (0..1024)
                    .map(|i| p.at_phase(2.0 * PI * i as f64 / 1024.0))
                    .find(|q| !(inner..=outer).contains(&q.norm()))
                {
                    return bad(format!(
                        "the figure eight leaves the arm's reach ({inner:.3} m to {outer:.3} m from the base) at ({:.3}, {:.3}) m",
                        out.x, out.y
                    ));
                }
            }
            None => {
                let margin = chain::MARGIN_SHARE * self.arm.chain.reach();
                if let Some(out) = chain::unreachable(&self.arm, p, margin) {
                    return bad(format!(
                        "the figure eight on arm {} leaves its reachable workspace (with a margin of {:.3} m) near ({:.3}, {:.3}) m",
                        self.arm.name, margin, out.x, out.y
                    ));
                }
            }
        }
        // The claim is fitted over (speed x latency) points, one per speed and latency above 0 ms;
        // under two there is nothing to judge, and minutes of tracking would end in no verdict.
        let points = self.speeds().len() * self.latencies().iter().filter(|&&l| l > 0.0).count();
        if points < 2 {
            return bad(format!(
                "the run judges whether latency costs error in proportion to speed x delay, a fit over one point per speed and latency above 0 ms, and these settings give {points} (speeds {:?} m/s, latencies {:?} ms): nothing to judge; add a latency above 0 ms (0 ms, the baseline, always runs) or another speed",
                self.speeds(),
                self.latencies()
            ));
        }
        let fastest = self.speeds.iter().copied().fold(0.0, f64::max);
        let ticks = p.period_for(fastest) * self.rate;
        if ticks < MIN_TICKS_PER_LAP {
            return bad(format!(
                "at {fastest} m/s a lap takes {:.3} s, only {ticks:.1} control ticks at {} Hz (at least {MIN_TICKS_PER_LAP}); raise the rate (Hz) or lower the speed (m/s)",
                p.period_for(fastest),
                self.rate
            ));
        }
        self.plant_time()
            .check(MAX_PLANT_SECONDS, "use faster or fewer speeds, fewer latencies or fewer laps")
            .map_err(ExperimentError::Invalid)?;
        Ok(())
    }

    /// The arm, the solvers and the body: solvers that apply to the arm, a classical one among
    /// them (the claim's), the chain's nets' settings, and a body that is the two-link arm's
    /// only where the arm is.
    fn validate_arm(&self) -> Result<(), ExperimentError> {
        let bad = |m: String| Err(ExperimentError::Invalid(m));
        let arm = &self.arm;
        let all = arm_pipelines(arm);
        let runs = || {
            let mut keys: Vec<&str> = Vec::new();
            for p in &all {
                if !keys.contains(&p.solver.key()) {
                    keys.push(p.solver.key());
                }
            }
            keys.join(", ")
        };
        if let Some(&s) = self.solvers.iter().find(|s| !all.iter().any(|p| p.solver == **s)) {
            let why = match (arm.closed_form().is_some(), s) {
                (false, SolverId::Exact) => "the exact posterior sampler is a reference, not a controller",
                (false, _) => "it is built on the two-link closed form",
                (true, SolverId::ElbowUp | SolverId::ElbowDown) => "a fixed branch is the analytic solver again",
                (true, SolverId::Average) => "the branch average is not a solver",
                (true, _) => "it is a redundant chain's solver",
            };
            return bad(format!(
                "solver {s} does not apply to tracking on arm {} ({why}); tracking on {} runs {}",
                arm.name,
                arm.name,
                runs()
            ));
        }
        let pipes = self.pipelines();
        if !pipes.iter().any(|p| !p.envelope && p.solver.family() == Family::Classical) {
            let classical: Vec<&str> = all
                .iter()
                .filter(|p| !p.envelope && p.solver.family() == Family::Classical)
                .map(|p| p.solver.key())
                .collect();
            return bad(format!(
                "solvers: the claim is judged on the classical pipelines of arm {} ({}), and these solvers ({}) leave none; add one",
                arm.name,
                classical.join(", "),
                crate::keys::join(&self.solvers).replace(',', ", "),
            ));
        }
        if let Some(two) = arm.closed_form() {
            two.validate()?;
            return Ok(());
        }
        arm.chain.validate().map_err(|e| ExperimentError::Invalid(e.to_string()))?;
        if self.body.gravity || self.body.link_mass != Body::default().link_mass {
            return bad(format!(
                "the link masses and the plane are the two-link arm's; arm {} has its own (its links' mass properties, and gravity when it hangs vertically): leave them out",
                arm.name
            ));
        }
        let chain_cfg = self.chain_config();
        for kind in chain_cfg.nets() {
            chain_cfg.net.validate(kind, arm.coords())?;
        }
        Ok(())
    }
}
fn sorted_unique(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    v
}

/// One speed of the run and the lap period that gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Speed {
    /// Mean target speed, m/s.
    pub speed: f64,
    /// Lap period, seconds.
    pub period: f64,
}

/// One pipeline tracking at one latency and speed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    /// The pipeline (serialised as its key: `analytic`, `envelope(mdn)`, ...).
    pub pipeline: Pipeline,
    /// Control latency, ms.
    pub latency_ms: f64,
    /// Mean target speed, m/s.
    pub speed: f64,
    /// Lap period, seconds.
    pub period: f64,
    /// Mean tip-to-target distance over the scored lap, metres.
    #[serde(serialize_with = "json_numbers")]
    pub mean_error: f64,
    /// Largest tip-to-target distance over the scored lap, metres.
    #[serde(serialize_with = "json_numbers")]
    pub worst_error: f64,
    /// Control ticks scored.
    pub samples: usize,
    /// Mean error above that of the same pipeline and speed at 0 ms, metres.
    #[serde(serialize_with = "json_numbers")]
    pub added_error: f64,
    /// Enveloped pipelines: the share of ticks whose proposal the envelope accepted (left out
    /// for bare pipelines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope_accepted: Option<f64>,
    /// A chain's self-checking pipelines (DLS, the hybrid): the share of ticks whose answer the
    /// solver reported as not converged (sent to the servos all the same: the best it found);
    /// left out for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_converged: Option<f64>,
}

/// One classical pipeline's fit of the added mean error against speed x latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyFit {
    /// The pipeline.
    pub pipeline: Pipeline,
    /// The points `(v L, added mean error)`, metres both: one per speed and nonzero latency.
    pub points: Vec<[f64; 2]>,
    /// Least-squares slope through the origin (dimensionless: metres of added error per metre
    /// the target moves during the latency); left out with no nonzero `v L`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope: Option<f64>,
    /// R² of the fit, centred on the mean added error; left out when the added errors do not
    /// vary (fewer than two distinct points).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub r_squared: Option<f64>,
    /// The no-latency baseline `(speed m/s, mean error m)`: the servos' own lag at each speed.
    pub baseline: Vec<[f64; 2]>,
}

impl LatencyFit {
    /// True when the fit holds (R² >= [`MIN_R_SQUARED`] and a positive slope); `None` when there
    /// is nothing to fit.
    pub fn holds(&self) -> Option<bool> {
        let (slope, r2) = (self.slope?, self.r_squared?);
        Some(r2 >= MIN_R_SQUARED && slope > 0.0)
    }
}

/// Fits `y = k x` by least squares; the slope (with some `x` nonzero) and the centred R² (when the
/// `y` vary). Non-finite points are left out.
pub fn fit_through_origin(points: &[[f64; 2]]) -> (Option<f64>, Option<f64>) {
    let pts: Vec<[f64; 2]> = points.iter().copied().filter(|p| p[0].is_finite() && p[1].is_finite()).collect();
    let sxx: f64 = pts.iter().map(|p| p[0] * p[0]).sum();
    if pts.is_empty() || sxx <= 0.0 {
        return (None, None);
    }
    let slope = pts.iter().map(|p| p[0] * p[1]).sum::<f64>() / sxx;
    let mean = pts.iter().map(|p| p[1]).sum::<f64>() / pts.len() as f64;
    let total: f64 = pts.iter().map(|p| (p[1] - mean).powi(2)).sum();
    let residual: f64 = pts.iter().map(|p| (p[1] - slope * p[0]).powi(2)).sum();
    let r2 = (pts.len() >= 2 && total > 0.0).then(|| 1.0 - residual / total);
    (Some(slope), r2)
}

/// Everything the experiment measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrackingReport {
    /// The arm that ran (its key: `2r`, `rail3`, ...).
    pub arm: String,
    /// True when the arm hung in a vertical plane, gravity on (the SO-101); left out when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gravity: bool,
    /// The configuration that ran (latencies and speeds as they ran: 0 ms added, sorted).
    pub config: TrackingConfig,
    /// Length of one lap, metres.
    pub path_length: f64,
    /// Each speed with its lap period.
    pub speeds: Vec<Speed>,
    /// Every pipeline, in line-up order.
    pub pipelines: Vec<Pipeline>,
    /// One per pipeline, latency and speed, in that order.
    pub cells: Vec<Cell>,
    /// The latency fit of each classical pipeline.
    pub fits: Vec<LatencyFit>,
    /// "Latency costs tracking error in proportion to speed x delay", with its verdict.
    pub claim: Claim,
    /// Seconds spent training the heads (two-link arm) or nets (chain).
    pub train_seconds: f64,
    /// The divergence guard's roll-backs in training the heads or nets (only those that had any).
    pub rollbacks: Vec<crate::learned::train::NetRollbacks>,
    /// Seconds spent tracking.
    pub eval_seconds: f64,
}

impl TrackingReport {
    /// The cell of `pipeline` at `latency_ms` and `speed`.
    pub fn cell(&self, pipeline: Pipeline, latency_ms: f64, speed: f64) -> Option<&Cell> {
        self.cells.iter().find(|c| c.pipeline == pipeline && c.latency_ms == latency_ms && c.speed == speed)
    }

    /// The latency fit of `pipeline`, if it is classical.
    pub fn fit(&self, pipeline: Pipeline) -> Option<&LatencyFit> {
        self.fits.iter().find(|f| f.pipeline == pipeline)
    }
}

/// Runs the experiment.
pub fn tracking(cfg: &TrackingConfig) -> Result<TrackingReport, ExperimentError> {
    tracking_observed(cfg, &|_| true)
}

/// [`tracking`], telling `progress` where the run stands (from several threads): a chain's nets'
/// training steps ([`Progress::Training`]), then the cells tracked ([`Progress::Evaluating`],
/// one per pipeline, latency and speed); when it answers false the run stops with
/// [`ExperimentError::Cancelled`].
pub fn tracking_observed(
    cfg: &TrackingConfig,
    progress: &(dyn Fn(Progress) -> bool + Sync),
) -> Result<TrackingReport, ExperimentError> {
    cfg.validate()?;
    let t0 = std::time::Instant::now();
    let pipes = cfg.pipelines();
    let (control, rollbacks) = match cfg.arm.closed_form() {
        Some(arm) => {
            // The heads are trained as the degradation experiment trains them, against the real
            // arm they will drive: here the nominal one (this experiment isolates latency).
            let none: Table<HeadKind, Option<LearnedModel>> = Table::default();
            let (models, rollbacks) =
                train_heads(arm, Region::Annulus, RealArm::ideal(arm), cfg.train_steps, cfg.seed, &none)?;
            (Control::TwoLink(models), rollbacks)
        }
        None => {
            let trained = train_nets(&cfg.chain_config(), progress).map_err(|e| match e {
                ExperimentError::Train(t) => ExperimentError::of_training(t),
                e => e,
            })?;
            let rollbacks = trained.rollbacks.iter().filter_map(|(k, r)| NetRollbacks::of(k.key(), r)).collect();
            let start = chain::start_pose(&cfg.arm, cfg.path.at_phase(0.0), cfg.seed)?;
            (Control::Chain { nets: Box::new(trained.nets), start }, rollbacks)
        }
    };
    let train_seconds = t0.elapsed().as_secs_f64();
    let lineup = match &control {
        Control::TwoLink(models) => {
            let arm = cfg.arm.closed_form().expect("a two-link run has a closed form");
            let mut lineup = Lineup::new(arm, Table::from_fn(|h| Some(&models[h])));
            // The envelope's joint-step limit is its top joint speed over one control period.
            let envelope = EnvelopeConfig { control_period: 1.0 / cfg.rate, ..EnvelopeConfig::for_arm(&arm) };
            lineup.envelope = Envelope { arm, config: envelope };
            Some((arm, lineup))
        }
        Control::Chain { .. } => None,
    };
    let latencies = cfg.latencies();
    let speeds: Vec<Speed> =
        cfg.speeds().into_iter().map(|speed| Speed { speed, period: cfg.path.period_for(speed) }).collect();
    let mut jobs: Vec<(Pipeline, f64, Speed)> = Vec::new();
    for &p in &pipes {
        for &l in &latencies {
            jobs.extend(speeds.iter().map(|&s| (p, l, s)));
        }
    }
    let t1 = std::time::Instant::now();
    let total = jobs.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let stop = std::sync::atomic::AtomicBool::new(!progress(Progress::Evaluating { done: 0, total }));
    let runs: Vec<Option<Result<Track, ExperimentError>>> = jobs
        .par_iter()
        .map(|&(pipeline, latency_ms, speed)| {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            let run = match (&lineup, &control) {
                (Some((arm, lineup)), _) => track(*arm, lineup, pipeline, cfg, latency_ms, speed),
                (None, Control::Chain { nets, start }) => {
                    chain::track(&cfg.arm, nets, start, pipeline, cfg, latency_ms, speed)
                }
                (None, Control::TwoLink(_)) => unreachable!("a two-link run has its line-up"),
            };
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if !progress(Progress::Evaluating { done: n, total }) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Some(run)
        })
        .collect();
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(ExperimentError::Cancelled);
    }
    // A cell whose numbers left the finite range stops the run (the first in job order).
    let runs: Vec<Track> = runs.into_iter().map(|run| run.expect("every job ran")).collect::<Result<_, _>>()?;
    let mut cells: Vec<Cell> = jobs
        .iter()
        .zip(runs)
        .map(|(&(pipeline, latency_ms, s), run)| Cell {
            pipeline,
            latency_ms,
            speed: s.speed,
            period: s.period,
            mean_error: run.mean,
            worst_error: run.worst,
            samples: run.samples,
            added_error: 0.0,
            envelope_accepted: pipeline.envelope.then(|| run.accepted as f64 / run.ticks.max(1) as f64),
            not_converged: run.checked.then(|| run.failed as f64 / run.ticks.max(1) as f64),
        })
        .collect();
    let baseline = |cells: &[Cell], p: Pipeline, speed: f64| {
        cells.iter().find(|c| c.pipeline == p && c.speed == speed && c.latency_ms == 0.0).map(|c| c.mean_error)
    };
    let bases: Vec<f64> =
        cells.iter().map(|c| baseline(&cells, c.pipeline, c.speed).expect("0 ms always runs")).collect();
    for (c, base) in cells.iter_mut().zip(bases) {
        c.added_error = c.mean_error - base;
    }
    let eval_seconds = t1.elapsed().as_secs_f64();
    let fits: Vec<LatencyFit> = pipes
        .iter()
        .filter(|p| !p.envelope && p.solver.family() == Family::Classical)
        .map(|&pipeline| {
            let mine = cells.iter().filter(|c| c.pipeline == pipeline);
            let points: Vec<[f64; 2]> = mine
                .clone()
                .filter(|c| c.latency_ms > 0.0)
                .map(|c| [c.speed * c.latency_ms * 1e-3, c.added_error])
                .collect();
            let baseline = mine.filter(|c| c.latency_ms == 0.0).map(|c| [c.speed, c.mean_error]).collect();
            let (slope, r_squared) = fit_through_origin(&points);
            LatencyFit { pipeline, points, slope, r_squared, baseline }
        })
        .collect();
    let claim = latency_claim(&fits);
    let config =
        TrackingConfig { latencies_ms: latencies, speeds: speeds.iter().map(|s| s.speed).collect(), ..cfg.clone() };
    Ok(TrackingReport {
        arm: cfg.arm.name.clone(),
        gravity: cfg.arm.closed_form().is_none() && cfg.arm.vertical(),
        config,
        path_length: cfg.path.length(),
        speeds,
        pipelines: pipes,
        cells,
        fits,
        claim,
        train_seconds,
        rollbacks,
        eval_seconds,
    })
}

/// What drives the plant: the two-link heads (with the closed form and DLS, in a [`Lineup`]), or
/// a chain's nets and the pose every run starts from.
enum Control {
    TwoLink(Table<HeadKind, LearnedModel>),
    Chain { nets: Box<NetSet>, start: Coords },
}

/// The claim, one case per classical pipeline.
fn latency_claim(fits: &[LatencyFit]) -> Claim {
    let cases = fits
        .iter()
        .map(|f| {
            let num = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v:.3}"));
            let base: Vec<String> = f.baseline.iter().map(|b| format!("{:.1} mm at {} m/s", b[1] * 1e3, b[0])).collect();
            let numbers = format!(
                "added mean error = {} x (speed x latency), R² {} over {} points (needs R² >= {MIN_R_SQUARED} and a positive slope); no-latency baseline {}",
                num(f.slope),
                num(f.r_squared),
                f.points.len(),
                base.join(", ")
            );
            (f.pipeline.key(), f.holds(), numbers)
        })
        .collect();
    claim(
        "latency-costs-speed-times-delay",
        "latency costs tracking error in proportion to speed x delay (classical pipelines: the mean error added by the latency, fitted through the origin against mean target speed x latency)",
        cases,
    )
}

/// What one tracking run measured.
struct Track {
    mean: f64,
    worst: f64,
    samples: usize,
    ticks: usize,
    accepted: usize,
    /// Ticks whose answer its solver reported as not converged.
    failed: usize,
    /// True when the pipeline's solver checks its own answers on a chain (the share of failed
    /// ticks is reported).
    checked: bool,
}

/// The goal one control tick sends.
struct Goal {
    /// The coordinates, padded.
    pose: Coords,
    /// The envelope accepted the proposal.
    accepted: bool,
    /// The solver reported the answer as not converged.
    failed: bool,
}

/// One pipeline tracking the path at `latency_ms` and `speed` on the two-link arm `arm`; an error
/// naming the cell when the tip-to-target distance leaves the finite range (the simulated arm
/// diverged), at any tick.
fn track(
    arm: TwoLinkArm,
    lineup: &Lineup,
    pipeline: Pipeline,
    cfg: &TrackingConfig,
    latency_ms: f64,
    speed: Speed,
) -> Result<Track, ExperimentError> {
    let plant_cfg = PlantConfig { latency_ms, ..PlantConfig::ideal(arm).with_body(&cfg.body) };
    // At rest on the closed form's elbow-down pose (the reference's `q2 = +acos`) of the start.
    let start = solve_branches(&arm, cfg.path.at(0.0, speed.period)).down;
    let plant = Plant::new(plant_cfg.two_link_real(), plant_cfg, &start.coords());
    follow(plant, pipeline, cfg, latency_ms, speed, false, |target, measured| {
        lineup.run(pipeline, target, crate::kinematics::Pose::of(&measured)).map(|answer| Goal {
            pose: crate::kinematics::serial::padded(&answer.solution.pose.coords()),
            accepted: answer.verdict == Some(None),
            failed: false,
        })
    })
}

/// Runs `plant` after the path at `speed` for the configured laps, `control(target, encoders)`
/// giving each tick's goal (none: the previous goal stays), and scores the last lap; an error
/// naming the cell when the tip-to-target distance leaves the finite range (the simulated arm
/// diverged), at any tick.
fn follow(
    mut plant: Plant,
    pipeline: Pipeline,
    cfg: &TrackingConfig,
    latency_ms: f64,
    speed: Speed,
    checked: bool,
    mut control: impl FnMut(Point2, Coords) -> Option<Goal>,
) -> Result<Track, ExperimentError> {
    let period = speed.period;
    let dt = 1.0 / cfg.rate;
    let (end, scored_from) = (cfg.laps as f64 * period, (cfg.laps - 1) as f64 * period);
    let (mut sum, mut worst, mut samples, mut ticks, mut accepted) = (0.0, 0.0f64, 0usize, 0usize, 0usize);
    let mut failed = 0usize;
    for k in 0.. {
        let now = plant.time();
        // The controller's clock: tick k at k/rate; the plant's time trails it by under a sub-step.
        if k as f64 * dt >= end - 1e-9 {
            break;
        }
        let target = cfg.path.at(now, period);
        let e = (plant.tip() - target).norm();
        if !e.is_finite() {
            return Err(ExperimentError::NonFinite(format!(
                "the tip-to-target distance left the finite range ({e}) in the cell {pipeline} at {} ms and {} m/s, {} s into the run; nothing was reported",
                crate::stats::fmt_num(latency_ms),
                crate::stats::fmt_num(speed.speed),
                crate::stats::fmt_num(now),
            )));
        }
        if k as f64 * dt >= scored_from - 1e-9 {
            sum += e;
            worst = worst.max(e);
            samples += 1;
        }
        if let Some(goal) = control(target, plant.measure()) {
            accepted += usize::from(goal.accepted);
            failed += usize::from(goal.failed);
            let d = plant.dim();
            plant.command(&goal.pose[..d]);
        }
        ticks += 1;
        plant.step(dt);
    }
    let mean = if samples > 0 { sum / samples as f64 } else { f64::NAN };
    Ok(Track { mean, worst, samples, ticks, accepted, failed, checked })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lineup::SolverId;
    use crate::plant::dynamics::Servo;

    #[test]
    fn the_path_has_the_reference_shape_and_speeds_set_the_period() {
        let p = FigureEight::default();
        assert_eq!(p.at(0.0, 4.0), Point2::new(1.2, 0.0));
        assert!((p.at(1.0, 4.0) - Point2::new(1.6, 0.0)).norm() < 1e-12);
        assert!((p.at(0.5, 4.0) - Point2::new(1.2 + 0.4 * (PI / 4.0).sin(), 0.3)).norm() < 1e-12);
        // A polyline of many points agrees with the integral.
        let n = 100_000;
        let poly: f64 = (0..n)
            .map(|i| {
                (p.at_phase(2.0 * PI * (i + 1) as f64 / n as f64) - p.at_phase(2.0 * PI * i as f64 / n as f64)).norm()
            })
            .sum();
        assert!((poly - p.length()).abs() < 1e-6, "{poly} vs {}", p.length());
        assert!((p.period_for(0.2) * 0.2 - p.length()).abs() < 1e-12);
    }

    #[test]
    fn the_fit_through_the_origin_and_its_r_squared() {
        let (k, r2) = fit_through_origin(&[[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]);
        assert_eq!((k, r2), (Some(2.0), Some(1.0)));
        let (k, r2) = fit_through_origin(&[[1.0, 1.0], [2.0, 1.0], [3.0, 1.0]]);
        assert!(k.unwrap() > 0.0 && r2.is_none(), "flat: nothing to explain");
        let (_, r2) = fit_through_origin(&[[1.0, 3.0], [2.0, 1.0], [3.0, 2.0]]);
        assert!(r2.unwrap() < 0.5, "scatter does not fit");
        assert_eq!(fit_through_origin(&[]), (None, None));
        assert_eq!(fit_through_origin(&[[0.0, 1.0]]), (None, None));
    }

    #[test]
    fn the_configuration_reads_back_from_its_json() {
        let two = TrackingConfig::default();
        let text = serde_json::to_string(&two).unwrap();
        assert!(text.starts_with(r#"{"arm":{"l1":1.0,"l2":1.0,"limits""#), "as it always was: {text}");
        assert_eq!(serde_json::from_str::<TrackingConfig>(&text).unwrap(), two);
        let lengths = TrackingConfig::for_arm(Arm::from_lengths(&[1.0, 0.8, 0.6]).unwrap());
        let text = serde_json::to_string(&lengths).unwrap();
        assert!(text.contains(r#""arm":"lengths 1,0.8,0.6""#) && !text.contains("null"), "{text}");
        assert_eq!(serde_json::from_str::<TrackingConfig>(&text).unwrap(), lengths);
        assert!(serde_json::from_str::<TrackingConfig>(r#"{"arm":"4r"}"#).unwrap_err().to_string().contains("4r"));
    }

    #[test]
    fn validation_names_the_field_and_its_unit() {
        let ok = TrackingConfig::default();
        assert!(ok.validate().is_ok());
        let cases = [
            (TrackingConfig { latencies_ms: vec![0.0, -1.0], ..ok.clone() }, "latency", "ms"),
            (TrackingConfig { latencies_ms: vec![f64::NAN], ..ok.clone() }, "latency", "ms"),
            (TrackingConfig { latencies_ms: vec![10_001.0], ..ok.clone() }, "latency", "ms"),
            (TrackingConfig { speeds: vec![0.0], ..ok.clone() }, "speed", "m/s"),
            (TrackingConfig { speeds: vec![5.5], ..ok.clone() }, "speed", "m/s"),
            (TrackingConfig { speeds: vec![], ..ok.clone() }, "speeds", "m/s"),
            (TrackingConfig { rate: 0.5, ..ok.clone() }, "rate", "Hz"),
            (TrackingConfig { rate: f64::INFINITY, ..ok.clone() }, "rate", "Hz"),
            (TrackingConfig { laps: 1, ..ok.clone() }, "laps", "warm-up"),
            (TrackingConfig { train_steps: 0, ..ok.clone() }, "train steps", "whole number"),
            (TrackingConfig { speeds: vec![1e-4], ..ok.clone() }, "plant time", "m/s"),
            (TrackingConfig { speeds: vec![5.0], rate: 1.0, ..ok.clone() }, "ticks", "Hz"),
            (
                TrackingConfig { path: FigureEight { centre: [1.8, 0.0], amplitude: [0.4, 0.3] }, ..ok.clone() },
                "reach",
                "m",
            ),
        ];
        for (cfg, field, unit) in cases {
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains(field) && e.contains(unit), "{field}: {e}");
        }
        // The body's refusal stays the plant's typed error, in the plant's words.
        let light = TrackingConfig { body: Body { link_mass: [0.0, 0.05], ..Body::default() }, ..ok };
        let e = light.validate().unwrap_err();
        let quantity = crate::plant::Quantity::LinkMass { link: 1 };
        assert!(matches!(e, ExperimentError::Plant(ref p) if p.quantity() == quantity && p.unit() == "kg"), "{e:?}");
        assert_eq!(e.to_string(), "link 1 mass must be a number from 1e-6 to 1e3 kg, got 0");
    }

    #[test]
    fn a_cell_whose_distance_leaves_the_finite_range_stops_the_run_naming_it() {
        // A target that is not finite (its path skipped validation) makes the distance NaN, as a
        // diverging arm would: the cell is an error, never a NaN mean.
        let cfg = TrackingConfig {
            path: FigureEight { centre: [f64::NAN, 0.0], amplitude: [0.4, 0.3] },
            ..Default::default()
        };
        let arm = cfg.arm.closed_form().unwrap();
        let lineup = Lineup::new(arm, Table::from_fn(|_| None));
        let speed = Speed { speed: 0.4, period: 7.7 };
        let e = track(arm, &lineup, Pipeline::plain(SolverId::Analytic), &cfg, 33.0, speed).err().expect("an error");
        let e = e.to_string();
        assert!(e.contains("cell analytic at 33 ms and 0.4 m/s") && e.contains("finite range"), "{e}");
        assert!(matches!(
            track(arm, &lineup, Pipeline::plain(SolverId::Analytic), &cfg, 0.0, speed),
            Err(ExperimentError::NonFinite(_))
        ));
    }

    #[test]
    fn issue_48s_stiff_servo_tracks_with_finite_numbers() {
        // `--kp 1e6 --torque-limit 1e4`: the explicit unsplit 1 ms step made this NaN; split, it rings
        // (a relay oscillator, as in MuJoCo) but every number is finite.
        let body = Body { servo: Servo { kp: 1e6, torque_limit: 1e4, ..Body::default().servo }, ..Body::default() };
        let cfg = TrackingConfig {
            latencies_ms: vec![33.0],
            speeds: vec![0.2, 0.4],
            train_steps: 5,
            body,
            ..Default::default()
        };
        let r = tracking(&cfg).unwrap();
        for c in &r.cells {
            assert!(c.mean_error.is_finite() && c.worst_error.is_finite() && c.added_error.is_finite(), "{c:?}");
        }
        let analytic = r.cell(Pipeline::plain(SolverId::Analytic), 0.0, 0.4).unwrap();
        assert!(analytic.mean_error < 0.03, "the analytic solver still tracks: {analytic:?}");
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("null") && !text.contains("NaN") && !text.contains("\"inf\""), "{text}");
    }

    #[test]
    fn latency_costs_the_analytic_solver_more_the_faster_the_target() {
        let cfg = TrackingConfig {
            latencies_ms: vec![0.0, 133.0],
            speeds: vec![0.2, 0.4],
            train_steps: 20,
            ..TrackingConfig::default()
        };
        let r = tracking(&cfg).unwrap();
        let analytic = Pipeline::plain(SolverId::Analytic);
        let cell = |l: f64, v: f64| r.cell(analytic, l, v).unwrap();
        for v in [0.2, 0.4] {
            assert!(cell(0.0, v).mean_error < cell(133.0, v).mean_error, "{:?} {:?}", cell(0.0, v), cell(133.0, v));
            assert!(cell(0.0, v).worst_error >= cell(0.0, v).mean_error);
        }
        assert!(cell(133.0, 0.2).added_error < cell(133.0, 0.4).added_error);
        assert_eq!(r.cells.len(), r.pipelines.len() * 2 * 2);
        assert_eq!(r.fits.len(), 2, "analytic and DLS");
        let text = serde_json::to_string(&r).unwrap();
        assert!(!text.contains("null") && !text.contains("NaN"), "{text}");
    }
}
