//! The lessons: each one a scene the app opens in one click (or `elbow --lesson NAME`), from a
//! clean state, with a two-line caption of what to look for.
//!
//! A [`Scene`] is plain data in the core's own types (which arm, which solver drives, the
//! envelope, where the target sits, the plant's knobs, the atlas layer and the swept channel),
//! so the lessons are tested without a window and the app only applies them.

use crate::analytic::solve_branches;
use crate::arm::ArmKind;
use crate::atlas::Layer;
use crate::experiments::bishop::{BishopConfig, bishop_arm};
use crate::experiments::degradation::Channel;
use crate::kinematics::{JointLimits, Point2, Pose, TwoLinkArm};
use crate::learned::{HeadKind, TrainConfig};
use crate::lineup::SolverId;
use crate::plant::channel::Perturbation;

/// The branch-flip lesson's arm: the default links, the elbow within -1 rad (elbow-up) to pi.
pub fn flip_arm() -> TwoLinkArm {
    TwoLinkArm::default()
        .with_limits(JointLimits::FULL, JointLimits { min: -1.0, max: std::f64::consts::PI })
        .unwrap_or_default()
}

/// The rail3 lessons' target, as a fraction of the reach: the arm's demo target, (1.5, 0) m.
const RAIL3_DEMO: Point2 = Point2::new(0.75, 0.0);

/// The gravity lesson's target, as a fraction of the SO-101's reach.
pub const GRAVITY_TARGET: Point2 = Point2::new(0.85, 0.0);

/// One lesson of the lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lesson {
    /// MSE vs MDN on the two-link arm: the averaging trap.
    Averaging,
    /// Near the base, where the two branches' joints differ most.
    JointsRegion,
    /// Bishop 1994's arm and network size, the RMS tip error beside the report's.
    Bishop1994,
    /// A joint limit forces the MDN driver to change elbow branch: a bounded swing, marked.
    BranchFlip,
    /// Encoder noise: who reports the misses it causes.
    Noise,
    /// Backlash: a dead zone the servo takes up.
    Backlash,
    /// Joint friction: stiction that stops a joint short.
    Friction,
    /// Link flex: a droop the encoders cannot see.
    Flex,
    /// The safety envelope around a learned head.
    Envelope,
    /// The residual hybrid on a mismatched arm.
    Hybrid,
    /// A redundant chain: the MDN's fan against the exact posterior.
    Manifold,
    /// A redundant chain: learned seeds for DLS against DLS from prior starts.
    Seeds,
    /// Gravity on the SO-101: a payload on softened servos, so that the sag shows.
    Gravity,
}

/// The gravity lesson's payload at the gripper, kg.
pub const GRAVITY_PAYLOAD: f64 = 0.25;

/// The gravity lesson's servo gain, N m/rad: a fortieth of the STS3215's 998, soft enough that
/// the sag is some centimetres, a few dozen pixels at 1280x720 (at a tenth, 100 N m/rad, it
/// was 9 mm at the lesson's target: 7 pixels).
pub const GRAVITY_KP: f64 = 25.0;

crate::keys::keyed!(Lesson, "lesson");

/// The arm a scene opens on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SceneArm {
    /// The two-link lab, driven by a solver of the line-up.
    TwoLink {
        /// The driving solver.
        driver: SolverId,
        /// Whether the envelope wraps the driver.
        envelope: bool,
        /// The arm, when the lesson needs its own (else the arm the app opened on).
        arm: Option<TwoLinkArm>,
    },
    /// A named chain, driven by one of its methods, with the methods drawn.
    Chain {
        /// Which chain.
        arm: ArmKind,
        /// The driving method.
        driver: SolverId,
        /// The methods drawn.
        shown: &'static [SolverId],
    },
}

/// Everything a lesson sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scene {
    /// The arm and its driver.
    pub arm: SceneArm,
    /// Where the target sits, as a fraction of the reach along each axis (so it lands at the same
    /// place on any link lengths; a chain's reach is the sum of its links).
    pub target: Point2,
    /// The plant: each reality-gap channel's value in the channel table's units (the mismatch as
    /// a multiple of the default mismatch); every channel left at 0 is at the ideal plant's value.
    pub plant: Perturbation,
    /// The atlas layer shown on the two-link arm.
    pub layer: Layer,
    /// The channel the live degradation plots sweep on the two-link arm.
    pub sweep: Channel,
    /// Whether the camera view (the arm as the encoders and the camera see it) is on.
    pub camera_view: bool,
    /// How the heads train, when the lesson needs its own data and network size (else the
    /// core's defaults); the head, arm and real arm are set per run.
    pub training: Option<TrainConfig>,
    /// Where the plant rests when the lesson opens (else where it is).
    pub start: Option<Pose>,
    /// The servos' position gain, N m/rad, when the lesson softens or stiffens them (else the
    /// SO-101's STS3215, [`crate::plant::dynamics::Servo::STS3215`]).
    pub kp: Option<f64>,
}

impl Lesson {
    /// Every lesson, in the order the menu lists them.
    pub const ALL: [Lesson; 13] = [
        Lesson::Averaging,
        Lesson::JointsRegion,
        Lesson::Bishop1994,
        Lesson::BranchFlip,
        Lesson::Noise,
        Lesson::Backlash,
        Lesson::Friction,
        Lesson::Flex,
        Lesson::Envelope,
        Lesson::Hybrid,
        Lesson::Manifold,
        Lesson::Seeds,
        Lesson::Gravity,
    ];

    /// The name on the command line and in the menu.
    pub const fn key(self) -> &'static str {
        match self {
            Lesson::Averaging => "averaging",
            Lesson::JointsRegion => "joints-region",
            Lesson::Bishop1994 => "bishop1994",
            Lesson::BranchFlip => "branch-flip",
            Lesson::Noise => "noise",
            Lesson::Backlash => "backlash",
            Lesson::Friction => "friction",
            Lesson::Flex => "flex",
            Lesson::Envelope => "envelope",
            Lesson::Hybrid => "hybrid",
            Lesson::Manifold => "manifold",
            Lesson::Seeds => "seeds",
            Lesson::Gravity => "gravity",
        }
    }

    /// A title for the menu.
    pub const fn title(self) -> &'static str {
        match self {
            Lesson::Averaging => "The averaging trap: MSE vs MDN",
            Lesson::JointsRegion => "Where the branches differ most",
            Lesson::Bishop1994 => "Bishop 1994: the MDN paper's arm",
            Lesson::BranchFlip => "A forced branch change: the elbow's joint limit",
            Lesson::Noise => "Encoder noise: who reports the misses",
            Lesson::Backlash => "Backlash: a dead zone the servo takes up",
            Lesson::Friction => "Friction: stiction in the joints",
            Lesson::Flex => "Flex: what the encoders cannot see",
            Lesson::Envelope => "The safety envelope: proposes vs disposes",
            Lesson::Hybrid => "The residual hybrid on a mismatched arm",
            Lesson::Manifold => "A chain: a manifold of answers",
            Lesson::Seeds => "A chain: learned seeds for DLS",
            Lesson::Gravity => "Gravity: the SO-101's sag, made visible",
        }
    }

    /// What to look for, in two lines.
    pub const fn caption(self) -> [&'static str; 2] {
        match self {
            Lesson::Averaging => [
                "The MSE head learnt from both elbow solutions of every target and answers their average, which is no solution: its red arm misses the target by a large margin.",
                "Drag the target: the MSE map is orange (the trap) almost everywhere. Press 2 to drive with the MDN: one branch per component, blue and green on its map.",
            ],
            Lesson::JointsRegion => [
                "Near the base the arm folds and the two branches' elbows are furthest apart (nearly +180° and -180°), so their average, a straight elbow, is furthest from both: the MSE miss is largest here.",
                "Drag the target out towards the rim: the branches close in on each other, the average nears a solution, and the miss map fades.",
            ],
            Lesson::Bishop1994 => [
                "The arm of the report that introduced the MDN: links 0.8 and 0.2, shoulder 0.3-1.2 rad, elbow within ±90°, 1,000 training points, 20 hidden units.",
                "The panel shows the RMS tip error of our MSE net and MDN on the report's 1,000 test points, live as they train, beside the report's 0.0578 and 0.0053.",
            ],
            Lesson::BranchFlip => [
                "This arm's elbow bends at most 1 rad toward elbow-up, so elbow-up answers exist only beyond 1.76 m. The arm opens elbow-up at 1.85 m with the target at 1.3 m.",
                "The MDN driver keeps its branch while it can; here it cannot: the arm swings to elbow-down at the servos' speed, an orange ring marks where, and the panel says why.",
            ],
            Lesson::Noise => [
                "Encoder noise of 0.03 rad: the MDN misses more than 5 cm on part of the workspace and reports none of it (the silent map, yellow where every miss is silent).",
                "The live plots sweep the noise: analytic and DLS check the move on the same noisy encoders, so they raise false alarms too. Turn on the envelope to see what it catches.",
            ],
            Lesson::Backlash => [
                "Backlash of 0.05 rad: free play between each servo and its link; the encoders read the servo, so wherever the move leaves a link in its play is invisible to them.",
                "The silent map shows where an arm resting at the edge of its play misses by more than the tolerance; the encoder check passes every such miss.",
            ],
            Lesson::Friction => [
                "A friction loss of 0.5 N m per joint, ten times the SO-101 servo's: a joint sticks once the servo's pull falls below it, at most loss / gain = 0.5 mrad short.",
                "Against a gain of 998 N m/rad that is about a millimetre at the tip: the live plot rises by that much as the slider goes up, no more.",
            ],
            Lesson::Flex => [
                "Flex of 0.05 rad: the arm droops under gravity while the encoders read the commanded joints, so every encoder check passes a miss.",
                "The camera view shows the true arm below the encoders' dashed arm; the silent map is yellow where the droop exceeds 5 cm, for the classical solvers too.",
            ],
            Lesson::Envelope => [
                "The MDN drives inside the envelope: every proposal is checked analytically (finite, joint step, FK on the nominal arm) and a rejected one falls back to the closed form.",
                "The envelope layer maps where proposals are accepted; the target flashes red at each intervention and the counters say why.",
            ],
            Lesson::Hybrid => [
                "The residual hybrid adds a learned correction to the analytic answer for the real arm's mismatch, inside a trust region.",
                "Where the correction is trusted it beats the closed form on this arm; outside it, the hybrid is exactly the analytic answer, never nothing.",
            ],
            Lesson::Manifold => [
                "On rail3 every reachable target has a whole sheet of answers. The MDN's fan and the flow's (samples) are drawn over the exact posterior's.",
                "Drag the target: where a fan agrees with the exact one its net learnt the manifold; the panel gives each fan's tip miss and mismatch.",
            ],
            Lesson::Seeds => [
                "The hybrid seeds DLS with the MDN's samples; plain DLS starts from the prior. Both are drawn, with their success and iteration counts.",
                "Drag the target: the learned seeds start near a solution, so DLS converges in fewer iterations, and falls back to the prior when they do not.",
            ],
            // The numbers are the plant's (`crate::plant::static_sag`, stretched out forward);
            // a test holds them to it.
            Lesson::Gravity => [
                "Stretched out forward on its own servos (kp 998 N m/rad) the SO-101 sags 0.5 mm under its own weight, 1.2 mm holding 250 g at the gripper: too little to see, which is why gravity alone shows nothing.",
                "Here its servos are a fortieth as stiff (kp 25 N m/rad) and hold 250 g: each joint gives way by its gravity torque over kp, 48 mm at full stretch, and the arm hangs below the target it was sent to.",
            ],
        }
    }

    /// The scene the lesson opens.
    pub fn scene(self) -> Scene {
        let two_link = |driver: SolverId, envelope: bool| SceneArm::TwoLink { driver, envelope, arm: None };
        let mse = SolverId::Learned(HeadKind::Mse);
        let mdn = SolverId::Learned(HeadKind::Mdn);
        let base = Scene {
            arm: two_link(mdn, false),
            target: Point2::new(0.5, 0.4),
            plant: Perturbation::default(),
            layer: Layer::Miss,
            sweep: Channel::Encoder,
            camera_view: false,
            training: None,
            start: None,
            kp: None,
        };
        let plant =
            |channel: Channel, level: f64| Scene { plant: Perturbation::default().with(channel, level), ..base };
        match self {
            Lesson::Averaging => Scene { arm: two_link(mse, false), layer: Layer::Branch, ..base },
            Lesson::JointsRegion => Scene { arm: two_link(mse, false), target: Point2::new(0.15, 0.1), ..base },
            Lesson::Bishop1994 => Scene {
                arm: SceneArm::TwoLink { driver: mdn, envelope: false, arm: Some(bishop_arm()) },
                target: Point2::new(0.673, 0.627),
                layer: Layer::Branch,
                training: Some(BishopConfig::default().train_config(HeadKind::Mdn)),
                ..base
            },
            Lesson::BranchFlip => {
                let arm = flip_arm();
                Scene {
                    arm: SceneArm::TwoLink { driver: mdn, envelope: false, arm: Some(arm) },
                    target: Point2::new(0.65, 0.0),
                    layer: Layer::Branch,
                    start: Some(solve_branches(&arm, Point2::new(1.85, 0.0)).up),
                    ..base
                }
            }
            Lesson::Noise => Scene { layer: Layer::Silent, ..plant(Channel::Encoder, 0.03) },
            Lesson::Backlash => Scene {
                arm: two_link(SolverId::Analytic, false),
                layer: Layer::Silent,
                sweep: Channel::Backlash,
                ..plant(Channel::Backlash, 0.05)
            },
            Lesson::Friction => Scene {
                arm: two_link(SolverId::Analytic, false),
                layer: Layer::Silent,
                sweep: Channel::Friction,
                ..plant(Channel::Friction, 0.5)
            },
            Lesson::Flex => Scene {
                arm: two_link(SolverId::Analytic, false),
                // Stretched out, where the droop is largest.
                target: Point2::new(0.9, 0.05),
                layer: Layer::Silent,
                sweep: Channel::Flex,
                camera_view: true,
                ..plant(Channel::Flex, 0.05)
            },
            Lesson::Envelope => {
                Scene { arm: two_link(mdn, true), layer: Layer::Envelope, ..plant(Channel::Encoder, 0.01) }
            }
            Lesson::Hybrid => Scene {
                arm: two_link(SolverId::Learned(HeadKind::Residual), true),
                layer: Layer::Envelope,
                ..plant(Channel::Mismatch, 1.0)
            },
            Lesson::Manifold => Scene {
                arm: SceneArm::Chain {
                    arm: ArmKind::Rail3,
                    driver: SolverId::Learned(HeadKind::Mdn),
                    shown: &[SolverId::Learned(HeadKind::Mdn), SolverId::Flow, SolverId::Exact],
                },
                target: RAIL3_DEMO,
                ..base
            },
            Lesson::Seeds => Scene {
                arm: SceneArm::Chain {
                    arm: ArmKind::Rail3,
                    driver: SolverId::Hybrid,
                    shown: &[SolverId::Iterative, SolverId::Hybrid],
                },
                target: RAIL3_DEMO,
                ..base
            },
            Lesson::Gravity => Scene {
                arm: SceneArm::Chain {
                    arm: ArmKind::So101,
                    driver: SolverId::Iterative,
                    shown: &[SolverId::Iterative],
                },
                // Forward, a little below the shoulder, near full stretch: where the torques
                // are largest.
                target: GRAVITY_TARGET,
                kp: Some(GRAVITY_KP),
                ..plant(Channel::Payload, GRAVITY_PAYLOAD)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flip_lesson_starts_elbow_up_where_the_target_forbids_it() {
        let scene = Lesson::BranchFlip.scene();
        let SceneArm::TwoLink { arm: Some(arm), .. } = scene.arm else { panic!("its own arm") };
        let start = scene.start.expect("a start pose");
        assert!(arm.within_limits(start) && start.elbow < 0.0, "it opens elbow-up: {start:?}");
        let b = solve_branches(&arm, scene.target * arm.reach());
        assert_eq!(b.admissible, [false, true], "only elbow-down reaches the target");
    }

    #[test]
    fn the_flex_lesson_puts_the_target_where_the_droop_shows() {
        let scene = Lesson::Flex.scene();
        let arm = TwoLinkArm::default();
        let t = scene.target * arm.reach();
        let pose = solve_branches(&arm, t).down;
        let cfg = crate::PlantConfig { flex: scene.plant[Channel::Flex], ..crate::PlantConfig::ideal(arm) };
        let mut plant = crate::Plant::new(cfg.two_link_real(), cfg, &pose.coords());
        plant.settle();
        let droop = (plant.tip() - t).norm();
        assert!(droop > 0.05, "the droop at the lesson's target is {droop} m");
    }

    #[test]
    fn every_lesson_parses_by_its_key_and_has_a_two_line_caption() {
        for lesson in Lesson::ALL {
            assert_eq!(crate::keys::parse::<Lesson>(lesson.key()), Ok(lesson));
            assert!(lesson.caption().iter().all(|l| l.len() > 40), "{lesson}");
        }
        assert!(crate::keys::parse::<Lesson>("bogus").is_err());
    }

    #[test]
    fn the_joints_region_target_is_where_the_branches_differ_more_than_the_averaging_one() {
        // As the heads see them: the elbow is a raw angle at their output (up <= 0 <= down), so
        // the branches' elbows differ by 2|q2|, most where the arm folds, and their average (a
        // straight elbow) misses by the most there.
        let arm = TwoLinkArm::default();
        let spread = |lesson: Lesson| {
            let t = lesson.scene().target * arm.reach();
            let b = solve_branches(&arm, t);
            assert!(b.unreachable.is_none(), "{lesson}: {t:?}");
            ((b.up.elbow - b.down.elbow).abs(), arm.miss(b.average(), t))
        };
        let (near_base, far) = (spread(Lesson::JointsRegion), spread(Lesson::Averaging));
        assert!(near_base.0 > 1.5 * far.0 && near_base.1 > 2.0 * far.1, "{near_base:?} vs {far:?}");
    }

    #[test]
    fn each_plant_lesson_turns_on_its_own_knob_and_sweeps_it() {
        let knob = |l: Lesson| {
            let p = l.scene().plant;
            [Channel::Encoder, Channel::Backlash, Channel::Friction, Channel::Flex].map(|c| p[c] > 0.0)
        };
        assert_eq!(knob(Lesson::Noise), [true, false, false, false]);
        assert_eq!(knob(Lesson::Backlash), [false, true, false, false]);
        assert_eq!(knob(Lesson::Friction), [false, false, true, false]);
        assert_eq!(knob(Lesson::Flex), [false, false, false, true]);
        assert_eq!(Lesson::Backlash.scene().sweep, Channel::Backlash);
        assert_eq!(Lesson::Flex.scene().sweep, Channel::Flex);
        assert_eq!(Lesson::Hybrid.scene().plant[Channel::Mismatch], 1.0, "the default mismatch");
    }

    #[test]
    fn the_bishop_lesson_opens_on_the_reports_arm_with_both_branches_inside_its_limits() {
        let scene = Lesson::Bishop1994.scene();
        let SceneArm::TwoLink { arm: Some(arm), .. } = scene.arm else { panic!("its own arm") };
        let t = scene.target * arm.reach();
        assert_eq!(solve_branches(&arm, t).admissible, [true, true], "{t:?}");
        let training = scene.training.expect("the report's nets");
        assert_eq!((training.data_size, training.hidden, training.depth), (1000, 20, 1));
        assert!(Lesson::ALL.iter().filter(|l| l.scene().training.is_some()).count() == 1);
    }

    #[test]
    fn the_gravity_lessons_caption_gives_the_plants_own_sags() {
        use crate::plant::dynamics::Servo;
        use crate::plant::{PlantConfig, static_sag};
        let scene = Lesson::Gravity.scene();
        let SceneArm::Chain { arm: kind, .. } = scene.arm else { panic!("the SO-101's chain") };
        assert_eq!(kind, ArmKind::So101);
        let arm = kind.arm();
        let (payload, kp) = (scene.plant[Channel::Payload], scene.kp.expect("softened servos"));
        // The sag as the app's plant has it (the STS3215 without friction), in millimetres.
        let sag = |kp: f64, payload: f64, x: &[f64]| {
            let ideal = PlantConfig::ideal(TwoLinkArm::default());
            let cfg = PlantConfig { gravity: arm.vertical(), payload, servo: Servo { kp, ..ideal.servo }, ..ideal };
            static_sag(arm.real(), cfg, x).norm() * 1e3
        };
        let stretched = [0.0; 3];
        let real = Servo::STS3215.kp;
        let text = Lesson::Gravity.caption().join(" ");
        let said = [
            format!("(kp {real:.0} N m/rad)"),
            format!("sags {:.1} mm under its own weight", sag(real, 0.0, &stretched)),
            format!("{:.1} mm holding {:.0} g", sag(real, payload, &stretched), payload * 1e3),
            format!("a fortieth as stiff (kp {kp:.0} N m/rad) and hold {:.0} g", payload * 1e3),
            format!("{:.0} mm at full stretch", sag(kp, payload, &stretched)),
        ];
        for words in said {
            assert!(text.contains(&words), "the caption should say `{words}`: {text}");
        }
        assert!((real / kp - 40.0).abs() < 0.5, "a fortieth: {kp}");
        // The real servos' sag is under a millimetre; at the lesson's target, wherever DLS puts
        // the arm from the prior's centre, the lesson's is several.
        assert!(sag(real, 0.0, &stretched) < 1.0);
        let target = scene.target * arm.chain.reach();
        let mut x = arm.prior_center();
        crate::chain::ChainDls::new(&arm.chain).refine(&mut x, target, 500);
        assert!((arm.chain.tip(&x) - target).norm() < 1e-6, "DLS reaches {target:?}: {x:?}");
        let there = sag(kp, payload, &x);
        assert!(there > 20.0 && there < 100.0, "{there} mm at {x:?}");
    }
}
