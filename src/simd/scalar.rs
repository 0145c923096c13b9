//! The baseline level: one lane of plain `f32` arithmetic, valid on every CPU.

use super::math::flush_tiny;
use super::{Level, Simd};

/// One lane of plain scalar code: the baseline level on every architecture, and the type at
/// which the vector polynomials of [`super::math`] become the scalar functions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scalar(pub f32);

impl Simd for Scalar {
    const LANES: usize = 1;
    const LEVEL: Level = Level::Baseline;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        Self(x)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the trait's contract (`p` is valid for one float).
        Self(unsafe { p.read_unaligned() })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: the trait's contract (`p` is valid for one float).
        unsafe { p.write_unaligned(self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: the trait's contract (`p` is valid for `n` floats).
        if n == 0 { Self(0.0) } else { unsafe { Self::load(p) } }
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        if n > 0 {
            // SAFETY: the trait's contract (`p` is valid for `n` floats).
            unsafe { self.store(p) }
        }
    }
    /// `a * b + c`, rounded twice: the baseline has no fused multiply-add instruction.
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        Self(a.0 * b.0 + c.0)
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        Self(self.0 + b.0)
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        Self(self.0 - b.0)
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        Self(self.0 * b.0)
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        Self(self.0 / b.0)
    }
    #[inline(always)]
    unsafe fn recip(self) -> Self {
        Self(1.0 / self.0)
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        Self(if self.0 < b.0 { self.0 } else { b.0 })
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        Self(if self.0 > b.0 { self.0 } else { b.0 })
    }
    #[inline(always)]
    unsafe fn sqrt(self) -> Self {
        Self(self.0.sqrt())
    }
    #[inline(always)]
    unsafe fn floor(self) -> Self {
        Self(self.0.floor())
    }
    #[inline(always)]
    unsafe fn pow2i(n: Self) -> Self {
        Self(f32::from_bits(((n.0 as i32 + 127) as u32) << 23))
    }
    #[inline(always)]
    unsafe fn split_exponent(self) -> (Self, Self) {
        let bits = self.0.to_bits();
        let e = (bits >> 23) as i32 - 127;
        (Self(f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000)), Self(e as f32))
    }
    #[inline(always)]
    unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
        Self(if x.0 > lo.0 && x.0 < hi.0 { v.0 } else { 0.0 })
    }
    #[inline(always)]
    unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
        Self(if x.0 > 0.0 { v.0 } else { 0.0 })
    }
    #[inline(always)]
    unsafe fn zero_where_tiny(self, tiny: Self) -> Self {
        Self(flush_tiny(self.0, tiny.0))
    }
    #[inline(always)]
    unsafe fn reduce_sum(self) -> f32 {
        self.0
    }
}
