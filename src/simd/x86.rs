//! The two x86-64 vector levels: [`V16`] (AVX-512F) and [`V8`] (AVX2 with FMA).
//!
//! Every `unsafe` block below relies on the [`Simd`] contract: the caller runs on a CPU with the
//! type's instruction set, and pointers are valid for the floats the method reads or writes.

use super::{Level, Simd};
use std::arch::x86_64::*;

/// 16 lanes of AVX-512F.
#[derive(Clone, Copy)]
pub struct V16(__m512);

/// 8 lanes of AVX2 with FMA.
#[derive(Clone, Copy)]
pub struct V8(__m256);

/// The mask of the first `n <= 16` lanes.
#[inline(always)]
fn first_lanes(n: usize) -> __mmask16 {
    ((1u32 << n) - 1) as __mmask16
}

impl Simd for V16 {
    const LANES: usize = 16;
    const LEVEL: Level = Level::Avx512;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_set1_ps(x)) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: the trait's contract.
        unsafe { _mm512_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: the trait's contract; masked-off lanes are not read (no fault past the end).
        unsafe { Self(_mm512_maskz_loadu_ps(first_lanes(n), p)) }
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        // SAFETY: the trait's contract; masked-off lanes are not written.
        unsafe { _mm512_mask_storeu_ps(p, first_lanes(n), self.0) }
    }
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_fmadd_ps(a.0, b.0, c.0)) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_add_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_sub_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_mul_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_div_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn recip(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            // 14-bit estimate, then r + r (1 - x r): about 2^-23.
            let r = _mm512_rcp14_ps(self.0);
            Self(_mm512_fmadd_ps(r, _mm512_fnmadd_ps(self.0, r, _mm512_set1_ps(1.0)), r))
        }
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_min_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_max_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn sqrt(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_sqrt_ps(self.0)) }
    }
    #[inline(always)]
    unsafe fn floor(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(self.0)) }
    }
    #[inline(always)]
    unsafe fn pow2i(n: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let i = _mm512_add_epi32(_mm512_cvtps_epi32(n.0), _mm512_set1_epi32(127));
            Self(_mm512_castsi512_ps(_mm512_slli_epi32::<23>(i)))
        }
    }
    #[inline(always)]
    unsafe fn split_exponent(self) -> (Self, Self) {
        // SAFETY: the trait's contract.
        unsafe {
            let bits = _mm512_castps_si512(self.0);
            let e = _mm512_sub_epi32(_mm512_srli_epi32::<23>(bits), _mm512_set1_epi32(127));
            let m =
                _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi32(0x007f_ffff)), _mm512_set1_epi32(0x3f80_0000));
            (Self(_mm512_castsi512_ps(m)), Self(_mm512_cvtepi32_ps(e)))
        }
    }
    #[inline(always)]
    unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let k = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x.0, lo.0) & _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x.0, hi.0);
            Self(_mm512_maskz_mov_ps(k, v.0))
        }
    }
    #[inline(always)]
    unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm512_maskz_mov_ps(_mm512_cmp_ps_mask::<_CMP_GT_OQ>(x.0, _mm512_setzero_ps()), v.0)) }
    }
    #[inline(always)]
    unsafe fn zero_where_tiny(self, tiny: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let abs =
                _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(self.0), _mm512_set1_epi32(0x7fff_ffff)));
            Self(_mm512_mask_mov_ps(self.0, _mm512_cmp_ps_mask::<_CMP_LT_OQ>(abs, tiny.0), _mm512_setzero_ps()))
        }
    }
    #[inline(always)]
    unsafe fn reduce_sum(self) -> f32 {
        // SAFETY: the trait's contract (AVX-512F implies AVX2).
        unsafe {
            let lo = _mm512_castps512_ps256(self.0);
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(self.0)));
            V8(_mm256_add_ps(lo, hi)).reduce_sum()
        }
    }
}

impl Simd for V8 {
    const LANES: usize = 8;
    const LEVEL: Level = Level::Avx2;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_set1_ps(x)) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_loadu_ps(p)) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: the trait's contract.
        unsafe { _mm256_storeu_ps(p, self.0) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: the trait's contract; masked-off lanes are not read (no fault past the end).
        unsafe { Self(_mm256_maskload_ps(p, first_lanes_8(n))) }
    }
    #[inline(always)]
    unsafe fn store_partial(self, p: *mut f32, n: usize) {
        // SAFETY: the trait's contract; masked-off lanes are not written.
        unsafe { _mm256_maskstore_ps(p, first_lanes_8(n), self.0) }
    }
    #[inline(always)]
    unsafe fn fma(a: Self, b: Self, c: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_fmadd_ps(a.0, b.0, c.0)) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_add_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_sub_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_mul_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_div_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn recip(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            // 12-bit estimate, then r + r (1 - x r): about 2^-22.
            let r = _mm256_rcp_ps(self.0);
            Self(_mm256_fmadd_ps(r, _mm256_fnmadd_ps(self.0, r, _mm256_set1_ps(1.0)), r))
        }
    }
    #[inline(always)]
    unsafe fn min(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_min_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn max(self, b: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_max_ps(self.0, b.0)) }
    }
    #[inline(always)]
    unsafe fn sqrt(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_sqrt_ps(self.0)) }
    }
    #[inline(always)]
    unsafe fn floor(self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_floor_ps(self.0)) }
    }
    #[inline(always)]
    unsafe fn pow2i(n: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let i = _mm256_add_epi32(_mm256_cvtps_epi32(n.0), _mm256_set1_epi32(127));
            Self(_mm256_castsi256_ps(_mm256_slli_epi32::<23>(i)))
        }
    }
    #[inline(always)]
    unsafe fn split_exponent(self) -> (Self, Self) {
        // SAFETY: the trait's contract.
        unsafe {
            let bits = _mm256_castps_si256(self.0);
            let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(127));
            let m =
                _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007f_ffff)), _mm256_set1_epi32(0x3f80_0000));
            (Self(_mm256_castsi256_ps(m)), Self(_mm256_cvtepi32_ps(e)))
        }
    }
    #[inline(always)]
    unsafe fn keep_where_between(x: Self, lo: Self, hi: Self, v: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let k = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x.0, lo.0), _mm256_cmp_ps::<_CMP_LT_OQ>(x.0, hi.0));
            Self(_mm256_and_ps(k, v.0))
        }
    }
    #[inline(always)]
    unsafe fn keep_where_positive(x: Self, v: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe { Self(_mm256_and_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(x.0, _mm256_setzero_ps()), v.0)) }
    }
    #[inline(always)]
    unsafe fn zero_where_tiny(self, tiny: Self) -> Self {
        // SAFETY: the trait's contract.
        unsafe {
            let abs = _mm256_and_ps(self.0, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff)));
            Self(_mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(abs, tiny.0), self.0))
        }
    }
    #[inline(always)]
    unsafe fn reduce_sum(self) -> f32 {
        // SAFETY: the trait's contract.
        unsafe {
            // (0+4, 1+5, 2+6, 3+7), then (04+26, 15+37), then the two.
            let s = _mm_add_ps(_mm256_castps256_ps128(self.0), _mm256_extractf128_ps::<1>(self.0));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s)))
        }
    }
}

/// The AVX2 lane mask of the first `n <= 8` lanes (sign bit set where a lane is kept).
#[inline(always)]
unsafe fn first_lanes_8(n: usize) -> __m256i {
    const IOTA: [i32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
    // SAFETY: the caller runs with AVX2; IOTA holds 8 integers.
    unsafe { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_loadu_si256(IOTA.as_ptr().cast())) }
}
