//! `elbow experiment bishop1994`: Bishop 1994's two-link set-up (links 0.8 and 0.2, its joint
//! ranges, 1,000 training and test points, 20 hidden units), our squared-error net and MDN
//! trained on it, and the RMS tip error the report gives beside ours.

use super::super::{count, print_json, seed};
use clap::Args;
use elbow::experiments::bishop::{BishopConfig, BishopReport, bishop1994};
use elbow::learned::MAX_STEPS;

fn defaults() -> BishopConfig {
    BishopConfig::default()
}

/// Arguments of `elbow experiment bishop1994`.
#[derive(Debug, Args)]
pub(crate) struct BishopArgs {
    /// Training steps of each net, 1 to 10000000.
    #[arg(long, default_value_t = defaults().steps, value_parser = count::<1, MAX_STEPS>, allow_hyphen_values = true)]
    steps: usize,
    /// Training points, 16 to 1000000 (the report: 1000).
    #[arg(long, default_value_t = defaults().train, value_parser = count::<16, 1_000_000>, allow_hyphen_values = true)]
    train: usize,
    /// Test points, 1 to 1000000 (the report: 1000).
    #[arg(long, default_value_t = defaults().test, value_parser = count::<1, 1_000_000>, allow_hyphen_values = true)]
    test: usize,
    /// Hidden units of the one hidden layer, 1 to 4096 (the report: 20).
    #[arg(long, default_value_t = defaults().hidden, value_parser = count::<1, 4096>, allow_hyphen_values = true)]
    hidden: usize,
    /// Seed of the data, the initialisation and the test points.
    #[arg(long, default_value_t = defaults().seed, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `elbow experiment bishop1994`.
pub(crate) fn run(a: &BishopArgs) -> Result<(), String> {
    let cfg = BishopConfig { steps: a.steps, train: a.train, test: a.test, hidden: a.hidden, seed: a.seed };
    let report = bishop1994(&cfg).map_err(|e| e.to_string())?;
    if a.json {
        return print_json(&report);
    }
    print(&report)
}

fn print(r: &BishopReport) -> Result<(), String> {
    let c = r.config;
    outln!(
        "Bishop 1994 (NCRG/94/004, §6): links 0.8 and 0.2, shoulder 0.3–1.2 rad, elbow within ±90° (interior angle 90°–270°)"
    );
    outln!(
        "{} training and {} test points drawn uniformly in joint space, one hidden layer of {} tanh units, {} Adam steps per net ({:.1} s)",
        c.train,
        c.test,
        c.hidden,
        c.steps,
        r.train_seconds
    );
    outln!("divergence roll-backs in training: {}", elbow::learned::train::NetRollbacks::in_words(&r.rollbacks));
    outln!("{:.0}% of the test targets have both branches inside the limits", 100.0 * r.two_branch_share);
    outln!("{:<16} {:>10} {:>10} {:>12}", "answer", "RMS m", "median m", "report's RMS");
    for row in &r.rows {
        let paper = row.paper_rms.map_or("-".to_string(), |p| format!("{p:.4}"));
        outln!("{:<16} {:>10.4} {:>10.4} {:>12}", row.name, row.rms, row.median, paper);
    }
    Ok(())
}
