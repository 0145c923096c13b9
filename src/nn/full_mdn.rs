//! The negative log-likelihood of a mixture of full-covariance Gaussians (the chain nets' mixture
//! density loss, [`crate::chain::nets`]).
//!
//! A redundant chain's posterior is a thin sheet (a curve on `3r`, a surface on `rail3`) tilted
//! through joint space. A diagonal Gaussian can only be thin along the axes, so a mixture of
//! them covers a tilted sheet with blobs as wide as they are long, and its samples miss the
//! target by the blobs' size. A full covariance lets each component lie flat along its patch of
//! the sheet and stay thin across it.
//!
//! Each component is parametrised by its mean and the lower-triangular Cholesky factor `L` of
//! its covariance (`Σ = L Lᵀ`): the diagonal is `exp` of a raw output clamped to
//! `[ln sigma_min, ln sigma_max]` and the off-diagonal entries are clamped to `±sigma_max`,
//! with no gradient beyond either clamp. So no component is thinner than `sigma_min` along its
//! last axes, and none spreads wider than `sqrt(d) sigma_max` along any coordinate: a component
//! the data never uses (its weight near zero) cannot stretch to absurd sizes and throw the rare
//! sample metres away. A thin sheet is still representable: its conditional spreads, the
//! diagonal of `L`, are small and its off-diagonal entries moderate.
//!
//! `ln N(x; μ, Σ) = -d/2 ln 2π - sum_i ln L_ii - |z|² / 2` with `z = L⁻¹ (x - μ)` (forward
//! substitution); with `v = L⁻ᵀ z` (back substitution) the gradients are `v` for the mean,
//! `v_i z_j` for an off-diagonal entry `L_ij` and `L_ii v_i z_i - 1` for a raw diagonal entry.
//! Sampling is `μ + L ε`.

use super::loss::{Loss, MixtureLayout};
use nalgebra::DMatrix;
use serde::{Deserialize, Serialize};

const LOG_2PI: f32 = 1.837_877_1;

/// A mixture of `k` full-covariance Gaussians over `d`-dimensional targets.
///
/// The network output for one sample is `[logits (k), means (k·d), factors (k·d(d+1)/2)]`, each
/// component's factor the rows of `L`'s lower triangle in order (`L_00, L_10, L_11, L_20, ..`),
/// diagonal entries raw (their log).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FullMdn {
    /// Number of components.
    pub k: usize,
    /// Dimension of each target.
    pub d: usize,
    /// Smallest diagonal entry of `L` (a conditional standard deviation).
    pub sigma_min: f32,
    /// Largest entry of `L`, diagonal or not.
    pub sigma_max: f32,
}

/// One decoded component: weight, mean and the covariance's Cholesky factor (row-major `d x d`,
/// zero above the diagonal).
#[derive(Debug, Clone, PartialEq)]
pub struct FullComponent {
    /// Mixture weight.
    pub weight: f32,
    /// Mean.
    pub mean: Vec<f32>,
    /// `L`, with `Σ = L Lᵀ`.
    pub l: Vec<f32>,
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

    /// The clamp of a raw diagonal entry, and of an off-diagonal entry.
    fn bounds(&self) -> ((f32, f32), f32) {
        ((self.sigma_min.ln(), self.sigma_max.ln()), self.sigma_max)
    }

    /// Unpacks component `c`'s factor from `out` (one sample's outputs) into `l` (`d x d`).
    fn unpack(&self, out: &[f32], c: usize, l: &mut [f32]) {
        let (k, d) = (self.k, self.d);
        let ((lo, hi), off) = self.bounds();
        let mut t = k + k * d + c * self.tri();
        l.iter_mut().for_each(|v| *v = 0.0);
        for i in 0..d {
            for j in 0..=i {
                l[i * d + j] = if i == j { out[t].clamp(lo, hi).exp() } else { out[t].clamp(-off, off) };
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
                let mut l = vec![0.0; d * d];
                self.unpack(out, c, &mut l);
                FullComponent { weight: (out[c] - max).exp() / sum, mean: out[k + c * d..k + (c + 1) * d].to_vec(), l }
            })
            .collect()
    }
}

impl MixtureLayout for FullMdn {
    fn shape(&self) -> (usize, usize) {
        (self.k, self.d)
    }

    /// The raw (log) diagonal entry `L_ii` of component `c`'s factor.
    fn log_sigma_row(&self, c: usize, i: usize) -> usize {
        self.k + self.k * self.d + c * self.tri() + i * (i + 1) / 2 + i
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
        let ((lo, hi), off) = self.bounds();
        let mut l = vec![0f32; k * d * d];
        let mut z = vec![0f32; k * d];
        let mut v = vec![0f32; d];
        let mut ll = vec![0f32; k];
        let mut total = 0f64;
        let (outs, xs, grads) = (output.as_slice(), target.as_slice(), grad.as_mut_slice());
        for col in 0..batch {
            let out = &outs[col * rows..(col + 1) * rows];
            let x = &xs[col * d..(col + 1) * d];
            let g = &mut grads[col * rows..(col + 1) * rows];
            let lmax = out[..k].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let lsum: f32 = out[..k].iter().map(|&a| (a - lmax).exp()).sum();
            let log_norm = lmax + lsum.ln();
            for c in 0..k {
                let lc = &mut l[c * d * d..(c + 1) * d * d];
                self.unpack(out, c, lc);
                let zc = &mut z[c * d..(c + 1) * d];
                let (mut sq, mut log_det) = (0.0, 0.0);
                let mut t = k + k * d + c * tri;
                for i in 0..d {
                    // Forward substitution: z = L⁻¹ (x - μ).
                    let mut s = x[i] - out[k + c * d + i];
                    for j in 0..i {
                        s -= lc[i * d + j] * zc[j];
                    }
                    zc[i] = s / lc[i * d + i];
                    sq += zc[i] * zc[i];
                    t += i;
                    log_det += out[t].clamp(lo, hi); // ln L_ii
                    t += 1;
                }
                ll[c] = out[c] - log_norm - log_det - 0.5 * sq - 0.5 * d as f32 * LOG_2PI;
            }
            let best = ll.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let sum: f32 = ll.iter().map(|&a| (a - best).exp()).sum();
            total -= f64::from(best + sum.ln());
            for c in 0..k {
                let resp = (ll[c] - best).exp() / sum;
                let prior = (out[c] - lmax).exp() / lsum;
                g[c] = (prior - resp) * inv_b;
                let w = -resp * inv_b; // d(loss)/d(ln p_c)
                let lc = &l[c * d * d..(c + 1) * d * d];
                let zc = &z[c * d..(c + 1) * d];
                // Back substitution: v = L⁻ᵀ z, the gradient of ln p with respect to the mean.
                for i in (0..d).rev() {
                    let mut s = zc[i];
                    for j in i + 1..d {
                        s -= lc[j * d + i] * v[j];
                    }
                    v[i] = s / lc[i * d + i];
                    g[k + c * d + i] = w * v[i];
                }
                let mut t = k + k * d + c * tri;
                for i in 0..d {
                    for j in 0..=i {
                        let raw = out[t];
                        g[t] = if i == j {
                            if raw > lo && raw < hi { w * (lc[i * d + i] * v[i] * zc[i] - 1.0) } else { 0.0 }
                        } else if raw > -off && raw < off {
                            w * v[i] * zc[j]
                        } else {
                            0.0
                        };
                        t += 1;
                    }
                }
            }
        }
        (total * f64::from(inv_b)) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_component_is_the_gaussian_it_stands_for() {
        // d = 2, L = [[2, 0], [1, 0.5]] (raw diagonal ln 2, ln 0.5), mean (0.5, -1).
        let loss = FullMdn { k: 1, d: 2, sigma_min: 1e-3, sigma_max: 4.0 };
        let o = DMatrix::from_column_slice(6, 1, &[0.0, 0.5, -1.0, 2f32.ln(), 1.0, 0.5f32.ln()]);
        let t = DMatrix::from_column_slice(2, 1, &[1.5, 0.0]);
        let mut g = DMatrix::zeros(6, 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        // delta = (1, 1), z = L⁻¹ delta = (0.5, (1 - 0.5) / 0.5) = (0.5, 1), ln det L = 0.
        let want = LOG_2PI + 0.5 * 1.25;
        assert!((nll - want).abs() < 1e-5, "{nll} vs {want}");
        let c = &loss.components(o.column(0).as_slice())[0];
        assert!((c.weight - 1.0).abs() < 1e-6 && (c.l[0] - 2.0).abs() < 1e-6 && c.l[1] == 0.0 && c.l[2] == 1.0);
        // The clamps: an off-diagonal entry beyond sigma_max, a diagonal one beyond either end.
        let wild = DMatrix::from_column_slice(6, 1, &[0.0, 0.0, 0.0, 9.0, -50.0, -20.0]);
        let c = &loss.components(wild.column(0).as_slice())[0];
        assert!((c.l[0] - 4.0).abs() < 1e-5 && c.l[2] == -4.0 && (c.l[3] - 1e-3).abs() < 1e-7, "{:?}", c.l);
    }

    #[test]
    fn stays_finite_on_extreme_outputs() {
        let loss = FullMdn { k: 2, d: 2, sigma_min: 0.01, sigma_max: 4.0 };
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
