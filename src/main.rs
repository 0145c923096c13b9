//! Elbow's entry point: a subcommand runs headless, no subcommand opens the desktop app.
//!
//! Nothing here prints with `println!`/`eprintln!`: they panic on a failed write (a full disk,
//! `2> /dev/full`). Standard output goes through `outln!`, standard error through [`cli::note`].
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::process::ExitCode;

#[cfg(feature = "app")]
mod app;
mod cli;

fn main() -> ExitCode {
    restore_sigpipe();
    cli::signals::install();
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        // Help, version and usage errors: clap's text, and a write error is an error too
        // (`elbow --help > /dev/full` must not exit 0).
        Err(e) => {
            use std::io::Write;
            // With stdout closed (`>&-`), the runtime would print help into /dev/null.
            if !e.use_stderr()
                && let Err(message) = cli::check_stdout_open()
            {
                report(&message);
                return ExitCode::from(2);
            }
            let printed = e.print().and_then(|()| std::io::stdout().flush());
            return match (printed, e.use_stderr()) {
                (Err(why), false) => {
                    report(&format!("cannot write to standard output: {why}"));
                    ExitCode::from(2)
                }
                (Err(_), true) | (_, true) => ExitCode::from(2),
                (Ok(()), false) => ExitCode::SUCCESS,
            };
        }
    };
    if let Some(misplaced) = cli.app_flags_with_command() {
        report(misplaced);
        return ExitCode::from(2);
    }
    let lab = match cli.app_lab() {
        Ok(arm) => arm,
        Err(message) => {
            report(&message);
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Some(command) => match cli::run(&command) {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => {
                report(&failure.message);
                ExitCode::from(failure.code)
            }
        },
        None => {
            let explicit = cli.arm.is_some() || cli.lengths.is_some();
            let replay = match &cli.replay {
                None => None,
                Some(file) => match replay_lab(file, cli.replay_index.as_deref(), &lab, explicit) {
                    Ok(r) => Some(r),
                    Err(message) => {
                        report(&message);
                        return ExitCode::from(2);
                    }
                },
            };
            let lab = replay.as_ref().map_or(lab, |(record, _)| record_lab(record));
            run_app(lab, cli.model, cli.lesson, cli.view.map(|v| (v, explicit)), cli.size, replay)
        }
    }
}

/// The lab a catalog record opens the app on: its chain's, or the two-link lab on its arm.
fn record_lab(record: &elbow::experiments::degradation::FailureRecord) -> cli::AppArm {
    record.config.chain.clone().map_or(cli::AppArm::TwoLink(record.arm), cli::AppArm::Chain)
}

/// The record `elbow --replay FILE --index N` opens and its name; with `--arm` or `--lengths`
/// given (`explicit`), they must name the record's arm (its chain, for a chain's record). `Err`
/// is one sentence.
fn replay_lab(
    file: &std::path::Path,
    index: Option<&str>,
    lab: &cli::AppArm,
    explicit: bool,
) -> Result<(elbow::experiments::degradation::FailureRecord, String), String> {
    let (at, record) = cli::replay::read_record(file, index.unwrap_or("0"))?;
    if explicit && *lab != record_lab(&record) {
        let arm = record.config.chain.as_ref().map_or_else(|| record.arm.to_string(), |c| c.name.clone());
        return Err(format!(
            "record {at} of {} is of the arm `{arm}`, not of the one --arm or --lengths name; leave them out",
            file.display(),
        ));
    }
    let name = file.file_name().map_or_else(|| file.display().to_string(), |f| f.to_string_lossy().into_owned());
    Ok((record, format!("{name} #{at}")))
}

/// Opens the desktop app on `lab` once the display and the GPU driver it needs are known to be
/// there; a GPU or window-system panic while it starts becomes a message and exit code 2.
#[cfg(feature = "app")]
fn run_app(
    lab: cli::AppArm,
    models: Vec<std::path::PathBuf>,
    lesson: Option<elbow::lessons::Lesson>,
    view: Option<(std::path::PathBuf, bool)>,
    size: Option<(u32, u32)>,
    replay: Option<(elbow::experiments::degradation::FailureRecord, String)>,
) -> ExitCode {
    let lab = match &view {
        None => lab,
        Some((path, explicit)) => match app::lab_of_view(path, lab, *explicit) {
            Ok(lab) => lab,
            Err(problem) => {
                report(&problem);
                return ExitCode::from(2);
            }
        },
    };
    if let Err(problem) = app::check_lab(&lab, &models) {
        report(&problem);
        return ExitCode::from(2);
    }
    if let Err(message) = cli::preflight::check() {
        report(&message);
        return ExitCode::from(2);
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        match cli::preflight::gpu_panic_message(&text).or_else(|| cli::preflight::window_panic_message(&text)) {
            Some(message) => {
                report(&message);
                std::process::exit(2);
            }
            None => default_hook(info),
        }
    }));
    app::run(lab, models, lesson, view.map(|(path, _)| path), size, replay)
}

#[cfg(not(feature = "app"))]
fn run_app(
    _lab: cli::AppArm,
    _models: Vec<std::path::PathBuf>,
    _lesson: Option<elbow::lessons::Lesson>,
    _view: Option<(std::path::PathBuf, bool)>,
    _size: Option<(u32, u32)>,
    _replay: Option<(elbow::experiments::degradation::FailureRecord, String)>,
) -> ExitCode {
    report("this build has no desktop app (built without the `app` feature); see `elbow --help`");
    ExitCode::from(2)
}

/// Writes `error: MESSAGE` to stderr through the one checked writer ([`cli::note`]); if even
/// stderr cannot be written (`2> /dev/full`), the exit code still tells.
fn report(message: &str) {
    cli::note(format_args!("error: {message}"));
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
