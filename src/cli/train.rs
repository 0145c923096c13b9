//! `elbow train`: trains one head with a progress bar, reports its held-out FK miss, and saves
//! the model.

use super::{ArmArgs, print_json};
use clap::Args;
use elbow::kinematics::{Mismatch, Region};
use elbow::learned::{AngleEncoding, HeadKind, TrainConfig, train_and_evaluate};
use elbow::nn::Activation;
use std::path::PathBuf;

/// The core's defaults, so the command line never re-types a training knob.
fn defaults() -> TrainConfig {
    TrainConfig::default()
}

/// Arguments of `elbow train`.
#[derive(Debug, Args)]
pub(crate) struct TrainArgs {
    /// Which head: mse, mdn, mode or residual.
    #[arg(long, default_value_t = defaults().head)]
    head: HeadKind,
    /// Minibatch updates.
    #[arg(long, default_value_t = defaults().steps)]
    steps: usize,
    /// Samples per minibatch.
    #[arg(long, default_value_t = defaults().batch)]
    batch: usize,
    /// Width of each hidden layer.
    #[arg(long, default_value_t = defaults().hidden)]
    hidden: usize,
    /// Number of hidden layers.
    #[arg(long, default_value_t = defaults().depth)]
    depth: usize,
    /// MDN mixture components.
    #[arg(long, default_value_t = defaults().components)]
    components: usize,
    /// Peak learning rate (cosine-decayed).
    #[arg(long, default_value_t = defaults().lr)]
    lr: f32,
    /// Hidden activation: tanh or relu.
    #[arg(long, default_value = "tanh")]
    activation: Activation,
    /// Output encoding: circular (shoulder as cos/sin, no wrap) or raw angles (wraps at ±180°).
    #[arg(long, default_value = "circular")]
    encoding: AngleEncoding,
    /// Training region: `annulus` or `sector:FROM,TO` in degrees.
    #[arg(long, default_value_t = defaults().region)]
    region: Region,
    /// Training targets.
    #[arg(long, default_value_t = defaults().data_size)]
    data_size: usize,
    /// Held-out evaluation targets.
    #[arg(long, default_value_t = 5_000)]
    eval_targets: usize,
    /// Seed of data, initialisation and batching.
    #[arg(long, default_value_t = defaults().seed)]
    seed: u64,
    #[command(flatten)]
    arm: ArmArgs,
    /// Save the trained model here (JSON).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

impl TrainArgs {
    /// The training configuration these arguments describe; the residual head fits the default
    /// real arm ([`Mismatch::DEFAULT`]).
    pub(crate) fn config(&self) -> Result<TrainConfig, String> {
        let arm = self.arm.arm()?;
        Ok(TrainConfig {
            head: self.head,
            arm,
            region: self.region,
            data_size: self.data_size,
            steps: self.steps,
            batch: self.batch,
            hidden: self.hidden,
            depth: self.depth,
            activation: self.activation,
            components: self.components,
            lr: self.lr,
            encoding: self.encoding,
            seed: self.seed,
            real: Mismatch::DEFAULT.real_arm(&arm),
            ..TrainConfig::default()
        })
    }
}

/// A progress bar over `steps` training steps, or nothing when `show` is false.
fn progress_bar(show: bool, steps: usize, head: HeadKind) -> Option<indicatif::ProgressBar> {
    show.then(|| {
        let bar = indicatif::ProgressBar::new(steps as u64);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} steps  loss {msg}  eta {eta}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(format!("training {head}"));
        bar
    })
}

/// `elbow train`.
pub(crate) fn run(args: &TrainArgs) -> Result<(), String> {
    let cfg = args.config()?;
    let mut probed = None;
    if let Some(path) = &args.out {
        // Find out now, not after training, whether the model can be written there (appending
        // opens an existing file without touching it).
        let existed = path.exists();
        let probe = std::fs::OpenOptions::new().create(true).append(true).open(path);
        probe.map_err(|e| format!("cannot write the model to {}: {e}", path.display()))?;
        probed = (!existed).then_some(path);
    }
    let bar = progress_bar(!args.quiet && !args.json, cfg.steps, cfg.head);
    let trained = train_and_evaluate(cfg, args.eval_targets, |step, loss| {
        if let Some(bar) = &bar
            && (step % 50 == 0 || step == cfg.steps)
        {
            bar.set_position(step as u64);
            bar.set_message(format!("{loss:.4}"));
        }
    });
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (model, report) = trained.map_err(|e| {
        if let Some(path) = probed {
            let _ = std::fs::remove_file(path); // the empty file the probe left
        }
        e.to_string()
    })?;
    if let Some(path) = &args.out {
        model.save(path).map_err(|e| e.to_string())?;
    }
    if args.json {
        return print_json(&report);
    }
    let s = report.fk_miss;
    println!(
        "head {}: {} steps in {:.2} s ({:.0} samples/s), final loss {:.4}",
        report.head, report.steps, report.train_seconds, report.samples_per_second, report.final_loss
    );
    println!(
        "held-out FK miss over {} answers: mean {:.4} m ({:.2}% of reach), median {:.4}, p95 {:.4}, max {:.4}",
        s.n, s.mean, report.mean_miss_percent_of_reach, s.median, s.p95, s.max
    );
    if let Some(a) = report.analytic_on_real_arm {
        println!("analytic alone on the same real arm: mean {:.4} m, median {:.4}, p95 {:.4}", a.mean, a.median, a.p95);
    }
    if let Some(path) = &args.out {
        println!("saved {}", path.display());
    }
    Ok(())
}
