//! One background job: a computation of some inputs, identified by a key, on its own thread.
//! The atlas and the live sweep are both this job.
//!
//! Each frame the owner says which key it wants ([`Job::want`]); a key other than the one last
//! started, or an explicit [`Job::invalidate`] (an input outside the key changed), makes the job
//! due, and the owner starts the next run when [`Job::due`]: one run at a time, so changes during
//! a run start the next one when it ends. [`Job::poll`] collects a finished run without ever
//! blocking, and drops a result whose key is no longer the one wanted (a stale result). The
//! frame never waits for a job; dropping a job waits for its thread, so no work outlives the app.
//!
//! A run that knows how far it is tells its [`Meter`] ([`Job::meter`]), and the panel says where
//! the job stands in words ([`Job::status`]): how far the running one is and for how long it
//! has run, and how long the last one took.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How far a run is: parts done of parts in all, written by the run's threads, read by the
/// frame. A run that never writes it is "running" without a share.
#[derive(Debug, Clone, Default)]
pub(crate) struct Meter(Arc<[AtomicUsize; 2]>);

impl Meter {
    /// `done` of `total` parts.
    pub(crate) fn set(&self, done: usize, total: usize) {
        self.0[1].store(total, Ordering::Relaxed);
        self.0[0].store(done, Ordering::Relaxed);
    }

    /// The share done, when the run has said how many parts it has.
    pub(crate) fn fraction(&self) -> Option<f64> {
        let (done, total) = (self.0[0].load(Ordering::Relaxed), self.0[1].load(Ordering::Relaxed));
        (total > 0).then(|| (done.min(total) as f64) / total as f64)
    }
}

/// A duration in words: "0.4 s", "35 s", "2 min 05 s".
pub(crate) fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 60.0 {
        format!("{s:.0} s")
    } else {
        let whole = s.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

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
    /// How far the running one is.
    meter: Meter,
    /// How long the latest finished run took.
    took: Option<Duration>,
}

impl<K, T> Default for Job<K, T> {
    fn default() -> Self {
        Self { running: None, requested: None, stale: false, started: None, meter: Meter::default(), took: None }
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
    /// priority than the frame's, so a background run never holds a frame up (a pool of every
    /// core, niced, raised the chain frames' p99 from under 3.1 ms to 3.8-4.3 ms on two cores).
    pub(crate) fn start(&mut self, key: K, work: impl FnOnce() -> T + Send + 'static) {
        self.stale = false;
        self.requested = Some(key.clone());
        self.started = Some(Instant::now());
        self.meter.set(0, 0);
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

    /// The meter of the next run (and of the running one): move a clone into the run's closure
    /// and tell it how far the run is. [`Job::start`] zeroes it.
    pub(crate) fn meter(&self) -> Meter {
        self.meter.clone()
    }

    /// Where the job stands in words: "running 40 % after 12 s (the last took 35 s)" while
    /// one runs, "took 2.3 s" after one, "" before any.
    pub(crate) fn status(&self) -> String {
        let last = self.took.map(seconds);
        if !self.busy() {
            return last.map_or_else(String::new, |t| format!("took {t}"));
        }
        let share = self.meter.fraction().map_or_else(String::new, |f| format!(" {:.0} %", f * 100.0));
        let ran = self.since_start().map_or_else(String::new, |d| format!(" after {}", seconds(d)));
        let last = last.map_or_else(String::new, |t| format!(" (the last took {t})"));
        format!("running{share}{ran}{last}")
    }

    /// The finished run's result, never blocking: `None` while it runs (or when none does),
    /// `None` too for a result whose key is not `current` (stale: dropped, and the job is due
    /// again), `Some(Err)` if the computation panicked.
    pub(crate) fn poll(&mut self, current: &K) -> Option<Result<T, String>> {
        if !self.running.as_ref().is_some_and(|(_, h)| h.is_finished()) {
            return None;
        }
        let (key, handle) = self.running.take()?;
        self.took = self.since_start();
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

    /// The panel's words for a job: how far the running one is (from its meter) and how long
    /// the last one took.
    #[test]
    fn the_status_says_how_far_the_run_is_and_how_long_the_last_took() {
        let mut job: Job<u32, u32> = Job::default();
        assert_eq!(job.status(), "", "nothing has run");
        let meter = job.meter();
        let (open, gate) = mpsc::channel::<()>();
        let (told, heard) = mpsc::channel::<()>();
        job.start(1, move || {
            meter.set(2, 5);
            let _ = told.send(());
            let _ = gate.recv_timeout(Duration::from_secs(60));
            7
        });
        heard.recv_timeout(Duration::from_secs(60)).unwrap();
        let running = job.status();
        assert!(running.starts_with("running 40 % after 0."), "{running}");
        assert!(!running.contains("last"), "no run has finished: {running}");
        drop(open);
        assert_eq!(settle(&mut job, 1), Some(Ok(7)));
        assert!(job.status().starts_with("took 0."), "{}", job.status());
        // The next run starts from nothing done, and names the last one's time.
        let open = gated(&mut job, 1, 8);
        let next = job.status();
        assert!(next.starts_with("running after") && next.contains("(the last took 0."), "{next}");
        drop(open);
        assert_eq!(settle(&mut job, 1), Some(Ok(8)));
    }

    #[test]
    fn durations_read_in_seconds_and_minutes() {
        assert_eq!(seconds(Duration::from_millis(2344)), "2.3 s");
        assert_eq!(seconds(Duration::from_millis(35_357)), "35 s");
        assert_eq!(seconds(Duration::from_secs(125)), "2 min 05 s");
    }

    #[test]
    fn a_panicking_run_is_an_error_not_a_crash() {
        let mut job: Job<u32, u32> = Job::default();
        job.start(1, || panic!("boom"));
        assert!(matches!(settle(&mut job, 1), Some(Err(_))));
        assert!(!job.busy());
    }
}
