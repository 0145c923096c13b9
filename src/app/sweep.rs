//! Live degradation: while the sliders move, the core's degradation experiment runs in the
//! background on 1,500 held-out targets for every solver, sweeping the chosen channel (encoder
//! noise or backlash) from zero to the end of its slider, each level on its own from the perfect
//! arm, with the current models. The panel plots error and silent-failure rate against the
//! level, with the current setting marked.
//!
//! The sweep is a [`Job`] keyed by what its curves are of (the nominal arm and the channel): a
//! result for another key is dropped. A slider change starts a new sweep as soon as the running
//! one ends (its curves stay valid meanwhile: only the marked level moves); model snapshots
//! (which arrive many times a second while training) at most every [`MODEL_REFRESH_SECS`].
//! The frame only polls.

use super::AppSet;
use super::job::Job;
use super::state::arm::{Nominal, PlantSettings, range, two_link_lab};
use super::state::train::Models;
use bevy::prelude::*;
use elbow::experiments::degradation::{
    Channel, ChannelLevels, DegradationConfig, DegradationReport, Protocol, Split, degradation_with, pipelines,
};
use elbow::{HeadKind, LearnedModel, Pipeline, TwoLinkArm};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registers the sweep's view, the job and the system that starts and collects sweeps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LiveSweep>()
        .init_resource::<SweepJob>()
        .add_systems(Update, schedule.in_set(AppSet::Solve).run_if(two_link_lab));
}

/// Levels between zero and the slider's end.
const LEVELS: usize = 6;
/// Least time between two sweeps started by new model snapshots alone, seconds.
pub(crate) const MODEL_REFRESH_SECS: f64 = 2.0;

/// Held-out targets per level of the live degradation sweep: enough for smooth curves within a
/// second.
pub(crate) const SWEEP_TARGETS: usize = 1500;

/// The perturbation channel the live degradation plot sweeps: one of the two sliders at the top.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SweepChannel {
    /// Encoder noise.
    #[default]
    Encoder,
    /// Backlash.
    Backlash,
}

impl SweepChannel {
    /// Both, in menu order.
    pub(crate) const ALL: [SweepChannel; 2] = [SweepChannel::Encoder, SweepChannel::Backlash];

    /// The core's channel.
    pub(crate) fn channel(self) -> Channel {
        match self {
            SweepChannel::Encoder => Channel::Encoder,
            SweepChannel::Backlash => Channel::Backlash,
        }
    }

    /// The slider's range, swept from 0 to its end.
    pub(crate) fn range(self) -> std::ops::RangeInclusive<f64> {
        match self {
            SweepChannel::Encoder => range::NOISE,
            SweepChannel::Backlash => range::BACKLASH,
        }
    }

    /// The slider's current value.
    pub(crate) fn current(self, plant: &PlantSettings) -> f64 {
        let s = plant.sanitized();
        match self {
            SweepChannel::Encoder => s.noise_std,
            SweepChannel::Backlash => s.backlash,
        }
    }
}

/// One pipeline's curve: `[level, value]` points.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    /// The pipeline.
    pub(crate) pipeline: Pipeline,
    /// Mean tip error on held-out targets, metres.
    pub(crate) error: Vec<[f64; 2]>,
    /// Silent-failure rate on held-out targets.
    pub(crate) silent: Vec<[f64; 2]>,
}

/// The live degradation sweep: every solver's error and silent-failure rate against the level
/// of one channel, recomputed in the background as the sliders and the models change.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct LiveSweep {
    /// The channel swept.
    pub(crate) channel: SweepChannel,
    /// The latest curves, and the channel they sweep.
    pub(crate) latest: Option<(SweepChannel, Arc<Vec<Curve>>)>,
    /// Wall time of the latest sweep, milliseconds.
    pub(crate) compute_ms: f64,
    /// A sweep is running.
    pub(crate) busy: bool,
    /// Why no sweep can run yet (a head without a model), or why the last one failed.
    pub(crate) note: Option<String>,
}

/// What a sweep's curves are of: the nominal arm and the channel.
type Key = (TwoLinkArm, SweepChannel);

/// The sweep being computed and what is waiting for the next one.
#[derive(Resource, Default)]
pub(crate) struct SweepJob {
    work: Job<Key, Result<(Vec<Curve>, f64), String>>,
    /// The slider value of the latest sweep started.
    level: Option<f64>,
    /// Models changed: sweep when the refresh interval has passed.
    models_stale: bool,
}

/// The configuration of a live sweep of `channel` for the current settings.
pub(crate) fn config(channel: SweepChannel, plant: &PlantSettings, arm: elbow::TwoLinkArm) -> DegradationConfig {
    let end = *channel.range().end();
    let mut levels: Vec<f64> = (0..LEVELS).map(|i| end * i as f64 / (LEVELS - 1) as f64).collect();
    levels.push(channel.current(plant));
    levels.sort_by(f64::total_cmp);
    levels.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let swept = ChannelLevels::only(channel.channel(), levels);
    let defaults = DegradationConfig::default();
    DegradationConfig {
        arm,
        protocol: Protocol::Plant,
        levels: swept,
        ood: Vec::new(),
        targets: SWEEP_TARGETS,
        ood_fraction: 0.0,
        envelope: elbow::EnvelopeConfig::for_arm(&arm),
        ..defaults
    }
}

/// Every pipeline's held-out curves for the swept channel, baseline (level 0) first.
pub(crate) fn curves(report: &DegradationReport, channel: SweepChannel) -> Vec<Curve> {
    pipelines()
        .into_iter()
        .map(|pipeline| {
            let mut cells: Vec<_> = report
                .cells
                .iter()
                .filter(|c| {
                    c.solver == pipeline
                        && c.split == Split::In
                        && (c.channel.is_none() || c.channel == Some(channel.channel()))
                })
                .collect();
            cells.sort_by(|a, b| a.level.total_cmp(&b.level));
            let finite = |v: f64| if v.is_finite() { v } else { 0.0 };
            Curve {
                pipeline,
                error: cells.iter().map(|c| [c.level, finite(c.error.mean)]).collect(),
                silent: cells.iter().map(|c| [c.level, finite(c.silent)]).collect(),
            }
        })
        .collect()
}

/// Collects a finished sweep and starts a new one when settings or models changed.
fn schedule(
    mut job: ResMut<SweepJob>,
    mut sweep: ResMut<LiveSweep>,
    models: Res<Models>,
    plant: Res<PlantSettings>,
    nominal: Res<Nominal>,
) {
    let channel = sweep.channel;
    let key = (nominal.0, channel);
    match job.work.poll(&key) {
        Some(Ok(Ok((curves, ms)))) => {
            sweep.latest = Some((channel, Arc::new(curves)));
            sweep.compute_ms = ms;
            sweep.note = None;
        }
        Some(Ok(Err(why)) | Err(why)) => sweep.note = Some(why),
        None => {}
    }
    job.work.want(&key);
    let level = channel.current(&plant);
    if job.level != Some(level) {
        job.work.invalidate();
    }
    if models.is_changed() {
        job.models_stale = true;
    }
    let refresh_due = job.work.since_start().is_none_or(|t| t >= Duration::from_secs_f64(MODEL_REFRESH_SECS));
    if job.models_stale && refresh_due {
        job.work.invalidate();
    }
    if job.work.due() {
        match HeadKind::ALL.iter().map(|&h| models.get(h).cloned()).collect::<Option<Vec<LearnedModel>>>() {
            None => sweep.note = Some("waiting for every head's first model".into()),
            Some(owned) => {
                job.level = Some(level);
                job.models_stale = false;
                let cfg = config(channel, &plant, nominal.0);
                job.work.start(key, move || {
                    let t = Instant::now();
                    let report = degradation_with(&cfg, owned).map_err(|e| e.to_string())?;
                    Ok((curves(&report, channel), t.elapsed().as_secs_f64() * 1e3))
                });
            }
        }
    }
    let busy = job.work.busy();
    if sweep.busy != busy {
        sweep.busy = busy;
    }
}
