//! The desktop app on a display it cannot open: one sentence on the standard error and exit
//! code 2, never a panic and its backtrace: a display that is not there (`DISPLAY=:987`), and
//! one that is there but refuses this client (an Xvfb with access control and no cookie for us,
//! when Xvfb is installed).

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs the app with `DISPLAY=display` (no Wayland), the X authority file `xauthority` when
/// given, and checks it says so in one sentence and exits 2.
fn refused(display: &str, xauthority: Option<&Path>) -> String {
    let mut app = common::command(&[]);
    app.env("DISPLAY", display).env_remove("WAYLAND_DISPLAY").env_remove("WAYLAND_SOCKET");
    app.env("RUST_BACKTRACE", "1").env_remove("ELBOW_SKIP_PREFLIGHT");
    if let Some(file) = xauthority {
        app.env("XAUTHORITY", file);
    }
    let run = common::wait_limited(app.spawn().expect("runs"), "elbow (the app)", common::limit());
    let err = run.stderr;
    assert_eq!(run.code, 2, "DISPLAY={display}: {err}");
    assert!(!err.contains("panicked") && !err.contains("backtrace"), "DISPLAY={display}: {err}");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(ours.len(), 1, "one sentence: {err}");
    assert!(ours[0].contains("desktop app") && ours[0].contains(&format!("DISPLAY={display}")), "{err}");
    ours[0].to_string()
}

/// An Xvfb that lets no client in, ended when dropped: asked to end (SIGTERM, so it removes its
/// socket), killed if it has not within two seconds.
struct LockedXvfb(Child);

impl Drop for LockedXvfb {
    fn drop(&mut self) {
        if let Ok(pid) = i32::try_from(self.0.id()) {
            // SAFETY: kill only reads its integer arguments; the pid is our own child's, not yet
            // waited for, so it names no other process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// An X authority file of one cookie for every display (family "wild"), a fresh one each time.
fn cookie_file() -> Vec<u8> {
    let field = |b: &[u8]| [&(b.len() as u16).to_be_bytes()[..], b].concat();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos());
    let cookie = (nanos ^ u128::from(std::process::id()).rotate_left(64)).to_le_bytes();
    [&0xFFFFu16.to_be_bytes()[..], &field(b""), &field(b""), &field(b"MIT-MAGIC-COOKIE-1"), &field(&cookie)].concat()
}

/// Starts an Xvfb on a free display number with access control on and a cookie the app is not
/// given (an Xvfb whose authority file is empty lets everyone in); `None` when Xvfb is not
/// installed or does not come up.
fn locked_xvfb(dir: &Path) -> Option<(LockedXvfb, String)> {
    let cookies = dir.join("server-xauthority");
    std::fs::write(&cookies, cookie_file()).ok()?;
    std::fs::write(dir.join("empty-xauthority"), b"").ok()?;
    let n = (170..230).find(|n| !Path::new(&format!("/tmp/.X11-unix/X{n}")).exists())?;
    let display = format!(":{n}");
    let child = Command::new("Xvfb")
        .args([display.as_str(), "-auth", cookies.to_str()?, "-nolisten", "tcp", "-screen", "0", "320x240x24"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let xvfb = LockedXvfb(child);
    let socket = format!("/tmp/.X11-unix/X{n}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((xvfb, display))
}

#[test]
fn a_display_that_cannot_be_opened_is_one_sentence_and_exit_code_2() {
    // No such display.
    let said = refused(":987", None);
    assert!(said.contains("cannot reach a display"), "{said}");
    // A display that is there and refuses this client: the X server's reason, in the sentence.
    let dir = common::scratch().join("display");
    std::fs::create_dir_all(&dir).expect("scratch");
    match locked_xvfb(&dir) {
        Some((_xvfb, display)) => {
            let said = refused(&display, Some(&dir.join("empty-xauthority")));
            assert!(said.contains("would not open the display"), "{said}");
        }
        None => eprintln!("Xvfb is not installed or did not start: the refusing display is not tested"),
    }
}
