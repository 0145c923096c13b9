//! The workspace atlas: one solver's answer for every cell of a grid over the reachable annulus
//! and a margin beyond it, so a whole map shows *where* each solver fails (the way interactive
//! training playgrounds colour the whole input space with a network's answer).
//!
//! Layers, each a number or a class per cell:
//! - [`Layer::Miss`]: the FK miss of the answer, metres (log colour scale);
//! - [`Layer::Branch`]: which branch the answer is near (elbow-up, elbow-down, neither, or the
//!   averaged pose), and whether an answer was given where none exists;
//! - [`Layer::Confidence`]: the mixture's top weight; a solver without a mixture has no
//!   confidence at all (`None`, painted and keyed as "no confidence", never as a weight);
//! - [`Layer::Envelope`]: the safety envelope's verdict on the answer (accepted, or the reason),
//!   judged as the envelope judges that solver (FK for poses, a trust region for corrections);
//! - [`Layer::Silent`]: the rate of silent failures under the perturbation settings (a few
//!   samples per cell): the executed joints carry Gaussian noise, land anywhere in the backlash
//!   play and the stiction band, and droop by the link flex, on the real arm of the configured
//!   mismatch; a miss over the tolerance that the solver did not report is silent. Latency and
//!   the camera change nothing for an arm at rest on its answer, so a map has no use for them.
//!
//! Learned heads answer a whole grid with batched inference
//! ([`LearnedModel::predict_batch`](crate::learned::LearnedModel::predict_batch)). [`paint`] turns a
//! map into pixels and a colour key. [`chain`] maps a redundant chain's methods the same way.
//!
//! Every arm goes through one entry point, [`compute`]`(arm, solver, trained, cfg, progress)`,
//! with one configuration ([`AtlasConfig`], [`AtlasConfig::for_arm`]) and one result ([`Map`]).
//! Which layers apply is the arm's answer ([`MapLayer::of`]): the layers above where the arm has
//! a closed form, a chain layer where its method is one of the arm's chain methods; the layer that
//! shows the solver decides which map is made ([`choose`]), and a solver with no map on the arm
//! is refused naming those that have one.

pub mod chain;
pub mod config;
pub mod paint;

pub use config::{AtlasConfig, AtlasError, MAX_RESOLUTION, MAX_SAMPLES};

use crate::analytic::{Branches, solve_branches};
use crate::arm::Arm;
use crate::chain::solve::Nets;
use crate::envelope::Reason;
use crate::kinematics::{ElbowMode, Point2, Pose, RealArm};
use crate::learned::{BatchAnswer, HeadKind, LearnedModel, Output, PredictScratch};
use crate::lineup::{Lineup, SolverId, Table};
use crate::plant::droop;
use crate::rng::{Stream, rng};
use crate::solver::{Solution, SolveStatus};
use chain::{ChainAtlas, ChainLayer, Extent};
use rand::RngExt;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// What an atlas colours each cell by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// FK miss of the answer, metres.
    Miss,
    /// Which branch the answer is near.
    Branch,
    /// The mixture's top weight.
    Confidence,
    /// The envelope's verdict.
    Envelope,
    /// Silent-failure rate under joint noise.
    Silent,
}

impl Layer {
    /// Every layer, in menu order.
    pub const ALL: [Layer; 5] = [Layer::Miss, Layer::Branch, Layer::Confidence, Layer::Envelope, Layer::Silent];

    /// Key on the command line.
    pub const fn key(self) -> &'static str {
        match self {
            Layer::Miss => "miss",
            Layer::Branch => "branch",
            Layer::Confidence => "confidence",
            Layer::Envelope => "envelope",
            Layer::Silent => "silent",
        }
    }

    /// What the layer shows, for a caption.
    pub const fn caption(self) -> &'static str {
        match self {
            Layer::Miss => "FK miss of the answer (log scale, metres)",
            Layer::Branch => "which branch the answer is near",
            Layer::Confidence => "mixture's top component weight",
            Layer::Envelope => "safety envelope's verdict",
            Layer::Silent => "silent-failure rate under joint noise",
        }
    }
}

crate::keys::keyed!(Layer, "layer");

/// Which branch an answer is near.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BranchClass {
    /// Within the threshold of the elbow-up branch.
    Up,
    /// Within the threshold of the elbow-down branch.
    Down,
    /// Near the average of the branches, and near neither branch: the averaging trap.
    Average,
    /// Near nothing valid.
    Neither,
    /// The target is unreachable (out of reach, or outside the joint ranges) and the solver
    /// said so.
    OutsideReported,
    /// The target is unreachable (out of reach, or outside the joint ranges) and the solver
    /// answered as if it were not.
    OutsideSilent,
}

impl BranchClass {
    /// Every class, in legend order.
    pub const ALL: [BranchClass; 6] = [
        BranchClass::Up,
        BranchClass::Down,
        BranchClass::Average,
        BranchClass::Neither,
        BranchClass::OutsideReported,
        BranchClass::OutsideSilent,
    ];

    /// Legend label.
    pub const fn label(self) -> &'static str {
        match self {
            BranchClass::Up => "elbow-up",
            BranchClass::Down => "elbow-down",
            BranchClass::Average => "average (trap)",
            BranchClass::Neither => "neither",
            BranchClass::OutsideReported => "unreachable, reported",
            BranchClass::OutsideSilent => "unreachable, answered anyway",
        }
    }
}

/// Joint distance (radians) within which an answer counts as near a branch or the average.
pub const BRANCH_THRESHOLD: f64 = 0.15;

impl AtlasConfig {
    /// The default map on `arm`: [`AtlasConfig::default`] where its layers are the two-link
    /// arm's; on a chain 48 × 48 cells, a 10 % margin, 16 answers per cell, 1 mm tolerance and
    /// the experiment's solver settings.
    pub fn for_arm(arm: &Arm) -> Self {
        match MapLayer::of(arm).first() {
            Some(MapLayer::Chain(_)) => chain::defaults(),
            _ => Self::default(),
        }
    }

    /// Checks every field a map of `layer` on `arm` uses, with a message naming the first bad
    /// one.
    pub fn validate_for(&self, arm: &Arm, layer: MapLayer) -> Result<(), String> {
        match layer {
            MapLayer::TwoLink(_) => self.validate(),
            MapLayer::Chain(l) => chain::validate(arm, l, self),
        }
    }
}

/// One cell's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AtlasCell {
    /// The cell's centre, metres.
    pub target: Point2,
    /// FK miss of the answer on the arm the solver is judged on, metres (finite).
    pub miss: f64,
    /// Which branch the answer is near.
    pub branch: BranchClass,
    /// The mixture's top weight (0 with no answer); `None` for a solver without a mixture, which
    /// has no confidence to report (left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
    /// The envelope's verdict: `None` accepted, else why it would reject the answer.
    pub verdict: Option<Reason>,
    /// Whether the solver reported failure.
    pub reported: bool,
    /// Silent-failure rate under the configured joint noise (0 when no samples were drawn).
    pub silent: f64,
}

/// A whole map.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Atlas {
    /// The solver mapped.
    pub solver: SolverId,
    /// Cells per side.
    pub resolution: usize,
    /// Half the side of the mapped square, metres (the square is centred on the base).
    pub half_width: f64,
    /// Cells row by row, bottom row (most negative y) first, each row left to right.
    pub cells: Vec<AtlasCell>,
    /// Noise samples per cell behind the silent layer (0: the silent layer was not computed).
    pub samples: usize,
    /// `None` when computed; otherwise why the solver has no map (an untrained head).
    pub missing: Option<String>,
}

impl Atlas {
    /// The centre of cell `(col, row)`.
    pub fn center(resolution: usize, half_width: f64, col: usize, row: usize) -> Point2 {
        let step = 2.0 * half_width / resolution as f64;
        Point2::new(-half_width + (col as f64 + 0.5) * step, -half_width + (row as f64 + 0.5) * step)
    }

    /// The cell containing `p`, if it lies on the map.
    pub fn cell_at(&self, p: Point2) -> Option<&AtlasCell> {
        if !(p.x.is_finite() && p.y.is_finite()) || self.cells.is_empty() {
            return None;
        }
        let step = 2.0 * self.half_width / self.resolution as f64;
        let (col, row) = ((p.x + self.half_width) / step, (p.y + self.half_width) / step);
        let inside = |v: f64| v >= 0.0 && v < self.resolution as f64;
        (inside(col) && inside(row)).then(|| &self.cells[row as usize * self.resolution + col as usize])
    }

    /// Fraction of cells in `class`, among the cells where `filter` holds.
    pub fn share(&self, class: BranchClass, filter: impl Fn(&AtlasCell) -> bool) -> f64 {
        let cells: Vec<&AtlasCell> = self.cells.iter().filter(|c| filter(c)).collect();
        cells.iter().filter(|c| c.branch == class).count() as f64 / cells.len().max(1) as f64
    }
}

/// Which branch `pose` is near, given the target's branches `b` and what the solver said
/// (within [`BRANCH_THRESHOLD`] of a branch, else of their average, else neither).
pub fn classify(b: &Branches, pose: Pose, status: SolveStatus) -> BranchClass {
    // Out of reach, or in reach only by a pose outside the joint ranges: unreachable either way.
    if b.unreachable.is_some() || b.admissible == [false, false] {
        return if status.is_reported_failure() { BranchClass::OutsideReported } else { BranchClass::OutsideSilent };
    }
    let (up, down, avg) =
        (pose.max_joint_distance(b.up), pose.max_joint_distance(b.down), pose.max_joint_distance(b.average()));
    let nearest = up.min(down);
    if nearest <= BRANCH_THRESHOLD {
        if up <= down { BranchClass::Up } else { BranchClass::Down }
    } else if avg <= BRANCH_THRESHOLD {
        BranchClass::Average
    } else {
        BranchClass::Neither
    }
}

/// The arm a solver's answers are judged on: the real arm for heads fitted to it.
fn judged_on(lineup: &Lineup, solver: SolverId) -> RealArm {
    solver.head().and_then(|h| lineup.models[h]).map_or(RealArm::ideal(lineup.arm), |m| m.judged_on())
}

/// Whether `solver` answers with a mixture, and so has a confidence (its top weight).
pub fn has_confidence(solver: SolverId) -> bool {
    solver.head().is_some_and(|h| h.spec().output == Output::Mixture)
}

/// The solver's answer for every target, seeded with the elbow-down pose of each target (the
/// arm "already there"), with the mixture's top weight (`None` for a solver without a mixture:
/// see [`has_confidence`]); learned heads answer in one batch. `None` for a head without a model.
pub fn answers(
    lineup: &Lineup,
    solver: SolverId,
    targets: &[Point2],
    branches: &[Branches],
    scratch: &mut PredictScratch,
) -> Option<Vec<(Solution, Option<f32>)>> {
    let Some(head) = solver.head() else {
        return targets
            .iter()
            .zip(branches)
            .map(|(&t, b)| lineup.solve(solver, t, b.down).map(|s| (s, None)))
            .collect();
    };
    let model = lineup.models[head]?;
    let mut out: Vec<BatchAnswer> = Vec::with_capacity(targets.len());
    model.predict_batch(targets, ElbowMode::Down, scratch, &mut out);
    let mixture = has_confidence(solver);
    Some(out.iter().zip(targets).map(|(a, &t)| (model.solution(t, a), mixture.then_some(a.top_weight))).collect())
}

/// What every row of one map shares: its extent and the silent layer's real arm.
struct Grid {
    half_width: f64,
    real: RealArm,
}

crate::simd::dispatch!(
    /// [`row_cells_body`] compiled for the widest instruction set the CPU has, so the closed-form
    /// geometry of every cell (atan2's fused multiply-adds) runs on hardware FMA.
    fn row_cells(
        lineup: &Lineup<'_>,
        solver: SolverId,
        cfg: &AtlasConfig,
        grid: &Grid,
        row: usize,
        scratch: &mut PredictScratch,
        out: &mut [AtlasCell],
    ) -> bool => row_cells_body
);

/// Fills `out` with one row of cells (bottom row 0); false for a head without a model.
#[inline(always)]
fn row_cells_body(
    lineup: &Lineup,
    solver: SolverId,
    cfg: &AtlasConfig,
    grid: &Grid,
    row: usize,
    scratch: &mut PredictScratch,
    out: &mut [AtlasCell],
) -> bool {
    let n = cfg.resolution;
    // Plain loops rather than iterator closures: closures are compiled apart from this
    // function's instruction set, and the geometry is what wants the FMA.
    let mut targets: Vec<Point2> = Vec::with_capacity(n);
    let mut branches: Vec<Branches> = Vec::with_capacity(n);
    for col in 0..n {
        let t = Atlas::center(n, grid.half_width, col, row);
        targets.push(t);
        branches.push(solve_branches(&lineup.arm, t));
    }
    let Some(answers) = answers(lineup, solver, &targets, &branches, scratch) else { return false };
    let judge = judged_on(lineup, solver);
    let judged_on_nominal = judge == RealArm::ideal(lineup.arm);
    let fit = lineup.fit(solver);
    let noise = Normal::new(0.0, cfg.noise).unwrap_or(Normal::new(0.0, 0.0).expect("zero spread is valid"));
    let play = cfg.backlash;
    // One stream per row, so the map is the same however rows are shared between threads.
    let mut rng = rng(cfg.seed, Stream::AtlasSilent, row as u64);
    for (((&target, (solution, confidence)), b), cell) in targets.iter().zip(answers).zip(&branches).zip(out) {
        let pose = solution.pose;
        let reported = solution.status.is_reported_failure();
        // The verdict on the answer itself, from an arm at rest on it: the joint-step check
        // depends on where the arm comes from, not on the target, so it is left out here.
        let seed = if pose.is_finite() { pose } else { b.down };
        let (verdict, nominal_miss) = lineup.envelope.verdict_as(fit, pose, target, seed);
        let silent = if cfg.samples == 0 || reported {
            0.0
        } else {
            let mut misses = 0;
            for _ in 0..cfg.samples {
                let mut jitter = Pose::new(noise.sample(&mut rng), noise.sample(&mut rng));
                for band in [play, cfg.stiction_band()] {
                    if band > 0.0 {
                        jitter = jitter + Pose::new(rng.random_range(-band..=band), rng.random_range(-band..=band));
                    }
                }
                let q = pose + jitter;
                let q = q + droop(cfg.flex, lineup.arm.l1(), lineup.arm.l2(), q);
                misses += usize::from(grid.real.miss(q, target) > cfg.tolerance);
            }
            misses as f64 / cfg.samples as f64
        };
        let miss = if judged_on_nominal { nominal_miss } else { judge.miss(pose, target) };
        *cell = AtlasCell {
            target,
            miss: if miss.is_finite() { miss } else { f64::MAX },
            branch: classify(b, pose, solution.status),
            confidence,
            verdict,
            reported,
            silent,
        };
    }
    true
}

/// Maps `solver` over the workspace of `lineup`'s two-link arm, rows in parallel on rayon's
/// pool (the result does not depend on the number of threads), telling `progress(rows done,
/// rows)` after each row (from several threads); when it answers false, the rows not yet
/// started are skipped and the answer is `Ok(None)`. The one entry point is [`compute`].
fn two_link(
    lineup: &Lineup,
    solver: SolverId,
    cfg: &AtlasConfig,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<Option<Atlas>, String> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    cfg.validate()?;
    // The silent layer's plant: an error, never the nominal arm in its place (which would show
    // no mismatch at all).
    let real = RealArm::with_mismatch(&lineup.arm, cfg.mismatch)
        .map_err(|e| format!("the silent layer's mismatch makes no valid real arm for this arm: {e}"))?;
    let half_width = lineup.arm.reach() * (1.0 + cfg.margin);
    let grid = Grid { half_width, real };
    let n = cfg.resolution;
    let blank = AtlasCell {
        target: Point2::zeros(),
        miss: 0.0,
        branch: BranchClass::Neither,
        confidence: None,
        verdict: None,
        reported: false,
        silent: 0.0,
    };
    // Every row writes its own slice of the map: no per-row vectors to gather afterwards.
    let mut cells = vec![blank; n * n];
    let (done, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
    let complete = cells
        .par_chunks_mut(n)
        .enumerate()
        .map_init(PredictScratch::default, |scratch, (row, out)| {
            if stop.load(Ordering::Relaxed) {
                return true;
            }
            let answered = row_cells(lineup, solver, cfg, &grid, row, scratch, out);
            if !progress(done.fetch_add(1, Ordering::Relaxed) + 1, n) {
                stop.store(true, Ordering::Relaxed);
            }
            answered
        })
        .all(|done| done);
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let missing = (!complete).then(|| format!("{} has no model yet", solver.name()));
    if missing.is_some() {
        cells = Vec::new();
    }
    Ok(Some(Atlas { solver, resolution: n, half_width, cells, samples: cfg.samples, missing }))
}

/// A layer of any arm's map: the two-link arm's (one map of a solver holds all five) or a
/// chain's (one method's figure each). Which apply to an arm is the arm's answer
/// ([`MapLayer::of`]), read from what it offers: the two-link layers where it has a closed
/// form (they classify answers by its branches), a chain layer where its method is one of the
/// arm's chain methods ([`Arm::methods`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapLayer {
    /// A layer of the two-link map.
    TwoLink(Layer),
    /// A chain map's layer.
    Chain(ChainLayer),
}

impl MapLayer {
    /// Every layer: the two-link arm's in menu order, then the chains'.
    pub const ALL: [MapLayer; Layer::ALL.len() + ChainLayer::ALL.len()] = {
        let mut all = [MapLayer::TwoLink(Layer::Miss); Layer::ALL.len() + ChainLayer::ALL.len()];
        let mut i = 0;
        while i < Layer::ALL.len() {
            all[i] = MapLayer::TwoLink(Layer::ALL[i]);
            i += 1;
        }
        while i < all.len() {
            all[i] = MapLayer::Chain(ChainLayer::ALL[i - Layer::ALL.len()]);
            i += 1;
        }
        all
    };

    /// Key on the command line.
    pub const fn key(self) -> &'static str {
        match self {
            MapLayer::TwoLink(l) => l.key(),
            MapLayer::Chain(l) => l.key(),
        }
    }

    /// What the layer shows, for a caption.
    pub const fn caption(self) -> &'static str {
        match self {
            MapLayer::TwoLink(l) => l.caption(),
            MapLayer::Chain(l) => l.caption(),
        }
    }

    /// The one solver the layer shows (a chain layer is one method's figure); `None` for a
    /// two-link layer, which every solver of the arm has.
    pub const fn solver(self) -> Option<SolverId> {
        match self {
            MapLayer::TwoLink(_) => None,
            MapLayer::Chain(l) => Some(l.method()),
        }
    }

    /// Whether the layer applies to `arm`.
    pub fn applies_to(self, arm: &Arm) -> bool {
        match self {
            MapLayer::TwoLink(_) => arm.closed_form().is_some(),
            MapLayer::Chain(l) => arm.methods().contains(&l.method()),
        }
    }

    /// Whether the layer shows `solver` on `arm` (where it applies).
    pub fn shows(self, solver: SolverId, arm: &Arm) -> bool {
        self.solver().map_or_else(|| arm.solvers().contains(&solver), |s| s == solver)
    }

    /// The layers of `arm`'s maps, in menu order; the first is its default.
    pub fn of(arm: &Arm) -> Vec<MapLayer> {
        Self::ALL.into_iter().filter(|l| l.applies_to(arm)).collect()
    }

    /// The arms a layer is for, in a sentence.
    const fn arms(self) -> &'static str {
        match self {
            MapLayer::TwoLink(_) => "the two-link arm (2r)",
            MapLayer::Chain(_) => "chains (--arm 3r, rail3 or so101, or three or more --lengths)",
        }
    }
}

crate::keys::keyed!(MapLayer, "layer");

/// The solvers mapped on `arm`, in its tables' order: those some layer of its shows.
pub fn solvers(arm: &Arm) -> Vec<SolverId> {
    let layers = MapLayer::of(arm);
    arm.solvers().iter().copied().filter(|&s| layers.iter().any(|l| l.shows(s, arm))).collect()
}

/// The solver and layer of a map on `arm` from what was asked (either may be left out): the
/// squared-error head or net by default, the arm's first layer that shows the solver. A layer
/// that does not apply to the arm, a solver with no map on it, or a layer of another solver is
/// refused in one sentence naming what applies.
pub fn choose(arm: &Arm, solver: Option<SolverId>, layer: Option<MapLayer>) -> Result<(SolverId, MapLayer), String> {
    let layers = MapLayer::of(arm);
    let keys = |ls: &[MapLayer]| ls.iter().map(|l| l.key()).collect::<Vec<_>>().join(", ");
    if let Some(l) = layer.filter(|l| !layers.contains(l)) {
        return Err(format!("layer {l} is for {}; on {} the layers are {}", l.arms(), arm.name, keys(&layers)));
    }
    let solver = solver.or(layer.and_then(MapLayer::solver)).unwrap_or(SolverId::Learned(HeadKind::Mse));
    let mapped = solvers(arm);
    if !mapped.contains(&solver) {
        let names: Vec<&str> = mapped.iter().map(|s| s.key()).collect();
        return Err(format!("{solver} has no map on {}; the solvers mapped there are {}", arm.name, names.join(", ")));
    }
    match layer {
        Some(l) if l.shows(solver, arm) => Ok((solver, l)),
        Some(l) => {
            let own: Vec<MapLayer> = layers.into_iter().filter(|o| o.shows(solver, arm)).collect();
            Err(format!(
                "layer {l} shows {}, not {solver}; {solver}'s layer on {} is {}",
                l.solver().map_or("every solver", SolverId::key),
                arm.name,
                keys(&own)
            ))
        }
        None => layers
            .into_iter()
            .find(|l| l.shows(solver, arm))
            .map(|l| (solver, l))
            .ok_or_else(|| format!("{solver} has no layer on {}", arm.name)),
    }
}

/// The trained models a map may answer with: the two-link heads, the chain's nets.
#[derive(Debug, Clone, Default)]
pub struct Trained<'a> {
    /// The two-link arm's heads (`None`: that head has no model; its map is missing).
    pub heads: Table<HeadKind, Option<&'a LearnedModel>>,
    /// The chain's nets (a layer whose method lacks its net is refused).
    pub nets: Nets<'a>,
}

/// One map, of any arm: the two-link map (every layer per cell) or a chain's (one layer).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Map {
    /// A two-link map.
    TwoLink(Atlas),
    /// A chain map.
    Chain(ChainAtlas),
}

impl Map {
    /// Cells per side.
    pub fn resolution(&self) -> usize {
        match self {
            Map::TwoLink(a) => a.resolution,
            Map::Chain(c) => c.resolution,
        }
    }

    /// The mapped rectangle, metres (the two-link map's is a square centred on the base).
    pub fn extent(&self) -> Extent {
        match self {
            Map::TwoLink(a) => Extent { x: [-a.half_width, a.half_width], y: [-a.half_width, a.half_width] },
            Map::Chain(c) => c.extent,
        }
    }

    /// A cell's width and height, metres.
    pub fn cell_size(&self) -> (f64, f64) {
        let (e, n) = (self.extent(), self.resolution() as f64);
        ((e.x[1] - e.x[0]) / n, (e.y[1] - e.y[0]) / n)
    }

    /// The centre of cell `(col, row)` (row 0 at the bottom).
    pub fn center(&self, col: usize, row: usize) -> Point2 {
        match self {
            Map::TwoLink(a) => Atlas::center(a.resolution, a.half_width, col, row),
            Map::Chain(c) => c.center(col, row),
        }
    }

    /// What the map shows on `layer`, for a caption: the solver (two-link) or the arm (chain).
    pub fn caption(&self, layer: MapLayer) -> String {
        match self {
            Map::TwoLink(a) => format!("{}: {}", a.solver.name(), layer.caption()),
            Map::Chain(c) => format!("{}: {}", c.arm, c.layer.caption()),
        }
    }

    /// Why the map has no cells (a two-link head without a model), if so.
    pub fn missing(&self) -> Option<&str> {
        match self {
            Map::TwoLink(a) => a.missing.as_deref(),
            Map::Chain(_) => None,
        }
    }

    /// Cells some solution reaches, where the map knows (a chain's exact sampler decides).
    pub fn reachable(&self) -> Option<usize> {
        match self {
            Map::TwoLink(_) => None,
            Map::Chain(c) => Some(c.cells.iter().filter(|v| v.is_some()).count()),
        }
    }
}

/// The rims drawn on `arm`'s maps: the annulus of its closed form (inner radius and reach),
/// none on a chain.
pub fn rims(arm: &Arm) -> Vec<f64> {
    arm.closed_form().map_or_else(Vec::new, |a| vec![a.inner_radius(), a.reach()])
}

/// The one entry point: the map of `solver` on `arm` with the `trained` models, rows in parallel
/// (the result does not depend on the number of threads). The layer that shows the solver
/// decides which map is made ([`MapLayer::of`], [`choose`]): the two-link map holds every
/// two-link layer per cell; a chain's holds its solver's layer. `progress(rows done, rows)` is
/// told after each row; when it answers false the rows not yet started are skipped and the
/// answer is `Ok(None)`.
pub fn compute(
    arm: &Arm,
    solver: SolverId,
    trained: Trained<'_>,
    cfg: &AtlasConfig,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<Option<Map>, AtlasError> {
    let (solver, layer) = choose(arm, Some(solver), None).map_err(AtlasError::Invalid)?;
    match layer {
        MapLayer::TwoLink(_) => {
            let closed =
                arm.closed_form().ok_or_else(|| AtlasError::Invalid(format!("{} has no closed form", arm.name)))?;
            let lineup = Lineup::new(closed, trained.heads);
            Ok(two_link(&lineup, solver, cfg, progress).map_err(AtlasError::Invalid)?.map(Map::TwoLink))
        }
        MapLayer::Chain(l) => Ok(chain::compute(arm, l, cfg, trained.nets, progress)?.map(Map::Chain)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::{Mismatch, TwoLinkArm};
    use crate::learned::{HeadKind, TrainConfig, Trainer};
    use crate::lineup::Table;

    fn cfg() -> AtlasConfig {
        AtlasConfig { resolution: 48, samples: 2, ..AtlasConfig::default() }
    }

    /// A target in reach only by a pose outside the joint ranges (Bishop's arm, behind its
    /// shoulder's range) is unreachable: an answer there is silent or reported, never "neither".
    #[test]
    fn a_target_outside_the_joint_ranges_is_unreachable_not_neither() {
        let arm = crate::experiments::bishop::bishop_arm();
        let target = Point2::new(-0.9, 0.0);
        let b = solve_branches(&arm, target);
        assert!(b.unreachable.is_none(), "in reach of the links");
        let pose = b.up;
        assert_eq!(classify(&b, pose, SolveStatus::Converged), BranchClass::OutsideSilent);
        assert_eq!(classify(&b, pose, SolveStatus::LimitViolated), BranchClass::OutsideReported);
        // Inside the ranges the classes are the branches'.
        let inside = arm.tip(crate::Pose::new(0.7, 0.5));
        let b = solve_branches(&arm, inside);
        let near = classify(&b, crate::Pose::new(0.7, 0.5), SolveStatus::Converged);
        assert!(matches!(near, BranchClass::Up | BranchClass::Down), "{near:?}");
    }

    /// The two-link map of `solver` with `lineup`'s heads, through the one entry point.
    pub(super) fn compute(lineup: &Lineup, solver: SolverId, cfg: &AtlasConfig) -> Result<Atlas, String> {
        let trained = Trained { heads: lineup.models.clone(), ..Trained::default() };
        match super::compute(&Arm::two_link(lineup.arm), solver, trained, cfg, &|_, _| true) {
            Ok(Some(Map::TwoLink(a))) => Ok(a),
            Ok(other) => panic!("a two-link map expected, got {other:?}"),
            Err(e) => Err(e.to_string()),
        }
    }

    /// One entry point maps every arm: the layers, the solvers and the kind of map follow from
    /// the arm (the two-link map on a closed form, a chain map on a chain), and a solver with no
    /// map on the arm is refused naming those that have one.
    #[test]
    fn one_entry_point_maps_both_kinds_of_arm() {
        use crate::arm::ArmKind;
        let (two, rail3) = (ArmKind::TwoR.arm(), ArmKind::Rail3.arm());
        assert_eq!(MapLayer::of(&two), Layer::ALL.map(MapLayer::TwoLink).to_vec());
        assert_eq!(MapLayer::of(&rail3), ChainLayer::ALL.map(MapLayer::Chain).to_vec());
        assert_eq!(solvers(&two), SolverId::TWO_LINK.to_vec());
        let chain_keys: Vec<&str> = solvers(&rail3).iter().map(|s| s.key()).collect();
        assert_eq!(chain_keys, ["mse", "mdn", "hybrid", "exact"]);
        let small = AtlasConfig { resolution: 8, samples: 0, ..AtlasConfig::for_arm(&two) };
        let map = super::compute(&two, SolverId::Analytic, Trained::default(), &small, &|_, _| true).unwrap();
        assert!(matches!(&map, Some(Map::TwoLink(a)) if a.cells.len() == 64 && a.solver == SolverId::Analytic));
        assert_eq!(rims(&two), vec![0.0, 2.0]);
        let small = AtlasConfig { resolution: 6, samples: 4, ..AtlasConfig::for_arm(&rail3) };
        assert_eq!((small.margin, small.tolerance), (0.1, 1e-3), "the chain's defaults");
        let map = super::compute(&rail3, SolverId::Exact, Trained::default(), &small, &|_, _| true).unwrap();
        let Some(Map::Chain(c)) = &map else { panic!("a chain map: {map:?}") };
        assert_eq!((c.layer, c.cells.len()), (ChainLayer::ExactSpread, 36));
        assert!(rims(&rail3).is_empty() && map.as_ref().unwrap().reachable().is_some_and(|r| r > 0));
        for (arm, solver, needle) in [
            (
                &rail3,
                SolverId::Analytic,
                "analytic has no map on rail3; the solvers mapped there are mse, mdn, hybrid, exact",
            ),
            (&rail3, SolverId::Flow, "flow has no map on rail3"),
            (&two, SolverId::Flow, "flow has no map on 2r; the solvers mapped there are analytic, elbow-up"),
        ] {
            let e = super::compute(arm, solver, Trained::default(), &small, &|_, _| true).unwrap_err();
            assert!(e.to_string().contains(needle), "{e}");
        }
        let mdn = SolverId::Learned(HeadKind::Mdn);
        assert_eq!(
            choose(&rail3, None, None).unwrap(),
            (SolverId::Learned(HeadKind::Mse), MapLayer::Chain(ChainLayer::MseMiss))
        );
        assert_eq!(choose(&rail3, Some(mdn), None).unwrap().1, MapLayer::Chain(ChainLayer::MdnResim));
        assert_eq!(choose(&two, Some(mdn), None).unwrap().1, MapLayer::TwoLink(Layer::Miss));
        let e = choose(&rail3, Some(mdn), Some(MapLayer::Chain(ChainLayer::ExactSpread))).unwrap_err();
        assert!(e.contains("layer exact-spread shows exact, not mdn") && e.contains("mdn-resim"), "{e}");
        let e = choose(&two, None, Some(MapLayer::Chain(ChainLayer::ExactSpread))).unwrap_err();
        assert!(e.contains("layer exact-spread is for chains") && e.contains("miss, branch"), "{e}");
    }

    #[test]
    fn the_analytic_map_is_exact_inside_and_flags_every_cell_outside() {
        let arm = TwoLinkArm::new(1.0, 0.6).unwrap();
        let lineup = Lineup::new(arm, Table::default());
        let atlas = compute(&lineup, SolverId::Analytic, &cfg()).unwrap();
        assert_eq!(atlas.cells.len(), 48 * 48);
        for c in &atlas.cells {
            if arm.is_reachable(c.target) {
                assert!(c.miss < 1e-9, "{c:?}");
                assert!(matches!(c.branch, BranchClass::Up | BranchClass::Down), "{c:?}");
            } else {
                assert!(c.reported && c.branch == BranchClass::OutsideReported, "{c:?}");
                assert_eq!(c.silent, 0.0);
            }
        }
        assert!(atlas.cell_at(Point2::new(0.9, 0.3)).is_some_and(|c| c.miss < 1e-9));
        assert!(atlas.cell_at(Point2::new(99.0, 0.0)).is_none());
    }

    #[test]
    fn the_silent_layer_feels_friction_and_flex() {
        // The analytic answer is exact: with no noise nothing fails; flex droops the arm past the
        // tolerance where it is stretched out. Friction near the servo's torque limit is a
        // stiction band of 2.5 mrad on the STS3215's gain: a few millimetres at the tip, never a
        // miss at the default 5 cm tolerance, past a 2 mm one over much of the map.
        let lineup = Lineup::new(TwoLinkArm::default(), Table::default());
        let base = AtlasConfig { noise: 0.0, samples: 4, ..cfg() };
        let rate = |c: AtlasConfig| {
            let atlas = compute(&lineup, SolverId::Analytic, &c).unwrap();
            atlas.cells.iter().map(|c| c.silent).sum::<f64>() / atlas.cells.len() as f64
        };
        assert_eq!(rate(base), 0.0);
        let flex = rate(AtlasConfig { flex: 0.05, ..base });
        assert_eq!(rate(AtlasConfig { friction: 2.5, ..base }), 0.0);
        let friction = rate(AtlasConfig { friction: 2.5, tolerance: 0.002, ..base });
        assert!(flex > 0.05 && friction > 0.05, "flex {flex}, friction {friction}");
        for bad in [f64::NAN, -0.1, 3.0] {
            assert!(AtlasConfig { flex: bad, ..base }.validate().is_err());
            assert!(AtlasConfig { friction: bad, ..base }.validate().is_err());
        }
        assert!(AtlasConfig { friction: 2.0, ..base }.validate().is_ok(), "N m, not rad");
    }

    #[test]
    fn a_mismatch_that_makes_no_real_arm_is_an_error_not_the_nominal_arm() {
        // Links at the smallest length the arm accepts: 20 % shorter is no arm at all, and the
        // silent layer must say so rather than judge answers on the nominal arm (no mismatch).
        let arm = TwoLinkArm::new(1e-6, 1e-6).unwrap();
        let lineup = Lineup::new(arm, Table::default());
        let mismatch = Mismatch { length_error: [-0.2, 0.0], ..Mismatch::NONE };
        let err = compute(&lineup, SolverId::Analytic, &AtlasConfig { mismatch, ..cfg() }).unwrap_err();
        assert!(err.contains("no valid real arm"), "{err}");
        // The same mismatch on an ordinary arm maps.
        let ordinary = Lineup::new(TwoLinkArm::default(), Table::default());
        assert!(compute(&ordinary, SolverId::Analytic, &AtlasConfig { mismatch, ..cfg() }).is_ok());
    }

    #[test]
    fn the_mse_map_sits_on_the_average_in_the_interior_and_answers_beyond_the_rim() {
        let arm = TwoLinkArm::default();
        let mut t = Trainer::new(TrainConfig { head: HeadKind::Mse, steps: 1500, ..TrainConfig::default() }).unwrap();
        t.run(|_, _| {}).unwrap();
        let model = t.into_model();
        let mut models = Table::default();
        models[HeadKind::Mse] = Some(&model);
        let atlas = compute(&Lineup::new(arm, models), SolverId::Learned(HeadKind::Mse), &cfg()).unwrap();
        let mean = |f: &dyn Fn(f64) -> bool| {
            let cells: Vec<&AtlasCell> = atlas.cells.iter().filter(|c| f(c.target.norm())).collect();
            cells.iter().map(|c| c.miss).sum::<f64>() / cells.len() as f64
        };
        let interior = mean(&|r| r > 0.3 && r < 1.2);
        let rim = mean(&|r| r > 1.9 && r < 2.0);
        assert!(interior > 0.3 && rim < interior / 3.0, "interior {interior} vs rim {rim}");
        assert!(atlas.share(BranchClass::Average, |c| c.target.norm() > 0.3 && c.target.norm() < 1.5) > 0.5);
        assert!(atlas.share(BranchClass::OutsideSilent, |c| c.target.norm() > 2.05) == 1.0);
    }

    /// Only a mixture has a confidence: every other solver's cells carry none (not a weight of
    /// 1), paint as "no confidence" on that layer, and leave the field out of JSON.
    #[test]
    fn only_mixture_heads_have_a_confidence() {
        let arm = TwoLinkArm::default();
        let tiny = |head| {
            let cfg = TrainConfig { head, steps: 30, data_size: 256, hidden: 8, depth: 1, ..TrainConfig::default() };
            let mut t = Trainer::new(cfg).unwrap();
            t.run(|_, _| {}).unwrap();
            t.into_model()
        };
        let models: Vec<_> = HeadKind::ALL.iter().map(|&h| tiny(h)).collect();
        let lineup = Lineup::new(arm, Table::from_fn(|h| models.iter().find(|m| m.kind == h)));
        let cfg = AtlasConfig { resolution: 16, samples: 0, ..AtlasConfig::default() };
        for id in [SolverId::Flow, SolverId::Hybrid, SolverId::Exact] {
            assert!(compute(&lineup, id, &cfg).unwrap_err().contains("has no map on 2r"), "{id}");
        }
        for solver in SolverId::TWO_LINK {
            let atlas = compute(&lineup, solver, &cfg).unwrap();
            assert_eq!(atlas.cells.len(), 16 * 16, "{solver:?}");
            let pixels = paint::pixels(&atlas, Layer::Confidence);
            if solver == SolverId::Learned(HeadKind::Mdn) {
                assert!(has_confidence(solver));
                assert!(atlas.cells.iter().all(|c| c.confidence.is_some_and(|w| (0.0..=1.0).contains(&w))));
                // A weight is never painted as "no confidence".
                assert!(pixels.chunks(4).all(|p| p != paint::NO_VALUE));
            } else {
                assert!(!has_confidence(solver), "{solver:?}");
                assert!(atlas.cells.iter().all(|c| c.confidence.is_none()), "{solver:?}");
                assert!(pixels.chunks(4).all(|p| p == paint::NO_VALUE), "{solver:?}");
                let json = serde_json::to_string(&atlas.cells[0]).unwrap();
                assert!(!json.contains("confidence") && !json.contains("null"), "{json}");
            }
        }
    }

    #[test]
    fn untrained_heads_have_no_map_and_hostile_settings_are_refused() {
        let lineup = Lineup::new(TwoLinkArm::default(), Table::default());
        let atlas = compute(&lineup, SolverId::Learned(HeadKind::Mdn), &cfg()).unwrap();
        assert!(atlas.missing.is_some() && atlas.cells.is_empty());
        for bad in [
            AtlasConfig { resolution: 0, ..cfg() },
            AtlasConfig { resolution: 1 << 20, ..cfg() },
            AtlasConfig { noise: f64::NAN, ..cfg() },
            AtlasConfig { margin: f64::INFINITY, ..cfg() },
            AtlasConfig { tolerance: -1.0, ..cfg() },
        ] {
            assert!(compute(&lineup, SolverId::Analytic, &bad).is_err(), "{bad:?}");
        }
        let noisy = compute(&lineup, SolverId::Iterative, &AtlasConfig { noise: 1.0, samples: 8, ..cfg() }).unwrap();
        assert!(
            noisy.cells.iter().all(|c| c.miss.is_finite() && c.silent.is_finite() && (0.0..=1.0).contains(&c.silent))
        );
    }
}
