//! `elbow experiment degradation`: arguments become a [`DegradationConfig`]; the report prints as
//! a table, JSON or CSV, and `--plot` draws it.

use super::channel_flags::LevelArgs;
use crate::cli::plot;
use crate::cli::{
    AppArm, ArmChoice, BodyArgs, Failure, Range, SignedPair, count, print_json, progress_bar, real, seed,
};
use clap::Args;
use elbow::envelope::{EnvelopeConfig, Reason};
use elbow::experiments::degradation::catalog::{CatalogSummary, CatalogWriter};
use elbow::experiments::degradation::{CatalogSink, Cell, Channel, OodKind, Protocol};
use elbow::experiments::degradation::{
    MAX_CATALOG_BYTES, MAX_OOD_FRACTION, MAX_TOLERANCE, Progress, degradation_catalogued,
};
use elbow::experiments::{DegradationConfig, DegradationReport};
use elbow::files::AtomicFile;
use elbow::kinematics::{Mismatch, Pose, Region};
use elbow::learned::{LearnedModel, MAX_EVAL_TARGETS, MAX_STEPS};
use std::path::PathBuf;

fn defaults() -> DegradationConfig {
    DegradationConfig::default()
}

/// A comma-separated list of OOD target sets (`beyond,hole,sector`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OodSets(Vec<OodKind>);

impl std::str::FromStr for OodSets {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().eq_ignore_ascii_case("none") {
            return Ok(OodSets(Vec::new()));
        }
        elbow::keys::parse_list(s).map(OodSets)
    }
}

impl std::fmt::Display for OodSets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() { "none".to_string() } else { elbow::keys::join(&self.0) }.as_str())
    }
}

/// Arguments of `elbow experiment degradation`.
#[derive(Debug, Args)]
pub(crate) struct DegradationArgs {
    /// Which protocol: `exercise` (the exercise as written: fixed start pose, noise on the joint
    /// angles, backlash, FK error), `plant` (closed loop on the simulated real arm) or `both`.
    #[arg(long, default_value_t = defaults().protocol)]
    protocol: Protocol,
    /// The levels of every channel (`--encoder`, ..., `--combined`), from the channel table.
    #[command(flatten)]
    levels: LevelArgs,
    /// Out-of-distribution target sets: `beyond` (the reach), `hole` (arms with l1 != l2),
    /// `sector` (outside a sector training region), comma-separated, or `none`.
    /// [default: all on the two-link arm; `beyond`, the one a chain has, on a chain]
    #[arg(long)]
    ood: Option<OodSets>,
    /// Held-out (in-distribution) targets per setting, 1 to 1000000 [default: 400 on the
    /// two-link arm, 200 on a chain].
    #[arg(long, value_parser = count::<1, MAX_EVAL_TARGETS>, allow_hyphen_values = true)]
    targets: Option<usize>,
    /// Out-of-distribution targets per setting, as a fraction of `--targets` from 0 to 10, shared
    /// among the sets.
    #[arg(long, default_value_t = defaults().ood_fraction,
          value_parser = real(Range::closed(0.0, MAX_OOD_FRACTION, "times --targets")))]
    ood_fraction: f64,
    /// A tip error above this (metres, in (0, 1000]) counts as a miss (and fails the post-move
    /// check) [default: 0.05 on the two-link arm, 2.5 % of the reach on a chain].
    #[arg(long, value_parser = real(Range::above(0.0, MAX_TOLERANCE, "m")))]
    tolerance: Option<f64>,
    /// Outer corrections per target in the plant protocol, 0 to 10: after the servos settle on
    /// the goal, send `goal + (setpoint - measured)` and settle again (0: the plain goal).
    #[arg(long, default_value_t = defaults().corrections, value_parser = count::<0, 10>, allow_hyphen_values = true)]
    corrections: usize,
    /// Do not let classical and enveloped pipelines check the encoders after the move.
    #[arg(long)]
    no_post_move_check: bool,
    /// Training steps of each learned head not given with `--model`, 1 to 10000000 [default:
    /// 4000 on the two-link arm; on a chain, each net's steps of the chain benchmark's recipe,
    /// 12000].
    #[arg(long, value_parser = count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// A trained model file (from `elbow train --out`) to use instead of training its head;
    /// repeatable, one per head.
    #[arg(long = "model", value_name = "FILE")]
    models: Vec<PathBuf>,
    /// Training region of the learned heads: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value_t = defaults().region)]
    region: Region,
    /// Real arm's relative link-length errors `E1,E2` at mismatch level 1.
    #[arg(long, allow_hyphen_values = true,
          default_value_t = SignedPair(Mismatch::DEFAULT.length_error[0], Mismatch::DEFAULT.length_error[1]))]
    length_error: SignedPair,
    /// Real arm's joint offsets `O1,O2` at mismatch level 1, radians.
    #[arg(long, allow_hyphen_values = true,
          default_value_t = SignedPair(Mismatch::DEFAULT.joint_offsets.shoulder, Mismatch::DEFAULT.joint_offsets.elbow))]
    joint_offset: SignedPair,
    /// Envelope: fastest joint speed, radians per second, above 0 (`inf`: no limit).
    #[arg(long, default_value_t = EnvelopeConfig::DEFAULT_MAX_JOINT_SPEED,
          value_parser = real(Range::above(0.0, f64::INFINITY, "rad/s")))]
    max_joint_speed: f64,
    /// Envelope: seconds between targets, above 0 (the joint-step limit is speed x period).
    #[arg(long, default_value_t = EnvelopeConfig::DEFAULT_CONTROL_PERIOD,
          value_parser = real(Range::above(0.0, f64::INFINITY, "s").below_hi()))]
    control_period: f64,
    /// Envelope: trust region of the residual hybrid's correction, radians, 0 or more.
    #[arg(long, default_value_t = EnvelopeConfig::DEFAULT_MAX_CORRECTION,
          value_parser = real(Range::closed(0.0, f64::INFINITY, "rad").below_hi()))]
    max_correction: f64,
    /// Seed of targets, training and noise.
    #[arg(long, default_value_t = defaults().seed, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    /// The arm: `--arm 2r` (the default), a chain (`--arm rail3|3r|so101`, or three or more
    /// `--lengths`), or a two-link arm of two `--lengths`.
    #[command(flatten)]
    arm: ArmChoice,
    #[command(flatten)]
    body: BodyArgs,
    /// No progress bar on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print CSV.
    #[arg(long)]
    csv: bool,
    /// Also draw mean error and reported/silent/false-alarm rates against each channel's level
    /// into FILE (`.svg` or `.png`).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Also write the failure catalog to FILE as JSON Lines: one self-contained record per
    /// silent failure, reported failure and false alarm of the plant protocol (not with
    /// `--protocol exercise`, which makes none), for `elbow replay FILE --index N`. Written as
    /// the run goes and put in place atomically at its end, up to 4 GiB (the most a replay
    /// reads; records past it are left out, and said so); not with `--model` (a replay
    /// re-trains the heads).
    #[arg(long, value_name = "FILE", conflicts_with = "models")]
    catalog: Option<PathBuf>,
    /// The most catalog records per pipeline, setting and target set for each pair of verdicts
    /// (encoder check, camera check): the first ones in target order, 1 to 1000000.
    #[arg(long, default_value_t = 3, value_parser = count::<1, 1_000_000>, requires = "catalog")]
    catalog_cap: usize,
}

impl DegradationArgs {
    /// The core's configuration, validated.
    pub(crate) fn config(&self) -> Result<DegradationConfig, String> {
        let on = match self.arm.lab()? {
            AppArm::TwoLink(arm) => DegradationConfig { arm, ..DegradationConfig::on(&elbow::arm::Arm::two_link(arm)) },
            AppArm::Chain(chain) => DegradationConfig::on(&chain),
        };
        // A channel's levels given on the command line replace the arm's default ones; those not
        // given keep the arm's (a chain's metre levels are scaled to its reach).
        let mut levels = on.levels.clone();
        for ch in Channel::ALL {
            if self.levels.given(ch) {
                *levels.of_mut(ch) = self.levels.0.of(ch).to_vec();
            }
        }
        let arm = on.arm;
        let cfg = DegradationConfig {
            arm,
            protocol: self.protocol,
            levels,
            ood: self.ood.as_ref().map_or(on.ood, |o| o.0.clone()),
            targets: self.targets.unwrap_or(on.targets),
            ood_fraction: self.ood_fraction,
            tolerance: self.tolerance.unwrap_or(on.tolerance),
            corrections: self.corrections,
            post_move_check: !self.no_post_move_check,
            train_steps: self.train_steps.unwrap_or(on.train_steps),
            region: self.region,
            mismatch: Mismatch {
                length_error: [self.length_error.0, self.length_error.1],
                joint_offsets: Pose::new(self.joint_offset.0, self.joint_offset.1),
            },
            envelope: EnvelopeConfig {
                max_joint_speed: self.max_joint_speed,
                control_period: self.control_period,
                max_correction: self.max_correction,
                ..on.envelope
            },
            seed: self.seed,
            body: self.body.body()?,
            chain: on.chain,
        };
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// `elbow experiment degradation`: checks everything (configuration, model files, plot and
/// catalog paths) before any work starts, streams the catalog into a temporary file while the
/// run goes, and prints the report before it says that a catalog or figure could not be
/// written: a file that cannot be written never costs the report.
pub(crate) fn run(a: &DegradationArgs) -> Result<(), Failure> {
    let cfg = a.config()?;
    if a.catalog.is_some() && !cfg.protocol.runs_plant() {
        return Err(format!(
            "--catalog holds plant-protocol records only, and --protocol {} makes none; use --protocol plant or both",
            cfg.protocol
        )
        .into());
    }
    let models =
        a.models.iter().map(|p| LearnedModel::load(p).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
    let plot = a.plot.as_deref().map(plot::check_path).transpose()?;
    let cannot = |path: &std::path::Path, e: &dyn std::fmt::Display| {
        format!("cannot write the catalog to {}: {e}; nothing was written there", path.display())
    };
    let mut writer = match &a.catalog {
        Some(path) => Some(CatalogWriter::new(
            AtomicFile::create(path).map_err(|e| format!("cannot write the catalog to {}: {e}", path.display()))?,
            MAX_CATALOG_BYTES,
        )),
        None => None,
    };
    let bar = progress_bar(!a.quiet, 0, "settings", "training the heads".into());
    let progress = |p: Progress| match (p, &bar) {
        (_, None) => {}
        (Progress::Training, Some(bar)) => bar.set_prefix("training the heads"),
        (Progress::Evaluating { done, total }, Some(bar)) => {
            bar.set_prefix("evaluating");
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let mut push = |r: &elbow::experiments::degradation::FailureRecord| {
        if let Some(w) = writer.as_mut() {
            w.push(r);
        }
    };
    let sink = a.catalog.as_ref().map(|_| CatalogSink { cap: a.catalog_cap, sink: &mut push });
    let run = degradation_catalogued(&cfg, models, &progress, sink);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let report = run?;
    // The catalog is put in place first (a closed standard output does not lose it), but a
    // failure to is said only after the numbers, which it must not cost.
    let saved = match (&a.catalog, writer) {
        (Some(path), Some(writer)) => Some(
            writer
                .finish()
                .and_then(|(file, summary)| file.commit().map(|()| catalog_note(&summary, path)))
                .map_err(|e| cannot(path, &e)),
        ),
        _ => None,
    };
    match (a.json, a.csv) {
        (true, _) => print_json(&report)?,
        (_, true) => print_csv(&report)?,
        _ => print_table(&report)?,
    }
    super::super::flush_stdout()?;
    let mut failures = Vec::new();
    match saved {
        Some(Ok(note)) => crate::cli::note(format_args!("{note}")),
        Some(Err(e)) => failures.push(e),
        None => {}
    }
    // The figure last: one that cannot be drawn or written does not lose the numbers either.
    if let Some(out) = &plot
        && let Err(e) = plot::draw(&report, out)
    {
        failures.push(e);
    }
    if failures.is_empty() { Ok(()) } else { Err(failures.join("; and ").into()) }
}

/// What was written to the catalog at `path`, in one sentence.
fn catalog_note(s: &CatalogSummary, path: &std::path::Path) -> String {
    let wrote = format!("wrote {} failure record(s), {} bytes, to {}", s.records, s.bytes, path.display());
    if s.left_out == 0 {
        return wrote;
    }
    format!(
        "{wrote}, and left out the last {} record(s): the catalog stops at {MAX_CATALOG_BYTES} bytes (4 GiB), the most `elbow replay` reads; lower --catalog-cap or --targets to keep them all",
        s.left_out
    )
}

fn print_csv(r: &DegradationReport) -> Result<(), String> {
    let reasons: Vec<String> = Reason::ALL.iter().map(|x| format!("rejected_{}", x.key().replace('-', "_"))).collect();
    // Every channel's value: the first five before the error columns, the rest after the
    // envelope's, in table order (the combined channel has no value of its own).
    let quantities: Vec<Channel> = Channel::ALL.into_iter().filter(|&c| c != Channel::Combined).collect();
    let (first, rest) = quantities.split_at(CSV_FIRST_CHANNELS);
    let names = |chs: &[Channel]| chs.iter().map(|c| c.row().field).collect::<Vec<_>>().join(",");
    outln!(
        "protocol,solver,channel,level,split,{},mean_error,median_error,p95_error,reported,missed,silent,false_alarm,accepted,{},{},camera_reported,camera_silent,camera_false_alarm",
        names(first),
        reasons.join(","),
        names(rest)
    );
    for c in &r.cells {
        let p = c.perturbation;
        let values = |chs: &[Channel]| chs.iter().map(|&ch| p[ch].to_string()).collect::<Vec<_>>().join(",");
        let log = c.envelope.map_or(",".repeat(Reason::COUNT), |l| {
            let counts: Vec<String> = l.rejected.iter().map(u64::to_string).collect();
            format!("{},{}", l.accepted, counts.join(","))
        });
        let camera =
            c.camera.map_or(",,".into(), |k| format!("{:.4},{:.4},{:.4}", k.reported, k.silent, k.false_alarm));
        outln!(
            "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.4},{:.4},{:.4},{:.4},{log},{},{camera}",
            c.protocol,
            c.solver,
            c.channel.map_or("baseline", Channel::key),
            c.level,
            c.split.key(),
            values(first),
            c.error.mean,
            c.error.median,
            c.error.p95,
            c.reported,
            c.missed,
            c.silent,
            c.false_alarm,
            values(rest)
        );
    }
    Ok(())
}

/// How many channel columns the CSV puts before the error columns (the exercise's channels,
/// where they have always been); the others follow the envelope's columns.
const CSV_FIRST_CHANNELS: usize = 5;

/// The envelope's decisions, compact: acceptance and each nonzero rejection count.
fn envelope_column(c: &Cell) -> String {
    let Some(log) = c.envelope else { return "-".into() };
    let mut s = format!("{:.0}% ok", 100.0 * log.acceptance());
    for r in Reason::ALL {
        if log.count(r) > 0 {
            s += &format!(" {}:{}", r.key(), log.count(r));
        }
    }
    s
}

fn print_table(r: &DegradationReport) -> Result<(), String> {
    let sets: Vec<String> = r.targets.iter().map(|(s, n)| format!("{n} {}", s.key())).collect();
    outln!(
        "The gap to reality: targets per setting {}; miss = tip error > {} m; post-move check {}",
        sets.join(", "),
        r.config.tolerance,
        if r.config.post_move_check { "on" } else { "off" }
    );
    for kind in &r.ood_empty {
        let why = r.config.absent_because(*kind).unwrap_or("no targets left at this --ood-fraction");
        outln!("OOD set {} asked for but empty, not run: {why}", kind.key());
    }
    let loaded: Vec<&str> = r.loaded.iter().map(|h| h.key()).collect();
    outln!(
        "(heads trained in {:.1} s{}; evaluation took {:.2} s)",
        r.train_seconds,
        if loaded.is_empty() { String::new() } else { format!(", loaded from files: {}", loaded.join(", ")) },
        r.eval_seconds
    );
    outln!("divergence roll-backs in training: {}", elbow::learned::train::NetRollbacks::in_words(&r.rollbacks));
    outln!(
        "Rates are per target: reported, missed, SILENT (missed, not reported), false alarm (reported, not missed)."
    );
    outln!(
        "The encoders cannot see the mismatch or the flex, and no sensor sees the target noise; the camera columns count the"
    );
    outln!("same moves with a camera check on the tip in place of the encoder check (plant protocol).");
    let mut last = None;
    for c in &r.cells {
        let key = (c.protocol, c.split, c.channel, c.level.to_bits());
        if last != Some(key) {
            last = Some(key);
            let what = match c.channel {
                None => "baseline (perfect arm)".to_string(),
                Some(ch) => format!("{} {} {}", ch.key(), c.level, ch.unit()),
            };
            outln!("\n[{}] {} targets, {what}", c.protocol, c.split.key());
            outln!(
                "  {:<20} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}  envelope",
                "solver",
                "mean m",
                "p95 m",
                "reported",
                "missed",
                "SILENT",
                "false",
                "cam SIL",
                "cam fal"
            );
        }
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v));
        outln!(
            "  {:<20} {:>9.4} {:>9.4} {:>8.1}% {:>7.1}% {:>7.1}% {:>7.1}% {:>8} {:>8}  {}",
            c.solver.key(),
            c.error.mean,
            c.error.p95,
            100.0 * c.reported,
            100.0 * c.missed,
            100.0 * c.silent,
            100.0 * c.false_alarm,
            pct(c.camera.map(|k| k.silent)),
            pct(c.camera.map(|k| k.false_alarm)),
            envelope_column(c)
        );
    }
    outln!("\nThe claims, with the numbers and a verdict computed from them:");
    for claim in &r.claims {
        outln!("\n  [{}] {}\n  verdict: {}", claim.key, claim.statement, claim.verdict);
        for line in &claim.evidence {
            outln!("    {line}");
        }
    }
    print_grid(r)
}

/// Every claim's vote per case (channel, OOD set, perfect arm): a Markdown table, one row per
/// case, one column per claim (`ok`, `FAILS`, `-` nothing to judge, blank: not a case of it).
fn print_grid(r: &DegradationReport) -> Result<(), String> {
    let mut names: Vec<&str> = Vec::new();
    for claim in &r.claims {
        for case in &claim.cases {
            if !names.contains(&case.name.as_str()) {
                names.push(&case.name);
            }
        }
    }
    outln!("\nVerdicts per case (ok, FAILS, - nothing to judge):\n");
    let keys: Vec<&str> = r.claims.iter().map(|c| c.key).collect();
    outln!("| case | {} |", keys.join(" | "));
    outln!("|---|{}", "---|".repeat(keys.len()));
    for name in names {
        let votes: Vec<&str> = r
            .claims
            .iter()
            .map(|claim| match claim.case(name).map(|c| c.passes) {
                None => "",
                Some(None) => "-",
                Some(Some(true)) => "ok",
                Some(Some(false)) => "FAILS",
            })
            .collect();
        outln!("| {name} | {} |", votes.join(" | "));
    }
    Ok(())
}
