//! One background job: a computation of some inputs, identified by a key, on its own thread.
//! The atlas and the live sweep are both this job.
//!
//! Each frame the owner says which key it wants ([`Job::want`]); a key other than the one last
//! started, or an explicit [`Job::invalidate`] (an input outside the key changed), makes the job
//! due, and the owner starts the next run when [`Job::due`]: one run at a time, so changes during
//! a run start the next one when it ends. [`Job::poll`] collects a finished run without ever
//! blocking, and drops a result whose key is no longer the one wanted (a stale result). The
//! frame never waits for a job; dropping a job waits for its thread, so no work outlives the app.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A background job keyed by `K` producing `T`.
#[derive(Debug)]
pub(crate) struct Job<K, T> {
    /// The running computation and the key it was started for.
    running: Option<(K, JoinHandle<T>)>,
    /// The key of the latest run started.
    requested: Option<K>,
    /// An input changed since the latest run started.
    stale: bool,
    /// When the latest run started.
    started: Option<Instant>,
}

impl<K, T> Default for Job<K, T> {
    fn default() -> Self {
        Self { running: None, requested: None, stale: false, started: None }
    }
}

impl<K: PartialEq + Clone, T: Send + 'static> Job<K, T> {
    /// Whether a run is in progress.
    pub(crate) fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// Asks for the inputs `key`: a key other than the latest run's makes the job due.
    /// Compared with what was *started*, not with what arrived, so a failed run does not restart
    /// every frame.
    pub(crate) fn want(&mut self, key: &K) {
        if self.requested.as_ref() != Some(key) {
            self.stale = true;
        }
    }

    /// An input outside the key changed: run again once the running one ends.
    pub(crate) fn invalidate(&mut self) {
        self.stale = true;
    }

    /// Whether a new run should start now: the inputs changed and no run is in progress.
    pub(crate) fn due(&self) -> bool {
        self.stale && !self.busy()
    }

    /// Time since the latest run started; `None` before the first.
    pub(crate) fn since_start(&self) -> Option<Duration> {
        self.started.map(|t| t.elapsed())
    }

    /// A job whose inputs include the heads' models, which change many times a second while they
    /// train: `changed` (the models changed this frame) marks it stale, and it runs again once
    /// `every` has passed since its latest start. `stale` is the caller's flag, cleared by
    /// [`Job::start`]'s caller when the run starts.
    pub(crate) fn refresh_for_models(&mut self, stale: &mut bool, changed: bool, every: Duration) {
        *stale |= changed;
        if *stale && self.since_start().is_none_or(|t| t >= every) {
            self.invalidate();
        }
    }

    /// Starts `work` for `key` on a new thread; the caller checks [`Job::due`] first (a run in
    /// progress is left to finish on its own and its result dropped). Its parallel parts run on a
    /// pool of one thread fewer than the machine has, every thread of it at a lower scheduling
    /// priority than the frame's, so a background run never holds a frame up.
    pub(crate) fn start(&mut self, key: K, work: impl FnOnce() -> T + Send + 'static) {
        self.stale = false;
        self.requested = Some(key.clone());
        self.started = Some(Instant::now());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1));
        self.running = Some((
            key,
            std::thread::spawn(move || {
                // Threads inherit their creator's priority: the pool's run below the frame too.
                yield_to_the_frame();
                match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
                    Ok(pool) => pool.install(work),
                    Err(_) => work(),
                }
            }),
        ));
    }

    /// The finished run's result, never blocking: `None` while it runs (or when none does),
    /// `None` too for a result whose key is not `current` (stale: dropped, and the job is due
    /// again), `Some(Err)` if the computation panicked.
    pub(crate) fn poll(&mut self, current: &K) -> Option<Result<T, String>> {
        if !self.running.as_ref().is_some_and(|(_, h)| h.is_finished()) {
            return None;
        }
        let (key, handle) = self.running.take()?;
        let result = handle.join().map_err(|_| "the computation stopped unexpectedly".to_string());
        if &key != current {
            self.stale = true;
            return None;
        }
        Some(result)
    }
}

impl<K, T> Drop for Job<K, T> {
    fn drop(&mut self) {
        if let Some((_, h)) = self.running.take() {
            let _ = h.join();
        }
    }
}

/// Lowers the calling thread's scheduling priority by 10 nice levels (at most to 19) on Linux,
/// where each thread has its own; elsewhere a no-op.
fn yield_to_the_frame() {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority and setpriority only read their integer arguments; `who` 0 is the
    // calling thread.
    unsafe {
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, (now + 10).min(19));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A job whose run waits until the test lets it finish: the result is `value`.
    fn gated(job: &mut Job<u32, u32>, key: u32, value: u32) -> mpsc::Sender<()> {
        let (open, gate) = mpsc::channel::<()>();
        job.start(key, move || {
            // Ends when the test sends or drops its end; a watchdog end after a minute keeps a
            // blocking poll from hanging the test (it fails instead).
            let _ = gate.recv_timeout(Duration::from_secs(60));
            value
        });
        open
    }

    /// Polls until the run ends, a bounded number of times (each poll is instant).
    fn settle<T: Send + 'static>(job: &mut Job<u32, T>, current: u32) -> Option<Result<T, String>> {
        while job.busy() {
            if let Some(r) = job.poll(&current) {
                return Some(r);
            }
            std::thread::yield_now();
        }
        None
    }

    #[test]
    fn a_new_key_makes_the_job_due_once_and_polling_never_blocks() {
        let mut job = Job::default();
        assert!(!job.due() && !job.busy() && job.since_start().is_none());
        job.want(&1);
        assert!(job.due());
        let open = gated(&mut job, 1, 10);
        job.want(&1);
        assert!(job.busy() && !job.due(), "the same key asks for nothing new");
        // The run is held: a thousand polls (frames) come back empty without waiting for it.
        for _ in 0..1000 {
            assert_eq!(job.poll(&1), None);
        }
        assert!(job.busy());
        open.send(()).unwrap();
        assert_eq!(settle(&mut job, 1), Some(Ok(10)));
        assert!(!job.busy() && !job.due());
        job.want(&1);
        assert!(!job.due(), "a finished key is not run again");
        job.invalidate();
        assert!(job.due(), "an input outside the key changed");
    }

    #[test]
    fn a_stale_result_is_dropped_and_the_wanted_key_runs_next() {
        let mut job = Job::default();
        let open = gated(&mut job, 1, 10);
        // The wanted inputs change mid-run: nothing new starts until the run ends.
        job.want(&2);
        assert!(job.busy() && !job.due());
        drop(open);
        assert_eq!(settle(&mut job, 2), None, "a result for key 1 is stale once key 2 is wanted");
        assert!(job.due());
        let open = gated(&mut job, 2, 20);
        drop(open);
        assert_eq!(settle(&mut job, 2), Some(Ok(20)));
    }

    /// Every thread of a run, its own and its parallel pool's, runs below the frame's priority:
    /// a background sweep cannot hold a frame up (without it the headless two-link frame's p99
    /// rose from 0.2 ms to over 4 ms while a sweep ran).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_run_yields_to_the_frame() {
        use rayon::prelude::*;
        // SAFETY: getpriority only reads its integer arguments; `who` 0 is the calling thread.
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let frame = nice();
        let mut job: Job<u32, Vec<i32>> = Job::default();
        job.start(1, move || (0..64).into_par_iter().map(|_| nice()).chain([nice()]).collect());
        let Some(Ok(seen)) = settle(&mut job, 1) else { panic!("the run ended") };
        let below = (frame + 10).min(19);
        assert!(seen.iter().all(|&n| n == below), "every thread at {below}, below the frame's {frame}: {seen:?}");
    }

    #[test]
    fn a_panicking_run_is_an_error_not_a_crash() {
        let mut job: Job<u32, u32> = Job::default();
        job.start(1, || panic!("boom"));
        assert!(matches!(settle(&mut job, 1), Some(Err(_))));
        assert!(!job.busy());
    }
}
