//! What a degradation run returns: one [`Cell`] per protocol, pipeline, setting and target set,
//! and lookups by channel and level.

use super::channels::{Channel, OodKind, Perturbation, Setting, Split};
use super::config::{DegradationConfig, Protocol};
use super::protocol::Outcome;
use super::verdict::Claim;
use crate::envelope::InterventionLog;
use crate::learned::HeadKind;
use crate::lineup::Pipeline;
use crate::stats::Summary;
use serde::Serialize;

/// How a post-move check fared: rates over all targets of the set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CheckRates {
    /// Reported a failure.
    pub reported: f64,
    /// Missed without reporting it.
    pub silent: f64,
    /// Reported a failure although the tip was within the tolerance.
    pub false_alarm: f64,
}

impl CheckRates {
    fn of(missed: &[bool], reported: &[bool]) -> Self {
        let n = missed.len().max(1) as f64;
        let rate =
            |f: &dyn Fn(bool, bool) -> bool| missed.iter().zip(reported).filter(|&(&m, &r)| f(m, r)).count() as f64 / n;
        CheckRates { reported: rate(&|_, r| r), silent: rate(&|m, r| m && !r), false_alarm: rate(&|m, r| r && !m) }
    }
}

/// One pipeline's figures in one setting, for one target set. Rates are fractions of all
/// targets of the set.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Exercise or plant.
    pub protocol: Protocol,
    /// The solver (and whether the envelope wraps it).
    pub solver: Pipeline,
    /// The channel swept (`None`: the shared baseline with every channel at zero; left out of
    /// JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<Channel>,
    /// The channel's level.
    pub level: f64,
    /// Every channel's value.
    pub perturbation: Perturbation,
    /// Held-out or out-of-distribution targets.
    pub split: Split,
    /// Tip error against the true target, metres.
    pub error: Summary,
    /// Reported a failure.
    pub reported: f64,
    /// Missed by more than the tolerance.
    pub missed: f64,
    /// Missed without reporting it.
    pub silent: f64,
    /// Reported a failure although the tip was within the tolerance (false alarm).
    pub false_alarm: f64,
    /// The same rates with the camera check in place of the encoder check (plant protocol only;
    /// left out of JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub camera: Option<CheckRates>,
    /// Envelope decisions by reason (enveloped pipelines only; left out of JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envelope: Option<InterventionLog>,
}

impl Cell {
    /// The cell of `outcome`.
    pub(crate) fn of(
        protocol: Protocol,
        solver: Pipeline,
        setting: &Setting,
        split: Split,
        o: &Outcome,
        tolerance: f64,
    ) -> Self {
        let n = o.errors.len().max(1) as f64;
        let missed: Vec<bool> = o.errors.iter().map(|&e| e.is_nan() || e > tolerance).collect();
        let encoders = CheckRates::of(&missed, &o.reported);
        Cell {
            protocol,
            solver,
            channel: setting.channel,
            level: setting.level,
            perturbation: setting.perturbation,
            split,
            error: Summary::of(&o.errors),
            reported: encoders.reported,
            missed: missed.iter().filter(|&&m| m).count() as f64 / n,
            silent: encoders.silent,
            false_alarm: encoders.false_alarm,
            camera: (!o.camera_reported.is_empty()).then(|| CheckRates::of(&missed, &o.camera_reported)),
            envelope: solver.envelope.then_some(o.log),
        }
    }
}

impl Cell {
    /// The rates with the camera check when `camera` is true and the plant protocol ran one,
    /// with the encoder check otherwise.
    pub fn rates(&self, camera: bool) -> CheckRates {
        match (camera, self.camera) {
            (true, Some(k)) => k,
            _ => CheckRates { reported: self.reported, silent: self.silent, false_alarm: self.false_alarm },
        }
    }
}

/// The whole result.
#[derive(Debug, Clone, Serialize)]
pub struct DegradationReport {
    /// The configuration that produced it, its OOD sets those that ran (had targets).
    pub config: DegradationConfig,
    /// OOD sets that were asked for but came out empty (absent for this arm or region, or no
    /// targets left at this OOD fraction), so none of the cells cover them.
    pub ood_empty: Vec<OodKind>,
    /// Every cell.
    pub cells: Vec<Cell>,
    /// The claims, each with its numbers and a verdict computed from them.
    pub claims: Vec<Claim>,
    /// The heads loaded from model files (the others were trained for this run).
    pub loaded: Vec<HeadKind>,
    /// Training wall time of the heads, seconds.
    pub train_seconds: f64,
    /// The divergence guard's roll-backs in training the heads (only heads that had any).
    #[serde(default)]
    pub rollbacks: Vec<crate::learned::train::NetRollbacks>,
    /// Wall time of the evaluation (every protocol, setting, pipeline and target), seconds.
    pub eval_seconds: f64,
    /// Targets per set, by split.
    pub targets: Vec<(Split, usize)>,
}

impl DegradationReport {
    /// The cell for one protocol, pipeline, channel level and split. Level 0 of any channel is
    /// the shared baseline.
    pub fn cell(
        &self,
        protocol: Protocol,
        solver: impl Into<Pipeline>,
        channel: Channel,
        level: f64,
        split: Split,
    ) -> Option<&Cell> {
        let solver = solver.into();
        self.cells.iter().find(|c| {
            c.protocol == protocol
                && c.solver == solver
                && c.split == split
                && if level == 0.0 { c.channel.is_none() } else { c.channel == Some(channel) && c.level == level }
        })
    }

    /// The cells of one channel sweep, baseline first, by rising level.
    pub fn series(&self, protocol: Protocol, solver: Pipeline, channel: Channel, split: Split) -> Vec<&Cell> {
        let mut out: Vec<&Cell> = self
            .cells
            .iter()
            .filter(|c| {
                c.protocol == protocol
                    && c.solver == solver
                    && c.split == split
                    && (c.channel.is_none() || c.channel == Some(channel))
            })
            .collect();
        out.sort_by(|a, b| a.level.total_cmp(&b.level));
        out
    }

    /// The protocols that ran, plant first.
    pub fn protocols(&self) -> Vec<Protocol> {
        [Protocol::Plant, Protocol::Exercise]
            .into_iter()
            .filter(|p| self.cells.iter().any(|c| c.protocol == *p))
            .collect()
    }

    /// The channels swept under `protocol`, in table order.
    pub fn channels(&self, protocol: Protocol) -> Vec<Channel> {
        Channel::ALL
            .into_iter()
            .filter(|&ch| self.cells.iter().any(|c| c.protocol == protocol && c.channel == Some(ch)))
            .collect()
    }

    /// The pipelines measured, in line-up order.
    pub fn pipelines(&self) -> Vec<Pipeline> {
        let mut out: Vec<Pipeline> = Vec::new();
        for c in &self.cells {
            if !out.contains(&c.solver) {
                out.push(c.solver);
            }
        }
        out
    }
}
