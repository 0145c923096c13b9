//! Live degradation: while the sliders move, the core's degradation experiment runs in the
//! background on 1,500 held-out targets for every solver, sweeping the chosen channel (any plant
//! slider: encoder noise, backlash, friction, flex, latency, the camera's noise, offset and frame
//! period) from zero to the end of its slider, each level on its own from the perfect arm, with
//! the current models. The panel plots error and silent-failure rate against the level, with the
//! current setting marked; for the camera's own channels, which move no arm, it plots what the
//! camera check does instead: its false alarms and silent misses.
//!
//! The sweep is a [`Job`] keyed by what its curves are of (the nominal arm and the channel): a
//! result for another key is dropped. A slider change starts a new sweep as soon as the running
//! one ends (its curves stay valid meanwhile: only the marked level moves); model snapshots
//! (which arrive many times a second while training) at most every [`MODEL_REFRESH_SECS`].
//! The frame only polls.

use super::AppSet;
use super::job::{Job, Meter};
use super::state::arm::{Lab, PlantSettings};
use super::state::manifold::ChainNets;
use super::state::train::Models;
use bevy::prelude::*;
use elbow::arm::Arm;
use elbow::chain::NetSet;
use elbow::experiments::degradation::{
    Cell, Channel, ChannelLevels, DegradationConfig, DegradationReport, Progress, Protocol, Split,
    degradation_observed, degradation_with_nets_observed,
};
use elbow::{LearnedModel, Pipeline};
use std::sync::Arc;
use std::time::Duration;

/// Registers the sweep's view, the job and the system that starts and collects sweeps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<LiveSweep>().init_resource::<SweepJob>().add_systems(Update, schedule.in_set(AppSet::Solve));
}

/// Levels between zero and the slider's end.
const LEVELS: usize = 6;
/// Least time between two sweeps started by new model snapshots alone, seconds.
pub(crate) const MODEL_REFRESH_SECS: f64 = 2.0;

/// Held-out targets per level of the live degradation sweep: every move is about 1.5 s of the
/// plant's dynamics (about 0.15 ms of one core), so 150 give a curve within a few seconds.
pub(crate) const SWEEP_TARGETS: usize = 150;

/// A channel the live degradation plot sweeps: a reality-gap channel of the core's table with a
/// slider in the app ([`elbow::plant::channel::Row::slider`]), so a channel given a slider in the
/// table joins the menu by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SweepChannel(Channel);

impl Default for SweepChannel {
    /// Encoder noise, the first channel with a slider.
    fn default() -> Self {
        Self(Channel::Encoder)
    }
}

impl SweepChannel {
    /// Every one, in the table's (and the menu's) order.
    pub(crate) fn all() -> impl Iterator<Item = SweepChannel> {
        Channel::ALL.into_iter().filter_map(SweepChannel::of)
    }

    /// `channel`, when it has a slider.
    pub(crate) fn of(channel: Channel) -> Option<SweepChannel> {
        channel.row().slider.map(|_| SweepChannel(channel))
    }

    /// The core's channel.
    pub(crate) fn channel(self) -> Channel {
        self.0
    }

    /// The swept range in the slider's units, from 0 to the slider's end (the camera's frame
    /// period from a frame every tick to one every
    /// [`super::state::arm::range::SLOWEST_FRAME`] seconds); the camera
    /// offset's is the length of the two-axis offset with both sliders at their end.
    pub(crate) fn range(self) -> std::ops::RangeInclusive<f64> {
        let end = self.0.row().slider.unwrap_or(0.0);
        if self.0 == Channel::CameraOffset { 0.0..=end.hypot(end) } else { 0.0..=end }
    }

    /// The slider's current value, in the swept units (`None`: the camera is off, so no frame
    /// period).
    pub(crate) fn current(self, plant: &PlantSettings) -> Option<f64> {
        plant.sanitized().level(self.0)
    }
}

/// One pipeline's curve: `[level, value]` points, the level in the slider's units.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Curve {
    /// The pipeline.
    pub(crate) pipeline: Pipeline,
    /// Mean tip error on held-out targets, metres.
    pub(crate) error: Vec<[f64; 2]>,
    /// Silent-failure rate on held-out targets (with the camera check for the camera's
    /// channels, with the encoder check otherwise).
    pub(crate) silent: Vec<[f64; 2]>,
    /// False-alarm rate on held-out targets, from the same check.
    pub(crate) false_alarm: Vec<[f64; 2]>,
}

/// The live degradation sweep: every solver's error and silent-failure rate against the level
/// of one channel, recomputed in the background as the sliders and the models change.
#[derive(Resource, Debug, Clone, Default)]
pub(crate) struct LiveSweep {
    /// The channel swept.
    pub(crate) channel: SweepChannel,
    /// The latest curves, and the channel they sweep.
    pub(crate) latest: Option<(SweepChannel, Arc<Vec<Curve>>)>,
    /// Where the sweep stands in words ([`Job::status`]): how far the running one is, how long
    /// the last took.
    pub(crate) status: String,
    /// A sweep is running.
    pub(crate) busy: bool,
    /// Why no sweep can run yet (a head without a model), or why the last one failed.
    pub(crate) note: Option<String>,
}

/// What a sweep's curves are of: the arm and the channel.
type Key = (Arm, SweepChannel);

/// The learners a background degradation run uses as they stand: the two-link heads' models,
/// or a chain's nets.
pub(crate) enum Learners {
    /// Every head's model, in [`elbow::HeadKind::ALL`] order.
    Heads(Vec<LearnedModel>),
    /// The chain's nets.
    Nets(Box<NetSet>),
}

impl Learners {
    /// A copy of the learners of the arm in force, or why a run cannot start yet (a head or a
    /// net without its first snapshot).
    pub(crate) fn of(lab: &Lab, models: &Models, nets: &ChainNets) -> Result<Self, String> {
        match lab.chain() {
            None => models.every().map(Learners::Heads),
            Some(_) => {
                let missing = elbow::chain::nets::NetKind::ALL.into_iter().find(|&k| nets.get(k).is_none());
                match missing {
                    Some(kind) => Err(format!("waiting for the {kind} net's first snapshot")),
                    None => Ok(Learners::Nets(Box::new(nets.set.clone()))),
                }
            }
        }
    }

    /// The degradation run of `cfg` on these learners, telling `meter` how many of its jobs are
    /// done.
    pub(crate) fn run(self, cfg: &DegradationConfig, meter: &Meter) -> Result<DegradationReport, String> {
        let progress = |p: Progress| {
            if let Progress::Evaluating { done, total } = p {
                meter.set(done, total);
            }
        };
        match self {
            Learners::Heads(models) => degradation_observed(cfg, models, &progress),
            Learners::Nets(nets) => degradation_with_nets_observed(cfg, &nets, &progress),
        }
        .map_err(|e| e.to_string())
    }
}

/// The sweep being computed and what is waiting for the next one.
#[derive(Resource, Default)]
pub(crate) struct SweepJob {
    work: Job<Key, Result<Vec<Curve>, String>>,
    /// The slider value of the latest sweep started (NaN: none, a camera that is off).
    level: Option<f64>,
    /// Models changed: sweep when the refresh interval has passed.
    models_stale: bool,
}

/// The configuration of a live sweep of `channel` on `arm` for the current settings: the arm's
/// default run ([`DegradationConfig::on`]) on the swept levels.
pub(crate) fn config(channel: SweepChannel, plant: &PlantSettings, arm: &Arm) -> DegradationConfig {
    let end = *channel.range().end();
    let mut levels: Vec<f64> = (0..LEVELS).map(|i| end * i as f64 / (LEVELS - 1) as f64).collect();
    levels.extend(channel.current(plant));
    levels.sort_by(f64::total_cmp);
    levels.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
    let swept = ChannelLevels::only(channel.channel(), levels);
    DegradationConfig {
        protocol: Protocol::Plant,
        levels: swept,
        ood: Vec::new(),
        targets: SWEEP_TARGETS,
        ood_fraction: 0.0,
        ..DegradationConfig::on(arm)
    }
}

/// Every pipeline's held-out curves for the swept channel, baseline (level 0) first.
pub(crate) fn curves(report: &DegradationReport, channel: SweepChannel) -> Vec<Curve> {
    report
        .pipelines()
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
            let camera = channel.channel().camera_only();
            let series = |value: &dyn Fn(&Cell) -> f64| -> Vec<[f64; 2]> {
                cells.iter().map(|c| [c.level, finite(value(c))]).collect()
            };
            Curve {
                pipeline,
                error: series(&|c| c.error.mean),
                silent: series(&|c| c.rates(camera).silent),
                false_alarm: series(&|c| c.rates(camera).false_alarm),
            }
        })
        .collect()
}

/// Collects a finished sweep and starts a new one when settings or models changed.
fn schedule(
    mut job: ResMut<SweepJob>,
    mut sweep: ResMut<LiveSweep>,
    models: Res<Models>,
    nets: Res<ChainNets>,
    plant: Res<PlantSettings>,
    lab: Res<Lab>,
) {
    let channel = sweep.channel;
    let key = (lab.arm().clone(), channel);
    match job.work.poll(&key) {
        Some(Ok(Ok(curves))) => {
            sweep.latest = Some((channel, Arc::new(curves)));
            sweep.note = None;
        }
        Some(Ok(Err(why)) | Err(why)) => sweep.note = Some(why),
        None => {}
    }
    job.work.want(&key);
    let level = channel.current(&plant).unwrap_or(f64::NAN);
    if job.level.map(f64::to_bits) != Some(level.to_bits()) {
        job.work.invalidate();
    }
    let SweepJob { work, models_stale, .. } = &mut *job;
    let changed = models.is_changed() || nets.is_changed();
    work.refresh_for_models(models_stale, changed, Duration::from_secs_f64(MODEL_REFRESH_SECS));
    if job.work.due() {
        match Learners::of(&lab, &models, &nets) {
            Err(why) => sweep.note = Some(why),
            Ok(learners) => {
                sweep.note = None;
                job.level = Some(level);
                job.models_stale = false;
                let cfg = config(channel, &plant, lab.arm());
                let meter = job.work.meter();
                job.work.start(key, move || Ok(curves(&learners.run(&cfg, &meter)?, channel)));
            }
        }
    }
    let busy = job.work.busy();
    if sweep.busy != busy {
        sweep.busy = busy;
    }
    let status = job.work.status();
    if sweep.status != status {
        sweep.status = status;
    }
}
