//! Headless tests of the app's logic: [`MinimalPlugins`] plus [`super::logic_plugin`], no window,
//! renderer or egui. Pointer input is injected as [`PointerDrag`] messages, models are trained
//! synchronously with tiny configurations (or, in one test, by the background workers).

use super::atlas::AtlasView;
use super::format::{metres, number};
use super::keys::shortcuts;
use super::logic_plugin;
use super::state::arm::{DEFAULT_TARGET, Nominal, PlantSettings, Sim, TipHistory};
use super::state::solve::{Driver, EnvelopeStats, Solutions};
use super::state::train::{Models, RunState, TrainCommand, Training, TrainingParams};
use super::state::view::{PointerDrag, Target};
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use elbow::atlas::Layer;
use elbow::envelope::Reason;
use elbow::{HeadKind, Pipeline, Point2, RealArm, SolverId, TrainConfig, Trainer};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// Training parameters small enough to finish in milliseconds.
fn tiny_params() -> TrainingParams {
    TrainingParams {
        autostart: false,
        steps_per_sec: 0.0,
        config: TrainConfig { hidden: 8, depth: 1, batch: 32, steps: 60, data_size: 256, ..TrainConfig::default() },
    }
}

/// The solver rows of the old table, by their new identity.
#[allow(non_snake_case, non_upper_case_globals)]
mod Row {
    use elbow::{HeadKind, SolverId};
    pub(super) const ElbowUp: SolverId = SolverId::ElbowUp;
    pub(super) const ElbowDown: SolverId = SolverId::ElbowDown;
    pub(super) const Average: SolverId = SolverId::Average;
    pub(super) const Iterative: SolverId = SolverId::Iterative;
    pub(super) const Mse: SolverId = SolverId::Learned(HeadKind::Mse);
    pub(super) const Mdn: SolverId = SolverId::Learned(HeadKind::Mdn);
    pub(super) const Mode: SolverId = SolverId::Learned(HeadKind::Mode);
    pub(super) const Residual: SolverId = SolverId::Learned(HeadKind::Residual);
    pub(super) const ALL: [SolverId; SolverId::TWO_LINK_COUNT] = SolverId::TWO_LINK;
}

/// The logic plugins on a fixed 16 ms clock, training off.
fn app() -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
    app.insert_resource(tiny_params());
    app
}

/// A few synchronous training steps of every head.
fn tiny_models() -> Models {
    let mut models = Models::default();
    for head in HeadKind::ALL {
        let cfg =
            TrainConfig { head, steps: 30, data_size: 256, batch: 32, hidden: 8, depth: 1, ..TrainConfig::default() };
        let mut trainer = Trainer::new(cfg).expect("tiny config is valid");
        for _ in 0..30 {
            trainer.step().unwrap();
        }
        models.set(head, Some(trainer.model().clone()));
    }
    models
}

/// How long a test waits for background work before calling it hung: a guard against a hang,
/// not a speed check (every job here ends well within a second on a quiet machine).
const HANG: Duration = Duration::from_secs(600);

/// Runs frames 5 ms apart (about as a window would) until `done` holds, and returns how many it
/// took; fails only if the work hangs ([`HANG`]).
fn frames_until(app: &mut App, what: &str, done: impl Fn(&World) -> bool) -> usize {
    let deadline = Instant::now() + HANG;
    let mut frames = 0;
    while !done(app.world()) {
        assert!(Instant::now() < deadline, "{what}: nothing after {HANG:?}");
        std::thread::sleep(Duration::from_millis(5));
        app.update();
        frames += 1;
    }
    frames
}

fn drag(app: &mut App, x: f64, y: f64) {
    app.world_mut().write_message(PointerDrag(Point2::new(x, y)));
}

#[test]
fn a_drag_moves_the_target_and_stops_the_sweep() {
    let mut app = app();
    app.update();
    assert_eq!(app.world().resource::<Target>().pos, DEFAULT_TARGET);
    app.world_mut().resource_mut::<Target>().sweep = true;
    app.update();
    assert_ne!(app.world().resource::<Target>().pos, DEFAULT_TARGET, "the sweep moves the target");
    drag(&mut app, -0.4, 1.3);
    app.update();
    let target = *app.world().resource::<Target>();
    assert_eq!(target.pos, Point2::new(-0.4, 1.3));
    assert!(!target.sweep, "a drag takes over from the sweep");
    drag(&mut app, f64::NAN, 0.0);
    drag(&mut app, 1e308, -1e308);
    app.update();
    let pos = app.world().resource::<Target>().pos;
    assert!(pos.x.is_finite() && pos.y.is_finite() && pos.norm() <= 20.0 + 1e-9, "{pos:?}");
    // The solvers saw the dragged target.
    let up = app.world().resource::<Solutions>().row(Row::ElbowUp).tip_error;
    assert!(up.is_some_and(|e| e > 1.0), "a far target is missed: {up:?}");
}

#[test]
fn every_solver_answers_every_frame() {
    let mut app = app();
    app.insert_resource(tiny_models());
    app.update();
    let first = app.world().resource::<Solutions>().clone();
    drag(&mut app, -1.2, 0.4);
    app.update();
    let second = app.world().resource::<Solutions>().clone();
    assert_eq!(second.frame, first.frame + 1);
    for row in Row::ALL {
        let (a, b) = (first.row(row), second.row(row));
        assert!(a.pose.is_some() && b.pose.is_some(), "{row:?} has an answer");
        assert!(b.tip_error.is_some(), "{row:?} has a tip error");
        assert_ne!(a.pose, b.pose, "{row:?} follows the target");
    }
    assert!(!second.candidates[HeadKind::Mdn].is_empty());
    assert_ne!(first.candidates[HeadKind::Mdn], second.candidates[HeadKind::Mdn]);
    // The analytic branches reach the new target exactly; their average does not.
    assert!(second.row(Row::ElbowUp).tip_error.unwrap() < 1e-9);
    assert!(second.row(Row::ElbowDown).tip_error.unwrap() < 1e-9);
    assert!(second.row(Row::Average).tip_error.unwrap() > 0.1);
}

#[test]
fn learned_rows_wait_for_a_model_and_the_plant_holds() {
    let mut app = app();
    app.update();
    let s = app.world().resource::<Solutions>().clone();
    for row in [Row::Mse, Row::Mdn, Row::Mode, Row::Residual] {
        assert_eq!(s.row(row).pose, None, "{row:?}");
    }
    assert_eq!(s.command, None, "the default learned driver has no model yet");
    assert!(s.row(Row::Iterative).pose.is_some());
}

#[test]
fn switching_the_head_switches_the_driver() {
    let mut app = app();
    app.insert_resource(tiny_models());
    let drive = |app: &mut App, driver: Driver| {
        *app.world_mut().resource_mut::<Driver>() = driver;
        app.update();
        app.world().resource::<Solutions>().clone()
    };
    let learned = |head| Driver(Pipeline::plain(SolverId::Learned(head)));
    let mse = drive(&mut app, learned(HeadKind::Mse));
    assert_eq!(mse.driver_name, "MSE");
    assert_eq!(mse.command, mse.row(Row::Mse).pose);
    let mdn = drive(&mut app, learned(HeadKind::Mdn));
    assert_eq!(mdn.driver_name, "MDN");
    assert_eq!(mdn.command, mdn.row(Row::Mdn).pose);
    assert_ne!(mse.command, mdn.command);
    let iterative = drive(&mut app, Driver(Pipeline::plain(SolverId::Iterative)));
    assert_eq!(iterative.command, iterative.row(Row::Iterative).pose);
    let analytic = drive(&mut app, Driver(Pipeline::plain(SolverId::Analytic)));
    assert!(
        analytic.command == analytic.row(Row::ElbowUp).pose || analytic.command == analytic.row(Row::ElbowDown).pose
    );
    let enveloped = drive(&mut app, Driver(Pipeline::enveloped(SolverId::Learned(HeadKind::Mse))));
    assert_eq!(enveloped.driver_name, "envelope(MSE)");
}

#[test]
fn the_envelope_catches_the_averaging_trap_and_counts_it() {
    let mut app = app();
    app.insert_resource(tiny_models());
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::enveloped(SolverId::Learned(HeadKind::Mse)));
    for _ in 0..5 {
        app.update();
    }
    let s = app.world().resource::<Solutions>().clone();
    let stats = app.world().resource::<EnvelopeStats>().clone();
    // A barely trained MSE head misses the target; the envelope catches it on every frame, by
    // the first check its answer fails (a jump too far from where the arm is, or the FK miss:
    // which one depends on the tiny net's draw).
    assert!(s.row(Row::Mse).tip_error.is_some_and(|e| e > 0.05), "{:?}", s.row(Row::Mse));
    let reason = s.intervention.expect("the envelope intervenes on a barely trained MSE head");
    assert!(matches!(reason, Reason::FkMiss | Reason::JointStep), "{reason:?}");
    assert_eq!(stats.log.count(reason), 5);
    assert!(stats.flash > 0.0);
    // The fallback is classical: the command reaches the target on the nominal model.
    let arm = elbow::TwoLinkArm::default();
    assert!((arm.tip(s.command.unwrap()) - DEFAULT_TARGET).norm() < 1e-9);
    // The flash fades once the envelope stops intervening.
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(SolverId::Analytic));
    for _ in 0..30 {
        app.update();
    }
    assert_eq!(app.world().resource::<EnvelopeStats>().flash, 0.0);
}

#[test]
fn background_training_delivers_models_and_losses() {
    let mut app = app();
    app.insert_resource(TrainingParams { autostart: true, ..tiny_params() });
    app.update();
    frames_until(&mut app, "training", |w| {
        HeadKind::ALL.iter().all(|&h| w.resource::<Training>().head(h).state == RunState::Finished)
    });
    // The final snapshot arrives before the "finished" report.
    let models = app.world().resource::<Models>();
    let training = app.world().resource::<Training>();
    for head in HeadKind::ALL {
        assert!(models.get(head).is_some(), "{head}");
        assert_eq!(training.head(head).steps_done, 60);
        assert!(!training.head(head).losses.is_empty());
    }
    app.update();
    assert!(app.world().resource::<Solutions>().command.is_some(), "the MDN now drives the plant");
    app.world_mut().write_message(TrainCommand::Reset);
    app.update();
    assert!(app.world().resource::<Models>().get(HeadKind::Mdn).is_none());
    assert_eq!(app.world().resource::<Training>().head(HeadKind::Mdn).state, RunState::Idle);
}

/// Asserts that everything the app shows or acts on is finite.
fn assert_all_finite(app: &App, frame: usize) {
    if let Some(atlas) = &app.world().resource::<AtlasView>().latest {
        for c in &atlas.cells {
            // A tip is never farther from the base than the reach, and a cell's centre never
            // farther than the map's corner: a larger miss (the f64::MAX stand-in for a
            // non-finite one included) is a wrong answer, not a far target.
            let bound = atlas.half_width * std::f64::consts::SQRT_2 + atlas.half_width;
            assert!(c.miss >= 0.0 && c.miss <= bound, "frame {frame}: atlas miss {c:?} over {bound}");
            assert!((0.0..=1.0).contains(&c.silent), "frame {frame}: atlas silent {c:?}");
            assert!(c.confidence.is_none_or(f32::is_finite), "frame {frame}: atlas confidence {c:?}");
        }
    }
    let world = app.world();
    let target = world.resource::<Target>();
    assert!(target.pos.x.is_finite() && target.pos.y.is_finite(), "frame {frame}: target");
    let s = world.resource::<Solutions>();
    for row in Row::ALL {
        let r = s.row(row);
        assert!(r.pose.is_none_or(|p| p.is_finite()), "frame {frame}: {row:?} pose");
        assert!(r.tip_error.is_none_or(f64::is_finite), "frame {frame}: {row:?} tip error");
        for text in [metres(r.tip_error), number(r.tip_error, 3)] {
            assert!(!text.contains("NaN") && !text.contains("inf"), "frame {frame}: {row:?} shows {text}");
        }
    }
    for (head, candidates) in s.candidates.iter() {
        for c in candidates {
            assert!(c.pose.is_finite() && c.weight.is_finite(), "frame {frame}: {head} candidate");
        }
    }
    assert!(s.command.is_none_or(|p| p.is_finite()), "frame {frame}: command");
    let sim = world.resource::<Sim>();
    assert!(sim.measured().is_finite(), "frame {frame}: measured pose");
    if let Some(f) = sim.plant.camera() {
        assert!(f.tip.x.is_finite() && f.tip.y.is_finite() && f.time.is_finite(), "frame {frame}: camera {f:?}");
    }
    for p in sim.plant.joints() {
        assert!(p.x.is_finite() && p.y.is_finite(), "frame {frame}: plant joints");
    }
    assert!(world.resource::<TipHistory>().0.iter().all(|p| p[0].is_finite() && p[1].is_finite()));
    assert!(world.resource::<EnvelopeStats>().flash.is_finite());
    // The table shows what each answer does: its tip error is the miss of its pose on the arm
    // the solver is judged on (the real arm for heads fitted to it), this frame.
    let nominal = world.resource::<Nominal>().0;
    let models = world.resource::<Models>();
    for row in Row::ALL {
        let r = s.row(row);
        let Some(pose) = r.pose else { continue };
        let judged = row.head().and_then(|h| models.get(h)).map_or(RealArm::ideal(nominal), |m| m.judged_on());
        let miss = judged.miss(pose, target.pos);
        assert!(
            r.tip_error.is_some_and(|e| (e - miss).abs() <= 1e-9 * (1.0 + miss)),
            "frame {frame}: {row:?} shows {:?} for a pose that misses by {miss}",
            r.tip_error
        );
    }
}

/// A random value that is sometimes hostile: NaN, infinite, huge or zero.
fn hostile(rng: &mut ChaCha8Rng, typical: f64) -> f64 {
    match rng.random_range(0..20) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => -1e300,
        3 => 0.0,
        _ => rng.random_range(-typical..=typical),
    }
}

#[test]
fn ten_thousand_random_frames_never_panic_or_show_nan() {
    let mut app = app();
    app.insert_resource(tiny_models());
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for frame in 0..10_000 {
        match rng.random_range(0..100) {
            0..40 => {
                let (x, y) = (hostile(&mut rng, 3.0), hostile(&mut rng, 3.0));
                drag(&mut app, x, y);
            }
            40..45 => drag(&mut app, 0.0, 0.0),
            45..50 => {
                let mut target = app.world_mut().resource_mut::<Target>();
                target.sweep = !target.sweep;
                target.speed = hostile(&mut rng, 5.0);
            }
            50..56 => {
                let solver = SolverId::TWO_LINK[rng.random_range(0..SolverId::TWO_LINK_COUNT)];
                let envelope = rng.random::<bool>();
                *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline { solver, envelope });
            }
            56..60 => {
                let settings = PlantSettings {
                    noise_std: hostile(&mut rng, 0.05),
                    backlash: hostile(&mut rng, 0.1),
                    length_error: [hostile(&mut rng, 0.3), hostile(&mut rng, 0.3)],
                    joint_offset: [hostile(&mut rng, 0.3), hostile(&mut rng, 0.3)],
                    frictionloss: hostile(&mut rng, 5.0),
                    flex: hostile(&mut rng, 0.2),
                    latency_ms: hostile(&mut rng, 1e6),
                    camera_noise: hostile(&mut rng, 50.0),
                    camera_offset: [hostile(&mut rng, 0.1), hostile(&mut rng, 0.1)],
                    camera_fps: hostile(&mut rng, 1e6),
                    payload: hostile(&mut rng, 1.0),
                    servo_kp: hostile(&mut rng, 5000.0),
                };
                *app.world_mut().resource_mut::<PlantSettings>() = settings;
            }
            60 => {
                let command = match rng.random_range(0..5) {
                    0 => TrainCommand::Start,
                    1 => TrainCommand::Pause,
                    2 => TrainCommand::Reset,
                    3 => TrainCommand::SetLr(hostile(&mut rng, 1.0) as f32),
                    _ => TrainCommand::SetRate(hostile(&mut rng, 1e4)),
                };
                app.world_mut().write_message(command);
            }
            61 => {
                // Bring the models back after a reset, so the learned paths keep running.
                app.insert_resource(tiny_models());
            }
            62 => {
                let mut view = app.world_mut().resource_mut::<AtlasView>();
                view.on = rng.random::<bool>();
                view.follow_driver = rng.random::<bool>();
                view.solver = SolverId::TWO_LINK[rng.random_range(0..SolverId::TWO_LINK_COUNT)];
                view.layer = Layer::ALL[rng.random_range(0..Layer::ALL.len())];
                view.resolution = rng.random_range(0..64);
            }
            _ => {}
        }
        app.update();
        assert_all_finite(&app, frame);
    }
}

#[test]
fn one_identity_drives_the_table_the_legend_and_the_degradation_lineup() {
    let mut app = app();
    app.update();
    let table = super::solvers::table_rows(app.world().resource::<Solutions>());
    let legend: Vec<SolverId> = super::panel::legend_rows().collect();
    let lineup: Vec<SolverId> =
        Pipeline::lineup(&SolverId::TWO_LINK).into_iter().filter(|p| !p.envelope).map(|p| p.solver).collect();
    assert_eq!(table, SolverId::TWO_LINK.to_vec());
    assert_eq!(legend, table);
    assert_eq!(lineup, table);
    // Every solver but the reference can drive, and every head can be enveloped.
    let drivers: Vec<SolverId> = super::panel::driver_choices().collect();
    assert_eq!(drivers.len(), SolverId::TWO_LINK_COUNT - 1);
    assert!(
        HeadKind::ALL
            .iter()
            .all(|&h| Pipeline::lineup(&SolverId::TWO_LINK).contains(&Pipeline::enveloped(SolverId::Learned(h))))
    );
}

#[test]
fn reset_joins_the_training_threads() {
    let mut app = app();
    app.insert_resource(TrainingParams { autostart: true, steps_per_sec: 20.0, ..tiny_params() });
    app.update();
    app.update();
    assert_eq!(app.world().resource::<Training>().head(HeadKind::Mdn).state, RunState::Running);
    // Paused workers wait on their control channel with no timeout at all: the reset returns
    // only because dropping a worker wakes it before joining it (else this test hangs; it
    // cannot pass slowly).
    app.world_mut().write_message(TrainCommand::Pause);
    app.update();
    assert_eq!(app.world().resource::<Training>().head(HeadKind::Mdn).state, RunState::Paused);
    app.world_mut().write_message(TrainCommand::Reset);
    app.update();
    for _ in 0..10 {
        app.update();
    }
    let (training, models) = (app.world().resource::<Training>(), app.world().resource::<Models>());
    for head in HeadKind::ALL {
        // Idle, and nothing of the old run comes back.
        assert_eq!(training.head(head), &super::state::train::Run::default(), "{head}");
        assert!(models.get(head).is_none(), "{head}");
    }
}

#[test]
fn the_atlas_is_computed_off_the_frame_and_follows_the_driver() {
    let mut app = app();
    app.insert_resource(tiny_models());
    {
        // The heaviest map the app makes: 512 x 512 cells with 16 noise samples each.
        let mut view = app.world_mut().resource_mut::<AtlasView>();
        view.resolution = 512;
        view.layer = Layer::Silent;
    }
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(SolverId::Learned(HeadKind::Mse)));
    app.update();
    let view = app.world().resource::<AtlasView>();
    assert!(view.busy && view.latest.is_none(), "the first frame only starts the map");
    // Frames go on while the map is computed: a frame that waited for it would bring it in the
    // very next frame.
    let frames = frames_until(&mut app, "atlas", |w| w.resource::<AtlasView>().latest.is_some());
    assert!(frames >= 3, "the map came {frames} frame(s) after it started: a frame waited for it");
    let atlas = app.world().resource::<AtlasView>().latest.clone().unwrap();
    assert_eq!((atlas.solver, atlas.resolution, atlas.cells.len()), (SolverId::Learned(HeadKind::Mse), 512, 512 * 512));
    assert_eq!(atlas.samples, super::atlas::SILENT_SAMPLES);
    // A new map is started (another size); the driver changes while it is computed: that map is
    // no longer wanted and is dropped, so the next map shown is the new driver's.
    app.world_mut().resource_mut::<AtlasView>().resolution = 500;
    app.update();
    assert!(app.world().resource::<AtlasView>().busy);
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(SolverId::Analytic));
    let generation = app.world().resource::<AtlasView>().generation;
    frames_until(&mut app, "analytic atlas", |w| w.resource::<AtlasView>().generation > generation);
    let view = app.world().resource::<AtlasView>();
    let atlas = view.latest.clone().unwrap();
    assert_eq!((view.generation, atlas.solver, atlas.resolution), (generation + 1, SolverId::Analytic, 500));
    // A solver without a mixture has no confidence, rather than a confidence of 1.
    assert!(atlas.cells.iter().all(|c| c.confidence.is_none()));
}

#[test]
fn lengths_on_the_command_line_make_the_nominal_arm() {
    use clap::Parser;
    let cli = crate::cli::Cli::try_parse_from(["elbow", "--lengths", "0.7,0.4"]).unwrap();
    let crate::cli::AppArm::TwoLink(arm) = cli.app_lab().unwrap() else { panic!("two lengths: the two-link lab") };
    assert_eq!(arm, elbow::TwoLinkArm::new(0.7, 0.4).unwrap());
    let mut app = App::new();
    super::on_arm(&mut app, arm);
    app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
    app.insert_resource(tiny_params());
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(SolverId::Analytic));
    app.update();
    assert_eq!(app.world().resource::<Nominal>().0, arm);
    // What is built at start is built for this arm: the target starts inside its annulus (where
    // the default arm's starting target is out of reach), the solvers reach it, and the plant
    // rests within this arm's reach.
    let target = app.world().resource::<Target>().pos;
    assert!(arm.is_reachable(target) && !arm.is_reachable(DEFAULT_TARGET), "{target:?}");
    let tip_error = app.world().resource::<Solutions>().row(Row::ElbowDown).tip_error;
    assert!(tip_error.is_some_and(|e| e < 1e-9), "{tip_error:?}");
    let plant_tip = app.world().resource::<Sim>().plant.tip().norm();
    assert!(plant_tip <= arm.reach() * 1.25, "the plant's tip is {plant_tip} m from the base");
    // The atlas maps this arm's workspace.
    frames_until(&mut app, "atlas", |w| w.resource::<AtlasView>().latest.is_some());
    let atlas = app.world().resource::<AtlasView>().latest.clone().unwrap();
    let margin = elbow::atlas::AtlasConfig::default().margin;
    assert!((atlas.half_width - arm.reach() * (1.0 + margin)).abs() < 1e-12, "{}", atlas.half_width);
}

#[test]
fn one_shortcut_table_picks_the_drivers_and_toggles_of_the_lab_in_force() {
    let mut app = app();
    app.insert_resource(ButtonInput::<KeyCode>::default());
    app.update();
    let press = |app: &mut App, key: KeyCode| {
        app.world_mut().resource_mut::<ButtonInput<KeyCode>>().press(key);
        app.update();
        let mut input = app.world_mut().resource_mut::<ButtonInput<KeyCode>>();
        input.release(key);
        input.clear();
    };
    let table = shortcuts(&super::state::arm::Lab::default());
    for (i, head) in HeadKind::ALL.into_iter().enumerate() {
        let (key, label, _) = *table.iter().find(|s| s.2 == super::keys::Shortcut::Head(head)).unwrap();
        assert_eq!(label, (i + 1).to_string(), "the n-th head of the registry has key n");
        press(&mut app, key);
        assert_eq!(app.world().resource::<Driver>().0.solver, SolverId::Learned(head));
    }
    let envelope = app.world().resource::<Driver>().0.envelope;
    press(&mut app, KeyCode::KeyE);
    assert_ne!(app.world().resource::<Driver>().0.envelope, envelope);
    let on = app.world().resource::<AtlasView>().on;
    press(&mut app, KeyCode::KeyA);
    assert_ne!(app.world().resource::<AtlasView>().on, on);
    let layer = app.world().resource::<AtlasView>().layer;
    press(&mut app, KeyCode::KeyL);
    assert_ne!(app.world().resource::<AtlasView>().layer, layer);

    // The same table on a chain: the number keys pick its drivers in registry order, A and L
    // act on the chain's atlas, and there is no envelope key.
    use super::manifold_atlas::ChainAtlasView;
    use super::state::manifold::ChainView;
    use elbow::arm::ArmKind;
    let rail3 = ArmKind::Rail3.arm();
    let lab = super::state::arm::Lab(rail3.clone());
    let table = shortcuts(&lab);
    assert!(table.iter().all(|s| s.2 != super::keys::Shortcut::Envelope), "no envelope on a chain");
    *app.world_mut().resource_mut::<super::state::arm::Lab>() = lab;
    app.update();
    let solver = app.world().resource::<Driver>().0.solver;
    for (key, label, shortcut) in table.iter().filter(|s| matches!(s.2, super::keys::Shortcut::Method(_))) {
        let super::keys::Shortcut::Method(m) = *shortcut else { unreachable!() };
        press(&mut app, *key);
        assert_eq!(app.world().resource::<ChainView>().driver, m, "key {label}");
    }
    assert_eq!(
        table[0].2,
        super::keys::Shortcut::Method(SolverId::Learned(HeadKind::Mse)),
        "1 is the registry's first driver"
    );
    assert_eq!(app.world().resource::<Driver>().0.solver, solver, "the two-link driver is left alone");
    let on = app.world().resource::<ChainAtlasView>().on;
    press(&mut app, KeyCode::KeyA);
    assert_ne!(app.world().resource::<ChainAtlasView>().on, on, "A: the chain's atlas");
    let layer = app.world().resource::<ChainAtlasView>().layer;
    press(&mut app, KeyCode::KeyL);
    assert_ne!(app.world().resource::<ChainAtlasView>().layer, layer);
}

#[test]
fn a_loaded_model_replaces_its_head_and_a_bad_file_changes_nothing() {
    use super::state::train::{LoadModel, ModelFile};
    let dir = std::env::temp_dir().join(format!("elbow-app-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("mdn.json");
    let model = tiny_models().get(HeadKind::Mdn).unwrap().clone();
    model.save(&good).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{ not a model").unwrap();

    let mut app = app();
    app.update();
    app.world_mut().write_message(LoadModel(bad.clone()));
    app.update();
    assert!(matches!(app.world().resource::<ModelFile>().outcome, Some(Err(_))));
    assert!(app.world().resource::<Models>().get(HeadKind::Mdn).is_none());

    app.world_mut().write_message(LoadModel(good));
    app.update();
    assert!(matches!(app.world().resource::<ModelFile>().outcome, Some(Ok(_))));
    assert_eq!(app.world().resource::<Models>().get(HeadKind::Mdn), Some(&model));
    assert!(matches!(app.world().resource::<Training>().head(HeadKind::Mdn).state, RunState::Loaded(_)));
    // Starting training leaves the loaded head alone.
    app.world_mut().write_message(TrainCommand::Start);
    app.update();
    assert!(matches!(app.world().resource::<Training>().head(HeadKind::Mdn).state, RunState::Loaded(_)));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_live_sweep_runs_off_the_frame_and_follows_the_sliders() {
    use super::sweep::{LiveSweep, SweepChannel};
    use elbow::plant::channel::Channel;
    use elbow::{Pipeline, SolverId};
    let mut app = app();
    app.insert_resource(tiny_models());
    let wait = |app: &mut App, ok: &dyn Fn(&LiveSweep) -> bool| frames_until(app, "sweep", |w| ok(w.resource()));
    // Frames go on while the sweep runs: a frame that waited for it would bring it in the very
    // next frame.
    let frames = wait(&mut app, &|s| s.latest.is_some());
    assert!(frames >= 3, "the sweep came {frames} frame(s) after it started: a frame waited for it");
    let (channel, curves) = app.world().resource::<LiveSweep>().latest.clone().unwrap();
    assert_eq!(channel, SweepChannel::of(Channel::Encoder).unwrap());
    // The panel says how long it took in seconds (or, if the next has started, how far it is).
    let status = app.world().resource::<LiveSweep>().status.clone();
    assert!(status.starts_with("took ") || status.starts_with("running"), "{status}");
    assert!(status.contains(" s"), "{status}");
    let pipelines = elbow::experiments::degradation::pipelines();
    assert_eq!(curves.len(), pipelines.len());
    for c in curves.iter() {
        assert!(c.error.len() >= 6 && c.error.iter().all(|p| p[1].is_finite() && p[1] >= 0.0), "{c:?}");
        assert!(c.silent.iter().all(|p| (0.0..=1.0).contains(&p[1])), "{c:?}");
    }
    // The slider's value becomes one of the levels; the other channel can be swept too.
    app.world_mut().resource_mut::<PlantSettings>().noise_std = 0.0123;
    wait(&mut app, &|s| {
        s.latest.as_ref().is_some_and(|(_, c)| c[0].error.iter().any(|p| (p[0] - 0.0123).abs() < 1e-9))
    });
    app.world_mut().resource_mut::<LiveSweep>().channel = SweepChannel::of(Channel::Backlash).unwrap();
    wait(&mut app, &|s| s.latest.as_ref().is_some_and(|(c, _)| *c == SweepChannel::of(Channel::Backlash).unwrap()));
    // The reality-gap channels: friction sweeps in the slider's N m (its value is a level),
    // flex misses are silent on the encoders, and the camera's noise shows as false alarms.
    app.world_mut().resource_mut::<PlantSettings>().frictionloss = 0.0071;
    app.world_mut().resource_mut::<LiveSweep>().channel = SweepChannel::of(Channel::Friction).unwrap();
    wait(&mut app, &|s| {
        s.latest.as_ref().is_some_and(|(c, curves)| {
            *c == SweepChannel::of(Channel::Friction).unwrap()
                && curves[0].error.iter().any(|p| (p[0] - 0.0071).abs() < 1e-9)
        })
    });
    let analytic = |s: &LiveSweep| s.latest.as_ref().map(|(c, curves)| (*c, curves[0].clone()));
    app.world_mut().resource_mut::<LiveSweep>().channel = SweepChannel::of(Channel::Flex).unwrap();
    wait(&mut app, &|s| analytic(s).is_some_and(|(c, _)| c == SweepChannel::of(Channel::Flex).unwrap()));
    let (_, flex) = analytic(app.world().resource()).unwrap();
    assert_eq!(flex.pipeline, Pipeline::plain(SolverId::Analytic));
    let last = |v: &[[f64; 2]]| v.last().unwrap()[1];
    assert!(last(&flex.silent) > 0.5, "the encoders cannot see the droop: {flex:?}");
    app.world_mut().resource_mut::<LiveSweep>().channel = SweepChannel::of(Channel::CameraNoise).unwrap();
    wait(&mut app, &|s| analytic(s).is_some_and(|(c, _)| c == SweepChannel::of(Channel::CameraNoise).unwrap()));
    let (_, noise) = analytic(app.world().resource()).unwrap();
    assert!(noise.false_alarm[0][1] < 0.01 && last(&noise.false_alarm) > 0.02, "{noise:?}");
    assert!(noise.error.iter().all(|p| p[1] == noise.error[0][1]), "the camera moves no arm: {noise:?}");
}

#[test]
fn the_app_refuses_lengths_its_mismatch_sliders_would_break() {
    assert!(super::check_arm(&elbow::TwoLinkArm::default()).is_ok());
    // At the smallest length the core accepts, a 20 % shorter link is no arm: the app must refuse
    // to open rather than let its plant fall back to the nominal arm.
    let tiny = elbow::TwoLinkArm::new(1e-6, 1e-6).unwrap();
    let err = super::check_arm(&tiny).unwrap_err();
    assert!(err.contains("no room for the app's link-length sliders"), "{err}");
    // Likewise at the largest ratio of link lengths.
    let ratio = elbow::TwoLinkArm::new(1.0, 1.2e-4).unwrap();
    assert!(super::check_arm(&ratio).is_err());
}

#[test]
fn the_reality_gap_sliders_reach_the_plant_and_the_camera_sees_the_offset() {
    let mut app = app();
    app.update();
    let settings = PlantSettings {
        frictionloss: 0.01,
        flex: 0.04,
        latency_ms: 30.0,
        camera_noise: 0.0,
        camera_offset: [0.02, -0.01],
        camera_fps: 60.0,
        payload: 0.3,
        servo_kp: 200.0,
        ..PlantSettings::IDEAL
    };
    *app.world_mut().resource_mut::<PlantSettings>() = settings;
    for _ in 0..60 {
        app.update();
    }
    let sim = app.world().resource::<Sim>();
    let cfg = sim.plant.config();
    assert_eq!((cfg.servo.frictionloss, cfg.flex, cfg.latency_ms), (0.01, 0.04, 30.0));
    assert_eq!(cfg.camera.fps, 60.0);
    assert_eq!((cfg.payload, cfg.servo.kp), (0.3, 200.0));
    // The camera reports the tip shifted by its calibration offset (no pixel noise here); the
    // frame may be up to one frame period old, and the arm is at rest by now.
    let frame = sim.plant.camera().expect("the camera takes frames");
    let seen = frame.tip - sim.plant.tip();
    assert!((seen - Point2::new(0.02, -0.01)).norm() < 1e-3, "{seen:?}");
    // Hostile values are clamped into the sliders' ranges before they reach the plant.
    *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings {
        latency_ms: f64::MAX,
        camera_fps: f64::INFINITY,
        flex: f64::NAN,
        payload: 1e9,
        servo_kp: f64::NAN,
        ..settings
    };
    app.update();
    let cfg = *app.world().resource::<Sim>().plant.config();
    assert_eq!((cfg.latency_ms, cfg.flex), (500.0, 0.0));
    assert_eq!((cfg.payload, cfg.servo.kp), (0.5, elbow::plant::dynamics::Servo::STS3215.kp));
    assert!(cfg.camera.fps <= 120.0);
}

#[test]
fn every_lesson_opens_its_scene_from_a_messy_state_in_a_frame_or_two() {
    use super::lessons::{ActiveLesson, OpenLesson};
    use super::state::arm::Lab;
    use super::state::manifold::ChainView;
    use super::state::view::CameraView;
    use super::sweep::LiveSweep;
    use elbow::lessons::{Lesson, SceneArm};
    let mut app = app();
    // The core's training defaults, short: only a lesson with its own nets retrains.
    app.world_mut().resource_mut::<TrainingParams>().config = TrainConfig { steps: 30, ..TrainConfig::default() };
    app.update();
    let home = app.world().resource::<Nominal>().0;
    // The last one comes back from a chain to the two-link arm, whose switch resets the target.
    for lesson in Lesson::ALL.into_iter().chain([Lesson::JointsRegion]) {
        // Mess the state up first: every knob the lessons set, away from their values.
        *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings {
            noise_std: 0.04,
            backlash: 0.09,
            flex: 0.09,
            frictionloss: 0.029,
            payload: 0.4,
            servo_kp: 500.0,
            ..PlantSettings::default()
        };
        app.world_mut().resource_mut::<Driver>().0 = Pipeline::plain(SolverId::Iterative);
        app.world_mut().resource_mut::<AtlasView>().layer = Layer::Confidence;
        app.world_mut().resource_mut::<CameraView>().0 = !lesson.scene().camera_view;
        app.world_mut().write_message(OpenLesson(lesson));
        app.update();
        app.update();
        let world = app.world();
        assert_eq!(world.resource::<ActiveLesson>().0, Some(lesson), "{lesson}");
        let scene = lesson.scene();
        match scene.arm {
            SceneArm::TwoLink { driver, envelope, arm } => {
                assert_eq!(world.resource::<Lab>().closed_form(), Some(arm.unwrap_or(home)), "{lesson}");
                assert_eq!(world.resource::<Nominal>().0, arm.unwrap_or(home), "{lesson}");
                let nets = world.resource::<TrainingParams>().config;
                assert_eq!(nets, TrainConfig { steps: 30, ..scene.training.unwrap_or_default() }, "{lesson}");
                if arm.is_some() {
                    // Its own arm: every head retrains for it.
                    let state = &world.resource::<Training>().0[HeadKind::Mdn].state;
                    assert!(matches!(state, RunState::Running | RunState::Finished), "{lesson}: {state:?}");
                }
                assert_eq!(world.resource::<Driver>().0, Pipeline { solver: driver, envelope }, "{lesson}");
                let plant = world.resource::<PlantSettings>();
                let p = scene.plant;
                use elbow::plant::channel::Channel;
                for c in [
                    Channel::Encoder,
                    Channel::Backlash,
                    Channel::Friction,
                    Channel::Flex,
                    Channel::Latency,
                    Channel::Payload,
                ] {
                    assert_eq!(plant.level(c), Some(p[c]), "{lesson}: {c:?}");
                }
                assert_eq!(plant.servo_kp, scene.kp.unwrap_or(elbow::plant::dynamics::Servo::STS3215.kp), "{lesson}");
                assert_eq!(plant.length_error != [0.0; 2], p[Channel::Mismatch] > 0.0, "{lesson}");
                assert_eq!(world.resource::<AtlasView>().layer, scene.layer, "{lesson}");
                assert_eq!(world.resource::<LiveSweep>().channel.channel(), scene.sweep, "{lesson}");
                assert_eq!(world.resource::<CameraView>().0, scene.camera_view, "{lesson}");
                let reach = world.resource::<Nominal>().0.reach();
                assert!((world.resource::<Target>().pos - scene.target * reach).norm() < 1e-9, "{lesson}");
            }
            SceneArm::Chain { arm, driver, shown } => {
                assert_eq!(world.resource::<Lab>().chain().and_then(|a| a.kind), Some(arm), "{lesson}");
                let view = world.resource::<ChainView>();
                assert_eq!(view.driver, driver, "{lesson}");
                for (i, m) in elbow::lineup::SolverId::CHAIN.into_iter().enumerate() {
                    assert_eq!(view.shown[i], shown.contains(&m) || m == driver, "{lesson}: {m:?}");
                }
                // The scene's plant and target, from the ideal plant: the gravity lesson's payload
                // and soft servos reach the chain's plant itself.
                use elbow::plant::channel::Channel;
                let plant = world.resource::<PlantSettings>();
                assert_eq!(plant.length_error, [0.0; 2], "{lesson}");
                assert_eq!((plant.noise_std, plant.backlash, plant.flex), (0.0, 0.0, 0.0), "{lesson}");
                assert_eq!(plant.level(Channel::Payload), Some(scene.plant[Channel::Payload]), "{lesson}");
                let kp = scene.kp.unwrap_or(elbow::plant::dynamics::Servo::STS3215.kp);
                assert_eq!(plant.servo_kp, kp, "{lesson}");
                let reach = arm.arm().chain.reach();
                assert!((world.resource::<Target>().pos - scene.target * reach).norm() < 1e-9, "{lesson}");
                let cfg = world.resource::<Sim>().plant.config();
                assert_eq!((cfg.payload, cfg.servo.kp), (scene.plant[Channel::Payload], kp), "{lesson}");
                assert_eq!(cfg.gravity, arm.arm().vertical(), "{lesson}");
            }
        }
    }
}

#[test]
fn the_claims_board_judges_the_scene_on_screen_off_the_frame() {
    use super::claims::{ClaimsBoard, config};
    use elbow::experiments::degradation::{Channel, Verdict};
    let mut app = app();
    app.insert_resource(tiny_models());
    *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings { flex: 0.05, ..PlantSettings::IDEAL };
    let frames = frames_until(&mut app, "claims", |w| w.resource::<ClaimsBoard>().latest.is_some());
    assert!(frames >= 3, "the board came {frames} frame(s) after it started: a frame waited for it");
    let (claims, scene) = app.world().resource::<ClaimsBoard>().latest.clone().unwrap();
    assert!(scene.contains("flex") && !scene.contains("encoder"), "{scene}");
    let claim = |key: &str| claims.iter().find(|c| c.key == key).unwrap_or_else(|| panic!("{key}")).clone();
    // Flex is invisible to the encoders and seen by the camera: the verdicts say so.
    assert_eq!(claim("unseen-by-encoders-silent").verdict, Verdict::Holds);
    assert_eq!(claim("classical-reports").case("flex").and_then(|c| c.passes), Some(false));
    assert_eq!(claim("classical-reports-on-camera").case("flex").and_then(|c| c.passes), Some(true));
    // A slider moves: the board judges the new scene.
    app.world_mut().resource_mut::<PlantSettings>().noise_std = 0.03;
    frames_until(&mut app, "claims with encoder noise", |w| {
        w.resource::<ClaimsBoard>().latest.as_ref().is_some_and(|(_, s)| s.contains("encoder"))
    });
    let (cfg, _) = config(
        &app.world().resource::<PlantSettings>().clone(),
        &elbow::arm::Arm::two_link(app.world().resource::<Nominal>().0),
    );
    assert_eq!(cfg.levels.of(Channel::Encoder), [0.0, 0.03]);
    assert_eq!(cfg.levels.of(Channel::Flex), [0.0, 0.05]);
    assert_eq!(cfg.levels.of(Channel::Combined), [0.0, 1.0]);
    assert_eq!(cfg.levels.of(Channel::Backlash), [0.0]);
}

#[test]
fn a_saved_view_restores_the_scene_and_a_bad_one_changes_nothing() {
    use super::scene_file::{LoadView, SaveView, ViewFileField};
    use super::state::view::CameraView;
    let dir = std::env::temp_dir().join(format!("elbow-view-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("view.json");
    let mut app = app();
    app.update();
    let scene = PlantSettings { noise_std: 0.017, flex: 0.04, latency_ms: 30.0, ..PlantSettings::IDEAL };
    *app.world_mut().resource_mut::<PlantSettings>() = scene;
    app.world_mut().resource_mut::<Driver>().0 = Pipeline::enveloped(SolverId::Learned(HeadKind::Mode));
    app.world_mut().resource_mut::<AtlasView>().layer = Layer::Silent;
    app.world_mut().resource_mut::<CameraView>().0 = true;
    *app.world_mut().resource_mut::<Target>() = Target::at(Point2::new(-0.4, 1.1));
    app.world_mut().write_message(SaveView(path.clone()));
    app.update();
    let outcome = app.world().resource::<ViewFileField>().outcome.clone();
    assert!(matches!(outcome, Some(Ok(_))), "{outcome:?}");
    // Mess everything up, then restore.
    *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings::default();
    app.world_mut().resource_mut::<Driver>().0 = Pipeline::plain(SolverId::Analytic);
    app.world_mut().resource_mut::<AtlasView>().layer = Layer::Miss;
    app.world_mut().resource_mut::<CameraView>().0 = false;
    *app.world_mut().resource_mut::<Target>() = Target::at(Point2::new(1.0, 0.0));
    app.world_mut().write_message(LoadView(path.clone()));
    app.update();
    let world = app.world();
    assert_eq!(*world.resource::<PlantSettings>(), scene);
    assert_eq!(world.resource::<Driver>().0, Pipeline::enveloped(SolverId::Learned(HeadKind::Mode)));
    assert_eq!(world.resource::<AtlasView>().layer, Layer::Silent);
    assert!(world.resource::<CameraView>().0);
    assert!((world.resource::<Target>().pos - Point2::new(-0.4, 1.1)).norm() < 1e-12);
    // An older version, another arm, and garbage: one sentence each, nothing changes.
    let text = std::fs::read_to_string(&path).expect("saved");
    let cases = [
        ("old.json", text.replace("\"version\": 1", "\"version\": 0"), "version 0; this Elbow reads version 1"),
        ("arm.json", text.replace("\"l1\": 1.0", "\"l1\": 1.5"), "is a view of the arm"),
        ("bad-arm.json", text.replace("\"l1\": 1.0", "\"l1\": -1.0"), "its field `arm` is not a valid arm"),
        ("junk.json", "{\"format\": \"elbow-view\"".to_string(), "is not a view file"),
    ];
    for (name, body, says) in cases {
        let bad = dir.join(name);
        std::fs::write(&bad, body).expect("write");
        *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings::default();
        app.world_mut().write_message(LoadView(bad));
        app.update();
        let outcome = app.world().resource::<ViewFileField>().outcome.clone();
        assert!(matches!(&outcome, Some(Err(why)) if why.contains(says)), "{name}: {outcome:?}");
        assert_eq!(*app.world().resource::<PlantSettings>(), PlantSettings::default(), "{name}");
    }
    // A save that cannot be written leaves nothing behind.
    let nowhere = dir.join("missing-dir").join("view.json");
    app.world_mut().write_message(SaveView(nowhere.clone()));
    app.update();
    assert!(matches!(app.world().resource::<ViewFileField>().outcome, Some(Err(_))));
    assert!(!nowhere.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// An MDN trained well enough that each component sits on one elbow branch (about a second).
fn trained_mdn() -> Models {
    let cfg = TrainConfig { head: HeadKind::Mdn, steps: 1500, data_size: 4000, hidden: 32, ..TrainConfig::default() };
    let mut trainer = Trainer::new(cfg).expect("valid config");
    for _ in 0..cfg.steps {
        trainer.step().unwrap();
    }
    let mut models = Models::default();
    models.set(HeadKind::Mdn, Some(trainer.model().clone()));
    models
}

#[test]
fn the_mdn_driver_keeps_its_branch_round_a_dragged_loop() {
    use super::state::solve::BranchLog;
    use std::f64::consts::TAU;
    let mut app = app();
    app.insert_resource(trained_mdn());
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(Row::Mdn));
    let mut weights = Vec::new();
    for k in 0..=1200 {
        // Round the base on a wavy loop between 0.5 and 1.7 m, a few mm a frame, where both
        // branches are always valid.
        let a = k as f64 * TAU / 1200.0;
        let r = 1.1 + 0.6 * (5.0 * a).sin();
        drag(&mut app, r * a.cos(), r * a.sin());
        app.update();
        let s = app.world().resource::<Solutions>();
        let c = &s.candidates[HeadKind::Mdn];
        // Candidates come likeliest first: the weight gap, and the branch of the heavier one.
        weights.push((c[0].weight - c[1].weight, elbow::ElbowMode::of(c[0].pose)));
        assert!(s.row(Row::Mdn).tip_error.is_some_and(|e| e < 0.1), "the MDN answers: {:?}", s.row(Row::Mdn));
    }
    let close = weights.iter().filter(|w| w.0 < 0.2).count();
    let crossings = weights.windows(2).filter(|w| w[0].1 != w[1].1).count();
    assert!(
        close > 600 && crossings > 0,
        "the weights sit near one half and cross: {close} of 1201, {crossings} crossings"
    );
    let log = app.world().resource::<BranchLog>();
    assert_eq!(log.count, 0, "no branch change where both branches stay valid: {:?}", log.latest);
}

#[test]
fn a_far_click_keeps_the_branch_the_model_offers() {
    // Clicks across the base and back: after each, the other branch's answer is nearer the arm's
    // pose than its own branch's, but the MDN offers both at about one half.
    use super::state::solve::BranchLog;
    use elbow::ElbowMode;
    let mut app = app();
    app.insert_resource(trained_mdn());
    *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(Row::Mdn));
    let (a, b) = (Point2::new(1.2, 0.2), Point2::new(-1.2, 0.2));
    drag(&mut app, a.x, a.y);
    for _ in 0..300 {
        app.update();
    }
    let mut traps = 0;
    for (k, t) in [b, a, b, a].into_iter().enumerate() {
        let before = app.world().resource::<Sim>().measured();
        drag(&mut app, t.x, t.y);
        app.update();
        let s = app.world().resource::<Solutions>();
        let c = &s.candidates[HeadKind::Mdn];
        let own = c.iter().filter(|c| ElbowMode::of(c.pose) == ElbowMode::of(before));
        let near = |c: &&elbow::learned::Candidate| before.max_joint_distance(c.pose);
        let own_near = own.map(|c| near(&c)).fold(f64::INFINITY, f64::min);
        let any_near = c.iter().map(|c| near(&c)).fold(f64::INFINITY, f64::min);
        traps += usize::from(any_near < own_near);
        let weights: Vec<f32> = c.iter().map(|c| c.weight).collect();
        assert!(weights.iter().all(|&w| w > 0.3), "click {k}: both branches offered: {weights:?}");
        for _ in 0..300 {
            app.update();
        }
        let log = app.world().resource::<BranchLog>();
        assert_eq!(log.count, 0, "click {k} to {t:?}: {:?} with weights {weights:?}", log.latest);
        let arm = app.world().resource::<Sim>().measured();
        assert_eq!(ElbowMode::of(arm), ElbowMode::of(before), "click {k}: the arm kept its elbow");
    }
    assert!(traps > 0, "the other branch's answer was the nearer one after some click");
}

#[test]
fn the_branch_flip_lessons_mark_stays_until_the_lesson_closes() {
    use super::lessons::{ActiveLesson, OpenLesson};
    use super::state::solve::{BRANCH_MARK_SECS, BranchLog};
    use elbow::lessons::Lesson;
    let mut app = app();
    app.world_mut().resource_mut::<TrainingParams>().config = TrainConfig { steps: 30, ..TrainConfig::default() };
    app.update();
    app.world_mut().write_message(OpenLesson(Lesson::BranchFlip));
    app.update();
    app.update();
    assert_eq!(app.world().resource::<ActiveLesson>().0, Some(Lesson::BranchFlip));
    // The closed form drives, so the change the lesson stages happens at once (its current
    // branch leaves the joint limits at the target), whatever the heads' training.
    app.world_mut().resource_mut::<Driver>().0 = Pipeline::plain(SolverId::Analytic);
    let clock = |app: &App| app.world().resource::<Time>().elapsed_secs_f64();
    let mut frames = 0;
    while app.world().resource::<BranchLog>().latest.is_none() {
        app.update();
        frames += 1;
        assert!(frames < 100, "the lesson's change never happens");
    }
    let when = app.world().resource::<BranchLog>().latest.as_ref().map(|e| e.when).unwrap();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(100)));
    while clock(&app) < when + BRANCH_MARK_SECS + 13.0 {
        app.update();
    }
    let log = app.world().resource::<BranchLog>();
    let (event, age) = log.marked(clock(&app)).expect("25 s in, the change is still marked");
    assert_eq!((event.when, log.count), (when, 1), "the one change the lesson staged");
    assert!(age > BRANCH_MARK_SECS, "{age}");
    // Moving on lets it fade.
    app.world_mut().resource_mut::<ActiveLesson>().0 = None;
    app.update();
    assert!(app.world().resource::<BranchLog>().marked(clock(&app)).is_none(), "closed, the mark fades");
}

#[test]
fn a_view_given_at_start_restores_its_target() {
    use super::scene_file::{LoadView, SaveView};
    let dir = std::env::temp_dir().join(format!("elbow-view-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("view.json");
    let mut saver = app();
    saver.update();
    *saver.world_mut().resource_mut::<Target>() = Target::at(Point2::new(-0.7, 0.9));
    saver.world_mut().write_message(SaveView(path.clone()));
    saver.update();
    // As `elbow --view FILE` does: the request goes in before the first frame.
    let mut app = app();
    app.world_mut().write_message(LoadView(path));
    for _ in 0..5 {
        app.update();
    }
    let pos = app.world().resource::<Target>().pos;
    assert!((pos - Point2::new(-0.7, 0.9)).norm() < 1e-12, "{pos:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn latency_is_the_same_time_at_any_frame_rate() {
    // How long after a drag the servos get the new goal, at 60, 12 and 5 frames per second.
    let delay = |frame_ms: u64| {
        let mut app = app();
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(frame_ms)));
        *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings { latency_ms: 200.0, ..PlantSettings::IDEAL };
        *app.world_mut().resource_mut::<Driver>() = Driver(Pipeline::plain(SolverId::Analytic));
        for _ in 0..5 {
            app.update();
        }
        let before = app.world().resource::<Sim>().plant.commanded();
        drag(&mut app, -0.5, 1.2);
        // The frame sends the goal first, then steps the plant by the frame's time: the delay is
        // measured on the app's clock, the user's seconds.
        let clock = |app: &App| app.world().resource::<Time>().elapsed_secs_f64();
        let sent = clock(&app);
        app.update();
        let mut frames = 0;
        while app.world().resource::<Sim>().plant.commanded() == before {
            app.update();
            frames += 1;
            assert!(frames < 1000, "the goal never arrives");
        }
        clock(&app) - sent
    };
    for frame_ms in [16, 80, 200] {
        let d = delay(frame_ms);
        assert!((0.2..0.2 + frame_ms as f64 * 1e-3 + 1e-9).contains(&d), "{frame_ms} ms frames: {d} s");
    }
}

#[test]
fn every_channel_with_a_slider_has_a_knob_and_is_swept() {
    // The sweep's menu is the channel table's rows with a slider; each must read a value from the
    // panel's knobs (a row given a slider without a knob would sweep nothing).
    use super::sweep::SweepChannel;
    use elbow::plant::channel::Channel;
    let swept: Vec<Channel> = SweepChannel::all().map(SweepChannel::channel).collect();
    assert_eq!(swept.len(), 9, "{swept:?}");
    let plant = PlantSettings::default();
    for c in SweepChannel::all() {
        let level = c.current(&plant);
        assert!(level.is_some_and(|v| c.range().contains(&v)), "{:?}: {level:?}", c.channel());
    }
    assert_eq!(plant.level(Channel::Mismatch), None, "no single knob: the mismatch has four");
}

/// Values a number formatter meets: tiny, huge, negative, round, not finite.
const VALUES: [f64; 14] =
    [0.0, -0.0, 1e-9, 0.00123, 0.0703, 0.4957, 1.0, -2.5, 17.5, 316.2, 3000.0, 1e6, -1e12, f64::NAN];

#[test]
fn every_number_formatter_writes_only_glyphs_the_font_has() {
    use super::export::{YScale, tick};
    use bevy_egui::egui;
    let mut fonts = egui::epaint::text::Fonts::new(Default::default(), egui::FontDefinitions::default());
    let font = egui::FontId::proportional(super::window::SMALL_TEXT);
    let mut texts = Vec::new();
    for v in VALUES {
        texts.push(metres(Some(v)));
        texts.extend((0..4).map(|d| number(Some(v), d)));
        texts.extend([1e-5, 0.01, 1.0, 1000.0, 5e5].map(|step| tick(v, step)));
        texts.extend([YScale::Linear, YScale::Log, YScale::LogMetres].map(|s| s.label(v.log10())));
        texts.push(format!("MDN w={}", number(Some(v), 2)));
    }
    for text in &texts {
        let missing: String = text.chars().filter(|c| !fonts.has_glyph(&font, *c)).collect();
        assert!(missing.is_empty(), "{text:?} has glyphs the font lacks: {missing:?}");
    }
}
