//! Networks from a target `y` to a chain's coordinates `x`, trained on pairs `(f(x), x)` with `x`
//! drawn from the arm's prior (a fresh minibatch every step, so there is no training set to
//! overfit): a squared-error MLP (one answer: at best the posterior mean `E[x | y]`) and a
//! mixture density network (a mixture of Gaussians over `x`, full-covariance by default, see
//! [`FullMdn`], sampled).
//!
//! Inputs are standardised by the mean and spread of `f(x)` under the prior, outputs by the
//! prior's centre and scale per coordinate ([`super::Prior::center`], [`super::Prior::scale`]), so every
//! arm trains with the same settings. The nets are the crate's own [`Mlp`] under [`Mse`],
//! [`MdnNll`] or [`FullMdn`], trained by the same [`Fitter`] as the two-link heads (Adam, the
//! learning rate decaying along a cosine to 5 % of its peak, the same limits and divergence check).

use super::arm::MAX_COORDS;
use super::arms::ChainArm;
use crate::kinematics::Point2;
use crate::learned::limits::MAX_COMPONENTS;
use crate::learned::train::{Fit, Fitter, start_mixture};
use crate::learned::{FieldError, TrainError};
use crate::nn::{Activation, FullMdn, Loss, MdnNll, MixtureLayout, Mlp, Mse};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetKind {
    /// Squared error: one answer per target.
    Mse,
    /// Mixture density network.
    Mdn,
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
        }
    }
}

impl NetConfig {
    /// The network's shape and the schedule of a `kind` run on an arm with `coords` coordinates.
    fn fit(&self, kind: NetKind, coords: usize) -> Fit {
        let outputs = match kind {
            NetKind::Mse => coords,
            NetKind::Mdn => self.mixture(coords).outputs(),
        };
        Fit {
            inputs: 2,
            outputs,
            hidden: self.hidden,
            depth: self.depth,
            steps: self.steps,
            batch: self.batch,
            lr: self.lr,
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

    /// Estimated training work, FLOP ([`Fit::work_estimate`]).
    pub fn work_estimate(&self, kind: NetKind, coords: usize) -> f64 {
        self.fit(kind, coords).work_estimate()
    }

    /// Estimated size of a `kind` net's part of a model file, bytes ([`Fit::model_file_estimate`]).
    pub fn model_file_estimate(&self, kind: NetKind, coords: usize) -> f64 {
        self.fit(kind, coords).model_file_estimate()
    }

    /// Checks every field against the lab's training limits ([`Fit::check_settings`],
    /// [`Fit::check_budget`]); the spread floor is in prior scales, at most 1.
    pub fn validate(&self, kind: NetKind, coords: usize) -> Result<(), TrainError> {
        let fit = self.fit(kind, coords);
        fit.check_settings(Some(self.components), self.sigma_min, 1.0)?;
        fit.check_budget(0.0)
    }
}

/// A trained network from targets to a chain's coordinates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainNet {
    /// Which network.
    pub kind: NetKind,
    /// The network.
    pub net: Mlp,
    /// The mixture layout (MDN only).
    pub mixture: Option<Mixture>,
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

impl ChainNet {
    /// Trains a `kind` network for `arm`; `progress(step, loss)` is called after each step and
    /// stops the run (with [`TrainError::Cancelled`]) by returning false.
    pub fn train(
        arm: &ChainArm,
        kind: NetKind,
        cfg: &NetConfig,
        mut progress: impl FnMut(usize, f32) -> bool,
    ) -> Result<Self, TrainError> {
        Self::train_watched(arm, kind, cfg, |step, loss, _| progress(step, loss))
    }

    /// [`ChainNet::train`] with a view of the net after each step: `progress(step, loss,
    /// snapshot)`, where `snapshot()` builds the net as it stands (a copy, so call it only when
    /// a snapshot is wanted: the app takes one every few hundred steps to show the fan sharpen).
    pub fn train_watched(
        arm: &ChainArm,
        kind: NetKind,
        cfg: &NetConfig,
        mut progress: impl FnMut(usize, f32, &dyn Fn() -> ChainNet) -> bool,
    ) -> Result<Self, TrainError> {
        let d = arm.coords();
        cfg.validate(kind, d)?;
        let mut rng = rng(cfg.seed, Stream::ChainTraining, 0);
        let input = input_scaling(arm, &mut rng);
        let output: Vec<(f64, f64)> = (0..d).map(|i| (arm.prior.center(i), arm.prior.scale(i))).collect();
        let fit = cfg.fit(kind, d);
        let mut net = Mlp::new(&fit.layer_sizes(), Activation::Tanh, &mut rng);
        let mixture = (kind == NetKind::Mdn).then(|| cfg.mixture(d));
        // Each component's mean at a prior draw (in prior scales) and its spread at half the
        // prior's: the components start apart, so none has to break a symmetry.
        if let Some(m) = mixture {
            start_mixture(&mut net, m.layout(), |_, _| StandardNormal.sample(&mut rng), 0.5f32.ln());
        }
        let loss = mixture.map_or_else(|| Box::new(Mse) as Box<dyn Loss>, Mixture::loss);
        let mut fitter = Fitter::new(fit, &net, loss, d);
        let mut x = [0.0; MAX_COORDS];
        let fill = |xb: &mut DMatrix<f32>, yb: &mut DMatrix<f32>| {
            for j in 0..xb.ncols() {
                arm.prior.sample(&mut rng, &mut x[..d]);
                encode_input(&input, arm.chain.tip(&x[..d]), xb.column_mut(j).as_mut_slice());
                for (i, v) in yb.column_mut(j).iter_mut().enumerate() {
                    *v = ((x[i] - output[i].0) / output[i].1) as f32;
                }
            }
        };
        fitter.run_watched(&mut net, fill, |step, loss, net| {
            let snapshot = || Self { kind, net: net.clone(), mixture, input, output: output.clone() };
            progress(step, loss, &snapshot)
        })?;
        Ok(Self { kind, net, mixture, input, output })
    }

    /// Checks a net read from a file for `coords` coordinates, naming the field under `field`
    /// (`mse`, `mdn`): its kind, the network's layers ([`crate::learned::model`]'s checks), its
    /// inputs and outputs, the mixture layout (an MDN only; components in 1..=32, a spread floor in
    /// (0, 1]) and the scalings (finite, positive spreads).
    pub fn validate(&self, kind: NetKind, coords: usize, field: &str) -> Result<(), FieldError> {
        use crate::learned::model::{field_err, validate_layers};
        if self.kind != kind {
            return field_err(format!("{field}.kind"), format!("is {:?}, expected {kind:?}", self.kind));
        }
        validate_layers(&self.net, &format!("{field}.net"))?;
        let outputs = match (kind, self.mixture) {
            (NetKind::Mse, None) => coords,
            (NetKind::Mdn, Some(m)) => {
                let (k, d, sigma_min) = match m {
                    Mixture::Full(f) => (f.k, f.d, f.sigma_min),
                    Mixture::Diagonal(g) => (g.k, g.d, g.sigma_min),
                };
                if !(1..=MAX_COMPONENTS).contains(&k) || d != coords {
                    return field_err(
                        format!("{field}.mixture"),
                        format!("needs 1 to {MAX_COMPONENTS} components over {coords} coordinates, got {k} over {d}"),
                    );
                }
                if !(sigma_min.is_finite() && sigma_min > 0.0 && sigma_min <= 1.0) {
                    return field_err(
                        format!("{field}.mixture"),
                        format!("spread floor must be in (0, 1], got {sigma_min}"),
                    );
                }
                if let Mixture::Full(f) = m
                    && !(f.sigma_max.is_finite() && f.sigma_max > sigma_min)
                {
                    return field_err(
                        format!("{field}.mixture"),
                        format!("spread cap must exceed the floor, got {}", f.sigma_max),
                    );
                }
                m.outputs()
            }
            (NetKind::Mse, Some(_)) => {
                return field_err(format!("{field}.mixture"), "a squared-error net has no mixture");
            }
            (NetKind::Mdn, None) => {
                return field_err(format!("{field}.mixture"), "a mixture density network needs one");
            }
        };
        if self.net.inputs() != 2 || self.net.outputs() != outputs {
            return field_err(
                format!("{field}.net"),
                format!("is {}->{}, expected 2->{outputs}", self.net.inputs(), self.net.outputs()),
            );
        }
        let good = |center: f64, scale: f64| center.is_finite() && scale.is_finite() && scale > 0.0;
        if !self.input.iter().all(|&(c, s)| good(f64::from(c), f64::from(s))) {
            return field_err(format!("{field}.input"), "needs finite centres and spreads > 0");
        }
        if self.output.len() != coords || !self.output.iter().all(|&(c, s)| good(c, s)) {
            return field_err(format!("{field}.output"), format!("needs {coords} finite centres and spreads > 0"));
        }
        Ok(())
    }

    /// Coordinates per answer.
    pub fn coords(&self) -> usize {
        self.output.len()
    }

    /// The raw network output for `target`.
    fn raw(&self, target: Point2) -> DVector<f32> {
        let mut inp = [0f32; 2];
        encode_input(&self.input, target, &mut inp);
        self.net.forward_one(&inp)
    }

    /// The squared-error net's answer (for an MDN: the mixture's mean), written into `x`.
    pub fn answer(&self, target: Point2, x: &mut [f64]) {
        let out = self.raw(target);
        match self.mixture {
            None => {
                for (i, v) in x.iter_mut().enumerate().take(self.coords()) {
                    *v = self.output[i].0 + self.output[i].1 * f64::from(out[i]);
                }
            }
            Some(_) => {
                x.iter_mut().for_each(|v| *v = 0.0);
                for c in self.decode(&out) {
                    for (i, v) in x.iter_mut().enumerate().take(self.coords()) {
                        *v += c.weight * c.mean[i];
                    }
                }
            }
        }
    }

    /// The mixture for `target` in the coordinates' own units (one component of weight 1 and
    /// zero spread for the squared-error net).
    pub fn mixture_for(&self, target: Point2) -> Vec<Component> {
        let out = self.raw(target);
        match self.mixture {
            Some(_) => self.decode(&out),
            None => {
                let mut mean = [0.0; MAX_COORDS];
                self.answer(target, &mut mean);
                vec![Component { weight: 1.0, mean, factor: [[0.0; MAX_COORDS]; MAX_COORDS] }]
            }
        }
    }

    fn decode(&self, out: &DVector<f32>) -> Vec<Component> {
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
        match self.mixture.expect("an MDN") {
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
    /// for an MDN, `n` copies of the one answer for the squared-error net.
    pub fn sample<R: Rng + ?Sized>(&self, target: Point2, n: usize, rng: &mut R, out: &mut Vec<f64>) {
        let comps = self.mixture_for(target);
        sample_mixture(&comps, self.coords(), n, rng, out);
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
fn input_scaling(arm: &ChainArm, rng: &mut ChaCha8Rng) -> [(f32, f32); 2] {
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
    use crate::chain::ArmKind;
    use crate::learned::{MAX_STEPS, TrainConfig, Trainer};
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
        let comps = net.mixture_for(Point2::new(1.5, 0.0));
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
    fn a_diverging_run_stops_with_the_two_link_trainers_error() {
        // A run-away learning rate: the chain nets train on the two-link heads' fitter, so they
        // stop on the same divergence check with the same error (and message). Whether one seed
        // blows up depends on rounding (the SIMD level), so several seeds run: at least one must
        // diverge, and every one that stops must stop exactly so. A fitter without the check
        // lets every seed run to its end.
        let arm = ArmKind::Rail3.arm();
        let two_link = TrainConfig { steps: 2000, lr: 0.999, data_size: 512, ..TrainConfig::default() };
        let two_link = Trainer::new(two_link).unwrap().run_checked(|_, _| true).unwrap_err();
        assert!(matches!(two_link, TrainError::Diverged { .. }), "{two_link:?}");
        let mut diverged = 0;
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
            let mut chain_steps = 0;
            let Err(chain) = ChainNet::train(&arm, NetKind::Mdn, &cfg, |step, _| {
                chain_steps = step;
                true
            }) else {
                continue;
            };
            diverged += 1;
            assert!(matches!(chain, TrainError::Diverged { step, .. } if step == chain_steps + 1), "{chain:?}");
            let (c, t) = (chain.to_string(), two_link.to_string());
            assert_eq!(c.split(" at step").next(), t.split(" at step").next());
            assert_eq!(c.split(')').nth(1), t.split(')').nth(1), "{c} / {t}");
        }
        assert!(diverged > 0, "no seed diverged at learning rate 0.999");
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
