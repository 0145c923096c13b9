//! The one way the CLI tests run the `elbow` binary: both output pipes drained by threads while
//! the child runs (a child that prints more than a pipe holds, 64 KiB, never blocks), killed and
//! reported past a time bound, and every time bound a generous multiple of a run time measured
//! on this machine, not a fixed wall-clock figure.

#![allow(dead_code)] // each test binary uses its own part of the helpers

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_elbow");

/// What one run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// Exit code; -1 when a signal ended the process.
    pub code: i32,
    /// Standard output, lossily decoded.
    pub stdout: String,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

/// Reads everything from `pipe` on a thread of its own.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut bytes);
        }
        bytes
    })
}

/// Waits for `child` (spawned with piped stdout and stderr) while both pipes drain; kills it and
/// panics, naming `what`, past `limit`.
pub fn wait_limited(mut child: Child, what: &str, limit: Duration) -> Run {
    let start = Instant::now();
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break status;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("{what} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let text = |h: std::thread::JoinHandle<Vec<u8>>| String::from_utf8_lossy(&h.join().expect("drains")).into_owned();
    Run { code: status.code().unwrap_or(-1), stdout: text(out), stderr: text(err), elapsed }
}

/// The folder every run starts in: a fresh one per test binary under the system's temporary
/// folder, so a relative `--out` that a generated case writes never lands in the source tree.
pub fn scratch() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("elbow-cli-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        dir
    })
}

/// `elbow ARGS` with stdin closed and both outputs piped, for [`wait_limited`], started in
/// [`scratch`].
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args).current_dir(scratch()).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Spawns [`command`].
pub fn spawn(args: &[&str]) -> Child {
    command(args).spawn().expect("runs")
}

/// Runs `elbow ARGS`, failing the test past `limit`.
pub fn run_limited(args: &[&str], limit: Duration) -> Run {
    wait_limited(spawn(args), &format!("{args:?}"), limit)
}

/// Runs `elbow ARGS` within [`limit`].
pub fn elbow(args: &[&str]) -> Run {
    run_limited(args, limit())
}

/// Runs `elbow ARGS REDIRECT` through `sh`, so redirections (`>&-`, `> /dev/full`) apply.
pub fn elbow_sh(args: &str, redirect: &str) -> Run {
    elbow_sh_after(":", args, redirect)
}

/// [`elbow_sh`] after `setup` in the same shell (`ulimit -f 8`, a file-size limit that the
/// run inherits).
pub fn elbow_sh_after(setup: &str, args: &str, redirect: &str) -> Run {
    let child = Command::new("sh")
        .arg("-c")
        .arg(format!("{setup}; \"$0\" {args} {redirect}"))
        .arg(BIN)
        .current_dir(scratch())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    wait_limited(child, &format!("elbow {args} {redirect}"), limit())
}

/// The reference run every time bound is a multiple of: a short training run with evaluation
/// (start-up, data, a few hundred steps, held-out evaluation), timed once per test binary,
/// the fastest of three.
pub const REFERENCE: &[&str] =
    &["train", "--steps", "300", "--data-size", "1024", "--eval-targets", "1000", "--quiet", "--json"];

/// The measured duration of [`REFERENCE`] on this machine, now.
pub fn unit() -> Duration {
    static UNIT: OnceLock<Duration> = OnceLock::new();
    *UNIT.get_or_init(|| {
        (0..3)
            .map(|_| {
                let run = run_limited(REFERENCE, Duration::from_secs(600));
                assert_eq!(run.code, 0, "the reference run fails: {}", run.stderr);
                run.elapsed
            })
            .min()
            .expect("three runs")
    })
}

/// The bound on any one ordinary run: 200 reference runs, and never under a minute, so a
/// loaded shared machine does not fail a test that a hang would.
pub fn limit() -> Duration {
    (unit() * 200).max(Duration::from_secs(60))
}
