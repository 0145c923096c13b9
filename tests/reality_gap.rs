//! The gap to reality: the direction of each of the lesson's claims, on seeded data.
//! Nothing here hard-codes a measured number; each test compares solvers, settings or switches.

use elbow::envelope::Reason;
use elbow::experiments::degradation::{Cell, Channel, ChannelLevels, ConfigError, OodKind, Protocol, Split, Verdict};
use elbow::experiments::{DegradationConfig, DegradationReport, ExperimentError, degradation, degradation_with};
use elbow::{HeadKind, Mismatch, Pipeline, Region, TrainConfig, Trainer, TwoLinkArm};
use std::sync::OnceLock;

const IN: Split = Split::In;
const BEYOND: Split = Split::Ood(OodKind::Beyond);

/// Held-out targets per setting of the shared run: enough for every direction below to show
/// (the plant's simulation of every pipeline at every level is what the run's time goes on).
const TARGETS: usize = 100;

fn args() -> DegradationConfig {
    DegradationConfig {
        levels: [
            (Channel::Encoder, vec![0.0, 0.02, 0.06]),
            (Channel::Actuator, vec![0.0, 0.02, 0.06]),
            (Channel::Backlash, vec![0.0, 0.05]),
            (Channel::Target, vec![0.0, 0.03]),
            (Channel::Mismatch, vec![0.0, 1.0]),
            (Channel::Friction, vec![0.0, 0.5]),
            (Channel::Flex, vec![0.0, 0.05]),
            (Channel::Latency, vec![0.0, 133.0]),
            (Channel::CameraNoise, vec![0.0, 50.0]),
            (Channel::CameraOffset, vec![0.0, 0.1]),
            (Channel::CameraPeriod, vec![0.0, 2.0]),
            (Channel::Combined, vec![0.0, 1.0]),
        ]
        .into_iter()
        .fold(ChannelLevels::default(), |l, (c, v)| l.with(c, v)),
        targets: TARGETS,
        ood_fraction: 0.3,
        train_steps: 3000,
        seed: 7,
        ..DegradationConfig::default()
    }
}

/// A pipeline by its key (`analytic`, `mse`, `envelope(mdn)`).
fn p(key: &str) -> Pipeline {
    key.parse().unwrap_or_else(|e| panic!("{e}"))
}

fn report() -> &'static DegradationReport {
    static R: OnceLock<DegradationReport> = OnceLock::new();
    R.get_or_init(|| degradation(&args()).unwrap())
}

fn cell<'a>(
    r: &'a DegradationReport,
    protocol: Protocol,
    solver: &str,
    ch: Channel,
    level: f64,
    split: Split,
) -> &'a Cell {
    r.cell(protocol, p(solver), ch, level, split)
        .unwrap_or_else(|| panic!("no cell {protocol} {solver} {ch:?} {level} {split:?}"))
}

fn plant<'a>(r: &'a DegradationReport, solver: &str, ch: Channel, level: f64, split: Split) -> &'a Cell {
    cell(r, Protocol::Plant, solver, ch, level, split)
}

#[test]
fn analytic_degrades_gracefully_with_noise_in_both_protocols() {
    let r = report();
    for (protocol, ch) in [(Protocol::Plant, Channel::Actuator), (Protocol::Exercise, Channel::Actuator)] {
        let e: Vec<f64> =
            [0.0, 0.02, 0.06].iter().map(|&n| cell(r, protocol, "analytic", ch, n, IN).error.mean).collect();
        assert!(e[0] < e[1] && e[1] < e[2], "{protocol} {ch:?}: error should grow with noise: {e:?}");
        // Roughly proportional: tripling the noise does not multiply the added error by more than 6.
        assert!(e[2] - e[0] < 6.0 * (e[1] - e[0]), "{protocol} {ch:?}: {e:?}");
    }
}

#[test]
fn the_exercise_protocol_runs_on_the_nominal_arm_from_a_fixed_start() {
    let r = report();
    let base = cell(r, Protocol::Exercise, "analytic", Channel::Actuator, 0.0, IN);
    assert!(base.error.max < 1e-9, "no noise, no mismatch: the analytic answer is exact");
    assert!(r.channels(Protocol::Exercise) == [Channel::Actuator, Channel::Backlash]);
    let b = cell(r, Protocol::Exercise, "analytic", Channel::Backlash, 0.05, IN);
    assert!(b.error.mean > base.error.mean, "backlash relative to the previous command moves the tip");
}

#[test]
fn analytic_is_honest_out_of_distribution_and_learned_heads_are_not() {
    let r = report();
    for (ch, level) in [(Channel::Encoder, 0.0), (Channel::Combined, 1.0)] {
        let analytic = plant(r, "analytic", ch, level, BEYOND);
        assert_eq!(analytic.reported, 1.0);
        assert_eq!(analytic.silent, 0.0);
        for learned in ["mse", "mdn", "mode"] {
            let c = plant(r, learned, ch, level, BEYOND);
            assert_eq!(c.reported, 0.0, "{learned} never reports");
            assert!(c.silent > 0.9, "{learned} fails silently: {}", c.silent);
        }
    }
}

#[test]
fn the_post_move_check_turns_silent_misses_of_honest_pipelines_into_reports() {
    let off = degradation(&DegradationConfig { post_move_check: false, protocol: Protocol::Plant, ..args() }).unwrap();
    let on = report();
    for solver in ["analytic", "dls", "envelope(mdn)"] {
        for (ch, level) in [(Channel::Actuator, 0.06), (Channel::Combined, 1.0)] {
            let (a, b) = (plant(&off, solver, ch, level, IN), plant(on, solver, ch, level, IN));
            assert!(b.silent < a.silent, "{solver} {ch:?}: silent with the check {} vs without {}", b.silent, a.silent);
            assert!((a.error.mean - b.error.mean).abs() < 1e-12, "the check only reads the encoders");
        }
    }
    // A bare head has no check to switch on.
    let (a, b) = (plant(&off, "mdn", Channel::Actuator, 0.06, IN), plant(on, "mdn", Channel::Actuator, 0.06, IN));
    assert_eq!(a.silent, b.silent);
    // Encoder noise moves no arm (the servos close their loop on their own encoders; the host's
    // noisy reading only seeds the solver), so the check it feeds can only cry wolf.
    let (a, b) =
        (plant(&off, "analytic", Channel::Encoder, 0.06, IN), plant(on, "analytic", Channel::Encoder, 0.06, IN));
    assert!(a.missed == 0.0 && b.missed == 0.0 && b.false_alarm > a.false_alarm, "{a:?} {b:?}");
}

#[test]
fn what_no_sensor_sees_stays_silent_for_everyone() {
    let r = report();
    for pipeline in elbow::experiments::degradation::pipelines() {
        let key = pipeline.key();
        let (base, mis) = (plant(r, &key, Channel::Mismatch, 0.0, IN), plant(r, &key, Channel::Mismatch, 1.0, IN));
        assert!(mis.reported <= base.reported + 0.01, "{key}: mismatch is invisible to the encoders");
    }
    let a = plant(r, "analytic", Channel::Mismatch, 1.0, IN);
    assert!(a.missed > 0.5 && a.silent == a.missed, "the analytic solver misses silently on the mismatched arm");
}

#[test]
fn learned_heads_fail_silently_more_often_than_analytic() {
    let r = report();
    for noise in [0.0, 0.02, 0.06] {
        let analytic = plant(r, "analytic", Channel::Encoder, noise, IN).silent;
        for learned in ["mse", "mdn", "mode"] {
            let c = plant(r, learned, Channel::Encoder, noise, IN);
            // Strictly more, by two targets at least: equal rates (say, nobody silent) fail.
            assert!(
                c.silent - analytic > 1.5 / TARGETS as f64,
                "{learned} at noise {noise}: {} vs analytic {analytic}",
                c.silent
            );
        }
    }
    let mse = plant(r, "mse", Channel::Encoder, 0.0, IN).error.mean;
    let mdn = plant(r, "mdn", Channel::Encoder, 0.0, IN).error.mean;
    assert!(mdn * 5.0 < mse, "the averaging trap: MSE {mse} vs MDN {mdn}");
}

#[test]
fn envelope_turns_silent_failures_into_reported_fallbacks() {
    let r = report();
    for inner in ["mse", "mdn"] {
        let env = format!("envelope({inner})");
        for (ch, level) in [(Channel::Encoder, 0.0), (Channel::Combined, 1.0)] {
            let (raw, enc) = (plant(r, inner, ch, level, BEYOND), plant(r, &env, ch, level, BEYOND));
            assert!(enc.silent < raw.silent, "{env} OOD silent {} vs {}", enc.silent, raw.silent);
            assert!(enc.reported > 0.9, "{env} reports its fallbacks: {}", enc.reported);
            let (raw, enc) = (plant(r, inner, ch, level, IN), plant(r, &env, ch, level, IN));
            assert!(enc.silent <= raw.silent, "{env} held-out silent {} vs {}", enc.silent, raw.silent);
            let log = enc.envelope.expect("enveloped cells carry their log");
            assert_eq!(log.accepted + log.interventions(), TARGETS as u64);
        }
    }
}

#[test]
fn enveloped_residual_runs_in_distribution_and_falls_back_outside() {
    let r = report();
    let inside = plant(r, "envelope(residual)", Channel::Mismatch, 1.0, IN).envelope.unwrap();
    assert!(inside.acceptance() > 0.5, "most in-distribution proposals pass the trust region: {inside:?}");
    assert_eq!(inside.count(Reason::FkMiss), 0, "no FK check on the nominal arm for a correction");
    let outside = plant(r, "envelope(residual)", Channel::Mismatch, 1.0, BEYOND).envelope.unwrap();
    assert_eq!(outside.accepted, 0, "every out-of-distribution proposal falls back: {outside:?}");
    assert!(outside.count(Reason::TrustRegion) > 0);
    // Where it runs it closes the sim-to-real gap; where it falls back it is the analytic answer.
    let analytic = plant(r, "analytic", Channel::Mismatch, 1.0, IN).error.mean;
    let residual = plant(r, "envelope(residual)", Channel::Mismatch, 1.0, IN).error.mean;
    assert!(residual * 2.0 < analytic, "enveloped residual {residual} vs analytic {analytic}");
    let (a, e) = (
        plant(r, "analytic", Channel::Mismatch, 1.0, BEYOND),
        plant(r, "envelope(residual)", Channel::Mismatch, 1.0, BEYOND),
    );
    assert_eq!(a.error.mean, e.error.mean, "outside the trust region it is exactly the classical answer");
}

#[test]
fn the_joint_step_check_fires_when_the_period_is_short() {
    let cfg = DegradationConfig {
        protocol: Protocol::Plant,
        levels: ChannelLevels::baseline(),
        targets: 200,
        train_steps: 200,
        envelope: elbow::EnvelopeConfig {
            control_period: 0.1,
            ..elbow::EnvelopeConfig::for_arm(&TwoLinkArm::default())
        },
        ..args()
    };
    let r = degradation(&cfg).unwrap();
    for head in ["mse", "mdn", "mode", "residual"] {
        let log = plant(&r, &format!("envelope({head})"), Channel::Encoder, 0.0, IN).envelope.unwrap();
        assert!(log.count(Reason::JointStep) > 100, "{head}: random targets 0.25 rad steps apart: {log:?}");
    }
    let rate =
        |log: elbow::InterventionLog| log.count(Reason::JointStep) as f64 / (log.accepted + log.interventions()) as f64;
    let short = rate(plant(&r, "envelope(mdn)", Channel::Encoder, 0.0, IN).envelope.unwrap());
    let default = rate(plant(report(), "envelope(mdn)", Channel::Encoder, 0.0, IN).envelope.unwrap());
    assert!(default < short, "a longer period allows larger steps: {default} vs {short}");
}

#[test]
fn backlash_is_free_play_beyond_the_servo_and_an_outer_loop_cannot_take_it_up() {
    let r = report();
    let without = plant(r, "analytic", Channel::Backlash, 0.0, IN);
    let with = plant(r, "analytic", Channel::Backlash, 0.05, IN);
    // The links rest anywhere in their play (on a table nothing pulls them to one side): up to
    // 0.05 rad per joint, several centimetres at the tip, and the encoders read the servo.
    assert!(with.error.mean > without.error.mean + 0.01, "backlash {} vs none {}", with.error.mean, without.error.mean);
    assert!(with.silent > 0.0 && with.silent == with.missed, "the encoders cannot see the play: {with:?}");
    // Outer corrections from the encoders change nothing: they already read the goal.
    let corrected = degradation(&DegradationConfig {
        targets: 100,
        ood_fraction: 0.0,
        train_steps: 200,
        corrections: 2,
        protocol: Protocol::Plant,
        levels: ChannelLevels::only(Channel::Backlash, vec![0.0, 0.05]),
        ..args()
    })
    .unwrap();
    let c = plant(&corrected, "analytic", Channel::Backlash, 0.05, IN);
    assert!(c.error.mean > without.error.mean + 0.01, "corrected {c:?}");
}

#[test]
fn every_claim_gets_a_verdict_with_numbers() {
    let r = report();
    let keys: Vec<&str> = r.claims.iter().map(|c| c.key).collect();
    assert_eq!(keys.len(), 8, "{keys:?}");
    assert!(r.claims.iter().all(|c| !c.evidence.is_empty()));
    // The verdicts these seeded numbers support, in the lesson's direction (on this run: the
    // analytic error grows about linearly, bare heads never report, mismatch is invisible to
    // everyone, the envelope helps on the perfect arm and under encoder noise, and the residual
    // hybrid loses to the analytic answer on the perfect arm it was not fitted to).
    let verdict =
        |key: &str| &r.claims.iter().find(|c| c.key == key).unwrap_or_else(|| panic!("no claim {key}")).verdict;
    for key in ["learned-confident", "unseen-by-encoders-silent"] {
        assert_eq!(verdict(key), &Verdict::Holds, "{key}");
    }
    let holds_for = |key: &str, case: &str| match verdict(key) {
        Verdict::Holds => true,
        Verdict::HoldsOnlyFor(cases) => cases.iter().any(|c| c == case),
        Verdict::DoesNotHold => false,
    };
    assert!(holds_for("envelope-reports", "perfect arm") && holds_for("envelope-reports", "encoder"));
    assert!(holds_for("residual-worst-case-classical", "mismatch"));
    assert!(
        !holds_for("residual-worst-case-classical", "perfect arm"),
        "{:?}",
        verdict("residual-worst-case-classical")
    );
    let json = serde_json::to_value(r).unwrap();
    assert!(json["cells"][0]["channel"].is_null(), "the baseline comes first");
    assert!(json["cells"].as_array().unwrap().iter().any(|c| c["channel"] == "target" && c["split"] == "beyond"));
}

#[test]
fn each_reality_gap_channel_gets_its_own_verdicts() {
    let r = report();
    let vote = |key: &str, case: &str| {
        let claim = r.claims.iter().find(|c| c.key == key).unwrap_or_else(|| panic!("no claim {key}"));
        claim.case(case).unwrap_or_else(|| panic!("{key} has no case {case}: {:?}", claim.cases)).passes
    };
    let base = plant(r, "analytic", Channel::Encoder, 0.0, IN);
    // Flex bends the links beyond the encoders: the encoder check passes every drooped move, the
    // camera on the tip reports them.
    let flex = plant(r, "analytic", Channel::Flex, 0.05, IN);
    assert!(flex.missed > 0.2 && flex.silent == flex.missed, "{flex:?}");
    let camera = flex.camera.unwrap();
    assert!(camera.silent < 0.01 && camera.reported >= flex.missed, "{camera:?}");
    assert_eq!(vote("classical-reports", "flex"), Some(false));
    assert_eq!(vote("classical-reports-on-camera", "flex"), Some(true));
    assert_eq!(vote("unseen-by-encoders-silent", "flex"), Some(true));
    // Latency: the goal arrives late, and the servos still settle on it: an arm at rest pays
    // nothing for latency (what it costs is tracking: tests/tracking.rs).
    let late = plant(r, "analytic", Channel::Latency, 133.0, IN);
    assert!((late.error.mean - base.error.mean).abs() < 1e-4 && late.missed == base.missed, "{late:?}");
    assert_eq!(plant(r, "mdn", Channel::Latency, 133.0, IN).reported, 0.0);
    // Friction: each joint sticks at most loss / kp short, a millimetre or two at the tip.
    let stuck = plant(r, "analytic", Channel::Friction, 0.5, IN);
    assert!(stuck.error.mean > base.error.mean && stuck.error.mean < 3e-3, "{stuck:?}");
    // The camera's own channels move no arm; they make the camera check cry wolf (noise, offset,
    // a frame older than the move), never miss silently.
    for (ch, level) in [(Channel::CameraNoise, 50.0), (Channel::CameraOffset, 0.1), (Channel::CameraPeriod, 2.0)] {
        let c = plant(r, "analytic", ch, level, IN);
        let k = c.camera.unwrap();
        assert!((c.error.mean - base.error.mean).abs() < 1e-9 && c.reported == base.reported, "{ch:?}: {c:?}");
        assert!(k.false_alarm > 0.2 && k.silent == 0.0, "{ch:?}: {k:?}");
        assert_eq!(vote("classical-reports-on-camera", ch.key()), Some(false), "{ch:?}");
        assert_eq!(vote("learned-degrades-faster", ch.key()), None, "{ch:?}: nothing rises");
    }
    let perfect = base.camera.unwrap();
    assert!(perfect.false_alarm == 0.0 && perfect.silent == 0.0, "a perfect camera on a perfect arm: {perfect:?}");
}

#[test]
fn friction_stops_the_arm_short_and_an_outer_correction_takes_it_up() {
    let cfg = |corrections| DegradationConfig {
        protocol: Protocol::Plant,
        levels: ChannelLevels::only(Channel::Friction, vec![0.0, 2.5]),
        targets: 100,
        ood_fraction: 0.0,
        train_steps: 50,
        corrections,
        ..args()
    };
    let plain = degradation(&cfg(0)).unwrap();
    let short = plant(&plain, "analytic", Channel::Friction, 2.5, IN).error.mean;
    // Each joint sticks at most 2.5 / 998 = 2.5 mrad short: up to about 1 cm at the tip.
    assert!(short > 1e-3 && short < 0.011, "a friction loss near the torque limit: {short}");
    let corrected = degradation(&cfg(3)).unwrap();
    let after = plant(&corrected, "analytic", Channel::Friction, 2.5, IN).error.mean;
    assert!(after < short, "corrections that wait for the arm push it on: {after} vs {short}");
}

#[test]
fn model_files_replace_training_and_must_fit_the_arm() {
    let cfg = DegradationConfig { protocol: Protocol::Exercise, targets: 50, train_steps: 50, ..args() };
    let mut t = Trainer::new(TrainConfig { head: HeadKind::Mdn, steps: 20, ..TrainConfig::default() }).unwrap();
    t.run(|_, _| {}).unwrap();
    let model = t.into_model();
    let r = degradation_with(&cfg, vec![model.clone()]).unwrap();
    assert_eq!(r.loaded, [HeadKind::Mdn]);
    assert!(degradation_with(&cfg, vec![model.clone(), model.clone()]).is_err(), "one model per head");
    let other = DegradationConfig { arm: TwoLinkArm::new(1.0, 0.5).unwrap(), ..cfg };
    assert!(degradation_with(&other, vec![model]).is_err(), "a model for another arm");
}

#[test]
fn bad_arguments_and_too_much_work_are_refused_before_any_work() {
    let levels = |v: Vec<f64>| ChannelLevels::default().with(Channel::Encoder, v);
    for bad in [
        DegradationConfig { targets: 0, ..args() },
        DegradationConfig { targets: 2_000_000, ..args() },
        DegradationConfig { tolerance: f64::NAN, ..args() },
        DegradationConfig { corrections: 11, ..args() },
        DegradationConfig { train_steps: 20_000_000, ..args() },
        DegradationConfig { levels: levels(vec![-1.0]), ..args() },
        DegradationConfig { levels: levels(vec![]), ..args() },
        DegradationConfig { mismatch: Mismatch { length_error: [-1.0, 0.0], ..Mismatch::NONE }, ..args() },
        DegradationConfig { region: Region::Annulus, targets: 1_000_000, corrections: 10, ..args() },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
        assert!(degradation(&bad).is_err());
    }
    let work = DegradationConfig { targets: 1_000_000, ..DegradationConfig::default() };
    match degradation(&work) {
        Err(ExperimentError::Config(ConfigError::TooMuchWork { ticks, .. })) => assert!(ticks > 2_000_000),
        other => panic!("expected too much work, got {other:?}"),
    }
}
