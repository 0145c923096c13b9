//! The resources of the solvers of an arm whose answers form a manifold (a redundant chain,
//! [`elbow::arm::Arm::methods`]): what the user chose ([`ChainView`]), the trained nets
//! ([`ChainNets`]), this frame's answers ([`ChainAnswers`]) and the nets' training runs
//! ([`ChainTraining`]). Per-method data is keyed by the core's [`SolverId`], so a method added to
//! the registry gets its row, colour and toggle here. The plant, the target, the reality-gap
//! knobs, the sweep and the claims are every arm's, in the other state modules.

use super::train::{Run, RunState};
use bevy::prelude::*;
use elbow::Point2;
use elbow::chain::manifold::Walk;
use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
use elbow::chain::{NetSet, Nets};
use elbow::learned::HeadKind;
use elbow::lineup::SolverId;
use std::collections::VecDeque;

/// Registers the chain lab's resources and its training message.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ChainView>()
        .init_resource::<ChainNets>()
        .init_resource::<ChainAnswers>()
        .init_resource::<ChainTraining>()
        .init_resource::<ChainWhy>()
        .add_message::<ChainTrainCommand>();
}

/// Samples per fan by default.
pub(crate) const DEFAULT_FAN: usize = 200;
/// The most samples per fan the slider allows.
pub(crate) const MAX_FAN: usize = 1000;
/// How far the self-motion slider walks either way, in coordinate units (radians; metres for a
/// rail).
pub(crate) const SELF_MOTION_SPAN: f64 = std::f64::consts::PI;

/// The methods that can drive the chain (the exact sampler is the reference, not a driver).
pub(crate) fn drives(m: SolverId) -> bool {
    m != SolverId::Exact
}

/// A method's name in the panel.
pub(crate) fn method_label(m: SolverId) -> &'static str {
    match m {
        SolverId::Learned(HeadKind::Mse) => "MSE net",
        SolverId::Learned(HeadKind::Mdn) => "MDN fan",
        SolverId::Flow => "flow fan",
        SolverId::Iterative => "DLS, prior starts",
        SolverId::Hybrid => "hybrid: MDN seed + DLS",
        SolverId::Exact => "exact posterior",
        other => other.name(),
    }
}

/// What the user chose on a chain.
#[derive(Resource, Debug, Clone, PartialEq)]
pub(crate) struct ChainView {
    /// Which method's answer the chain follows.
    pub(crate) driver: SolverId,
    /// Samples per fan (MDN, flow and exact).
    pub(crate) fan: usize,
    /// Which methods are drawn, by [`SolverId::CHAIN`] position.
    pub(crate) shown: [bool; SolverId::CHAIN.len()],
    /// Self-motion: how far along the solution manifold the chain is walked from the driver's
    /// answer, in coordinate units, within ±[`SELF_MOTION_SPAN`].
    pub(crate) self_motion: f64,
    /// The safety envelope around a learned driver: a proposal whose FK misses, that leaves the
    /// ranges or turns a joint too far falls back to DLS from where the arm is.
    pub(crate) envelope: bool,
}

/// Whether the envelope applies to `driver`: the nets (the classical methods check themselves).
pub(crate) fn enveloped(driver: SolverId) -> bool {
    driver.family() == elbow::lineup::Family::Learned
}

impl Default for ChainView {
    fn default() -> Self {
        let shown = SolverId::CHAIN.map(|m| {
            matches!(
                m,
                SolverId::Learned(HeadKind::Mse) | SolverId::Learned(HeadKind::Mdn) | SolverId::Flow | SolverId::Exact
            )
        });
        Self { driver: SolverId::Hybrid, fan: DEFAULT_FAN, shown, self_motion: 0.0, envelope: false }
    }
}

/// Position of `m` in [`SolverId::CHAIN`].
pub(crate) fn slot(m: SolverId) -> usize {
    SolverId::CHAIN.iter().position(|&x| x == m).unwrap_or(0)
}

impl ChainView {
    /// Whether `m` is drawn.
    pub(crate) fn shows(&self, m: SolverId) -> bool {
        self.shown[slot(m)]
    }

    /// The fan size clamped into 2..=[`MAX_FAN`].
    pub(crate) fn fan(&self) -> usize {
        self.fan.clamp(2, MAX_FAN)
    }

    /// The self-motion distance, finite and within the span.
    pub(crate) fn self_motion(&self) -> f64 {
        if self.self_motion.is_finite() { self.self_motion.clamp(-SELF_MOTION_SPAN, SELF_MOTION_SPAN) } else { 0.0 }
    }
}

/// The latest snapshot of each net, and a counter that moves when any changes.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct ChainNets {
    /// The nets, by kind.
    pub(crate) set: NetSet,
    /// Bumped on every new snapshot.
    pub(crate) generation: u64,
}

impl ChainNets {
    /// The net of `kind`, if trained (or training).
    pub(crate) fn get(&self, kind: NetKind) -> Option<&ChainNet> {
        self.set.get(kind)
    }

    /// Replaces the net of `kind`.
    pub(crate) fn set(&mut self, kind: NetKind, net: Option<ChainNet>) {
        self.set.set(kind, net);
        self.generation += 1;
    }

    /// The nets as the core's solvers take them.
    pub(crate) fn nets(&self) -> Nets<'_> {
        self.set.nets()
    }
}

/// Running figures of an iterative method, averaged over the solutions of recent frames.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct IterStats {
    /// Solutions counted.
    pub(crate) solutions: u64,
    /// Mean seconds per solution (exponential average).
    pub(crate) seconds: f64,
    /// Mean DLS iterations per solution.
    pub(crate) iterations: f64,
    /// Mean starts per solution (seeds and prior starts together).
    pub(crate) starts: f64,
    /// Share of solutions within the success radius.
    pub(crate) success: f64,
    /// Share of hybrid solutions whose seeds all failed (fell back to prior starts).
    pub(crate) fallbacks: f64,
}

impl IterStats {
    /// Folds in one frame's `n` solutions.
    pub(crate) fn add(
        &mut self,
        n: usize,
        seconds: f64,
        iterations: u64,
        starts: u64,
        successes: usize,
        fallbacks: u64,
    ) {
        if n == 0 {
            return;
        }
        let nf = n as f64;
        let a = if self.solutions == 0 { 1.0 } else { 0.05 };
        let mix = |old: f64, new: f64| if new.is_finite() { old + a * (new - old) } else { old };
        self.seconds = mix(self.seconds, seconds / nf);
        self.iterations = mix(self.iterations, iterations as f64 / nf);
        self.starts = mix(self.starts, starts as f64 / nf);
        self.success = mix(self.success, successes as f64 / nf);
        self.fallbacks = mix(self.fallbacks, fallbacks as f64 / nf);
        self.solutions += n as u64;
    }
}

/// The exact posterior's fan for one target, computed off the frame, and the posterior mismatch
/// of the MDN's and the flow's fans against it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ExactFan {
    /// The target it was drawn for.
    pub(crate) target: Option<Point2>,
    /// Coordinates, `coords` per sample (empty: unreachable, or not yet computed).
    pub(crate) x: Vec<f64>,
    /// Effective sample size of the weighted pool.
    pub(crate) ess: f64,
    /// Seconds the sampler took.
    pub(crate) seconds: f64,
    /// The MDN fan's posterior mismatch (MMD) against it, when an MDN was there.
    pub(crate) mmd: Option<f64>,
    /// The flow fan's posterior mismatch against it, when a flow was there.
    pub(crate) flow_mmd: Option<f64>,
    /// Root of the trace of its covariance.
    pub(crate) spread: f64,
}

/// Seconds of MMD history kept for the plot.
pub(crate) const MMD_HISTORY_SECS: f64 = 60.0;

/// This frame's answers on the chain.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct ChainAnswers {
    /// The squared-error net's one answer.
    pub(crate) mse: Option<Vec<f64>>,
    /// The MDN's fan.
    pub(crate) mdn: Vec<f64>,
    /// Mean tip miss of the MDN's fan (its re-simulation error), metres.
    pub(crate) mdn_resim: Option<f64>,
    /// The flow's fan.
    pub(crate) flow: Vec<f64>,
    /// Mean tip miss of the flow's fan, metres.
    pub(crate) flow_resim: Option<f64>,
    /// The latest exact fan (for the current target or, while a new one is computed, the last).
    pub(crate) exact: ExactFan,
    /// A new exact fan is being computed.
    pub(crate) exact_busy: bool,
    /// A few DLS answers from prior starts this frame.
    pub(crate) dls: Vec<f64>,
    /// A few hybrid answers this frame.
    pub(crate) hybrid: Vec<f64>,
    /// DLS from prior starts, averaged over frames.
    pub(crate) dls_stats: IterStats,
    /// The hybrid, averaged over frames.
    pub(crate) hybrid_stats: IterStats,
    /// The driver's answer this frame before any self-motion: where the next frame's answer
    /// starts from (empty until the first answer).
    pub(crate) anchor: Vec<f64>,
    /// The self-motion walk behind the command, when the slider is off zero.
    pub(crate) walk: Option<Walk>,
    /// How far along the manifold the walk is asked to go now: the slider's distance, reached
    /// at a bounded speed.
    pub(crate) walked: f64,
    /// `[seconds since start, MMD]` of each exact fan that came with an MDN fan.
    pub(crate) mmd_history: VecDeque<[f64; 2]>,
    /// The same for the flow's fan.
    pub(crate) flow_mmd_history: VecDeque<[f64; 2]>,
}

/// Every net's training run and the settings of the next run.
#[derive(Resource, Debug, Clone, PartialEq)]
pub(crate) struct ChainTraining {
    /// The runs, by [`NetKind::ALL`] position.
    pub(crate) runs: [Run; NetKind::ALL.len()],
    /// The configuration of the next run (the experiment's, by default).
    pub(crate) config: NetConfig,
    /// Start training when a chain lab opens without nets.
    pub(crate) autostart: bool,
}

/// The method that samples a net.
pub(crate) fn net_method(kind: NetKind) -> SolverId {
    match kind {
        NetKind::Mse => SolverId::Learned(HeadKind::Mse),
        NetKind::Mdn => SolverId::Learned(HeadKind::Mdn),
        NetKind::Flow => SolverId::Flow,
    }
}

impl ChainTraining {
    /// The share of its steps done of the net behind method `m`, while that net trains (`None`
    /// once it is done or stopped, and for a method with no net).
    pub(crate) fn training(&self, m: SolverId) -> Option<f64> {
        let k = NetKind::ALL.iter().position(|&k| net_method(k) == m)?;
        let run = &self.runs[k];
        (run.state == RunState::Running).then(|| run.steps_done as f64 / run.total.max(1) as f64)
    }
}

impl Default for ChainTraining {
    fn default() -> Self {
        Self { runs: Default::default(), config: NetConfig::default(), autostart: true }
    }
}

impl ChainTraining {
    /// The run of `kind`.
    pub(crate) fn run(&self, kind: NetKind) -> &Run {
        &self.runs[kind.index()]
    }

    /// The run of `kind`, to change.
    pub(crate) fn run_mut(&mut self, kind: NetKind) -> &mut Run {
        &mut self.runs[kind.index()]
    }
}

/// What the panel (or a test) asks of chain training.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainTrainCommand {
    /// Train every net afresh with [`ChainTraining::config`].
    Start,
    /// Stop every run, keeping the nets as they stand.
    Stop,
}

/// The chain's "why did it do that?": the latest explanation asked for, and where it was asked.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct ChainWhy(pub(crate) Option<elbow::explain::chain::ChainExplanation>);

#[cfg(test)]
mod tests {
    use super::*;

    /// The canvas says a fan's net is training, and how far: only while it runs.
    #[test]
    fn a_net_is_training_only_while_its_run_runs() {
        let mut t = ChainTraining::default();
        let mdn = SolverId::Learned(HeadKind::Mdn);
        let k = NetKind::ALL.iter().position(|&k| k == NetKind::Mdn).unwrap();
        t.runs[k] = Run { state: RunState::Running, steps_done: 50, total: 200, ..Run::default() };
        assert_eq!(t.training(mdn), Some(0.25));
        assert_eq!(t.training(SolverId::Flow), None, "the flow's run has not started");
        assert_eq!(t.training(SolverId::Exact), None, "no net behind the exact posterior");
        t.runs[k].state = RunState::Finished;
        assert_eq!(t.training(mdn), None);
    }
}
