//! Runtime dispatch of the hot loops to the widest vector unit the CPU has.
//!
//! The crate is compiled for baseline x86-64, so a portable binary runs anywhere. Each hot loop
//! is written once; the `dispatch!` macro compiles it again inside `#[target_feature]` wrappers
//! (AVX-512, AVX2+FMA) and picks one at run time.
//!
//! Loops written with explicit vectors use the [`Simd`] trait, which has exactly one
//! implementation per [`Level`]: [`V16`] (AVX-512F, 16 lanes), [`V8`] (AVX2 with FMA, 8 lanes) and
//! [`Scalar`] (one lane of plain `f32` arithmetic, the baseline on every architecture). The
//! polynomials of [`math`] (`exp`, `ln`, `tanh`) are written once against the trait; the scalar
//! functions [`math::fast_exp`] and [`math::fast_tanh`] are the same code at one lane.
//!
//! The level is detected once. The environment variable `ELBOW_SIMD` (`avx512`, `avx2` or
//! `baseline`, read once, at the first dispatch) caps it for the whole process, so the narrower
//! paths can be measured on a wider machine; [`at_level`] forces one level on the calling thread
//! (the tests run every kernel at every level this way). A level the CPU lacks is never chosen.

use std::cell::Cell;
use std::sync::OnceLock;

pub mod math;
mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

pub use scalar::Scalar;
#[cfg(target_arch = "x86_64")]
pub use x86::{V8, V16};

/// An instruction-set level the dispatched loops can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Plain scalar code, compiled for the target's baseline (SSE2 on x86-64).
    Baseline,
    /// AVX2 with FMA, 8 lanes of f32.
    Avx2,
    /// AVX-512F, 16 lanes of f32.
    Avx512,
}

impl Level {
    /// Every level, narrowest first.
    pub const ALL: [Level; 3] = [Level::Baseline, Level::Avx2, Level::Avx512];

    /// The name `ELBOW_SIMD` accepts for this level, also used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Level::Baseline => "baseline",
            Level::Avx2 => "avx2+fma",
            Level::Avx512 => "avx512f",
        }
    }

    /// f32 lanes per vector at this level.
    pub fn lanes(self) -> usize {
        match self {
            Level::Avx512 => 16,
            Level::Avx2 => 8,
            Level::Baseline => 1,
        }
    }
}

/// The widest level this CPU supports, ignoring `ELBOW_SIMD` (detected once).
pub fn detected() -> Level {
    static DETECTED: OnceLock<Level> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                return if has!("avx512f") { Level::Avx512 } else { Level::Avx2 };
            }
        }
        Level::Baseline
    })
}

/// Parses an `ELBOW_SIMD` value; `None` for anything unknown (which then caps nothing).
pub fn parse_level(s: &str) -> Option<Level> {
    match s.trim().to_ascii_lowercase().as_str() {
        "avx512" | "avx512f" | "avx-512" => Some(Level::Avx512),
        "avx2" | "avx2+fma" | "fma" => Some(Level::Avx2),
        "baseline" | "scalar" | "none" => Some(Level::Baseline),
        _ => None,
    }
}

/// The level a cap allows on a CPU whose widest level is `widest`.
fn capped(cap: Option<Level>, widest: Level) -> Level {
    cap.map_or(widest, |c| c.min(widest))
}

thread_local! {
    /// The level [`at_level`] forces on this thread, if any.
    static FORCED: Cell<Option<Level>> = const { Cell::new(None) };
}

/// The level every dispatched loop uses: the one [`at_level`] forces on this thread, else
/// [`detected`] capped by `ELBOW_SIMD` (read once). Never a level the CPU lacks.
#[inline]
pub fn active() -> Level {
    static PROCESS: OnceLock<Level> = OnceLock::new();
    FORCED.get().unwrap_or_else(|| {
        *PROCESS.get_or_init(|| capped(std::env::var("ELBOW_SIMD").ok().as_deref().and_then(parse_level), detected()))
    })
}

/// Name of the instruction set the dispatched loops use now (after `ELBOW_SIMD`).
pub fn level() -> &'static str {
    active().name()
}

/// Runs `f` with every dispatched loop on the calling thread at exactly `level` (whatever
/// `ELBOW_SIMD` says), or returns `None` without running it if the CPU lacks `level`.
///
/// Work `f` hands to other threads runs at their own level. Nested calls restore the outer level
/// on return, also when `f` panics.
pub fn at_level<R>(level: Level, f: impl FnOnce() -> R) -> Option<R> {
    if level > detected() {
        return None;
    }
    struct Restore(Option<Level>);
    impl Drop for Restore {
        fn drop(&mut self) {
            FORCED.set(self.0);
        }
    }
    let _restore = Restore(FORCED.replace(Some(level)));
    Some(f())
}

/// `dispatch!(fn name(args) -> Ret => body_fn)`: defines `name`, which calls the safe
/// `#[inline(always)]` function `body_fn` compiled for AVX-512, AVX2+FMA or the baseline,
/// whichever [`active`] names. `-> Ret` may be left out for `()`.
///
/// `dispatch!(unsafe fn name(args) -> Ret => generic body_fn)` defines an `unsafe fn name` that
/// calls the `unsafe` body `body_fn::<V>` with `V` the [`Simd`] type of the level: [`V16`], [`V8`]
/// or [`Scalar`]. The wrapper guarantees the body's first precondition (the CPU runs `V`'s
/// instruction set); the caller of `name` owes every other one, so `name` carries the body's
/// `# Safety` section.
macro_rules! dispatch {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $crate::simd::dispatch!($(#[$doc])* $vis fn $name($($arg: $ty),*) -> () => $body);
    };
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $body:path) => {
        $crate::simd::dispatch!(@emit [] $(#[$doc])* $vis fn $name($($arg: $ty),*) -> $ret;
            wide: $body; narrow: $body; base: $body);
    };
    ($(#[$doc:meta])* $vis:vis unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => generic $body:ident) => {
        $crate::simd::dispatch!($(#[$doc])* $vis unsafe fn $name($($arg: $ty),*) -> () => generic $body);
    };
    ($(#[$doc:meta])* $vis:vis unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => generic $body:ident) => {
        $crate::simd::dispatch!(@emit [unsafe] $(#[$doc])* $vis fn $name($($arg: $ty),*) -> $ret;
            wide: $body::<$crate::simd::V16>;
            narrow: $body::<$crate::simd::V8>;
            base: $body::<$crate::simd::Scalar>);
    };
    (@emit [$($unsafety:tt)?] $(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;
        wide: $wide:path; narrow: $narrow:path; base: $base:path) => {
        $(#[$doc])*
        $vis $($unsafety)? fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn wide($($arg: $ty),*) -> $ret {
                    // SAFETY: forwarded from the dispatching function (see the macro's doc).
                    #[allow(unused_unsafe)]
                    unsafe { $wide($($arg),*) }
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn narrow($($arg: $ty),*) -> $ret {
                    // SAFETY: as above.
                    #[allow(unused_unsafe)]
                    unsafe { $narrow($($arg),*) }
                }
                match $crate::simd::active() {
                    // SAFETY: `active` only names levels the CPU supports; the caller owes the
                    // body's other preconditions.
                    $crate::simd::Level::Avx512 => return unsafe { wide($($arg),*) },
                    // SAFETY: as above.
                    $crate::simd::Level::Avx2 => return unsafe { narrow($($arg),*) },
                    $crate::simd::Level::Baseline => {}
                }
            }
            // SAFETY: the baseline runs on every CPU; the caller owes the body's other
            // preconditions.
            #[allow(unused_unsafe)]
            unsafe { $base($($arg),*) }
        }
    };
}

pub(crate) use dispatch;

/// A vector of f32 lanes with the few operations the kernels need.
///
/// # Safety
/// Every method is `#[inline(always)]` and `unsafe`: it may only run on a CPU with the
/// instruction set of the implementing type (`dispatch!` guarantees it for the bodies it
/// calls), and pointer arguments must be valid for `LANES` floats (or the count given).
#[allow(clippy::missing_safety_doc)] // one contract for every method, stated above
pub trait Simd: Copy {
    /// f32 lanes.
    const LANES: usize;
    /// The level whose instruction set this type needs.
    const LEVEL: Level;
    /// All lanes `x`.
    unsafe fn splat(x: f32) -> Self;
    /// Loads `LANES` floats (unaligned).
    unsafe fn load(p: *const f32) -> Self;
    /// Stores `LANES` floats (unaligned).
    unsafe fn store(self, p: *mut f32);
    /// Loads `n <= LANES` floats, zero-filling the rest.
    unsafe fn load_partial(p: *const f32, n: usize) -> Self;
    /// Stores the first `n <= LANES` lanes.
    unsafe fn store_partial(self, p: *mut f32, n: usize);
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
    /// `1 / self`, within 2^-22 relative (an estimate refined by one Newton step where the level
    /// has one: a few times cheaper than a division on wide vectors).
    unsafe fn recip(self) -> Self;
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
    /// 0 where `|self| < tiny`, else `self` (NaN and infinities stay).
    unsafe fn zero_where_tiny(self, tiny: Self) -> Self;
    /// Sum of the lanes, in a fixed order.
    unsafe fn reduce_sum(self) -> f32;
}

#[cfg(not(target_arch = "x86_64"))]
/// Off x86 every level is the scalar baseline (dispatch never picks the wider ones).
pub type V8 = Scalar;
#[cfg(not(target_arch = "x86_64"))]
/// Off x86 every level is the scalar baseline (dispatch never picks the wider ones).
pub type V16 = Scalar;

/// Test support: every level, run through [`at_level`], with a printed note for each level this
/// CPU lacks (those are skipped, never executed).
#[cfg(test)]
pub(crate) fn for_each_level(mut f: impl FnMut(Level)) {
    for level in Level::ALL {
        if at_level(level, || f(level)).is_none() {
            println!("skipping the {} kernels: this CPU lacks them", level.name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling_and_caps_at_the_cpu() {
        for (s, want) in [
            ("AVX2", Some(Level::Avx2)),
            (" avx2+fma ", Some(Level::Avx2)),
            ("fma", Some(Level::Avx2)),
            ("baseline", Some(Level::Baseline)),
            ("scalar", Some(Level::Baseline)),
            ("avx512", Some(Level::Avx512)),
            ("AVX-512", Some(Level::Avx512)),
            ("avx512f", Some(Level::Avx512)),
            ("turbo", None),
            ("", None),
        ] {
            assert_eq!(parse_level(s), want, "{s:?}");
        }
        // A cap narrows, never widens; no cap (or an unknown value) keeps the CPU's level.
        assert_eq!(capped(Some(Level::Avx2), Level::Avx512), Level::Avx2);
        assert_eq!(capped(Some(Level::Avx512), Level::Avx2), Level::Avx2);
        assert_eq!(capped(None, Level::Avx2), Level::Avx2);
        // Every level a vector type names matches its width.
        assert_eq!((Scalar::LANES, Level::Baseline.lanes()), (1, 1));
        #[cfg(target_arch = "x86_64")]
        assert_eq!((V8::LANES, V16::LANES, V8::LEVEL, V16::LEVEL), (8, 16, Level::Avx2, Level::Avx512));
    }

    #[test]
    fn at_level_forces_the_level_on_this_thread_and_restores_it() {
        let outer = active();
        for level in Level::ALL {
            let inside = at_level(level, || {
                let nested = at_level(Level::Baseline, active);
                (active(), nested)
            });
            match inside {
                Some((seen, nested)) => {
                    assert!(level <= detected());
                    assert_eq!((seen, nested), (level, Some(Level::Baseline)));
                }
                None => assert!(level > detected(), "{level:?} refused on a CPU with {:?}", detected()),
            }
            assert_eq!(active(), outer);
        }
        // Restored after a panic too.
        let caught = std::panic::catch_unwind(|| at_level(Level::Baseline, || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(active(), outer);
    }
}
