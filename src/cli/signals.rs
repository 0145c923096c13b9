//! Ctrl-C, SIGTERM and SIGHUP (a closed terminal): a training run stops cleanly between two
//! steps; anything else ends at once. SIGXFSZ (a file-size limit, `ulimit -f`) is ignored, so a
//! write past the limit fails with an error (EFBIG) that the command reports, and its temporary
//! file is removed, instead of the process dying with the file left behind.
//!
//! The handler only touches atomics, `unlink` and `_exit` (all async-signal-safe). While a run polls
//! ([`Polling`] is alive), a first signal sets a flag that the run checks after every step; the
//! run then ends with [`elbow::learned::TrainError::Cancelled`], saves nothing, and the command
//! exits with 130. With no run polling, or on a second signal, the process exits with 130 at
//! once: nothing is half-written then, since files are only ever replaced atomically, and the
//! temporary file of a write under way is removed ([`elbow::files::remove_pending_temp`]).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Set by the first SIGINT, SIGTERM or SIGHUP.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// How many runs are polling [`interrupted`] right now.
static POLLING: AtomicUsize = AtomicUsize::new(0);

#[cfg(unix)]
extern "C" fn on_signal(_signal: libc::c_int) {
    if POLLING.load(Ordering::SeqCst) == 0 || INTERRUPTED.swap(true, Ordering::SeqCst) {
        // A figure or model being written is removed, not left as a `.tmp` file.
        elbow::files::remove_pending_temp();
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(i32::from(super::INTERRUPTED_EXIT)) };
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP, and ignores SIGXFSZ (call once, first
/// thing in `main`).
pub(crate) fn install() {
    #[cfg(unix)]
    // SAFETY: SIG_IGN is a valid disposition; called before any thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    #[cfg(unix)]
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only uses atomics and `_exit`; sigaction with an empty mask and
        // SA_RESTART is the plain way to install it.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// True once a signal has asked the running work to stop.
pub(crate) fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// While alive, a signal sets [`interrupted`] instead of ending the process.
pub(crate) struct Polling(());

impl Polling {
    /// Starts polling.
    pub(crate) fn start() -> Self {
        POLLING.fetch_add(1, Ordering::SeqCst);
        Self(())
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        POLLING.fetch_sub(1, Ordering::SeqCst);
    }
}
