//! `elbow experiment randomization`: arguments become a [`RandomizationConfig`]; the report
//! prints as a table with the claims' verdicts, or as JSON, and `--plot` draws it ([`plot`]).
//! With `--arm rail3|so101|3r` the arguments become a [`ChainFeedbackConfig`] instead: the
//! feedback head against DLS, its one-step correction and calibration on that chain (`--plot`
//! draws its error by move); the flags of the open-loop heads (`--heads`, `--targets`,
//! `--data-size`) are refused there, naming the arm.

mod plot;

use super::channel_flags::RangeArgs;
use crate::cli::{Failure, Range, count, print_json, real};
use clap::Args;
use elbow::arm::ArmKind;
use elbow::experiments::feedback::{FeedbackConfig, FeedbackReport, Pipeline};
use elbow::experiments::feedback_chain::{ChainFeedbackConfig, ChainFeedbackReport, feedback_chain};
use elbow::experiments::randomization::{PlantSet, RandomizationConfig, RandomizationReport, randomization};
use elbow::learned::{HeadKind, MAX_STEPS};

fn defaults() -> RandomizationConfig {
    RandomizationConfig::default()
}

/// A comma-separated list of heads (`mdn,residual`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heads(Vec<HeadKind>);

impl std::str::FromStr for Heads {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        elbow::keys::parse_list(s).map(Heads)
    }
}

impl std::fmt::Display for Heads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&elbow::keys::join(&self.0))
    }
}

/// Arguments of `elbow experiment randomization`.
#[derive(Debug, Args)]
pub(crate) struct RandomizationArgs {
    /// The arm: `2r` (the two-link arm, the default: open-loop heads and the feedback head) or a
    /// chain, `rail3`, `so101` or `3r` (the feedback head against DLS, its one-step correction
    /// and calibration).
    #[arg(long)]
    arm: Option<ArmKind>,
    /// Heads trained twice (nominal, randomized), comma-separated: mse, mdn, mode, residual
    /// [default: mdn,residual] (the two-link arm only).
    #[arg(long)]
    heads: Option<Heads>,
    /// The randomized training ranges and those of the outside test plants (`--mismatch`,
    /// `--outside-mismatch`, ...), from the channel table.
    #[command(flatten)]
    ranges: RangeArgs,
    /// Test plants drawn inside and outside the ranges (each), 1 to 10000.
    #[arg(long, default_value_t = defaults().plants, value_parser = count::<1, 10_000>, allow_hyphen_values = true)]
    plants: usize,
    /// Held-out targets per test plant, 1 to 100000 [default: 100] (the two-link arm's open-loop
    /// heads only).
    #[arg(long, value_parser = count::<1, 100_000>, allow_hyphen_values = true)]
    targets: Option<usize>,
    /// Training steps per head and training, 1 to 10000000.
    #[arg(long, default_value_t = defaults().train.steps, value_parser = count::<1, MAX_STEPS>,
          allow_hyphen_values = true)]
    steps: usize,
    /// Training targets per run, 16 to 1000000 [default: 10000] (the two-link arm's open-loop
    /// heads only).
    #[arg(long, value_parser = count::<16, 1_000_000>, allow_hyphen_values = true)]
    data_size: Option<usize>,
    /// A move landing further than this from its target failed, metres, in (0, 2] (the arm's
    /// reach).
    #[arg(long, default_value_t = defaults().tolerance, allow_hyphen_values = true,
          value_parser = real(Range::above(0.0, defaults().train.arm.reach(), "m (the arm's reach)")))]
    tolerance: f64,
    /// Moves per episode on one plant for the feedback head, 2 to 50.
    #[arg(long, default_value_t = defaults().feedback.moves, value_parser = count::<2, 50>, allow_hyphen_values = true)]
    moves: usize,
    /// Past moves the feedback head sees, 1 to 8.
    #[arg(long, default_value_t = defaults().feedback.history, value_parser = count::<1, 8>, allow_hyphen_values = true)]
    history: usize,
    /// The feedback head's training episodes, 10 to 100000.
    #[arg(long, default_value_t = defaults().feedback.episodes, value_parser = count::<10, 100_000>,
          allow_hyphen_values = true)]
    episodes: usize,
    /// Seed of data, initialisation, plants and targets.
    #[arg(long, default_value_t = 0, value_parser = crate::cli::seed, allow_hyphen_values = true)]
    seed: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Also draw mean tip error, success rate and the checks' catches, per plant set, solver and
    /// training, into FILE (`.svg` or `.png`) (the two-link arm only).
    #[arg(long, value_name = "FILE")]
    plot: Option<std::path::PathBuf>,
}

impl RandomizationArgs {
    fn config(&self) -> RandomizationConfig {
        let d = defaults();
        RandomizationConfig {
            heads: self.heads.as_ref().map_or(d.heads.clone(), |h| h.0.clone()),
            train: elbow::learned::TrainConfig {
                steps: self.steps,
                data_size: self.data_size.unwrap_or(d.train.data_size),
                seed: self.seed,
                ..d.train
            },
            randomized: self.ranges.training,
            outside: self.ranges.outside,
            plants: self.plants,
            targets: self.targets.unwrap_or(d.targets),
            tolerance: self.tolerance,
            seed: self.seed,
            feedback: FeedbackConfig { moves: self.moves, history: self.history, episodes: self.episodes },
            ..d
        }
    }

    /// The chain run these arguments describe on `kind`; the two-link arm's flags refused,
    /// naming the arm.
    fn chain_config(&self, kind: ArmKind) -> Result<ChainFeedbackConfig, String> {
        let two_link_only = [
            ("--heads", self.heads.is_some()),
            ("--targets", self.targets.is_some()),
            ("--data-size", self.data_size.is_some()),
        ];
        if let Some((flag, _)) = two_link_only.iter().find(|(_, given)| *given) {
            return Err(format!(
                "{flag} is for the two-link arm's open-loop heads; on {} the randomization experiment runs the feedback head against DLS, its one-step correction and calibration",
                kind.key()
            ));
        }
        let mut cfg = ChainFeedbackConfig::new(kind.arm());
        cfg.randomized = self.ranges.training;
        cfg.outside = self.ranges.outside;
        cfg.plants = self.plants;
        cfg.tolerance = self.tolerance;
        cfg.seed = self.seed;
        cfg.feedback = FeedbackConfig { moves: self.moves, history: self.history, episodes: self.episodes };
        cfg.net.steps = self.steps;
        Ok(cfg)
    }
}

/// Runs `elbow experiment randomization`; the plot path is checked before any work.
pub(crate) fn run(a: &RandomizationArgs) -> Result<(), Failure> {
    if let Some(kind) = a.arm.filter(|&k| k != ArmKind::TwoR) {
        return run_chain(a, kind);
    }
    let cfg = a.config();
    let plot = a.plot.as_deref().map(plot::check_path).transpose()?;
    let show = !a.json && !a.quiet;
    let report = crate::cli::with_progress(show, "stages", "randomization", |update| {
        randomization(&cfg, |done, total| update("", done, total))
    });
    let report = report?;
    // The numbers first: a figure that cannot be drawn or written does not lose them.
    if a.json {
        print_json(&report)?;
    } else {
        print_report(&report)?;
    }
    if let Some(out) = &plot {
        crate::cli::flush_stdout()?;
        plot::draw(&report, out)?;
    }
    Ok(())
}

fn print_report(r: &RandomizationReport) -> Result<(), Failure> {
    outln!(
        "Domain randomization: {} randomized training samples per head; {} test plants inside and outside, {} targets each; tolerance {} m",
        r.randomized_samples,
        r.config.plants,
        r.config.targets,
        r.config.tolerance
    );
    let nets: Vec<_> = r.rollbacks.iter().chain(&r.feedback.rollbacks).cloned().collect();
    outln!("divergence roll-backs in training: {}", elbow::learned::train::NetRollbacks::in_words(&nets));
    outln!("");
    outln!(
        "{:<10} {:<11} {:<8} {:>10} {:>10} {:>9} {:>8} {:>10} {:>10} {:>10}",
        "solver",
        "training",
        "plants",
        "mean mm",
        "p95 mm",
        "success",
        "silent",
        "enc sees",
        "cam sees",
        "cam alarm"
    );
    for row in &r.rows {
        let pct = |v: f64| format!("{:.1}%", 100.0 * v);
        outln!(
            "{:<10} {:<11} {:<8} {:>10.2} {:>10.2} {:>9} {:>8} {:>10} {:>10} {:>10}",
            row.solver.key(),
            format!("{:?}", row.training).to_lowercase(),
            format!("{:?}", row.plants).to_lowercase(),
            row.error.mean * 1e3,
            row.error.p95 * 1e3,
            pct(row.success_rate),
            pct(row.silent_rate),
            pct(row.encoder_check_catches),
            pct(row.camera_check_catches),
            pct(row.camera_false_alarms)
        );
    }
    outln!("\nThe claims, with the numbers and a verdict computed from them:");
    print_claims(&r.claims)?;
    print_feedback(r)?;
    Ok(())
}

fn print_claims(claims: &[elbow::experiments::degradation::verdict::Claim]) -> Result<(), Failure> {
    for claim in claims {
        outln!("\n  [{}] {}\n  verdict: {}", claim.key, claim.statement, claim.verdict);
        for line in &claim.evidence {
            outln!("    {line}");
        }
    }
    Ok(())
}

/// Runs the chain's feedback comparison on `kind`: every setting checked before any work.
fn run_chain(a: &RandomizationArgs, kind: ArmKind) -> Result<(), Failure> {
    let cfg = a.chain_config(kind)?;
    cfg.validate().map_err(|e| e.to_string())?;
    let plot = a.plot.as_deref().map(plot::check_path).transpose()?;
    let show = !a.json && !a.quiet;
    let report = crate::cli::with_progress(show, "stages", "randomization", |update| {
        feedback_chain(&cfg, |done, total| update("", done, total))
    })?;
    // The numbers first: a figure that cannot be drawn or written does not lose them.
    if a.json {
        print_json(&report)?;
    } else {
        print_chain_report(&report)?;
    }
    if let Some(out) = &plot {
        crate::cli::flush_stdout()?;
        plot::draw_chain(&report, out)?;
    }
    Ok(())
}

fn print_chain_report(r: &ChainFeedbackReport) -> Result<(), Failure> {
    let c = &r.config;
    outln!(
        "Domain randomization on {}: the feedback head against DLS, its one-step correction and calibration; {} test plants per set, tolerance {} m",
        r.arm,
        c.plants,
        c.tolerance
    );
    outln!("targets: {}", r.targets);
    outln!("the randomized head's training: {} of {} moves reached on their plants", r.feedback.samples, r.attempted);
    outln!(
        "divergence roll-backs in training: {}",
        elbow::learned::train::NetRollbacks::in_words(&r.feedback.rollbacks)
    );
    let [calibrated, dls] = elbow::experiments::feedback_chain::cost_per_move(&c.arm, c.feedback.moves - 1, 201);
    let cost = format!(
        "cost per move on this CPU (median of 201): calibration from {} views and DLS on the calibrated chain {:.1} us, DLS alone {:.1} us",
        c.feedback.moves - 1,
        calibrated * 1e6,
        dls * 1e6
    );
    print_feedback_report(&r.feedback, &cost)
}

/// The feedback comparison: error per move index of an episode, per pipeline and plant set,
/// where the head's curve crosses calibration's and the one-step correction's, and its four
/// claims.
fn print_feedback(r: &RandomizationReport) -> Result<(), Failure> {
    let f = &r.feedback;
    let [calibrated, closed] =
        elbow::experiments::feedback::cost_per_move(&r.config.train.arm, f.config.moves - 1, 2001);
    let cost = format!(
        "cost per move on this CPU (median of 2001): calibration from {} views and its closed form {:.1} us, the closed form alone {:.2} us",
        f.config.moves - 1,
        calibrated * 1e6,
        closed * 1e6
    );
    print_feedback_report(f, &cost)
}

/// One arm's feedback comparison as a table (`cost` is the line on what a move costs).
fn print_feedback_report<P: Pipeline>(f: &FeedbackReport<P>, cost: &str) -> Result<(), Failure> {
    outln!(
        "\nA learned head that sees its own feedback: {} moves per episode on one plant, the last {} of them seen, {} training moves on randomized plants ({} episodes)",
        f.config.moves,
        f.config.history,
        f.samples,
        f.config.episodes
    );
    outln!(
        "mean tip error (mm) by move in the episode (move 1 has no feedback yet); 'later' is the mean over moves 2 on"
    );
    let header: String = (1..=f.config.moves).map(|m| format!("{:>8}", format!("move {m}"))).collect();
    outln!("{:<26} {:<8}{header} {:>8} {:>9}", "pipeline", "plants", "later", "success");
    for set in [PlantSet::Nominal, PlantSet::Inside, PlantSet::Outside] {
        for p in P::EVERY {
            let Some(row) = f.row(p, set) else { continue };
            let cells: String = row.per_move.iter().map(|v| format!("{:>8.1}", v * 1e3)).collect();
            outln!(
                "{:<26} {:<8}{cells} {:>8.1} {:>8.1}%",
                p.name(),
                format!("{set:?}").to_lowercase(),
                row.after_first * 1e3,
                row.success_rate * 100.0
            );
        }
    }
    if let Some(first) = f.move_by_move.first() {
        let m = first.comparison.margin;
        outln!(
            "where the curves cross, move by move from move 2 (tied within {} mm, {} % of the larger mean or {} standard errors of the difference):",
            m.floor * 1e3,
            m.relative * 100.0,
            m.spreads
        );
    }
    for c in &f.move_by_move {
        outln!(
            "  {}, the head against {}: {}",
            format!("{:?}", c.plants).to_lowercase(),
            c.comparison.second,
            c.comparison.crossover
        );
    }
    outln!("{cost}");
    outln!("\nThe feedback head's claims:");
    print_claims(&f.claims)
}
