//! `elbow experiment tracking`: arguments become a [`TrackingConfig`] on the arm `--arm` names
//! (the two-link arm by default, or a redundant chain); the report prints as one table per
//! pipeline (rows: speed; columns: latency; cells: mean / worst tip error in mm) and the claim's
//! verdict with its fit, or as JSON, and `--plot` draws the mean error against speed x latency.
//! Each says which arm ran.
//!
//! The file format, the font and the atomic write come from [`crate::cli::figure`].

use crate::cli::figure::{Canvas, FONT, Output};
use crate::cli::{BodyArgs, Failure, Range, count, print_json, real, seed};
use clap::Args;
use elbow::arm::ArmKind;
use elbow::experiments::chain::Progress;
use elbow::experiments::tracking::{
    MAX_LEVELS, MAX_RATE, MAX_SPEED, MAX_TRAIN_STEPS, MIN_RATE, TrackingConfig, TrackingReport, tracking_observed,
};
use elbow::lineup::SolverId;
use elbow::plant::MAX_LATENCY_MS;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

fn defaults() -> TrackingConfig {
    TrackingConfig::default()
}

/// Latencies in milliseconds (`0,33,67,133`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Latencies(Vec<f64>);

impl std::str::FromStr for Latencies {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Range::closed(0.0, MAX_LATENCY_MS, "ms").parse_list(s, MAX_LEVELS).map(Latencies)
    }
}

/// Mean target speeds in m/s (`0.1,0.2,0.4`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Speeds(Vec<f64>);

impl std::str::FromStr for Speeds {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Range::above(0.0, MAX_SPEED, "m/s").parse_list(s, MAX_LEVELS).map(Speeds)
    }
}

fn join(v: &[f64]) -> String {
    v.iter().map(f64::to_string).collect::<Vec<_>>().join(",")
}

/// Solver keys (`dls,mdn`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Solvers(Vec<SolverId>);

impl std::str::FromStr for Solvers {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        elbow::keys::parse_list(s).map(Solvers)
    }
}

impl std::fmt::Display for Latencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&join(&self.0))
    }
}

impl std::fmt::Display for Speeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&join(&self.0))
    }
}

/// Arguments of `elbow experiment tracking`.
#[derive(Debug, Args)]
pub(crate) struct TrackingArgs {
    /// The arm: `2r` (or `two-link`: the two-link arm, the default), or the redundant chains
    /// `3r`, `rail3` and `so101`, each on its own figure eight (centred on its demo target,
    /// amplitudes 20 % and 15 % of its reach).
    #[arg(long, value_name = "ARM")]
    arm: Option<ArmKind>,
    /// The solvers to run, comma-separated (default: every one of the arm's line-up). Two-link
    /// arm: analytic, dls, mse, mdn, mode, residual (a head bare and in the envelope); chains:
    /// mse, mdn, flow, dls, hybrid. At least one classical solver (analytic or dls), on which
    /// the claim is judged.
    #[arg(long, value_name = "LIST")]
    solvers: Option<Solvers>,
    /// Control latencies in ms, comma-separated, each from 0 to 10000 (0 ms, the baseline, always
    /// runs).
    #[arg(long, value_name = "MS", default_value_t = Latencies(defaults().latencies_ms), allow_hyphen_values = true)]
    latency: Latencies,
    /// Mean target speeds along the figure eight in m/s, comma-separated, each in (0, 5]; each
    /// sets the lap period (the path's length over the speed).
    #[arg(long, value_name = "M_PER_S", default_value_t = Speeds(defaults().speeds), allow_hyphen_values = true)]
    speeds: Speeds,
    /// Control rate in Hz, 1 to 1000: one goal per tick.
    #[arg(long, value_name = "HZ", default_value_t = defaults().rate, value_parser = real(Range::closed(MIN_RATE, MAX_RATE, "Hz")),
          allow_hyphen_values = true)]
    rate: f64,
    /// Laps per run, 2 to 100: the first is the warm-up, the last is scored.
    #[arg(long, default_value_t = defaults().laps, value_parser = count::<2, 100>, allow_hyphen_values = true)]
    laps: usize,
    /// Training steps of each learned head or net, 1 to 10000000 [default: 4000 for the
    /// two-link heads, 12000 for a chain's nets (the chain experiment's recipe)].
    #[arg(long, value_parser = count::<1, MAX_TRAIN_STEPS>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// Seed of the heads' or nets' training (and of a chain's sampled answers).
    #[arg(long, default_value_t = defaults().seed, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    #[command(flatten)]
    body: BodyArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Also draw the mean tip error against speed x latency, one panel per pipeline, into FILE
    /// (`.svg` or `.png`).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

impl TrackingArgs {
    /// The core's configuration, validated.
    fn config(&self) -> Result<TrackingConfig, String> {
        let base = TrackingConfig::for_arm(self.arm.unwrap_or(ArmKind::TwoR).arm());
        let cfg = TrackingConfig {
            latencies_ms: self.latency.0.clone(),
            speeds: self.speeds.0.clone(),
            rate: self.rate,
            laps: self.laps,
            train_steps: self.train_steps.unwrap_or(base.train_steps),
            seed: self.seed,
            body: self.body.body()?,
            solvers: self.solvers.as_ref().map_or_else(Vec::new, |s| s.0.clone()),
            ..base
        };
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// Runs `elbow experiment tracking`; the configuration and the plot path are checked before any
/// work, and the numbers print before the figure is drawn.
pub(crate) fn run(a: &TrackingArgs) -> Result<(), Failure> {
    let cfg = a.config()?;
    let plot = a.plot.as_deref().map(check_path).transpose()?;
    let show = !a.json && !a.quiet;
    let report = crate::cli::with_progress(show, "", "tracking", |update| {
        tracking_observed(&cfg, &|p| match p {
            Progress::Training { done, total } => update("training steps", done, total),
            Progress::Evaluating { done, total } => update("cells tracked", done, total),
        })
    })?;
    if a.json {
        print_json(&report)?;
    } else {
        print_report(&report)?;
    }
    if let Some(out) = &plot {
        crate::cli::flush_stdout()?;
        draw(&report, out)?;
    }
    Ok(())
}

fn print_report(r: &TrackingReport) -> Result<(), Failure> {
    let c = &r.config;
    let learned = r.pipelines.iter().any(|p| p.solver.family() == elbow::lineup::Family::Learned);
    let trained = match (c.arm.closed_form().is_some(), learned) {
        (true, _) => format!("heads trained {} steps in {:.1} s", c.train_steps, r.train_seconds),
        (false, true) => format!("nets trained {} steps in {:.1} s", c.train_steps, r.train_seconds),
        (false, false) => "no nets (no learned solver ran)".to_string(),
    };
    let what = match (c.arm.closed_form().is_some(), r.gravity) {
        (true, _) => "",
        (false, false) => " (a redundant chain)",
        (false, true) => " (a redundant chain hanging in a vertical plane, gravity on)",
    };
    outln!(
        "Arm {}{what}: tracking a figure eight (lap {:.3} m, centre ({}, {}) m, amplitudes {} m and {} m) at {} Hz, {} laps, the last scored; {trained}, tracking took {:.1} s",
        r.arm,
        r.path_length,
        num(c.path.centre[0]),
        num(c.path.centre[1]),
        num(c.path.amplitude[0]),
        num(c.path.amplitude[1]),
        c.rate,
        c.laps,
        r.eval_seconds
    );
    outln!("divergence roll-backs in training: {}", elbow::learned::train::NetRollbacks::in_words(&r.rollbacks));
    let periods: Vec<String> = r.speeds.iter().map(|s| format!("{} m/s: lap {:.2} s", s.speed, s.period)).collect();
    outln!("Speeds (mean along the path): {}", periods.join("; "));
    outln!("Cells: mean / worst tip-to-target distance over the scored lap, mm (0 ms: the servos' own lag).");
    let header: String = c.latencies_ms.iter().map(|l| format!("{:>17}", format!("{l} ms"))).collect();
    for &p in &r.pipelines {
        outln!("\n{}", p.key());
        outln!("  {:<10}{header}", "speed");
        for s in &r.speeds {
            let cells: String = c
                .latencies_ms
                .iter()
                .map(|&l| {
                    let text = r.cell(p, l, s.speed).map_or("-".to_string(), |cell| {
                        format!("{:.1} / {:.1}", cell.mean_error * 1e3, cell.worst_error * 1e3)
                    });
                    format!("{text:>17}")
                })
                .collect();
            outln!("  {:<10}{cells}", format!("{} m/s", s.speed));
        }
        if p.envelope {
            let accepted: Vec<f64> =
                r.cells.iter().filter(|x| x.pipeline == p).filter_map(|x| x.envelope_accepted).collect();
            let mean = accepted.iter().sum::<f64>() / accepted.len().max(1) as f64;
            outln!("  (the envelope accepted {:.1}% of the proposals over these runs)", mean * 100.0);
        }
        let failed: Vec<f64> = r.cells.iter().filter(|x| x.pipeline == p).filter_map(|x| x.not_converged).collect();
        if !failed.is_empty() {
            let mean = failed.iter().sum::<f64>() / failed.len() as f64;
            outln!("  (the solver reported {:.1}% of its answers as not converged over these runs)", mean * 100.0);
        }
    }
    let claim = &r.claim;
    outln!("\nThe claim, judged by the run:\n\n  [{}] {}\n  verdict: {}", claim.key, claim.statement, claim.verdict);
    for line in &claim.evidence {
        outln!("    {line}");
    }
    Ok(())
}

/// A path's number as the table prints it: to the micrometre, without trailing zeros (the
/// two-link arm's `1.2` and `0.4` as they always printed).
fn num(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// Checks, before any work, that `path` ends in `.svg` or `.png` and that its folder exists.
fn check_path(path: &Path) -> Result<Output, String> {
    Output::new(path).map_err(|e| format!("--plot {e}"))
}

const PANEL: (u32, u32) = (460, 320);
const HEADER: u32 = 60;
const COLUMNS: usize = 5;

/// Draws `r` into `out`: one panel per pipeline (each on its own error scale), mean tip error
/// (mm) against speed x latency (mm), one line per speed, points at each latency.
fn draw(r: &TrackingReport, out: &Output) -> Result<(), String> {
    let rows = r.pipelines.len().div_ceil(COLUMNS).max(1) as u32;
    let size = (PANEL.0 * COLUMNS as u32, HEADER + PANEL.1 * rows);
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", out.path.display());
    out.render(size, |canvas| match canvas {
        Canvas::Svg(root) => paint(r, root).map_err(|e| fail(&e)),
        Canvas::Bitmap(root) => paint(r, root).map_err(|e| fail(&e)),
    })
}

/// A line colour per speed.
fn colour(i: usize) -> RGBColor {
    const C: [RGBColor; 6] = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(90, 90, 90),
    ];
    C[i % C.len()]
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn paint<DB: DrawingBackend>(r: &TrackingReport, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    let title = format!(
        "Arm {}: tracking a figure eight at {} Hz: mean tip error against speed x latency; claim {}",
        r.arm, r.config.rate, r.claim.verdict
    );
    head.draw(&Text::new(title, (10, 6), (FONT, 18)))?;
    for (i, s) in r.speeds.iter().enumerate() {
        let (x, y) = (10 + i as i32 * 150, 34);
        head.draw(&PathElement::new(vec![(x, y + 8), (x + 26, y + 8)], colour(i).stroke_width(3)))?;
        head.draw(&Text::new(format!("{} m/s", s.speed), (x + 32, y), (FONT, 15)))?;
    }
    let rows = r.pipelines.len().div_ceil(COLUMNS).max(1);
    let panels = body.split_evenly((rows, COLUMNS));
    // One x scale for every panel; each panel's own y scale (the MSE head's averaging trap is a
    // hundred times the others). Finite values only: plotters' axes loop forever on others.
    let finite = |v: f64| v.is_finite().then_some(v);
    let x_max = r.cells.iter().filter_map(|c| finite(c.speed * c.latency_ms)).fold(0.0, f64::max).max(1e-3) * 1.05;
    for (area, &p) in panels.iter().zip(&r.pipelines) {
        let mine = r.cells.iter().filter(|c| c.pipeline == p);
        let y_max = mine.filter_map(|c| finite(c.mean_error * 1e3)).fold(0.0, f64::max).clamp(1e-3, 1e9) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .caption(p.key(), (FONT, 15))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(46)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_labels(5)
            .y_labels(5)
            .x_desc("speed x latency (mm)")
            .y_desc("mean error (mm)")
            .light_line_style(WHITE)
            .label_style((FONT, 12))
            .draw()?;
        for (i, s) in r.speeds.iter().enumerate() {
            let points: Vec<(f64, f64)> = r
                .cells
                .iter()
                .filter(|c| c.pipeline == p && c.speed == s.speed)
                .map(|c| (c.speed * c.latency_ms, c.mean_error * 1e3))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect();
            let style = colour(i).stroke_width(2);
            chart.draw_series(LineSeries::new(points.clone(), style))?;
            chart.draw_series(points.into_iter().map(|xy| Circle::new(xy, 3, colour(i).filled())))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_name_their_unit_and_range() {
        assert_eq!("0,33,133".parse::<Latencies>().unwrap().0, vec![0.0, 33.0, 133.0]);
        assert_eq!("0.1, 0.4".parse::<Speeds>().unwrap().0, vec![0.1, 0.4]);
        for (bad, unit) in [("-1", "ms"), ("nan", "ms"), ("20000", "ms"), ("", "ms")] {
            let e = bad.parse::<Latencies>().unwrap_err();
            assert!(e.contains(unit) && e.contains("10000"), "{bad}: {e}");
        }
        for bad in ["0", "6", "inf", "a", "0.1,,0.2"] {
            assert!(bad.parse::<Speeds>().unwrap_err().contains("m/s"), "{bad}");
        }
        let rate = real(Range::closed(MIN_RATE, MAX_RATE, "Hz"));
        assert!(rate("0.5").unwrap_err().contains("Hz") && rate("30").is_ok());
        let many = vec!["1"; 17].join(",");
        assert!(many.parse::<Latencies>().unwrap_err().contains("1 to 16"));
    }

    #[test]
    fn a_figure_that_cannot_be_written_after_the_run_fails_in_one_sentence() {
        let dir = std::env::temp_dir().join(format!("elbow-tracking-late-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = check_path(&dir.join("t.svg")).expect("a writable folder at first");
        let cfg = TrackingConfig { latencies_ms: vec![100.0], speeds: vec![2.0, 4.0], train_steps: 1, ..defaults() };
        let report = elbow::experiments::tracking(&cfg).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let e = draw(&report, &out).unwrap_err();
        assert!(e.contains("t.svg") && e.lines().count() == 1, "{e}");
    }
}
