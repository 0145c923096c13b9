//! `elbow atlas`: the workspace atlas of one solver as a PNG or SVG figure, the same map the app
//! draws under the arm, with the annulus rims and the layer's colour key.

use super::figure::{Canvas, FONT, Output};
use super::{ArmArgs, SignedPair, count, seed};
use clap::Args;
use elbow::atlas::{Atlas, AtlasConfig, Layer, MAX_RESOLUTION, MAX_SAMPLES, compute, paint};
use elbow::kinematics::{Mismatch, Pose};
use elbow::learned::{LearnedModel, TrainConfig, Trainer};
use elbow::{HeadKind, Lineup, SolverId, Table};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::PathBuf;

/// Arguments of `elbow atlas`.
#[derive(Debug, Args)]
pub(crate) struct AtlasArgs {
    /// The solver mapped (a learned head is trained first, unless `--model` gives it).
    #[arg(long, default_value = "mse")]
    solver: SolverId,
    /// What colours the cells: miss, branch, confidence, envelope or silent.
    #[arg(long, default_value = "miss")]
    layer: Layer,
    /// Where the figure goes (`.png` or `.svg`).
    #[arg(long)]
    out: PathBuf,
    /// Cells per side, 2 to 1024.
    #[arg(long, default_value_t = AtlasConfig::default().resolution, value_parser = count::<2, MAX_RESOLUTION>,
          allow_hyphen_values = true)]
    resolution: usize,
    /// How far the map reaches beyond the rim, as a fraction of the reach (0 to 2).
    #[arg(long, default_value_t = AtlasConfig::default().margin)]
    margin: f64,
    /// Joint noise of the silent layer, radians (0 to 1).
    #[arg(long, default_value_t = AtlasConfig::default().noise)]
    noise: f64,
    /// Backlash half-width of the silent layer, radians (0 to 1).
    #[arg(long, default_value_t = 0.0)]
    backlash: f64,
    /// Relative link length errors of the real arm the silent layer runs on, `E1,E2`.
    #[arg(long, default_value = "0,0", allow_hyphen_values = true)]
    length_error: SignedPair,
    /// Joint offsets of that real arm, radians, `SHOULDER,ELBOW`.
    #[arg(long, default_value = "0,0", allow_hyphen_values = true)]
    joint_offset: SignedPair,
    /// Noise samples per cell of the silent layer, 1 to 64.
    #[arg(long, default_value_t = AtlasConfig::default().samples, value_parser = count::<1, MAX_SAMPLES>,
          allow_hyphen_values = true)]
    samples: usize,
    /// A trained model file for the mapped head, instead of training one.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Training steps when the head is trained here, 10 to 100000.
    #[arg(long, default_value_t = TrainConfig::default().steps, value_parser = count::<10, MAX_TRAIN_STEPS>,
          allow_hyphen_values = true)]
    train_steps: usize,
    /// Seed of the training and of the silent layer's noise.
    #[arg(long, default_value_t = 0, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    /// The arm.
    #[command(flatten)]
    arm: ArmArgs,
}

/// Largest number of training steps accepted here.
const MAX_TRAIN_STEPS: usize = 100_000;

/// Most arithmetic one map may take, FLOP (a few minutes at the worst): every cell's answer,
/// each noise sample's, through the mapped net, loaded or trained here.
const MAX_MAP_FLOPS: f64 = 2e12;

/// Refuses a map whose inference work (`cells x (1 + samples) x 2 modes x 2 FLOP per weight`)
/// is above [`MAX_MAP_FLOPS`]: a wide `--model` at a fine `--resolution` would run for hours.
fn check_map_work(cfg: &AtlasConfig, weights: usize) -> Result<(), String> {
    let work = (cfg.resolution * cfg.resolution) as f64 * (1 + cfg.samples) as f64 * 2.0 * 2.0 * weights as f64;
    if work > MAX_MAP_FLOPS {
        return Err(format!(
            "this map would take about {work:.1e} FLOP ({weights} weights per answer, --resolution {}, --samples {}), \
             above the limit of {MAX_MAP_FLOPS:.0e}; use a lower --resolution or fewer --samples",
            cfg.resolution, cfg.samples
        ));
    }
    Ok(())
}

impl AtlasArgs {
    /// The core configuration.
    fn config(&self) -> Result<AtlasConfig, String> {
        let mismatch = Mismatch {
            length_error: [self.length_error.0, self.length_error.1],
            joint_offsets: Pose::new(self.joint_offset.0, self.joint_offset.1),
        };
        let cfg = AtlasConfig {
            resolution: self.resolution,
            margin: self.margin,
            noise: self.noise,
            backlash: self.backlash,
            mismatch,
            // The noise samples cost as much as the rest of the map: drawn for the silent layer only.
            samples: if self.layer == Layer::Silent { self.samples } else { 0 },
            seed: self.seed,
            ..AtlasConfig::default()
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// The model of the mapped head: loaded, or trained here.
    fn model(&self, head: HeadKind, arm: elbow::TwoLinkArm) -> Result<LearnedModel, String> {
        if let Some(path) = &self.model {
            let model = LearnedModel::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
            if model.kind != head {
                return Err(format!("{}: holds a {} model, not {}", path.display(), model.kind, head));
            }
            model.check_fits(&arm, None).map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(model);
        }
        // The residual head fits the default real arm of *this* arm, like `elbow train`.
        let real = super::fitted_real_arm(head, &arm)?;
        let cfg = TrainConfig { head, arm, real, steps: self.train_steps, seed: self.seed, ..TrainConfig::default() };
        super::note(format_args!("training {head} for {} steps…", cfg.steps));
        let mut trainer = Trainer::new(cfg).map_err(|e| e.to_string())?;
        trainer.run(|_, _| {});
        Ok(trainer.into_model())
    }
}

/// `elbow atlas`.
pub(crate) fn run(args: &AtlasArgs) -> Result<(), String> {
    let out = Output::new(&args.out)?;
    let cfg = args.config()?;
    let arm = args.arm.arm()?;
    // The silent layer's real arm must exist for these lengths: the core would otherwise map
    // the nominal arm in its place.
    elbow::kinematics::RealArm::with_mismatch(&arm, cfg.mismatch)
        .map_err(|e| format!("--length-error and --joint-offset give no usable real arm for these --lengths: {e}"))?;
    if args.model.is_some() && args.solver.head().is_none() {
        return Err(format!("--model is for a learned head; {} has no model", args.solver));
    }
    let model = args.solver.head().map(|h| args.model(h, arm)).transpose()?;
    if let Some(m) = &model {
        check_map_work(&cfg, m.net.parameter_count())?;
    }
    let mut models = Table::default();
    if let (Some(head), Some(m)) = (args.solver.head(), model.as_ref()) {
        models[head] = Some(m);
    }
    let atlas = compute(&Lineup::new(arm, models), args.solver, &cfg)?;
    if let Some(why) = &atlas.missing {
        return Err(why.clone());
    }
    let rims = (arm.inner_radius(), arm.reach());
    out.render((1060, 800), |canvas| match canvas {
        Canvas::Svg(root) => draw(root, &atlas, args.layer, rims),
        Canvas::Bitmap(root) => draw(root, &atlas, args.layer, rims),
    })?;
    super::note(format_args!("wrote {}", args.out.display()));
    Ok(())
}

/// Converts a paint colour.
fn rgb(c: paint::Rgba) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

/// Draws the map, the rims and the key.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    atlas: &Atlas,
    layer: Layer,
    (inner, outer): (f64, f64),
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("cannot draw the atlas: {e}");
    root.fill(&WHITE).map_err(err)?;
    let (map_area, key_area) = root.split_horizontally(800);
    let w = atlas.half_width;
    let mut chart = ChartBuilder::on(&map_area)
        .caption(format!("{}: {}", atlas.solver.name(), layer.caption()), (FONT, 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(-w..w, -w..w)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("x (m)")
        .y_desc("y (m)")
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let step = 2.0 * w / atlas.resolution as f64;
    chart
        .draw_series(atlas.cells.iter().map(|c| {
            let (x, y) = (c.target.x - step / 2.0, c.target.y - step / 2.0);
            Rectangle::new([(x, y), (x + step, y + step)], rgb(paint::cell_color(c, layer)).filled())
        }))
        .map_err(err)?;
    for r in [inner, outer].into_iter().filter(|r| *r > 0.0) {
        let circle = (0..=240).map(|i| {
            let a = i as f64 / 240.0 * std::f64::consts::TAU;
            (r * a.cos(), r * a.sin())
        });
        chart.draw_series(LineSeries::new(circle, WHITE.stroke_width(2))).map_err(err)?;
    }
    draw_key(&key_area, layer).map_err(err)
}

/// Draws the colour bar or the class list of `layer` into `area`.
fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    layer: Layer,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let text = (FONT, 14).into_font().color(&BLACK);
    match paint::key(layer) {
        paint::Key::Scale { lo, hi, log, unit } => {
            let (top, bottom, left) = (60, 720, 20);
            area.draw(&Text::new(unit, (left, top - 30), text.clone()))?;
            let steps = 200;
            for i in 0..steps {
                let t = i as f64 / steps as f64;
                let y1 = bottom - ((bottom - top) as f64 * (t + 1.0 / steps as f64)).ceil() as i32;
                let y0 = bottom - ((bottom - top) as f64 * t) as i32;
                area.draw(&Rectangle::new([(left, y1), (left + 30, y0)], rgb(paint::scale_color(layer, t)).filled()))?;
            }
            let ticks: Vec<f64> = if log {
                let mut v: Vec<f64> = (-4..=0).map(|e| 10f64.powi(e)).collect();
                v.push(hi);
                v
            } else {
                (0..=4).map(|i| lo + (hi - lo) * i as f64 / 4.0).collect()
            };
            for v in ticks {
                let t = if log { paint::miss_fraction(v) } else { (v - lo) / (hi - lo) };
                let y = bottom - ((bottom - top) as f64 * t) as i32;
                let label = if log { length_label(v) } else { format!("{v:.2}") };
                area.draw(&PathElement::new(vec![(left + 30, y), (left + 36, y)], BLACK))?;
                area.draw(&Text::new(label, (left + 40, y - 7), text.clone()))?;
            }
            // Cells with no value (the confidence of a solver without a mixture) are on no bar.
            if let Some((label, color)) = paint::no_value(layer) {
                area.draw(&Rectangle::new([(left, bottom + 24), (left + 18, bottom + 42)], rgb(color).filled()))?;
                area.draw(&Text::new(label, (left + 24, bottom + 26), text.clone()))?;
            }
        }
        paint::Key::Classes(classes) => {
            for (i, (label, color)) in classes.iter().enumerate() {
                let y = 60 + i as i32 * 28;
                area.draw(&Rectangle::new([(10, y), (28, y + 18)], rgb(*color).filled()))?;
                area.draw(&Text::new(label.clone(), (34, y + 2), text.clone()))?;
            }
        }
    }
    Ok(())
}

/// A length on the colour bar in the unit that reads best (0.1 mm, 1 cm, 2 m).
fn length_label(v: f64) -> String {
    if v < 1e-2 {
        format!("{} mm", v * 1e3)
    } else if v < 1.0 {
        format!("{} cm", (v * 1e2).round())
    } else {
        format!("{v} m")
    }
}
