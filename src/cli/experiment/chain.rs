//! `elbow experiment chain`: arguments become a [`ChainConfig`]; the report prints as a table or
//! JSON, and `--plot` draws each method's fan of arms at the demo target beside the exact
//! posterior's.

use crate::cli::figure::{Canvas, FONT, Output};
use crate::cli::{Failure, INTERRUPTED_EXIT, Range, count, print_json, real, signals};
use clap::Args;
use elbow::arm::{Arm, ArmKind};
use elbow::chain::Seeds;
use elbow::chain::nets::{Covariance, MAX_BLOCKS};
use elbow::experiments::chain::{
    ChainConfig, ChainReport, MAX_SAMPLES, MAX_TARGETS, MethodRow, Progress, chain_observed,
};
use elbow::learned::HeadKind;
use elbow::learned::MAX_STEPS;
use elbow::learned::limits::{MAX_COMPONENTS, MAX_DEPTH, MAX_HIDDEN};
use elbow::learned::train::rollbacks_in_words;
use elbow::lineup::SolverId;
use elbow::nn::Activation;
use elbow::stats::Summary;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::PathBuf;

fn defaults() -> ChainConfig {
    ChainConfig::new(ArmKind::Rail3.arm())
}

/// Three or more link lengths `L1,L2,L3,...` for an arm from lengths.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChainLengths(pub(crate) Vec<f64>);

impl std::str::FromStr for ChainLengths {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<f64> = s.split(',').map(crate::cli::parse_finite).collect::<Result<_, _>>()?;
        Arm::from_lengths(&v).map_err(|e| e.to_string())?;
        Ok(Self(v))
    }
}

/// A comma-separated list of methods (`mse,mdn,dls,hybrid,exact`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Methods(pub(crate) Vec<SolverId>);

impl std::str::FromStr for Methods {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let v: Vec<SolverId> =
            s.split(',').map(|m| elbow::keys::parse_among(m, &SolverId::CHAIN, "method")).collect::<Result<_, _>>()?;
        if v.iter().enumerate().any(|(i, m)| v[..i].contains(m)) {
            return Err(format!("each method may be given once, got `{s}`"));
        }
        Ok(Self(v))
    }
}

/// Arguments of `elbow experiment chain`.
#[derive(Debug, Args)]
pub(crate) struct ChainArgs {
    /// The arm: `3r`, `rail3` or `so101` (`2r` has two isolated answers per target, no manifold).
    #[arg(long, default_value_t = ArmKind::Rail3, conflicts_with = "lengths")]
    arm: ArmKind,
    /// An arm from three or more link lengths `L1,L2,L3,...` in metres (shoulder ±90°, the other
    /// joints ±150°, uniform prior) instead of `--arm`.
    #[arg(long, value_name = "L1,L2,L3,...", allow_hyphen_values = true)]
    lengths: Option<ChainLengths>,
    /// The methods, comma-separated, from `mse`, `mdn`, `flow`, `dls`, `hybrid` and `exact`
    /// (default: all).
    #[arg(long)]
    methods: Option<Methods>,
    /// Test targets `y* = f(x)`, `x` from the prior, 1 to 100000.
    #[arg(long, default_value_t = defaults().targets, value_parser = count::<1, MAX_TARGETS>,
          allow_hyphen_values = true)]
    targets: usize,
    /// Samples per target and method, 2 to 20000.
    #[arg(long, default_value_t = defaults().samples, value_parser = count::<2, MAX_SAMPLES>,
          allow_hyphen_values = true)]
    samples: usize,
    /// Training steps of each net, 1 to 10000000.
    #[arg(long, default_value_t = defaults().net.steps, value_parser = count::<1, MAX_STEPS>,
          allow_hyphen_values = true)]
    steps: usize,
    /// Mixture components of the MDN, 1 to 32.
    #[arg(long, default_value_t = defaults().net.components, value_parser = count::<1, MAX_COMPONENTS>,
          allow_hyphen_values = true)]
    components: usize,
    /// The MDN components' covariance: `full` or `diagonal`.
    #[arg(long, default_value_t = defaults().net.covariance)]
    covariance: Covariance,
    /// Where the hybrid's seeds come from: `mdn` or `flow`.
    #[arg(long, default_value_t = defaults().solve.seeds)]
    seeds: Seeds,
    /// Coupling blocks of the normalizing flow, 1 to 64.
    #[arg(long, default_value_t = defaults().net.flow.blocks, value_parser = count::<1, MAX_BLOCKS>,
          allow_hyphen_values = true)]
    blocks: usize,
    /// Width of each flow coupling's hidden layers, 1 to 4096.
    #[arg(long, default_value_t = defaults().net.flow.hidden, value_parser = count::<1, MAX_HIDDEN>,
          allow_hyphen_values = true)]
    flow_hidden: usize,
    /// Hidden layers of each flow coupling, 1 to 8.
    #[arg(long, default_value_t = defaults().net.flow.depth, value_parser = count::<1, MAX_DEPTH>,
          allow_hyphen_values = true)]
    flow_depth: usize,
    /// The flow networks' hidden activation: `tanh` or `relu`.
    #[arg(long, default_value_t = defaults().net.flow.activation)]
    flow_activation: Activation,
    /// Success radius in metres, in (0, 1].
    #[arg(long, default_value_t = defaults().tolerance, allow_hyphen_values = true,
          value_parser = real(Range::above(0.0, elbow::experiments::chain::MAX_TOLERANCE, "m")))]
    tolerance: f64,
    /// The exact sampler's effective sample size per target, as a multiple of `--samples` (1 to 1000).
    #[arg(long, default_value_t = defaults().solve.ess_factor, allow_hyphen_values = true,
          value_parser = real(Range::closed(1.0, 1000.0, "times --samples")))]
    ess_factor: f64,
    /// Seed of targets, training and sampling.
    #[arg(long, default_value_t = defaults().seed, value_parser = crate::cli::seed)]
    seed: u64,
    /// No progress bar on stderr.
    #[arg(long)]
    quiet: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also draw each method's arms at the arm's demo target (y* = (1.5, 0) on rail3 and 3r) beside the exact posterior's into FILE
    /// (`.svg` or `.png`).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

impl ChainArgs {
    /// The core's configuration, validated.
    pub(crate) fn config(&self) -> Result<ChainConfig, String> {
        let arm = match &self.lengths {
            Some(l) => Arm::from_lengths(&l.0).map_err(|e| e.to_string())?,
            None => self.arm.arm(),
        };
        let mut cfg = ChainConfig::new(arm);
        if let Some(m) = &self.methods {
            cfg.methods = m.0.clone();
        }
        cfg.targets = self.targets;
        cfg.samples = self.samples;
        cfg.net.steps = self.steps;
        cfg.net.components = self.components;
        cfg.net.covariance = self.covariance;
        cfg.tolerance = self.tolerance;
        cfg.solve.ess_factor = self.ess_factor;
        cfg.solve.seeds = self.seeds;
        cfg.net.flow.blocks = self.blocks;
        cfg.net.flow.hidden = self.flow_hidden;
        cfg.net.flow.depth = self.flow_depth;
        cfg.net.flow.activation = self.flow_activation;
        cfg.seed = self.seed;
        cfg.net.seed = self.seed;
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// `elbow experiment chain`: checks the configuration and the plot path before any work.
pub(crate) fn run(a: &ChainArgs) -> Result<(), Failure> {
    let cfg = a.config()?;
    let plot = a.plot.as_deref().map(|p| Output::new(p).map_err(|e| format!("--plot {e}"))).transpose()?;
    let report = crate::cli::with_progress(!a.quiet && !a.json, "", "chain", |update| {
        chain_observed(&cfg, &|p| match p {
            Progress::Training { done, total } => update("training the nets", done, total),
            Progress::Evaluating { done, total } => update("evaluating targets", done, total),
        })
    });
    if signals::interrupted() {
        return Err(Failure { message: "interrupted; nothing was written".into(), code: INTERRUPTED_EXIT });
    }
    let report = report?;
    // The numbers first: a figure that cannot be drawn or written does not lose them.
    if a.json {
        print_json(&report)?
    } else {
        print_table(&report)?
    }
    if let Some(out) = &plot {
        crate::cli::flush_stdout()?;
        draw(&report, &cfg.arm, out)?;
    }
    Ok(())
}

fn spread_text(s: &Summary, digits: usize) -> String {
    format!("{:>9.digits$} {:>9.digits$} [{:.digits$}, {:.digits$}]", s.mean, s.median, s.q25, s.q75)
}

fn print_table(r: &ChainReport) -> Result<(), String> {
    outln!(
        "Redundant chain {}: {} targets y* = f(x), x from the prior, {} samples per target and method",
        r.arm,
        r.targets,
        r.samples
    );
    let widths: Vec<String> = r.kernel.widths.iter().map(|h| h.to_string()).collect();
    outln!("(nets trained side by side in {:.1} s; evaluated in {:.1} s)", r.train_seconds, r.eval_seconds);
    print_budget(r)?;
    outln!(
        "posterior mismatch: unbiased MMD² against {} exact samples, kernel sum of h²/(h² + |x - x'|²), h = {}",
        r.samples,
        widths.join(", ")
    );
    outln!(
        "exact-vs-exact floor {:.5} (median {:.5}, IQR [{:.5}, {:.5}]); exact ESS >= {:.0} on every target",
        r.mmd_floor.mean,
        r.mmd_floor.median,
        r.mmd_floor.q25,
        r.mmd_floor.q75,
        r.ess_min
    );
    outln!(
        "posterior spread (root trace of covariance): median {:.3}, IQR [{:.3}, {:.3}]; over 0.1 on {:.1}% of targets",
        r.posterior_spread.median,
        r.posterior_spread.q25,
        r.posterior_spread.q75,
        100.0 * r.spread_over_tenth
    );
    print_chain_rows(r)?;
    outln!(
        "resim: mean squared distance of FK(sample) to y* (m²); success: within {} m; outside: share of samples outside the joint limits;",
        r.tolerance
    );
    let [x, y] = r.demo.target;
    outln!("s/solution over the whole run, s/2000: 2,000 solutions of y* = ({x}, {y}) on one core (best of three)");
    Ok(())
}

/// One line per trained net: what it is and what its training cost.
pub(crate) fn print_budget(r: &ChainReport) -> Result<(), String> {
    let n = &r.net;
    for b in &r.budget {
        let what = match b.net.as_str() {
            "mse" => format!("squared-error MLP, {} hidden layers of {}", n.depth, n.hidden),
            "mdn" => format!(
                "MDN, {} {} components on {} hidden layers of {}",
                n.components, n.covariance, n.depth, n.hidden
            ),
            _ => format!(
                "normalizing flow, {} coupling blocks of {} {} layers of {}, conditioned through {} layers of {}",
                n.flow.blocks, n.flow.depth, n.flow.activation, n.flow.hidden, n.depth, n.flow.cond_hidden
            ),
        };
        let seconds = b.seconds.map_or_else(String::new, |s| format!(", {s:.1} s"));
        let rollbacks = b
            .rollbacks
            .as_deref()
            .map_or_else(String::new, |r| format!(", divergence roll-backs: {}", rollbacks_in_words(r)));
        outln!(
            "  {:<5} {what}: {} parameters, {} steps of {} prior pairs{seconds}{rollbacks}",
            b.net,
            b.parameters,
            b.steps,
            b.batch
        );
    }
    if r.rows.iter().any(|row| row.method == elbow::lineup::SolverId::Hybrid) {
        outln!("  the hybrid's seeds: {} draws", r.seeds);
    }
    Ok(())
}

/// The header and one row per method of a chain report (the experiment's and `train --arm`'s).
pub(crate) fn print_chain_rows(r: &ChainReport) -> Result<(), String> {
    outln!(
        "{:<7} {:>9} {:>9} {:<20} {:>9} {:>9} {:<20} {:>9} {:>8} {:>10} {:>10}",
        "method",
        "resim",
        "median",
        "IQR",
        "mismatch",
        "median",
        "IQR",
        "success",
        "outside",
        "s/solution",
        "s/2000"
    );
    for row in &r.rows {
        print_row(row)?;
    }
    Ok(())
}

fn print_row(row: &MethodRow) -> Result<(), String> {
    let extra = match (row.iterations_per_solution, row.starts_per_solution) {
        (Some(i), Some(s)) => format!("  ({i:.1} iterations, {s:.3} starts per solution)"),
        _ => String::new(),
    };
    outln!(
        "{:<7} {} {} {:>8.3}% {:>7.3}% {:>10.2e} {:>10.2e}{extra}",
        row.method.key(),
        spread_text(&row.resim, 5),
        spread_text(&row.mmd, 5),
        100.0 * row.success_rate,
        100.0 * row.outside_limits,
        row.seconds_per_solution,
        row.seconds_per_2000
    );
    Ok(())
}

const PANEL: u32 = 420;
/// Arms drawn per fan.
const FAN: usize = 100;
const HEADER: u32 = 40;

/// Draws one panel per method (the exact posterior's fan in grey beneath each) into `out`.
fn draw(r: &ChainReport, arm: &Arm, out: &Output) -> Result<(), String> {
    let n = r.demo.samples.len().max(1) as u32;
    let size = (PANEL * n, PANEL + HEADER);
    let fail = |e: &dyn std::fmt::Display| format!("--plot {}: {e}", out.path.display());
    out.render(size, |canvas| match canvas {
        Canvas::Svg(root) => paint(r, arm, root).map_err(|e| fail(&e)),
        Canvas::Bitmap(root) => paint(r, arm, root).map_err(|e| fail(&e)),
    })
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Colour of a method's fan.
fn colour(m: SolverId) -> RGBColor {
    match m {
        SolverId::Learned(HeadKind::Mse) => RGBColor(214, 39, 40),
        SolverId::Learned(HeadKind::Mdn) => RGBColor(148, 103, 189),
        SolverId::Flow => RGBColor(255, 127, 14),
        SolverId::Iterative => RGBColor(31, 119, 180),
        SolverId::Hybrid => RGBColor(44, 160, 44),
        SolverId::Exact => RGBColor(40, 40, 40),
        // The closed form's solvers never answer on a chain's figure.
        _ => RGBColor(127, 127, 127),
    }
}

fn paint<DB: DrawingBackend>(r: &ChainReport, arm: &Arm, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(HEADER);
    let t = r.demo.target;
    head.draw(&Text::new(
        format!("Arm {}: samples for y* = ({}, {}), each beside the exact posterior's (grey)", r.arm, t[0], t[1]),
        (10, 10),
        (FONT, 18),
    ))?;
    let d = arm.coords();
    let exact: &[f64] = r.demo.samples.iter().find(|(m, _)| *m == SolverId::Exact).map_or(&[], |(_, s)| s);
    // One square view for every panel: the drawn arms and the target, with a margin.
    let (mut lo, mut hi) = ([t[0], t[1]], [t[0], t[1]]);
    for (_, samples) in &r.demo.samples {
        for x in samples.chunks_exact(d).take(FAN) {
            for p in arm.chain.points(x) {
                lo = [lo[0].min(p.x), lo[1].min(p.y)];
                hi = [hi[0].max(p.x), hi[1].max(p.y)];
            }
        }
    }
    let half = 0.55 * (hi[0] - lo[0]).max(hi[1] - lo[1]).max(0.1);
    let (cx, cy) = (0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]));
    let panels = body.split_evenly((1, r.demo.samples.len().max(1)));
    for ((method, samples), area) in r.demo.samples.iter().zip(&panels) {
        let row = r.row(*method);
        let caption = match row {
            Some(row) => format!("{}: resim {:.4}, mismatch {:.4}", method, row.resim_error, row.posterior_mmd),
            None => format!("{method} (reference)"),
        };
        let mut chart = ChartBuilder::on(area)
            .caption(caption, (FONT, 15))
            .margin(8)
            .build_cartesian_2d((cx - half)..(cx + half), (cy - half)..(cy + half))?;
        chart.configure_mesh().disable_mesh().x_labels(5).y_labels(5).draw()?;
        if arm.chain.rail().is_some() {
            let style = ShapeStyle::from(&RGBColor(170, 170, 170)).stroke_width(1);
            chart.draw_series(std::iter::once(PathElement::new(vec![(0.0, cy - half), (0.0, cy + half)], style)))?;
        }
        let fan = |pts: &[f64], c: RGBColor, alpha: f64| {
            pts.chunks_exact(d)
                .take(FAN)
                .map(|x| {
                    let line: Vec<(f64, f64)> = arm.chain.points(x).iter().map(|p| (p.x, p.y)).collect();
                    PathElement::new(line, ShapeStyle::from(&c.mix(alpha)).stroke_width(1))
                })
                .collect::<Vec<_>>()
        };
        chart.draw_series(fan(exact, RGBColor(150, 150, 150), 0.25))?;
        if *method != SolverId::Exact {
            chart.draw_series(fan(samples, colour(*method), 0.35))?;
        }
        let cross = ShapeStyle::from(&BLACK).stroke_width(2);
        let s = 0.06;
        chart.draw_series([
            PathElement::new(vec![(t[0] - s, t[1]), (t[0] + s, t[1])], cross),
            PathElement::new(vec![(t[0], t[1] - s), (t[0], t[1] + s)], cross),
        ])?;
    }
    Ok(())
}
