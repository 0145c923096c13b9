//! The simulated "real" arm that sits between a controller and the world.
//!
//! A command passes through a first-order lag (the motors), then joint backlash (a dead zone:
//! the link only moves once the motor has taken up the play), then the model mismatch of
//! [`RealArm`] (other link lengths, joint offsets the encoders cannot see). The encoders read the
//! link side, with Gaussian noise. Every random draw comes from the plant's own seeded generator.

use crate::kinematics::{Point2, Pose, RealArm, TwoLinkArm};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

/// Parameters of the simulated arm.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlantConfig {
    /// The true geometry and the joint offsets (the sim-to-real gap).
    pub real: RealArm,
    /// Backlash: half-width of each joint's dead zone, radians. The link stays put until the
    /// motor has moved this far past it.
    pub backlash: f64,
    /// Motor time constant, seconds (0: the motor reaches each command at once).
    pub lag: f64,
    /// Standard deviation of the encoder noise, radians.
    pub noise_std: f64,
    /// Seed of the noise.
    pub seed: u64,
}

impl PlantConfig {
    /// A perfect plant: the nominal arm, no backlash, lag or noise.
    pub fn ideal(arm: TwoLinkArm) -> Self {
        Self { real: RealArm::ideal(arm), backlash: 0.0, lag: 0.0, noise_std: 0.0, seed: 0 }
    }

    /// The same configuration with every parameter made sane: negative or non-finite backlash,
    /// lag and noise become 0.
    pub fn sanitized(mut self) -> Self {
        let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        self.backlash = clean(self.backlash);
        self.lag = clean(self.lag);
        self.noise_std = clean(self.noise_std);
        self
    }
}

/// The simulated arm's state.
#[derive(Debug, Clone)]
pub struct Plant {
    cfg: PlantConfig,
    noise: Option<Normal<f64>>,
    rng: ChaCha8Rng,
    command: Pose,
    motor: Pose,
    link: Pose,
}

/// The backlash (play) operator on one joint: the link follows the motor only once the gap
/// exceeds `half_width`, then trails it by exactly that much.
pub fn with_backlash(link: f64, motor: f64, half_width: f64) -> f64 {
    let gap = motor - link;
    if gap > half_width {
        motor - half_width
    } else if gap < -half_width {
        motor + half_width
    } else {
        link
    }
}

impl Plant {
    /// A plant at rest in `pose` (motor, link and command all there).
    pub fn new(cfg: PlantConfig, pose: Pose) -> Self {
        let cfg = cfg.sanitized();
        let pose = crate::solver::sane_seed(pose);
        let noise = (cfg.noise_std > 0.0).then(|| Normal::new(0.0, cfg.noise_std).expect("finite std"));
        Self { cfg, noise, rng: ChaCha8Rng::seed_from_u64(cfg.seed), command: pose, motor: pose, link: pose }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PlantConfig {
        &self.cfg
    }

    /// Changes the parameters, keeping the arm where it is and the noise stream going.
    pub fn set_config(&mut self, cfg: PlantConfig) {
        let cfg = cfg.sanitized();
        self.noise = (cfg.noise_std > 0.0).then(|| Normal::new(0.0, cfg.noise_std).expect("finite std"));
        self.cfg = cfg;
    }

    /// Sends a new command; non-finite angles are ignored (the previous command stays).
    pub fn command(&mut self, pose: Pose) {
        if pose.is_finite() {
            // Unwrap onto the motor's side of the circle so a command across +-pi turns the short way.
            let unwrap = |c: f64, m: f64| m + crate::kinematics::wrap_angle(c - m);
            self.command = Pose::new(unwrap(pose.shoulder, self.motor.shoulder), unwrap(pose.elbow, self.motor.elbow));
        }
    }

    /// The command in force.
    pub fn commanded(&self) -> Pose {
        self.command
    }

    /// Advances the motors by `dt` seconds and lets the links follow through the backlash.
    pub fn step(&mut self, dt: f64) {
        let alpha = if self.cfg.lag > 0.0 && dt.is_finite() { 1.0 - (-dt.max(0.0) / self.cfg.lag).exp() } else { 1.0 };
        let follow = |m: f64, c: f64| m + alpha * (c - m);
        self.motor =
            Pose::new(follow(self.motor.shoulder, self.command.shoulder), follow(self.motor.elbow, self.command.elbow));
        let b = self.cfg.backlash;
        self.link = Pose::new(
            with_backlash(self.link.shoulder, self.motor.shoulder, b),
            with_backlash(self.link.elbow, self.motor.elbow, b),
        );
    }

    /// Runs the motors until they reach the command (at most 10,000 steps of a tenth of the lag).
    pub fn settle(&mut self) {
        if self.cfg.lag <= 0.0 {
            self.step(0.0);
            return;
        }
        for _ in 0..10_000 {
            self.step(self.cfg.lag * 0.1);
            if self.motor.max_joint_distance(self.command) < 1e-12 {
                break;
            }
        }
        self.motor = self.command;
        self.step(0.0);
    }

    /// What the encoders read: the link angles (in the command frame) plus noise.
    pub fn measure(&mut self) -> Pose {
        match &self.noise {
            None => self.link,
            Some(n) => {
                Pose::new(self.link.shoulder + n.sample(&mut self.rng), self.link.elbow + n.sample(&mut self.rng))
            }
        }
    }

    /// The link angles in the command frame, without noise (what a perfect encoder would read).
    pub fn link_pose(&self) -> Pose {
        self.link
    }

    /// Where the real tip is.
    pub fn tip(&self) -> Point2 {
        self.cfg.real.tip(self.link)
    }

    /// Base, elbow and tip of the real arm, for drawing.
    pub fn joints(&self) -> [Point2; 3] {
        self.cfg.real.arm.joints(self.cfg.real.actual(self.link))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_plant_goes_where_it_is_told() {
        let arm = TwoLinkArm::default();
        let mut p = Plant::new(PlantConfig::ideal(arm), Pose::default());
        p.command(Pose::new(0.5, 1.0));
        p.settle();
        assert!((p.tip() - arm.tip(Pose::new(0.5, 1.0))).norm() < 1e-12);
        assert_eq!(p.measure(), Pose::new(0.5, 1.0));
    }

    #[test]
    fn backlash_is_a_dead_zone_on_commanded_changes() {
        let cfg = PlantConfig { backlash: 0.05, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = Plant::new(cfg, Pose::default());
        p.command(Pose::new(0.03, 0.0));
        p.settle();
        assert_eq!(p.link_pose().shoulder, 0.0, "inside the dead zone nothing moves");
        p.command(Pose::new(0.5, 0.0));
        p.settle();
        assert!((p.link_pose().shoulder - 0.45).abs() < 1e-12, "the link trails by the half-width");
        p.command(Pose::new(0.42, 0.0));
        p.settle();
        assert!((p.link_pose().shoulder - 0.45).abs() < 1e-12, "reversing takes up the play first");
        assert_eq!(with_backlash(0.0, 0.2, 0.0), 0.2);
    }

    #[test]
    fn lag_approaches_the_command_and_noise_is_seeded() {
        let cfg = PlantConfig { lag: 0.1, noise_std: 0.01, seed: 9, ..PlantConfig::ideal(TwoLinkArm::default()) };
        let mut p = Plant::new(cfg, Pose::default());
        p.command(Pose::new(1.0, 0.0));
        p.step(0.1);
        assert!((p.link_pose().shoulder - (1.0 - (-1f64).exp())).abs() < 1e-12);
        p.settle();
        assert!((p.link_pose().shoulder - 1.0).abs() < 1e-9);
        let mut q = Plant::new(cfg, Pose::default());
        let mut p = Plant::new(cfg, Pose::default());
        assert_eq!(p.measure(), q.measure());
        let spread: Vec<f64> = (0..2000).map(|_| p.measure().elbow).collect();
        let sd = (spread.iter().map(|v| v * v).sum::<f64>() / 2000.0).sqrt();
        assert!((sd - 0.01).abs() < 0.001, "{sd}");
    }

    #[test]
    fn mismatch_moves_the_real_tip_and_bad_input_is_ignored() {
        let arm = TwoLinkArm::default();
        let real = RealArm::mismatched(&arm, [0.1, 0.0], Pose::new(0.0, 0.0)).unwrap();
        let mut p = Plant::new(PlantConfig { real, ..PlantConfig::ideal(arm) }, Pose::default());
        assert!((p.tip().x - 2.1).abs() < 1e-12);
        p.command(Pose::new(f64::NAN, 0.0));
        p.set_config(PlantConfig { backlash: f64::NAN, noise_std: -1.0, ..*p.config() });
        p.settle();
        assert!(p.tip().x.is_finite() && p.config().backlash == 0.0 && p.config().noise_std == 0.0);
    }
}
