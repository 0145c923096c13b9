//! Every chain method's answers for one target: the one implementation behind `experiment
//! chain`, `elbow solve --arm`, the atlas's chain layers and the app's fans and drivers.
//!
//! - the squared-error and mixture nets (`SolverId::Learned(HeadKind::Mse | HeadKind::Mdn)`) and
//!   [`SolverId::Flow`]: `n` draws of the net (copies of the one answer for the squared-error net);
//! - [`SolverId::Iterative`]: damped least squares from prior draws, restarting until converged;
//! - [`SolverId::Hybrid`]: draws of the MDN or the flow ([`Seeds`]) as seeds, each finished by a
//!   few DLS iterations, falling back to prior starts when no seed converges;
//! - [`SolverId::Exact`]: the exact posterior sampler;
//!
//! and [`ChainSolver`], every one of them as an [`IkSolver`] over the chain's coordinates: one
//! answer from where the arm is.

use super::dls::{ChainDls, DlsOutcome};
use super::nets::{ChainNet, Drawer, NetKind};
use super::sampler::ExactSampler;
use crate::arm::Arm;
use crate::kinematics::Point2;
use crate::kinematics::serial::Coords;
use crate::learned::HeadKind;
use crate::lineup::SolverId;
use crate::solver::{IkSolver, Solution, SolveStatus};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// How the iterative methods and the exact sampler run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SolveSettings {
    /// DLS stops once the tip is this close, metres.
    pub dls_tolerance: f64,
    /// DLS iterations per prior start.
    pub dls_iterations: u32,
    /// DLS prior starts per solution at most.
    pub dls_starts: u32,
    /// DLS iterations per MDN seed in the hybrid.
    pub hybrid_iterations: u32,
    /// MDN seeds per solution in the hybrid before it falls back to prior starts.
    pub hybrid_seeds: u32,
    /// The exact sampler's effective sample size, as a multiple of the samples drawn.
    pub ess_factor: f64,
    /// The net whose draws seed the hybrid.
    #[serde(default)]
    pub seeds: Seeds,
}

/// Where the hybrid's seeds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Seeds {
    /// Draws of the mixture density network.
    #[default]
    Mdn,
    /// Draws of the normalizing flow.
    Flow,
}

impl Seeds {
    /// Both sources, default first.
    pub const ALL: [Seeds; 2] = [Seeds::Mdn, Seeds::Flow];

    /// The key on the command line and in JSON.
    pub const fn key(self) -> &'static str {
        match self {
            Seeds::Mdn => "mdn",
            Seeds::Flow => "flow",
        }
    }

    /// The solver whose draws they are.
    pub const fn solver(self) -> SolverId {
        match self {
            Seeds::Mdn => SolverId::Learned(HeadKind::Mdn),
            Seeds::Flow => SolverId::Flow,
        }
    }

    /// The net that draws them.
    pub const fn net(self) -> NetKind {
        match self {
            Seeds::Mdn => NetKind::Mdn,
            Seeds::Flow => NetKind::Flow,
        }
    }
}

crate::keys::keyed!(Seeds, "seed source", serde);

impl Default for SolveSettings {
    /// The chain experiment's defaults.
    fn default() -> Self {
        Self {
            dls_tolerance: 1e-6,
            dls_iterations: 64,
            dls_starts: 32,
            hybrid_iterations: 8,
            hybrid_seeds: 4,
            ess_factor: 20.0,
            seeds: Seeds::Mdn,
        }
    }
}

impl SolveSettings {
    /// Checks every setting against `success_radius` (metres; DLS must stop within it), naming
    /// the first bad one.
    pub fn validate(&self, success_radius: f64) -> Result<(), SettingsError> {
        let refuse = |setting, unit, limits, got| Err(SettingsError { setting, unit, limits, got });
        let positive = |v: f64| v.is_finite() && v > 0.0;
        if !(positive(self.dls_tolerance) && self.dls_tolerance <= success_radius) {
            return refuse(Setting::DlsTolerance, "m", [0.0, success_radius], self.dls_tolerance);
        }
        for (setting, v, hi, unit) in [
            (Setting::DlsIterations, self.dls_iterations, 10_000, "iterations"),
            (Setting::DlsStarts, self.dls_starts, 1000, "starts"),
            (Setting::HybridIterations, self.hybrid_iterations, 10_000, "iterations"),
            (Setting::HybridSeeds, self.hybrid_seeds, 1000, "seeds"),
        ] {
            if !(1..=hi).contains(&v) {
                return refuse(setting, unit, [1.0, f64::from(hi)], f64::from(v));
            }
        }
        if !(self.ess_factor.is_finite() && (1.0..=1000.0).contains(&self.ess_factor)) {
            return refuse(Setting::EssFactor, "samples drawn", [1.0, 1000.0], self.ess_factor);
        }
        Ok(())
    }
}

/// A setting of [`SolveSettings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    /// [`SolveSettings::dls_tolerance`].
    DlsTolerance,
    /// [`SolveSettings::dls_iterations`].
    DlsIterations,
    /// [`SolveSettings::dls_starts`].
    DlsStarts,
    /// [`SolveSettings::hybrid_iterations`].
    HybridIterations,
    /// [`SolveSettings::hybrid_seeds`].
    HybridSeeds,
    /// [`SolveSettings::ess_factor`].
    EssFactor,
}

impl Setting {
    /// The setting's name in words, as a message says it.
    pub const fn name(self) -> &'static str {
        match self {
            Setting::DlsTolerance => "DLS tolerance",
            Setting::DlsIterations => "DLS iterations",
            Setting::DlsStarts => "DLS starts",
            Setting::HybridIterations => "hybrid iterations",
            Setting::HybridSeeds => "hybrid seeds",
            Setting::EssFactor => "ESS factor",
        }
    }
}

/// Why [`SolveSettings::validate`] refused the settings: the first setting out of its limits.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("{}", settings_message(self))]
pub struct SettingsError {
    /// What was refused.
    pub setting: Setting,
    /// Its unit (`m`; a count's: `iterations`, `starts`, `seeds`; the ESS factor's:
    /// `samples drawn`, of which it is a multiple).
    pub unit: &'static str,
    /// The least and the largest value accepted; the DLS tolerance must be above its least, 0,
    /// and at most the success radius.
    pub limits: [f64; 2],
    /// The value given (a count as a number).
    pub got: f64,
}

/// The sentence of a [`SettingsError`].
fn settings_message(e: &SettingsError) -> String {
    let SettingsError { setting, limits: [lo, hi], got, .. } = *e;
    match setting {
        Setting::DlsTolerance => {
            format!("the DLS tolerance must be a number in ({lo}, {hi}] metres (at most the success radius), got {got}")
        }
        Setting::DlsIterations | Setting::DlsStarts | Setting::HybridIterations | Setting::HybridSeeds => {
            format!("{} must be a whole number from {lo} to {hi}, got {got}", setting.name())
        }
        Setting::EssFactor => format!("the ESS factor must be a number from {lo} to {hi}, got {got}"),
    }
}

impl From<SettingsError> for String {
    /// Its message, for a caller that still reports errors as text.
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}

/// The trained nets a set of methods may use, by kind (a method without its net is refused).
#[derive(Debug, Clone, Copy, Default)]
pub struct Nets<'a> {
    by_kind: [Option<&'a ChainNet>; NetKind::ALL.len()],
}

impl<'a> Nets<'a> {
    /// These nets, each under its own kind (a later net of a kind replaces an earlier one).
    pub fn of(nets: impl IntoIterator<Item = &'a ChainNet>) -> Self {
        let mut by_kind = [None; NetKind::ALL.len()];
        for net in nets {
            by_kind[net.kind.index()] = Some(net);
        }
        Self { by_kind }
    }

    /// The net of `kind`, if given.
    pub fn get(&self, kind: NetKind) -> Option<&'a ChainNet> {
        self.by_kind[kind.index()]
    }
}

/// Trained nets, owned, by kind: what a run trained or a model file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetSet {
    by_kind: [Option<ChainNet>; NetKind::ALL.len()],
}

impl NetSet {
    /// The net of `kind`, if there is one.
    pub fn get(&self, kind: NetKind) -> Option<&ChainNet> {
        self.by_kind[kind.index()].as_ref()
    }

    /// Puts `net` in the place of `kind` (the net must be of that kind), or empties it.
    pub fn set(&mut self, kind: NetKind, net: Option<ChainNet>) {
        debug_assert!(net.as_ref().is_none_or(|n| n.kind == kind), "a {kind} net expected");
        self.by_kind[kind.index()] = net;
    }

    /// Takes the net of `kind` out.
    pub fn take(&mut self, kind: NetKind) -> Option<ChainNet> {
        self.by_kind[kind.index()].take()
    }

    /// The nets, as the solving code takes them.
    pub fn nets(&self) -> Nets<'_> {
        Nets::of(self.by_kind.iter().flatten())
    }

    /// True when no net is there.
    pub fn is_empty(&self) -> bool {
        self.by_kind.iter().all(Option::is_none)
    }
}

/// What producing a set of solutions cost, and how good the exact sampler's pool was.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Effort {
    /// DLS iterations over every solution (iterative methods).
    pub iterations: u64,
    /// DLS starts over every solution, seeds and prior starts together (iterative methods).
    pub starts: u64,
    /// Solutions whose seeds all failed and that fell back to prior starts (hybrid).
    pub fallbacks: u64,
    /// Effective sample size of the exact sampler's weighted pool (exact only).
    pub ess: Option<f64>,
}

impl Effort {
    fn add(&mut self, o: DlsOutcome) {
        self.iterations += u64::from(o.iterations);
        self.starts += u64::from(o.starts);
    }
}

/// Why a method could not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SolveError {
    /// The method needs a net that was not given.
    #[error("method {0} needs a trained network, and none was given (train one first)")]
    NoNet(SolverId),
    /// The solver is not one of a chain's ([`SolverId::CHAIN`]): it needs a closed form.
    #[error("{0} does not answer on a chain: it is built on the two-link closed form (a chain has {chain})", chain = crate::keys::join(&SolverId::CHAIN))]
    NotOnChain(SolverId),
}

/// The net `method` needs, if any, with the hybrid seeded from `seeds`.
pub fn net_needed(method: SolverId, seeds: Seeds) -> Option<NetKind> {
    match method {
        SolverId::Learned(HeadKind::Mse) => Some(NetKind::Mse),
        SolverId::Learned(HeadKind::Mdn) => Some(NetKind::Mdn),
        SolverId::Flow => Some(NetKind::Flow),
        SolverId::Hybrid => Some(seeds.net()),
        _ => None,
    }
}

/// `n` answers of `method` for `target` written into `out` (cleared first; `coords` values
/// each, fewer when the exact sampler finds no solution), with what they cost.
#[allow(clippy::too_many_arguments)]
pub fn solutions<R: Rng + ?Sized>(
    arm: &Arm,
    nets: Nets<'_>,
    settings: &SolveSettings,
    method: SolverId,
    target: Point2,
    n: usize,
    rng: &mut R,
    out: &mut Vec<f64>,
) -> Result<Effort, SolveError> {
    let d = arm.coords();
    out.clear();
    let mut effort = Effort::default();
    // The net a learned method samples or seeds from; refused when it was not given.
    let net = || net_needed(method, settings.seeds).and_then(|k| nets.get(k)).ok_or(SolveError::NoNet(method));
    match method {
        SolverId::Learned(HeadKind::Mse) | SolverId::Learned(HeadKind::Mdn) | SolverId::Flow => {
            net()?.sample(target, n, rng, out)
        }
        SolverId::Iterative => {
            let dls = dls(arm, settings);
            out.resize(n * d, 0.0);
            for x in out.chunks_exact_mut(d) {
                effort.add(dls.from_prior(x, target, &arm.prior, settings.dls_starts, rng));
            }
        }
        SolverId::Hybrid => {
            let mut seeds = net()?.drawer(target);
            out.resize(n * d, 0.0);
            for x in out.chunks_exact_mut(d) {
                let (seeded, fallback) = hybrid(arm, settings, &mut seeds, target, x, rng);
                effort.add(seeded);
                if let Some(f) = fallback {
                    effort.add(f);
                    effort.fallbacks += 1;
                }
            }
        }
        SolverId::Exact => {
            let mut sampler = ExactSampler::new(arm);
            sampler.ess_factor = settings.ess_factor;
            let s = sampler.sample(target, n, rng);
            *out = s.x;
            effort.ess = Some(s.ess);
        }
        _ => return Err(SolveError::NotOnChain(method)),
    }
    Ok(effort)
}

/// One solver of a chain's line-up as an [`IkSolver`] over the chain's coordinates: one answer
/// for a target from the coordinates the arm is in now, what a controller sends to the arm
/// (the app's driver, a move of an experiment). Built by [`ChainSolver::new`], which refuses a
/// solver that does not answer on a chain or lacks its net, so [`IkSolver::solve`] always
/// answers.
///
/// - the squared-error net: its one answer, unverified;
/// - the MDN, the flow and the exact sampler: `draws` samples, the one nearest the current
///   coordinates (a controller keeps to one mode rather than jumping between them); the nets'
///   unverified, the exact sampler's converged (its samples reach the target), or not converged
///   when it finds none (out of reach);
/// - DLS: refined from the current coordinates; when that does not converge (a joint stop, a
///   fold), DLS from prior starts, taken only if one converges (an unreachable target keeps the
///   attempt from here); converged or not by its tolerance;
/// - the hybrid: the net's draws nearest the current coordinates as seeds, finished by DLS, then
///   DLS from prior starts ([`hybrid_from`]).
///
/// Draws come from a stream seeded by `seed` and the target's bits, so the same question gets
/// the same answer.
#[derive(Debug, Clone, Copy)]
pub struct ChainSolver<'a> {
    arm: &'a Arm,
    nets: Nets<'a>,
    settings: SolveSettings,
    id: SolverId,
    /// Samples drawn per answer by the sampling solvers.
    pub draws: usize,
    /// Seed of the draws.
    pub seed: u64,
}

impl<'a> ChainSolver<'a> {
    /// Samples a sampling solver draws per answer by default.
    pub const DRAWS: usize = 32;

    /// `id` on `arm` with `nets` and `settings`; refused when `id` is not a chain's solver or
    /// its net is missing.
    pub fn new(arm: &'a Arm, nets: Nets<'a>, settings: SolveSettings, id: SolverId) -> Result<Self, SolveError> {
        if !SolverId::CHAIN.contains(&id) {
            return Err(SolveError::NotOnChain(id));
        }
        if net_needed(id, settings.seeds).is_some_and(|k| nets.get(k).is_none()) {
            return Err(SolveError::NoNet(id));
        }
        Ok(Self { arm, nets, settings, id, draws: Self::DRAWS, seed: 0 })
    }

    /// The index of the draw in `set` nearest `x`.
    fn nearest(&self, set: &[f64], x: &[f64]) -> Option<usize> {
        let d = self.arm.coords();
        let dist = |s: &[f64]| s.iter().zip(x).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
        set.chunks_exact(d).enumerate().min_by(|a, b| dist(a.1).total_cmp(&dist(b.1))).map(|(i, _)| i)
    }
}

impl IkSolver for ChainSolver<'_> {
    type Joints = Coords;

    fn name(&self) -> &str {
        self.id.name()
    }

    fn solve(&self, target: Point2, seed: Coords) -> Solution<Coords> {
        let (arm, d) = (self.arm, self.arm.coords());
        // The arm's coordinates, finite and in range; the padding is zeros.
        let mut x = crate::kinematics::serial::padded(&seed[..d]);
        arm.chain.fit_angles(&mut x[..d]);
        for (i, v) in x[..d].iter_mut().enumerate() {
            if !v.is_finite() {
                let (lo, hi) = arm.chain.range(i);
                *v = 0.5 * (lo + hi);
            }
        }
        arm.chain.clamp(&mut x[..d]);
        let here = x;
        let bits = target.x.to_bits() ^ target.y.to_bits().rotate_left(32);
        let mut rng = crate::rng::rng(self.seed, crate::rng::Stream::ChainDrive, bits);
        let mut set = Vec::new();
        let miss = |x: &Coords| (arm.chain.tip(&x[..d]) - target).norm();
        let unverified =
            |pose: Coords| Solution { pose, status: SolveStatus::Unverified, residual: None, iterations: 0 };
        let checked = |pose: Coords, converged: bool, iterations: u32| Solution {
            pose,
            status: if converged { SolveStatus::Converged } else { SolveStatus::NotConverged },
            residual: Some(miss(&pose)),
            iterations,
        };
        let n = if self.id == SolverId::Learned(crate::learned::HeadKind::Mse) { 1 } else { self.draws.max(1) };
        // The draws of the sampling solvers (and the hybrid's seeds), nearest the pose first.
        let drawn = |set: &mut Vec<f64>, rng: &mut ChaCha| -> Result<Effort, SolveError> {
            let id = if self.id == SolverId::Hybrid { self.settings.seeds.solver() } else { self.id };
            solutions(arm, self.nets, &self.settings, id, target, n, rng, set)
        };
        match self.id {
            SolverId::Iterative => {
                let dls = dls(arm, &self.settings);
                let o = dls.refine(&mut x[..d], target, self.settings.dls_iterations);
                if o.converged {
                    return checked(x, true, o.iterations);
                }
                // Stuck (a joint stop, a fold): restart from prior draws, as a practitioner's
                // IK does; a restart is taken only when it converges, so an unreachable target
                // keeps the attempt from here instead of a jump to a random pose.
                let from_here = x;
                let r = dls.from_prior(&mut x[..d], target, &arm.prior, self.settings.dls_starts, &mut rng);
                let iterations = o.iterations + r.iterations;
                if r.converged { checked(x, true, iterations) } else { checked(from_here, false, iterations) }
            }
            SolverId::Hybrid => {
                if drawn(&mut set, &mut rng).is_err() {
                    return checked(here, false, 0);
                }
                let mut order: Vec<usize> = (0..set.len() / d).collect();
                let dist =
                    |i: &usize| set[i * d..(i + 1) * d].iter().zip(&here).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
                order.sort_by(|a, b| dist(a).total_cmp(&dist(b)));
                let mut next = order.into_iter();
                let (seeded, fallback) = hybrid_from(arm, &self.settings, target, &mut x[..d], &mut rng, |_, s| {
                    if let Some(i) = next.next() {
                        s.copy_from_slice(&set[i * d..(i + 1) * d]);
                    }
                });
                let o = fallback.unwrap_or(seeded);
                let iterations = seeded.iterations + fallback.map_or(0, |f| f.iterations);
                checked(x, o.converged, iterations)
            }
            _ => {
                if drawn(&mut set, &mut rng).is_err() {
                    return checked(here, false, 0);
                }
                let Some(i) = self.nearest(&set, &here) else { return checked(here, false, 0) };
                let mut pose = [0.0; crate::kinematics::serial::MAX_COORDS];
                pose[..d].copy_from_slice(&set[i * d..(i + 1) * d]);
                if self.id == SolverId::Exact { checked(pose, true, 0) } else { unverified(pose) }
            }
        }
    }
}

type ChaCha = rand_chacha::ChaCha8Rng;

/// The DLS of the settings on `arm`.
fn dls<'a>(arm: &'a Arm, settings: &SolveSettings) -> ChainDls<'a> {
    ChainDls { max_iterations: settings.dls_iterations, tolerance: settings.dls_tolerance, ..ChainDls::new(&arm.chain) }
}

/// One hybrid solution into `x`: up to `hybrid_seeds` draws of `seeds` (a net's posterior for
/// `target`), each finished by `hybrid_iterations` DLS iterations; when none converges, DLS
/// from prior starts. Returns the seeded run's outcome and the fallback's, if it ran.
pub fn hybrid<R: Rng + ?Sized>(
    arm: &Arm,
    settings: &SolveSettings,
    seeds: &mut Drawer<'_>,
    target: Point2,
    x: &mut [f64],
    rng: &mut R,
) -> (DlsOutcome, Option<DlsOutcome>) {
    hybrid_from(arm, settings, target, x, rng, |rng, x| seeds.draw(rng, x))
}

/// [`hybrid`] with the seeds from `seed(rng, x)` (the app seeds from the MDN's samples nearest
/// the arm's current pose, so the arm it drives does not jump between modes).
pub fn hybrid_from<R: Rng + ?Sized>(
    arm: &Arm,
    settings: &SolveSettings,
    target: Point2,
    x: &mut [f64],
    rng: &mut R,
    seed: impl FnMut(&mut R, &mut [f64]),
) -> (DlsOutcome, Option<DlsOutcome>) {
    let base = dls(arm, settings);
    let seeded = ChainDls { max_iterations: settings.hybrid_iterations, ..base };
    let o = seeded.with_restarts(x, target, settings.hybrid_seeds, rng, seed);
    if o.converged {
        return (o, None);
    }
    (o, Some(base.from_prior(x, target, &arm.prior, settings.dls_starts, rng)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_refused_setting_carries_its_name_unit_limits_and_value() {
        let ok = SolveSettings::default();
        assert_eq!(ok.validate(1e-3), Ok(()));
        let e = SolveSettings { hybrid_seeds: 1001, ..ok }.validate(1e-3).unwrap_err();
        assert_eq!(
            e,
            SettingsError { setting: Setting::HybridSeeds, unit: "seeds", limits: [1.0, 1000.0], got: 1001.0 }
        );
        assert_eq!(e.to_string(), "hybrid seeds must be a whole number from 1 to 1000, got 1001");
        let e = SolveSettings { dls_tolerance: 0.01, ..ok }.validate(1e-3).unwrap_err();
        assert_eq!((e.setting, e.unit, e.limits, e.got), (Setting::DlsTolerance, "m", [0.0, 1e-3], 0.01));
        assert_eq!(
            e.to_string(),
            "the DLS tolerance must be a number in (0, 0.001] metres (at most the success radius), got 0.01"
        );
        let e = SolveSettings { dls_iterations: 0, ..ok }.validate(1e-3).unwrap_err();
        assert_eq!(e.to_string(), "DLS iterations must be a whole number from 1 to 10000, got 0");
        let e = SolveSettings { ess_factor: f64::NAN, ..ok }.validate(1e-3).unwrap_err();
        assert_eq!((e.setting, e.unit, e.limits), (Setting::EssFactor, "samples drawn", [1.0, 1000.0]));
        assert_eq!(e.to_string(), "the ESS factor must be a number from 1 to 1000, got NaN");
    }

    #[test]
    fn learned_methods_without_their_net_are_refused_and_the_others_answer() {
        let arm = ArmKind::ThreeR.arm();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut out = Vec::new();
        let target = Point2::new(1.2, 0.5);
        for m in [SolverId::Learned(HeadKind::Mse), SolverId::Learned(HeadKind::Mdn), SolverId::Flow, SolverId::Hybrid]
        {
            let e = solutions(&arm, Nets::default(), &SolveSettings::default(), m, target, 4, &mut rng, &mut out);
            assert_eq!(e, Err(SolveError::NoNet(m)));
        }
        for m in [SolverId::Iterative, SolverId::Exact] {
            let e =
                solutions(&arm, Nets::default(), &SolveSettings::default(), m, target, 16, &mut rng, &mut out).unwrap();
            assert_eq!(out.len(), 16 * 3, "{m}");
            for x in out.chunks_exact(3) {
                assert!((arm.chain.tip(x) - target).norm() < 1e-5, "{m}: {x:?}");
            }
            assert_eq!(e.ess.is_some(), m == SolverId::Exact);
            assert_eq!(e.starts >= 16, m == SolverId::Iterative);
        }
        for id in SolverId::TWO_LINK.into_iter().filter(|id| !SolverId::CHAIN.contains(id)) {
            let e = solutions(&arm, Nets::default(), &SolveSettings::default(), id, target, 4, &mut rng, &mut out);
            assert_eq!(e, Err(SolveError::NotOnChain(id)));
        }
    }

    #[test]
    fn a_chain_solver_answers_from_the_current_coordinates_or_is_refused() {
        use crate::kinematics::serial::padded;
        let arm = ArmKind::Rail3.arm();
        let settings = SolveSettings::default();
        for id in SolverId::TWO_LINK.into_iter().filter(|id| !SolverId::CHAIN.contains(id)) {
            assert_eq!(ChainSolver::new(&arm, Nets::default(), settings, id).unwrap_err(), SolveError::NotOnChain(id));
        }
        for id in [SolverId::Learned(HeadKind::Mdn), SolverId::Flow, SolverId::Hybrid] {
            assert_eq!(ChainSolver::new(&arm, Nets::default(), settings, id).unwrap_err(), SolveError::NoNet(id));
        }
        let here = padded(&[0.1, 0.2, -0.3, 0.4]);
        let target = arm.chain.tip(&here[..4]) + Point2::new(0.02, -0.01);
        // DLS: the least change from where the arm is, reported as converged.
        let dls = ChainSolver::new(&arm, Nets::default(), settings, SolverId::Iterative).unwrap();
        let s = dls.solve(target, here);
        assert!(s.converged() && s.residual.unwrap() < 1e-6 && s.iterations > 0, "{s:?}");
        let moved: f64 = (0..4).map(|i| (s.pose[i] - here[i]).powi(2)).sum::<f64>().sqrt();
        assert!(moved < 0.1, "moved {moved}");
        // The exact sampler: a true solution, the same one for the same question; none out of
        // reach, said so, and the arm left where it is.
        let exact = ChainSolver::new(&arm, Nets::default(), settings, SolverId::Exact).unwrap();
        let a = exact.solve(target, here);
        assert!(a.converged() && a.residual.unwrap() < 1e-3, "{a:?}");
        assert_eq!(exact.solve(target, here), a);
        let far = exact.solve(Point2::new(50.0, 0.0), here);
        assert_eq!((far.status, far.pose), (SolveStatus::NotConverged, here));
        // Hostile coordinates give finite answers.
        let s = dls.solve(target, [f64::NAN; crate::kinematics::serial::MAX_COORDS]);
        assert!(s.pose.iter().all(|v| v.is_finite()), "{s:?}");
    }

    #[test]
    fn dls_stuck_at_a_joint_stop_restarts_and_an_unreachable_target_keeps_the_attempt_from_here() {
        use crate::kinematics::serial::padded;
        let arm = ArmKind::So101.arm();
        let settings = SolveSettings::default();
        let solver = ChainSolver::new(&arm, Nets::default(), settings, SolverId::Iterative).unwrap();
        let here = padded(&arm.prior_center());
        let plain = dls(&arm, &settings);
        // A sequence of targets (the FK of prior draws), each refined from where the last one
        // left the arm, as an arm moving from target to target does: some get stuck.
        let mut rng = crate::rng::rng(3, crate::rng::Stream::Bench, 0);
        let mut x = vec![0.0; 3];
        let mut at = here;
        let mut stuck = Vec::new();
        for _ in 0..200 {
            arm.prior.sample(&mut rng, &mut x);
            let target = arm.chain.tip(&x);
            let before = at;
            if !plain.refine(&mut at[..3], target, settings.dls_iterations).converged {
                stuck.push((before, target));
            }
        }
        assert!(stuck.len() >= 5, "{} stuck targets", stuck.len());
        for &(from, t) in &stuck {
            let s = solver.solve(t, from);
            assert!(s.converged() && s.residual.unwrap() < 1e-6, "{t:?}: {s:?}");
        }
        let far = Point2::new(2.0, 0.0);
        let mut from_here = here;
        plain.refine(&mut from_here[..3], far, settings.dls_iterations);
        let s = solver.solve(far, here);
        assert_eq!((s.status, s.pose), (SolveStatus::NotConverged, from_here), "no jump to a random pose");
    }

    #[test]
    fn a_sampling_solver_keeps_to_the_draw_nearest_the_arm() {
        use crate::chain::nets::{ChainNet, NetConfig};
        use crate::kinematics::serial::padded;
        let arm = ArmKind::ThreeR.arm();
        let cfg = NetConfig { steps: 200, hidden: 32, components: 4, ..NetConfig::default() };
        let mdn = ChainNet::train(&arm, NetKind::Mdn, &cfg, |_, _| true).unwrap();
        let nets = Nets::of([&mdn]);
        let settings = SolveSettings::default();
        let solver = ChainSolver::new(&arm, nets, settings, SolverId::Learned(HeadKind::Mdn)).unwrap();
        let target = Point2::new(1.2, 0.5);
        for start in [[0.5, 1.0, 1.0], [-0.5, -1.0, -1.0]] {
            let here = padded(&start);
            let s = solver.solve(target, here);
            assert_eq!((s.status, s.residual), (SolveStatus::Unverified, None));
            // The answer is the draw nearest the arm among the same draws.
            let mut rng = crate::rng::rng(
                0,
                crate::rng::Stream::ChainDrive,
                target.x.to_bits() ^ target.y.to_bits().rotate_left(32),
            );
            let mut set = Vec::new();
            solutions(
                &arm,
                nets,
                &settings,
                SolverId::Learned(HeadKind::Mdn),
                target,
                ChainSolver::DRAWS,
                &mut rng,
                &mut set,
            )
            .unwrap();
            let dist = |x: &[f64]| x.iter().zip(&start).map(|(a, b)| (a - b).powi(2)).sum::<f64>();
            let best = set.chunks_exact(3).map(dist).fold(f64::INFINITY, f64::min);
            assert_eq!(dist(&s.pose[..3]), best, "from {start:?}");
        }
        let hybrid = ChainSolver::new(&arm, nets, settings, SolverId::Hybrid).unwrap();
        let h = hybrid.solve(target, padded(&[0.5, 1.0, 1.0]));
        assert!(h.converged() && h.residual.unwrap() < 1e-6, "{h:?}");
    }
}
