//! Before the desktop app opens: is there a display to open a window on, and a Vulkan loader to
//! find a GPU with? Without these checks bevy panics ("Unable to find a GPU!", or inside winit)
//! instead of saying what is missing; with them the user gets one line naming the problem.
//!
//! The checks only look for what must be there (a display socket that accepts a connection, an
//! X server that lets this client in, `libvulkan.so.1`); [`gpu_panic_message`] and
//! [`window_panic_message`] turn the panics that remain (a loader with no usable driver, a
//! window system that fails anyway) into the same kind of message. `ELBOW_SKIP_PREFLIGHT=1`
//! skips the checks.

#![cfg_attr(not(feature = "app"), allow(dead_code))]

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Checks display and GPU driver; `Err` says what is missing and how to fix it.
pub(crate) fn check() -> Result<(), String> {
    if std::env::var_os("ELBOW_SKIP_PREFLIGHT").is_some_and(|v| v == "1") {
        return Ok(());
    }
    check_display(&Env::from_process())?;
    check_vulkan_loader()
}

/// The environment variables the display check reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Env {
    /// `WAYLAND_DISPLAY`.
    pub(crate) wayland_display: Option<String>,
    /// `WAYLAND_SOCKET` (an inherited, already connected socket).
    pub(crate) wayland_socket: Option<String>,
    /// `XDG_RUNTIME_DIR`.
    pub(crate) xdg_runtime_dir: Option<String>,
    /// `DISPLAY`.
    pub(crate) display: Option<String>,
}

impl Env {
    /// The process's own environment (empty variables count as unset).
    fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            wayland_display: var("WAYLAND_DISPLAY"),
            wayland_socket: var("WAYLAND_SOCKET"),
            xdg_runtime_dir: var("XDG_RUNTIME_DIR"),
            display: var("DISPLAY"),
        }
    }
}

/// Ok when a Wayland or X11 display answers; else one message naming each one tried.
pub(crate) fn check_display(env: &Env) -> Result<(), String> {
    if cfg!(not(target_os = "linux")) || env.wayland_socket.is_some() {
        return Ok(());
    }
    let mut tried = Vec::new();
    if let Some(name) = &env.wayland_display {
        match wayland_socket_path(name, env.xdg_runtime_dir.as_deref()) {
            Some(path) => match std::os::unix::net::UnixStream::connect(&path) {
                Ok(_) => return Ok(()),
                Err(e) => tried.push(format!("WAYLAND_DISPLAY={name} ({}: {e})", path.display())),
            },
            None => tried.push(format!("WAYLAND_DISPLAY={name} (XDG_RUNTIME_DIR is not set)")),
        }
    }
    if let Some(display) = &env.display {
        match connect_x11(display).and_then(|()| open_x11(display)) {
            Ok(()) => return Ok(()),
            Err(e) => tried.push(format!("DISPLAY={display} ({e})")),
        }
    }
    if tried.is_empty() {
        return Err("the desktop app needs a display, but neither DISPLAY nor WAYLAND_DISPLAY is set; \
                    run it in a graphical session, or use a headless command (see `elbow --help`)"
            .into());
    }
    Err(format!(
        "the desktop app cannot reach a display: {}; check the variables are current (a stale DISPLAY \
         from an old session? XAUTHORITY for another user's display?), or use a headless command (see `elbow --help`)",
        tried.join("; ")
    ))
}

/// Where the Wayland compositor's socket is.
fn wayland_socket_path(name: &str, runtime_dir: Option<&str>) -> Option<PathBuf> {
    let name = Path::new(name);
    if name.is_absolute() { Some(name.to_path_buf()) } else { runtime_dir.map(|d| Path::new(d).join(name)) }
}

/// Connects to the X server `display` names (`:0`, `unix:0.0`, `host:10.0`, or a socket path).
fn connect_x11(display: &str) -> Result<(), String> {
    if display.starts_with('/') {
        // A socket path (XQuartz style), possibly with a `:N` suffix.
        let path = display.rsplit_once(':').map_or(display, |(p, _)| p);
        return std::os::unix::net::UnixStream::connect(path).map(|_| ()).map_err(|e| format!("{path}: {e}"));
    }
    let (host, rest) = display.rsplit_once(':').ok_or_else(|| "not of the form HOST:N".to_string())?;
    let number: u16 = rest
        .split('.')
        .next()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n < 1000)
        .ok_or_else(|| "not of the form HOST:N".to_string())?;
    if host.is_empty() || host == "unix" {
        let path = format!("/tmp/.X11-unix/X{number}");
        let by_path = std::os::unix::net::UnixStream::connect(&path);
        if by_path.is_ok() {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            if let Ok(addr) = std::os::unix::net::SocketAddr::from_abstract_name(path.as_bytes())
                && std::os::unix::net::UnixStream::connect_addr(&addr).is_ok()
            {
                return Ok(());
            }
        }
        return by_path.map(|_| ()).map_err(|e| format!("{path}: {e}"));
    }
    use std::net::ToSocketAddrs;
    let port = 6000 + number;
    let addrs = (host, port).to_socket_addrs().map_err(|e| format!("{host}: {e}"))?;
    let mut last = format!("{host}:{port}: no address");
    for addr in addrs {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

/// Opens and closes the X display `display` names through Xlib, as the window system does: a
/// server can accept the connection and still refuse the client (no authorization: another
/// user's display, a missing `XAUTHORITY`). What Xlib prints meanwhile becomes part of the error.
fn open_x11(display: &str) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::{c_char, c_int, c_void};
        /// `XOpenDisplay`'s signature.
        type Open = unsafe extern "C" fn(*const c_char) -> *mut c_void;
        /// `XCloseDisplay`'s signature.
        type Close = unsafe extern "C" fn(*mut c_void) -> c_int;
        let name = std::ffi::CString::new(display).map_err(|_| "a NUL byte in the name".to_string())?;
        // SAFETY: dlopen with a valid C string. The library stays loaded (the window system loads
        // it again; unloading Xlib is not safe once a display was opened).
        let lib = unsafe { libc::dlopen(c"libX11.so.6".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return Err("Xlib (libX11.so.6) is not installed: apt-get install libx11-6".into());
        }
        // SAFETY: `lib` is a live handle; the names are valid C strings.
        let (open, close) =
            unsafe { (libc::dlsym(lib, c"XOpenDisplay".as_ptr()), libc::dlsym(lib, c"XCloseDisplay".as_ptr())) };
        if open.is_null() || close.is_null() {
            return Err("libX11.so.6 has no XOpenDisplay".into());
        }
        // SAFETY: both symbols are Xlib's functions of these signatures.
        let (open, close) = unsafe {
            (std::mem::transmute::<*mut c_void, Open>(open), std::mem::transmute::<*mut c_void, Close>(close))
        };
        // A server still starting (an Xvfb just launched) can take the connection and drop it
        // without a word: such a failure is tried again for a few seconds; a refusal with a
        // reason is final.
        let mut tries = 0;
        let (opened, said) = loop {
            // SAFETY: `name` is a valid C string that outlives the call.
            let (opened, said) = with_stderr_caught(|| unsafe { open(name.as_ptr()) });
            tries += 1;
            if !opened.is_null() || !said.trim().is_empty() || tries >= X11_TRIES {
                break (opened, said);
            }
            std::thread::sleep(X11_RETRY);
        };
        if opened.is_null() {
            let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
            if said.is_empty() {
                // No reason given: not proof that the window cannot open, so the app goes on (if
                // the window system fails too, its panic becomes a sentence:
                // [`window_panic_message`]).
                return Ok(());
            }
            return Err(format!("the X server accepts connections but would not open the display: {said}"));
        }
        // SAFETY: `opened` is the display just opened, closed once.
        unsafe { close(opened) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = display;
    Ok(())
}

/// How many times a display that drops the connection without a reason is tried.
#[cfg(target_os = "linux")]
const X11_TRIES: u32 = 8;
/// The pause between those tries.
#[cfg(target_os = "linux")]
const X11_RETRY: Duration = Duration::from_millis(250);

/// Runs `f` with the standard error going into a pipe, and returns what it wrote there (Xlib
/// prints its reasons there; a failed redirection runs `f` as it is).
#[cfg(target_os = "linux")]
fn with_stderr_caught<T>(f: impl FnOnce() -> T) -> (T, String) {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return (f(), String::new());
    }
    // SAFETY: both descriptors were just opened by pipe and are owned here alone.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: dup of the standard error; a negative result is checked.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return (f(), String::new());
    }
    // SAFETY: `saved` was just opened by dup and is owned here alone.
    let saved = unsafe { OwnedFd::from_raw_fd(saved) };
    use std::os::fd::AsRawFd;
    // SAFETY: dup2 onto descriptor 2 of a live descriptor; restored below.
    if unsafe { libc::dup2(write.as_raw_fd(), 2) } < 0 {
        return (f(), String::new());
    }
    drop(write);
    let out = f();
    // SAFETY: as above: the saved standard error goes back on descriptor 2.
    unsafe { libc::dup2(saved.as_raw_fd(), 2) };
    // Every write end is closed now, so the read ends at what was written (a few lines: well
    // within the pipe's buffer, so the writer never blocked).
    let mut said = Vec::new();
    let _ = std::fs::File::from(read).read_to_end(&mut said);
    (out, String::from_utf8_lossy(&said).into_owned())
}

/// Ok when the Vulkan loader can be loaded (bevy finds GPUs through Vulkan on Linux).
fn check_vulkan_loader() -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        let name = c"libvulkan.so.1";
        // SAFETY: dlopen with a valid C string; the handle is closed right away. Loading the
        // loader runs no driver code (drivers load when an instance is created).
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err("the desktop app needs a GPU with a Vulkan driver, but the Vulkan loader \
                        (libvulkan.so.1) is not installed; install it with your GPU's Vulkan driver \
                        (for example `libvulkan1 mesa-vulkan-drivers`), or use a headless command"
                .into());
        }
        // SAFETY: `handle` came from dlopen above and is closed once.
        unsafe { libc::dlclose(handle) };
    }
    Ok(())
}

/// For a panic raised while the app starts: the message to show instead, when the panic says
/// no GPU or graphics driver could be used.
pub(crate) fn gpu_panic_message(panic: &str) -> Option<String> {
    const SIGNS: [&str; 4] = [
        "Unable to find a GPU",
        "find an appropriate adapter",
        "No suitable graphics adapter",
        "ERROR_INCOMPATIBLE_DRIVER",
    ];
    SIGNS.iter().any(|s| panic.contains(s)).then(|| {
        format!(
            "the desktop app found no usable GPU: {panic}. It needs a Vulkan driver for your GPU (for \
             example mesa-vulkan-drivers); check `vulkaninfo --summary`, or use a headless command \
             (see `elbow --help`)"
        )
    })
}

/// For a panic raised while the app starts: the message to show instead, when the panic says
/// the window system could not be reached (bevy's event loop failed to build).
pub(crate) fn window_panic_message(panic: &str) -> Option<String> {
    panic.contains("Failed to build event loop").then(|| {
        let said = panic.split_whitespace().collect::<Vec<_>>().join(" ");
        format!(
            "the desktop app cannot open a window ({said}); check DISPLAY or WAYLAND_DISPLAY names a \
             display this user may open, or use a headless command (see `elbow --help`)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_display_variables_is_said_plainly() {
        let e = check_display(&Env::default()).unwrap_err();
        assert!(e.contains("neither DISPLAY nor WAYLAND_DISPLAY"), "{e}");
    }

    #[test]
    fn stale_displays_are_named() {
        let env = Env {
            wayland_display: Some("wayland-elbow-test-none".into()),
            xdg_runtime_dir: Some("/nonexistent-runtime-dir".into()),
            display: Some(":987".into()),
            wayland_socket: None,
        };
        let e = check_display(&env).unwrap_err();
        assert!(e.contains("WAYLAND_DISPLAY=wayland-elbow-test-none") && e.contains("DISPLAY=:987"), "{e}");
        let bad = Env { display: Some("garbage".into()), ..Env::default() };
        assert!(check_display(&bad).unwrap_err().contains("HOST:N"));
    }

    #[test]
    fn gpu_panics_become_a_message() {
        let m = gpu_panic_message("Unable to find a GPU! Make sure you have installed required drivers!").unwrap();
        assert!(m.contains("Vulkan driver"), "{m}");
        assert!(gpu_panic_message("index out of bounds").is_none());
        let m = window_panic_message(
            "Failed to build event loop: Os(OsError { error: XNotSupported(XOpenDisplayFailed) })",
        )
        .unwrap();
        assert!(m.contains("cannot open a window") && m.contains("XOpenDisplayFailed") && !m.contains('\n'), "{m}");
        assert!(window_panic_message("index out of bounds").is_none());
    }
}
