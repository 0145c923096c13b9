//! Elbow's entry point: a subcommand runs headless, no subcommand opens the desktop app.

use clap::Parser;
use std::process::ExitCode;

#[cfg(feature = "app")]
mod app;

fn main() -> ExitCode {
    let cli = elbow::cli::Cli::parse();
    match cli.command {
        Some(command) => match elbow::cli::run(&command) {
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
