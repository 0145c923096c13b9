//! The training loop: minibatches from a [`Dataset`], a loss per head, Adam.
//!
//! [`Trainer::step`] does one minibatch update, so callers decide how much to train at a time:
//! the command line runs to completion with a progress bar, the app trains on a background thread.

use super::data::{AngleEncoding, DataConfig, Dataset};
use super::head::{HeadKind, Output, TrainedOn};
use super::model::LearnedModel;
use crate::kinematics::{ElbowMode, Mismatch, RealArm, Region, SampleMode, TwoLinkArm};
use crate::nn::{Activation, Adam, Gradients, Loss, MdnNll, Mlp, Mse, Scratch};
use nalgebra::DMatrix;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Everything that defines a training run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Which head to train.
    pub head: HeadKind,
    /// Nominal arm.
    pub arm: TwoLinkArm,
    /// Workspace region of the training targets.
    pub region: Region,
    /// How targets spread over the region.
    pub sampling: SampleMode,
    /// Number of training targets.
    pub data_size: usize,
    /// Minibatch updates.
    pub steps: usize,
    /// Samples per minibatch.
    pub batch: usize,
    /// Width of each hidden layer.
    pub hidden: usize,
    /// Number of hidden layers.
    pub depth: usize,
    /// Hidden activation.
    pub activation: Activation,
    /// MDN components.
    pub components: usize,
    /// MDN standard-deviation floor (in encoded units).
    pub sigma_min: f32,
    /// Peak learning rate; it decays along a cosine to 5% of this by the last step.
    pub lr: f32,
    /// Output encoding of the angle heads.
    pub encoding: AngleEncoding,
    /// Seed of data, initialisation and batching.
    pub seed: u64,
    /// Heads that fit the real arm (the residual hybrid): the real arm to fit corrections to.
    pub real: RealArm,
}

impl Default for TrainConfig {
    fn default() -> Self {
        let arm = TwoLinkArm::default();
        Self {
            head: HeadKind::Mdn,
            arm,
            region: Region::Annulus,
            sampling: SampleMode::UniformArea,
            data_size: 20_000,
            steps: 6_000,
            batch: 256,
            hidden: 64,
            depth: 2,
            activation: Activation::Tanh,
            components: 2,
            sigma_min: 0.01,
            lr: 3e-3,
            encoding: AngleEncoding::Circular,
            seed: 0,
            real: Mismatch::DEFAULT.real_arm(&arm),
        }
    }
}

/// Why a training configuration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrainError {
    /// A size or rate was out of range.
    #[error("{0}")]
    Invalid(String),
}

impl TrainConfig {
    /// Checks every field, with a message naming the first bad one.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |m: String| Err(TrainError::Invalid(m));
        if self.batch == 0 || self.batch > 65_536 {
            return bad(format!("batch must be in 1..=65536, got {}", self.batch));
        }
        if self.hidden == 0 || self.hidden > 4096 {
            return bad(format!("hidden width must be in 1..=4096, got {}", self.hidden));
        }
        if self.depth == 0 || self.depth > 8 {
            return bad(format!("depth must be in 1..=8, got {}", self.depth));
        }
        if self.head.spec().output == Output::Mixture && (self.components == 0 || self.components > 32) {
            return bad(format!("components must be in 1..=32, got {}", self.components));
        }
        if !(self.lr.is_finite() && self.lr > 0.0 && self.lr < 1.0) {
            return bad(format!("learning rate must be in (0, 1), got {}", self.lr));
        }
        if !(self.sigma_min.is_finite() && self.sigma_min > 0.0) {
            return bad(format!("sigma floor must be > 0, got {}", self.sigma_min));
        }
        if self.data_size < 16 || self.data_size > 10_000_000 {
            return bad(format!("data size must be in 16..=10000000, got {}", self.data_size));
        }
        Ok(())
    }

    fn data_config(&self) -> DataConfig {
        DataConfig {
            arm: self.arm,
            region: self.region,
            sampling: self.sampling,
            size: self.data_size,
            seed: self.seed,
        }
    }

    /// Layer widths of the network this configuration builds.
    fn layer_sizes(&self, inputs: usize, outputs: usize) -> Vec<usize> {
        let mut sizes = vec![inputs];
        sizes.extend(std::iter::repeat_n(self.hidden, self.depth));
        sizes.push(outputs);
        sizes
    }
}

/// Starts the mixture with its components' elbow means spread from elbow-up to elbow-down (and
/// small output weights, so the biases dominate at first). Identical components would otherwise
/// have to break their symmetry by chance, and with some seeds one broad component ends up
/// straddling both branches: the averaging trap again, inside the mixture.
fn spread_components(net: &mut Mlp, m: MdnNll) {
    let last = net.layers.last_mut().expect("at least one layer");
    last.w *= 0.1;
    let elbow_dim = m.d - 1; // the elbow is the last value of every encoding
    for i in 0..m.k {
        let t = if m.k == 1 { 0.0 } else { i as f32 / (m.k - 1) as f32 * 2.0 - 1.0 };
        last.b[m.k + i * m.d + elbow_dim] = 0.5 * t;
        for j in 0..m.d {
            last.b[m.k + m.k * m.d + i * m.d + j] = -1.0; // sigma about 0.37 to start
        }
    }
}

/// An in-progress training run.
pub struct Trainer {
    cfg: TrainConfig,
    model: LearnedModel,
    loss: Box<dyn Loss>,
    adam: Adam,
    data: Dataset,
    rng: ChaCha8Rng,
    scratch: Scratch,
    grads: Gradients,
    x: DMatrix<f32>,
    y: DMatrix<f32>,
    d_out: DMatrix<f32>,
    /// Network inputs and training targets of every (sample, mode), computed once.
    inputs: Vec<[f32; 4]>,
    targets: Vec<[f32; 3]>,
    order: Vec<usize>,
    cursor: usize,
    step: usize,
    /// Loss of every step so far.
    pub history: Vec<f32>,
}

impl Trainer {
    /// Builds data, network and optimizer for `cfg`.
    pub fn new(cfg: TrainConfig) -> Result<Self, TrainError> {
        cfg.validate()?;
        let spec = cfg.head.spec();
        let data = match spec.trained_on {
            TrainedOn::BothBranches => Dataset::both_branches(&cfg.data_config()),
            TrainedOn::Corrections => Dataset::residuals(&cfg.data_config(), &cfg.real),
        };
        if data.len() < cfg.batch.min(16) {
            return Err(TrainError::Invalid(format!(
                "only {} usable targets in region {} with these joint limits",
                data.len(),
                cfg.region
            )));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x9e37_79b9_7f4a_7c15);
        let mdn = cfg.head.mixture(cfg.encoding, cfg.components, cfg.sigma_min);
        let (n_in, outputs) = (cfg.head.input_dims(), cfg.head.output_dims(cfg.encoding, mdn));
        let y_dims = cfg.head.target_dims(cfg.encoding);
        let mut net = Mlp::new(&cfg.layer_sizes(n_in, outputs), cfg.activation, &mut rng);
        if let Some(m) = mdn {
            spread_components(&mut net, m);
        }
        let real = cfg.head.fits_real_arm().then_some(cfg.real);
        let model = LearnedModel::new(cfg.head, net, cfg.arm, cfg.region, cfg.encoding, mdn, real);
        let loss: Box<dyn Loss> = match mdn {
            Some(m) => Box::new(m),
            None => Box::new(Mse),
        };
        let adam = Adam::new(&model.net, cfg.lr);
        let grads = model.net.zero_gradients();
        let order: Vec<usize> = (0..data.len()).collect();
        let mut inputs = Vec::with_capacity(2 * data.len());
        let mut targets = Vec::with_capacity(2 * data.len());
        for sample in &data.samples {
            for mode in ElbowMode::BOTH {
                let mut x = [0f32; 4];
                model.features(sample.target, mode, &mut x);
                inputs.push(x);
                let answer = sample.answer(mode);
                let mut y = [0f32; 3];
                match spec.output {
                    Output::Correction => {
                        y[0] = answer.shoulder as f32 * spec.output_scale;
                        y[1] = answer.elbow as f32 * spec.output_scale;
                    }
                    Output::Pose | Output::Mixture => cfg.encoding.encode(answer, &mut y),
                }
                targets.push(y);
            }
        }
        Ok(Self {
            inputs,
            targets,
            x: DMatrix::zeros(n_in, cfg.batch),
            y: DMatrix::zeros(y_dims, cfg.batch),
            d_out: DMatrix::zeros(outputs, cfg.batch),
            cfg,
            model,
            loss,
            adam,
            data,
            rng,
            scratch: Scratch::default(),
            grads,
            order,
            cursor: usize::MAX,
            step: 0,
            history: Vec::new(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// The model as trained so far.
    pub fn model(&self) -> &LearnedModel {
        &self.model
    }

    /// Steps done.
    pub fn steps_done(&self) -> usize {
        self.step
    }

    /// Samples in the training set.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// Changes the peak learning rate from the next step on (ignored unless in `(0, 1)`).
    pub fn set_lr(&mut self, lr: f32) {
        if lr.is_finite() && lr > 0.0 && lr < 1.0 {
            self.cfg.lr = lr;
        }
    }

    /// Fills the minibatch buffers: a fresh shuffle each epoch, a random branch per sample.
    fn fill_batch(&mut self) {
        let (x_dims, y_dims) = (self.x.nrows(), self.y.nrows());
        for j in 0..self.cfg.batch {
            if self.cursor >= self.order.len() {
                // Fisher-Yates shuffle at the start of every epoch.
                for i in (1..self.order.len()).rev() {
                    let k = self.rng.random_range(0..=i);
                    self.order.swap(i, k);
                }
                self.cursor = 0;
            }
            let row = 2 * self.order[self.cursor] + usize::from(self.rng.random::<bool>());
            self.cursor += 1;
            // Element loops: a 3- or 4-value copy_from_slice would become a memcpy call each.
            let x = &mut self.x.as_mut_slice()[j * x_dims..(j + 1) * x_dims];
            x.iter_mut().zip(&self.inputs[row]).for_each(|(d, &v)| *d = v);
            let y = &mut self.y.as_mut_slice()[j * y_dims..(j + 1) * y_dims];
            y.iter_mut().zip(&self.targets[row]).for_each(|(d, &v)| *d = v);
        }
    }

    /// The learning rate of the current step (cosine decay to 5%).
    pub fn current_lr(&self) -> f32 {
        let t = (self.step as f32 / self.cfg.steps.max(1) as f32).min(1.0);
        let floor = 0.05;
        self.cfg.lr * (floor + (1.0 - floor) * 0.5 * (1.0 + (std::f32::consts::PI * t).cos()))
    }

    /// One minibatch update; returns its loss.
    pub fn step(&mut self) -> f32 {
        self.fill_batch();
        self.adam.lr = self.current_lr();
        let out = self.model.net.forward(&self.x, &mut self.scratch);
        let loss = self.loss.loss_and_grad(out, &self.y, &mut self.d_out);
        self.model.net.backward(&self.x, &self.d_out, &mut self.scratch, &mut self.grads);
        self.adam.step(&mut self.model.net, &self.grads);
        self.step += 1;
        self.history.push(loss);
        loss
    }

    /// Runs the remaining configured steps, calling `progress(step, loss)` after each.
    pub fn run(&mut self, mut progress: impl FnMut(usize, f32)) {
        while self.step < self.cfg.steps {
            let loss = self.step();
            progress(self.step, loss);
        }
    }

    /// Consumes the trainer, returning the model.
    pub fn into_model(self) -> LearnedModel {
        self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learned::eval::{evaluate, held_out_targets};

    fn quick(head: HeadKind) -> TrainConfig {
        TrainConfig { head, steps: 1500, data_size: 4000, hidden: 32, ..TrainConfig::default() }
    }

    #[test]
    fn rejects_bad_configs() {
        for cfg in [
            TrainConfig { batch: 0, ..TrainConfig::default() },
            TrainConfig { hidden: 0, ..TrainConfig::default() },
            TrainConfig { lr: f32::NAN, ..TrainConfig::default() },
            TrainConfig { components: 0, ..TrainConfig::default() },
        ] {
            assert!(Trainer::new(cfg).is_err());
        }
    }

    #[test]
    fn loss_falls_for_every_head() {
        for head in HeadKind::ALL {
            let mut t = Trainer::new(TrainConfig { steps: 300, ..quick(head) }).unwrap();
            let first: f32 = (0..20).map(|_| t.step()).sum::<f32>() / 20.0;
            t.run(|_, _| {});
            let last: f32 = t.history[t.history.len() - 20..].iter().sum::<f32>() / 20.0;
            assert!(last < first, "{head}: {first} -> {last}");
        }
    }

    #[test]
    fn mse_falls_into_the_averaging_trap_and_mdn_escapes_it() {
        let arm = TwoLinkArm::default();
        let targets = held_out_targets(&arm, Region::Annulus, 1000, 1);
        let mut mse = Trainer::new(quick(HeadKind::Mse)).unwrap();
        mse.run(|_, _| {});
        let mut mdn = Trainer::new(quick(HeadKind::Mdn)).unwrap();
        mdn.run(|_, _| {});
        let (mse, mdn) = (evaluate(mse.model(), &targets), evaluate(mdn.model(), &targets));
        assert!(mse.mean > 0.2, "MSE mean miss {}", mse.mean);
        assert!(mdn.mean < mse.mean / 4.0, "MDN {} vs MSE {}", mdn.mean, mse.mean);
    }
}
