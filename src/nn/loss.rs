//! Losses: squared error, and the negative log-likelihood of a mixture density network.

use nalgebra::{DMatrix, DVectorView};
use serde::{Deserialize, Serialize};

/// A loss over a batch: returns the mean loss and writes `dL/d(output)` (already divided by the
/// batch size) into `grad`.
pub trait Loss: Send + Sync {
    /// Mean loss of `output` against `target` (both `dims x batch`), with its gradient.
    fn loss_and_grad(&self, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32;
}

/// Mean squared error, `0.5 * |y - t|²` averaged over the batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mse;

impl Loss for Mse {
    fn loss_and_grad(&self, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
        let inv_b = 1.0 / output.ncols().max(1) as f32;
        let mut total = 0.0f32;
        for ((g, &o), &t) in grad.as_mut_slice().iter_mut().zip(output.as_slice()).zip(target.as_slice()) {
            let d = o - t;
            total += 0.5 * d * d;
            *g = d * inv_b;
        }
        total * inv_b
    }
}

/// Negative log-likelihood of a mixture of `k` diagonal Gaussians over `d`-dimensional targets.
///
/// The network output for one sample is `[logits (k), means (k·d), raw log-sigmas (k·d)]`; the
/// log standard deviation is `max(raw, ln sigma_min)`, so a component never collapses below the
/// floor (and, once at it, gets no gradient pushing it further down).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MdnNll {
    /// Number of mixture components.
    pub k: usize,
    /// Dimension of each target.
    pub d: usize,
    /// Smallest standard deviation a component may have.
    pub sigma_min: f32,
}

/// One decoded mixture component.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MdnComponent {
    /// Mixture weight (the weights of one sample sum to 1).
    pub weight: f32,
    /// Mean, `d` values.
    pub mean: Vec<f32>,
    /// Standard deviation per dimension.
    pub sigma: Vec<f32>,
}

const LOG_SQRT_2PI: f32 = 0.918_938_5;
/// Upper bound on the log-sigma, so `exp` cannot overflow.
const RAW_MAX: f32 = 8.0;

impl MdnNll {
    /// Network outputs needed per sample: `k · (1 + 2d)`.
    pub fn outputs(&self) -> usize {
        self.k * (1 + 2 * self.d)
    }

    /// The log standard deviation a raw output stands for (floored, and capped so `exp` stays finite).
    fn log_sigma(&self, raw: f32) -> f32 {
        raw.clamp(self.sigma_min.ln(), RAW_MAX)
    }

    /// Decodes the mixture of one output column (softmaxed weights, floored sigmas).
    pub fn components(&self, out: DVectorView<'_, f32>) -> Vec<MdnComponent> {
        let (k, d) = (self.k, self.d);
        let max = out.rows(0, k).max();
        let exps: Vec<f32> = (0..k).map(|i| (out[i] - max).exp()).collect();
        let sum: f32 = exps.iter().sum();
        (0..k)
            .map(|i| MdnComponent {
                weight: exps[i] / sum,
                mean: (0..d).map(|j| out[k + i * d + j]).collect(),
                sigma: (0..d).map(|j| self.log_sigma(out[k + k * d + i * d + j]).exp()).collect(),
            })
            .collect()
    }
}

/// `e^x` in f32 by Cephes' method (range reduction to `[-ln2/2, ln2/2]`, a degree-6 polynomial,
/// exponent bits for the power of two): within about 2e-7 relative of `expf`, inlinable, so
/// the loss loop stays in registers.
#[inline(always)]
pub fn fast_exp(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let p = 1.987_569_1e-4;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

impl Loss for MdnNll {
    fn loss_and_grad(&self, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
        mdn_loss(self, output, target, grad)
    }
}

crate::simd::dispatch!(fn mdn_loss(m: &MdnNll, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 => mdn_loss_body);

// Logits, means, sigmas and targets share the component and dimension indices.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn mdn_loss_body(m: &MdnNll, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
    let (k, d) = (m.k, m.d);
    let batch = output.ncols();
    let inv_b = 1.0 / batch.max(1) as f32;
    let floor = m.sigma_min.ln();
    let mut total = 0.0f32;
    let mut log_like = vec![0f32; k];
    let mut prior = vec![0f32; k];
    let mut inv_sigma = vec![0f32; k * d];
    for col in 0..batch {
        let o = output.column(col);
        let t = target.column(col);
        let o = o.as_slice();
        let t = t.as_slice();
        let (logits, rest) = o.split_at(k);
        let (means, raws) = rest.split_at(k * d);
        // log softmax of the logits.
        let lmax = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut psum = 0.0;
        for i in 0..k {
            prior[i] = fast_exp(logits[i] - lmax);
            psum += prior[i];
        }
        let lse_logits = lmax + psum.ln();
        for i in 0..k {
            prior[i] /= psum;
            let mut ll = logits[i] - lse_logits;
            for j in 0..d {
                let idx = i * d + j;
                let log_s = raws[idx].clamp(floor, RAW_MAX);
                let inv_s = fast_exp(-log_s);
                inv_sigma[idx] = inv_s;
                let z = (t[j] - means[idx]) * inv_s;
                ll -= 0.5 * z * z + log_s + LOG_SQRT_2PI;
            }
            log_like[i] = ll;
        }
        let m = log_like.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for ll in log_like.iter_mut() {
            *ll = fast_exp(*ll - m); // now unnormalised responsibilities
            sum += *ll;
        }
        total -= m + sum.ln();
        let mut g = grad.column_mut(col);
        let g = g.as_mut_slice();
        let (g_logits, g_rest) = g.split_at_mut(k);
        let (g_means, g_raws) = g_rest.split_at_mut(k * d);
        for i in 0..k {
            let resp = log_like[i] / sum; // posterior responsibility
            g_logits[i] = (prior[i] - resp) * inv_b;
            for j in 0..d {
                let idx = i * d + j;
                let inv_s = inv_sigma[idx];
                let z = (t[j] - means[idx]) * inv_s;
                g_means[idx] = -resp * z * inv_s * inv_b;
                let raw = raws[idx];
                let free = raw > floor && raw < RAW_MAX;
                g_raws[idx] = if free { -resp * (z * z - 1.0) * inv_b } else { 0.0 };
            }
        }
    }
    total * inv_b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::dense::Activation;
    use crate::nn::mlp::Mlp;
    use crate::nn::mlp::tests::check_gradients;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn mse_value_and_gradient() {
        let o = DMatrix::from_row_slice(1, 2, &[1.0, 3.0]);
        let t = DMatrix::from_row_slice(1, 2, &[0.0, 1.0]);
        let mut g = DMatrix::zeros(1, 2);
        let l = Mse.loss_and_grad(&o, &t, &mut g);
        assert!((l - 0.5 * (1.0 + 4.0) / 2.0).abs() < 1e-6);
        assert_eq!(g.as_slice(), &[0.5, 1.0]);
    }

    #[test]
    fn mdn_gradients_match_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let loss = MdnNll { k: 3, d: 2, sigma_min: 0.05 };
        let net = Mlp::new(&[2, 6, loss.outputs()], Activation::Tanh, &mut rng);
        let x = DMatrix::from_fn(2, 5, |_, _| rng.random_range(-1.0..1.0));
        let y = DMatrix::from_fn(2, 5, |_, _| rng.random_range(-1.0..1.0));
        check_gradients(net, &loss, &x, &y);
    }

    #[test]
    fn mdn_of_one_wide_component_is_a_gaussian() {
        let loss = MdnNll { k: 1, d: 1, sigma_min: 0.0 };
        // logit 0, mean 0.5, raw log-sigma 0 -> sigma 1.
        let o = DMatrix::from_column_slice(3, 1, &[0.0, 0.5, 0.0]);
        let t = DMatrix::from_column_slice(1, 1, &[1.5]);
        let mut g = DMatrix::zeros(3, 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        assert!((nll - (0.5 + LOG_SQRT_2PI)).abs() < 1e-6);
        let comps = loss.components(o.column(0));
        assert_eq!(comps.len(), 1);
        assert!((comps[0].weight - 1.0).abs() < 1e-6 && (comps[0].sigma[0] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn fast_exp_matches_libm() {
        let mut worst = 0f32;
        for i in -8000..=8000 {
            let x = i as f32 * 0.01;
            worst = worst.max(((fast_exp(x) - x.exp()) / x.exp()).abs());
        }
        assert!(worst < 5e-7, "{worst}");
        assert!(fast_exp(-1e9) >= 0.0 && fast_exp(1e9).is_finite());
    }

    #[test]
    fn mdn_stays_finite_on_extreme_outputs() {
        let loss = MdnNll { k: 2, d: 1, sigma_min: 0.01 };
        let o = DMatrix::from_column_slice(6, 1, &[80.0, -80.0, 1e3, -1e3, -200.0, 200.0]);
        let t = DMatrix::from_column_slice(1, 1, &[0.0]);
        let mut g = DMatrix::zeros(6, 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        assert!(nll.is_finite() && g.iter().all(|v| v.is_finite()), "{nll} {g}");
    }
}
