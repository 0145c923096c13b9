//! Networks from a target `y` to a chain's coordinates `x`, trained on pairs `(f(x), x)` with `x`
//! drawn from the arm's prior (a fresh minibatch every step, so there is no training set to
//! overfit): a squared-error MLP (one answer: at best the posterior mean `E[x | y]`), a
//! mixture density network (a mixture of Gaussians over `x`, full-covariance by default, see
//! [`FullMdn`], sampled) and a conditional normalizing flow ([`Flow`]: exact likelihood,
//! trained by maximum likelihood, sampled through its inverse).
//!
//! Inputs are standardised by the mean and spread of `f(x)` under the prior, outputs by the
//! prior's centre and scale per coordinate ([`super::Prior::center`], [`super::Prior::scale`]), so every
//! arm trains with the same settings. The nets are the crate's own [`Mlp`] under [`Mse`],
//! [`MdnNll`] or [`FullMdn`], or a [`Flow`], all trained by the same [`Fitter`] as the two-link
//! heads (Adam, the learning rate decaying along a cosine to 5 % of its peak, the same limits and
//! divergence check).

use super::arm::MAX_COORDS;
use crate::arm::Arm;
use crate::kinematics::Point2;
use crate::learned::limits::MAX_COMPONENTS;
use crate::learned::train::{Fit, Fitter, Rollback, check_budget, start_mixture};
use crate::learned::{FieldError, HeadKind, TrainError};
use crate::lineup::SolverId;
use crate::nn::flow::{Conditioned, FlowScratch};
use crate::nn::{Activation, Flow, FlowShape, FlowWork, FullMdn, Loss, MdnNll, MixtureLayout, Mlp, Mse};
use crate::rng::{Stream, rng};
use nalgebra::{DMatrix, DVector};
use rand::{Rng, RngExt};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

/// The widest entry of a full-covariance component's Cholesky factor, in prior scales: no
/// posterior needs a component wider than a couple of prior scales (see [`FullMdn`]).
pub const SIGMA_MAX: f32 = 2.0;

/// Which network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NetKind {
    /// Squared error: one answer per target.
    Mse,
    /// Mixture density network.
    Mdn,
    /// Conditional normalizing flow.
    Flow,
}

impl NetKind {
    /// Every net, in table order.
    pub const ALL: [NetKind; 3] = [NetKind::Mse, NetKind::Mdn, NetKind::Flow];

    /// The key on the command line and in JSON field names.
    pub const fn key(self) -> &'static str {
        match self {
            NetKind::Mse => "mse",
            NetKind::Mdn => "mdn",
            NetKind::Flow => "flow",
        }
    }

    /// The position in [`NetKind::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The solver this net is in the line-up (its key is the net's key).
    pub const fn solver(self) -> SolverId {
        match self {
            NetKind::Mse => SolverId::Learned(HeadKind::Mse),
            NetKind::Mdn => SolverId::Learned(HeadKind::Mdn),
            NetKind::Flow => SolverId::Flow,
        }
    }
}

crate::keys::keyed!(NetKind, "net");

/// How a chain's normalizing flow is built (its training schedule is the [`NetConfig`]'s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowSettings {
    /// Coupling blocks.
    pub blocks: usize,
    /// Width of each coupling network's hidden layers.
    pub hidden: usize,
    /// Hidden layers of each coupling network.
    pub depth: usize,
    /// Features of the target each block sees.
    pub features: usize,
    /// Width of the conditioning network's hidden layers (its depth is the [`NetConfig`]'s).
    pub cond_hidden: usize,
    /// Soft clamp of every log-scale.
    pub clamp: f32,
    /// The networks' hidden activation.
    pub activation: Activation,
}

impl Default for FlowSettings {
    fn default() -> Self {
        Self {
            blocks: 8,
            hidden: 64,
            depth: 2,
            features: 32,
            cond_hidden: 128,
            clamp: 2.0,
            activation: Activation::Relu,
        }
    }
}

/// The covariance of a mixture density network's components.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Covariance {
    /// Full covariance ([`FullMdn`]): each component can lie along the solution sheet.
    Full,
    /// Diagonal ([`MdnNll`]): thin only along the coordinate axes.
    Diagonal,
}

impl Covariance {
    /// Both, default first.
    pub const ALL: [Covariance; 2] = [Covariance::Full, Covariance::Diagonal];

    /// The key on the command line and in JSON.
    pub const fn key(self) -> &'static str {
        match self {
            Covariance::Full => "full",
            Covariance::Diagonal => "diagonal",
        }
    }
}

crate::keys::keyed!(Covariance, "covariance");

/// A mixture density network's loss, by covariance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Mixture {
    /// Full-covariance components.
    Full(FullMdn),
    /// Diagonal components.
    Diagonal(MdnNll),
}

impl Mixture {
    /// Network outputs per sample.
    pub fn outputs(&self) -> usize {
        match self {
            Mixture::Full(m) => m.outputs(),
            Mixture::Diagonal(m) => m.outputs(),
        }
    }

    /// Where the loss reads each component's mean and spread.
    fn layout(&self) -> &dyn MixtureLayout {
        match self {
            Mixture::Full(m) => m,
            Mixture::Diagonal(m) => m,
        }
    }

    /// The loss itself.
    fn loss(self) -> Box<dyn Loss> {
        match self {
            Mixture::Full(m) => Box::new(m),
            Mixture::Diagonal(m) => Box::new(m),
        }
    }
}

/// How a chain network is built and trained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetConfig {
    /// Width of each hidden layer.
    pub hidden: usize,
    /// Number of hidden layers.
    pub depth: usize,
    /// Mixture components (MDN only).
    pub components: usize,
    /// The components' covariance (MDN only).
    pub covariance: Covariance,
    /// Smallest standard deviation of a component, in prior scales (MDN only).
    pub sigma_min: f32,
    /// Minibatch updates.
    pub steps: usize,
    /// Samples per minibatch.
    pub batch: usize,
    /// Peak learning rate.
    pub lr: f32,
    /// Seed of initialisation and data.
    pub seed: u64,
    /// The normalizing flow's shape (flow only).
    #[serde(default)]
    pub flow: FlowSettings,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            hidden: 128,
            depth: 3,
            components: 16,
            covariance: Covariance::Full,
            sigma_min: 1e-3,
            steps: 12_000,
            batch: 512,
            lr: 3e-3,
            seed: 0,
            flow: FlowSettings::default(),
        }
    }
}

impl NetConfig {
    /// The network's shape and the schedule of a `kind` run on an arm with `coords` coordinates
    /// (for a flow: its coupling networks' widths; [`NetConfig::flow_shape`] is the whole shape).
    fn fit(&self, kind: NetKind, coords: usize) -> Fit {
        let (outputs, hidden, depth) = match kind {
            NetKind::Mse => (coords, self.hidden, self.depth),
            NetKind::Mdn => (self.mixture(coords).outputs(), self.hidden, self.depth),
            NetKind::Flow => (coords, self.flow.hidden, self.flow.depth),
        };
        Fit { inputs: 2, outputs, hidden, depth, steps: self.steps, batch: self.batch, lr: self.lr }
    }

    /// The flow over `coords` coordinates: a conditioning net of the configuration's depth, the
    /// flow settings' blocks (each width capped at the lab's limits, so an unchecked
    /// configuration never sizes a huge network).
    pub fn flow_shape(&self, coords: usize) -> FlowShape {
        use crate::learned::limits::{MAX_DEPTH, MAX_HIDDEN};
        let f = &self.flow;
        FlowShape {
            dims: coords,
            conds: 2,
            blocks: f.blocks.min(MAX_BLOCKS),
            hidden: f.hidden.min(MAX_HIDDEN),
            depth: f.depth.min(MAX_DEPTH),
            cond_hidden: f.cond_hidden.min(MAX_HIDDEN),
            cond_depth: self.depth.min(MAX_DEPTH),
            features: f.features.min(MAX_HIDDEN),
            clamp: f.clamp,
            activation: f.activation,
        }
    }

    /// The mixture over `coords` coordinates (its components capped at the lab's limit, so an
    /// unchecked configuration never sizes a huge network).
    fn mixture(&self, coords: usize) -> Mixture {
        let (k, d, sigma_min) = (self.components.min(MAX_COMPONENTS), coords, self.sigma_min);
        match self.covariance {
            Covariance::Full => Mixture::Full(FullMdn { k, d, sigma_min, sigma_max: SIGMA_MAX }),
            Covariance::Diagonal => Mixture::Diagonal(MdnNll { k, d, sigma_min }),
        }
    }

    /// Weights and biases of a `kind` net.
    fn parameter_count(&self, kind: NetKind, coords: usize) -> f64 {
        match kind {
            NetKind::Flow => self.flow_shape(coords).parameter_count(),
            _ => self.fit(kind, coords).parameter_count(),
        }
    }

    /// Estimated training work, FLOP (about 6 per weight per sample, as [`Fit::work_estimate`]).
    pub fn work_estimate(&self, kind: NetKind, coords: usize) -> f64 {
        6.0 * self.parameter_count(kind, coords) * self.batch as f64 * self.steps as f64
    }

    /// Estimated size of a `kind` net's part of a model file, bytes ([`Fit::model_file_estimate`]).
    pub fn model_file_estimate(&self, kind: NetKind, coords: usize) -> f64 {
        16.0 * self.parameter_count(kind, coords) + 4096.0
    }

    /// Checks every field against the lab's training limits ([`Fit::check_settings`],
    /// [`check_budget`]); the spread floor is in prior scales, at most 1; a flow's blocks in
    /// 1..=[`MAX_BLOCKS`], its clamp in (0, 10].
    pub fn validate(&self, kind: NetKind, coords: usize) -> Result<(), TrainError> {
        let fit = self.fit(kind, coords);
        fit.check_settings(Some(self.components), self.sigma_min, 1.0)?;
        if kind == NetKind::Flow {
            let f = &self.flow;
            let out_of_range =
                |field, limit: &str, value: String| Err(TrainError::OutOfRange { field, limit: limit.into(), value });
            if !(1..=MAX_BLOCKS).contains(&f.blocks) {
                return out_of_range("flow blocks", &format!("from 1 to {MAX_BLOCKS}"), f.blocks.to_string());
            }
            for (field, v) in [("flow features", f.features), ("conditioning width", f.cond_hidden)] {
                if !(1..=crate::learned::limits::MAX_HIDDEN).contains(&v) {
                    let limit = format!("from 1 to {}", crate::learned::limits::MAX_HIDDEN);
                    return out_of_range(field, &limit, v.to_string());
                }
            }
            if !(f.clamp.is_finite() && f.clamp > 0.0 && f.clamp <= 10.0) {
                return out_of_range("flow clamp", "in (0, 10]", f.clamp.to_string());
            }
            let shape = self.flow_shape(coords);
            let bytes = 16.0 * shape.parameter_count() + 16.0 * shape.units() * self.batch as f64;
            return check_budget(bytes, self.work_estimate(kind, coords));
        }
        fit.check_budget(0.0)
    }
}

/// The most coupling blocks a flow may have.
pub const MAX_BLOCKS: usize = 64;

/// What a chain net computes with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Body {
    /// An MLP: the one answer (squared error) or a mixture's parameters (MDN).
    Mlp {
        /// The network.
        net: Mlp,
        /// The mixture layout (MDN only).
        mixture: Option<Mixture>,
    },
    /// A conditional normalizing flow over the standardised coordinates.
    Flow {
        /// The flow (boxed: it is several networks).
        flow: Box<Flow>,
    },
}

/// A trained network from targets to a chain's coordinates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainNet {
    /// Which network.
    pub kind: NetKind,
    /// What it computes with (in a file: `net` and `mixture`, or `flow`).
    #[serde(flatten)]
    pub body: Body,
    /// Input standardisation: `(y - center) / scale`.
    input: [(f32, f32); 2],
    /// Output standardisation per coordinate: `x = center + scale * out`.
    output: Vec<(f64, f64)>,
}

/// One component of a net's mixture, in the coordinates' own units: a draw is `mean + A ε`
/// with `ε` standard normal and `A` lower triangular (diagonal for diagonal components).
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Mixture weight.
    pub weight: f64,
    /// Mean per coordinate.
    pub mean: [f64; MAX_COORDS],
    /// The square-root factor `A` (row-major, `MAX_COORDS` per row; `A Aᵀ` is the covariance).
    pub factor: [[f64; MAX_COORDS]; MAX_COORDS],
}

/// Draws of a net's posterior for one target, one at a time ([`ChainNet::drawer`]): from the
/// mixture's components, or from the flow conditioned on the target (drawn in batches of
/// [`Drawer::BATCH`] through its kernels and handed out one by one).
pub enum Drawer<'a> {
    /// A mixture's components (one of weight 1 and zero spread for the squared-error net).
    Mixture(Vec<Component>),
    /// A flow conditioned on the target.
    Flow {
        /// The conditioned flow.
        flow: Box<Conditioned>,
        /// The net, for its output scaling.
        net: &'a ChainNet,
        /// Draws not handed out yet, in the coordinates' own units.
        pool: Vec<f64>,
        /// The flow's buffers.
        scratch: FlowScratch,
    },
}

impl Drawer<'_> {
    /// Flow draws made per batch.
    pub const BATCH: usize = 64;

    /// One draw into `x` (the net's coordinates).
    pub fn draw<R: Rng + ?Sized>(&mut self, rng: &mut R, x: &mut [f64]) {
        match self {
            Drawer::Mixture(comps) => draw(comps, rng, x),
            Drawer::Flow { flow, net, pool, scratch } => {
                let d = x.len();
                if pool.is_empty() {
                    pool.extend((0..Self::BATCH * d).map(|_| -> f64 { StandardNormal.sample(rng) }));
                    flow.inverse(pool, scratch);
                    net.unscale(pool);
                }
                x.copy_from_slice(&pool[pool.len() - d..]);
                pool.truncate(pool.len() - d);
            }
        }
    }
}

impl ChainNet {
    /// Trains a `kind` network for `arm`; `progress(step, loss)` is called after each step and
    /// stops the run (with [`TrainError::Cancelled`]) by returning false.
    pub fn train(
        arm: &Arm,
        kind: NetKind,
        cfg: &NetConfig,
        mut progress: impl FnMut(usize, f32) -> bool,
    ) -> Result<Self, TrainError> {
        Self::train_watched(arm, kind, cfg, |step, loss, _| progress(step, loss)).map(|(net, _)| net)
    }

    /// [`ChainNet::train`] with a view of the net after each step: `progress(step, loss,
    /// snapshot)`, where `snapshot()` builds the net as it stands (a copy, so call it only when
    /// a snapshot is wanted: the app takes one every few hundred steps to show the fan sharpen),
    /// returning the net with the divergence guard's roll-backs ([`Rollback`]).
    pub fn train_watched(
        arm: &Arm,
        kind: NetKind,
        cfg: &NetConfig,
        mut progress: impl FnMut(usize, f32, &dyn Fn() -> ChainNet) -> bool,
    ) -> Result<(Self, Vec<Rollback>), TrainError> {
        let d = arm.coords();
        cfg.validate(kind, d)?;
        let mut rng = rng(cfg.seed, Stream::ChainTraining, 0);
        let input = input_scaling(arm, &mut rng);
        let output: Vec<(f64, f64)> = (0..d).map(|i| (arm.prior.center(i), arm.prior.scale(i))).collect();
        let fit = cfg.fit(kind, d);
        let mut x = [0.0; MAX_COORDS];
        let net_of = |body: Body| Self { kind, body, input, output: output.clone() };
        match kind {
            NetKind::Mse | NetKind::Mdn => {
                let mut net = Mlp::new(&fit.layer_sizes(), Activation::Tanh, &mut rng);
                let mixture = (kind == NetKind::Mdn).then(|| cfg.mixture(d));
                // Each component's mean at a prior draw (in prior scales) and its spread at half
                // the prior's: the components start apart, so none has to break a symmetry.
                if let Some(m) = mixture {
                    start_mixture(&mut net, m.layout(), |_, _| StandardNormal.sample(&mut rng), 0.5f32.ln());
                }
                let loss = mixture.map_or_else(|| Box::new(Mse) as Box<dyn Loss>, Mixture::loss);
                let fill = |xb: &mut DMatrix<f32>, yb: &mut DMatrix<f32>| {
                    fill_batch(arm, &input, &output, &mut rng, &mut x, xb, yb)
                };
                let mut fitter = Fitter::new(fit, &net, loss, d);
                fitter.run_watched(&mut net, fill, |step, loss, net| {
                    progress(step, loss, &|| net_of(Body::Mlp { net: net.clone(), mixture }))
                })?;
                Ok((net_of(Body::Mlp { net, mixture }), fitter.rollbacks().to_vec()))
            }
            NetKind::Flow => {
                let mut flow = Flow::new(cfg.flow_shape(d), &mut rng);
                let work = FlowWork::new(&flow);
                let fill = |xb: &mut DMatrix<f32>, yb: &mut DMatrix<f32>| {
                    fill_batch(arm, &input, &output, &mut rng, &mut x, xb, yb)
                };
                let mut fitter = Fitter::with_work(fit, work, d);
                fitter.run_watched(&mut flow, fill, |step, loss, flow| {
                    progress(step, loss, &|| net_of(Body::Flow { flow: Box::new(flow.clone()) }))
                })?;
                Ok((net_of(Body::Flow { flow: Box::new(flow) }), fitter.rollbacks().to_vec()))
            }
        }
    }

    /// Checks a net read from a file for `coords` coordinates, naming the field under `field`
    /// (`mse`, `mdn`, `flow`): its kind, the network's layers ([`crate::learned::model`]'s
    /// checks), its inputs and outputs, the mixture layout (an MDN only; components in 1..=32, a
    /// spread floor in (0, 1]), the flow's shape (a flow only) and the scalings (finite,
    /// positive spreads).
    pub fn validate(&self, kind: NetKind, coords: usize, field: &str) -> Result<(), FieldError> {
        use crate::learned::model::{MAX_SPREAD, MIN_SPREAD, field_err, validate_layers};
        if self.kind != kind {
            return field_err(format!("{field}.kind"), format!("is {:?}, expected {kind:?}", self.kind));
        }
        match (kind, &self.body) {
            (NetKind::Flow, Body::Flow { flow }) => {
                let s = &flow.shape;
                let widths = [s.hidden, s.cond_hidden, s.features];
                let fits = s.dims == coords
                    && s.conds == 2
                    && (1..=MAX_BLOCKS).contains(&s.blocks)
                    && widths.iter().all(|w| (1..=crate::learned::limits::MAX_HIDDEN).contains(w))
                    && s.depth <= crate::learned::limits::MAX_DEPTH
                    && s.cond_depth <= crate::learned::limits::MAX_DEPTH
                    && s.clamp.is_finite()
                    && s.clamp > 0.0
                    && s.clamp <= 10.0;
                if !fits {
                    return field_err(
                        format!("{field}.flow.shape"),
                        format!(
                            "needs {coords} coordinates, 2 conditions, 1 to {MAX_BLOCKS} blocks, widths within the lab's limits and a clamp in (0, 10]"
                        ),
                    );
                }
                for (i, b) in flow.blocks.iter().enumerate() {
                    validate_layers(&b.net, &format!("{field}.flow.blocks[{i}].net"))?;
                }
                validate_layers(&flow.cond, &format!("{field}.flow.cond"))?;
                if !flow.is_consistent() {
                    return field_err(
                        format!("{field}.flow"),
                        "its networks are not shaped as its shape says, or a mixing is not a rotation",
                    );
                }
            }
            (NetKind::Flow, Body::Mlp { .. }) => return field_err(format!("{field}.flow"), "a flow needs one"),
            (_, Body::Flow { .. }) => return field_err(format!("{field}.net"), "is a flow, expected a network"),
            (_, Body::Mlp { net, mixture }) => {
                validate_layers(net, &format!("{field}.net"))?;
                let outputs = match (kind, mixture) {
                    (NetKind::Mse, None) => coords,
                    (NetKind::Mdn, Some(m)) => {
                        let (k, d, sigma_min) = match m {
                            Mixture::Full(f) => (f.k, f.d, f.sigma_min),
                            Mixture::Diagonal(g) => (g.k, g.d, g.sigma_min),
                        };
                        if !(1..=MAX_COMPONENTS).contains(&k) || d != coords {
                            return field_err(
                                format!("{field}.mixture"),
                                format!(
                                    "needs 1 to {MAX_COMPONENTS} components over {coords} coordinates, got {k} over {d}"
                                ),
                            );
                        }
                        if !(sigma_min.is_finite() && f64::from(sigma_min) >= MIN_SPREAD && sigma_min <= 1.0) {
                            return field_err(
                                format!("{field}.mixture"),
                                format!("spread floor must be in [{MIN_SPREAD:e}, 1], got {sigma_min:e}"),
                            );
                        }
                        if let Mixture::Full(f) = m
                            && !(f.sigma_max.is_finite()
                                && f.sigma_max > sigma_min
                                && f64::from(f.sigma_max) <= MAX_SPREAD)
                        {
                            return field_err(
                                format!("{field}.mixture"),
                                format!(
                                    "spread cap must exceed the floor and be at most {MAX_SPREAD:e}, got {:e}",
                                    f.sigma_max
                                ),
                            );
                        }
                        m.outputs()
                    }
                    (NetKind::Mse, Some(_)) => {
                        return field_err(format!("{field}.mixture"), "a squared-error net has no mixture");
                    }
                    _ => {
                        return field_err(format!("{field}.mixture"), "a mixture density network needs one");
                    }
                };
                if net.inputs() != 2 || net.outputs() != outputs {
                    return field_err(
                        format!("{field}.net"),
                        format!("is {}->{}, expected 2->{outputs}", net.inputs(), net.outputs()),
                    );
                }
            }
        }
        let good = |center: f64, scale: f64| {
            center.is_finite() && center.abs() <= MAX_SPREAD && (MIN_SPREAD..=MAX_SPREAD).contains(&scale)
        };
        let range = format!("centres within ±{MAX_SPREAD:e} and spreads from {MIN_SPREAD:e} to {MAX_SPREAD:e}");
        if !self.input.iter().all(|&(c, s)| good(f64::from(c), f64::from(s))) {
            return field_err(format!("{field}.input"), format!("needs {range}"));
        }
        if self.output.len() != coords || !self.output.iter().all(|&(c, s)| good(c, s)) {
            return field_err(format!("{field}.output"), format!("needs {coords} of them, {range}"));
        }
        Ok(())
    }

    /// Coordinates per answer.
    pub fn coords(&self) -> usize {
        self.output.len()
    }

    /// Weights and biases of the net.
    pub fn parameter_count(&self) -> usize {
        match &self.body {
            Body::Mlp { net, .. } => net.parameter_count(),
            Body::Flow { flow } => {
                flow.cond.parameter_count() + flow.blocks.iter().map(|b| b.net.parameter_count()).sum::<usize>()
            }
        }
    }

    /// The standardised target.
    fn encoded(&self, target: Point2) -> [f32; 2] {
        let mut inp = [0f32; 2];
        encode_input(&self.input, target, &mut inp);
        inp
    }

    /// Standardised coordinates (`coords` values per sample) to the coordinates' own units, in
    /// place.
    fn unscale(&self, xs: &mut [f64]) {
        for x in xs.chunks_exact_mut(self.coords()) {
            for (v, &(center, scale)) in x.iter_mut().zip(&self.output) {
                *v = center + scale * *v;
            }
        }
    }

    /// The net's one answer, written into `x`: the squared-error net's output, an MDN's mixture
    /// mean, a flow's image of `z = 0` (the centre of its base distribution).
    pub fn answer(&self, target: Point2, x: &mut [f64]) {
        let d = self.coords();
        let y = self.encoded(target);
        match &self.body {
            Body::Mlp { net, mixture: None } => {
                let out = net.forward_one(&y);
                for (i, v) in x.iter_mut().enumerate().take(d) {
                    *v = self.output[i].0 + self.output[i].1 * f64::from(out[i]);
                }
            }
            Body::Mlp { net, mixture: Some(m) } => {
                x.iter_mut().for_each(|v| *v = 0.0);
                for c in self.decode(*m, &net.forward_one(&y)) {
                    for (i, v) in x.iter_mut().enumerate().take(d) {
                        *v += c.weight * c.mean[i];
                    }
                }
            }
            Body::Flow { flow } => {
                let mut z = vec![0.0; d];
                flow.condition(&y).inverse(&mut z, &mut FlowScratch::default());
                self.unscale(&mut z);
                x[..d].copy_from_slice(&z);
            }
        }
    }

    /// The mixture for `target` in the coordinates' own units (one component of weight 1 and
    /// zero spread for the squared-error net); `None` for a flow, which has no components.
    pub fn mixture_for(&self, target: Point2) -> Option<Vec<Component>> {
        match &self.body {
            Body::Mlp { net, mixture: Some(m) } => Some(self.decode(*m, &net.forward_one(&self.encoded(target)))),
            Body::Mlp { mixture: None, .. } => {
                let mut mean = [0.0; MAX_COORDS];
                self.answer(target, &mut mean);
                Some(vec![Component { weight: 1.0, mean, factor: [[0.0; MAX_COORDS]; MAX_COORDS] }])
            }
            Body::Flow { .. } => None,
        }
    }

    /// Draws for `target`, one at a time (the hybrid's seeds).
    pub fn drawer(&self, target: Point2) -> Drawer<'_> {
        match &self.body {
            Body::Flow { flow } => Drawer::Flow {
                flow: Box::new(flow.condition(&self.encoded(target))),
                net: self,
                pool: Vec::new(),
                scratch: FlowScratch::default(),
            },
            Body::Mlp { .. } => Drawer::Mixture(self.mixture_for(target).expect("an MLP has a mixture")),
        }
    }

    fn decode(&self, mixture: Mixture, out: &DVector<f32>) -> Vec<Component> {
        let d = self.coords();
        let unscale = |weight: f32, mean: &[f32], std_factor: &[f64]| {
            let mut c = Component {
                weight: f64::from(weight),
                mean: [0.0; MAX_COORDS],
                factor: [[0.0; MAX_COORDS]; MAX_COORDS],
            };
            for (i, &(center, scale)) in self.output.iter().enumerate() {
                c.mean[i] = center + scale * f64::from(mean[i]);
                for j in 0..d {
                    c.factor[i][j] = scale * std_factor[i * d + j];
                }
            }
            c
        };
        match mixture {
            Mixture::Diagonal(m) => m
                .components(out.column(0))
                .into_iter()
                .map(|c| {
                    let mut f = vec![0.0; d * d];
                    for i in 0..d {
                        f[i * d + i] = f64::from(c.sigma[i]);
                    }
                    unscale(c.weight, &c.mean, &f)
                })
                .collect(),
            Mixture::Full(m) => m
                .components(out.as_slice())
                .into_iter()
                .map(|c| {
                    let f: Vec<f64> = c.l.iter().map(|&v| f64::from(v)).collect();
                    unscale(c.weight, &c.mean, &f)
                })
                .collect(),
        }
    }

    /// `n` samples for `target` appended to `out` (`coords` values each): draws of the mixture
    /// for an MDN, of the flow for a flow (one batch through its kernels), `n` copies of the one
    /// answer for the squared-error net.
    pub fn sample<R: Rng + ?Sized>(&self, target: Point2, n: usize, rng: &mut R, out: &mut Vec<f64>) {
        match &self.body {
            Body::Flow { flow } => {
                let start = out.len();
                flow.sample(&self.encoded(target), n, rng, out);
                self.unscale(&mut out[start..]);
            }
            Body::Mlp { .. } => {
                let comps = self.mixture_for(target).expect("an MLP has a mixture");
                sample_mixture(&comps, self.coords(), n, rng, out);
            }
        }
    }
}

/// One minibatch of prior pairs: standardised targets into `xb`, standardised coordinates into
/// `yb`, one sample per column (`x` is a buffer of [`MAX_COORDS`]).
fn fill_batch(
    arm: &Arm,
    input: &[(f32, f32); 2],
    output: &[(f64, f64)],
    rng: &mut ChaCha8Rng,
    x: &mut [f64; MAX_COORDS],
    xb: &mut DMatrix<f32>,
    yb: &mut DMatrix<f32>,
) {
    let d = output.len();
    for j in 0..xb.ncols() {
        arm.prior.sample(rng, &mut x[..d]);
        encode_input(input, arm.chain.tip(&x[..d]), xb.column_mut(j).as_mut_slice());
        for (i, v) in yb.column_mut(j).iter_mut().enumerate() {
            *v = ((x[i] - output[i].0) / output[i].1) as f32;
        }
    }
}

/// `n` draws of a mixture of diagonal Gaussians appended to `out`.
pub fn sample_mixture<R: Rng + ?Sized>(comps: &[Component], d: usize, n: usize, rng: &mut R, out: &mut Vec<f64>) {
    let start = out.len();
    out.resize(start + n * d, 0.0);
    for x in out[start..].chunks_exact_mut(d) {
        draw(comps, rng, x);
    }
}

/// One draw of a mixture of diagonal Gaussians into `x` (`x.len()` coordinates).
#[inline]
pub fn draw<R: Rng + ?Sized>(comps: &[Component], rng: &mut R, x: &mut [f64]) {
    let total: f64 = comps.iter().map(|c| c.weight).sum();
    let mut u = rng.random::<f64>() * total;
    let c = comps
        .iter()
        .find(|c| {
            u -= c.weight;
            u < 0.0
        })
        .unwrap_or(&comps[comps.len() - 1]);
    let d = x.len();
    let mut eps = [0.0; MAX_COORDS];
    for e in &mut eps[..d] {
        *e = StandardNormal.sample(rng);
    }
    for (i, v) in x.iter_mut().enumerate() {
        let row = &c.factor[i];
        *v = c.mean[i] + (0..d).map(|j| row[j] * eps[j]).sum::<f64>();
    }
}

/// `y` standardised by `scaling` (per axis: centre, spread) into `out[..2]`.
fn encode_input(scaling: &[(f32, f32); 2], y: Point2, out: &mut [f32]) {
    out[0] = (y.x as f32 - scaling[0].0) / scaling[0].1;
    out[1] = (y.y as f32 - scaling[1].0) / scaling[1].1;
}

/// The mean and spread of the tip under the prior (from 4,096 draws), per axis.
fn input_scaling(arm: &Arm, rng: &mut ChaCha8Rng) -> [(f32, f32); 2] {
    let d = arm.coords();
    let mut x = [0.0; MAX_COORDS];
    let (mut s, mut s2) = ([0.0f64; 2], [0.0f64; 2]);
    let n = 4096;
    for _ in 0..n {
        arm.prior.sample(rng, &mut x[..d]);
        let t = arm.chain.tip(&x[..d]);
        for (k, v) in [t.x, t.y].into_iter().enumerate() {
            s[k] += v;
            s2[k] += v * v;
        }
    }
    [0, 1].map(|k| {
        let mean = s[k] / n as f64;
        let sd = (s2[k] / n as f64 - mean * mean).max(0.0).sqrt().max(1e-6);
        (mean as f32, sd as f32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::ArmKind;
    use crate::learned::MAX_STEPS;
    use crate::learned::train::{DIVERGED_LOSS, MAX_ROLLBACKS};
    use rand::SeedableRng;

    #[test]
    fn training_lowers_the_loss_and_stops_when_asked() {
        let arm = ArmKind::Rail3.arm();
        let cfg = NetConfig { hidden: 32, depth: 2, components: 4, steps: 400, batch: 128, ..NetConfig::default() };
        let mut losses = Vec::new();
        let net = ChainNet::train(&arm, NetKind::Mdn, &cfg, |_, l| {
            losses.push(l);
            true
        })
        .unwrap();
        let first: f32 = losses[..20].iter().sum::<f32>() / 20.0;
        let last: f32 = losses[losses.len() - 20..].iter().sum::<f32>() / 20.0;
        assert!(last < first - 0.5, "{first} -> {last}");
        let comps = net.mixture_for(Point2::new(1.5, 0.0)).unwrap();
        assert_eq!(comps.len(), 4);
        assert!((comps.iter().map(|c| c.weight).sum::<f64>() - 1.0).abs() < 1e-5);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut out = Vec::new();
        net.sample(Point2::new(1.5, 0.0), 100, &mut rng, &mut out);
        assert_eq!(out.len(), 400);
        let r = ChainNet::train(&arm, NetKind::Mse, &cfg, |step, _| step < 10);
        assert_eq!(r.unwrap_err(), TrainError::Cancelled { step: 10, steps: 400 });
    }

    #[test]
    fn a_run_away_rate_is_rolled_back_as_the_two_link_trainers_are() {
        // A run-away learning rate: the chain nets train on the two-link heads' fitter, so its
        // divergence guard rolls them back the same way and the run reports it (a guard that
        // only failed the run, or none, would fail here). Whether one seed blows up depends on
        // rounding (the SIMD level), so several seeds run: at least one must be rolled back, and
        // every roll-back halves the rate and goes back to an earlier checkpoint.
        let arm = ArmKind::Rail3.arm();
        let mut rolled_back = 0;
        for seed in 0..8 {
            let cfg = NetConfig {
                hidden: 32,
                depth: 2,
                components: 4,
                steps: 2000,
                batch: 128,
                lr: 0.999,
                seed,
                ..NetConfig::default()
            };
            let (_, rollbacks) = match ChainNet::train_watched(&arm, NetKind::Mdn, &cfg, |_, _, _| true) {
                Ok(trained) => trained,
                // The guard gave up: the same error as the two-link trainer's.
                Err(e) => {
                    assert!(matches!(e, TrainError::Diverged { rollbacks: MAX_ROLLBACKS, .. }), "{e:?}");
                    rolled_back += 1;
                    continue;
                }
            };
            rolled_back += usize::from(!rollbacks.is_empty());
            let mut lr = cfg.lr;
            for r in &rollbacks {
                lr *= 0.5;
                assert!(r.lr == lr && r.to_step < r.step && (r.loss.is_nan() || r.loss > DIVERGED_LOSS), "{r:?}");
            }
        }
        assert!(rolled_back > 0, "no seed was rolled back at learning rate 0.999");
    }

    #[test]
    fn bad_settings_are_refused() {
        for cfg in [
            NetConfig { steps: 0, ..NetConfig::default() },
            NetConfig { components: 0, ..NetConfig::default() },
            NetConfig { lr: f32::NAN, ..NetConfig::default() },
            NetConfig { hidden: 4096, depth: 8, steps: MAX_STEPS, ..NetConfig::default() },
        ] {
            assert!(cfg.validate(NetKind::Mdn, 4).is_err(), "{cfg:?}");
        }
    }
}
