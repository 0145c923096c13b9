//! The headless command line: `solve`, `train`, `experiment`, `atlas` and `bench`.
//!
//! A thin layer over the core library: it parses arguments into the core's plain configurations,
//! calls the core, and prints tables, JSON or CSV. Every number in the README comes from one of
//! these commands. Bad input gives a clear message and exit code 2; nothing panics on user input.

mod atlas;
mod bench;
mod experiment;
mod figure;
mod plot;
mod solve;
mod train;

use clap::{Args, Parser, Subcommand};
use elbow::kinematics::{JointLimits, TwoLinkArm};

/// Elbow: the failure modes of learned inverse kinematics, visible and measurable.
#[derive(Debug, Parser)]
#[command(name = "elbow", version, about, after_help = "With no command, the desktop app opens.")]
pub(crate) struct Cli {
    /// What to run; with none, the desktop app opens.
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
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
}

/// Runs a parsed command; `Err` carries the message for the user.
pub(crate) fn run(command: &Command) -> Result<(), String> {
    match command {
        Command::Solve(a) => solve::run(a),
        Command::Train(a) => train::run(a),
        Command::Experiment(e) => experiment::run(e),
        Command::Atlas(a) => atlas::run(a),
        Command::Bench(a) => bench::run(a),
    }
}

/// The arm shared by every subcommand.
#[derive(Debug, Clone, Args)]
pub(crate) struct ArmArgs {
    /// Link lengths `L1,L2` in metres.
    #[arg(long, default_value = "1,1", value_parser = parse_lengths)]
    pub(crate) lengths: (f64, f64),
    /// Elbow joint range `MIN,MAX` in degrees (default: unlimited).
    #[arg(long, value_parser = parse_range_deg)]
    pub(crate) elbow_limits: Option<(f64, f64)>,
}

impl ArmArgs {
    /// Builds the validated arm.
    pub(crate) fn arm(&self) -> Result<TwoLinkArm, String> {
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

/// Parses `A,B` into two finite numbers.
fn parse_pair(s: &str, what: &str) -> Result<(f64, f64), String> {
    let (a, b) = s.split_once(',').ok_or_else(|| format!("{what} must be two numbers `A,B`, got `{s}`"))?;
    let (a, b) = (parse_finite(a)?, parse_finite(b)?);
    Ok((a, b))
}

/// Parses `L1,L2` (both finite and > 0).
fn parse_lengths(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = parse_pair(s, "lengths")?;
    if a <= 0.0 || b <= 0.0 {
        return Err(format!("link lengths must be > 0, got `{s}`"));
    }
    Ok((a, b))
}

/// Parses `MIN,MAX` with `MIN < MAX`.
fn parse_range_deg(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = parse_pair(s, "range")?;
    if a >= b {
        return Err(format!("range needs MIN < MAX, got `{s}`"));
    }
    Ok((a, b))
}

/// Two signed numbers `A,B`, both in `[-0.5, 0.5]` (a mismatch: length errors or offsets).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SignedPair(pub(crate) f64, pub(crate) f64);

impl std::str::FromStr for SignedPair {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = parse_pair(s, "values")?;
        if a.abs() > 0.5 || b.abs() > 0.5 {
            return Err(format!("values must lie in [-0.5, 0.5], got `{s}`"));
        }
        Ok(SignedPair(a, b))
    }
}

impl std::fmt::Display for SignedPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.0, self.1)
    }
}

/// Parses a finite number.
fn parse_finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{}` is not a finite number", s.trim())),
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
            return Err(format!("levels must be 1 to {max} numbers >= 0, got `{s}`"));
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

/// Prints a value as pretty JSON.
fn print_json(value: &impl serde::Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| format!("cannot write JSON: {e}"))?;
    println!("{text}");
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
        ] {
            assert!(Cli::try_parse_from(&bad).is_err(), "{bad:?}");
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
