//! Headless tests of the lab on redundant chains: [`MinimalPlugins`] plus the app's logic
//! plugins, no window.
//! Nets are trained synchronously with small configurations and put in place after the first
//! frame (the frame that opens a lab resets its nets).

use super::fans::PER_FRAME;
use super::state::arm::Sim;
use super::state::manifold::{ChainAnswers, ChainNets, ChainTraining, ChainView};
use crate::app::logic_plugin;
use crate::app::state::arm::{Lab, PlantSettings};
use crate::app::state::solve::{Command, Solutions};
use crate::app::state::train::{Models, TrainingParams};
use crate::app::state::view::Target;
use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use elbow::Point2;
use elbow::arm::{Arm, ArmKind};
use elbow::chain::nets::{ChainNet, NetConfig, NetKind};
use elbow::lineup::SolverId;
use elbow::{HeadKind, TrainConfig, Trainer};
use std::time::{Duration, Instant};

/// The logic plugins on a fixed 16 ms clock, no training anywhere, opened on `lab` with the
/// ideal plant (the reality-gap tests set their own).
fn app(lab: Lab) -> App {
    let mut app = App::new();
    app.insert_resource(lab);
    app.insert_resource(PlantSettings::IDEAL);
    app.insert_resource(ChainTraining { autostart: false, ..ChainTraining::default() });
    app.insert_resource(TrainingParams { autostart: false, ..TrainingParams::default() });
    app.add_plugins(MinimalPlugins).add_plugins(logic_plugin);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(16)));
    app
}

/// A briefly trained net of `kind` for `arm`, of the app's default shape when `full_size`.
fn net(arm: &Arm, kind: NetKind, steps: usize, full_size: bool) -> ChainNet {
    let cfg = if full_size {
        NetConfig { steps, ..NetConfig::default() }
    } else {
        NetConfig { hidden: 32, depth: 2, components: 8, steps, batch: 256, ..NetConfig::default() }
    };
    ChainNet::train(arm, kind, &cfg, |_, _| true).expect("a small run trains")
}

/// Puts every net in place.
fn give_nets(app: &mut App, arm: &Arm, steps: usize, full_size: bool) {
    let mut nets = app.world_mut().resource_mut::<ChainNets>();
    for kind in NetKind::ALL {
        nets.set(kind, Some(net(arm, kind, steps, full_size)));
    }
}

/// Runs frames 5 ms apart until `done` holds; returns how many it took (fails after a minute:
/// a hang, not a speed check).
fn frames_until(app: &mut App, what: &str, done: impl Fn(&World) -> bool) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut frames = 0;
    while !done(app.world()) {
        assert!(Instant::now() < deadline, "{what}: nothing after a minute");
        std::thread::sleep(Duration::from_millis(5));
        app.update();
        frames += 1;
    }
    frames
}

/// The real chain's tip miss of the target now, metres.
fn plant_miss(app: &App) -> f64 {
    let tip = app.world().resource::<Sim>().tip();
    (tip - app.world().resource::<Target>().pos).norm()
}

#[test]
fn the_lab_switches_arms_live_and_keeps_what_each_arm_learnt() {
    let mut app = app(Lab::default());
    app.update();
    let two_link_frame = |app: &App| app.world().resource::<Solutions>().frame;
    let before = two_link_frame(&app);
    app.update();
    assert_eq!(two_link_frame(&app), before + 1, "the two-link solvers run on the two-link arm");

    let rail3 = ArmKind::Rail3.arm();
    *app.world_mut().resource_mut::<Lab>() = Lab(rail3.clone());
    app.update();
    assert_eq!(app.world().resource::<Target>().pos, rail3.demo_target());
    assert_eq!(app.world().resource::<Sim>().read.len(), 4);
    assert_eq!(app.world().resource::<ChainAnswers>().dls.len(), 4 * PER_FRAME, "the chain's DLS answers");
    let frozen = two_link_frame(&app);
    app.update();
    assert_eq!(two_link_frame(&app), frozen, "the two-link solvers rest while a chain is open");

    // Nets learnt on rail3 come back after a visit to 3r, which has none of its own.
    give_nets(&mut app, &rail3, 20, false);
    let generation = app.world().resource::<ChainNets>().generation;
    *app.world_mut().resource_mut::<Lab>() = Lab(ArmKind::ThreeR.arm());
    app.update();
    assert!(app.world().resource::<ChainNets>().get(NetKind::Mdn).is_none(), "3r has no nets yet");
    assert_eq!(app.world().resource::<Sim>().read.len(), 3);
    assert!(app.world().resource::<ChainAnswers>().mdn.is_empty());
    *app.world_mut().resource_mut::<Lab>() = Lab(rail3.clone());
    app.update();
    let nets = app.world().resource::<ChainNets>();
    assert!(NetKind::ALL.iter().all(|&k| nets.get(k).is_some()), "rail3's nets are back");
    assert_eq!(nets.generation, generation);

    *app.world_mut().resource_mut::<Lab>() = Lab::default();
    app.update();
    app.update();
    assert!(two_link_frame(&app) > frozen, "back on the two-link arm its solvers run again");
    assert_ne!(app.world().resource::<Target>().pos, rail3.demo_target());
}

#[test]
fn the_fans_hold_the_slider_count_and_the_exact_fan_is_drawn_off_the_frame() {
    let arm = ArmKind::Rail3.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    give_nets(&mut app, &arm, 200, false);
    app.world_mut().resource_mut::<ChainView>().fan = 37;
    app.update();
    let answers = app.world().resource::<ChainAnswers>();
    assert_eq!(answers.mdn.len(), 37 * 4, "the MDN fan");
    assert_eq!(answers.flow.len(), 37 * 4, "the flow's fan");
    assert!(answers.flow_resim.is_some_and(|r| r.is_finite()));
    assert!(answers.exact_busy, "the exact fan is being drawn");
    assert!(answers.mse.as_ref().is_some_and(|x| x.len() == 4));
    // Frames go on while the exact fan is drawn: a frame that waited would bring it at once.
    let frames = frames_until(&mut app, "exact fan", |w| {
        let a = w.resource::<ChainAnswers>();
        a.exact.x.len() == 37 * 4 && a.exact.target == Some(arm.demo_target())
    });
    assert!(frames >= 1, "the exact fan came in the frame that asked for it");
    let answers = app.world().resource::<ChainAnswers>();
    for x in answers.exact.x.chunks_exact(4) {
        assert!((arm.chain.tip(x) - arm.demo_target()).norm() < 1e-6, "an exact sample solves the target");
    }
    assert!(answers.exact.mmd.is_some_and(|m| m.is_finite()), "the MDN fan's mismatch against it");
    assert!(answers.exact.flow_mmd.is_some_and(|m| m.is_finite()), "the flow fan's mismatch against it");
    assert!(answers.exact.spread > 0.1, "rail3's posterior at (1.5, 0) is a spread, not a point");
    // A target out of reach: no exact samples, said so.
    app.world_mut().resource_mut::<Target>().pos = Point2::new(5.0, 0.0);
    frames_until(&mut app, "unreachable", |w| w.resource::<ChainAnswers>().exact.target == Some(Point2::new(5.0, 0.0)));
    assert!(app.world().resource::<ChainAnswers>().exact.x.is_empty());
}

#[test]
fn self_motion_changes_the_shape_and_the_tip_settles_back_within_a_millimetre() {
    for kind in [ArmKind::Rail3, ArmKind::ThreeR] {
        let arm = kind.arm();
        let mut app = app(Lab(arm.clone()));
        app.world_mut().resource_mut::<ChainView>().driver = SolverId::Iterative;
        let target = Point2::new(1.2, 0.4);
        app.update();
        app.world_mut().resource_mut::<Target>().pos = target;
        let settle = |app: &mut App| {
            for _ in 0..120 {
                app.update();
            }
        };
        settle(&mut app);
        assert!(plant_miss(&app) < 1e-3, "{kind}: DLS puts the tip on the target");
        let rest = app.world().resource::<Sim>().read.clone();
        for distance in [0.6, -0.6] {
            app.world_mut().resource_mut::<ChainView>().self_motion = distance;
            // The command jumps along the manifold at once; the servos follow it joint by joint,
            // so mid-move the real tip strays a little (under 2 mm at the walk's 0.5 units/s), then
            // settles back on target.
            let mut worst: f64 = 0.0;
            for _ in 0..120 {
                app.update();
                worst = worst.max(plant_miss(&app));
            }
            assert!(worst < 3e-3, "{kind} at {distance}: mid-move {worst}");
            assert!(plant_miss(&app) < 1e-3, "{kind} at {distance}: settled {}", plant_miss(&app));
            let walk = app.world().resource::<ChainAnswers>().walk.expect("a walk");
            assert!(walk.tip_error < 1e-6 && (walk.travelled - distance).abs() < 1e-9, "{kind}: {walk:?}");
            let x = &app.world().resource::<Sim>().read;
            let moved: f64 = x.iter().zip(&rest).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
            assert!(moved > 0.3, "{kind} at {distance}: the shape moved only {moved}");
            app.world_mut().resource_mut::<ChainView>().self_motion = 0.0;
            settle(&mut app);
        }
    }
}

#[test]
fn the_hybrid_drives_the_chain_onto_the_target_where_the_mse_net_misses() {
    let arm = ArmKind::ThreeR.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    give_nets(&mut app, &arm, 300, false);
    for _ in 0..120 {
        app.update();
    }
    let answers = app.world().resource::<ChainAnswers>();
    assert!(answers.hybrid_stats.solutions >= 100 && answers.hybrid_stats.success > 0.99, "{:?}", answers.hybrid_stats);
    assert!(answers.hybrid_stats.starts >= 1.0 && answers.hybrid_stats.iterations > 0.0);
    assert!(plant_miss(&app) < 1e-3, "the hybrid puts the tip on the target: {}", plant_miss(&app));
    // The squared-error net on 3r averages a circle of wrist positions: its answer misses.
    let mse = answers.mse.as_ref().expect("an MSE answer");
    assert!((arm.chain.tip(mse) - arm.demo_target()).norm() > 0.05, "the MSE answer misses");
    // Driving by the MSE net leaves the tip where its answer lands.
    app.world_mut().resource_mut::<ChainView>().driver = SolverId::Learned(HeadKind::Mse);
    for _ in 0..120 {
        app.update();
    }
    assert!(plant_miss(&app) > 0.05);
    // Driving by the flow: the command is the draw of its fan nearest the pose.
    app.world_mut().resource_mut::<ChainView>().driver = SolverId::Flow;
    app.update();
    let answers = app.world().resource::<ChainAnswers>();
    let command = app.world().resource::<Command>().0.clone().expect("the flow commands the chain");
    assert!(answers.flow.chunks_exact(3).any(|x| x == &command[..]), "the command is one of the flow's draws");
}

/// Frame time of the logic with the heaviest chain load (a 200-draw MDN fan of the default net
/// shape, a 200-sample exact fan off the frame, the hybrid driving, the plant's dynamics with
/// free play, friction, flex and latency), against the two-link lab's
/// frame. A measurement, not a check: `cargo test --release --bin elbow -- --ignored
/// chain_frame_time --nocapture` prints it (`docs/3-redundant-chains.md`, "The chain in the app").
#[test]
#[ignore = "a measurement; run it alone on a quiet machine"]
#[allow(clippy::print_stdout, reason = "a measurement prints what it measured")]
fn chain_frame_time() {
    let percentile = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * p).round() as usize]
    };
    let time = |app: &mut App, frames: usize| -> Vec<f64> {
        (0..frames)
            .map(|_| {
                let t = Instant::now();
                app.update();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect()
    };
    let mut two_link = app(Lab::default());
    two_link.update();
    // Every head of the default shape, briefly trained: the two-link frame with all its rows.
    let mut models = Models::default();
    for head in HeadKind::ALL {
        let mut trainer = Trainer::new(TrainConfig { head, steps: 30, ..TrainConfig::default() }).expect("valid");
        for _ in 0..30 {
            trainer.step().unwrap();
        }
        models.set(head, Some(trainer.model().clone()));
    }
    two_link.insert_resource(models);
    for _ in 0..100 {
        two_link.update();
    }
    let mut two = time(&mut two_link, 2000);
    let (two50, two99) = (percentile(&mut two, 0.5), percentile(&mut two, 0.99));
    println!("two-link frame (every head, default shape): p50 {two50:.3} ms, p99 {two99:.3} ms");
    // Its background jobs (atlas, sweep) end with it, before the chain is timed.
    drop(two_link);
    for kind in [ArmKind::Rail3, ArmKind::ThreeR, ArmKind::So101] {
        let arm = kind.arm();
        let mut app = app(Lab(arm.clone()));
        // The plant's dynamics with its heaviest step: free play behind every joint (twice the
        // joints), friction, flex, latency, noise and the camera.
        app.insert_resource(PlantSettings {
            backlash: 0.02,
            frictionloss: 0.052,
            flex: 0.02,
            latency_ms: 50.0,
            ..PlantSettings::default()
        });
        app.update();
        give_nets(&mut app, &arm, 50, true);
        frames_until(&mut app, "exact fan", |w| w.resource::<ChainAnswers>().exact.x.len() == 200 * arm.coords());
        // The live sweep and the claims board start as soon as every net is there: the frames
        // are timed while they run off the frame.
        let busy = |app: &App| {
            let w = app.world();
            (w.resource::<crate::app::sweep::LiveSweep>().busy, w.resource::<crate::app::claims::ClaimsBoard>().busy)
        };
        let before = busy(&app);
        let mut t = time(&mut app, 2000);
        let (p50, p99) = (percentile(&mut t, 0.5), percentile(&mut t, 0.99));
        println!(
            "{kind} frame (200-draw MDN fan, 200-sample exact fan off the frame, hybrid driving, the plant's dynamics with every channel): p50 {p50:.3} ms, p99 {p99:.3} ms; {:.1}x the two-link p99; (sweep, board) busy before {before:?}, after {:?}",
            p99 / two99,
            busy(&app)
        );
    }
}

/// What a plant shows the world after a frame: the real tip, the encoders' reading and the
/// camera's latest frame.
fn seen(plant: &mut elbow::plant::Plant, d: usize) -> (Point2, Vec<f64>, Option<Point2>) {
    (plant.tip(), plant.measure()[..d].to_vec(), plant.camera().map(|f| f.tip))
}

#[test]
fn every_reality_gap_slider_moves_the_chain_as_the_cores_plant_moves() {
    type Set = fn(&mut PlantSettings);
    let channels: [(&str, Set); 8] = [
        ("encoder noise", |s| s.noise_std = 0.01),
        ("backlash", |s| s.backlash = 0.05),
        ("friction", |s| s.frictionloss = 0.3),
        ("flex", |s| s.flex = 0.05),
        ("latency", |s| s.latency_ms = 200.0),
        ("link lengths", |s| s.length_error = [0.1, -0.1]),
        ("joint offsets", |s| s.joint_offset = [0.05, -0.05]),
        ("camera", |s| {
            s.camera_noise = 5.0;
            s.camera_offset = [0.01, -0.02];
        }),
    ];
    for kind in [ArmKind::Rail3, ArmKind::So101] {
        let arm = kind.arm();
        let d = arm.coords();
        for (name, set) in channels {
            let mut app = app(Lab(arm.clone()));
            app.world_mut().resource_mut::<ChainView>().driver = SolverId::Iterative;
            app.update();
            set(&mut app.world_mut().resource_mut::<PlantSettings>());
            app.update();
            // The app's plant is the core's for these settings...
            let settings = *app.world().resource::<PlantSettings>();
            let (real, cfg) = settings.plant(&arm);
            let mut core = app.world().resource::<Sim>().plant.clone();
            assert_eq!(
                (core.config(), core.real()),
                (&cfg.sanitized(), &real),
                "{kind} {name}: the settings reach the plant"
            );
            assert_eq!(core.config().gravity, kind == ArmKind::So101, "{kind}: gravity on the arm in a vertical plane");
            // ...and moves as the core's does, bit for bit, under the same commands and clock;
            // the same commands on the ideal plant show the slider acting.
            let mut ideal = core.clone();
            let (real0, cfg0) = PlantSettings::IDEAL.plant(&arm);
            ideal.set_config(cfg0);
            ideal.set_real(real0);
            let reach = arm.chain.reach();
            app.world_mut().resource_mut::<Target>().pos = arm.demo_target() + Point2::new(-0.1, 0.15) * reach;
            let mut acted = false;
            for frame in 0..90 {
                app.update();
                let command = app.world().resource::<Command>().0.clone();
                for plant in [&mut core, &mut ideal] {
                    if let Some(c) = &command {
                        plant.command(c);
                    }
                    plant.step(0.016);
                }
                let (tip, reading, camera) = seen(&mut core, d);
                let ours = app.world().resource::<Sim>();
                assert_eq!(ours.tip(), tip, "{kind} {name}, frame {frame}: the tip");
                assert_eq!(ours.read, reading, "{kind} {name}, frame {frame}: the encoders");
                assert_eq!(ours.plant.camera().map(|f| f.tip), camera, "{kind} {name}");
                acted |= seen(&mut ideal, d) != (tip, reading, camera);
            }
            assert!(acted, "{kind} {name}: the slider changed nothing the world sees");
        }
    }
}

#[test]
fn switching_arms_keeps_the_plant_settings_and_each_chain_gets_them() {
    let mut app = app(Lab::default());
    app.update();
    let set = PlantSettings {
        flex: 0.03,
        latency_ms: 120.0,
        backlash: 0.01,
        length_error: [0.05, -0.02],
        ..PlantSettings::IDEAL
    };
    app.insert_resource(set);
    app.update();
    for kind in [ArmKind::Rail3, ArmKind::ThreeR, ArmKind::So101] {
        let arm = kind.arm();
        *app.world_mut().resource_mut::<Lab>() = Lab(arm.clone());
        app.update();
        app.update();
        assert_eq!(*app.world().resource::<PlantSettings>(), set, "{kind}: the sliders are as the user left them");
        let plant = app.world().resource::<Sim>().plant.clone();
        let (real, cfg) = set.plant(&arm);
        assert_eq!((plant.config(), plant.real()), (&cfg.sanitized(), &real), "{kind}: and act on its plant");
        assert_eq!((plant.config().flex, plant.config().latency_ms), (0.03, 120.0));
    }
    *app.world_mut().resource_mut::<Lab>() = Lab::default();
    app.update();
    assert_eq!(*app.world().resource::<PlantSettings>(), set, "and back on the two-link arm");
    let nominal = app.world().resource::<crate::app::state::arm::Nominal>().0;
    assert_eq!(*app.world().resource::<crate::app::state::arm::Sim>().plant.config(), set.config(&nominal).sanitized());
}

#[test]
fn the_exact_fan_and_its_mismatch_arrive_while_the_nets_keep_changing() {
    let arm = ArmKind::Rail3.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    give_nets(&mut app, &arm, 100, false);
    // A new snapshot every frame, as training sends them: the fan's run must not be dropped as
    // stale each time.
    let frames = frames_until(&mut app, "a mismatch while the nets change", |w| {
        !w.resource::<ChainAnswers>().mmd_history.is_empty()
    });
    assert!(frames < 2_000);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut arrived = 0;
    while arrived < 2 {
        let before = app.world().resource::<ChainAnswers>().mmd_history.len();
        let net = app.world().resource::<ChainNets>().get(NetKind::Mdn).cloned();
        app.world_mut().resource_mut::<ChainNets>().set(NetKind::Mdn, net);
        std::thread::sleep(Duration::from_millis(5));
        app.update();
        arrived += usize::from(app.world().resource::<ChainAnswers>().mmd_history.len() > before);
        assert!(Instant::now() < deadline, "no exact fan while the nets change every frame");
    }
}

#[test]
fn the_claims_board_and_the_live_sweep_judge_a_chain_on_its_own_nets() {
    use crate::app::claims::ClaimsBoard;
    use crate::app::sweep::LiveSweep;
    let arm = ArmKind::Rail3.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    // Without nets, both say what they wait for.
    app.update();
    let note = app.world().resource::<LiveSweep>().note.clone().unwrap_or_default();
    assert!(note.contains("waiting for the mse net"), "{note}");
    give_nets(&mut app, &arm, 100, false);
    frames_until(&mut app, "the chain's sweep and board", |w| {
        w.resource::<LiveSweep>().latest.is_some() && w.resource::<ClaimsBoard>().latest.is_some()
    });
    let (_, curves) = app.world().resource::<LiveSweep>().latest.clone().unwrap();
    let pipelines: Vec<_> = curves.iter().map(|c| c.pipeline).collect();
    assert_eq!(pipelines, elbow::experiments::degradation::chain::pipelines(), "the chain's line-up is swept");
    let (claims, _) = app.world().resource::<ClaimsBoard>().latest.clone().unwrap();
    let keys: Vec<&str> = claims.iter().map(|c| c.key).collect();
    assert!(keys.contains(&"dls-graceful") && keys.contains(&"hybrid-worst-case-classical"), "{keys:?}");
}

#[test]
fn the_envelope_around_a_chains_net_falls_back_to_dls_and_counts_it() {
    use crate::app::state::solve::{Command, EnvelopeStats};
    let arm = ArmKind::Rail3.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    // A barely trained squared-error net: its one answer misses the target by far.
    give_nets(&mut app, &arm, 30, false);
    app.world_mut().resource_mut::<ChainView>().driver = SolverId::Learned(HeadKind::Mse);
    let miss = |app: &App| {
        let x = app.world().resource::<Command>().0.clone().expect("a command");
        (arm.chain.tip(&x) - app.world().resource::<Target>().pos).norm()
    };
    app.update();
    assert!(miss(&app) > 0.05, "without the envelope the net's miss goes to the plant: {}", miss(&app));
    assert_eq!(app.world().resource::<EnvelopeStats>().log.interventions(), 0);
    app.world_mut().resource_mut::<ChainView>().envelope = true;
    app.update();
    assert!(miss(&app) < 1e-3, "the envelope sends DLS's answer instead: {}", miss(&app));
    let stats = app.world().resource::<EnvelopeStats>();
    assert_eq!(stats.log.interventions(), 1, "one decision a frame, counted");
    assert!(stats.last.is_some());
}

#[test]
fn a_view_of_a_chain_switches_back_to_it_and_restores_its_knobs() {
    use crate::app::scene_file::{LoadView, SaveView, ViewFile, ViewFileField};
    let dir = std::env::temp_dir().join(format!("elbow-chain-view-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("rail3.json");
    let arm = ArmKind::Rail3.arm();
    let mut app = app(Lab(arm.clone()));
    app.update();
    let knobs = ChainView {
        driver: SolverId::Learned(HeadKind::Mdn),
        envelope: true,
        fan: 321,
        self_motion: 0.4,
        ..ChainView::default()
    };
    *app.world_mut().resource_mut::<ChainView>() = knobs.clone();
    *app.world_mut().resource_mut::<Target>() = Target::at(Point2::new(1.2, 0.3));
    app.world_mut().resource_mut::<PlantSettings>().backlash = 0.01;
    app.world_mut().write_message(SaveView(path.clone()));
    app.update();
    let outcome = app.world().resource::<ViewFileField>().outcome.clone();
    assert!(matches!(outcome, Some(Ok(_))), "{outcome:?}");
    assert_eq!(ViewFile::read(&path).unwrap().lab(), Lab(arm.clone()), "the file names its chain");
    // On the two-link arm, with everything else changed, the view brings rail3 back as it was.
    *app.world_mut().resource_mut::<Lab>() = Lab::default();
    *app.world_mut().resource_mut::<PlantSettings>() = PlantSettings::IDEAL;
    app.update();
    app.update();
    app.world_mut().write_message(LoadView(path.clone()));
    app.update();
    let world = app.world();
    assert_eq!(*world.resource::<Lab>(), Lab(arm.clone()));
    assert_eq!(*world.resource::<ChainView>(), knobs);
    assert_eq!(world.resource::<Target>().pos, Point2::new(1.2, 0.3), "the view's target, not the arm's home");
    assert_eq!(world.resource::<PlantSettings>().backlash, 0.01);
    assert_eq!(world.resource::<Sim>().read.len(), 4, "the plant is rail3's");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_chain_model_file_loads_from_the_panel_in_place_of_training() {
    use crate::app::state::train::{LoadModel, ModelFile, RunState};
    use elbow::chain::NetSet;
    use elbow::chain::model::ChainModel;
    let dir = std::env::temp_dir().join(format!("elbow-chain-model-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let arm = ArmKind::Rail3.arm();
    let cfg = NetConfig { hidden: 32, depth: 2, components: 8, steps: 30, batch: 256, ..NetConfig::default() };
    let mut set = NetSet::default();
    set.set(NetKind::Mdn, Some(net(&arm, NetKind::Mdn, 30, false)));
    let good = dir.join("rail3.json");
    ChainModel::new(arm.clone(), cfg, set.clone()).save(&good).unwrap();
    let other = dir.join("3r.json");
    let three = ArmKind::ThreeR.arm();
    let mut set3 = NetSet::default();
    set3.set(NetKind::Mdn, Some(net(&three, NetKind::Mdn, 30, false)));
    ChainModel::new(three, cfg, set3).save(&other).unwrap();
    let mut app = app(Lab(arm.clone()));
    app.update();
    // Another arm's nets are refused in one sentence and change nothing.
    app.world_mut().write_message(LoadModel(other.clone()));
    app.update();
    let outcome = app.world().resource::<ModelFile>().outcome.clone();
    assert!(matches!(&outcome, Some(Err(e)) if e.contains("3r")), "{outcome:?}");
    assert!(app.world().resource::<ChainNets>().get(NetKind::Mdn).is_none());
    app.world_mut().write_message(LoadModel(good.clone()));
    app.update();
    let outcome = app.world().resource::<ModelFile>().outcome.clone();
    assert!(matches!(&outcome, Some(Ok(_))), "{outcome:?}");
    assert_eq!(app.world().resource::<ChainNets>().get(NetKind::Mdn), set.get(NetKind::Mdn));
    let training = app.world().resource::<ChainTraining>();
    assert!(matches!(training.run(NetKind::Mdn).state, RunState::Loaded(_)));
    assert_eq!(training.config, cfg);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_gravity_arrow_shows_only_where_the_plant_has_gravity_and_points_down() {
    use super::manifold_draw::{gravity_arrow, plant_gravity};
    use crate::app::camera::ViewScale;
    for kind in [ArmKind::ThreeR, ArmKind::Rail3, ArmKind::So101] {
        let mut app = app(Lab(kind.arm()));
        app.update();
        let (gravity, base) = plant_gravity(app.world().resource::<Sim>());
        for scale in [ViewScale { metres_per_px: 0.0013 }, ViewScale { metres_per_px: 0.01 }] {
            let arrow = gravity_arrow(gravity, base, &scale);
            assert_eq!(arrow.is_some(), kind == ArmKind::So101, "{kind}: an arrow only where gravity acts");
            if let Some([from, to]) = arrow {
                let down = to - from;
                assert!(down.x == 0.0 && down.y < 0.0, "{kind}: gravity pulls along -y: {down:?}");
                // The same size on screen at every scale, and beside the base.
                let px = down.length() / scale.metres_per_px;
                assert!((30.0..80.0).contains(&px), "{kind}: {px} px long");
                let off = (0.5 * (from + to) - base).length() / scale.metres_per_px;
                assert!(off < 60.0, "{kind}: {off} px from the base");
            }
        }
    }
}
