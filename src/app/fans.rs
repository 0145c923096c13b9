//! Every frame on a chain: the squared-error answer, the MDN's and the flow's fans, a few DLS
//! and hybrid answers (timed, so the panel compares the hybrid with DLS from prior starts), the
//! driver's answer walked along the manifold by the self-motion slider, and the exact
//! posterior's fan, which is computed off the frame (a background [`Job`]) with the learned
//! fans' posterior mismatch against it. The command goes to the plant, the same as every arm's.

use super::AppSet;
use super::job::Job;
use super::state::arm::{Lab, MAX_FRAME_SECS, Sim, manifold};
use super::state::manifold::{ChainAnswers, ChainNets, ChainView, ExactFan, MMD_HISTORY_SECS, enveloped};
use super::state::solve::{Command, EnvelopeStats, FLASH_SECS};
use super::state::view::Target;
use bevy::prelude::*;
use elbow::Point2;
use elbow::arm::Arm;
use elbow::chain::mmd::{Kernel, mmd_unbiased};
use elbow::chain::nets::{ChainNet, NetKind};
use elbow::chain::sampler::spread;
use elbow::chain::solve::{self, SolveSettings, hybrid_from};
use elbow::chain::{ChainDls, ExactSampler, Nets, manifold};
use elbow::envelope::ChainEnvelope;
use elbow::experiments::degradation::DegradationConfig;
use elbow::learned::HeadKind;
use elbow::lineup::SolverId;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

/// Registers the exact-fan job and the per-frame answers.
pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<ExactJob>().add_systems(Update, answer.in_set(AppSet::Solve).run_if(manifold));
}

/// Success radius on a chain, metres (the chain experiment's).
pub(crate) const TOLERANCE: f64 = 1e-3;
/// The fastest the self-motion walk moves along the manifold, coordinate units per second.
pub(crate) const SELF_MOTION_SPEED: f64 = 0.5;
/// DLS and hybrid answers computed (and timed) per frame.
pub(crate) const PER_FRAME: usize = 4;
/// Seed of the fans' draws: the same every frame, so a fan moves smoothly with the target
/// instead of flickering.
const FAN_SEED: u64 = 0x00FA_4A11;

/// What an exact fan is computed for: the target (bit for bit), the fan size and the arm (the
/// nets whose mismatch it measures refresh it separately, see [`NETS_REFRESH`]).
#[derive(Debug, Clone, PartialEq)]
struct ExactKey {
    target: [u64; 2],
    fan: usize,
    arm: String,
}

/// How often, at most, the exact fan's mismatch is taken again against nets that changed (they
/// change many times a second while they train; a run keyed by them would never be current).
const NETS_REFRESH: std::time::Duration = std::time::Duration::from_secs(1);

/// The background job of the exact fan, and whether the nets changed since its latest start.
#[derive(Resource, Default)]
struct ExactJob(Job<ExactKey, ExactFan>, bool, u64);

/// `n` draws of a net (the MDN, the flow) for `target`, the same draws every frame.
fn fan(net: &ChainNet, target: Point2, n: usize, out: &mut Vec<f64>) {
    out.clear();
    net.sample(target, n, &mut ChaCha8Rng::seed_from_u64(FAN_SEED), out);
}

/// The mean tip miss of the answers in `set`, metres (none for an empty set).
fn mean_miss(arm: &Arm, set: &[f64], target: Point2) -> Option<f64> {
    let misses: Vec<f64> = set.chunks_exact(arm.coords()).map(|x| (arm.chain.tip(x) - target).norm()).collect();
    (!misses.is_empty()).then(|| misses.iter().sum::<f64>() / misses.len() as f64)
}

/// The exact fan for `target`, and the MDN's and the flow's fans' mismatch against it.
fn exact_fan(arm: &Arm, mdn: Option<&ChainNet>, flow: Option<&ChainNet>, target: Point2, n: usize) -> ExactFan {
    let t = Instant::now();
    let mut sampler = ExactSampler::new(arm);
    sampler.ess_factor = SolveSettings::default().ess_factor;
    let s = sampler.sample(target, n, &mut ChaCha8Rng::seed_from_u64(FAN_SEED));
    let seconds = t.elapsed().as_secs_f64();
    let d = arm.coords();
    let mmd = |net: Option<&ChainNet>| {
        net.filter(|_| !s.x.is_empty())
            .map(|net| {
                let mut set = Vec::new();
                fan(net, target, n, &mut set);
                mmd_unbiased(&set, &s.x, d, &Kernel::default())
            })
            .filter(|m| m.is_finite())
    };
    let (mmd, flow_mmd) = (mmd(mdn), mmd(flow));
    ExactFan { target: Some(target), spread: spread(&s.x, d), x: s.x, ess: s.ess, seconds, mmd, flow_mmd }
}

/// The index of the answer in `set` (`d` values each) nearest `x`.
fn nearest(set: &[f64], d: usize, x: &[f64]) -> Option<usize> {
    set.chunks_exact(d)
        .map(|s| s.iter().zip(x).map(|(a, b)| (a - b).powi(2)).sum::<f64>())
        .enumerate()
        .filter(|(_, e)| e.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i)
}

/// The driver's answer for `target`, from the chain's pose `x` and this frame's answers.
fn drive_answer(
    arm: &Arm,
    driver: SolverId,
    target: Point2,
    x: &[f64],
    answers: &ChainAnswers,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<f64>> {
    let d = arm.coords();
    let settings = SolveSettings::default();
    match driver {
        SolverId::Learned(HeadKind::Mse) => answers.mse.clone(),
        // The fan's draw nearest the pose: a controller keeps to one mode rather than jumping.
        SolverId::Learned(HeadKind::Mdn) => {
            nearest(&answers.mdn, d, x).map(|i| answers.mdn[i * d..(i + 1) * d].to_vec())
        }
        SolverId::Flow => nearest(&answers.flow, d, x).map(|i| answers.flow[i * d..(i + 1) * d].to_vec()),
        SolverId::Iterative => {
            let mut out = x.to_vec();
            ChainDls { tolerance: settings.dls_tolerance, ..ChainDls::new(&arm.chain) }.refine(
                &mut out,
                target,
                settings.dls_iterations,
            );
            Some(out)
        }
        SolverId::Hybrid => {
            if answers.mdn.is_empty() {
                return None;
            }
            // Seeds: the fan's draws nearest the pose first.
            let mut order: Vec<(f64, usize)> = answers
                .mdn
                .chunks_exact(d)
                .enumerate()
                .map(|(i, s)| (s.iter().zip(x).map(|(a, b)| (a - b).powi(2)).sum::<f64>(), i))
                .collect();
            order.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut next = order.into_iter().map(|(_, i)| i);
            let mut out = x.to_vec();
            hybrid_from(arm, &settings, target, &mut out, rng, |_, seed| {
                if let Some(i) = next.next() {
                    seed.copy_from_slice(&answers.mdn[i * d..(i + 1) * d]);
                }
            });
            Some(out)
        }
        // The reference drives nothing, and the closed form's solvers are not a chain's.
        _ => None,
    }
}

/// A few answers of an iterative method, timed and folded into its running figures.
fn iterate(
    arm: &Arm,
    nets: Nets<'_>,
    method: SolverId,
    target: Point2,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<f64>,
) -> Option<(f64, solve::Effort, usize)> {
    let t = Instant::now();
    let effort = solve::solutions(arm, nets, &SolveSettings::default(), method, target, PER_FRAME, rng, out).ok()?;
    let seconds = t.elapsed().as_secs_f64();
    let ok = out.chunks_exact(arm.coords()).filter(|x| (arm.chain.tip(x) - target).norm() <= TOLERANCE).count();
    Some((seconds, effort, ok))
}

/// This frame's answers on the open chain.
#[allow(clippy::too_many_arguments)]
fn answer(
    time: Res<Time>,
    lab: Res<Lab>,
    target: Res<Target>,
    view: Res<ChainView>,
    nets: Res<ChainNets>,
    sim: Res<Sim>,
    mut answers: ResMut<ChainAnswers>,
    mut sent: ResMut<Command>,
    mut stats: ResMut<EnvelopeStats>,
    mut job: ResMut<ExactJob>,
    mut frame: Local<u64>,
) {
    let Some(arm) = lab.chain() else { return };
    let d = arm.coords();
    let target = target.pos;
    *frame += 1;
    let answers = &mut *answers;
    answers.mse = nets.get(NetKind::Mse).map(|net| {
        let mut x = vec![0.0; d];
        net.answer(target, &mut x);
        x
    });
    for (kind, set) in [(NetKind::Mdn, &mut answers.mdn), (NetKind::Flow, &mut answers.flow)] {
        match nets.get(kind) {
            Some(net) => fan(net, target, view.fan(), set),
            None => set.clear(),
        }
    }
    answers.mdn_resim = mean_miss(arm, &answers.mdn, target);
    answers.flow_resim = mean_miss(arm, &answers.flow, target);

    let mut rng = ChaCha8Rng::seed_from_u64(*frame);
    let mut buf = Vec::new();
    if let Some((s, e, ok)) = iterate(arm, nets.nets(), SolverId::Iterative, target, &mut rng, &mut buf) {
        answers.dls_stats.add(PER_FRAME, s, e.iterations, e.starts, ok, e.fallbacks);
        answers.dls = std::mem::take(&mut buf);
    }
    match iterate(arm, nets.nets(), SolverId::Hybrid, target, &mut rng, &mut buf) {
        Some((s, e, ok)) => {
            answers.hybrid_stats.add(PER_FRAME, s, e.iterations, e.starts, ok, e.fallbacks);
            answers.hybrid = buf;
        }
        None => answers.hybrid.clear(),
    }

    // The driver's answer, then walked along the manifold when the self-motion slider is off
    // zero. A driver that starts from the current pose starts from its own last answer before
    // the walk (the anchor), so a held slider walks a fixed distance from it rather than a bit
    // further every frame.
    let pose =
        [&answers.anchor, &sim.read].into_iter().find(|x| x.len() == d).cloned().unwrap_or_else(|| arm.prior_center());
    let mut command = drive_answer(arm, view.driver, target, &pose, answers, &mut rng);
    if view.envelope
        && enveloped(view.driver)
        && let Some(x) = command.as_ref()
        && sim.read.len() == d
    {
        // The learned part proposes, the classical part disposes: as the degradation run's
        // enveloped pipelines do, from where the arm is.
        let envelope = ChainEnvelope { arm, config: DegradationConfig::on(arm).envelope };
        let (reason, _) = envelope.verdict(x, target, &sim.read);
        stats.log.record(reason);
        if let Some(r) = reason {
            stats.flash = FLASH_SECS;
            stats.last = Some(r);
            command = drive_answer(arm, SolverId::Iterative, target, &sim.read, answers, &mut rng);
        }
    }
    answers.anchor = command.clone().filter(|x| x.iter().all(|v| v.is_finite())).unwrap_or_default();
    answers.walk = None;
    // The walk moves towards the slider's distance at a bounded speed, so the servos keep the
    // real tip near the target while the shape changes (a jump of the whole distance at once
    // would swing every joint at its own pace and the tip with them).
    let asked = view.self_motion();
    let step = SELF_MOTION_SPEED * time.delta_secs_f64().clamp(0.0, MAX_FRAME_SECS);
    answers.walked += (asked - answers.walked).clamp(-step, step);
    let distance = answers.walked;
    if let Some(x) = command.as_mut()
        && distance != 0.0
    {
        answers.walk = Some(manifold::walk(&arm.chain, x, target, distance));
    }
    sent.0 = command.filter(|x| x.iter().all(|v| v.is_finite()));

    // The exact fan: off the frame, for the current target, with the nets' latest snapshot.
    let key = ExactKey { target: [target.x.to_bits(), target.y.to_bits()], fan: view.fan(), arm: arm.name.clone() };
    if let Some(Ok(fan)) = job.0.poll(&key) {
        let now = time.elapsed_secs_f64();
        for (mmd, history) in [(fan.mmd, &mut answers.mmd_history), (fan.flow_mmd, &mut answers.flow_mmd_history)] {
            if let Some(m) = mmd {
                history.push_back([now, m]);
            }
            while history.front().is_some_and(|p| p[0] < now - MMD_HISTORY_SECS) {
                history.pop_front();
            }
        }
        answers.exact = fan;
    }
    job.0.want(&key);
    // New nets (a snapshot while they train, a load): the mismatch is taken again, at most every
    // NETS_REFRESH while they keep changing.
    let changed = std::mem::replace(&mut job.2, nets.generation) != nets.generation;
    let ExactJob(work, stale, _) = &mut *job;
    work.refresh_for_models(stale, changed, NETS_REFRESH);
    if job.0.due() {
        job.1 = false;
        let (arm, n) = (arm.clone(), view.fan());
        let (mdn, flow) = (nets.get(NetKind::Mdn).cloned(), nets.get(NetKind::Flow).cloned());
        job.0.start(key, move || exact_fan(&arm, mdn.as_ref(), flow.as_ref(), target, n));
    }
    answers.exact_busy = job.0.busy();
}
