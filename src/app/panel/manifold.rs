//! The panel's rows for an arm whose answers form a manifold, which the panel's sections show on
//! a chain: the arm buttons (every arm's), the driver,
//! the fans and their toggles, the self-motion slider, each method's live figures (the MDN
//! fan's posterior mismatch against the exact fan, the hybrid against DLS from prior starts),
//! and the training of the nets. Every method list iterates [`SolverId::CHAIN`] through the arm's
//! registry ([`elbow::arm::Arm::methods`]), so a new method appears here by itself.

use super::super::export::{self, YScale};
use super::super::fans::{PER_FRAME, TOLERANCE};
use super::super::format::{key_bar, metres, number, solver_color, swatch};
use super::super::manifold_atlas::ChainAtlasView;
use super::super::state::arm::{Lab, Sim};
use super::super::state::manifold::{
    ChainAnswers, ChainNets, ChainTrainCommand, ChainTraining, ChainView, ChainWhy, IterStats, MAX_FAN,
    SELF_MOTION_SPAN, drives, enveloped, method_label, net_method,
};
use super::super::state::train::Run;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::egui;
use elbow::arm::{Arm, ArmKind};
use elbow::atlas::chain::ChainLayer;
use elbow::atlas::paint;
use elbow::chain::nets::NetKind;
use elbow::learned::HeadKind;
use elbow::lineup::SolverId;
use elbow::{Point2, TwoLinkArm};

/// The driver row, the fans and the self-motion slider: what they read and edit.
#[derive(SystemParam)]
pub(crate) struct DriverRows<'w> {
    view: ResMut<'w, ChainView>,
    answers: Res<'w, ChainAnswers>,
    sim: Res<'w, Sim>,
}

impl DriverRows<'_> {
    /// Which method drives `arm`, the fans shown, and the self-motion slider for `target`.
    pub(crate) fn show(&mut self, ui: &mut egui::Ui, arm: &Arm, target: Point2) {
        let methods: Vec<SolverId> = arm.methods().to_vec();
        driver_row(ui, &methods, self.view.reborrow());
        fan_rows(ui, &methods, self.view.reborrow());
        self_motion_row(ui, target, self);
    }
}

/// The per-method readouts: what they read.
#[derive(SystemParam)]
pub(crate) struct Readouts<'w> {
    answers: Res<'w, ChainAnswers>,
    nets: Res<'w, ChainNets>,
}

impl Readouts<'_> {
    /// One row per method of `arm` with its live figures for `target`.
    pub(crate) fn show(&self, ui: &mut egui::Ui, arm: &Arm, target: Point2) {
        readouts(ui, arm, target, self);
    }
}

/// The driving net's explanation: what it reads and keeps.
#[derive(SystemParam)]
pub(crate) struct WhyRows<'w> {
    view: Res<'w, ChainView>,
    answers: Res<'w, ChainAnswers>,
    nets: Res<'w, ChainNets>,
    why: ResMut<'w, ChainWhy>,
}

impl WhyRows<'_> {
    /// The driver's net on `arm` at `target`, taken apart.
    pub(crate) fn show(&mut self, ui: &mut egui::Ui, arm: &Arm, target: Point2) {
        why_section(ui, arm, target, self);
    }
}

/// The nets' training controls: what they read and send.
#[derive(SystemParam)]
pub(crate) struct TrainingRows<'w> {
    training: ResMut<'w, ChainTraining>,
    commands: MessageWriter<'w, ChainTrainCommand>,
}

impl TrainingRows<'_> {
    /// Progress, hyper-parameters, loss curves, training again.
    pub(crate) fn show(&mut self, ui: &mut egui::Ui) {
        training_section(ui, self);
    }
}

/// The nets' progress pill: steps done of all the nets' steps.
pub(crate) fn training_bar(ui: &mut egui::Ui, training: &ChainTraining) {
    ui.horizontal(|ui| {
        super::super::format::progress_pill(
            ui,
            super::super::state::train::progress(training.runs.iter()),
            "nets",
            "stopped or done",
        )
    });
}

/// The arm buttons: the lab's two-link arm (`home`) and every named chain; a click switches the
/// arm in force live.
pub(crate) fn arm_selector(ui: &mut egui::Ui, mut lab: Mut<Lab>, home: TwoLinkArm) {
    let current = if lab.closed_form().is_some() { Some(ArmKind::TwoR) } else { lab.arm().kind };
    ui.horizontal(|ui| {
        ui.label("arm");
        for kind in ArmKind::ALL {
            let label = ui.selectable_label(current == Some(kind), kind.key()).on_hover_text(kind.spec().about);
            if label.clicked() && current != Some(kind) {
                let arm = if kind.arm().closed_form().is_some() { Arm::two_link(home) } else { kind.arm() };
                *lab = Lab(arm);
            }
        }
        if current.is_none() || (current == Some(ArmKind::TwoR) && lab.arm().kind.is_none()) {
            ui.strong(&lab.arm().name);
        }
    });
}

/// Which method the chain follows.
fn driver_row(ui: &mut egui::Ui, methods: &[SolverId], mut view: Mut<ChainView>) {
    let (mut driver, mut envelope) = (view.driver, view.envelope);
    ui.horizontal_wrapped(|ui| {
        ui.label("driver");
        for &m in methods.iter().filter(|&&m| drives(m)) {
            swatch(ui, solver_color(m));
            ui.selectable_value(&mut driver, m, m.key()).on_hover_text(method_label(m));
        }
    });
    ui.add_enabled(enveloped(driver), egui::Checkbox::new(&mut envelope, "safety envelope around the driver"))
        .on_hover_text("Checks a net's answer (finite, in range, a bounded joint step, FK within tolerance); a rejected one falls back to DLS from where the arm is.")
        .on_disabled_hover_text("DLS and the hybrid check their own answers: the envelope wraps the nets.");
    if (driver, envelope) != (view.driver, view.envelope) {
        view.driver = driver;
        view.envelope = envelope;
    }
}

/// The fan size and which methods are drawn.
fn fan_rows(ui: &mut egui::Ui, methods: &[SolverId], mut view: Mut<ChainView>) {
    let mut v = view.clone();
    ui.add(egui::Slider::new(&mut v.fan, 2..=MAX_FAN).logarithmic(true).text("samples per fan")).on_hover_text(
        "How many answers each fan draws for the target: the MDN's and the flow's samples, and the exact posterior's.",
    );
    ui.horizontal_wrapped(|ui| {
        ui.label("show");
        for &m in methods {
            let slot = super::super::state::manifold::slot(m);
            swatch(ui, solver_color(m));
            ui.checkbox(&mut v.shown[slot], m.key()).on_hover_text(method_label(m));
        }
    });
    if v != *view {
        *view = v;
    }
}

/// The self-motion slider and what it does to the tip.
fn self_motion_row(ui: &mut egui::Ui, target: Point2, s: &mut DriverRows) {
    // A walk a joint limit stopped shows where it stopped, not how far it was asked to go.
    let asked = s.view.self_motion;
    let mut v = match s.answers.walk {
        Some(w) if w.stopped && w.travelled.is_finite() => w.travelled,
        _ => asked,
    };
    let tip = "Walks the driver's answer along the target's solution manifold by this much: the shape changes, the tip stays. A joint limit stops the walk; the slider then shows where.";
    ui.horizontal(|ui| {
        let slider = egui::Slider::new(&mut v, -SELF_MOTION_SPAN..=SELF_MOTION_SPAN).text("self-motion (rad)");
        if ui.add(slider).on_hover_text(tip).changed() {
            s.view.self_motion = v;
        }
        if ui.small_button("0").on_hover_text("back to the driver's answer").clicked() {
            s.view.self_motion = 0.0;
        }
    });
    let plant_miss = Some((s.sim.tip() - target).norm());
    match s.answers.walk {
        Some(w) => ui.small(format!(
            "walked {} rad along the solution manifold{}: the answer's tip is {} off the target; the real arm's tip {}",
            number(Some(w.travelled), 2),
            if w.stopped { format!(" of the {} asked (a joint limit stopped it)", number(Some(asked), 2)) } else { String::new() },
            metres(Some(w.tip_error)),
            metres(plant_miss)
        )),
        None => ui.small(format!(
            "Slide to move the arm along the target's solution manifold: the shape changes, the commanded tip stays. The real arm's tip (thick) is {} off the target.",
            metres(plant_miss)
        )),
    };
}

/// The atlas toggle, its layer, the colour key and the hovered cell's value.
pub(crate) fn atlas_rows(ui: &mut egui::Ui, mut atlas: Mut<ChainAtlasView>, hover: Option<Point2>) {
    let (mut on, mut layer) = (atlas.on, atlas.layer);
    ui.horizontal_wrapped(|ui| {
        ui.checkbox(&mut on, "atlas");
        for l in ChainLayer::ALL {
            ui.selectable_value(&mut layer, l, l.key()).on_hover_text(l.caption());
        }
    });
    if (on, layer) != (atlas.on, atlas.layer) {
        atlas.on = on;
        atlas.layer = layer;
    }
    if !on {
        ui.small("Off (A): the workspace coloured by one method, computed off the frame.");
        return;
    }
    let busy = if atlas.busy { ", updating…" } else { "" };
    if atlas.busy {
        ui.horizontal(|ui| {
            ui.add(egui::Spinner::new());
            ui.small("computing this layer off the frame (the exact spread and the hybrid take a few seconds)");
        });
    }
    match (&atlas.note, atlas.latest.as_deref().filter(|a| a.layer == layer)) {
        (Some(note), _) => {
            ui.small(format!("{note}{busy}"));
        }
        (None, Some(a)) => {
            ui.small(format!(
                "{} ({}×{} cells, {} ms{busy})",
                layer.caption(),
                a.resolution,
                a.resolution,
                number(Some(atlas.compute_ms), 0)
            ));
        }
        (None, None) => {
            ui.small(format!("mapping {}…", layer.key()));
        }
    }
    if let paint::Key::Scale { lo, hi, log, unit } = paint::chain_key(layer) {
        let fmt = |v: f64| if log { metres(Some(v)) } else { format!("{v:.1}") };
        key_bar(ui, &fmt(lo), &format!("{} {unit}", fmt(hi)), |t| paint::chain_scale_color(layer, t));
    }
    let (label, _) = paint::chain_no_value();
    if let (Some(a), Some(p)) = (atlas.latest.as_deref(), hover)
        && let Some(cell) = a.cell_at(p)
    {
        let value = match cell {
            Some(v) if layer == ChainLayer::MseMiss || layer == ChainLayer::MdnResim => metres(Some(v)),
            Some(v) => number(Some(v), 2),
            None => label.to_string(),
        };
        ui.small(format!("under the pointer ({:.2}, {:.2}): {value}", p.x, p.y));
    }
}

/// The width `name` takes in the body font, logical pixels.
fn name_width(ui: &egui::Ui, name: &str) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    ui.fonts_mut(|f| f.layout_no_wrap(name.to_string(), font, egui::Color32::WHITE).size().x)
}

/// One row per method: its colour, name and live figures.
fn readouts(ui: &mut egui::Ui, arm: &Arm, target: Point2, s: &Readouts) {
    let a = &*s.answers;
    let iter = |st: &IterStats| {
        format!(
            "{} µs/solution, {} iterations, {} starts, {} % within {}",
            number(Some(st.seconds * 1e6), 0),
            number(Some(st.iterations), 1),
            number(Some(st.starts), 2),
            number(Some(st.success * 100.0), 0),
            metres(Some(TOLERANCE))
        )
    };
    // One row a method: its swatch and name in a column of their own, its numbers wrapping in
    // what is left of the panel's width.
    let name_width = arm.methods().iter().map(|&m| name_width(ui, method_label(m))).fold(0.0, f32::max);
    for &m in arm.methods() {
        ui.horizontal_top(|ui| {
            swatch(ui, solver_color(m));
            let height = ui.text_style_height(&egui::TextStyle::Body);
            let layout = egui::Layout::left_to_right(egui::Align::Center);
            let name =
                ui.allocate_ui_with_layout(egui::vec2(name_width, height), layout, |ui| ui.label(method_label(m)));
            ui.add_space((name_width - name.response.rect.width()).max(0.0));
            let text = match m {
                SolverId::Learned(HeadKind::Mse) => match &a.mse {
                    Some(x) => {
                        format!("one answer; its tip misses by {}", metres(Some((arm.chain.tip(x) - target).norm())))
                    }
                    None => "training…".into(),
                },
                SolverId::Learned(HeadKind::Mdn) | SolverId::Flow => {
                    let (set, resim, mmd) = match m {
                        SolverId::Learned(HeadKind::Mdn) => (&a.mdn, a.mdn_resim, a.exact.mmd),
                        _ => (&a.flow, a.flow_resim, a.exact.flow_mmd),
                    };
                    match resim {
                        Some(r) => format!(
                            "{} draws, mean tip miss {}; mismatch vs exact {}",
                            set.len() / arm.coords().max(1),
                            metres(Some(r)),
                            number(mmd, 4)
                        ),
                        None => "training…".into(),
                    }
                }
                SolverId::Iterative => iter(&a.dls_stats),
                SolverId::Hybrid if s.nets.get(NetKind::Mdn).is_none() => "waits for the MDN".into(),
                SolverId::Hybrid => format!(
                    "{}, {} % fell back",
                    iter(&a.hybrid_stats),
                    number(Some(a.hybrid_stats.fallbacks * 100.0), 0)
                ),
                SolverId::Exact => {
                    let e = &a.exact;
                    let busy = if a.exact_busy { ", updating…" } else { "" };
                    if e.target.is_some() && e.x.is_empty() {
                        format!("no solution: the target is out of reach{busy}")
                    } else {
                        format!(
                            "spread {} (√tr Σ), ESS {}, {} ms off the frame{busy}",
                            number(Some(e.spread), 2),
                            number(Some(e.ess), 0),
                            number(Some(e.seconds * 1e3), 0)
                        )
                    }
                }
                // A chain's methods are its arm's (`Arm::methods`): none of the closed form's.
                _ => String::new(),
            };
            ui.add(egui::Label::new(egui::RichText::new(text).small()).wrap());
        });
    }
    ui.small(format!(
        "DLS and hybrid: {PER_FRAME} fresh solutions a frame, averaged. Mismatch: the MMD of a learned fan against the exact one (0 when they match; the CLI's `experiment chain` measures it over 1,000 targets)."
    ));
    if a.mmd_history.len() + a.flow_mmd_history.len() > 1 {
        let t0 = a.mmd_history.iter().chain(&a.flow_mmd_history).map(|p| p[0]).fold(f64::INFINITY, f64::min);
        let pts = |h: &std::collections::VecDeque<[f64; 2]>| -> Vec<[f64; 2]> {
            h.iter().map(|p| [p[0] - t0, p[1]]).collect()
        };
        let mmd = vec![
            export::series("MDN", solver_color(SolverId::Learned(HeadKind::Mdn)), pts(&a.mmd_history), false),
            export::series("flow", solver_color(SolverId::Flow), pts(&a.flow_mmd_history), false),
        ];
        ui.small("MDN and flow vs exact mismatch over the last minute (s)");
        let title = "learned fans vs exact posterior mismatch";
        let axes = ("time (s)", "MMD");
        let figure = export::Figure { name: "chain-mmd-vs-exact", title, axes, scale: YScale::Linear, include: &[0.0] };
        export::show(ui, &figure, &mmd, |_| {});
        export::buttons(ui, &figure, &mmd);
    }
}

/// A net's name in the panel.
fn net_label(kind: NetKind) -> &'static str {
    match kind {
        NetKind::Mse => "MSE net",
        NetKind::Mdn => "MDN",
        NetKind::Flow => "flow",
    }
}

/// One net's progress line.
fn run_line(ui: &mut egui::Ui, name: &str, run: &Run) {
    let state = run.state.label();
    ui.small(format!(
        "{name}: {} / {} steps, loss {} — {state}",
        run.steps_done,
        run.total,
        number(run.last_loss(), 3)
    ));
}

/// The nets' training: progress, the hyper-parameters of the next run, loss curves, and starting
/// again.
fn training_section(ui: &mut egui::Ui, s: &mut TrainingRows) {
    for kind in NetKind::ALL {
        run_line(ui, net_label(kind), s.training.run(kind));
    }
    let mut c = s.training.config;
    egui::Grid::new("chain-hyper").num_columns(2).show(ui, |ui| {
        ui.label("steps");
        ui.add(egui::DragValue::new(&mut c.steps).range(100..=100_000).speed(100))
            .on_hover_text("Minibatch updates each net takes when trained again.");
        ui.end_row();
        ui.label("learning rate");
        ui.add(egui::Slider::new(&mut c.lr, 1e-5..=1e-1).logarithmic(true))
            .on_hover_text("The peak learning rate of the next run (the schedule decays from it).");
        ui.end_row();
        ui.label("width");
        ui.add(egui::Slider::new(&mut c.hidden, 8..=512).logarithmic(true)).on_hover_text("Units per hidden layer.");
        ui.end_row();
        ui.label("layers");
        ui.add(egui::Slider::new(&mut c.depth, 1..=6)).on_hover_text("Hidden layers.");
        ui.end_row();
        ui.label("batch");
        ui.add(egui::Slider::new(&mut c.batch, 16..=2048).logarithmic(true)).on_hover_text("Samples per minibatch.");
        ui.end_row();
        ui.label("seed");
        ui.add(egui::DragValue::new(&mut c.seed)).on_hover_text("Seed of the initialisation and the data.");
        ui.end_row();
    });
    ui.small("Sizes and the seed apply when the nets train again.");
    ui.horizontal(|ui| {
        if ui.button("train again").clicked() {
            s.commands.write(ChainTrainCommand::Start);
        }
        if ui.button("stop").clicked() {
            s.commands.write(ChainTrainCommand::Stop);
        }
    });
    if c != s.training.config {
        s.training.config = c;
    }
    let curve = |run: &Run| -> Vec<[f64; 2]> { run.losses.iter().map(|p| [p[0], p[1]]).collect() };
    if s.training.runs.iter().map(|r| r.losses.len()).sum::<usize>() > 1 {
        ui.small("training loss by step (MSE: squared error; MDN and flow: negative log-likelihood)");
        let losses: Vec<_> = NetKind::ALL
            .iter()
            .map(|&k| export::series(net_label(k), solver_color(net_method(k)), curve(s.training.run(k)), false))
            .collect();
        let title = "chain nets' training loss";
        let axes = ("training step", "loss");
        let figure = export::Figure { name: "chain-training-loss", title, axes, scale: YScale::Linear, include: &[] };
        export::show(ui, &figure, &losses, |_| {});
        export::buttons(ui, &figure, &losses);
    }
}

/// The net behind a driver: its own, the MDN for the hybrid (its seeds), none for DLS.
fn driver_net(driver: SolverId) -> Option<NetKind> {
    match driver {
        SolverId::Learned(HeadKind::Mse) => Some(NetKind::Mse),
        SolverId::Learned(HeadKind::Mdn) | SolverId::Hybrid => Some(NetKind::Mdn),
        SolverId::Flow => Some(NetKind::Flow),
        _ => None,
    }
}

/// "Why did it do that?" on a chain: the driver's net's answer at the target, taken apart
/// ([`elbow::explain::chain`]): its components or draws, the training data around the target,
/// and what the classical check (DLS from the answer) makes of it.
fn why_section(ui: &mut egui::Ui, arm: &Arm, target: Point2, s: &mut WhyRows) {
    let driver = s.view.driver;
    let driving = driver_net(driver);
    // A button per net: the driver's own answer for the net that drives (the fan's draw nearest
    // the pose, before any self-motion; the hybrid is explained through its MDN seeds), the
    // net's own answers for the others.
    ui.horizontal_wrapped(|ui| {
        ui.label("explain:");
        for kind in NetKind::ALL {
            let net = s.nets.get(kind);
            let label = if driving == Some(kind) {
                format!("{} (driver)", net_label(kind))
            } else {
                net_label(kind).to_string()
            };
            let button = ui.add_enabled(net.is_some(), egui::Button::new(label));
            if button.clicked()
                && let Some(net) = net
            {
                let own = driving == Some(kind) && driver != SolverId::Hybrid && s.answers.anchor.len() == arm.coords();
                let answer = own.then(|| s.answers.anchor.clone());
                s.why.0 = Some(elbow::explain::chain::explain_net(arm, net, target, TOLERANCE, answer.as_deref()));
            }
        }
    });
    if driving.is_none() {
        ui.small("The driver, DLS, is classical: it reports whether it converged (its row under Solvers).");
    }
    let Some(e) = &s.why.0 else {
        ui.small("Takes the net's answer here apart: its posterior, the training data around the target, and the classical check.");
        return;
    };
    let moved = (Point2::new(e.target[0], e.target[1]) - target).norm();
    if moved > 1e-9 {
        ui.small(format!(
            "(asked at ({:.3}, {:.3}); the target has moved {} since)",
            e.target[0],
            e.target[1],
            metres(Some(moved))
        ));
    }
    for line in &e.summary {
        ui.label(egui::RichText::new(line).small());
    }
    if !e.components.is_empty() {
        egui::Grid::new("chain-why-components").num_columns(3).striped(true).show(ui, |ui| {
            ui.small("weight");
            ui.small("mean's tip miss");
            ui.small("spread");
            ui.end_row();
            for c in &e.components {
                ui.small(number(Some(c.weight), 2));
                ui.small(metres(Some(c.mean_miss)));
                ui.small(number(Some(c.spread), 3));
                ui.end_row();
            }
        });
    }
    ui.small(format!(
        "{} draws: {} % within {}, median miss {}, spread {}; training targets within {}: {} (typical {}); DLS from the answer: {} after {} iteration(s).",
        elbow::explain::chain::DRAWS,
        number(Some(100.0 * e.draws_within), 0),
        metres(Some(TOLERANCE)),
        metres(Some(e.draws_median_miss)),
        number(Some(e.draws_spread), 2),
        metres(Some(e.density.radius)),
        e.density.count,
        number(Some(e.density.typical), 0),
        if e.check.converged { "converged".to_string() } else { format!("{} short", metres(Some(e.check.error))) },
        e.check.iterations
    ));
}
