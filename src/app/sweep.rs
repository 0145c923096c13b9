//! Live degradation: while the sliders move, the core's degradation experiment runs in the
//! background on 1,500 held-out targets for every solver, sweeping the chosen channel (encoder
//! noise or backlash) from zero to the end of its slider, each level on its own from the perfect
//! arm, with the current models. The panel plots error and silent-failure rate against the
//! level, with the current setting marked. A slider change starts a new sweep as soon as the
//! running one ends; model snapshots (which arrive many times a second while training) at most
//! every [`MODEL_REFRESH_SECS`]. The frame only polls.

use super::AppSet;
use super::state::{Background, Curve, LiveSweep, Models, Nominal, PlantSettings, SWEEP_TARGETS, SweepChannel};
use bevy::prelude::*;
use elbow::experiments::degradation::{
    ChannelLevels, DegradationConfig, DegradationReport, Protocol, Split, degradation_with, pipelines,
};
use elbow::{HeadKind, LearnedModel};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Registers the job and the system that starts and collects sweeps.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<SweepJob>().add_systems(Update, schedule.in_set(AppSet::Solve));
}

/// Levels between zero and the slider's end.
const LEVELS: usize = 6;
/// Least time between two sweeps started by new model snapshots alone, seconds.
pub(crate) const MODEL_REFRESH_SECS: f64 = 2.0;

/// The sweep being computed and what is waiting for the next one.
#[derive(Resource, Default)]
pub(crate) struct SweepJob {
    work: Background<(SweepChannel, Result<Vec<Curve>, String>, f64)>,
    /// A setting changed: sweep as soon as the running one ends.
    settings_stale: bool,
    /// Models changed: sweep when the refresh interval has passed.
    models_stale: bool,
    last_start: Option<Instant>,
    /// The channel and slider value of the latest sweep started.
    requested: Option<(SweepChannel, f64)>,
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
    if let Some(done) = job.work.poll() {
        sweep.busy = false;
        let (channel, result, ms) = done.unwrap_or_else(|why| (sweep.channel, Err(why), 0.0));
        match result {
            Ok(curves) => {
                sweep.latest = Some((channel, Arc::new(curves)));
                sweep.compute_ms = ms;
                sweep.note = None;
            }
            Err(why) => sweep.note = Some(why),
        }
    }
    // What the sweep must be of: the channel and its slider's value. Compared with what was
    // requested (not with what arrived), so a failed sweep does not restart every frame.
    let key = (sweep.channel, sweep.channel.current(&plant));
    if job.requested != Some(key) || nominal.is_changed() {
        job.settings_stale = true;
    }
    if models.is_changed() {
        job.models_stale = true;
    }
    let refresh_due = job.last_start.is_none_or(|t| t.elapsed() >= Duration::from_secs_f64(MODEL_REFRESH_SECS));
    if job.work.busy() || !(job.settings_stale || (job.models_stale && refresh_due)) {
        return;
    }
    let Some(owned) = HeadKind::ALL.iter().map(|&h| models.get(h).cloned()).collect::<Option<Vec<LearnedModel>>>()
    else {
        sweep.note = Some("waiting for every head's first model".into());
        return;
    };
    job.settings_stale = false;
    job.models_stale = false;
    job.requested = Some(key);
    job.last_start = Some(Instant::now());
    sweep.busy = true;
    let channel = sweep.channel;
    let cfg = config(channel, &plant, nominal.0);
    job.work.start(move || {
        let t = Instant::now();
        let result = degradation_with(&cfg, owned).map(|r| curves(&r, channel)).map_err(|e| e.to_string());
        (channel, result, t.elapsed().as_secs_f64() * 1e3)
    });
}
