//! Losses: squared error, and the negative log-likelihood of a mixture density network with
//! diagonal components ([`MdnNll`]); [`MixtureLayout`] says where a mixture's means and spreads
//! sit in a network's output, for it and for the full-covariance loss ([`super::full_mdn`]).

use nalgebra::{DMatrix, DVectorView};
use serde::{Deserialize, Serialize};

use crate::simd::math::{TINY, exp, ln};
use crate::simd::{Simd, dispatch};

pub use crate::simd::math::fast_exp;

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

/// Where a mixture density loss reads each component's mean and spread in one sample's network
/// output (after the `k` logits come the `k·d` means, component by component).
pub trait MixtureLayout {
    /// Components and dimensions: `(k, d)`.
    fn shape(&self) -> (usize, usize);

    /// The output row of component `c`'s mean along dimension `i`.
    fn mean_row(&self, c: usize, i: usize) -> usize {
        let (k, d) = self.shape();
        k + c * d + i
    }

    /// The output row of component `c`'s raw log standard deviation along dimension `i`.
    fn log_sigma_row(&self, c: usize, i: usize) -> usize;
}

impl MixtureLayout for MdnNll {
    fn shape(&self) -> (usize, usize) {
        (self.k, self.d)
    }

    fn log_sigma_row(&self, c: usize, i: usize) -> usize {
        self.k + self.k * self.d + c * self.d + i
    }
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

impl Loss for MdnNll {
    /// # Panics
    /// If `output` is not `outputs() x batch`, `target` not `d x batch` or `grad` not shaped
    /// like `output`.
    fn loss_and_grad(&self, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 {
        let batch = output.ncols();
        assert!(
            output.nrows() == self.outputs() && target.shape() == (self.d, batch) && grad.shape() == output.shape(),
            "mdn loss shapes: output {:?}, target {:?}, grad {:?} for k = {}, d = {}",
            output.shape(),
            target.shape(),
            grad.shape(),
            self.k,
            self.d
        );
        // SAFETY: the shapes were checked just above.
        unsafe { mdn_loss(self, output, target, grad) }
    }
}

dispatch!(
    /// [`mdn_loss_body`] at the active level.
    ///
    /// # Safety
    /// As [`mdn_loss_body`], less the instruction set.
    unsafe fn mdn_loss(m: &MdnNll, output: &DMatrix<f32>, target: &DMatrix<f32>, grad: &mut DMatrix<f32>) -> f32 => generic mdn_loss_body
);

/// The mixture negative log-likelihood, batch-contiguous: blocks of `LANES` samples are
/// transposed into row-per-quantity buffers, so every lane of every vector is one sample, and
/// the whole loss and gradient of a block run in vector registers (exp and ln inlined).
///
/// # Safety
/// The CPU runs `V`'s instruction set; `output` is `m.outputs() x batch`, `target` is
/// `m.d x batch` and `grad` is shaped like `output`.
#[inline(always)]
unsafe fn mdn_loss_body<V: Simd>(
    m: &MdnNll,
    output: &DMatrix<f32>,
    target: &DMatrix<f32>,
    grad: &mut DMatrix<f32>,
) -> f32 {
    let (k, d) = (m.k, m.d);
    let rows = m.outputs();
    let batch = output.ncols();
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
    // SAFETY: vector arithmetic at V's level (the caller's contract); loads and stores at
    // `r * lanes` of buffers holding whole rows of `lanes` floats; the copies in and out touch
    // columns `c0 + l < batch` of `rows` (or `d`) floats (the shapes the caller checked).
    unsafe {
        let mut total = V::splat(0.0);
        let mut tail = 0.0f32;
        let ld = |buf: &[f32], r: usize| V::load(buf.as_ptr().add(r * lanes));
        let (lo, hi) = (V::splat(floor), V::splat(RAW_MAX));
        let inv_bv = V::splat(inv_b);
        let tiny = V::splat(TINY);
        for c0 in (0..batch).step_by(lanes) {
            let count = lanes.min(batch - c0);
            // Sample `c0 + l` becomes lane `l` of every row (the shapes make every index valid).
            transpose_in(out.as_ptr().add(c0 * rows), rows, count, lanes, o.as_mut_ptr());
            transpose_in(tgt.as_ptr().add(c0 * d), d, count, lanes, t.as_mut_ptr());
            // log softmax of the logits: lmax + ln psum.
            let mut lmax = ld(&o, 0);
            for i in 1..k {
                lmax = lmax.max(ld(&o, i));
            }
            let mut psum = V::splat(0.0);
            for i in 0..k {
                let e = exp(ld(&o, i).sub(lmax));
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
                    let inv_s = exp(V::splat(0.0).sub(log_s));
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
                let r = exp(ld(&like, i).sub(best)); // unnormalised responsibility
                r.store(like.as_mut_ptr().add(i * lanes));
                sum = sum.add(r);
            }
            let loss = V::splat(0.0).sub(best.add(ln(sum.div(psum))));
            if count == lanes {
                total = total.add(loss);
            } else {
                let mut l = [0f32; 16];
                loss.store(l.as_mut_ptr());
                tail += l[..count].iter().sum::<f32>();
            }
            for i in 0..k {
                // Probabilities below TINY are zero (their products would go subnormal).
                let resp = ld(&like, i).div(sum).zero_where_tiny(tiny);
                let p = ld(&prior, i).div(psum).zero_where_tiny(tiny);
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
                let dst = grad.as_mut_ptr().add((c0 + l) * rows);
                for r in 0..rows {
                    *dst.add(r) = *g.as_ptr().add(r * lanes + l);
                }
            }
        }
        (total.reduce_sum() + tail) * inv_b
    }
}

/// `dst[r * lanes + l] = src[l * rows + r]` for `l < count`, `r < rows`: `count` columns of
/// `rows` floats become the first `count` lanes of `rows` rows.
///
/// # Safety
/// `src` is valid for `count * rows` reads and `dst` for `rows * lanes` writes, `count <= lanes`.
#[inline(always)]
unsafe fn transpose_in(src: *const f32, rows: usize, count: usize, lanes: usize, dst: *mut f32) {
    // SAFETY: the caller's contract.
    unsafe {
        for l in 0..count {
            let col = src.add(l * rows);
            for r in 0..rows {
                *dst.add(r * lanes + l) = *col.add(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::for_each_level;

    #[test]
    fn mse_value_and_gradient() {
        let o = DMatrix::from_row_slice(1, 2, &[1.0, 3.0]);
        let t = DMatrix::from_row_slice(1, 2, &[0.0, 1.0]);
        let mut g = DMatrix::zeros(1, 2);
        let l = Mse.loss_and_grad(&o, &t, &mut g);
        assert!((l - 0.5 * (1.0 + 4.0) / 2.0).abs() < 1e-6);
        assert_eq!(g.as_slice(), &[0.5, 1.0]);
    }

    /// The mixture NLL of one sample and its gradient (not yet divided by the batch), in f64 from
    /// the definition: log-softmax weights, clamped log-sigmas, log-sum-exp over components.
    fn reference(m: &MdnNll, o: &[f32], t: &[f32]) -> (f64, Vec<f64>) {
        let (k, d) = (m.k, m.d);
        let o: Vec<f64> = o.iter().map(|&v| v as f64).collect();
        let (floor, cap) = ((m.sigma_min as f64).ln(), RAW_MAX as f64);
        let lse = |v: &[f64]| {
            let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            max + v.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
        };
        let log_prior_norm = lse(&o[..k]);
        let ll: Vec<f64> = (0..k)
            .map(|i| {
                let mut ll = o[i] - log_prior_norm;
                for j in 0..d {
                    let log_s = o[k + k * d + i * d + j].clamp(floor, cap);
                    let z = (t[j] as f64 - o[k + i * d + j]) / log_s.exp();
                    ll -= 0.5 * z * z + log_s + (2.0 * std::f64::consts::PI).sqrt().ln();
                }
                ll
            })
            .collect();
        let total = lse(&ll);
        let mut g = vec![0f64; o.len()];
        for i in 0..k {
            let resp = (ll[i] - total).exp();
            g[i] = (o[i] - log_prior_norm).exp() - resp;
            for j in 0..d {
                let raw = o[k + k * d + i * d + j];
                let s = raw.clamp(floor, cap).exp();
                let z = (t[j] as f64 - o[k + i * d + j]) / s;
                g[k + i * d + j] = -resp * z / s;
                g[k + k * d + i * d + j] = if raw > floor && raw < cap { -resp * (z * z - 1.0) } else { 0.0 };
            }
        }
        (-total, g)
    }

    /// Checks the loss and gradient of a batch against [`reference`] at the active level.
    fn check_against_reference(m: &MdnNll, o: &DMatrix<f32>, t: &DMatrix<f32>, what: &str) {
        let batch = o.ncols();
        let mut g = DMatrix::from_element(o.nrows(), batch, f32::NAN);
        let loss = m.loss_and_grad(o, t, &mut g) as f64;
        let mut want_loss = 0.0;
        for c in 0..batch {
            let (l, want) = reference(m, o.column(c).as_slice(), t.column(c).as_slice());
            want_loss += l / batch as f64;
            for (r, w) in want.iter().enumerate() {
                let got = g[(r, c)] as f64;
                let w = w / batch as f64;
                // Entries are O(1 / batch); `z² - 1` cancels near |z| = 1, so the bound is absolute.
                assert!(
                    (got - w).abs() <= 1e-4 * (w.abs() + 1.0 / batch as f64),
                    "{what}: grad ({r}, {c}) {got} vs {w}"
                );
            }
        }
        assert!((loss - want_loss).abs() <= 2e-5 * (1.0 + want_loss.abs()), "{what}: loss {loss} vs {want_loss}");
    }

    #[test]
    fn mdn_matches_the_reference_at_every_level() {
        for_each_level(|level| {
            for (k, d) in [(1usize, 1usize), (2, 3), (3, 2), (5, 1)] {
                let m = MdnNll { k, d, sigma_min: 0.05 };
                // Batches of every remainder class, so whole and partial blocks of lanes run.
                for batch in [1usize, 7, 15, 17, 63, 65] {
                    let mut s = (k * 131 + d * 17 + batch) as u32;
                    let mut next = |lo: f32, hi: f32| {
                        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                        lo + (hi - lo) * (s >> 8) as f32 / (1u32 << 24) as f32
                    };
                    // Log-sigmas from below the floor (ln 0.05 = -3.0) to above the cap (8).
                    let o = DMatrix::from_fn(m.outputs(), batch, |r, _| {
                        if r < k + k * d { next(-2.0, 2.0) } else { next(-5.0, 9.0) }
                    });
                    let t = DMatrix::from_fn(d, batch, |_, _| next(-2.0, 2.0));
                    check_against_reference(&m, &o, &t, &format!("{level:?} k {k} d {d} batch {batch}"));
                }
            }
        });
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
    fn mdn_is_right_on_extreme_outputs_at_every_level() {
        // Logits 80 and -80, means ±1000 and log-sigmas far past the floor and the cap: the
        // first component is hopeless, the second carries everything.
        let loss = MdnNll { k: 2, d: 1, sigma_min: 0.01 };
        let o = DMatrix::from_column_slice(6, 1, &[80.0, -80.0, 1e3, -1e3, -200.0, 200.0]);
        let t = DMatrix::from_column_slice(1, 1, &[0.0]);
        for_each_level(|level| {
            check_against_reference(&loss, &o, &t, &format!("{level:?} extreme"));
        });
        // The same in words: the loss is the second component's, about 168.98.
        let mut g = DMatrix::zeros(6, 1);
        let nll = loss.loss_and_grad(&o, &t, &mut g);
        let z = 1e3 / 8f32.exp();
        assert!((nll - (160.0 + 8.0 + LOG_SQRT_2PI + 0.5 * z * z)).abs() < 1e-3, "{nll}");
        assert!((g[0] - 1.0).abs() < 1e-6 && (g[1] + 1.0).abs() < 1e-6, "{g}");
        assert_eq!((g[4], g[5]), (0.0, 0.0), "clamped log-sigmas get no gradient");
    }

    #[test]
    fn mdn_gradient_holds_no_subnormals_at_every_level() {
        // Component 0's logit is 200 below component 1's, so its responsibility is e^-87 (the
        // floor of exp) and its mean's gradient, times z = 0.01, would be a subnormal number.
        let loss = MdnNll { k: 2, d: 1, sigma_min: 0.01 };
        let o = DMatrix::from_column_slice(6, 1, &[-100.0, 100.0, 0.01, 0.0, 0.0, 0.0]);
        let t = DMatrix::from_column_slice(1, 1, &[0.0]);
        for_each_level(|level| {
            let mut g = DMatrix::from_element(6, 1, f32::NAN);
            loss.loss_and_grad(&o, &t, &mut g);
            assert!(g.iter().all(|v| *v == 0.0 || v.is_normal()), "{level:?}: {g}");
            assert_eq!(g[2], 0.0, "{level:?}: the hopeless component's mean moved");
        });
    }

    #[test]
    #[should_panic(expected = "mdn loss shapes")]
    fn mdn_refuses_mismatched_shapes() {
        let loss = MdnNll { k: 2, d: 1, sigma_min: 0.01 };
        let mut g = DMatrix::zeros(6, 3);
        loss.loss_and_grad(&DMatrix::zeros(6, 3), &DMatrix::zeros(1, 2), &mut g);
    }
}
