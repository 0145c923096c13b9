//! Runtime dispatch of the element-wise hot loops to the widest vector unit the CPU has.
//!
//! The crate is compiled for baseline x86-64 (SSE2), so a portable binary runs anywhere. Each
//! hot loop is written once as an `#[inline(always)]` function; the `dispatch!` macro compiles it again
//! inside `#[target_feature]` wrappers (AVX-512, AVX2+FMA) and picks one at run time.

/// Which instruction set the element-wise loops use on this CPU.
pub fn level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            return "avx2+fma";
        }
    }
    "baseline"
}

/// `dispatch!(fn name(args) -> Ret => body_fn)`: defines `name`, which calls the
/// `#[inline(always)]` function `body_fn` compiled for AVX-512, AVX2+FMA or the baseline,
/// whichever the CPU supports. `-> Ret` may be left out for `()`.
macro_rules! dispatch {
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $body:path) => {
        $crate::simd::dispatch!($(#[$doc])* $vis fn $name($($arg: $ty),*) -> () => $body);
    };
    ($(#[$doc:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty => $body:path) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn wide($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn narrow($($arg: $ty),*) -> $ret {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU supports AVX-512F (checked just above).
                    return unsafe { wide($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                    return unsafe { narrow($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

pub(crate) use dispatch;
