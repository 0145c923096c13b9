//! The lab's solvers by one typed identity, and the one place that runs any of them.
//!
//! - [`SolverId`] names every answer the lab shows or measures, on every arm: the analytic
//!   solver and its two fixed branches, the branch average (what a squared-error fit converges
//!   to; a reference, not a solver), damped least squares, one entry per learned head, and the
//!   chains' flow, hybrid (net seeds finished by DLS) and exact posterior sampler.
//!   [`SolverId::ALL`] is built from [`HeadKind::ALL`], so a new head joins every table by itself;
//!   which of them apply to an arm is the arm's answer ([`crate::arm::Arm::solvers`]:
//!   [`SolverId::TWO_LINK`] where there is a closed form, [`SolverId::CHAIN`] on a redundant
//!   chain).
//! - [`Pipeline`] is a solver with or without the safety envelope around it: the unit the
//!   experiments measure and the app drives the plant with.
//! - [`Table`] is a map keyed by [`SolverId`] or [`HeadKind`], one slot per key, that replaces
//!   parallel arrays and string keys.
//! - [`Lineup`] builds and runs any solver or pipeline for one arm and a set of trained heads.

use crate::analytic::{AnalyticSolver, BranchChoice, solve_branches};
use crate::envelope::{Envelope, EnvelopeConfig, Fit, Reason};
use crate::iterative::DlsSolver;
use crate::kinematics::{ElbowMode, Point2, Pose, TwoLinkArm};
use crate::learned::{HeadKind, LearnedModel, LearnedSolver};
use crate::solver::{IkSolver, Solution, SolveStatus};
use std::marker::PhantomData;

/// Every answer the lab shows or measures. Serialised as its [`SolverId::key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum SolverId {
    /// Closed form, the admissible branch nearest the current pose.
    Analytic,
    /// Closed form, always the elbow-up branch.
    ElbowUp,
    /// Closed form, always the elbow-down branch.
    ElbowDown,
    /// The average of the two branches: where a squared-error fit lands. Not a solver.
    Average,
    /// Damped least squares, warm-started from the current pose.
    Iterative,
    /// A learned head (on a chain: its squared-error or mixture net, sampled).
    Learned(HeadKind),
    /// A conditional normalizing flow over a chain's joint coordinates, sampled.
    Flow,
    /// A chain's hybrid: draws of the MDN (or the flow) as seeds, each finished by a few DLS
    /// iterations, falling back to DLS from prior starts when no seed converges.
    Hybrid,
    /// The exact posterior sampler over a chain's coordinates: the reference the chain's
    /// methods are scored against.
    Exact,
}

/// What kind of answer a [`SolverId`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// A classical solver: checks its own answer and reports failure.
    Classical,
    /// A reference, not a controller: the branch average (a pose no solver would give) or the
    /// exact posterior sampler (the ground truth a chain's methods are scored against).
    Reference,
    /// A learned head: proposes, checks nothing.
    Learned,
}

/// The solvers that are not learned heads, in table order.
const NOT_LEARNED: [SolverId; 5] =
    [SolverId::Analytic, SolverId::ElbowUp, SolverId::ElbowDown, SolverId::Average, SolverId::Iterative];

/// The chains' solvers that are not heads, after the heads in [`SolverId::ALL`].
const CHAIN_ONLY: [SolverId; 3] = [SolverId::Flow, SolverId::Hybrid, SolverId::Exact];

impl SolverId {
    /// The number of solvers of the two-link arm ([`SolverId::TWO_LINK`]).
    pub const TWO_LINK_COUNT: usize = NOT_LEARNED.len() + HeadKind::COUNT;

    /// The number of solvers.
    pub const COUNT: usize = Self::TWO_LINK_COUNT + CHAIN_ONLY.len();

    /// Every solver in table order: the classical ones and the average, then every head, then
    /// the chains' flow, hybrid and exact sampler.
    pub const ALL: [SolverId; Self::COUNT] = {
        let mut all = [SolverId::Analytic; Self::COUNT];
        let mut i = 0;
        while i < Self::TWO_LINK_COUNT {
            all[i] = Self::TWO_LINK[i];
            i += 1;
        }
        while i < Self::COUNT {
            all[i] = CHAIN_ONLY[i - Self::TWO_LINK_COUNT];
            i += 1;
        }
        all
    };

    /// The line-up of an arm with a closed form (the two-link arm), in table order: the
    /// classical ones and the average, then every head.
    pub const TWO_LINK: [SolverId; Self::TWO_LINK_COUNT] = {
        let mut all = [SolverId::Analytic; Self::TWO_LINK_COUNT];
        let mut i = 0;
        while i < NOT_LEARNED.len() {
            all[i] = NOT_LEARNED[i];
            i += 1;
        }
        let mut h = 0;
        while h < HeadKind::COUNT {
            all[NOT_LEARNED.len() + h] = SolverId::Learned(HeadKind::ALL[h]);
            h += 1;
        }
        all
    };

    /// The line-up of a redundant chain, in its tables' order: the squared-error and mixture
    /// nets, the flow, damped least squares with restarts, the hybrid and the exact sampler.
    pub const CHAIN: [SolverId; 6] = [
        SolverId::Learned(HeadKind::Mse),
        SolverId::Learned(HeadKind::Mdn),
        SolverId::Flow,
        SolverId::Iterative,
        SolverId::Hybrid,
        SolverId::Exact,
    ];

    /// Position in [`SolverId::ALL`].
    pub const fn index(self) -> usize {
        match self {
            SolverId::Analytic => 0,
            SolverId::ElbowUp => 1,
            SolverId::ElbowDown => 2,
            SolverId::Average => 3,
            SolverId::Iterative => 4,
            SolverId::Learned(h) => NOT_LEARNED.len() + h.index(),
            SolverId::Flow => Self::TWO_LINK_COUNT,
            SolverId::Hybrid => Self::TWO_LINK_COUNT + 1,
            SolverId::Exact => Self::TWO_LINK_COUNT + 2,
        }
    }

    /// Short key for the command line, JSON and CSV (`analytic`, `dls`, `mdn`, ...).
    pub const fn key(self) -> &'static str {
        match self {
            SolverId::Analytic => "analytic",
            SolverId::ElbowUp => "elbow-up",
            SolverId::ElbowDown => "elbow-down",
            SolverId::Average => "average",
            SolverId::Iterative => "dls",
            SolverId::Learned(h) => h.spec().key,
            SolverId::Flow => "flow",
            SolverId::Hybrid => "hybrid",
            SolverId::Exact => "exact",
        }
    }

    /// Short label for buttons and plot legends.
    pub const fn short(self) -> &'static str {
        match self {
            SolverId::Analytic => "analytic",
            SolverId::ElbowUp => "elbow-up",
            SolverId::ElbowDown => "elbow-down",
            SolverId::Average => "average",
            SolverId::Iterative => "iterative",
            SolverId::Learned(h) => h.spec().short,
            SolverId::Flow => "flow",
            SolverId::Hybrid => "hybrid",
            SolverId::Exact => "exact",
        }
    }

    /// Name for tables and legends.
    pub const fn name(self) -> &'static str {
        match self {
            SolverId::Analytic => "analytic (nearest)",
            SolverId::ElbowUp => "elbow-up (analytic)",
            SolverId::ElbowDown => "elbow-down (analytic)",
            SolverId::Average => "average of branches",
            SolverId::Iterative => "iterative (DLS)",
            SolverId::Learned(h) => h.spec().name,
            SolverId::Flow => "flow (sampled)",
            SolverId::Hybrid => "hybrid (net seeds + DLS)",
            SolverId::Exact => "exact posterior",
        }
    }

    /// What kind of answer it gives.
    pub const fn family(self) -> Family {
        match self {
            SolverId::Analytic | SolverId::ElbowUp | SolverId::ElbowDown | SolverId::Iterative => Family::Classical,
            SolverId::Average | SolverId::Exact => Family::Reference,
            SolverId::Learned(_) | SolverId::Flow | SolverId::Hybrid => Family::Learned,
        }
    }

    /// The learned head behind it, if any.
    pub const fn head(self) -> Option<HeadKind> {
        match self {
            SolverId::Learned(h) => Some(h),
            _ => None,
        }
    }
}

impl From<HeadKind> for SolverId {
    fn from(h: HeadKind) -> Self {
        SolverId::Learned(h)
    }
}

crate::keys::keyed!(SolverId, "solver", serde);

/// A solver, with or without the safety envelope around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Pipeline {
    /// The solver that proposes.
    pub solver: SolverId,
    /// Whether the envelope checks its proposals (and falls back to the classical answer).
    pub envelope: bool,
}

impl Pipeline {
    /// `solver` alone.
    pub const fn plain(solver: SolverId) -> Self {
        Self { solver, envelope: false }
    }

    /// `solver` inside the envelope.
    pub const fn enveloped(solver: SolverId) -> Self {
        Self { solver, envelope: true }
    }

    /// The line-up the experiments measure on an arm with `solvers` (its
    /// [`crate::arm::Arm::solvers`]): every solver plain, in that order, then every learned one
    /// inside the envelope.
    pub fn lineup(solvers: &[SolverId]) -> Vec<Pipeline> {
        let plain = solvers.iter().copied().map(Pipeline::plain);
        let enveloped = solvers.iter().copied().filter(|s| s.family() == Family::Learned).map(Pipeline::enveloped);
        plain.chain(enveloped).collect()
    }

    /// Key for the command line, JSON and CSV (`mdn`, `envelope(mdn)`).
    pub fn key(self) -> String {
        if self.envelope { format!("envelope({})", self.solver.key()) } else { self.solver.key().to_string() }
    }

    /// Label for the panel (`MDN`, `envelope(MDN)`).
    pub fn label(self) -> String {
        if self.envelope { format!("envelope({})", self.solver.short()) } else { self.solver.short().to_string() }
    }
}

impl From<SolverId> for Pipeline {
    fn from(solver: SolverId) -> Self {
        Pipeline::plain(solver)
    }
}

impl From<Pipeline> for String {
    fn from(p: Pipeline) -> String {
        p.key()
    }
}

impl TryFrom<String> for Pipeline {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl std::fmt::Display for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.key())
    }
}

impl std::str::FromStr for Pipeline {
    type Err = String;

    /// Parses `KEY` or `envelope(KEY)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match s.strip_prefix("envelope(").and_then(|r| r.strip_suffix(')')) {
            Some(inner) => Ok(Pipeline::enveloped(inner.parse()?)),
            None => Ok(Pipeline::plain(s.parse()?)),
        }
    }
}

/// A typed key with a fixed, ordered set of values: the key of a [`Table`].
pub trait Key: Copy + Eq + 'static {
    /// Every key, in order.
    fn all() -> &'static [Self];
    /// Position in [`Key::all`].
    fn index(self) -> usize;
}

impl Key for SolverId {
    fn all() -> &'static [Self] {
        &SolverId::ALL
    }

    fn index(self) -> usize {
        SolverId::index(self)
    }
}

impl Key for HeadKind {
    fn all() -> &'static [Self] {
        &HeadKind::ALL
    }

    fn index(self) -> usize {
        HeadKind::index(self)
    }
}

/// One value per key of `K`: a total map, indexed by the key (`table[SolverId::Analytic]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Table<K, T> {
    values: Vec<T>,
    key: PhantomData<K>,
}

impl<K: Key, T> Table<K, T> {
    /// A table with `f(key)` for every key.
    pub fn from_fn(f: impl FnMut(K) -> T) -> Self {
        Self { values: K::all().iter().copied().map(f).collect(), key: PhantomData }
    }

    /// Every key with its value, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &T)> {
        K::all().iter().copied().zip(&self.values)
    }

    /// Every key with its value, mutably, in key order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (K, &mut T)> {
        K::all().iter().copied().zip(&mut self.values)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = K> {
        K::all().iter().copied()
    }
}

impl<K: Key, T: Default> Default for Table<K, T> {
    fn default() -> Self {
        Self::from_fn(|_| T::default())
    }
}

impl<K: Key, T> std::ops::Index<K> for Table<K, T> {
    type Output = T;

    fn index(&self, key: K) -> &T {
        &self.values[key.index()]
    }
}

impl<K: Key, T> std::ops::IndexMut<K> for Table<K, T> {
    fn index_mut(&mut self, key: K) -> &mut T {
        &mut self.values[key.index()]
    }
}

/// A pipeline's answer for one target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Answer {
    /// What goes to the arm.
    pub solution: Solution,
    /// For enveloped pipelines: `Some(None)` when the proposal was accepted, `Some(Some(r))`
    /// when it was rejected for `r`. `None` for plain pipelines.
    pub verdict: Option<Option<Reason>>,
}

/// Every solver of the lab for one nominal arm and a set of trained heads.
#[derive(Debug, Clone)]
pub struct Lineup<'m> {
    /// The nominal arm every solver plans on.
    pub arm: TwoLinkArm,
    /// The trained model of each head (`None`: that head has nothing to say yet).
    pub models: Table<HeadKind, Option<&'m LearnedModel>>,
    /// The envelope around enveloped pipelines.
    pub envelope: Envelope,
    /// How heads with several candidates choose: `Some(hysteresis)` keeps the seed's elbow
    /// branch ([`crate::learned::branch::keep_branch`], for driving an arm), `None` takes the
    /// likeliest (the default, for offline evaluation).
    pub keep_branch: Option<f32>,
}

impl<'m> Lineup<'m> {
    /// The line-up for `arm` with `models`, and the envelope's defaults for that arm.
    pub fn new(arm: TwoLinkArm, models: Table<HeadKind, Option<&'m LearnedModel>>) -> Self {
        Self { arm, models, envelope: Envelope { arm, config: EnvelopeConfig::for_arm(&arm) }, keep_branch: None }
    }

    /// The answer of `id` for `target` from the current pose `seed`; `None` for a head without a
    /// model, and for a chain's solver (not in [`SolverId::TWO_LINK`]).
    pub fn solve(&self, id: SolverId, target: Point2, seed: Pose) -> Option<Solution> {
        let arm = self.arm;
        let fixed = |mode| AnalyticSolver::new(arm, BranchChoice::Fixed(mode)).solve(target, seed);
        Some(match id {
            SolverId::Analytic => AnalyticSolver::new(arm, BranchChoice::NearestToSeed).solve(target, seed),
            SolverId::ElbowUp => fixed(ElbowMode::Up),
            SolverId::ElbowDown => fixed(ElbowMode::Down),
            SolverId::Average => {
                let pose = solve_branches(&arm, target).average();
                Solution { pose, status: SolveStatus::Unverified, residual: None, iterations: 0 }
            }
            SolverId::Iterative => DlsSolver::new(arm).solve(target, seed),
            SolverId::Learned(h) => {
                LearnedSolver { keep_branch: self.keep_branch, ..LearnedSolver::new(self.models[h]?) }
                    .solve(target, seed)
            }
            SolverId::Flow | SolverId::Hybrid | SolverId::Exact => return None,
        })
    }

    /// The answer of `pipeline`: the solver's, checked by the envelope when it has one.
    pub fn run(&self, pipeline: Pipeline, target: Point2, seed: Pose) -> Option<Answer> {
        let proposal = self.solve(pipeline.solver, target, seed)?;
        Some(self.vet(pipeline, proposal, target, seed))
    }

    /// What the envelope checks for `solver`'s proposals: a trust region for the residual hybrid
    /// (on the region its model was trained on; the whole annulus without a model), FK for the rest.
    pub fn fit(&self, solver: SolverId) -> Fit {
        match solver.head() {
            Some(h) => Fit::of(h, self.models[h].map_or(crate::kinematics::Region::Annulus, |m| m.region)),
            None => Fit::Pose,
        }
    }

    /// The envelope's verdict on `proposal` when `pipeline` has one; else the proposal as is.
    pub fn vet(&self, pipeline: Pipeline, proposal: Solution, target: Point2, seed: Pose) -> Answer {
        if !pipeline.envelope {
            return Answer { solution: proposal, verdict: None };
        }
        let vetted = self.envelope.review_as(self.fit(pipeline.solver), proposal, target, seed);
        Answer { solution: vetted.solution, verdict: Some(vetted.intervention) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_solver_has_one_slot_and_one_key() {
        for (i, id) in SolverId::ALL.into_iter().enumerate() {
            assert_eq!(id.index(), i, "{id:?}");
            assert_eq!(id.key().parse::<SolverId>().unwrap(), id);
            let p = Pipeline::enveloped(id);
            assert_eq!(p.key().parse::<Pipeline>().unwrap(), p);
        }
        for h in HeadKind::ALL {
            assert!(SolverId::ALL.contains(&SolverId::Learned(h)));
        }
        let keys: std::collections::HashSet<_> = SolverId::ALL.iter().map(|s| s.key()).collect();
        assert_eq!(keys.len(), SolverId::COUNT);
        assert!("transformer".parse::<SolverId>().unwrap_err().contains("solver must be one of analytic"));
    }

    #[test]
    fn the_lineup_is_every_solver_then_every_enveloped_head() {
        let lineup = Pipeline::lineup(&SolverId::TWO_LINK);
        let plain: Vec<SolverId> = lineup.iter().filter(|p| !p.envelope).map(|p| p.solver).collect();
        assert_eq!(plain, SolverId::TWO_LINK.to_vec());
        let enveloped: Vec<SolverId> = lineup.iter().filter(|p| p.envelope).map(|p| p.solver).collect();
        assert_eq!(enveloped, HeadKind::ALL.map(SolverId::Learned).to_vec());
        let chain = Pipeline::lineup(&SolverId::CHAIN);
        let enveloped: Vec<SolverId> = chain.iter().filter(|p| p.envelope).map(|p| p.solver).collect();
        assert_eq!(
            enveloped,
            [HeadKind::Mse, HeadKind::Mdn]
                .map(SolverId::Learned)
                .into_iter()
                .chain([SolverId::Flow, SolverId::Hybrid])
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn every_arm_has_one_line_up_from_the_one_identity() {
        // The two-link line-up is every solver up to the chains' own, in order, and a chain's
        // shares the keys it has in common with it (`mse`, `mdn`, `dls`).
        assert_eq!(&SolverId::ALL[..SolverId::TWO_LINK_COUNT], &SolverId::TWO_LINK);
        for id in SolverId::CHAIN {
            assert!(SolverId::ALL.contains(&id), "{id}");
        }
        let keys: Vec<&str> = SolverId::CHAIN.iter().map(|s| s.key()).collect();
        assert_eq!(keys, ["mse", "mdn", "flow", "dls", "hybrid", "exact"]);
        for id in [SolverId::Flow, SolverId::Hybrid, SolverId::Exact] {
            assert!(!SolverId::TWO_LINK.contains(&id));
            let lineup = Lineup::new(TwoLinkArm::default(), Table::default());
            assert!(lineup.solve(id, Point2::new(1.0, 0.5), Pose::default()).is_none(), "{id} on the two-link arm");
        }
    }

    #[test]
    fn tables_index_by_key() {
        let mut t: Table<SolverId, usize> = Table::from_fn(SolverId::index);
        t[SolverId::Learned(HeadKind::Mdn)] += 100;
        assert_eq!(t[SolverId::Learned(HeadKind::Mdn)], SolverId::Learned(HeadKind::Mdn).index() + 100);
        assert_eq!(t.iter().count(), SolverId::COUNT);
        let json = serde_json::to_string(&Pipeline::enveloped(SolverId::Learned(HeadKind::Mse))).unwrap();
        assert_eq!(json, "\"envelope(mse)\"");
    }

    #[test]
    fn heads_without_a_model_say_nothing_and_the_rest_answer() {
        let lineup = Lineup::new(TwoLinkArm::default(), Table::default());
        let t = Point2::new(1.0, 0.8);
        for id in SolverId::TWO_LINK {
            let answer = lineup.run(Pipeline::plain(id), t, Pose::default());
            assert_eq!(answer.is_none(), id.family() == Family::Learned, "{id:?}");
        }
    }
}
