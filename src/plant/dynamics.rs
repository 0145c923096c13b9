//! Rigid-body dynamics of a planar serial arm driven by position servos, in MuJoCo's terms.
//!
//! The arm is a chain of hinges about `z` in the `x-y` plane (gravity, when on, along `−y`). Hinge
//! `k` sits on the previous body's `x` axis at [`Dof::at`] and carries the body after it: its
//! mass, its centre of mass in its own frame and its rotational inertia about that centre. Each
//! hinge has an armature (the rotor's reflected inertia, added to the mass matrix's diagonal),
//! viscous damping, a Coulomb friction loss, an optional range (a hard stop: backlash is a hinge
//! of range `±b` behind the servo, as the SO-101's MuJoCo model describes it) and an optional
//! position servo with MuJoCo's `position` actuator semantics:
//! `torque = clamp(kp (goal − q) − kv q̇, ±limit)`.
//!
//! One step of `dt` seconds is MuJoCo's `implicitfast` scheme: the velocity-dependent forces
//! (damping, the servo's `kv` where it is not saturated) are taken implicitly,
//! `(M + dt D) Δv = dt f`, the position explicitly after the velocity (semi-implicit Euler). Then
//! the friction losses and the hinge stops act as impulses found by projected Gauss-Seidel on the
//! same effective mass: a friction impulse is bounded by `loss · dt` and holds a joint still
//! outright (true stiction, where MuJoCo's soft constraint lets it creep), a stop's impulse only
//! pushes, and softly, as MuJoCo's default joint limit does (a gear mesh gives a little). The mass matrix and the bias forces (Coriolis, centrifugal, gravity) come from the
//! recursive Newton-Euler algorithm. Every operation is plain `f64` arithmetic in a fixed order:
//! a run is reproducible bit for bit.
//!
//! The position gain acts explicitly, so a servo too stiff for the step would diverge: a step
//! is split into equal sub-steps when it must ([`Multibody::splits`], [`STABLE`], [`MAX_TURN`]),
//! which the SO-101's servos never need, and [`Servo::validate`] refuses what [`MAX_SPLIT`]
//! sub-steps cannot resolve.

// Dense small-matrix algebra (the mass matrix, its Cholesky factor, the impulse sweeps) reads
// best with the indices of the formulas it implements.
#![allow(clippy::needless_range_loop)]

use super::error::{PlantError, Quantity};

/// The most degrees of freedom a model may have (servo joints and backlash hinges together): a
/// hinge of free play behind every revolute joint of the longest chain.
pub const MAX_DOF: usize = 2 * crate::kinematics::serial::MAX_COORDS;

/// Models up to this many degrees of freedom step on arrays of exactly their size; larger ones
/// on [`MAX_DOF`]-sized arrays padded with inert rows.
const EXACT_DOF: usize = 8;

/// The plant's sub-step, seconds: the STS3215 servo takes it unsplit ([`STABLE`]: 0.53), it
/// stays within the tolerances of MuJoCo's traces at 0.2 ms (`tests/plant_vs_mujoco.rs`: every
/// metric within 85 % of its tolerance; 2.5 ms, the longest unsplit step, within 91 %; 5 ms
/// misses the stiff servo's tracking), and a plant with free play steps it as two pieces of 1 ms
/// (the plant's `PLAY_STEP`, which keeps its landings as repeatable as at 1 ms). Goals arriving
/// within a sub-step arrive at their own time (the plant's `step`).
pub const SUBSTEP: f64 = 2e-3;

/// `$body` with the const `$n` set to the model size `$len`: one copy per size up to
/// [`EXACT_DOF`], so every array is exactly as long as the model; past that, one copy on arrays
/// padded to [`MAX_DOF`].
macro_rules! sized {
    ($len:expr, $n:ident => $body:expr) => {
        match $len {
            1 => {
                const $n: usize = 1;
                $body
            }
            2 => {
                const $n: usize = 2;
                $body
            }
            3 => {
                const $n: usize = 3;
                $body
            }
            4 => {
                const $n: usize = 4;
                $body
            }
            5 => {
                const $n: usize = 5;
                $body
            }
            6 => {
                const $n: usize = 6;
                $body
            }
            7 => {
                const $n: usize = 7;
                $body
            }
            EXACT_DOF => {
                const $n: usize = EXACT_DOF;
                $body
            }
            _ => {
                const $n: usize = MAX_DOF;
                $body
            }
        }
    };
}

/// Standard gravity, m/s².
pub const GRAVITY: f64 = 9.81;

/// The most a joint may turn in one sub-step, radians (a rail: move, metres): the velocity-dependent forces (Coriolis,
/// centrifugal) act explicitly, and stay accurate while the links turn little per step. The
/// SO-101's servos turn at most 4.9 rad/s, 0.01 rad per 2 ms step.
pub const MAX_TURN: f64 = 0.1;

/// Projected Gauss-Seidel sweeps per step for the friction and stop impulses, at most.
const PGS_SWEEPS: usize = 12;

/// A sweep of the projected Gauss-Seidel that changes no hinge's speed by more than this, rad/s
/// (m/s on a rail), has converged: a thousandth of the speed that counts as stuck, nine orders
/// below the plant's settling speed.
const PGS_CONVERGED: f64 = 1e-12;

/// The mass properties of one body, in its own frame (`x` along the link).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Inertia {
    /// Mass, kg.
    pub mass: f64,
    /// Centre of mass in the body frame, metres.
    pub com: [f64; 2],
    /// Rotational inertia about the centre of mass (about `z`), kg m².
    pub inertia: f64,
}

impl Inertia {
    /// A massless body (the output flange between a servo and its backlash hinge).
    pub const NONE: Inertia = Inertia { mass: 0.0, com: [0.0, 0.0], inertia: 0.0 };

    /// A uniform rod of `mass` kg and `length` m along `x`.
    pub fn rod(mass: f64, length: f64) -> Self {
        Self { mass, com: [length / 2.0, 0.0], inertia: mass * length * length / 12.0 }
    }

    /// A solid ball of `mass` kg and `density` kg/m³ centred at `at` (body frame, metres): its
    /// radius is `(3 mass / (4 pi density))^(1/3)` and its inertia about its centre
    /// `2/5 mass radius²`. Nothing (no mass) for a mass or density of 0, less, or not finite.
    pub fn ball(mass: f64, density: f64, at: [f64; 2]) -> Self {
        if !(mass.is_finite() && mass > 0.0 && density.is_finite() && density > 0.0) {
            return Self::NONE;
        }
        let radius = (3.0 * mass / (4.0 * std::f64::consts::PI * density)).cbrt();
        Self { mass, com: at, inertia: 0.4 * mass * radius * radius }
    }

    /// This body with `part` rigidly attached (both in the same frame): the masses add, the
    /// centre of mass is their mass-weighted mean, and the inertia about the new centre of mass
    /// is each part's about its own centre plus its mass times its squared distance to the new
    /// one (the parallel-axis theorem). So the inertia about the joint (the frame's origin) is
    /// the sum of the two parts' ([`Inertia::about_origin`]). A part without mass adds nothing.
    pub fn with_part(self, part: Inertia) -> Self {
        if !(part.mass.is_finite() && part.mass > 0.0) {
            return self;
        }
        let total = self.mass + part.mass;
        let com = [0, 1].map(|i| (self.mass * self.com[i] + part.mass * part.com[i]) / total);
        let d2 = |p: [f64; 2]| (p[0] - com[0]).powi(2) + (p[1] - com[1]).powi(2);
        let inertia = self.inertia + self.mass * d2(self.com) + part.inertia + part.mass * d2(part.com);
        Self { mass: total, com, inertia }
    }

    /// Rotational inertia about the frame's origin (the joint), kg m².
    pub fn about_origin(&self) -> f64 {
        self.inertia + self.mass * (self.com[0].powi(2) + self.com[1].powi(2))
    }
}

/// A position servo and the joint it drives, in MuJoCo's units.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Servo {
    /// Position gain, N m/rad.
    pub kp: f64,
    /// Velocity gain of the actuator, N m s/rad.
    pub kv: f64,
    /// Largest torque the servo gives, N m.
    pub torque_limit: f64,
    /// Viscous damping of the joint, N m s/rad.
    pub damping: f64,
    /// Armature (reflected rotor inertia), kg m².
    pub armature: f64,
    /// Coulomb friction loss of the joint, N m.
    pub frictionloss: f64,
}

impl Servo {
    /// The Feetech STS3215 of the SO-101 arm, as MuJoCo Menagerie models it
    /// (`robotstudio_so101/so101.xml`, class `sts3215`, commit 191a7ba).
    pub const STS3215: Servo =
        Servo { kp: 998.22, kv: 2.731, torque_limit: 2.94, damping: 0.60, armature: 0.028, frictionloss: 0.052 };

    /// The fastest the servo turns a joint, rad/s: at full torque against its own damping (the
    /// position loop saturates on a far goal). The STS3215's is 4.9 rad/s; Feetech's datasheet
    /// gives 4.7 (0.222 s per 60° at 7.4 V). Infinite without damping.
    pub fn no_load_speed(&self) -> f64 {
        if self.damping > 0.0 { self.torque_limit / self.damping } else { f64::INFINITY }
    }

    /// Checks every field, naming the first bad one in its unit: kp and the torque limit from
    /// [`MIN_GAIN`] to [`MAX_GAIN`], kv, damping and friction loss from 0 to [`MAX_GAIN`], the
    /// armature from [`MIN_ARMATURE`] to [`MAX_ARMATURE`]; then the servo's rates on its armature
    /// alone (the least inertia it can drive, whatever the links): its natural frequency
    /// `sqrt(kp / armature)` at most [`MAX_NATURAL_FREQUENCY`] and `kv / armature` at most
    /// [`MAX_VELOCITY_RATE`], so that [`Multibody::step`] stays stable within [`MAX_SPLIT`]
    /// sub-steps of the plant's step ([`SUBSTEP`]).
    pub fn validate(&self) -> Result<(), PlantError> {
        let bounded = [
            (Quantity::Kp, self.kp, MIN_GAIN, MAX_GAIN, "N m/rad"),
            (Quantity::TorqueLimit, self.torque_limit, MIN_GAIN, MAX_GAIN, "N m"),
            (Quantity::Kv, self.kv, 0.0, MAX_GAIN, "N m s/rad"),
            (Quantity::Damping, self.damping, 0.0, MAX_GAIN, "N m s/rad"),
            (Quantity::Armature, self.armature, MIN_ARMATURE, MAX_ARMATURE, "kg m^2"),
            (Quantity::FrictionLoss, self.frictionloss, 0.0, MAX_GAIN, "N m"),
        ];
        for (quantity, v, lo, hi, unit) in bounded {
            quantity.check(v, unit, [lo, hi])?;
        }
        Quantity::NaturalFrequency.check_rate((self.kp / self.armature).sqrt(), "rad/s", MAX_NATURAL_FREQUENCY)?;
        Quantity::VelocityRate.check_rate(self.kv / self.armature, "1/s", MAX_VELOCITY_RATE)?;
        Quantity::TopAcceleration.check_rate(self.top_acceleration(), "rad/s^2", MAX_ACCELERATION)
    }

    /// The fastest the servo can accelerate its own rotor, rad/s²: its largest torque, the
    /// torque limit or `kp` half a turn from the goal whichever is less, over the armature.
    pub fn top_acceleration(&self) -> f64 {
        self.torque_limit.min(std::f64::consts::PI * self.kp) / self.armature
    }

    /// The same servo brought into the range [`Servo::validate`] accepts: each field to the
    /// nearest accepted value (a non-finite or non-positive kp or torque limit to the STS3215's,
    /// a non-finite kv, damping or friction loss to 0, a non-finite armature to the smallest),
    /// then the armature raised until the natural frequency, `kv / armature` and the top
    /// acceleration are within their limits.
    pub fn sanitized(self) -> Self {
        let nominal = Servo::STS3215;
        let clamp = |v: f64, lo: f64, hi: f64, bad: f64| if v.is_finite() { v.clamp(lo, hi) } else { bad };
        let positive =
            |v: f64, nominal: f64| if v.is_finite() && v > 0.0 { v.clamp(MIN_GAIN, MAX_GAIN) } else { nominal };
        let kp = positive(self.kp, nominal.kp);
        let kv = clamp(self.kv, 0.0, MAX_GAIN, 0.0);
        let torque_limit = positive(self.torque_limit, nominal.torque_limit);
        let armature = clamp(self.armature, MIN_ARMATURE, MAX_ARMATURE, MIN_ARMATURE)
            .max(kp / (MAX_NATURAL_FREQUENCY * MAX_NATURAL_FREQUENCY))
            .max(kv / MAX_VELOCITY_RATE)
            .max(torque_limit.min(std::f64::consts::PI * kp) / MAX_ACCELERATION);
        Servo {
            kp,
            kv,
            torque_limit,
            damping: clamp(self.damping, 0.0, MAX_GAIN, 0.0),
            armature,
            frictionloss: clamp(self.frictionloss, 0.0, MAX_GAIN, 0.0),
        }
    }
}

/// The largest gain, torque, damping or friction accepted (N m/rad, N m, N m s/rad, N m).
pub const MAX_GAIN: f64 = 1e6;

/// The smallest position gain (N m/rad) and torque limit (N m) accepted: a thousandth of the
/// smallest hobby servo's.
pub const MIN_GAIN: f64 = 1e-3;

/// The smallest armature accepted, kg m²: a small coreless motor's rotor (every servo has one;
/// the STS3215's reflected through its gears is 0.028).
pub const MIN_ARMATURE: f64 = 1e-6;

/// The largest armature accepted, kg m².
pub const MAX_ARMATURE: f64 = 1e3;

/// The fastest natural frequency of a servo on its armature alone accepted, `sqrt(kp /
/// armature)`, rad/s (16 kHz; the STS3215's is 189 rad/s, an industrial drive's a few thousand):
/// the plant's 2 ms step splits into at most 231 sub-steps for it.
pub const MAX_NATURAL_FREQUENCY: f64 = 1e5;

/// The largest `kv / armature` accepted, 1/s (a velocity loop of 20 µs; the STS3215's is
/// 98 1/s): the plant's 2 ms step splits into at most 267 sub-steps for it, 400 with the
/// natural frequency at its limit too (within [`MAX_SPLIT`]).
pub const MAX_VELOCITY_RATE: f64 = 5e4;

/// The largest top acceleration of a servo on its armature alone accepted
/// ([`Servo::top_acceleration`]), rad/s² (a high-dynamic servo motor's, unloaded; the STS3215's is
/// 105 rad/s², issue 48's `--kp 1e6 --torque-limit 1e4` on the STS3215's armature 3.6e5): half a
/// turn at it ends at 2500 rad/s, so the links turn at most [`MAX_TURN`] per sub-step within
/// [`MAX_SPLIT`] of them.
pub const MAX_ACCELERATION: f64 = 1e6;

/// The backlash hinge of MuJoCo Menagerie's SO-101 model (class `backlash`): its damping,
/// N m s/rad, and armature, kg m².
pub const PLAY_DAMPING: f64 = 0.01;
/// See [`PLAY_DAMPING`].
pub const PLAY_ARMATURE: f64 = 0.01;

/// One joint of the model (a hinge, or the base's slide) and the body it carries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dof {
    /// True for a prismatic joint along the world's `y` axis (a rail; only the first joint may
    /// be one): `q` is then a height in metres, and its servo's gains, damping, armature and
    /// friction are in N/m, N s/m, kg and N.
    pub slide: bool,
    /// Where the joint sits on the previous body's `x` axis, metres (0 for the first joint).
    pub at: f64,
    /// The body's angle at `q = 0`, relative to the previous body, radians (for a slide: its
    /// height at `q = 0`, metres).
    pub offset: f64,
    /// The body after the hinge.
    pub body: Inertia,
    /// Armature, kg m².
    pub armature: f64,
    /// Viscous damping, N m s/rad.
    pub damping: f64,
    /// Coulomb friction loss, N m.
    pub frictionloss: f64,
    /// The servo's `(kp, kv, torque limit)`, if the hinge is actuated.
    pub actuator: Option<(f64, f64, f64)>,
    /// The hinge's range `(min, max)`, if it has hard stops.
    pub range: Option<(f64, f64)>,
}

/// A planar serial arm: hinges in order from the base, and gravity.
#[derive(Debug, Clone, PartialEq)]
pub struct Multibody {
    dofs: Vec<Dof>,
    /// Gravity along `−y`, m/s² (0: the arm lies in a horizontal plane).
    pub gravity: f64,
    /// The largest `kp / armature` of any servo, 1/s² (infinite for a servo without armature):
    /// a bound on the servos' squared natural frequency that holds in every pose.
    kp_rate: f64,
    /// The largest `kv / armature` of any servo, 1/s (see `kp_rate`).
    kv_rate: f64,
    /// The largest `torque limit / armature` of any servo, rad/s²: how fast a hinge's speed may
    /// grow within a step.
    accel_rate: f64,
    /// The longest step that `kp_rate` and `kv_rate` leave unsplit, seconds (see [`STABLE`]).
    unsplit_dt: f64,
}

/// The explicit part of a step is stable while `h² λ_kp + 2 h λ_kv < 4`, with `h` the step and
/// `λ_kp`, `λ_kv` the largest eigenvalues of `M⁻¹ K_p` and `M⁻¹ K_v` (`K` the servos' gains on
/// the diagonal): the position gain always acts explicitly, the velocity gain when the servo's
/// torque is clamped (one mode: `(ω h)² + 4 ζ ω h < 4`). A step of [`Multibody::step`] is split
/// into equal sub-steps short enough that an upper bound of that sum stays at or below this
/// value. Chosen by measurement against MuJoCo (`tests/plant_vs_mujoco.rs`, the stiff servos of
/// `reference/mujoco_stiff.py`): at 0.75 every stiff trace is within tolerance (the farthest,
/// the backlash step's overshoot, 2 % off against 10 % allowed; 7 % at 1, outside at 1.5; at 4,
/// the stability limit, three traces fail). The SO-101's STS3215 sits at 0.53 at the plant's
/// 2 ms step ([`SUBSTEP`]): unsplit; the rail's servo, at 1.36 on its armature
/// alone, splits it in two with the links' mass.
pub const STABLE: f64 = 0.75;

/// The most sub-steps one step of [`Multibody::step`] is split into. A validated servo
/// ([`Servo::validate`]) never needs more at the plant's 2 ms step (400 at most).
pub const MAX_SPLIT: usize = 512;

/// Positions and velocities of every hinge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct State {
    /// Hinge angles, radians.
    pub q: [f64; MAX_DOF],
    /// Hinge speeds, rad/s.
    pub v: [f64; MAX_DOF],
}

impl State {
    /// At rest with every hinge at `q` (missing ones at 0).
    pub fn at_rest(q: &[f64]) -> Self {
        let mut s = State { q: [0.0; MAX_DOF], v: [0.0; MAX_DOF] };
        s.q[..q.len()].copy_from_slice(q);
        s
    }
}

type Vector = [f64; MAX_DOF];

/// Where every body is, for one step: hinge positions, centres of mass relative to their hinge,
/// and the lever from each hinge to the next, all in the world frame.
struct Pose<const N: usize> {
    hinge: [[f64; 2]; N],
    /// Each body's `x` axis, `(cos, sin)` of its absolute angle.
    axis: [[f64; 2]; N],
    com: [[f64; 2]; N],
    link: [[f64; 2]; N],
}
type Matrix = [[f64; MAX_DOF]; MAX_DOF];

fn cross(a: [f64; 2], b: [f64; 2]) -> f64 {
    a[0] * b[1] - a[1] * b[0]
}

/// What one step did besides moving: whether every frictional hinge ended it stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepInfo {
    /// True when the step left every hinge at zero speed held by friction or a stop with room to
    /// spare, and no servo saturated: the arm is at rest and will stay so until a goal changes.
    pub at_rest: bool,
}

impl Multibody {
    /// A model of these hinges, at most [`MAX_DOF`].
    ///
    /// # Panics
    /// With no hinge, more than [`MAX_DOF`], or a slide other than the first joint.
    pub fn new(dofs: Vec<Dof>, gravity: f64) -> Self {
        assert!(!dofs.is_empty() && dofs.len() <= MAX_DOF, "1 to {MAX_DOF} hinges, got {}", dofs.len());
        assert!(dofs.iter().skip(1).all(|d| !d.slide), "only the first joint may slide");
        let rate = |gain: fn(&(f64, f64, f64)) -> f64| {
            dofs.iter()
                .filter_map(|d| d.actuator.map(|a| gain(&a) / d.armature))
                .map(|r| if r.is_nan() { f64::INFINITY } else { r })
                .fold(0.0, f64::max)
        };
        let (kp_rate, kv_rate, accel_rate) = (rate(|a| a.0), rate(|a| a.1), rate(|a| a.2));
        let unsplit_dt = longest_stable_step(kp_rate, kv_rate);
        Self { dofs, gravity, kp_rate, kv_rate, accel_rate, unsplit_dt }
    }

    /// How many equal sub-steps a step of `dt` seconds from `s` takes: one while the servos'
    /// gains over their armatures alone keep `dt² kp / armature + 2 dt kv / armature` within
    /// [`STABLE`] (the SO-101's STS3215 at 2 ms: 0.53) and no hinge turns more than [`MAX_TURN`]
    /// in it (at its present speed plus what the strongest servo's torque limit over its
    /// armature adds in `dt`); else enough that the bound of [`STABLE`], now taken from the mass
    /// matrix at `s` (links included), holds for each, and no hinge turns more than [`MAX_TURN`]
    /// in one; at most [`MAX_SPLIT`].
    pub fn splits(&self, s: &State, dt: f64) -> usize {
        if self.unsplit(s, dt) { 1 } else { self.splits_from_mass_matrix(s, dt) }
    }

    /// True when a step of `dt` from `s` needs no split: `dt` within `unsplit_dt`, and no joint
    /// turning more than [`MAX_TURN`] in it at its speed plus what the strongest servo adds in
    /// `dt` (a rail's speed, m/s, counts as a hinge's). Cheap: every step asks it.
    #[inline(always)]
    fn unsplit(&self, s: &State, dt: f64) -> bool {
        let mut fastest: f64 = 0.0;
        for v in &s.v[..self.dofs.len()] {
            fastest = fastest.max(v.abs());
        }
        dt <= self.unsplit_dt && (fastest + self.accel_rate * dt) * dt <= MAX_TURN
    }

    /// [`Multibody::splits`] past the cheap check, from the mass matrix at `s` (off the common
    /// path, and apart from the step's own arrays so as to leave their code as it was).
    #[cold]
    #[inline(never)]
    fn splits_from_mass_matrix(&self, s: &State, dt: f64) -> usize {
        // On arrays of the model's own size (a rail's servo asks at every step), as the step.
        sized!(self.dofs.len(), N => self.splits_n::<N>(s, dt))
    }

    /// [`Multibody::splits_from_mass_matrix`] on arrays of `N >= len()`.
    fn splits_n<const N: usize>(&self, s: &State, dt: f64) -> usize {
        let n = self.dofs.len();
        if !(dt.is_finite() && dt > 0.0 && s.q[..n].iter().chain(&s.v[..n]).all(|v| v.is_finite())) {
            return 1;
        }
        let fastest = s.v[..n].iter().map(|v| v.abs()).fold(0.0, f64::max) + self.accel_rate * dt;
        // The bound from the mass matrix: with W = M⁻¹ and K diagonal, the largest eigenvalue of
        // W K is at most the trace of K^½ W K^½, Σ kp_k W_kk (and the armature bound holds too,
        // since M ≥ diag(armature)). M, not M + h D: its inverse is the larger.
        let m = self.mass_matrix_at::<N>(&self.pose::<N>(&s.q));
        // The lower Cholesky factor of M's n x n block (positive definite: every hinge has
        // armature or carries a body; the floor keeps a degenerate model finite).
        let mut l = [[0.0; N]; N];
        for i in 0..n {
            for j in 0..=i {
                let sum = m[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
                l[i][j] = if i == j { sum.max(1e-300).sqrt() } else { sum / l[j][j] };
            }
        }
        let (mut lambda_kp, mut lambda_kv) = (0.0, 0.0);
        for k in 0..n {
            let Some((kp, kv, _)) = self.dofs[k].actuator else { continue };
            // W_kk = |L⁻¹ e_k|², by forward substitution from row k.
            let mut y = [0.0; N];
            let mut w = 0.0;
            for i in k..n {
                let sum = if i == k { 1.0 } else { 0.0 } - (k..i).map(|j| l[i][j] * y[j]).sum::<f64>();
                y[i] = sum / l[i][i];
                w += y[i] * y[i];
            }
            lambda_kp += kp * w;
            lambda_kv += kv * w;
        }
        let (lambda_kp, lambda_kv) = (lambda_kp.min(self.kp_rate), lambda_kv.min(self.kv_rate));
        // The longest h with h² λ_kp + 2 h λ_kv <= STABLE, and with no hinge turning past MAX_TURN.
        let h = longest_stable_step(lambda_kp, lambda_kv).min(MAX_TURN / fastest);
        let splits = (dt / h).ceil();
        if splits.is_nan() { 1 } else { splits.clamp(1.0, MAX_SPLIT as f64) as usize }
    }

    /// Number of hinges.
    pub fn len(&self) -> usize {
        self.dofs.len()
    }

    /// Always false: a model has at least one hinge.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The hinges.
    pub fn dofs(&self) -> &[Dof] {
        &self.dofs
    }

    /// The point `along` metres down the last body's `x` axis at `q` (the tip, for the link's
    /// length).
    pub fn tip(&self, q: &[f64], along: f64) -> [f64; 2] {
        let pose = self.pose_padded(q);
        let k = self.dofs.len() - 1;
        let (at, axis) = (pose.hinge[k], pose.axis[k]);
        [at[0] + along * axis[0], at[1] + along * axis[1]]
    }

    /// The pose of every body at `q`: each hinge's position and each body's centre of mass
    /// relative to its hinge, in the world frame (one sine and cosine per hinge).
    fn pose<const N: usize>(&self, q: &[f64]) -> Pose<N> {
        let mut out = Pose { hinge: [[0.0; 2]; N], axis: [[0.0; 2]; N], com: [[0.0; 2]; N], link: [[0.0; 2]; N] };
        let (mut angle, mut at) = (0.0, [0.0, 0.0]);
        let mut axis = [1.0, 0.0];
        for (k, d) in self.dofs.iter().enumerate() {
            at = [at[0] + d.at * axis[0], at[1] + d.at * axis[1]];
            if d.slide {
                at[1] += q[k] + d.offset;
            } else {
                angle += q[k] + d.offset;
            }
            let (s, c) = angle.sin_cos();
            axis = [c, s];
            out.axis[k] = axis;
            out.hinge[k] = at;
            let com = d.body.com;
            out.com[k] = [c * com[0] - s * com[1], s * com[0] + c * com[1]];
        }
        // The lever from each hinge to the next.
        let n = self.dofs.len();
        for k in 0..n.saturating_sub(1) {
            out.link[k] = [out.hinge[k + 1][0] - out.hinge[k][0], out.hinge[k + 1][1] - out.hinge[k][1]];
        }
        out
    }

    /// The joint-space mass matrix, armature included:
    /// `M_ij = Σ_{b ≥ max(i, j)} m_b (c_b − p_i)·(c_b − p_j) + I_b`.
    fn mass_matrix_at<const N: usize>(&self, pose: &Pose<N>) -> [[f64; N]; N] {
        let n = N.min(self.dofs.len());
        let mut m = [[0.0; N]; N];
        for b in 0..n {
            let body = self.dofs[b].body;
            if body.mass == 0.0 && body.inertia == 0.0 {
                continue;
            }
            let c = [pose.hinge[b][0] + pose.com[b][0], pose.hinge[b][1] + pose.com[b][1]];
            let mut r = [[0.0; 2]; N];
            for i in 0..=b {
                r[i] = [c[0] - pose.hinge[i][0], c[1] - pose.hinge[i][1]];
            }
            for i in 0..=b {
                for j in 0..=i {
                    // A hinge moves the centre by `z × r` and turns the body; a slide moves it
                    // along `y` and does not turn it.
                    let v = match (self.dofs[i].slide, self.dofs[j].slide) {
                        (false, false) => body.mass * (r[i][0] * r[j][0] + r[i][1] * r[j][1]) + body.inertia,
                        (false, true) => body.mass * r[i][0],
                        (true, false) => body.mass * r[j][0],
                        (true, true) => body.mass,
                    };
                    m[i][j] += v;
                }
            }
        }
        for i in 0..n {
            m[i][i] += self.dofs[i].armature;
            for j in 0..i {
                m[j][i] = m[i][j];
            }
        }
        m
    }

    /// Coriolis, centrifugal and gravity torques by recursive Newton-Euler with no joint
    /// acceleration (gravity enters as an upward acceleration of the base). A base slide along
    /// `y` turns nothing, so it adds no velocity terms; its entry is the force along the rail.
    fn bias_at<const N: usize>(&self, pose: &Pose<N>, v: &[f64]) -> [f64; N] {
        let n = N.min(self.dofs.len());
        let mut acc_c = [[0.0; 2]; N];
        let mut w = 0.0;
        let mut ap = [0.0, self.gravity];
        for k in 0..n {
            if k > 0 {
                let r = pose.link[k - 1];
                ap = [ap[0] - w * w * r[0], ap[1] - w * w * r[1]];
            }
            if !self.dofs[k].slide {
                w += v[k];
            }
            let rc = pose.com[k];
            acc_c[k] = [ap[0] - w * w * rc[0], ap[1] - w * w * rc[1]];
        }
        let mut tau = [0.0; N];
        let (mut force, mut moment) = ([0.0, 0.0], 0.0);
        for k in (0..n).rev() {
            let m = self.dofs[k].body.mass;
            let f = [m * acc_c[k][0], m * acc_c[k][1]];
            // The moment about hinge k: the body's own, then what the outer bodies pass on
            // through hinge k+1.
            moment += cross(pose.com[k], f) + cross(pose.link[k], force);
            force = [force[0] + f[0], force[1] + f[1]];
            // A hinge bears the moment; a slide (along y, first) the force along its axis.
            tau[k] = if self.dofs[k].slide { force[1] } else { moment };
        }
        tau
    }

    fn pose_padded(&self, q: &[f64]) -> Pose<MAX_DOF> {
        self.pose::<MAX_DOF>(q)
    }

    /// The joint-space mass matrix at `q`, armature included (the first `len()` rows and
    /// columns).
    pub fn mass_matrix(&self, q: &[f64]) -> Matrix {
        let mut out = [[0.0; MAX_DOF]; MAX_DOF];
        let m = self.mass_matrix_at::<MAX_DOF>(&self.pose_padded(q));
        let n = self.dofs.len();
        for i in 0..n {
            out[i][..n].copy_from_slice(&m[i][..n]);
        }
        out
    }

    /// Coriolis, centrifugal and gravity torques at `q`, `v`.
    pub fn bias(&self, q: &[f64], v: &[f64]) -> Vector {
        self.bias_at::<MAX_DOF>(&self.pose_padded(q), v)
    }

    /// The servo torque of each hinge for `goals` (0 where unactuated), clamped, and the
    /// actuator's velocity gain where the servo is not saturated (0 where it is).
    pub fn servo_torques(&self, s: &State, goals: &[f64]) -> (Vector, Vector, bool) {
        self.servo_torques_n::<MAX_DOF>(s, goals)
    }

    /// [`Multibody::servo_torques`] on arrays of `N >= len()`.
    fn servo_torques_n<const N: usize>(&self, s: &State, goals: &[f64]) -> ([f64; N], [f64; N], bool) {
        let mut tau = [0.0; N];
        let mut kv_eff = [0.0; N];
        let mut saturated = false;
        for (k, d) in self.dofs.iter().enumerate() {
            if let Some((kp, kv, limit)) = d.actuator {
                let u = kp * (goals[k] - s.q[k]) - kv * s.v[k];
                if u.abs() > limit {
                    tau[k] = limit.copysign(u);
                    saturated = true;
                } else {
                    tau[k] = u;
                    kv_eff[k] = kv;
                }
            }
        }
        (tau, kv_eff, saturated)
    }

    /// One step of `dt` seconds toward `goals` (one per hinge; unactuated hinges ignore theirs),
    /// in [`Multibody::splits`] equal sub-steps: one for the SO-101's servos, more for a servo
    /// too stiff for `dt` or a hinge turning fast. What it says of rest is the last sub-step's.
    pub fn step(&self, s: &mut State, goals: &[f64], dt: f64) -> StepInfo {
        if self.unsplit(s, dt) { self.step_whole(s, goals, dt) } else { self.step_in_splits(s, goals, dt) }
    }

    /// One step of `dt`, unsplit.
    fn step_whole(&self, s: &mut State, goals: &[f64], dt: f64) -> StepInfo {
        // (Each copy is called from here alone, which keeps it inlined.)
        sized!(self.dofs.len(), N => self.step_n::<N>(s, goals, dt))
    }

    /// A step in [`Multibody::splits`] equal sub-steps (off the common path).
    #[cold]
    #[inline(never)]
    fn step_in_splits(&self, s: &mut State, goals: &[f64], dt: f64) -> StepInfo {
        let splits = self.splits_from_mass_matrix(s, dt);
        let h = dt / splits as f64;
        let mut info = StepInfo { at_rest: false };
        for _ in 0..splits {
            info = self.step_whole(s, goals, h);
        }
        info
    }

    /// The step on arrays of `N >= len()`: rows past the model are inert (unit mass, no force),
    /// which leaves the factor of the model's block, and so its answer, exactly as with `N`
    /// equal to the model's size.
    fn step_n<const N: usize>(&self, s: &mut State, goals: &[f64], dt: f64) -> StepInfo {
        let n = self.dofs.len();
        // Friction that stops a hinge moving into the step may only have caught it at the turn
        // of a swing; the arm is at rest only when friction also holds it from standstill.
        let from_standstill = s.v[..n].iter().all(|&v| v == 0.0);
        let (servo, kv_eff, saturated) = self.servo_torques_n::<N>(s, goals);
        let pose = self.pose::<N>(&s.q);
        let bias = self.bias_at(&pose, &s.v);
        let mut a = self.mass_matrix_at(&pose);
        for (k, row) in a.iter_mut().enumerate().skip(n) {
            row[k] = 1.0;
        }
        let mut f = [0.0; N];
        for k in 0..n {
            let d = &self.dofs[k];
            f[k] = servo[k] - d.damping * s.v[k] - bias[k];
            a[k][k] += dt * (d.damping + kv_eff[k]);
        }
        let chol = cholesky(&a);
        let dv = chol_solve(&chol, &f);
        let mut v = [0.0; N];
        for k in 0..n {
            v[k] = s.v[k] + dt * dv[k];
        }
        // Impulses: friction (bounded both ways) and stops (one way), on W = A^-1.
        let mut impulse = [0.0; N];
        // Each hinge's constraint for this step, decided once: its impulse bounds and the speed
        // it aims at. A stop that is passed pushes back (one way) as MuJoCo's soft limit does
        // ([`soft_stop`]); else a friction loss resists (both ways, up to loss · dt) and aims at
        // rest.
        let mut rows: [Option<(f64, f64, f64)>; N] = [None; N];
        for k in 0..n {
            let d = &self.dofs[k];
            let (q, was) = (s.q[k], s.v[k]);
            rows[k] = match d.range {
                Some((lo, _)) if q < lo => Some((0.0, f64::INFINITY, soft_stop(was, v[k], q - lo, dt))),
                Some((_, hi)) if q > hi => Some((f64::NEG_INFINITY, 0.0, soft_stop(was, v[k], q - hi, dt))),
                _ if d.frictionloss > 0.0 => Some((-d.frictionloss * dt, d.frictionloss * dt, 0.0)),
                _ => None,
            };
        }
        let any = rows.iter().any(Option::is_some);
        // Stuck: every hinge held by friction with room to spare, none at a stop.
        let mut stuck = any;
        if any {
            let w = chol_inverse(&chol);
            let mut inv_w = [0.0; N];
            for k in 0..n {
                inv_w[k] = 1.0 / w[k][k];
            }
            for _ in 0..PGS_SWEEPS {
                let mut largest: f64 = 0.0;
                for k in 0..n {
                    let Some((lo_imp, hi_imp, target)) = rows[k] else { continue };
                    let old = impulse[k];
                    let new = (old + (target - v[k]) * inv_w[k]).clamp(lo_imp, hi_imp);
                    let delta = new - old;
                    if delta != 0.0 {
                        impulse[k] = new;
                        for i in 0..n {
                            v[i] += w[i][k] * delta;
                        }
                        largest = largest.max((w[k][k] * delta).abs());
                    }
                }
                // A sweep that changed no speed by more than rounding has converged.
                if largest <= PGS_CONVERGED {
                    break;
                }
            }
            for k in 0..n {
                stuck &= match rows[k] {
                    Some((lo_imp, hi_imp, 0.0)) if lo_imp < 0.0 && hi_imp.is_finite() => {
                        impulse[k].abs() < 0.999 * hi_imp && v[k].abs() < 1e-9
                    }
                    _ => false,
                };
            }
        }
        if stuck {
            // Held: no creep at all, so a resting arm stays put bit for bit.
            v.iter_mut().for_each(|v| *v = 0.0);
        }
        s.v[..n].copy_from_slice(&v[..n]);
        for (q, v) in s.q.iter_mut().zip(&v) {
            *q += dt * v;
        }
        StepInfo { at_rest: stuck && !saturated && from_standstill }
    }

    /// Total mechanical energy (kinetic plus gravitational), J; for tests.
    pub fn energy(&self, s: &State) -> f64 {
        let n = self.dofs.len();
        let m = self.mass_matrix(&s.q);
        let mut kinetic = 0.0;
        for i in 0..n {
            for j in 0..n {
                kinetic += 0.5 * s.v[i] * m[i][j] * s.v[j];
            }
        }
        let pose = self.pose_padded(&s.q);
        let potential: f64 =
            (0..n).map(|k| self.dofs[k].body.mass * self.gravity * (pose.hinge[k][1] + pose.com[k][1])).sum();
        kinetic + potential
    }
}

/// The longest step `h` with `h² kp_rate + 2 h kv_rate <= STABLE`, seconds (infinite for rates
/// of 0, 0 for infinite ones).
fn longest_stable_step(kp_rate: f64, kv_rate: f64) -> f64 {
    STABLE / (kv_rate + (kv_rate * kv_rate + STABLE * kp_rate).sqrt())
}

/// MuJoCo's default soft constraint (`solref` 0.02 s, damping ratio 1; `solimp` 0.9, 0.95,
/// 0.001, 0.5, 2): the speed a hinge `past` a stop (signed, negative below a lower stop) should
/// reach after a step of `dt`, given its speed before the step `was` and without the stop `free`.
/// The reference acceleration `−b v − k r` (`b = 2 / (d_max τ)`, `k = 1 / (d_max τ)²`) is
/// blended with the free one by the impedance `d(|r|)`, as MuJoCo's regularised solver does.
fn soft_stop(was: f64, free: f64, past: f64, dt: f64) -> f64 {
    const TIMECONST: f64 = 0.02;
    const D_MIN: f64 = 0.9;
    const D_MAX: f64 = 0.95;
    const WIDTH: f64 = 0.001;
    let x = (past.abs() / WIDTH).min(1.0);
    let y = if x <= 0.5 { 2.0 * x * x } else { 1.0 - 2.0 * (1.0 - x) * (1.0 - x) };
    let d = D_MIN + y * (D_MAX - D_MIN);
    let b = 2.0 / (D_MAX * TIMECONST);
    let k = 1.0 / (D_MAX * D_MAX * TIMECONST * TIMECONST);
    let reference = -b * was - k * past;
    was + dt * d * reference + (1.0 - d) * (free - was)
}

/// Lower Cholesky factor of the symmetric positive definite `a`.
fn cholesky<const N: usize>(a: &[[f64; N]; N]) -> [[f64; N]; N] {
    let mut l = [[0.0; N]; N];
    for i in 0..N {
        for j in 0..=i {
            let mut sum = a[i][j];
            for k in 0..j {
                sum -= l[i][k] * l[j][k];
            }
            if i == j {
                // The mass matrix plus armature is positive definite; the floor only keeps a
                // degenerate model (massless, no armature) finite.
                l[i][i] = sum.max(1e-300).sqrt();
            } else {
                l[i][j] = sum / l[j][j];
            }
        }
    }
    l
}

fn chol_solve<const N: usize>(l: &[[f64; N]; N], b: &[f64; N]) -> [f64; N] {
    let mut y = [0.0; N];
    for i in 0..N {
        let mut sum = b[i];
        for k in 0..i {
            sum -= l[i][k] * y[k];
        }
        y[i] = sum / l[i][i];
    }
    let mut x = [0.0; N];
    for i in (0..N).rev() {
        let mut sum = y[i];
        for k in i + 1..N {
            sum -= l[k][i] * x[k];
        }
        x[i] = sum / l[i][i];
    }
    x
}

fn chol_inverse<const N: usize>(l: &[[f64; N]; N]) -> [[f64; N]; N] {
    let mut inv = [[0.0; N]; N];
    for j in 0..N {
        let mut e = [0.0; N];
        e[j] = 1.0;
        let col = chol_solve(l, &e);
        for i in 0..N {
            inv[i][j] = col[i];
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_link(gravity: f64, servo: Option<Servo>) -> Multibody {
        let dof = |at: f64| Dof {
            slide: false,
            at,
            offset: 0.0,
            body: Inertia::rod(0.05, 1.0),
            armature: servo.map_or(0.0, |s| s.armature),
            damping: servo.map_or(0.0, |s| s.damping),
            frictionloss: servo.map_or(0.0, |s| s.frictionloss),
            actuator: servo.map(|s| (s.kp, s.kv, s.torque_limit)),
            range: None,
        };
        Multibody::new(vec![dof(0.0), dof(1.0)], gravity)
    }

    #[test]
    fn mass_matrix_matches_the_two_link_closed_form() {
        let mb = two_link(0.0, None);
        let (m, l, lc, i) = (0.05, 1.0, 0.5, 0.05 / 12.0);
        for q2 in [0.0, 0.7, 2.0, -1.3] {
            let mm = mb.mass_matrix(&[0.3, q2]);
            let m11 = i + m * lc * lc + i + m * (l * l + lc * lc + 2.0 * l * lc * q2.cos());
            let m12 = i + m * (lc * lc + l * lc * q2.cos());
            let m22 = i + m * lc * lc;
            assert!((mm[0][0] - m11).abs() < 1e-14, "{} {m11}", mm[0][0]);
            assert!((mm[0][1] - m12).abs() < 1e-14 && (mm[1][0] - m12).abs() < 1e-14);
            assert!((mm[1][1] - m22).abs() < 1e-14);
        }
    }

    #[test]
    fn gravity_torque_of_a_stretched_arm() {
        let mb = two_link(GRAVITY, None);
        let g = mb.bias(&[0.0, 0.0], &[0.0, 0.0]);
        // Shoulder carries both rods (centres at 0.5 and 1.5 m), the elbow the outer one.
        assert!((g[0] - 0.05 * GRAVITY * (0.5 + 1.5)).abs() < 1e-12, "{g:?}");
        assert!((g[1] - 0.05 * GRAVITY * 0.5).abs() < 1e-12);
        let up = mb.bias(&[std::f64::consts::FRAC_PI_2, 0.0], &[0.0, 0.0]);
        assert!(up[0].abs() < 1e-12 && up[1].abs() < 1e-12, "pointing up no torque: {up:?}");
    }

    #[test]
    fn a_free_pendulum_keeps_its_energy() {
        // No servo, no damping: the energy of a swinging double pendulum drifts only by the
        // integrator's error, which shrinks with the step.
        let mb = two_link(GRAVITY, None);
        let drift = |dt: f64| {
            let mut s = State::at_rest(&[0.3, 0.5]);
            let e0 = mb.energy(&s);
            let mut worst: f64 = 0.0;
            for _ in 0..(1.0 / dt) as usize {
                mb.step(&mut s, &[0.0; 2], dt);
                worst = worst.max((mb.energy(&s) - e0).abs());
            }
            worst
        };
        let (coarse, fine) = (drift(1e-3), drift(1e-4));
        assert!(fine < 2e-3 && fine < coarse / 5.0, "{coarse} {fine}");
    }

    #[test]
    fn a_servo_holds_its_goal_and_friction_sticks() {
        let mb = two_link(0.0, Some(Servo::STS3215));
        let mut s = State::at_rest(&[0.0, 1.5]);
        let mut rest = false;
        for _ in 0..2000 {
            rest = mb.step(&mut s, &[0.5, 1.5], 1e-3).at_rest;
        }
        assert!(rest, "settled and held by friction");
        // It stops short by at most the friction loss over the gain.
        let short = Servo::STS3215.frictionloss / Servo::STS3215.kp;
        assert!((s.q[0] - 0.5).abs() <= short * 1.0001, "{}", s.q[0] - 0.5);
        let before = s;
        mb.step(&mut s, &[0.5, 1.5], 1e-3);
        assert_eq!(before, s, "at rest it stays put, bit for bit");
    }

    #[test]
    fn a_stop_holds_a_hinge_in_its_range() {
        // A servo hinge, then a free play hinge of ±0.01 rad carrying the link.
        let servo = Servo::STS3215;
        let dofs = vec![
            Dof {
                slide: false,
                at: 0.0,
                offset: 0.0,
                body: Inertia::NONE,
                armature: servo.armature,
                damping: servo.damping,
                frictionloss: 0.0,
                actuator: Some((servo.kp, servo.kv, servo.torque_limit)),
                range: None,
            },
            Dof {
                slide: false,
                at: 0.0,
                offset: 0.0,
                body: Inertia::rod(0.05, 1.0),
                armature: PLAY_ARMATURE,
                damping: PLAY_DAMPING,
                frictionloss: 0.0,
                actuator: None,
                range: Some((-0.01, 0.01)),
            },
        ];
        let mb = Multibody::new(dofs, 0.0);
        let mut s = State::at_rest(&[0.0, 0.0]);
        let mut widest: f64 = 0.0;
        for _ in 0..3000 {
            mb.step(&mut s, &[0.5, 0.0], 2e-4);
            widest = widest.max(s.q[1].abs());
        }
        // The stop gives like MuJoCo's soft limit: the link runs past it while the servo
        // accelerates, then comes back.
        assert!(widest > 0.011 && widest < 0.04, "pressed past the stop, softly: {widest}");
        assert!(s.q[1].abs() <= 0.0101, "and back at the stop at rest: {}", s.q[1]);
    }

    /// Issue 48's servo, `--kp 1e6 --torque-limit 1e4` on the STS3215 without friction, with
    /// velocity gain `kv`.
    fn stiff(kv: f64) -> Servo {
        Servo { kp: 1e6, kv, torque_limit: 1e4, frictionloss: 0.0, ..Servo::STS3215 }
    }

    #[test]
    fn the_so101_servo_takes_one_step_and_a_stiff_one_splits_it() {
        // The STS3215 at the plant's step, on its armature alone: 0.53, within STABLE.
        let (s, h) = (Servo::STS3215, SUBSTEP);
        let x = h * h * s.kp / s.armature + 2.0 * h * s.kv / s.armature;
        assert!((x - 0.533).abs() < 1e-3 && x < STABLE, "{x}");
        let mb = two_link(GRAVITY, Some(s));
        let mut state = State::at_rest(&[0.3, 1.0]);
        state.v[..2].copy_from_slice(&[4.9, -4.9]);
        assert_eq!(mb.splits(&state, h), 1, "at its no-load speed too");
        // Issue 48's servo is twelve times stiffer than the step resolves: its steps split, the
        // more the lighter the arm and the faster it turns, within MAX_SPLIT.
        let mb = two_link(0.0, Some(stiff(Servo::STS3215.kv)));
        let splits = mb.splits(&State::at_rest(&[0.0, 1.5]), h);
        assert!((12..=50).contains(&splits), "{splits}");
        state.v[..2].copy_from_slice(&[500.0, 0.0]);
        assert!(mb.splits(&state, h) >= 10, "1 rad in a step");
        assert_eq!(mb.splits(&State::at_rest(&[0.0, 1.5]), 1e-5), 1, "10 µs resolve it");
    }

    #[test]
    fn a_stiff_servo_at_the_plants_step_moves_as_at_10_microseconds() {
        // A stiff industrial drive (kv 400) stepping 0.5 rad: saturated for 13 ms, over in 15.
        let mb = two_link(0.0, Some(stiff(400.0)));
        let (mut coarse, mut fine) = (State::at_rest(&[0.0, 1.5]), State::at_rest(&[0.0, 1.5]));
        let goal = [0.5, 1.5];
        let fine_steps = (SUBSTEP / 1e-5).round() as usize;
        let mut worst: f64 = 0.0;
        for _ in 0..40 {
            mb.step(&mut coarse, &goal, SUBSTEP);
            for _ in 0..fine_steps {
                mb.step(&mut fine, &goal, SUBSTEP / fine_steps as f64);
            }
            worst = worst.max((coarse.q[0] - fine.q[0]).abs()).max((coarse.q[1] - fine.q[1]).abs());
        }
        assert!(worst < 0.01, "{worst} rad apart");
        assert!((coarse.q[0] - 0.5).abs() < 1e-6, "{:?}", coarse.q);
    }

    /// A rail (a slide along `y` carrying a 0.3 kg carriage) under two hinged rods.
    fn rail_two_link(gravity: f64, servo: Option<(Servo, Servo)>) -> Multibody {
        let dof = |slide: bool, at: f64, body: Inertia, servo: Option<Servo>| Dof {
            slide,
            at,
            offset: 0.0,
            body,
            armature: servo.map_or(0.0, |s| s.armature),
            damping: servo.map_or(0.0, |s| s.damping),
            frictionloss: servo.map_or(0.0, |s| s.frictionloss),
            actuator: servo.map(|s| (s.kp, s.kv, s.torque_limit)),
            range: None,
        };
        let carriage = Inertia { mass: 0.3, com: [0.0, 0.0], inertia: 0.0 };
        Multibody::new(
            vec![
                dof(true, 0.0, carriage, servo.map(|s| s.0)),
                dof(false, 0.0, Inertia::rod(0.05, 1.0), servo.map(|s| s.1)),
                dof(false, 1.0, Inertia::rod(0.05, 1.0), servo.map(|s| s.1)),
            ],
            gravity,
        )
    }

    /// Twice the kinetic energy at `q`, `v`, from each body's centre velocity by central
    /// differences of the poses and its spin: `Σ m |ċ|² + I ω²`.
    fn twice_kinetic(mb: &Multibody, q: &[f64], v: &[f64]) -> f64 {
        let h = 1e-6;
        let at = |t: f64| {
            let q: Vec<f64> = q.iter().zip(v).map(|(q, v)| q + t * v).collect();
            let p = mb.pose::<3>(&q);
            [0, 1, 2].map(|k| [p.hinge[k][0] + p.com[k][0], p.hinge[k][1] + p.com[k][1]])
        };
        let (a, b) = (at(h), at(-h));
        let mut spin = 0.0;
        let mut sum = 0.0;
        for (k, d) in mb.dofs().iter().enumerate() {
            if !d.slide {
                spin += v[k];
            }
            let c = [(a[k][0] - b[k][0]) / (2.0 * h), (a[k][1] - b[k][1]) / (2.0 * h)];
            sum += d.body.mass * (c[0] * c[0] + c[1] * c[1]) + d.body.inertia * spin * spin;
        }
        sum
    }

    #[test]
    fn a_rails_mass_matrix_gives_the_kinetic_energy_of_every_body() {
        let mb = rail_two_link(0.0, None);
        for (q, v) in
            [([0.2, 0.3, 0.7], [1.0, 0.0, 0.0]), ([-0.4, 1.1, -2.0], [0.5, -1.5, 2.0]), ([0.0; 3], [0.3, 0.2, -0.1])]
        {
            let m = mb.mass_matrix(&q);
            let vmv: f64 = (0..3).map(|i| (0..3).map(|j| v[i] * m[i][j] * v[j]).sum::<f64>()).sum();
            let fd = twice_kinetic(&mb, &q, &v);
            assert!((vmv - fd).abs() < 1e-6, "q {q:?} v {v:?}: {vmv} vs {fd}");
        }
        // The rail alone moves every body: its entry is the whole mass.
        assert!((mb.mass_matrix(&[0.0; 3])[0][0] - 0.4).abs() < 1e-15);
    }

    #[test]
    fn a_rail_bears_the_whole_weight_and_adds_no_velocity_forces() {
        let mb = rail_two_link(GRAVITY, None);
        let hinges = two_link(GRAVITY, None);
        let q = [0.3, 0.4, -0.9];
        let g = mb.bias(&q, &[0.0; 3]);
        assert!((g[0] - 0.4 * GRAVITY).abs() < 1e-12, "the rail carries carriage and links: {g:?}");
        let plain = hinges.bias(&q[1..], &[0.0; 2]);
        assert!((g[1] - plain[0]).abs() < 1e-12 && (g[2] - plain[1]).abs() < 1e-12, "{g:?} {plain:?}");
        // Sliding fast changes no force (no Coriolis from a pure translation); turning does.
        let sliding = mb.bias(&q, &[3.0, 0.0, 0.0]);
        assert_eq!(sliding, g);
        let turning = mb.bias(&q, &[0.0, 2.0, 1.0]);
        let plain_turning = hinges.bias(&q[1..], &[2.0, 1.0]);
        assert!((turning[1] - plain_turning[0]).abs() < 1e-12 && (turning[2] - plain_turning[1]).abs() < 1e-12);
    }

    #[test]
    fn a_free_rail_and_pendulum_keep_their_energy_and_a_servoed_rail_sags_by_weight_over_gain() {
        let mb = rail_two_link(GRAVITY, None);
        let mut s = State { q: State::at_rest(&[0.0, 0.3, 0.5]).q, v: State::at_rest(&[0.5, 0.0, 0.0]).q };
        let e0 = mb.energy(&s);
        let mut worst: f64 = 0.0;
        for _ in 0..10_000 {
            mb.step(&mut s, &[0.0; 3], 1e-4);
            worst = worst.max((mb.energy(&s) - e0).abs());
        }
        assert!(worst < 2e-3, "{worst}");
        // On servos, the rail holds 0.4 kg against gravity, short of its goal by m g / kp.
        let rail = Servo { kp: 2000.0, kv: 40.0, torque_limit: 40.0, damping: 20.0, armature: 0.5, frictionloss: 0.0 };
        let mb = rail_two_link(GRAVITY, Some((rail, Servo::STS3215)));
        let mut s = State::at_rest(&[0.5, std::f64::consts::FRAC_PI_2, 0.0]);
        for _ in 0..3000 {
            mb.step(&mut s, &[0.5, std::f64::consts::FRAC_PI_2, 0.0], 1e-3);
        }
        let sag = 0.5 - s.q[0];
        assert!((sag - 0.4 * GRAVITY / 2000.0).abs() < 1e-6, "{sag}");
    }
}
