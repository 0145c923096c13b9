//! The SO-101 arm's three pitch joints (shoulder lift, elbow flex, wrist flex) as a planar chain
//! in a vertical plane, with the link lengths, joint ranges and mass properties of its MuJoCo
//! model in MuJoCo Menagerie (`robotstudio_so101/so101.xml`, commit 191a7ba; derived and checked
//! by `reference/mujoco_plant.py`, table in `reference/so101.md`).
//!
//! The plane: `x` forward, `y` up (gravity along −y), the origin on the shoulder-lift axis. The
//! other joints (shoulder pan, wrist roll, gripper) stay at 0, the tip is the gripper frame. Our
//! coordinates are the chain's usual relative link angles `θ_k = o_k + q_k`, where `q_k` is the
//! Menagerie joint angle with its sign flipped (every pitch axis points along our −z) and `o_k` is
//! the link angle at Menagerie zero ([`ZERO_OFFSETS`]).

use crate::chain::arm::{Chain, ChainError, Link};
use crate::kinematics::JointLimits;
use crate::plant::dynamics::Inertia;

/// Link lengths, metres: shoulder lift to elbow flex, elbow flex to wrist flex, wrist flex to the
/// gripper frame.
pub const LENGTHS: [f64; 3] = [0.11600002112068772, 0.13500018518505813, 0.15967668078285321];

/// Each link's angle relative to the previous one when every Menagerie joint is at 0, radians.
pub const ZERO_OFFSETS: [f64; 3] = [1.3270094336148002, -1.2884814367726616, 0.03653888702119626];

/// Each joint's Menagerie range, radians (symmetric, so the sign flip keeps it).
pub const RANGES: [f64; 3] = [1.7453293, 1.69, 1.658063];

/// Mass properties of each link in its own frame (`x` along the link): the upper arm, the lower
/// arm, and the wrist with the gripper, jaw and camera mount lumped in.
pub const BODIES: [Inertia; 3] = [
    Inertia { mass: 0.103, com: [0.08921354229093649, 0.013553051497846814], inertia: 0.0001424870000000011 },
    Inertia { mass: 0.104, com: [0.09812216732770915, -0.0005361131905174065], inertia: 0.00014529000000000115 },
    Inertia { mass: 0.19, com: [0.06887990035401562, -0.00379849483320408], inertia: 0.0002092675517286675 },
];

/// The chain: each joint's range is the Menagerie range about its zero offset.
pub fn chain() -> Result<Chain, ChainError> {
    let links = (0..3)
        .map(|k| Link {
            length: LENGTHS[k],
            limits: JointLimits { min: ZERO_OFFSETS[k] - RANGES[k], max: ZERO_OFFSETS[k] + RANGES[k] },
        })
        .collect();
    Chain::new(None, links)
}

/// Our chain angles for Menagerie joint angles `q` (shoulder lift, elbow flex, wrist flex).
pub fn from_menagerie(q: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|k| ZERO_OFFSETS[k] - q[k])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::{Point2, TwoLinkArm};
    use crate::plant::dynamics::{self, Servo};
    use crate::plant::{PlantConfig, RealChain, static_sag};

    #[test]
    fn menagerie_zero_reaches_forward_and_up() {
        let chain = chain().unwrap();
        let zero = from_menagerie([0.0; 3]);
        assert!(chain.within_limits(&zero));
        let tip = chain.tip(&zero);
        // reference/mujoco_plant.py: the gripper frame at Menagerie zero, in our plane.
        assert!((tip.x - 0.322211).abs() < 2e-3 && (tip.y - 0.129399).abs() < 2e-3, "{tip:?}");
        // Stretched out forward: every link horizontal, the tip at the reach.
        let flat = from_menagerie(ZERO_OFFSETS);
        assert!(chain.within_limits(&flat));
        let reach: f64 = LENGTHS.iter().sum();
        assert!((chain.tip(&flat).x - reach).abs() < 1e-12);
    }

    /// The tip's sag by torque balance, to first order: joint `k` gives way by its gravity
    /// torque over the servo's gain, `δ_k = -g Σ m_j (x_j - x_k) / kp` over every mass beyond
    /// it (each link's centre of mass, and the payload at the tip; `x_k` the joint's), and the
    /// tip moves by `Σ δ_k ẑ × (tip - joint_k)`. Written from the bodies and the payload
    /// directly, not from [`RealChain::with_payload`].
    fn sag_by_hand(real: &RealChain, payload: f64, kp: f64, x: &[f64]) -> Point2 {
        let points = real.chain.points(x);
        let n = real.bodies.len();
        let tip = points[n];
        let mut masses = Vec::new();
        let mut theta = 0.0;
        for (k, body) in real.bodies.iter().enumerate() {
            theta += x[k];
            let (c, s) = (theta.cos(), theta.sin());
            let [u, v] = body.com;
            masses.push((k, body.mass, points[k] + Point2::new(c * u - s * v, s * u + c * v)));
        }
        masses.push((n - 1, payload, tip));
        let mut sag = Point2::zeros();
        for (k, joint) in points[..n].iter().enumerate() {
            let torque: f64 =
                masses.iter().filter(|m| m.0 >= k).map(|&(_, m, p)| -m * dynamics::GRAVITY * (p.x - joint.x)).sum();
            let r = tip - joint;
            sag += Point2::new(-r.y, r.x) * (torque / kp);
        }
        sag
    }

    #[test]
    fn the_so101_sags_as_the_torque_balance_says() {
        let arm = crate::arm::ArmKind::So101.arm();
        let real = arm.real();
        // Stretched out forward, Menagerie zero, forward and down, and folded up; on the real
        // servos, bare and holding 250 g, and on servos a tenth as stiff. First order is within
        // 0.3 % of the plant on the real servos (a sag of a milliradian or so per joint), 1.6 %
        // on the soft ones (about 20 mrad).
        let poses = [[0.0, 0.0, 0.0], from_menagerie([0.0; 3]), [0.3, -0.9, 0.2], [1.2, -1.5, -0.8]];
        for x in poses {
            assert!(arm.chain.within_limits(&x), "{x:?}");
            for (kp, payload, tolerance) in
                [(Servo::STS3215.kp, 0.0, 0.01), (Servo::STS3215.kp, 0.25, 0.01), (100.0, 0.25, 0.03)]
            {
                let cfg = PlantConfig {
                    gravity: true,
                    payload,
                    servo: Servo { kp, frictionloss: 0.0, ..Servo::STS3215 },
                    ..PlantConfig::ideal(TwoLinkArm::default())
                };
                let measured = static_sag(real.clone(), cfg, &x);
                let hand = sag_by_hand(&real, payload, kp, &x);
                assert!(
                    (measured - hand).norm() <= tolerance * hand.norm() + 1e-6,
                    "{x:?}, kp {kp}, {payload} kg: {measured:?} against {hand:?} by hand"
                );
            }
        }
        // Gravity off: nothing sags, payload or not.
        let flat = PlantConfig { payload: 0.25, ..PlantConfig::ideal(TwoLinkArm::default()) };
        assert!(static_sag(real, flat, &[0.0; 3]).norm() < 1e-9);
    }
}
