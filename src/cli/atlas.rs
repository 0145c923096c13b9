//! `elbow atlas`: the workspace atlas of one solver on any arm as a PNG or SVG figure, the same
//! map the app draws under the arm, with the layer's colour key (and the annulus rims where the
//! arm has a closed form). Every arm goes through the one entry point,
//! [`elbow::atlas::compute`]: the arm answers which layers and solvers it has
//! ([`elbow::atlas::choose`]); only the models a map answers with are made per kind (a
//! two-link head, a chain's nets).

use super::arm::{chain_nets, two_link_head};
use super::figure::{Canvas, FONT, Output};
use super::{AppArm, ArmChoice, Failure, Range, SignedPair, count, real, seed};
use clap::Args;
use elbow::arm::Arm;
use elbow::atlas::chain::{ChainLayer, Extent};
use elbow::atlas::{AtlasConfig, Layer, MAX_RESOLUTION, MAX_SAMPLES, MapLayer, Trained, choose, compute, paint, rims};
use elbow::chain::ChainModel;
use elbow::kinematics::{Mismatch, Point2, Pose};
use elbow::learned::{LearnedModel, TrainConfig};
use elbow::plant::channel::Channel;
use elbow::{HeadKind, SolverId};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::PathBuf;

/// Arguments of `elbow atlas`.
#[derive(Debug, Args)]
pub(crate) struct AtlasArgs {
    /// The solver mapped (a learned head or net is trained first, unless `--model` gives it)
    /// [default: mse]. Two-link arm: any of its solvers; chains: mse, mdn, hybrid or exact
    /// (each has its layer).
    #[arg(long)]
    solver: Option<SolverId>,
    /// What colours the cells. Two-link arm: miss, branch, confidence, envelope or silent
    /// [default: miss]. Chains: mse-miss (tip miss of the MSE answer), mdn-resim (mean tip miss
    /// of the MDN's samples), exact-spread (the exact posterior's spread) or hybrid-success
    /// (share of hybrid solutions within 1 mm) [default: the solver's, mse-miss].
    #[arg(long)]
    layer: Option<MapLayer>,
    /// Where the figure goes (`.png` or `.svg`).
    #[arg(long)]
    out: PathBuf,
    /// Cells per side, 2 to 1024 [default: 128; chains 48, at most 512].
    #[arg(long, value_parser = count::<2, MAX_RESOLUTION>, allow_hyphen_values = true)]
    resolution: Option<usize>,
    /// How far the map reaches beyond the rim, as a fraction of the reach (0 to 2) [default:
    /// 0.25; chains 0.1].
    #[arg(long, value_parser = real(Range::closed(0.0, 2.0, "times the reach")))]
    margin: Option<f64>,
    /// Two-link arm: joint noise of the silent layer, radians (0 to pi, the encoder channel's
    /// bound) [default: 0.02].
    #[arg(long, value_parser = level_of(Channel::Encoder))]
    noise: Option<f64>,
    /// Two-link arm: backlash half-width of the silent layer, radians (0 to pi/4, the backlash
    /// channel's bound) [default: 0].
    #[arg(long, value_parser = level_of(Channel::Backlash))]
    backlash: Option<f64>,
    /// Two-link arm: relative link length errors of the real arm the silent layer runs on,
    /// `E1,E2` [default: 0,0].
    #[arg(long, allow_hyphen_values = true)]
    length_error: Option<SignedPair>,
    /// Two-link arm: joint offsets of that real arm, radians, `SHOULDER,ELBOW` [default: 0,0].
    #[arg(long, allow_hyphen_values = true)]
    joint_offset: Option<SignedPair>,
    /// Noise samples per cell of the silent layer, 1 to 64 [default: 4]; on a chain, answers per
    /// cell of the sampled layers, 2 to 64 [default: 16].
    #[arg(long, value_parser = count::<1, MAX_SAMPLES>, allow_hyphen_values = true)]
    samples: Option<usize>,
    /// A trained model file for the mapped head (on a chain: a chain model from
    /// `elbow train --arm ... --out FILE`), instead of training one here.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Training steps when the nets are trained here, 10 to 100000 [default: 6000; chains 2000].
    #[arg(long, value_parser = count::<10, MAX_TRAIN_STEPS>, allow_hyphen_values = true)]
    train_steps: Option<usize>,
    /// Seed of the training and of the silent layer's noise (on a chain, of the sampling).
    #[arg(long, default_value_t = 0, value_parser = seed, allow_hyphen_values = true)]
    seed: u64,
    /// The arm.
    #[command(flatten)]
    arm: ArmChoice,
}

/// Largest number of training steps accepted here.
const MAX_TRAIN_STEPS: usize = 100_000;

/// Most arithmetic one map may take, FLOP (a few minutes at the worst): every cell's answer,
/// each noise sample's, through the mapped net, loaded or trained here.
const MAX_MAP_FLOPS: f64 = 2e12;

/// Refuses a map whose inference work (`cells x (1 + samples) x 2 modes x 2 FLOP per weight`)
/// is above [`MAX_MAP_FLOPS`]: a wide `--model` at a fine `--resolution` would run for hours.
/// Checked before any work: before the head is trained, from the size of the net to be trained.
/// A level of `channel` for the silent layer: a number from 0 to the channel table's bound on
/// it, refused in the table's words (`from 0 to pi rad`).
fn level_of(channel: Channel) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        let v = super::number::finite(s)?;
        let words = channel.row().bound.map_or("its bound", |b| b.words);
        if v < 0.0 || channel.check_level(v).is_err() {
            return Err(format!("must be a number from 0 to {words}, got {}", super::number::shown(s)));
        }
        Ok(v)
    }
}

fn check_map_work(cfg: &AtlasConfig, weights: f64) -> Result<(), String> {
    let work = (cfg.resolution * cfg.resolution) as f64 * (1 + cfg.samples) as f64 * 2.0 * 2.0 * weights;
    if work > MAX_MAP_FLOPS {
        return Err(format!(
            "this map would take about {work:.1e} FLOP ({weights} weights per answer, --resolution {}, --samples {}), \
             above the limit of {MAX_MAP_FLOPS:.0e}; use a lower --resolution or fewer --samples",
            cfg.resolution, cfg.samples
        ));
    }
    Ok(())
}

/// Most work one chain map may take, in answers of its method (a few minutes at the worst: an
/// answer of the exact sampler on rail3 takes about 15 µs of two idle cores, 60 µs of two busy
/// ones).
const MAX_CHAIN_MAP_ANSWERS: f64 = 4e6;

/// What a cell costs before its answers, in answers: the reachability probe and the exact
/// sampler's set-up for the target (measured on rail3: about 64 of its answers).
const PROBE_ANSWERS: f64 = 64.0;

/// Refuses a chain map above [`MAX_CHAIN_MAP_ANSWERS`] (`cells x (answers per cell + the
/// probe)`), before any net is trained or any cell mapped.
fn check_chain_map_work(cfg: &AtlasConfig, layer: ChainLayer) -> Result<(), String> {
    let cells = (cfg.resolution * cfg.resolution) as f64;
    let per_cell = if layer == ChainLayer::MseMiss { 1 } else { cfg.samples };
    let work = cells * (per_cell as f64 + PROBE_ANSWERS);
    if work > MAX_CHAIN_MAP_ANSWERS {
        return Err(format!(
            "this map would take about {work:.1e} answers ({cells} cells x ({per_cell} answer(s) + {PROBE_ANSWERS} for the cell's reachability probe)), \
             above the limit of {MAX_CHAIN_MAP_ANSWERS:.0e} (a few minutes); use a lower --resolution or fewer --samples"
        ));
    }
    Ok(())
}

/// The models a map answers with, owned: a two-link head, or a chain's nets.
enum Models {
    /// The mapped two-link head's model, if the solver is a head.
    Head(Option<(HeadKind, Box<LearnedModel>)>),
    /// The chain's nets.
    Nets(Box<ChainModel>),
}

impl Models {
    /// The models as the core takes them.
    fn trained(&self) -> Trained<'_> {
        let mut trained = Trained::default();
        match self {
            Models::Head(Some((head, model))) => trained.heads[*head] = Some(model),
            Models::Head(None) => {}
            Models::Nets(model) => trained.nets = model.nets(),
        }
        trained
    }
}

impl AtlasArgs {
    /// The configuration of a map of `layer` on `arm`: the arm's defaults, the flags given, and
    /// the silent layer's plant on the two-link arm only (its flags are refused on a chain).
    fn config(&self, arm: &Arm, layer: MapLayer) -> Result<AtlasConfig, String> {
        let d = AtlasConfig::for_arm(arm);
        let mut cfg = AtlasConfig {
            resolution: self.resolution.unwrap_or(d.resolution),
            margin: self.margin.unwrap_or(d.margin),
            samples: self.samples.unwrap_or(d.samples),
            seed: self.seed,
            ..d
        };
        match layer {
            MapLayer::TwoLink(l) => {
                let length_error = self.length_error.unwrap_or(SignedPair(0.0, 0.0));
                let joint_offset = self.joint_offset.unwrap_or(SignedPair(0.0, 0.0));
                cfg.mismatch = Mismatch {
                    length_error: [length_error.0, length_error.1],
                    joint_offsets: Pose::new(joint_offset.0, joint_offset.1),
                };
                cfg.noise = self.noise.unwrap_or(d.noise);
                cfg.backlash = self.backlash.unwrap_or(0.0);
                // The noise samples cost as much as the rest of the map: drawn for the silent
                // layer only.
                if l != Layer::Silent {
                    cfg.samples = 0;
                }
            }
            MapLayer::Chain(_) => {
                let two_link_only = [
                    ("--noise", self.noise.is_some()),
                    ("--backlash", self.backlash.is_some()),
                    ("--length-error", self.length_error.is_some()),
                    ("--joint-offset", self.joint_offset.is_some()),
                ];
                if let Some((flag, _)) = two_link_only.iter().find(|(_, given)| *given) {
                    return Err(format!(
                        "{flag} is for the two-link arm; on {} choose a chain layer with --layer",
                        arm.name
                    ));
                }
            }
        }
        cfg.validate_for(arm, layer)?;
        Ok(cfg)
    }

    /// The models the map of `solver` on `arm` answers with: loaded, or trained here once the
    /// map's work is known to be within its limit (before any training).
    fn models(&self, arm: &Arm, solver: SolverId, layer: MapLayer, cfg: &AtlasConfig) -> Result<Models, Failure> {
        match (layer, arm.closed_form()) {
            (MapLayer::TwoLink(_), Some(two)) => {
                // The silent layer's real arm must exist for these lengths: the core would
                // otherwise map the nominal arm in its place.
                elbow::kinematics::RealArm::with_mismatch(&two, cfg.mismatch).map_err(|e| {
                    format!("--length-error and --joint-offset give no usable real arm for these --lengths: {e}")
                })?;
                if self.model.is_some() && solver.head().is_none() {
                    return Err(format!("--model is for a learned head; {solver} has no model").into());
                }
                let head = solver.head().map(|h| self.head(h, two, cfg).map(|m| (h, Box::new(m)))).transpose()?;
                Ok(Models::Head(head))
            }
            (MapLayer::Chain(l), _) => {
                check_chain_map_work(cfg, l)?;
                let steps = self.train_steps.unwrap_or(super::arm::cli_net_defaults().steps);
                let model = chain_nets(arm, self.model.as_deref(), &[solver], steps, self.seed)?;
                if let Some(kind) = elbow::chain::solve::net_needed(solver, cfg.settings.seeds)
                    && model.nets().get(kind).is_none()
                {
                    return Err(format!(
                        "the model file holds no {kind:?} net, which the {l} layer needs (an older file?): pick another layer, or `elbow train --arm {} --out FILE` trains every net",
                        arm.name
                    )
                    .into());
                }
                Ok(Models::Nets(Box::new(model)))
            }
            (MapLayer::TwoLink(_), None) => Err(format!("{} has no closed form", arm.name).into()),
        }
    }

    /// The model of the mapped two-link head: loaded, or trained here once the map's work is
    /// known to be within its limit ([`check_map_work`]: before any training).
    fn head(&self, head: HeadKind, arm: elbow::TwoLinkArm, cfg: &AtlasConfig) -> Result<LearnedModel, String> {
        let steps = self.train_steps.unwrap_or(TrainConfig::default().steps);
        if let Some(path) = self.model.as_deref() {
            let (model, _) = two_link_head(head, arm, Some(path), steps, self.seed)?;
            check_map_work(cfg, model.net.parameter_count() as f64)?;
            return Ok(model);
        }
        check_map_work(cfg, TrainConfig { head, ..TrainConfig::default() }.parameter_count())?;
        Ok(two_link_head(head, arm, None, steps, self.seed)?.0)
    }
}

/// `elbow atlas` on any arm: the solver and layer the arm has, the models they answer with
/// (loaded or trained here), the map through the one entry point, and the figure.
pub(crate) fn run(args: &AtlasArgs) -> Result<(), Failure> {
    let arm = match args.arm.lab()? {
        AppArm::TwoLink(two) => Arm::two_link(two),
        AppArm::Chain(arm) => arm,
    };
    let out = Output::new(&args.out)?;
    let (solver, layer) = choose(&arm, args.solver, args.layer)?;
    let cfg = args.config(&arm, layer)?;
    let models = args.models(&arm, solver, layer, &cfg)?;
    let started = std::time::Instant::now();
    let map = super::with_progress(true, "rows", &format!("mapping {} ({layer})", solver.name()), |update| {
        compute(&arm, solver, models.trained(), &cfg, &|done, total| update("", done, total))
    });
    let Some(map) = map.map_err(|e| e.to_string())? else {
        return Err(Failure { message: "interrupted; nothing was written".into(), code: super::INTERRUPTED_EXIT });
    };
    if let Some(why) = map.missing() {
        return Err(why.to_string().into());
    }
    let seconds = started.elapsed().as_secs_f64();
    let n = map.resolution();
    let cells: Vec<(Point2, paint::Rgba)> = (0..n)
        .flat_map(|row| (0..n).map(move |col| (col, row)))
        .zip(paint::cell_colors(&map, layer))
        .map(|((col, row), color)| (map.center(col, row), color))
        .collect();
    let extent = map.extent();
    let rims = rims(&arm);
    let figure = Map {
        caption: map.caption(layer),
        x: extent.x,
        y: extent.y,
        cell: map.cell_size(),
        cells: &cells,
        rims: &rims,
    };
    let key = MapKey {
        key: paint::layer_key(layer),
        color_at: &|t| paint::layer_scale_color(layer, t),
        no_value: paint::layer_no_value(layer),
    };
    out.render(figure_size(&extent), |canvas| match canvas {
        Canvas::Svg(root) => draw(root, &figure, &key),
        Canvas::Bitmap(root) => draw(root, &figure, &key),
    })?;
    match map.reachable() {
        Some(reachable) => super::note(format_args!(
            "wrote {} ({n}×{n} cells, {reachable} reachable, mapped in {seconds:.1} s)",
            args.out.display()
        )),
        None => super::note(format_args!("wrote {}", args.out.display())),
    }
    Ok(())
}

/// The figure's size: the map's aspect, beside the key (1060 × 800 for a square map).
fn figure_size(extent: &Extent) -> (u32, u32) {
    let aspect = (extent.x[1] - extent.x[0]) / (extent.y[1] - extent.y[0]);
    let height = 800.0;
    (((height - 60.0) * aspect + 60.0).round() as u32 + KEY_WIDTH as u32, height as u32)
}

/// What a figure maps: cells of one colour each over a rectangle, with optional rims.
struct Map<'a> {
    caption: String,
    x: [f64; 2],
    y: [f64; 2],
    /// A cell's width and height.
    cell: (f64, f64),
    /// Each cell's centre and colour.
    cells: &'a [(Point2, paint::Rgba)],
    /// Circles drawn in white (the annulus rims), radii.
    rims: &'a [f64],
}

/// How a figure's key explains its colours.
struct MapKey<'a> {
    key: paint::Key,
    /// Colour at a fraction of the bar.
    color_at: &'a dyn Fn(f64) -> paint::Rgba,
    /// The colour of cells with no value and its label, if there are such cells.
    no_value: Option<(&'static str, paint::Rgba)>,
}

/// Width of the key beside the map, pixels.
const KEY_WIDTH: i32 = 260;

/// Converts a paint colour.
fn rgb(c: paint::Rgba) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

/// Draws the map, the rims and the key.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, map: &Map<'_>, key: &MapKey<'_>) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| format!("cannot draw the atlas: {e}");
    root.fill(&WHITE).map_err(err)?;
    let width = root.dim_in_pixel().0 as i32;
    let (map_area, key_area) = root.split_horizontally(width - KEY_WIDTH);
    let mut chart = ChartBuilder::on(&map_area)
        .caption(&map.caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(map.x[0]..map.x[1], map.y[0]..map.y[1])
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("x (m)")
        .y_desc("y (m)")
        .label_style((FONT, 14))
        .draw()
        .map_err(err)?;
    let (w, h) = map.cell;
    chart
        .draw_series(map.cells.iter().map(|&(c, color)| {
            let (x, y) = (c.x - w / 2.0, c.y - h / 2.0);
            Rectangle::new([(x, y), (x + w, y + h)], rgb(color).filled())
        }))
        .map_err(err)?;
    for &r in map.rims.iter().filter(|r| **r > 0.0) {
        let circle = (0..=240).map(|i| {
            let a = i as f64 / 240.0 * std::f64::consts::TAU;
            (r * a.cos(), r * a.sin())
        });
        chart.draw_series(LineSeries::new(circle, WHITE.stroke_width(2))).map_err(err)?;
    }
    draw_key(&key_area, key).map_err(err)
}

/// Draws the colour bar or the class list of a key into `area`.
fn draw_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    key: &MapKey<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let text = (FONT, 14).into_font().color(&BLACK);
    match &key.key {
        &paint::Key::Scale { lo, hi, log, unit } => {
            let (top, bottom, left) = (60, 720, 20);
            area.draw(&Text::new(unit, (left, top - 30), text.clone()))?;
            let steps = 200;
            for i in 0..steps {
                let t = i as f64 / steps as f64;
                let y1 = bottom - ((bottom - top) as f64 * (t + 1.0 / steps as f64)).ceil() as i32;
                let y0 = bottom - ((bottom - top) as f64 * t) as i32;
                area.draw(&Rectangle::new([(left, y1), (left + 30, y0)], rgb((key.color_at)(t)).filled()))?;
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
            // Cells with no value (the confidence of a solver without a mixture, an unreachable
            // chain target) are on no bar.
            if let Some((label, color)) = key.no_value {
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
