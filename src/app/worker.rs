//! One training worker for every net the app trains (the two-link heads and the chain's nets):
//! a thread that runs a training loop, so the frame never waits on a minibatch.
//!
//! The loop is handed in as a [`TrainRun`]: it trains, calling back after every step with the
//! steps done, that step's loss and the [`Session`] (a snapshot of the net, its learning rate).
//! The worker does the rest the same way for every net: [`Control`] messages in (pause, resume,
//! learning rate, speed limit), [`Report`]s out (the mean loss of every [`CHUNK`] steps, a
//! snapshot at most every [`SNAPSHOT_EVERY`], the last net when done, or why it failed).
//!
//! Workers are joined, never left detached: dropping a [`Worker`] closes its control channel,
//! which the loop sees at its next step (or wherever it waits: paused, or keeping to the speed
//! limit), and then waits for the thread to end.

use std::sync::Mutex;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Steps per loss report.
pub(crate) const CHUNK: usize = 10;
/// Least time between two snapshots.
pub(crate) const SNAPSHOT_EVERY: Duration = Duration::from_millis(200);
/// The slowest speed limit a worker honours, steps per second (slower limits are raised to it,
/// so a worker never sleeps for long).
pub(crate) const MIN_RATE: f64 = 10.0;

/// Messages to a worker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Control {
    /// Stop stepping until [`Control::Resume`].
    Pause,
    /// Step again.
    Resume,
    /// The learning rate from now on.
    SetLr(f32),
    /// The speed limit, steps per second (0 or less: none).
    SetRate(f64),
}

/// Messages from a worker.
pub(crate) enum Report<M> {
    /// Mean loss of the steps since the last report, and the steps done.
    Loss {
        /// Steps done.
        steps: usize,
        /// Their mean loss.
        loss: f32,
    },
    /// The net as trained so far (the finished net last).
    Snapshot(Box<M>),
    /// All steps done.
    Finished,
    /// The run was refused or diverged: why.
    Failed(String),
}

/// What a training loop lets the worker do between its steps.
pub(crate) trait Session<M> {
    /// The net as trained so far.
    fn snapshot(&self) -> M;
    /// Sets the learning rate (a loop that cannot change it ignores this).
    fn set_lr(&mut self, _lr: f32) {}
}

/// The callback a training loop calls after each step: `(steps done, loss, session)`; it returns
/// false when the loop must stop.
pub(crate) type Watch<'a, M> = dyn FnMut(usize, f32, &mut dyn Session<M>) -> bool + 'a;

/// A training loop: trains, calling the watch after every step; `Ok(Some(net))` when it
/// finished, `Ok(None)` when the watch stopped it, `Err` with why it failed.
pub(crate) type TrainRun<M> = Box<dyn FnOnce(&mut Watch<'_, M>) -> Result<Option<M>, String> + Send>;

/// The app's end of one worker thread; dropping it ends and joins the thread.
pub(crate) struct Worker<M> {
    control: Option<Sender<Control>>,
    reports: Mutex<Receiver<Report<M>>>,
    thread: Option<JoinHandle<()>>,
}

impl<M: Send + 'static> Worker<M> {
    /// Spawns a thread named `name` running `run` at up to `rate` steps per second (0: no limit).
    pub(crate) fn spawn(name: String, rate: f64, run: TrainRun<M>) -> std::io::Result<Self> {
        let (control, control_rx) = mpsc::channel();
        let (report_tx, reports) = mpsc::channel();
        let thread = std::thread::Builder::new().name(name).spawn(move || work(run, rate, &control_rx, &report_tx))?;
        Ok(Self { control: Some(control), reports: Mutex::new(reports), thread: Some(thread) })
    }

    /// Sends a control message (ignored once the thread has ended).
    pub(crate) fn send(&self, msg: Control) {
        if let Some(control) = &self.control {
            let _ = control.send(msg);
        }
    }

    /// The reports that have arrived, oldest first, never waiting; `ended` is set when the
    /// thread is gone.
    pub(crate) fn drain(&mut self, ended: &mut bool) -> Vec<Report<M>> {
        let reports = self.reports.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut out = Vec::new();
        loop {
            match reports.try_recv() {
                Ok(r) => out.push(r),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    *ended = true;
                    break;
                }
            }
        }
        out
    }
}

impl<M> Drop for Worker<M> {
    fn drop(&mut self) {
        drop(self.control.take()); // wakes the thread: its next receive sees the channel closed
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A speed limit as the worker honours it: `None` for no limit.
pub(crate) fn sane_rate(rate: f64) -> Option<f64> {
    (rate.is_finite() && rate > 0.0).then(|| rate.max(MIN_RATE))
}

/// The worker's state between steps.
struct Pace {
    paused: bool,
    rate: f64,
    sum: f32,
    n: usize,
    chunk_started: Instant,
    last_snapshot: Option<Instant>,
}

impl Pace {
    /// Applies one control message.
    fn apply<M>(&mut self, msg: Control, session: &mut dyn Session<M>) {
        match msg {
            Control::Pause => self.paused = true,
            Control::Resume => self.paused = false,
            Control::SetLr(lr) => session.set_lr(lr),
            Control::SetRate(r) => self.rate = r,
        }
    }
}

/// A worker thread: runs the loop, reporting as it goes; after a finished run it waits for the
/// app to let go.
fn work<M>(run: TrainRun<M>, rate: f64, control: &Receiver<Control>, reports: &Sender<Report<M>>) {
    let mut pace = Pace { paused: false, rate, sum: 0.0, n: 0, chunk_started: Instant::now(), last_snapshot: None };
    let mut last_steps = 0;
    let mut watch = |steps: usize, loss: f32, session: &mut dyn Session<M>| -> bool {
        last_steps = steps;
        // Take every pending message; while paused, block until one comes.
        loop {
            let msg =
                if pace.paused { control.recv().map_err(|_| TryRecvError::Disconnected) } else { control.try_recv() };
            match msg {
                Ok(msg) => pace.apply(msg, session),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        pace.sum += loss;
        pace.n += 1;
        if pace.n < CHUNK {
            return true;
        }
        if reports.send(Report::Loss { steps, loss: pace.sum / pace.n as f32 }).is_err() {
            return false;
        }
        (pace.sum, pace.n) = (0.0, 0);
        if pace.last_snapshot.is_none_or(|t| t.elapsed() >= SNAPSHOT_EVERY) {
            pace.last_snapshot = Some(Instant::now());
            if reports.send(Report::Snapshot(Box::new(session.snapshot()))).is_err() {
                return false;
            }
        }
        // Keep to the speed limit, waking at once for a message (or the app letting go).
        if let Some(limit) = sane_rate(pace.rate)
            && let Some(rest) = Duration::from_secs_f64(CHUNK as f64 / limit).checked_sub(pace.chunk_started.elapsed())
        {
            match control.recv_timeout(rest) {
                Ok(msg) => pace.apply(msg, session),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        pace.chunk_started = Instant::now();
        true
    };
    match run(&mut watch) {
        Ok(Some(net)) => {
            if pace.n > 0 {
                let _ = reports.send(Report::Loss { steps: last_steps, loss: pace.sum / pace.n as f32 });
            }
            let _ = reports.send(Report::Snapshot(Box::new(net)));
            let _ = reports.send(Report::Finished);
            // Nothing left to do: wait for the app to let go.
            while control.recv().is_ok() {}
        }
        Ok(None) => {}
        Err(why) => {
            let _ = reports.send(Report::Failed(why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop of `steps` steps whose net is its step count and whose loss is 1.
    fn counting(steps: usize) -> TrainRun<usize> {
        struct Count(usize);
        impl Session<usize> for Count {
            fn snapshot(&self) -> usize {
                self.0
            }
        }
        Box::new(move |watch| {
            for i in 1..=steps {
                if !watch(i, 1.0, &mut Count(i)) {
                    return Ok(None);
                }
            }
            Ok(Some(steps))
        })
    }

    #[test]
    fn a_run_reports_chunks_a_snapshot_and_its_end() {
        let mut worker = Worker::spawn("test".into(), 0.0, counting(25)).expect("spawns");
        let (mut ended, mut all) = (false, Vec::new());
        let deadline = Instant::now() + Duration::from_secs(60);
        while !all.iter().any(|r| matches!(r, Report::Finished)) {
            all.extend(worker.drain(&mut ended));
            assert!(Instant::now() < deadline, "no end");
        }
        let losses: Vec<usize> =
            all.iter().filter_map(|r| if let Report::Loss { steps, .. } = r { Some(*steps) } else { None }).collect();
        assert_eq!(losses, [10, 20, 25], "a report every chunk, and the rest at the end");
        let last = all.iter().rev().find_map(|r| if let Report::Snapshot(n) = r { Some(**n) } else { None });
        assert_eq!(last, Some(25), "the finished net last");
    }

    #[test]
    fn dropping_a_worker_joins_its_thread_even_mid_wait() {
        for paused in [false, true] {
            // A slow speed limit: the worker spends its time waiting between chunks; paused, it
            // waits for a message with no timeout at all.
            let mut worker = Worker::spawn("test".into(), 0.001, counting(usize::MAX)).expect("spawns");
            let (_, stand_in) = mpsc::channel();
            let reports = std::mem::replace(&mut worker.reports, Mutex::new(stand_in));
            let reports = reports.into_inner().expect("not poisoned");
            assert!(reports.recv().is_ok(), "the worker reports its first chunk");
            if paused {
                worker.send(Control::Pause);
            }
            // Dropped on another thread, watched from this one: a worker that dropping does not
            // wake never ends (paused), so the watch fails rather than waiting forever; a woken
            // one ends at once, so the watch's ten minutes are a hang guard, not a speed check.
            let (dropped, watch) = mpsc::channel();
            std::thread::spawn(move || {
                drop(worker);
                let _ = dropped.send(());
            });
            assert!(watch.recv_timeout(Duration::from_secs(600)).is_ok(), "not woken (paused: {paused})");
            // Joined: the thread has ended when the drop returns, so its report sender is gone.
            while reports.try_recv().is_ok() {}
            assert!(matches!(reports.try_recv(), Err(TryRecvError::Disconnected)), "not joined (paused: {paused})");
        }
        assert_eq!(sane_rate(0.001), Some(MIN_RATE));
        assert_eq!(sane_rate(f64::NAN), None);
        assert_eq!(sane_rate(0.0), None);
    }
}
