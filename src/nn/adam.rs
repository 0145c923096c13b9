//! The Adam optimizer (Kingma & Ba), with bias correction and optional gradient clipping.

use super::kernels::sum_of_squares;
use super::mlp::{Gradients, Mlp};
use crate::simd::math::{TINY, flush_tiny};

/// Adam state for one network.
#[derive(Debug, Clone, PartialEq)]
pub struct Adam {
    /// Step size.
    pub lr: f32,
    /// Decay of the first-moment estimate.
    pub beta1: f32,
    /// Decay of the second-moment estimate.
    pub beta2: f32,
    /// Added to the root of the second moment to avoid division by zero.
    pub eps: f32,
    /// Gradients whose global L2 norm exceeds this are scaled down to it (`f32::INFINITY`: off).
    pub clip_norm: f32,
    m: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    t: u32,
}

impl Adam {
    /// Fresh state for `net` with learning rate `lr` and the usual betas (0.9, 0.999).
    pub fn new(net: &Mlp, lr: f32) -> Self {
        Self::for_lengths(net.layers.iter().flat_map(|l| [l.w.len(), l.b.len()]), lr)
    }

    /// Fresh state for parameter slices of these `lengths` (any model's, in the order its
    /// gradients come), with learning rate `lr`.
    pub fn for_lengths(lengths: impl IntoIterator<Item = usize>, lr: f32) -> Self {
        let zeros: Vec<Vec<f32>> = lengths.into_iter().map(|n| vec![0.0; n]).collect();
        Self { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, clip_norm: 10.0, m: zeros.clone(), v: zeros, t: 0 }
    }

    /// Steps taken so far.
    pub fn steps(&self) -> u32 {
        self.t
    }

    /// One update of `net` from `grads`. Non-finite gradients skip the step and return false.
    ///
    /// # Panics
    /// If `grads` or this state is not shaped like `net`.
    pub fn step(&mut self, net: &mut Mlp, grads: &Gradients) -> bool {
        self.step_slices(net.parameters_mut(), grads.slices())
    }

    /// One update of the parameter slices `params` from the gradient slices `slices` (same
    /// order and lengths as this state). Non-finite gradients skip the step and return false.
    ///
    /// # Panics
    /// If the slices are not shaped like this state.
    pub fn step_slices(&mut self, params: Vec<&mut [f32]>, slices: Vec<&[f32]>) -> bool {
        assert!(
            params.len() == slices.len()
                && self.m.len() == slices.len()
                && params.iter().zip(&slices).zip(&self.m).all(|((p, g), m)| p.len() == g.len() && m.len() == g.len()),
            "Adam::step: gradients or state not shaped like the parameters"
        );
        let norm_sq = sum_of_squares(&slices);
        if !norm_sq.is_finite() {
            return false;
        }
        let norm = norm_sq.sqrt();
        let scale = if norm > self.clip_norm { self.clip_norm / norm } else { 1.0 };
        self.t += 1;
        let t = self.t as i32;
        let lr_t = self.lr * (1.0 - self.beta2.powi(t)).sqrt() / (1.0 - self.beta1.powi(t));
        let (b1, b2, eps) = (self.beta1, self.beta2, self.eps);
        for (((p, g), m), v) in params.into_iter().zip(slices).zip(&mut self.m).zip(&mut self.v) {
            adam_update(p, g, m, v, [scale, b1, b2, lr_t, eps]);
        }
        true
    }
}

/// One Adam update of a parameter slice; `k` is `[grad scale, beta1, beta2, lr_t, eps]`.
///
/// # Panics
/// If the four slices differ in length.
#[inline(always)]
fn adam_update_body(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], k: [f32; 5]) {
    assert!(p.len() == g.len() && m.len() == g.len() && v.len() == g.len(), "adam_update: slice lengths");
    let [scale, b1, b2, lr_t, eps] = k;
    // The gradient and the moments flush below TINY (TINY² for the second moment), so a
    // vanishing gradient's moments decay to zero instead of into subnormals.
    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
        let g = flush_tiny(g * scale, TINY);
        *m = flush_tiny(b1 * *m + (1.0 - b1) * g, TINY);
        *v = flush_tiny(b2 * *v + (1.0 - b2) * g * g, TINY * TINY);
        *p -= lr_t * *m / (v.sqrt() + eps);
    }
}

crate::simd::dispatch!(fn adam_update(p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32], k: [f32; 5]) => adam_update_body);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::{Activation, Loss, Mse, Scratch};
    use nalgebra::DMatrix;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn fits_a_linear_map() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut net = Mlp::new(&[2, 1], Activation::Identity, &mut rng);
        let x = DMatrix::from_fn(2, 32, |i, j| ((i * 7 + j * 3) % 11) as f32 / 11.0 - 0.5);
        let y = DMatrix::from_fn(1, 32, |_, j| 2.0 * x[(0, j)] - x[(1, j)] + 0.5);
        let mut adam = Adam::new(&net, 0.05);
        let mut scratch = Scratch::default();
        let mut grads = net.zero_gradients();
        let mut d = DMatrix::zeros(1, 32);
        let mut loss = f32::INFINITY;
        for _ in 0..2000 {
            let out = net.forward(&x, &mut scratch).clone();
            loss = Mse.loss_and_grad(&out, &y, &mut d);
            net.backward(&x, &d, &mut scratch, &mut grads);
            assert!(adam.step(&mut net, &grads));
        }
        assert!(loss < 1e-6, "{loss}");
        assert!((net.layers[0].w[(0, 0)] - 2.0).abs() < 1e-2);
        assert_eq!(adam.steps(), 2000);
    }

    #[test]
    fn the_update_matches_the_formula_at_every_level() {
        let k = [0.7f32, 0.9, 0.999, 0.01, 1e-8];
        crate::simd::for_each_level(|level| {
            for len in [1usize, 7, 15, 17, 63, 65] {
                for offset in [0usize, 1, 3] {
                    let n = offset + len;
                    let wave = |f: f32| (0..n).map(move |i| ((i as f32 + 1.0) * f).sin()).collect::<Vec<f32>>();
                    let (p0, g, m0) = (wave(0.3), wave(0.7), wave(1.1));
                    let v0: Vec<f32> = wave(1.3).iter().map(|x| 0.5 + x * x).collect();
                    let (mut p, mut m, mut v) = (p0.clone(), m0.clone(), v0.clone());
                    adam_update(&mut p[offset..], &g[offset..], &mut m[offset..], &mut v[offset..], k);
                    assert_eq!((&p[..offset], &m[..offset]), (&p0[..offset], &m0[..offset]), "wrote before the slice");
                    for i in offset..n {
                        let gs = g[i] as f64 * k[0] as f64;
                        let mi = 0.9 * m0[i] as f64 + 0.1 * gs;
                        let vi = 0.999 * v0[i] as f64 + 0.001 * gs * gs;
                        let pi = p0[i] as f64 - 0.01 * mi / (vi.sqrt() + 1e-8);
                        let close = |a: f32, b: f64| (a as f64 - b).abs() <= 1e-6 * (1.0 + b.abs());
                        assert!(
                            close(m[i], mi) && close(v[i], vi) && close(p[i], pi),
                            "{level:?} len {len} offset {offset} at {i}"
                        );
                    }
                }
            }
        });
    }

    #[test]
    fn vanishing_moments_go_to_zero_not_subnormal_at_every_level() {
        crate::simd::for_each_level(|level| {
            // A gradient of 1 once, then nothing: the moments decay by b1 and b2 per step.
            let (mut p, mut m, mut v) = ([0f32; 3], [0f32; 3], [0f32; 3]);
            let k = [1.0, 0.9, 0.999, 1e-3, 1e-8];
            adam_update(&mut p, &[1.0; 3], &mut m, &mut v, k);
            for step in 0..70_000 {
                adam_update(&mut p, &[0.0, 1e-40, -1e-40], &mut m, &mut v, k);
                let all = m.iter().chain(&v);
                assert!(all.clone().all(|x| *x == 0.0 || x.is_normal()), "{level:?} step {step}: {m:?} {v:?}");
            }
            assert_eq!((m, v), ([0.0; 3], [0.0; 3]), "{level:?}");
        });
    }

    #[test]
    #[should_panic(expected = "slice lengths")]
    fn the_update_refuses_mismatched_slices() {
        adam_update(&mut [0.0; 3], &[0.0; 3], &mut [0.0; 3], &mut [0.0; 2], [1.0, 0.9, 0.999, 0.01, 1e-8]);
    }

    #[test]
    fn skips_non_finite_gradients() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut net = Mlp::new(&[2, 1], Activation::Identity, &mut rng);
        let before = net.clone();
        let mut grads = net.zero_gradients();
        grads.w[0][(0, 0)] = f32::NAN;
        let mut adam = Adam::new(&net, 0.1);
        assert!(!adam.step(&mut net, &grads));
        assert_eq!(net, before);
    }
}
