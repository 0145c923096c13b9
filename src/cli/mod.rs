//! The headless command line: `solve`, `train`, `experiment`, `atlas`, `bench`, `explain` and `replay`.
//!
//! A thin layer over the core library: it parses arguments into the core's plain configurations,
//! calls the core, and prints tables, JSON or CSV. Every number in the README and in `docs/`
//! comes from one of these commands. Bad input gives a clear message and exit code 2; nothing
//! panics on user input.
//! Everything printed goes through [`outln!`], so a write error (a closed or full standard
//! output) is an error too, never a silent exit 0. Ctrl-C (SIGINT), SIGTERM and SIGHUP end a
//! training run cleanly between two steps ([`signals`]), saving nothing, with exit code 130.

/// `println!` that fails the command on a write error: writes one line to standard output and,
/// if that fails, returns `Err` from the enclosing function (which returns
/// `Result<_, impl From<String>>`).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_line(format_args!($($arg)*))?
    };
}

pub(crate) mod number;
pub(crate) mod preflight;
pub(crate) mod signals;

mod arm;
mod atlas;
mod bench;
mod experiment;
mod explain;
pub(crate) mod figure;
mod plot;
pub(crate) mod replay;
mod solve;
mod train;

pub(crate) use arm::{ArmChoice, ArmFile};
use clap::{Args, Parser, Subcommand};
use elbow::arm::{Arm, ArmKind};
use elbow::kinematics::{JointLimits, Mismatch, RealArm, TwoLinkArm};
use elbow::plant::Body;
use elbow::plant::dynamics::Servo;
pub(crate) use number::{Range, finite as parse_finite, real, shown};

/// Elbow: the failure modes of learned inverse kinematics, visible and measurable.
#[derive(Debug, Parser)]
#[command(name = "elbow", version, about, after_help = "With no command, the desktop app opens.")]
pub(crate) struct Cli {
    /// What to run; with none, the desktop app opens.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// A trained model file for the app to load in place of its head's training (repeatable).
    #[arg(long, value_name = "FILE")]
    pub(crate) model: Vec<std::path::PathBuf>,
    /// The app's arm: `2r` (the two-link lab, the default), `3r`, `rail3` or `so101` (the chain lab).
    #[arg(long, conflicts_with = "lengths")]
    pub(crate) arm: Option<ArmKind>,
    /// Link lengths of the app's arm in metres, each from 1e-6 to 1e6, the longest at most 1e4
    /// times the shortest: two (`L1,L2`) for a two-link arm (default 1,1), three or more
    /// (`L1,L2,L3,...`) for a chain (shoulder ±90°, the other joints ±150°).
    #[arg(long, value_name = "L1,L2,...", value_parser = parse_app_lengths, allow_hyphen_values = true)]
    pub(crate) lengths: Option<AppLengths>,
    /// The app's arm from a URDF file (`--arm-file`, `--tip`, `--joints`, `--hold`).
    #[command(flatten)]
    pub(crate) arm_file: ArmFile,
    /// Open the app on a lesson: averaging, joints-region, bishop1994, branch-flip, noise,
    /// backlash, friction, flex, envelope, hybrid (the two-link arm), manifold or seeds (the
    /// rail3 chain), gravity (the SO-101).
    #[arg(long, value_name = "NAME")]
    pub(crate) lesson: Option<elbow::lessons::Lesson>,
    /// Open the app on a saved view (the panel's "save view"): its arm, target, driver, knobs,
    /// layers and model files.
    #[arg(long, value_name = "FILE", conflicts_with = "lesson")]
    pub(crate) view: Option<std::path::PathBuf>,
    /// The app window's size in logical pixels, `WxH` (each 320 to 16384); by default 1400x900,
    /// shrunk to fit the screen.
    #[arg(long, value_name = "WxH", value_parser = parse_window_size, allow_hyphen_values = true)]
    pub(crate) size: Option<(u32, u32)>,
    /// Open the app on a record of a failure catalog (`elbow experiment degradation --catalog
    /// FILE`): its arm, plant, solver and target, paused at the failing move, with a scrubber
    /// over the plant's sub-steps. `--index` picks the record (from 0; default 0).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["lesson", "view"])]
    pub(crate) replay: Option<std::path::PathBuf>,
    /// Which record of `--replay`, counted from 0.
    #[arg(long = "index", value_name = "N", requires = "replay", allow_hyphen_values = true)]
    pub(crate) replay_index: Option<String>,
}

/// The command line's definition as the binary parses it: [`Cli`]'s, with every argument that
/// takes a value, in every command, admitting negative numbers as values, so `--tolerance -1`
/// reaches the flag's own parser (which names its range and unit) instead of clap's
/// "unexpected argument '-1'". Only a value that reads as a number is taken this way: a flag
/// after a flag that wants a value is still refused as missing its value.
pub(crate) fn command() -> clap::Command {
    fn negative_numbers(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| if a.get_action().takes_values() { a.allow_negative_numbers(true) } else { a })
            .mut_subcommands(negative_numbers)
    }
    negative_numbers(<Cli as clap::CommandFactory>::command())
}

/// Parses `args` by [`command`]; a clap error echoes the value it refuses bounded
/// ([`number::bound_clap_error`]).
pub(crate) fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::FromArgMatches;
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args).map_err(number::bound_clap_error)?;
    Cli::from_arg_matches(&matches).map_err(|e| number::bound_clap_error(e.format(&mut cmd)))
}

/// Parses `--size WxH`: two whole numbers of logical pixels, each from 320 to 16384.
fn parse_window_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!("expected WIDTHxHEIGHT in logical pixels, each from 320 to 16384 (like 1280x720), got `{}`", shown(s))
    };
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let side = |v: &str| v.trim().parse::<u32>().ok().filter(|v| (320..=16384).contains(v));
    Ok((side(w).ok_or_else(bad)?, side(h).ok_or_else(bad)?))
}

/// The arm the app opens on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AppArm {
    /// The two-link lab.
    TwoLink(TwoLinkArm),
    /// The chain lab.
    Chain(Arm),
}

/// `elbow --lengths`: two lengths for a two-link arm, three or more for a chain.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AppLengths {
    /// `L1,L2`.
    Two(f64, f64),
    /// `L1,L2,L3,...`.
    Chain(Vec<f64>),
}

/// Parses the app's `--lengths`: two values by the commands' rules ([`parse_lengths`]), three
/// or more by the chain's ([`Arm::from_lengths`]).
fn parse_app_lengths(s: &str) -> Result<AppLengths, String> {
    if s.split(',').count() == 2 {
        let (a, b) = parse_lengths(s)?;
        return Ok(AppLengths::Two(a, b));
    }
    s.parse::<experiment::ChainLengths>().map(|l| AppLengths::Chain(l.0))
}

impl Cli {
    /// The app's arm: `--arm` or `--lengths`, checked as every command's arm is ([`ArmChoice`]).
    pub(crate) fn app_lab(&self) -> Result<AppArm, String> {
        use elbow::lessons::SceneArm;
        let asked = self.arm.is_some() || self.lengths.is_some() || self.arm_file.arm_file.is_some();
        let file = self.arm_file.clone();
        let lab = ArmChoice { arm: self.arm, lengths: self.lengths.clone(), file, ..ArmChoice::default() }.lab()?;
        let Some(lesson) = self.lesson else { return Ok(lab) };
        match (lesson.scene().arm, &lab) {
            (SceneArm::TwoLink { .. }, AppArm::TwoLink(_)) => Ok(lab),
            (SceneArm::Chain { arm, .. }, AppArm::Chain(chain)) if chain.kind == Some(arm) => Ok(lab),
            (SceneArm::Chain { arm, .. }, _) if !asked => Ok(AppArm::Chain(arm.arm())),
            (SceneArm::TwoLink { .. }, _) => Err(format!(
                "the {lesson} lesson runs on the two-link arm; leave out --arm and --lengths or pass --arm 2r"
            )),
            (SceneArm::Chain { arm, .. }, _) => Err(format!(
                "the {lesson} lesson runs on the {arm} chain; leave out --arm and --lengths or pass --arm {arm}"
            )),
        }
    }

    /// Why the app's flags cannot go with a command (each command takes its own), if they were
    /// given with one.
    pub(crate) fn app_flags_with_command(&self) -> Option<&'static str> {
        match (&self.command, self.model.is_empty(), self.lengths.is_some(), self.arm.is_some()) {
            (None, ..) => None,
            (Some(_), ..) if self.arm_file.arm_file.is_some() => {
                Some("--arm-file before a command is for the app; commands take their own --arm-file")
            }
            (Some(_), ..) if self.lesson.is_some() => Some("--lesson is for the app; it goes without a command"),
            (Some(_), ..) if self.view.is_some() => Some("--view is for the app; it goes without a command"),
            (Some(_), ..) if self.size.is_some() => Some("--size is for the app; it goes without a command"),
            (Some(_), ..) if self.replay.is_some() => {
                Some("--replay before a command is for the app; the command is `elbow replay FILE --index N`")
            }
            (Some(_), false, ..) => Some("--model before a command is for the app; experiments take their own --model"),
            (Some(_), true, true, _) => {
                Some("--lengths before a command is for the app; commands take their own --lengths")
            }
            (Some(_), true, false, true) => {
                Some("--arm before a command is for the app; commands take their own --arm")
            }
            (Some(_), true, false, false) => None,
        }
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Solve one target analytically: both branches, their average and each one's FK error.
    Solve(solve::SolveArgs),
    /// Train a learned head and report its held-out FK error.
    Train(train::TrainArgs),
    /// Reproduce an experiment.
    #[command(subcommand)]
    Experiment(experiment::ExperimentCommand),
    /// Map one solver over the whole workspace and write the figure (PNG or SVG).
    Atlas(atlas::AtlasArgs),
    /// Measure solver, training and inference speed headlessly.
    Bench(bench::BenchArgs),
    /// Why a learned head answers as it does for one target: its raw outputs, the branch each
    /// candidate is near, the training data around the target, and what the envelope would do.
    Explain(explain::ExplainArgs),
    /// Re-run one record of a failure catalog (`experiment degradation --catalog`) and say
    /// whether it reproduces bit for bit.
    Replay(replay::ReplayArgs),
}

/// Why a command failed: the message for the user and the exit code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Failure {
    /// What to tell the user (printed after `error: ` on stderr).
    pub(crate) message: String,
    /// The process's exit code: 2 for bad input and failed runs, 130 when interrupted.
    pub(crate) code: u8,
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self { message, code: 2 }
    }
}

/// Exit code of a run ended by Ctrl-C, SIGTERM or SIGHUP (128 + SIGINT, as shells report it).
pub(crate) const INTERRUPTED_EXIT: u8 = 130;

impl From<elbow::learned::TrainError> for Failure {
    fn from(e: elbow::learned::TrainError) -> Self {
        let code = if matches!(e, elbow::learned::TrainError::Cancelled { .. }) { INTERRUPTED_EXIT } else { 2 };
        Self { message: e.to_string(), code }
    }
}

impl From<elbow::experiments::ExperimentError> for Failure {
    fn from(e: elbow::experiments::ExperimentError) -> Self {
        match e {
            elbow::experiments::ExperimentError::Train(t) => t.into(),
            elbow::experiments::ExperimentError::Cancelled => Self { message: e.to_string(), code: INTERRUPTED_EXIT },
            other => other.to_string().into(),
        }
    }
}

/// Writes one line to standard output; any write error (closed pipe handled by SIGPIPE aside:
/// a full disk, `/dev/full`) becomes the command's error.
pub(crate) fn write_line(args: std::fmt::Arguments<'_>) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{args}").map_err(|e| format!("cannot write to standard output: {e}"))
}

/// The binary's one writer of standard error (progress notes and error messages): one line,
/// and a failed write (`2> /dev/full`, a closed stderr) is ignored, since there is nowhere left
/// to report it; the exit code still tells. `eprintln!` would panic there (exit 101), so the
/// binary denies it (`clippy::print_stderr` in `main.rs`).
pub(crate) fn note(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// Flushes standard output, turning a failure into the command's error.
pub(crate) fn flush_stdout() -> Result<(), String> {
    use std::io::Write;
    std::io::stdout().flush().map_err(|e| format!("cannot write to standard output: {e}"))
}

/// Whether file descriptor 1 was closed when the process started, recorded before Rust's
/// runtime starts: the runtime reopens a closed standard output on `/dev/null`, after which
/// every write would succeed silently.
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs from `.init_array`, before the runtime's start-up code: records whether stdout is closed.
#[cfg(target_os = "linux")]
extern "C" fn record_stdout_state() {
    // SAFETY: F_GETFD on a descriptor number only queries the process's descriptor table.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// Registers [`record_stdout_state`] as an ELF constructor.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static RECORD_STDOUT_STATE: extern "C" fn() = record_stdout_state;

/// Fails when standard output was closed at start (`>&-`): nothing printed could reach anyone,
/// and Rust's runtime would have swallowed every write.
pub(crate) fn check_stdout_open() -> Result<(), String> {
    if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
        return Err("standard output is closed, so nothing could be printed (run without `>&-`)".into());
    }
    Ok(())
}

/// Runs a parsed command; `Err` carries the message for the user and the exit code.
pub(crate) fn run(command: &Command) -> Result<(), Failure> {
    check_stdout_open()?;
    match command {
        Command::Solve(a) => Ok(solve::run(a)?),
        Command::Train(a) => train::run(a),
        Command::Experiment(e) => experiment::run(e),
        Command::Atlas(a) => Ok(atlas::run(a)?),
        Command::Bench(a) => Ok(bench::run(a)?),
        Command::Explain(a) => Ok(explain::run(a)?),
        Command::Replay(a) => replay::run(a),
    }?;
    Ok(flush_stdout()?)
}

/// The arm of the commands that run on the two-link arm only (`averaging`, `degradation`,
/// `explain`): `--lengths L1,L2`, `--elbow-limits`, and `--arm`, which names the two-link arm
/// or is refused in one sentence when it names a chain.
#[derive(Debug, Clone, Args)]
pub(crate) struct ArmArgs {
    /// The arm: only `2r`, the two-link arm, here (the chains `3r`, `rail3` and `so101` run in
    /// `solve`, `train`, `atlas`, `explain`, `experiment chain`, `experiment degradation` and
    /// `experiment tracking`).
    #[arg(long, conflicts_with = "lengths")]
    pub(crate) arm: Option<ArmKind>,
    /// Link lengths `L1,L2` in metres, each from 1e-6 to 1e6, the longer at most 1e4 times the
    /// shorter.
    #[arg(long, default_value = "1,1", value_parser = parse_lengths, allow_hyphen_values = true)]
    pub(crate) lengths: (f64, f64),
    /// Elbow joint range `MIN,MAX` in degrees, within ±720 (default: unlimited).
    #[arg(long, value_parser = parse_range_deg, allow_hyphen_values = true)]
    pub(crate) elbow_limits: Option<(f64, f64)>,
}

impl ArmArgs {
    /// Builds the validated arm; a chain named by `--arm` is refused.
    pub(crate) fn arm(&self) -> Result<TwoLinkArm, String> {
        if let Some(kind) = self.arm.filter(|&k| k != ArmKind::TwoR) {
            return Err(format!(
                "this command runs on the two-link arm (`--arm 2r` or two --lengths); {kind} is a chain, which `elbow solve`, `train`, `atlas`, `explain`, `experiment chain`, `experiment degradation` and `experiment tracking` run on"
            ));
        }
        let arm = TwoLinkArm::new(self.lengths.0, self.lengths.1).map_err(|e| e.to_string())?;
        match self.elbow_limits {
            None => Ok(arm),
            Some((lo, hi)) => {
                let elbow = JointLimits::new(lo.to_radians(), hi.to_radians(), "elbow").map_err(|e| e.to_string())?;
                arm.with_limits(JointLimits::FULL, elbow).map_err(|e| e.to_string())
            }
        }
    }
}

/// The physical arm the plant simulates: its servo, link masses and plane, in physical units.
#[derive(Debug, Clone, Args)]
pub(crate) struct BodyArgs {
    /// Servo position gain, N m/rad, 1e-3 to 1e6 (the SO-101's STS3215: 998.22).
    #[arg(long, default_value_t = Body::default().servo.kp, value_parser = real(SERVO_GAIN.with_unit("N m/rad")),
          allow_hyphen_values = true)]
    kp: f64,
    /// Servo velocity gain, N m s/rad, 0 to 1e6.
    #[arg(long, default_value_t = Body::default().servo.kv, value_parser = real(GAIN.with_unit("N m s/rad")),
          allow_hyphen_values = true)]
    kv: f64,
    /// Servo torque limit, N m, 1e-3 to 1e6.
    #[arg(long, default_value_t = Body::default().servo.torque_limit, value_parser = real(SERVO_GAIN.with_unit("N m")),
          allow_hyphen_values = true)]
    torque_limit: f64,
    /// Joint viscous damping, N m s/rad, 0 to 1e6.
    #[arg(long, default_value_t = Body::default().servo.damping, value_parser = real(GAIN.with_unit("N m s/rad")),
          allow_hyphen_values = true)]
    damping: f64,
    /// Armature (the rotor's reflected inertia), kg m^2, 1e-6 to 1e3.
    #[arg(long, default_value_t = Body::default().servo.armature, value_parser = real(ARMATURE),
          allow_hyphen_values = true)]
    armature: f64,
    /// Link masses `M1,M2`, kg (uniform rods), each 1e-6 to 1e3.
    #[arg(long, value_delimiter = ',', default_value = "0.05,0.05", allow_hyphen_values = true,
          value_parser = real(Range::closed(elbow::plant::MIN_LINK_MASS, elbow::plant::MAX_LINK_MASS, "kg")))]
    link_mass: Vec<f64>,
    /// The arm hangs in a vertical plane (gravity along -y) instead of lying on a table.
    #[arg(long)]
    gravity: bool,
}

/// The servo's gains, torque, damping and armature: each from 0 to the plant's
/// [`MAX_GAIN`](elbow::plant::dynamics::MAX_GAIN) in its unit (the gain and the torque limit
/// above 0).
const GAIN: Range = Range::closed(0.0, elbow::plant::dynamics::MAX_GAIN, "");
/// A servo's position gain or torque limit: the plant's bounds.
const SERVO_GAIN: Range = Range::closed(elbow::plant::dynamics::MIN_GAIN, elbow::plant::dynamics::MAX_GAIN, "");
/// A servo's armature, kg m^2: the plant's bounds.
const ARMATURE: Range =
    Range::closed(elbow::plant::dynamics::MIN_ARMATURE, elbow::plant::dynamics::MAX_ARMATURE, "kg m^2");

impl BodyArgs {
    /// The body, checked: each quantity in its range, named with its unit when not.
    pub(crate) fn body(&self) -> Result<Body, String> {
        let [m1, m2] = self.link_mass[..] else {
            return Err(format!("--link-mass takes two masses M1,M2 in kg, got {}", self.link_mass.len()));
        };
        let servo = Servo {
            kp: self.kp,
            kv: self.kv,
            torque_limit: self.torque_limit,
            damping: self.damping,
            armature: self.armature,
            ..Body::default().servo
        };
        let body = Body { servo, link_mass: [m1, m2], gravity: self.gravity };
        body.validate().map_err(|e| e.to_string())?;
        Ok(body)
    }
}

/// The real arm of the default mismatch ([`Mismatch::DEFAULT`]) on `arm`, which the residual
/// hybrid fits. When that arm leaves the supported range (links near the length bounds or the
/// ratio bound), or reaches almost none of the nominal arm's workspace (links so unequal that
/// the default length error moves the thin annulus off the nominal one: no target to learn a
/// correction on), a `head` that fits a real arm gets a plain error naming the default mismatch
/// as the cause, never the nominal arm in its place (which would train it to correct nothing);
/// the other heads fit no real arm and get the nominal one.
pub(crate) fn fitted_real_arm(head: elbow::HeadKind, arm: &TwoLinkArm) -> Result<RealArm, String> {
    if !head.fits_real_arm() {
        return Ok(RealArm::with_mismatch(arm, Mismatch::DEFAULT).unwrap_or_else(|_| RealArm::ideal(*arm)));
    }
    let [e1, e2] = Mismatch::DEFAULT.length_error.map(|e| 100.0 * e);
    let default =
        format!("the {head} head fits the real arm of the default mismatch (links {e1:+.0} % and {e2:+.0} %)");
    let real = RealArm::with_mismatch(arm, Mismatch::DEFAULT)
        .map_err(|e| format!("{default}, and for these --lengths that arm is out of range: {e}"))?;
    // The share of the nominal annulus the real arm reaches (the area of the two annuli's overlap).
    let (r0, r1) = (arm.inner_radius(), arm.reach());
    let (q0, q1) = (real.arm.inner_radius(), real.arm.reach());
    let (lo, hi) = (r0.max(q0), r1.min(q1));
    let share = if hi > lo { (hi * hi - lo * lo) / (r1 * r1 - r0 * r0) } else { 0.0 };
    if share < MIN_REAL_ARM_SHARE {
        return Err(format!(
            "{default}, and for these --lengths that arm reaches {:.1} % of the nominal arm's workspace (nominal {} to {} m from the base, real {} to {} m): too few targets to learn a correction on; use links closer in length",
            100.0 * share,
            elbow::stats::fmt_num(r0),
            elbow::stats::fmt_num(r1),
            elbow::stats::fmt_num(q0),
            elbow::stats::fmt_num(q1)
        ));
    }
    Ok(real)
}

/// The least share of the nominal arm's workspace the residual head's real arm must reach
/// ([`fitted_real_arm`]): 1 %, so the default 20,000 training targets hold some 200 it can learn
/// from.
const MIN_REAL_ARM_SHARE: f64 = 0.01;

/// Parses `A,B` into two finite numbers: exactly two, each refused by itself
/// ([`parse_finite`]); the refusal counts what was given.
pub(crate) fn parse_pair(s: &str, what: &str) -> Result<(f64, f64), String> {
    let parts: Vec<&str> = s.split(',').collect();
    let [a, b] = parts[..] else {
        return Err(format!("{what} must be two numbers `A,B`, got {} value(s) in `{}`", parts.len(), shown(s)));
    };
    Ok((parse_finite(a)?, parse_finite(b)?))
}

/// Parses `L1,L2`: the core's rules ([`TwoLinkArm::new`]), checked while parsing. Three or more
/// lengths make a chain, which the commands that take this flag do not run on: said so.
fn parse_lengths(s: &str) -> Result<(f64, f64), String> {
    let n = s.split(',').count();
    if n > 2 {
        return Err(format!(
            "this command runs on the two-link arm: --lengths takes two lengths `L1,L2`; {n} lengths make a chain, which `elbow solve`, `train`, `atlas`, `explain` and `experiment chain` run on"
        ));
    }
    let (a, b) = parse_pair(s, "lengths")?;
    TwoLinkArm::new(a, b).map_err(|e| format!("link lengths must be > 0 and usable: {e}"))?;
    Ok((a, b))
}

/// Parses `MIN,MAX` degrees with `MIN < MAX`, both within ±720.
fn parse_range_deg(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = parse_pair(s, "range")?;
    if a >= b {
        return Err(format!("range needs MIN < MAX, got `{}`", shown(s)));
    }
    if a.abs() > 720.0 || b.abs() > 720.0 {
        return Err(format!("joint limits must lie within ±720 degrees (two turns), got `{}`", shown(s)));
    }
    Ok((a, b))
}

/// The one parser of every whole-number flag: a whole number in `lo..=hi`, written plainly
/// (`1000`) or as a whole-valued decimal or exponent (`1e3`, `1000.0`); fractions, negatives,
/// non-numbers and values past `hi` are refused with the accepted range.
pub(crate) fn parse_whole(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let t = s.trim();
    let n = t.parse::<u64>().ok().or_else(|| {
        let v = t.parse::<f64>().ok()?;
        // Past 2^53 an f64 no longer holds every whole number: such values must be written plainly.
        (v.is_finite() && v.fract() == 0.0 && v >= 0.0 && v <= (hi as f64).min(9_007_199_254_740_992.0))
            .then_some(v as u64)
    });
    match n {
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("must be a whole number from {lo} to {hi}, got `{}`", shown(t))),
    }
}

/// [`parse_whole`] for counts in `LO..=HI` (`value_parser = count::<1, 100>`).
pub(crate) fn count<const LO: usize, const HI: usize>(s: &str) -> Result<usize, String> {
    parse_whole(s, LO as u64, HI as u64).map(|n| n as usize)
}

/// [`parse_whole`] for seeds: any `u64`.
pub(crate) fn seed(s: &str) -> Result<u64, String> {
    parse_whole(s, 0, u64::MAX)
}

/// Parses a learning rate: a number strictly between 0 and 1.
pub(crate) fn learning_rate(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("must be a number strictly between 0 and 1, written (0, 1), got `{}`", shown(s))),
    }
}

/// Two signed numbers `A,B`, both in `[-0.5, 0.5]` (a mismatch: length errors or offsets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SignedPair(pub(crate) f64, pub(crate) f64);

impl std::str::FromStr for SignedPair {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = parse_pair(s, "values")?;
        if a.abs() > 0.5 || b.abs() > 0.5 {
            return Err(format!("values must lie in [-0.5, 0.5], got `{}`", shown(s)));
        }
        Ok(SignedPair(a, b))
    }
}

impl std::fmt::Display for SignedPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.0, self.1)
    }
}

/// A comma-separated list of 1 to 16 finite, non-negative levels (`0,0.01,0.05`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Levels(pub(crate) Vec<f64>);

impl std::str::FromStr for Levels {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<f64> = s.split(',').map(parse_finite).collect::<Result<_, _>>()?;
        let max = elbow::experiments::degradation::MAX_LEVELS;
        if v.iter().any(|&x| x < 0.0) || v.is_empty() || v.len() > max {
            return Err(format!("levels must be 1 to {max} numbers >= 0, got `{}`", shown(s)));
        }
        Ok(Levels(v))
    }
}

impl std::fmt::Display for Levels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self.0.iter().map(f64::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// The command line's one progress bar, on stderr: `PREFIX [=====>   ] POS/LEN UNIT  MESSAGE  eta`,
/// or nothing when `show` is false. indicatif draws it only when stderr is a terminal and
/// ignores write errors.
pub(crate) fn progress_bar(show: bool, len: usize, unit: &str, prefix: String) -> Option<indicatif::ProgressBar> {
    show.then(|| {
        let bar = indicatif::ProgressBar::new(len as u64);
        let template = format!("{{prefix}} [{{bar:40}}] {{pos}}/{{len}} {unit}  {{msg}}  eta {{eta}}");
        if let Ok(style) = indicatif::ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(prefix);
        bar
    })
}

/// Runs `work` with the one progress bar (when `show`) and Ctrl-C polling: `work` gets an
/// `update(message, done, total)` that moves the bar and answers whether to keep going (false
/// once interrupted). The bar is cleared and the polling stopped before this returns.
pub(crate) fn with_progress<T>(
    show: bool,
    unit: &str,
    prefix: &str,
    work: impl FnOnce(&(dyn Fn(&str, usize, usize) -> bool + Sync)) -> T,
) -> T {
    let bar = progress_bar(show, 0, unit, prefix.to_string());
    let polling = signals::Polling::start();
    let update = |message: &str, done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_message(message.to_string());
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
        !signals::interrupted()
    };
    let out = work(&update);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    drop(polling);
    out
}

/// Prints a value as pretty JSON.
fn print_json(value: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| format!("cannot write JSON: {e}"))?;
    outln!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_every_subcommand() {
        for args in [
            vec!["elbow", "solve", "1", "-0.5", "--lengths", "1,0.5", "--json"],
            vec!["elbow", "train", "--head", "residual", "--region", "sector:-90,90", "--steps", "10"],
            vec!["elbow", "experiment", "averaging", "--json"],
            vec!["elbow", "experiment", "degradation", "--noise", "0,0.1", "--backlash", "0", "--csv"],
            vec!["elbow", "bench", "--json"],
            vec!["elbow", "atlas", "--solver", "analytic", "--layer", "branch", "--out", "a.png"],
        ] {
            Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        for bad in [
            vec!["elbow", "solve", "1", "inf"],
            vec!["elbow", "solve", "1", "1", "--lengths", "-1,1"],
            vec!["elbow", "train", "--head", "mlp"],
            vec!["elbow", "train", "--region", "sector:10,5"],
            vec!["elbow", "experiment", "degradation", "--noise", "-1"],
            vec!["elbow", "atlas", "--solver", "nope", "--out", "a.png"],
            vec!["elbow", "atlas", "--layer", "nope", "--out", "a.png"],
            vec!["elbow", "solve", "1", "1", "--lengths", "1e155,1"],
            vec!["elbow", "solve", "1", "1", "--elbow-limits", "1e20,2e20"],
            vec!["elbow", "train", "--steps", "1000000000000"],
            vec!["elbow", "experiment", "averaging", "--targets", "18446744073709551615"],
            vec!["elbow", "experiment", "averaging", "--targets", "0"],
            vec!["elbow", "bench", "--train-steps", "5"],
        ] {
            assert!(Cli::try_parse_from(&bad).is_err(), "{bad:?}");
        }
    }

    /// `elbow --lengths L1,L2` gives the app its arm through the commands' parser: the same
    /// refusals, and the flag is the app's alone; three or more lengths, or `--arm`, give the
    /// chain lab.
    #[test]
    fn the_app_takes_lengths_like_every_command() {
        let app = |args: &[&str]| Cli::try_parse_from([&["elbow"], args].concat());
        assert_eq!(app(&[]).unwrap().app_lab(), Ok(AppArm::TwoLink(TwoLinkArm::default())));
        let cli = app(&["--lengths", "0.7,0.4"]).unwrap();
        assert_eq!(cli.app_lab(), Ok(AppArm::TwoLink(TwoLinkArm::new(0.7, 0.4).unwrap())));
        assert_eq!(cli.app_flags_with_command(), None);
        for bad in ["-1,1", "0,1", "1,x", "1e155,1", "1e-9,1", "inf,1"] {
            let e = app(&["--lengths", bad]).unwrap_err();
            let solve = Cli::try_parse_from(["elbow", "solve", "1", "1", "--lengths", bad]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad}");
            // The same sentence as the commands' --lengths.
            let why =
                |e: &clap::Error| e.to_string().lines().next().and_then(|l| Some(l.split_once(">': ")?.1.to_string()));
            assert!(why(&e).is_some() && why(&e) == why(&solve), "{bad}: {e} vs {solve}");
        }
        for bad in ["1", "1,1,0", "1,1,nan", "1,1e5,1e-5", ""] {
            assert!(app(&["--lengths", bad]).is_err(), "{bad}");
        }
        for misplaced in
            [&["--lengths", "1,2", "solve", "1", "1"][..], &["--model", "m.json", "bench"], &["--arm", "3r", "bench"]]
        {
            assert!(app(misplaced).unwrap().app_flags_with_command().is_some(), "{misplaced:?}");
        }
        assert_eq!(app(&["solve", "1", "1", "--lengths", "1,2"]).unwrap().app_flags_with_command(), None);
        // The chain lab: a named arm or three or more lengths.
        assert_eq!(app(&["--arm", "rail3"]).unwrap().app_lab(), Ok(AppArm::Chain(ArmKind::Rail3.arm())));
        assert_eq!(app(&["--arm", "2r"]).unwrap().app_lab(), Ok(AppArm::TwoLink(TwoLinkArm::default())));
        let AppArm::Chain(c) = app(&["--lengths", "1,0.5,0.5"]).unwrap().app_lab().unwrap() else {
            panic!("three lengths make a chain")
        };
        assert_eq!(c.coords(), 3);
        assert!(app(&["--arm", "3r", "--lengths", "1,1,1"]).is_err());
        let e = app(&["--arm", "4r"]).unwrap_err().to_string();
        assert!(e.contains("2r, 3r, rail3"), "{e}");
    }

    #[test]
    fn negative_values_parse_as_values() {
        let Some(Command::Solve(a)) =
            Cli::try_parse_from(["elbow", "solve", "1", "0.5", "--elbow-limits", "-150,150"]).unwrap().command
        else {
            panic!("solve parses")
        };
        assert_eq!(a.arm.elbow_limits, Some((-150.0, 150.0)));
        for args in [
            vec!["elbow", "experiment", "degradation", "--length-error", "-0.1,0.1"],
            vec!["elbow", "experiment", "degradation", "--joint-offset", "-0.1,-0.2"],
        ] {
            Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        let e = Cli::try_parse_from(["elbow", "solve", "1", "1", "--lengths", "-1,1"]).unwrap_err().to_string();
        assert!(!e.contains("-- -1") && e.contains("1e-6"), "{e}");
    }

    /// Issue #48 (b): every flag that takes a value, in every command, takes `-1` as its value:
    /// the flag's own parser refuses it naming the flag and what it accepts (or accepts it),
    /// never clap's "unexpected argument '-1'" with a `-- -1` tip.
    #[test]
    fn every_flag_that_takes_a_value_takes_a_negative_number() {
        fn leaves(cmd: &clap::Command, path: Vec<String>, out: &mut Vec<(Vec<String>, clap::Command)>) {
            out.push((path.clone(), cmd.clone()));
            for sub in cmd.get_subcommands() {
                leaves(sub, [path.clone(), vec![sub.get_name().to_string()]].concat(), out);
            }
        }
        let mut commands = Vec::new();
        leaves(&command(), vec!["elbow".into()], &mut commands);
        let mut checked = 0;
        for (path, cmd) in &commands {
            for arg in cmd.get_arguments().filter(|a| a.get_action().takes_values()) {
                let Some(long) = arg.get_long() else { continue };
                for value in ["-1", "-1e300", "-0.5"] {
                    let args = [path.clone(), vec![format!("--{long}"), value.to_string()]].concat();
                    let Err(e) = parse_from(&args) else { continue };
                    let text = e.to_string();
                    assert!(
                        e.kind() != clap::error::ErrorKind::UnknownArgument && !text.contains("-- -"),
                        "{args:?}: {text}"
                    );
                    if e.kind() == clap::error::ErrorKind::ValueValidation {
                        assert!(text.contains(&format!("--{long}")), "{args:?}: {text}");
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 200, "only {checked} refusals checked");
        // The window size's pair, which no number parser reads.
        let e = parse_from(["elbow", "--size", "-1x-1"]).unwrap_err().to_string();
        assert!(e.contains("--size") && e.contains("from 320 to 16384"), "{e}");
    }

    #[test]
    fn counts_accept_what_a_user_means() {
        assert_eq!(count::<1, 1_000_000>("1e6"), Ok(1_000_000));
        assert_eq!(count::<1, 1_000_000>(" 5 "), Ok(5));
        assert_eq!(seed("1e3"), Ok(1000));
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        assert!(seed("1e300").is_err() && seed("-1").is_err() && seed("0.5").is_err());
        for bad in ["0", "1000001", "-1", "1.5", "nan", "inf", "x", "18446744073709551615"] {
            let e = count::<1, 1_000_000>(bad).unwrap_err();
            assert!(e.contains("from 1 to 1000000"), "{bad}: {e}");
        }
    }

    /// Every whole-number flag of every command goes through [`parse_whole`]: `1e2` is 100 and
    /// `-1` and `1.5` are refused naming the flag.
    #[test]
    fn every_whole_number_flag_takes_1e2_and_refuses_fractions() {
        let commands: [(&[&str], &[&str]); 5] = [
            (
                &["train"],
                &[
                    "--steps",
                    "--batch",
                    "--hidden",
                    "--depth",
                    "--components",
                    "--data-size",
                    "--eval-targets",
                    "--seed",
                ],
            ),
            (&["experiment", "averaging"], &["--steps", "--targets", "--seed"]),
            (&["experiment", "degradation"], &["--targets", "--train-steps", "--seed"]),
            (&["atlas", "--out", "a.png"], &["--resolution", "--samples", "--train-steps", "--seed"]),
            (&["bench"], &["--train-steps"]),
        ];
        for (base, flags) in commands {
            for flag in flags {
                // A whole number in the flag's range, written with an exponent.
                let good = match *flag {
                    "--depth" => "8e0",
                    "--components" => "3.2e1",
                    "--samples" => "6.4e1",
                    _ => "1e2",
                };
                let args = [&["elbow"], base, &[flag, good]].concat();
                Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
                for bad in ["1.5", "-1", "1e400", "x"] {
                    let args = [&["elbow"], base, &[flag, bad]].concat();
                    let e = Cli::try_parse_from(&args).unwrap_err().to_string();
                    assert!(e.contains(flag) && e.contains("whole number"), "{args:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn training_defaults_come_from_the_core() {
        let Some(Command::Train(args)) = Cli::try_parse_from(["elbow", "train"]).unwrap().command else {
            panic!("train parses")
        };
        let cfg = args.config().unwrap();
        let core = elbow::TrainConfig::default();
        assert_eq!(cfg, elbow::TrainConfig { head: core.head, ..core });
    }
}
