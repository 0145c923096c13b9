//! `exp`, `ln` and `tanh` as polynomials on a [`Simd`] vector, written once for every level.
//!
//! The scalar functions [`fast_exp`], [`fast_ln`] and [`fast_tanh`] are the same code
//! instantiated at one [`Scalar`] lane (where the multiply-adds round twice instead of once, so
//! they agree with the vector forms to within an ulp or two, not bit for bit).

use super::{Scalar, Simd};

/// Gradients, probabilities and optimizer moments below this magnitude (about 2^-50) are stored
/// as zero.
///
/// Left alone, they underflow into subnormal numbers (the mixture loss's responsibilities of
/// far-off components, and everything multiplied by them), and every Intel core takes a
/// microcode assist of about a hundred cycles for each operation on one: MDN training ran 3x
/// slower on an Intel Xeon than on an AMD core of the same peak, which handles them in
/// hardware. The threshold keeps every stored value and its square (Adam's second moment)
/// normal, and lies seven orders below Adam's `eps` (1e-8), so no update can tell the
/// difference.
pub const TINY: f32 = 1e-15;

/// 0 where `|x| < tiny`, else `x` (NaN and infinities stay).
#[inline(always)]
pub fn flush_tiny(x: f32, tiny: f32) -> f32 {
    if x.abs() < tiny { 0.0 } else { x }
}

/// `tanh` as a 13/6 rational function (the form Eigen uses), within about 1e-7 of the true value;
/// saturates to ±1 beyond ±7.9 and keeps NaN lanes NaN.
///
/// # Safety
/// The CPU runs `V`'s instruction set (see [`Simd`]).
#[inline(always)]
pub unsafe fn tanh<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
    unsafe {
        // Constant first: NaN lanes stay NaN.
        let x = V::splat(7.905_311).min(V::splat(-7.905_311).max(x));
        let x2 = x.mul(x);
        let mut p = V::fma(x2, V::splat(-2.760_768_5e-16), V::splat(2.000_188e-13));
        p = V::fma(x2, p, V::splat(-8.604_672e-11));
        p = V::fma(x2, p, V::splat(5.122_297e-8));
        p = V::fma(x2, p, V::splat(1.485_722_4e-5));
        p = V::fma(x2, p, V::splat(6.372_619_3e-4));
        p = V::fma(x2, p, V::splat(4.893_524_6e-3));
        p = p.mul(x);
        let mut q = V::fma(x2, V::splat(1.198_258_4e-6), V::splat(1.185_347_1e-4));
        q = V::fma(x2, q, V::splat(2.268_434_6e-3));
        q = V::fma(x2, q, V::splat(4.893_525e-3));
        p.mul(q.recip())
    }
}

/// `e^x` by Cephes' method: range reduction to `[-ln2/2, ln2/2]`, a degree-6 polynomial and the
/// exponent bits for the power of two; within about 2e-7 relative of `expf`. The argument is
/// clamped to `[-87, 88]`, so the result is always a finite normal number (NaN stays NaN).
///
/// # Safety
/// The CPU runs `V`'s instruction set (see [`Simd`]).
#[inline(always)]
pub unsafe fn exp<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
    unsafe {
        let x = V::splat(88.0).min(V::splat(-87.0).max(x));
        let n = V::fma(x, V::splat(std::f32::consts::LOG2_E), V::splat(0.5)).floor();
        // x - n ln 2, with ln 2 split in two so the product is exact.
        let r = V::fma(n, V::splat(-0.693_359_4), x);
        let r = V::fma(n, V::splat(2.121_944_4e-4), r);
        let mut p = V::fma(V::splat(1.987_569_1e-4), r, V::splat(1.398_199_9e-3));
        p = V::fma(p, r, V::splat(8.333_452e-3));
        p = V::fma(p, r, V::splat(4.166_579_6e-2));
        p = V::fma(p, r, V::splat(1.666_666_5e-1));
        p = V::fma(p, r, V::splat(0.5));
        let y = V::fma(p.mul(r), r, r).add(V::splat(1.0));
        y.mul(V::pow2i(n))
    }
}

/// Natural logarithm of positive normal lanes (about 1e-7 absolute on the mantissa part).
///
/// # Safety
/// The CPU runs `V`'s instruction set (see [`Simd`]).
#[inline(always)]
pub unsafe fn ln<V: Simd>(x: V) -> V {
    // SAFETY: vector arithmetic only; the caller runs at `V`'s level.
    unsafe {
        let (m, e) = x.split_exponent();
        // ln m = 2 atanh(t), t = (m - 1) / (m + 1) in [0, 1/3).
        let one = V::splat(1.0);
        let t = m.sub(one).div(m.add(one));
        let t2 = t.mul(t);
        let mut s = V::fma(t2, V::splat(1.0 / 13.0), V::splat(1.0 / 11.0));
        s = V::fma(t2, s, V::splat(1.0 / 9.0));
        s = V::fma(t2, s, V::splat(1.0 / 7.0));
        s = V::fma(t2, s, V::splat(1.0 / 5.0));
        s = V::fma(t2, s, V::splat(1.0 / 3.0));
        s = V::fma(t2, s, one);
        V::fma(e, V::splat(std::f32::consts::LN_2), s.mul(t).add(s.mul(t)))
    }
}

/// [`tanh`] at one lane: vectorisable, within ~1e-7 of the true value, far cheaper than libm.
#[inline(always)]
pub fn fast_tanh(x: f32) -> f32 {
    // SAFETY: `Scalar` runs on every CPU.
    unsafe { tanh(Scalar(x)).0 }
}

/// [`exp`] at one lane: within about 2e-7 relative of `expf`, inlinable.
#[inline(always)]
pub fn fast_exp(x: f32) -> f32 {
    // SAFETY: `Scalar` runs on every CPU.
    unsafe { exp(Scalar(x)).0 }
}

/// [`ln`] at one lane, for positive normal `x`.
#[inline(always)]
pub fn fast_ln(x: f32) -> f32 {
    // SAFETY: `Scalar` runs on every CPU.
    unsafe { ln(Scalar(x)).0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::for_each_level;

    /// `$name(x)`: `$op` of every value of `x` at the active level, through whole vectors and a
    /// partial last one.
    macro_rules! mapper {
        ($name:ident, $op:ident) => {
            fn $name(x: &[f32]) -> Vec<f32> {
                crate::simd::dispatch!(unsafe fn run(x: &[f32], out: &mut [f32]) => generic body);
                /// # Safety
                /// The CPU runs `V`'s instruction set; `out` is as long as `x`.
                #[inline(always)]
                unsafe fn body<V: Simd>(x: &[f32], out: &mut [f32]) {
                    let mut i = 0;
                    // SAFETY: loads and stores stay inside the equal-length slices.
                    unsafe {
                        while i < x.len() {
                            let n = V::LANES.min(x.len() - i);
                            $op(V::load_partial(x.as_ptr().add(i), n)).store_partial(out.as_mut_ptr().add(i), n);
                            i += n;
                        }
                    }
                }
                let mut out = vec![f32::NAN; x.len()];
                // SAFETY: equal lengths.
                unsafe { run(x, &mut out) };
                out
            }
        };
    }
    mapper!(tanh_all, tanh);
    mapper!(exp_all, exp);
    mapper!(ln_all, ln);

    /// [`Simd::zero_where_tiny`] at [`TINY`], in the shape `mapper!` takes.
    #[inline(always)]
    unsafe fn flush<V: Simd>(x: V) -> V {
        // SAFETY: forwarded (the caller runs at `V`'s level).
        unsafe { x.zero_where_tiny(V::splat(TINY)) }
    }
    mapper!(flush_all, flush);

    /// [`Simd::recip`], in the shape `mapper!` takes.
    #[inline(always)]
    unsafe fn recip<V: Simd>(x: V) -> V {
        // SAFETY: forwarded (the caller runs at `V`'s level).
        unsafe { x.recip() }
    }
    mapper!(recip_all, recip);

    #[test]
    fn reciprocals_are_within_2_to_the_minus_22_at_every_level() {
        let x: Vec<f32> = (0..20_001)
            .map(|i| (i as f32 - 10_000.0) * 0.0137)
            .filter(|v| *v != 0.0)
            .chain([1e-30, -3e30, 7.0])
            .collect();
        for_each_level(|level| {
            for (&v, &r) in x.iter().zip(&recip_all(&x)) {
                let want = 1.0 / v as f64;
                assert!(((r as f64 - want) / want).abs() <= 2.4e-7, "{level:?} 1/{v}: {r} vs {want}");
            }
        });
    }

    #[test]
    fn flushing_zeroes_only_tiny_values_at_every_level() {
        let x = [1e-16f32, -1e-16, 1e-15, -1e-15, 2e-40, -2e-40, 0.0, 0.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let want = [0.0f32, 0.0, 1e-15, -1e-15, 0.0, 0.0, 0.0, 0.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        for_each_level(|level| {
            // Every value at every lane position: shifted copies of the list.
            for shift in 0..x.len() {
                let xs: Vec<f32> = x.iter().cycle().skip(shift).take(37).copied().collect();
                let ws: Vec<f32> = want.iter().cycle().skip(shift).take(37).copied().collect();
                let got = flush_all(&xs);
                assert!(
                    got.iter().zip(&ws).all(|(g, w)| g.to_bits() == w.to_bits() || g.is_nan() && w.is_nan()),
                    "{level:?}: {got:?}"
                );
                assert!(
                    xs.iter().map(|&v| flush_tiny(v, TINY)).zip(&ws).all(|(g, w)| g == *w || g.is_nan() && w.is_nan())
                );
            }
        });
    }

    #[test]
    fn scalar_forms_match_libm() {
        let mut worst = [0f64; 3];
        for i in -20_000..=20_000 {
            let x = i as f32 * 1e-3;
            worst[0] = worst[0].max((fast_tanh(x) as f64 - (x as f64).tanh()).abs());
            let e = (x as f64 * 4.0).exp();
            worst[1] = worst[1].max(((fast_exp(x * 4.0) as f64 - e) / e).abs());
            let p = (i + 20_001) as f32 * 1.7e-3;
            worst[2] = worst[2].max((fast_ln(p) as f64 - (p as f64).ln()).abs() / (1.0 + (p as f64).ln().abs()));
        }
        assert!(worst[0] < 2e-6 && worst[1] < 5e-7 && worst[2] < 2e-6, "{worst:?}");
        // Saturation and clamping: exactly ±1 far out, NaN stays NaN.
        assert_eq!((fast_tanh(1e30), fast_tanh(-1e30), fast_tanh(8.0)), (1.0, -1.0, 1.0));
        assert_eq!((fast_tanh(f32::INFINITY), fast_tanh(f32::NEG_INFINITY)), (1.0, -1.0));
        assert!(fast_tanh(f32::NAN).is_nan() && fast_exp(f32::NAN).is_nan());
        // exp clamps its argument to [-87, 88]: tiny and huge inputs give finite normal numbers.
        assert_eq!((fast_exp(-1e9), fast_exp(1e9)), (fast_exp(-87.0), fast_exp(88.0)));
        assert!(fast_exp(-87.0).is_normal() && (fast_exp(-87.0) as f64 / (-87f64).exp() - 1.0).abs() < 1e-6);
        assert!(fast_exp(88.0).is_finite() && (fast_exp(88.0) as f64 / 88f64.exp() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn every_level_matches_the_scalar_forms() {
        // Odd lengths, so the partial vectors run; values across the whole clamped range.
        let x: Vec<f32> = (0..16_001).map(|i| (i as f32 - 8000.0) * 0.0111).chain([1e30, -1e30]).collect();
        let pos: Vec<f32> = (1..16_002).map(|i| i as f32 * 0.37e-2).chain([f32::MIN_POSITIVE, f32::MAX]).collect();
        for_each_level(|level| {
            let (t, e, l) = (tanh_all(&x), exp_all(&x), ln_all(&pos));
            for (i, &v) in x.iter().enumerate() {
                // Against libm within the approximation's error, and against the one-lane form
                // within the rounding of unfused multiply-adds.
                let (tanh64, exp64) = ((v as f64).tanh(), (v.clamp(-87.0, 88.0) as f64).exp());
                assert!((t[i] as f64 - tanh64).abs() <= 2e-6, "{level:?} tanh {v}: {} vs {tanh64}", t[i]);
                assert!((t[i] - fast_tanh(v)).abs() <= 5e-7, "{level:?} tanh {v}: {} vs {}", t[i], fast_tanh(v));
                assert!(((e[i] as f64 - exp64) / exp64).abs() <= 5e-7, "{level:?} exp {v}: {} vs {exp64}", e[i]);
                let want = fast_exp(v);
                assert!(((e[i] - want) / want).abs() <= 5e-7, "{level:?} exp {v}: {} vs {want}", e[i]);
            }
            for (i, &v) in pos.iter().enumerate() {
                let want = (v as f64).ln();
                assert!((l[i] as f64 - want).abs() <= 2e-6 * (1.0 + want.abs()), "{level:?} ln {v}: {}", l[i]);
            }
        });
    }
}
