//! The element-wise non-linearities after a layer, on slices and on [`Simd`] vectors.
//!
//! This sits below both [`super::kernels`] (whose epilogues apply an activation and its
//! derivative in registers) and [`super::dense`] (the layer that names one).

use serde::{Deserialize, Serialize};

use crate::simd::{Simd, dispatch, math};

pub use crate::simd::math::fast_tanh;

/// Element-wise non-linearity after a layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// Hyperbolic tangent (a rational approximation accurate to about 1e-7, [`fast_tanh`]).
    Tanh,
    /// Rectified linear unit.
    Relu,
    /// No non-linearity (the output layer).
    Identity,
}

crate::keys::keyed!(Activation, "activation", aliases: [("linear", Activation::Identity)]);

impl Activation {
    /// Every activation.
    pub const ALL: [Activation; 3] = [Activation::Tanh, Activation::Relu, Activation::Identity];

    /// The key in configurations.
    pub const fn key(self) -> &'static str {
        match self {
            Activation::Tanh => "tanh",
            Activation::Relu => "relu",
            Activation::Identity => "identity",
        }
    }

    /// Applies the activation in place.
    pub fn apply(self, z: &mut [f32]) {
        match self {
            Activation::Tanh => z.iter_mut().for_each(|v| *v = fast_tanh(*v)),
            Activation::Relu => z.iter_mut().for_each(|v| *v = v.max(0.0)),
            Activation::Identity => {}
        }
    }

    /// Multiplies `grad` in place by the derivative, given the activation's *output* `a`.
    ///
    /// # Panics
    /// If `a` and `grad` differ in length.
    pub fn backprop(self, a: &[f32], grad: &mut [f32]) {
        assert_eq!(a.len(), grad.len(), "backprop: activation and gradient lengths");
        match self {
            Activation::Tanh => tanh_backprop(a, grad),
            Activation::Relu => grad.iter_mut().zip(a).for_each(|(g, &y)| {
                if y <= 0.0 {
                    *g = 0.0
                }
            }),
            Activation::Identity => {}
        }
    }

    /// The activation of every lane of `x`.
    ///
    /// # Safety
    /// The CPU runs `V`'s instruction set (see [`Simd`]).
    #[inline(always)]
    pub(crate) unsafe fn apply_v<V: Simd>(self, x: V) -> V {
        // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
        unsafe {
            match self {
                Activation::Tanh => math::tanh(x),
                Activation::Relu => V::splat(0.0).max(x),
                Activation::Identity => x,
            }
        }
    }

    /// `g` times the derivative, given the activation's output `a`, lane by lane.
    ///
    /// # Safety
    /// The CPU runs `V`'s instruction set (see [`Simd`]).
    #[inline(always)]
    pub(crate) unsafe fn grad_v<V: Simd>(self, g: V, a: V) -> V {
        // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
        unsafe {
            match self {
                Activation::Tanh => g.mul(V::splat(1.0).sub(a.mul(a))),
                Activation::Relu => V::keep_where_positive(a, g),
                Activation::Identity => g,
            }
        }
    }
}

/// `grad[i] *= 1 - a[i]²` (the loop vectorises at each level).
#[inline(always)]
fn tanh_backprop_body(a: &[f32], grad: &mut [f32]) {
    grad.iter_mut().zip(a).for_each(|(g, &y)| *g *= 1.0 - y * y);
}

dispatch!(fn tanh_backprop(a: &[f32], grad: &mut [f32]) => tanh_backprop_body);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::for_each_level;

    #[test]
    fn keys_and_the_linear_alias_parse_and_files_keep_the_variant_name() {
        for a in Activation::ALL {
            assert_eq!(a.to_string().parse::<Activation>(), Ok(a));
            // Model files spell the variant; that format does not change with the key.
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{a:?}\""));
        }
        assert_eq!(" Linear".parse::<Activation>(), Ok(Activation::Identity));
        let err = "gelu".parse::<Activation>().unwrap_err();
        assert_eq!(err, "activation must be one of tanh, relu, identity; got `gelu`");
    }

    #[test]
    fn backprop_matches_the_derivative_at_every_level() {
        for_each_level(|level| {
            for len in [1usize, 7, 15, 17, 63, 65] {
                for offset in [0usize, 1, 3] {
                    let a: Vec<f32> = (0..len + offset).map(|i| (i as f32 * 0.37).sin() * 1.2).collect();
                    let g0: Vec<f32> = (0..len + offset).map(|i| (i as f32 * 0.71).cos()).collect();
                    for act in [Activation::Tanh, Activation::Relu, Activation::Identity] {
                        let mut g = g0.clone();
                        act.backprop(&a[offset..], &mut g[offset..]);
                        for i in offset..len + offset {
                            let want = match act {
                                Activation::Tanh => g0[i] * (1.0 - a[i] * a[i]),
                                Activation::Relu if a[i] > 0.0 => g0[i],
                                Activation::Relu => 0.0,
                                Activation::Identity => g0[i],
                            };
                            assert_eq!(g[i], want, "{level:?} {act:?} len {len} offset {offset} at {i}");
                        }
                        assert_eq!(g[..offset], g0[..offset], "{level:?}: wrote before the slice");
                    }
                }
            }
        });
    }

    #[test]
    #[should_panic(expected = "lengths")]
    fn backprop_refuses_mismatched_lengths() {
        Activation::Tanh.backprop(&[0.5; 3], &mut [1.0; 4]);
    }

    #[test]
    fn apply_is_the_scalar_activation() {
        let mut z = [-2.0f32, -0.1, 0.0, 0.3, 9.0];
        Activation::Tanh.apply(&mut z);
        assert_eq!(z, [-2.0f32, -0.1, 0.0, 0.3, 9.0].map(fast_tanh));
        let mut r = [-2.0f32, 0.0, 0.3];
        Activation::Relu.apply(&mut r);
        assert_eq!(r, [0.0, 0.0, 0.3]);
    }
}
