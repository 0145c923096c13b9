//! Runtime dispatch of the hot loops to the widest vector unit the CPU has.
//!
//! The crate is compiled for baseline x86-64 (SSE2), so a portable binary runs anywhere. Each
//! hot loop is written once as an `#[inline(always)]` function; the `dispatch!` macro compiles it again
//! inside `#[target_feature]` wrappers (AVX-512, AVX2+FMA) and picks one at run time.
//!
//! The level is detected once. The environment variable `ELBOW_SIMD` (`avx512`, `avx2` or
//! `baseline`, read once, at the first dispatch) caps it, so the narrower paths can be measured
//! and tested on a wider machine; a level the CPU lacks is never chosen.
//!
//! Kernels that are written with explicit vectors use the [`Simd`] trait: one generic body,
//! instantiated for 16-lane AVX-512, 8-lane AVX2+FMA, 4-lane SSE2 (the x86-64 baseline, with
//! separate multiply and add) and a 1-lane scalar fallback on other architectures.

use std::sync::OnceLock;

/// An instruction-set level the dispatched loops can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// SSE2 (x86-64) or plain scalar code elsewhere.
    Baseline,
    /// AVX2 with FMA, 8 lanes of f32.
    Avx2,
    /// AVX-512F, 16 lanes of f32.
    Avx512,
}

impl Level {
    /// The name `ELBOW_SIMD` accepts for this level, also used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Avx2 => "avx2+fma",
            Level::Avx512 => "avx512f",
        }
    }

    /// f32 lanes per vector at this level (1 for the scalar fallback off x86).
    pub fn lanes(self) -> usize {
        match self {
            Level::Avx512 => 16,
            Level::Avx2 => 8,
            Level::Baseline if cfg!(target_arch = "x86_64") => 4,
            Level::Baseline => 1,
        }
    }
}

/// The widest level this CPU supports, ignoring `ELBOW_SIMD`.
pub fn detected() -> Level {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            return Level::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return Level::Avx2;
        }
    }
    Level::Baseline
}

/// Parses an `ELBOW_SIMD` value; `None` for anything unknown (which then caps nothing).
pub fn parse_level(s: &str) -> Option<Level> {
    match s.trim().to_ascii_lowercase().as_str() {
        "avx512" | "avx512f" | "avx-512" => Some(Level::Avx512),
        "avx2" | "avx2+fma" | "fma" => Some(Level::Avx2),
        "baseline" | "sse2" | "scalar" | "none" => Some(Level::Baseline),
        _ => None,
    }
}

/// The level every dispatched loop uses: [`detected`], capped by `ELBOW_SIMD` (read once).
#[inline]
pub fn active() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let cap = std::env::var("ELBOW_SIMD").ok().as_deref().and_then(parse_level);
        cap.map_or(detected(), |c| c.min(detected()))
    })
}

/// Name of the instruction set the dispatched loops use on this CPU (after `ELBOW_SIMD`).
pub fn level() -> &'static str {
    active().name()
}

/// `dispatch!(fn name(args) -> Ret => body_fn)`: defines `name`, which calls the
/// `#[inline(always)]` function `body_fn` compiled for AVX-512, AVX2+FMA or the baseline,
/// whichever [`active`] names. `-> Ret` may be left out for `()`.
///
/// `dispatch!(fn name(args) -> Ret => generic body_fn)` calls `body_fn::<V>` instead, with `V`
/// the [`Simd`] vector type of the level.
macro_rules! dispatch {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $($body:tt)+) => {
        $crate::simd::dispatch!($(#[$doc])* $vis fn $name($($arg: $ty),*) -> () => $($body)+);
    };
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => generic $body:ident) => {
        $crate::simd::dispatch!(@emit $(#[$doc])* $vis fn $name($($arg: $ty),*) -> $ret;
            wide: $body::<$crate::simd::V16>;
            narrow: $body::<$crate::simd::V8>;
            base: $body::<$crate::simd::Base>);
    };
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $body:path) => {
        $crate::simd::dispatch!(@emit $(#[$doc])* $vis fn $name($($arg: $ty),*) -> $ret;
            wide: $body; narrow: $body; base: $body);
    };
    (@emit $(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;
        wide: $wide:path; narrow: $narrow:path; base: $base:path) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn wide($($arg: $ty),*) -> $ret {
                    $wide($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn narrow($($arg: $ty),*) -> $ret {
                    $narrow($($arg),*)
                }
                match $crate::simd::active() {
                    // SAFETY: `active` only names levels the CPU supports.
                    $crate::simd::Level::Avx512 => return unsafe { wide($($arg),*) },
                    // SAFETY: as above.
                    $crate::simd::Level::Avx2 => return unsafe { narrow($($arg),*) },
                    $crate::simd::Level::Baseline => {}
                }
            }
            $base($($arg),*)
        }
    };
}

pub(crate) use dispatch;

/// A vector of f32 lanes with the few operations the kernels need.
///
/// Every method is `#[inline(always)]` and `unsafe`: it may only run inside a function compiled
/// with the instruction set of the implementing type (the `dispatch!` wrappers guarantee it),
/// and pointer arguments must be valid for `LANES` floats.
#[allow(clippy::missing_safety_doc)]
pub trait Simd: Copy {
    /// f32 lanes.
    const LANES: usize;
    /// Row vectors per GEMM micro-tile.
    const MV: usize;
    /// Columns per GEMM micro-tile (`MV * NR` accumulators stay in registers).
    const NR: usize;
    /// All lanes `x`.
    unsafe fn splat(x: f32) -> Self;
    /// Loads `LANES` floats (unaligned).
    unsafe fn load(p: *const f32) -> Self;
    /// Stores `LANES` floats (unaligned).
    unsafe fn store(self, p: *mut f32);
    /// `a * b + c` (fused where the level has FMA).
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self;
    /// Lane-wise sum.
    unsafe fn add(self, b: Self) -> Self;
    /// Lane-wise difference.
    unsafe fn sub(self, b: Self) -> Self;
    /// Lane-wise product.
    unsafe fn mul(self, b: Self) -> Self;
    /// Lane-wise quotient.
    unsafe fn div(self, b: Self) -> Self;
    /// Lane-wise minimum (returns `b` where either is NaN).
    unsafe fn min(self, b: Self) -> Self;
    /// Lane-wise maximum (returns `b` where either is NaN).
    unsafe fn max(self, b: Self) -> Self;
    /// Lane-wise square root.
    unsafe fn sqrt(self) -> Self;
    /// Rounds every lane down to an integer.
    unsafe fn floor(self) -> Self;
    /// `2^n` for integer-valued lanes `n` in `[-126, 127]`.
    unsafe fn pow2i(n: Self) -> Self;
    /// Splits positive normal lanes into `(m, e)` with `x = m · 2^e`, `m` in `[1, 2)`.
    unsafe fn split_exponent(self) -> (Self, Self);
    /// `v` where `lo < x < hi`, else 0.
    unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self;
    /// `v` where `x > 0`, else 0.
    unsafe fn keep_where_positive(x: Self, v: Self) -> Self;
    /// Sum of the lanes, in a fixed order.
    unsafe fn reduce_sum(self) -> f32;

    /// Loads `n < LANES` floats, zero-filling the rest.
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        let mut buf = [0f32; 16];
        // SAFETY: the caller guarantees `n` readable floats at `p`; `buf` holds 16 >= LANES.
        unsafe {
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
            Self::load(buf.as_ptr())
        }
    }

    /// Stores the first `n < LANES` lanes.
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        let mut buf = [0f32; 16];
        // SAFETY: the caller guarantees `n` writable floats at `p`; `buf` holds 16 >= LANES.
        unsafe {
            self.store(buf.as_mut_ptr());
            std::ptr::copy_nonoverlapping(buf.as_ptr(), p, n);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Simd;
    use std::arch::x86_64::*;

    /// 16 lanes of AVX-512F.
    #[derive(Clone, Copy)]
    pub struct V16(__m512);

    /// 8 lanes of AVX2 with FMA.
    #[derive(Clone, Copy)]
    pub struct V8(__m256);

    /// 4 lanes of SSE2, multiply and add separately (the x86-64 baseline).
    #[derive(Clone, Copy)]
    pub struct Base(__m128);

    impl Simd for V16 {
        const LANES: usize = 16;
        const MV: usize = 2;
        const NR: usize = 12;
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_set1_ps(x)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { _mm512_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_fmadd_ps(a.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_add_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_sub_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_mul_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_div_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_min_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_max_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sqrt(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn floor(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(self.0)) }
        }
        #[inline(always)]
        unsafe fn pow2i(n: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let i = _mm512_add_epi32(_mm512_cvtps_epi32(n.0), _mm512_set1_epi32(127));
                Self(_mm512_castsi512_ps(_mm512_slli_epi32::<23>(i)))
            }
        }
        #[inline(always)]
        unsafe fn split_exponent(self) -> (Self, Self) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let bits = _mm512_castps_si512(self.0);
                let e = _mm512_sub_epi32(_mm512_srli_epi32::<23>(bits), _mm512_set1_epi32(127));
                let m = _mm512_or_si512(
                    _mm512_and_si512(bits, _mm512_set1_epi32(0x007f_ffff)),
                    _mm512_set1_epi32(0x3f80_0000),
                );
                (Self(_mm512_castsi512_ps(m)), Self(_mm512_cvtepi32_ps(e)))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let k = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x.0, lo.0) & _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x.0, hi.0);
                Self(_mm512_maskz_mov_ps(k, v.0))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let k = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x.0, _mm512_setzero_ps());
                Self(_mm512_maskz_mov_ps(k, v.0))
            }
        }
        #[inline(always)]
        unsafe fn reduce_sum(self) -> f32 {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let lo = _mm512_castps512_ps256(self.0);
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self.0)));
                V8(_mm256_add_ps(lo, hi)).reduce_sum()
            }
        }
    }

    impl Simd for V8 {
        const LANES: usize = 8;
        const MV: usize = 2;
        const NR: usize = 6;
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_set1_ps(x)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { _mm256_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_fmadd_ps(a.0, b.0, c.0)) }
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_add_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_sub_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_mul_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_div_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_min_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_max_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sqrt(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn floor(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_floor_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn pow2i(n: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let i = _mm256_add_epi32(_mm256_cvtps_epi32(n.0), _mm256_set1_epi32(127));
                Self(_mm256_castsi256_ps(_mm256_slli_epi32::<23>(i)))
            }
        }
        #[inline(always)]
        unsafe fn split_exponent(self) -> (Self, Self) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let bits = _mm256_castps_si256(self.0);
                let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(127));
                let m = _mm256_or_si256(
                    _mm256_and_si256(bits, _mm256_set1_epi32(0x007f_ffff)),
                    _mm256_set1_epi32(0x3f80_0000),
                );
                (Self(_mm256_castsi256_ps(m)), Self(_mm256_cvtepi32_ps(e)))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let k = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x.0, lo.0), _mm256_cmp_ps::<_CMP_LT_OQ>(x.0, hi.0));
                Self(_mm256_and_ps(k, v.0))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x.0, _mm256_setzero_ps()), v.0)) }
        }
        #[inline(always)]
        unsafe fn reduce_sum(self) -> f32 {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let s = _mm_add_ps(_mm256_castps256_ps128(self.0), _mm256_extractf128_ps::<1>(self.0));
                Base(s).reduce_sum()
            }
        }
    }

    impl Simd for Base {
        const LANES: usize = 4;
        const MV: usize = 2;
        const NR: usize = 6;
        #[inline(always)]
        unsafe fn splat(x: f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_set1_ps(x)) }
        }
        #[inline(always)]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_loadu_ps(p)) }
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f32) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { _mm_storeu_ps(p, self.0) }
        }
        #[inline(always)]
        unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_add_ps(_mm_mul_ps(a.0, b.0), c.0)) }
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_add_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sub(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_sub_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn mul(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_mul_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn div(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_div_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn min(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_min_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn max(self, b: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_max_ps(self.0, b.0)) }
        }
        #[inline(always)]
        unsafe fn sqrt(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_sqrt_ps(self.0)) }
        }
        #[inline(always)]
        unsafe fn floor(self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                // SSE2 has no round: truncate, then step down where that rounded up (x < 0). Lanes
                // here are bounded (|x| < 2^31), as every caller clamps first.
                let t = _mm_cvtepi32_ps(_mm_cvttps_epi32(self.0));
                let up = _mm_and_ps(_mm_cmpgt_ps(t, self.0), _mm_set1_ps(1.0));
                Self(_mm_sub_ps(t, up))
            }
        }
        #[inline(always)]
        unsafe fn pow2i(n: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let i = _mm_add_epi32(_mm_cvtps_epi32(n.0), _mm_set1_epi32(127));
                Self(_mm_castsi128_ps(_mm_slli_epi32::<23>(i)))
            }
        }
        #[inline(always)]
        unsafe fn split_exponent(self) -> (Self, Self) {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let bits = _mm_castps_si128(self.0);
                let e = _mm_sub_epi32(_mm_srli_epi32::<23>(bits), _mm_set1_epi32(127));
                let m = _mm_or_si128(_mm_and_si128(bits, _mm_set1_epi32(0x007f_ffff)), _mm_set1_epi32(0x3f80_0000));
                (Self(_mm_castsi128_ps(m)), Self(_mm_cvtepi32_ps(e)))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let k = _mm_and_ps(_mm_cmpgt_ps(x.0, lo.0), _mm_cmplt_ps(x.0, hi.0));
                Self(_mm_and_ps(k, v.0))
            }
        }
        #[inline(always)]
        unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe { Self(_mm_and_ps(_mm_cmpgt_ps(x.0, _mm_setzero_ps()), v.0)) }
        }
        #[inline(always)]
        unsafe fn reduce_sum(self) -> f32 {
            // SAFETY: the caller runs at this type's level (see the trait).
            unsafe {
                let mut b = [0f32; 4];
                _mm_storeu_ps(b.as_mut_ptr(), self.0);
                (b[0] + b[2]) + (b[1] + b[3])
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub use x86::{Base, V8, V16};

/// One lane of plain scalar code, the kernels' portable fallback (and a width-1 test case).
#[derive(Clone, Copy)]
pub struct Scalar(f32);

impl Simd for Scalar {
    const LANES: usize = 1;
    const MV: usize = 2;
    const NR: usize = 6;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        Self(x)
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        Self(unsafe { p.read_unaligned() })
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        unsafe { p.write_unaligned(self.0) }
    }
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
    unsafe fn reduce_sum(self) -> f32 {
        self.0
    }
}

#[cfg(not(target_arch = "x86_64"))]
/// The baseline vector type off x86: plain scalars.
pub type Base = Scalar;
#[cfg(not(target_arch = "x86_64"))]
/// Unused off x86 (dispatch never picks it).
pub type V8 = Scalar;
#[cfg(not(target_arch = "x86_64"))]
/// Unused off x86 (dispatch never picks it).
pub type V16 = Scalar;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels() {
        assert_eq!(parse_level("AVX2"), Some(Level::Avx2));
        assert_eq!(parse_level("baseline"), Some(Level::Baseline));
        assert_eq!(parse_level("avx512"), Some(Level::Avx512));
        assert_eq!(parse_level("turbo"), None);
        assert!(active() <= detected());
    }
}
