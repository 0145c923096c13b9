//! The negative log-likelihood of a mixture of full-covariance Gaussians, for mixture density
//! networks over a chain's coordinates.
//!
//! A redundant chain's posterior is a thin sheet (a curve on `3r`, a surface on `rail3`) tilted
//! through joint space. A diagonal Gaussian can only be thin along the axes, so a mixture of
//! them covers a tilted sheet with blobs as wide as they are long, and its samples miss the
//! target by the blobs' size. A full covariance lets each component lie flat along its patch of
//! the sheet and stay thin across it.
//!
//! Each component is parametrised by its mean and the upper-triangular Cholesky factor `U` of
//! its precision (`Σ⁻¹ = Uᵀ U`), whose diagonal is `exp` of a raw output (clamped to
//! `[-8, -ln sigma_min]`, with no gradient beyond, like [`crate::nn::MdnNll`]'s floor):
//! `ln N(x; μ, Σ) = -d/2 ln 2π + sum_i ln U_ii - |U (x - μ)|² / 2`, whose gradients are plain
//! (`U ᵀ z` for the mean, `-z_i δ_j` for an off-diagonal entry, `1 - z_i δ_i U_ii` for a raw
//! diagonal entry, with `δ = x - μ` and `z = U δ`). Sampling is `μ + U⁻¹ ε`.

use crate::nn::Loss;
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

/// Lower clamp of a raw log-diagonal entry (`e^8`: the widest spread).
const RAW_MIN: f32 = -8.0;
const LOG_2PI: f32 = 1.837_877_1;

/// A mixture of `k` full-covariance Gaussians over `d`-dimensional targets.
///
/// The network output for one sample is `[logits (k), means (k·d), factors (k·d(d+1)/2)]`, each
/// component's factor the rows of `U`'s upper triangle in order (`U_00, U_01, .., U_0d, U_11,
/// ..`), diagonal entries raw (the log).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FullMdn {
    /// Number of components.
    pub k: usize,
    /// Dimension of each target.
    pub d: usize,
    /// Smallest standard deviation along a coordinate axis's precision diagonal.
    pub sigma_min: f32,
}

/// One decoded component: weight, mean and the precision's Cholesky factor (row-major `d x d`,
/// zero below the diagonal).
#[derive(Debug, Clone, PartialEq)]
pub struct FullComponent {
    /// Mixture weight.
    pub weight: f32,
    /// Mean.
    pub mean: Vec<f32>,
    /// `U`, with `Σ⁻¹ = Uᵀ U`.
    pub u: Vec<f32>,
}

impl FullMdn {
    /// Entries of one factor: `d(d+1)/2`.
    pub fn tri(&self) -> usize {
        self.d * (self.d + 1) / 2
    }

    /// Network outputs per sample.
    pub fn outputs(&self) -> usize {
        self.k * (1 + self.d + self.tri())
    }

    /// The upper clamp of a raw log-diagonal entry.
    fn raw_max(&self) -> f32 {
        -self.sigma_min.ln()
    }

    /// Unpacks component `c`'s factor from `out` (one sample's outputs) into `u` (`d x d`).
    fn unpack(&self, out: &[f32], c: usize, u: &mut [f32]) {
        let (k, d) = (self.k, self.d);
        let base = k + k * d + c * self.tri();
        let mut t = base;
        u.iter_mut().for_each(|v| *v = 0.0);
        for i in 0..d {
            for j in i..d {
                u[i * d + j] = if i == j { out[t].clamp(RAW_MIN, self.raw_max()).exp() } else { out[t] };
                t += 1;
            }
        }
    }

    /// Decodes the mixture of one output column.
    pub fn components(&self, out: &[f32]) -> Vec<FullComponent> {
        let (k, d) = (self.k, self.d);
        let max = out[..k].iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = out[..k].iter().map(|&l| (l - max).exp()).sum();
        (0..k)
            .map(|c| {
                let mut u = vec![0.0; d * d];
                self.unpack(out, c, &mut u);
                FullComponent { weight: (out[c] - max).exp() / sum, mean: out[k + c * d..k + (c + 1) * d].to_vec(), u }
            })
            .collect()
    }
}

impl Loss for FullMdn {
    fn loss_and_grad(&self, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
        let (k, d, tri) = (self.k, self.d, self.tri());
        let rows = self.outputs();
        let batch = output.ncols();
        assert!(
            output.nrows() == rows && target.shape() == (d, batch) && grad.shape() == (rows, batch),
            "full mdn loss shapes"
        );
        let inv_b = 1.0 / batch.max(1) as f32;
        let (lo, hi) = (RAW_MIN, self.raw_max());
        let mut u = vec![0f32; k * d * d];
        let mut delta = vec![0f32; k * d];
        let mut z = vec![0f32; k * d];
        let mut ll = vec![0f32; k];
        let mut total = 0f64;
        let (outs, xs, grads) = (output.as_slice(), target.as_slice(), grad.as_mut_slice());
        for col in 0..batch {
            let out = &outs[col * rows..(col + 1) * rows];
            let x = &xs[col * d..(col + 1) * d];
            let g = &mut grads[col * rows..(col + 1) * rows];
            let lmax = out[..k].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lsum: f32 = out[..k].iter().map(|&l| (l - lmax).exp()).sum();
            let log_norm = lmax + lsum.ln();
            for c in 0..k {
                let uc = &mut u[c * d * d..(c + 1) * d * d];
                self.unpack(out, c, uc);
                let mut log_det = 0.0;
                let mut sq = 0.0;
                for i in 0..d {
                    delta[c * d + i] = x[i] - out[k + c * d + i];
                }
                for i in 0..d {
                    let mut zi = 0.0;
                    for j in i..d {
                        zi += uc[i * d + j] * delta[c * d + j];
                    }
                    z[c * d + i] = zi;
                    sq += zi * zi;
                    log_det += uc[i * d + i].ln();
                }
                ll[c] = out[c] - log_norm + log_det - 0.5 * sq - 0.5 * d as f32 * LOG_2PI;
            }
            let best = ll.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = ll.iter().map(|&l| (l - best).exp()).sum();
            total -= f64::from(best + sum.ln());
            for c in 0..k {
                let resp = (ll[c] - best).exp() / sum;
                let prior = (out[c] - lmax).exp() / lsum;
                g[c] = (prior - resp) * inv_b;
                let w = -resp * inv_b; // d(loss)/d(ln p_c)
                let uc = &u[c * d * d..(c + 1) * d * d];
                let (dc, zc) = (&delta[c * d..(c + 1) * d], &z[c * d..(c + 1) * d]);
                // d ln p / d mean_j = (Uᵀ z)_j.
                for j in 0..d {
                    let mut s = 0.0;
                    for i in 0..=j {
                        s += uc[i * d + j] * zc[i];
                    }
                    g[k + c * d + j] = w * s;
                }
                let mut t = k + k * d + c * tri;
                for i in 0..d {
                    for j in i..d {
                        g[t] = if i == j {
                            let raw = out[t];
                            if raw > lo && raw < hi { w * (1.0 - zc[i] * dc[i] * uc[i * d + i]) } else { 0.0 }
                        } else {
                            w * (-zc[i] * dc[j])
                        };
                        t += 1;
                    }
                }
            }
        }
        (total * f64::from(inv_b)) as f32
    }
}

/// `U⁻¹` of an upper-triangular `d x d` matrix (row-major), by back substitution, into `inv`.
pub fn invert_upper(u: &[f64], d: usize, inv: &mut [f64]) {
    inv.iter_mut().for_each(|v| *v = 0.0);
    for col in 0..d {
        for i in (0..=col).rev() {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for j in i + 1..=col {
                s -= u[i * d + j] * inv[j * d + col];
            }
            inv[i * d + col] = s / u[i * d + i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::mlp::tests::check_gradients;
    use crate::nn::{Activation, Mlp};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn gradients_match_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let loss = FullMdn { k: 3, d: 3, sigma_min: 0.05 };
        let net = Mlp::new(&[2, 6, loss.outputs()], Activation::Tanh, &mut rng);
        let x = DMatrix::from_fn(2, 5, |_, _| rng.random_range(-1.0..1.0));
        let y = DMatrix::from_fn(3, 5, |_, _| rng.random_range(-1.0..1.0));
        check_gradients(net, &loss, &x, &y);
    }

    #[test]
    fn one_component_is_the_gaussian_it_stands_for() {
        // d = 2, U = [[2, 1], [0, 0.5]] (raw diagonal ln 2, ln 0.5), mean (0.5, -1).
        let loss = FullMdn { k: 1, d: 2, sigma_min: 1e-3 };
        let o = DMatrix::from_column_slice(6, 1, &[0.0, 0.5, -1.0, 2f32.ln(), 1.0, 0.5f32.ln()]);
        let t = DMatrix::from_column_slice(2, 1, &[1.0, 0.0]);
        let mut g = DMatrix::zeros(6, 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        // delta = (0.5, 1), z = U delta = (2, 0.5), |z|² = 4.25, ln det U = 0.
        let want = LOG_2PI + 0.5 * 4.25;
        assert!((nll - want).abs() < 1e-5, "{nll} vs {want}");
        let c = &loss.components(o.column(0).as_slice())[0];
        assert!((c.weight - 1.0).abs() < 1e-6 && (c.u[0] - 2.0).abs() < 1e-6 && c.u[2] == 0.0);
        let mut inv = [0.0; 4];
        invert_upper(&[2.0, 1.0, 0.0, 0.5], 2, &mut inv);
        assert_eq!(inv, [0.5, -1.0, 0.0, 2.0]);
    }

    #[test]
    fn stays_finite_on_extreme_outputs() {
        let loss = FullMdn { k: 2, d: 2, sigma_min: 0.01 };
        let o = DMatrix::from_column_slice(
            loss.outputs(),
            1,
            &[80.0, -80.0, 1e3, -1e3, 0.0, 0.0, -200.0, 1e4, 200.0, 50.0, 0.0, -50.0],
        );
        let t = DMatrix::from_column_slice(2, 1, &[0.0, 0.0]);
        let mut g = DMatrix::zeros(loss.outputs(), 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        assert!(nll.is_finite(), "{nll}");
        assert!(g.iter().all(|v| v.is_finite()), "{g}");
    }
}
