//! Test support: every parameter gradient of a network under a loss, checked against central
//! finite differences, at every SIMD level the CPU has.
//!
//! It sits above [`super::mlp`] and the losses ([`super::loss`], [`super::full_mdn`]) so no
//! module's tests import another's.

use super::activation::Activation;
use super::full_mdn::FullMdn;
use super::loss::{Loss, MdnNll, Mse};
use super::mlp::{Mlp, Scratch};
use crate::simd::for_each_level;
use nalgebra::DMatrix;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Checks every parameter gradient of `net` under `loss` against central differences (f64
/// accumulation of the f32 losses keeps the check meaningful).
#[allow(clippy::needless_range_loop)] // parameters are perturbed in place by index
pub(crate) fn check_gradients(mut net: Mlp, loss: &dyn Loss, x: &DMatrix<f32>, y: &DMatrix<f32>) {
    let mut scratch = Scratch::default();
    let mut d_out = DMatrix::zeros(net.outputs(), x.ncols());
    let out = net.forward(x, &mut scratch).clone();
    loss.loss_and_grad(&out, y, &mut d_out);
    let mut grads = net.zero_gradients();
    net.backward(x, &d_out, &mut scratch, &mut grads);
    let analytic: Vec<Vec<f32>> = grads.slices().iter().map(|s| s.to_vec()).collect();
    let eval = |net: &Mlp| {
        let mut s = Scratch::default();
        let mut g = DMatrix::zeros(net.outputs(), x.ncols());
        let out = net.forward(x, &mut s).clone();
        loss.loss_and_grad(&out, y, &mut g) as f64
    };
    let h = 1e-3f32;
    let n_params = analytic.len();
    for p in 0..n_params {
        for k in 0..analytic[p].len() {
            let orig = net.parameters_mut()[p][k];
            net.parameters_mut()[p][k] = orig + h;
            let up = eval(&net);
            net.parameters_mut()[p][k] = orig - h;
            let down = eval(&net);
            net.parameters_mut()[p][k] = orig;
            let fd = (up - down) / (2.0 * h as f64);
            let an = analytic[p][k] as f64;
            let tol = 2e-3 * (1.0 + fd.abs().max(an.abs()));
            assert!((fd - an).abs() < tol, "param {p}[{k}]: analytic {an} vs finite difference {fd}");
        }
    }
}

fn batch(rng: &mut ChaCha8Rng, rows: usize, cols: usize) -> DMatrix<f32> {
    DMatrix::from_fn(rows, cols, |_, _| rng.random_range(-1.0..1.0))
}

#[test]
fn mse_gradients_match_finite_differences_for_each_activation_at_every_level() {
    for_each_level(|_| {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for act in [Activation::Tanh, Activation::Relu, Activation::Identity] {
            // Widths past one vector with odd remainders, a batch of odd size.
            let net = Mlp::new(&[3, 17, 9, 2], act, &mut rng);
            let x = batch(&mut rng, 3, 7);
            let y = batch(&mut rng, 2, 7);
            check_gradients(net, &Mse, &x, &y);
        }
    });
}

#[test]
fn mdn_gradients_match_finite_differences_at_every_level() {
    for_each_level(|_| {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let loss = MdnNll { k: 3, d: 2, sigma_min: 0.05 };
        let net = Mlp::new(&[2, 6, loss.outputs()], Activation::Tanh, &mut rng);
        let x = batch(&mut rng, 2, 5);
        let y = batch(&mut rng, 2, 5);
        check_gradients(net, &loss, &x, &y);
    });
}

#[test]
fn full_mdn_gradients_match_finite_differences_at_every_level() {
    for_each_level(|_| {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let loss = FullMdn { k: 3, d: 3, sigma_min: 0.05, sigma_max: 20.0 };
        let net = Mlp::new(&[2, 6, loss.outputs()], Activation::Tanh, &mut rng);
        let x = batch(&mut rng, 2, 5);
        let y = batch(&mut rng, 3, 5);
        check_gradients(net, &loss, &x, &y);
    });
}
