//! Elbow's entry point: a subcommand runs headless, no subcommand opens the desktop app.

use clap::Parser;
use std::process::ExitCode;

#[cfg(feature = "app")]
mod app;
mod cli;

fn main() -> ExitCode {
    restore_sigpipe();
    match cli::Cli::parse().command {
        Some(command) => match cli::run(&command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
        },
        None => run_app(),
    }
}

#[cfg(feature = "app")]
fn run_app() -> ExitCode {
    app::run()
}

#[cfg(not(feature = "app"))]
fn run_app() -> ExitCode {
    eprintln!("this build has no desktop app (built without the `app` feature); see `elbow --help`");
    ExitCode::from(2)
}

/// Lets `elbow ... | head` end quietly, as command-line tools do, instead of panicking on a
/// closed pipe (Rust ignores SIGPIPE by default).
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
