//! Losses: squared error, and the negative log-likelihood of a mixture density network.

use nalgebra::{DMatrix, DVectorView};
use serde::{Deserialize, Serialize};

use super::kernels::{exp_v, ln_v};
use crate::simd::Simd;

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
        // The exponentials are recomputed rather than kept (no allocation on this hot path).
        let sum: f32 = (0..k).map(|i| (out[i] - max).exp()).sum();
        (0..k)
            .map(|i| MdnComponent {
                weight: (out[i] - max).exp() / sum,
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

crate::simd::dispatch!(fn mdn_loss(m: &MdnNll, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 => generic mdn_loss_body);

/// The mixture negative log-likelihood, batch-contiguous: blocks of `LANES` samples are
/// transposed into row-per-quantity buffers, so every lane of every vector is one sample, and
/// the whole loss and gradient of a block run in vector registers (exp and ln inlined).
#[inline(always)]
fn mdn_loss_body<V: Simd>(m: &MdnNll, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
    let (k, d) = (m.k, m.d);
    let rows = m.outputs();
    let batch = output.ncols();
    assert!(output.nrows() == rows && target.shape() == (d, batch) && grad.shape() == (rows, batch), "mdn loss shapes");
    let lanes = V::LANES;
    let inv_b = 1.0 / batch.max(1) as f32;
    let floor = m.sigma_min.ln();
    // Row r of a block at [r * lanes..]; lanes past the batch end stay zero (finite, ignored).
    let mut o = vec![0f32; rows * lanes];
    let mut t = vec![0f32; d * lanes];
    let mut g = vec![0f32; rows * lanes];
    let mut inv_sigma = vec![0f32; k * d * lanes];
    let mut prior = vec![0f32; k * lanes];
    let mut like = vec![0f32; k * lanes];
    let (out, tgt) = (output.as_slice(), target.as_slice());
    let grad = grad.as_mut_slice();
    // SAFETY: vector arithmetic at V's level, loads and stores at `r * lanes` of buffers holding
    // whole rows of `lanes` floats.
    unsafe {
        let mut total = V::splat(0.0);
        let mut tail = 0.0f32;
        let ld = |buf: &[f32], r: usize| V::load(buf.as_ptr().add(r * lanes));
        let (lo, hi) = (V::splat(floor), V::splat(RAW_MAX));
        let inv_bv = V::splat(inv_b);
        for c0 in (0..batch).step_by(lanes) {
            let count = lanes.min(batch - c0);
            for l in 0..count {
                let col = c0 + l;
                for r in 0..rows {
                    o[r * lanes + l] = out[col * rows + r];
                }
                for r in 0..d {
                    t[r * lanes + l] = tgt[col * d + r];
                }
            }
            // log softmax of the logits: lmax + ln psum.
            let mut lmax = ld(&o, 0);
            for i in 1..k {
                lmax = lmax.max(ld(&o, i));
            }
            let mut psum = V::splat(0.0);
            for i in 0..k {
                let e = exp_v(ld(&o, i).sub(lmax));
                e.store(prior.as_mut_ptr().add(i * lanes));
                psum = psum.add(e);
            }
            // Component log-likelihoods, less ln psum (added back once, below).
            let mut best = V::splat(f32::NEG_INFINITY);
            for i in 0..k {
                let mut ll = ld(&o, i).sub(lmax);
                for j in 0..d {
                    let idx = i * d + j;
                    let log_s = hi.min(lo.max(ld(&o, k + k * d + idx)));
                    let inv_s = exp_v(V::splat(0.0).sub(log_s));
                    inv_s.store(inv_sigma.as_mut_ptr().add(idx * lanes));
                    let z = ld(&t, j).sub(ld(&o, k + idx)).mul(inv_s);
                    let nll = V::fma(V::splat(0.5).mul(z), z, log_s.add(V::splat(LOG_SQRT_2PI)));
                    ll = ll.sub(nll);
                }
                ll.store(like.as_mut_ptr().add(i * lanes));
                best = best.max(ll);
            }
            let mut sum = V::splat(0.0);
            for i in 0..k {
                let r = exp_v(ld(&like, i).sub(best)); // unnormalised responsibility
                r.store(like.as_mut_ptr().add(i * lanes));
                sum = sum.add(r);
            }
            let loss = V::splat(0.0).sub(best.add(ln_v(sum.div(psum))));
            if count == lanes {
                total = total.add(loss);
            } else {
                let mut l = [0f32; 16];
                loss.store(l.as_mut_ptr());
                tail += l[..count].iter().sum::<f32>();
            }
            for i in 0..k {
                let resp = ld(&like, i).div(sum);
                let p = ld(&prior, i).div(psum);
                p.sub(resp).mul(inv_bv).store(g.as_mut_ptr().add(i * lanes));
                let neg_resp_b = V::splat(0.0).sub(resp).mul(inv_bv);
                for j in 0..d {
                    let idx = i * d + j;
                    let inv_s = ld(&inv_sigma, idx);
                    let z = ld(&t, j).sub(ld(&o, k + idx)).mul(inv_s);
                    neg_resp_b.mul(z).mul(inv_s).store(g.as_mut_ptr().add((k + idx) * lanes));
                    let raw = ld(&o, k + k * d + idx);
                    let g_raw = neg_resp_b.mul(V::fma(z, z, V::splat(-1.0)));
                    V::keep_where_between(raw, lo, hi, g_raw).store(g.as_mut_ptr().add((k + k * d + idx) * lanes));
                }
            }
            for l in 0..count {
                let col = c0 + l;
                for r in 0..rows {
                    grad[col * rows + r] = g[r * lanes + l];
                }
            }
        }
        (total.reduce_sum() + tail) * inv_b
    }
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
