//! An arm from a URDF file (issue 54, "bring your own arm"): the serial chain from the root link
//! to a tip link, its revolute joints with parallel axes kept (or the ones named), every other
//! joint held at a pose, projected into the plane those axes define, as `reference/so101.md`
//! derives the SO-101 by hand.
//!
//! - **Poses.** Every joint's transform is composed in full (nalgebra isometries: the joint's
//!   origin, `rpy` as URDF's fixed axes, then its motion) at the reference pose: kept joints at
//!   0, held joints at their `hold` value (default 0).
//! - **Plane.** Its normal is the kept joints' common axis. A vertical plane (the axes level,
//!   perpendicular to the file's `+z`) has `y` up and `x` on the side the tip reaches to at the
//!   reference pose, so gravity acts in it ([`Arm::vertical`]); a level plane (the axes along
//!   `z`) has `z` up and `x` along the root's `x`, without gravity; a tilted one is refused. The
//!   origin is the first kept joint's anchor.
//! - **Chain.** Link `k` runs from kept joint `k`'s anchor to the next one's (the last to the tip
//!   link's origin); its length and its angle to the previous link at the reference pose (the
//!   offset `o_k`) are in-plane. A chain angle is `θ_k = o_k + s_k q_k`, `q_k` the file's joint
//!   value and `s_k` the sign of its axis along the plane's `z`; ranges follow from the limits
//!   (a continuous joint turns freely).
//! - **Body.** Link `k`'s body is every URDF link rigidly carried between kept joint `k` and the
//!   next (side branches included, the tip link and everything below it on the last), its mass,
//!   centre of mass projected into the plane and inertia about the plane's normal lumped (parallel
//!   axes); out-of-plane offsets do not enter a chain of parallel hinges. Meshes are never read.
//! - **Servos.** Each kept joint's damping and friction come from `<dynamics>`, its torque limit
//!   and top speed from `<limit effort velocity>` where the file gives them (non-zero), else from
//!   the STS3215 the registry's SO-101 uses; its gains and armature always from the STS3215 (a
//!   URDF has none). [`UrdfArm::describe`] lists every value and where it came from.

use super::{Arm, Body};
use crate::chain::arm::{Chain, ChainError, Link as ChainLink, Prior};
use crate::kinematics::{JointLimits, Point2, wrap_angle};
use crate::plant::dynamics::{Inertia, Servo};
use nalgebra::{Isometry3, Matrix3, Translation3, Unit, UnitQuaternion, Vector3};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use urdf_rs::JointType;

/// The largest angle between two axes taken as parallel (and between a plane's normal and the
/// vertical or the level), radians: CAD exports write `1.5708` for pi/2, 3.7e-6 off.
pub const PARALLEL_TOLERANCE: f64 = 1e-5;

/// The largest URDF file read, bytes (16 MiB; a URDF without meshes is kilobytes).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The servo a URDF's joints default to: the SO-101's STS3215, as the registry's `so101` uses.
pub const DEFAULT_SERVO: Servo = Servo::STS3215;

/// How to read a URDF file into an arm.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UrdfOptions {
    /// The tip link (default: the only leaf of the tree).
    pub tip: Option<String>,
    /// The joints to keep, by name (default: the largest set of revolute joints on the way to
    /// the tip with parallel axes).
    pub joints: Option<Vec<String>>,
    /// The value every other joint is held at, by name (default 0), radians or metres.
    pub hold: BTreeMap<String, f64>,
}

/// Why a URDF file makes no planar chain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UrdfError {
    /// The file could not be read.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The file.
        path: String,
        /// Why, in one line.
        reason: String,
    },
    /// urdf-rs refused the file.
    #[error("{path} is not a URDF file this lab reads: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// urdf-rs's error, first line.
        reason: String,
    },
    /// A link is the child of several joints, or twice defined, or a joint names a missing link.
    #[error("{0}; a URDF is a tree: each link defined once and the child of one joint at most")]
    NotATree(String),
    /// No link is without a parent: the joints make a loop.
    #[error("every link is some joint's child, so the joints make a loop and the tree has no root")]
    NoRoot,
    /// Several links are without a parent.
    #[error("the file has several root links ({0}); a URDF tree has one")]
    SeveralRoots(String),
    /// The tip named is no link of the file.
    #[error("no link named `{0}` in the file")]
    UnknownLink(String),
    /// The tip is the root, or not connected to it.
    #[error("the tip link `{tip}` is not below the root link `{root}`")]
    TipNotBelowRoot {
        /// The tip.
        tip: String,
        /// The root.
        root: String,
    },
    /// No tip named and several leaves.
    #[error("the tree has several end links ({0}); name the tip")]
    SeveralLeaves(String),
    /// A floating, planar or spherical joint on the way to the tip.
    #[error(
        "joint `{joint}` on the way to the tip is {kind}; a planar chain holds only revolute, prismatic and fixed joints"
    )]
    FreeJoint {
        /// The joint.
        joint: String,
        /// Its type, in words.
        kind: &'static str,
    },
    /// A joint named (in `joints` or `hold`) that is not there, or not one that can be kept or held.
    #[error("{0}")]
    BadJointName(String),
    /// A prismatic joint asked to be kept.
    #[error(
        "joint `{0}` is prismatic; a chain here slides only on a rail before every revolute joint, so hold it (hold {0}=VALUE) instead of keeping it"
    )]
    Prismatic(String),
    /// Fewer than two parallel revolute joints.
    #[error("a planar chain needs at least two revolute joints with parallel axes on the way to the tip, found {0}")]
    TooFewParallel(String),
    /// Named joints whose axes are not parallel.
    #[error("joints `{first}` and `{other}` are not parallel: their axes are {angle:.3e} rad apart")]
    NotParallel {
        /// The first kept joint.
        first: String,
        /// The joint not parallel to it.
        other: String,
        /// The angle between their axes.
        angle: f64,
    },
    /// Two groups of parallel joints of the same size.
    #[error("the revolute joints fall in equally large groups of parallel axes ({0}); name the ones to keep")]
    Ambiguous(String),
    /// The plane is neither vertical nor level.
    #[error(
        "the joints' plane is tilted ({0:.3} rad from vertical); the lab's plane is vertical (gravity in it) or level (none)"
    )]
    TiltedPlane(f64),
    /// A number that is not a finite one in range (an origin, an axis, a limit, a held value).
    #[error("{0}")]
    BadNumber(String),
    /// A mass or inertia that is not physical.
    #[error("link `{link}`: {what}")]
    NotPhysical {
        /// The link.
        link: String,
        /// What is wrong, with the value.
        what: String,
    },
    /// The planar chain was refused.
    #[error("the planar chain from the file: {0}")]
    Chain(#[from] ChainError),
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// The file's element or attribute.
    File(&'static str),
    /// The default, and why.
    Default(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(what) => write!(f, "from the file's {what}"),
            Source::Default(why) => write!(f, "STS3215 default: {why}"),
        }
    }
}

/// A value with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced {
    /// The value.
    pub value: f64,
    /// Where it came from.
    pub source: Source,
}

/// One kept joint: how the file's value maps to the chain's angle, and its servo.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptJoint {
    /// The joint's name.
    pub name: String,
    /// `s_k`: +1 when its axis points along the plane's `z`, -1 against it.
    pub sign: f64,
    /// `o_k`: the link's angle to the previous one at the reference pose, radians.
    pub offset: f64,
    /// The file's limits `[lower, upper]`, radians (none for a continuous joint).
    pub limits: Option<(f64, f64)>,
    /// The URDF links lumped into this joint's link.
    pub links: Vec<String>,
    /// Viscous damping, N m s/rad.
    pub damping: Sourced,
    /// Coulomb friction, N m.
    pub friction: Sourced,
    /// Torque limit, N m.
    pub effort: Sourced,
    /// Top speed, rad/s.
    pub velocity: Sourced,
}

impl KeptJoint {
    /// The joint's servo: damping, friction and torque limit as read, gains and armature the
    /// STS3215's. (The top speed is recorded, not simulated: the plant's follows from the torque
    /// limit over the damping.)
    pub fn servo(&self) -> Servo {
        Servo {
            damping: self.damping.value,
            frictionloss: self.friction.value,
            torque_limit: self.effort.value,
            ..DEFAULT_SERVO
        }
    }
}

/// The plane of the chain in the root link's frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plane {
    /// The origin: the first kept joint's anchor, metres.
    pub origin: Vector3<f64>,
    /// The plane's `x` axis.
    pub x: Vector3<f64>,
    /// The plane's `y` axis (up when the plane is vertical).
    pub y: Vector3<f64>,
    /// Its normal, `x × y`.
    pub z: Vector3<f64>,
}

impl Plane {
    /// A point of the root's frame in the plane's coordinates.
    pub fn project(&self, p: &Vector3<f64>) -> Point2 {
        let d = p - self.origin;
        Point2::new(self.x.dot(&d), self.y.dot(&d))
    }
}

/// An arm read from a URDF file, with how it was read.
#[derive(Debug, Clone, PartialEq)]
pub struct UrdfArm {
    /// The arm.
    pub arm: Arm,
    /// The file, as named.
    pub path: String,
    /// The root link.
    pub root: String,
    /// The tip link.
    pub tip: String,
    /// The kept joints, root first.
    pub joints: Vec<KeptJoint>,
    /// Every other movable joint on the way to the tip with the value it is held at, and
    /// whether that value was given (else the default 0).
    pub held: Vec<(String, f64, bool)>,
    /// The plane.
    pub plane: Plane,
}

/// The value of a URDF joint's motion in a pose.
fn motion(joint: &urdf_rs::Joint, value: f64) -> Isometry3<f64> {
    let axis = Vector3::from(joint.axis.xyz.0);
    match joint.joint_type {
        JointType::Revolute | JointType::Continuous => Isometry3::from_parts(
            Translation3::identity(),
            UnitQuaternion::from_axis_angle(&Unit::new_normalize(axis), value),
        ),
        JointType::Prismatic => {
            Isometry3::from_parts(Translation3::from(axis.normalize() * value), UnitQuaternion::identity())
        }
        _ => Isometry3::identity(),
    }
}

/// A URDF `<origin>` as an isometry (`rpy`: roll about x, pitch about y, yaw about z, fixed axes).
pub fn origin(pose: &urdf_rs::Pose) -> Isometry3<f64> {
    let [x, y, z] = pose.xyz.0;
    let [roll, pitch, yaw] = pose.rpy.0;
    Isometry3::from_parts(Translation3::new(x, y, z), UnitQuaternion::from_euler_angles(roll, pitch, yaw))
}

fn joint_kind(t: &JointType) -> &'static str {
    match t {
        JointType::Revolute => "revolute",
        JointType::Continuous => "continuous",
        JointType::Prismatic => "prismatic",
        JointType::Fixed => "fixed",
        JointType::Floating => "floating",
        JointType::Planar => "planar",
        JointType::Spherical => "spherical",
    }
}

fn movable(t: &JointType) -> bool {
    matches!(t, JointType::Revolute | JointType::Continuous | JointType::Prismatic)
}

fn revolute(t: &JointType) -> bool {
    matches!(t, JointType::Revolute | JointType::Continuous)
}

fn finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// The first line of an error, without a trailing full stop.
fn one_line(e: &dyn std::fmt::Display) -> String {
    let s = e.to_string();
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("unknown error");
    line.trim_end_matches('.').to_string()
}

fn names(v: &[&str]) -> String {
    v.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

impl UrdfArm {
    /// Reads the URDF file at `path` (at most [`MAX_FILE_BYTES`]) into an arm.
    pub fn load(path: &Path, options: &UrdfOptions) -> Result<Self, UrdfError> {
        let shown = path.display().to_string();
        let bytes = crate::files::read_bounded(path, MAX_FILE_BYTES)
            .map_err(|e| UrdfError::Read { path: shown.clone(), reason: one_line(&e) })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| UrdfError::Malformed { path: shown.clone(), reason: "it is not UTF-8 text".into() })?;
        Self::parse(&shown, &text, options)
    }

    /// Reads URDF `text` (named `path` in messages) into an arm.
    pub fn parse(path: &str, text: &str, options: &UrdfOptions) -> Result<Self, UrdfError> {
        let robot = urdf_rs::read_from_string(text)
            .map_err(|e| UrdfError::Malformed { path: path.to_string(), reason: one_line(&e) })?;
        build(path, &robot, options)
    }

    /// The chain's coordinates for the file's values `q` of the kept joints: `o_k + s_k q_k`.
    pub fn chain_coords(&self, q: &[f64]) -> Vec<f64> {
        self.joints.iter().zip(q).map(|(j, &q)| j.offset + j.sign * q).collect()
    }

    /// Every value of the arm and where it came from, one line each.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        let body = self.arm.body.as_ref();
        let vertical = body.is_some_and(|b| b.vertical);
        let kept: Vec<&str> = self.joints.iter().map(|j| j.name.as_str()).collect();
        let _ = writeln!(
            s,
            "arm `{}` from {}: {} kept joints ({}) from link `{}` to link `{}`",
            self.arm.name,
            self.path,
            kept.len(),
            names(&kept),
            self.root,
            self.tip
        );
        // Rounded to the micrometre, without a `-0.000000`.
        let c = |x: f64| if x.abs() < 5e-7 { 0.0 } else { x };
        let v = |v: &Vector3<f64>| format!("({:.6}, {:.6}, {:.6})", c(v.x), c(v.y), c(v.z));
        let p = &self.plane;
        let _ = writeln!(
            s,
            "plane: {} ({}), origin {} m at the first kept joint's anchor, x {}, y {}, z {} in the root's frame",
            if vertical { "vertical" } else { "level" },
            if vertical { "gravity along -y" } else { "no gravity in it" },
            v(&p.origin),
            v(&p.x),
            v(&p.y),
            v(&p.z)
        );
        let _ = writeln!(s, "chain angle of joint k: o_k + s_k q_k (q_k the file's joint value)");
        if self.held.is_empty() {
            let _ = writeln!(s, "held: none");
        }
        for (name, value, given) in &self.held {
            let _ = writeln!(s, "held: `{name}` at {value} ({})", if *given { "given" } else { "default 0" });
        }
        for (k, (j, link)) in self.joints.iter().zip(self.arm.chain.links()).enumerate() {
            let next = if k + 1 < self.joints.len() {
                format!("`{}`'s", self.joints[k + 1].name)
            } else {
                format!("tip `{}`'s", self.tip)
            };
            let _ = writeln!(s, "joint {} `{}`:", k + 1, j.name);
            let _ = writeln!(
                s,
                "  length {:.9} m (in-plane distance from its origin to {next}, joint origins)",
                link.length
            );
            let _ = writeln!(s, "  offset o = {:.9} rad (link angle at the reference pose, joint origins)", j.offset);
            let _ = writeln!(s, "  sign s = {:+} (its axis along the plane's z)", j.sign);
            match j.limits {
                Some((lo, hi)) => {
                    let _ = writeln!(
                        s,
                        "  range [{:.9}, {:.9}] rad (from the file's <limit lower {lo} upper {hi}>)",
                        link.limits.min, link.limits.max
                    );
                }
                None => {
                    let _ = writeln!(s, "  range free (continuous joint)");
                }
            }
            if let Some(b) = body.and_then(|b| b.bodies.get(k)) {
                let _ = writeln!(
                    s,
                    "  body: mass {:.9} kg, COM ({:.9}, {:.9}) m in the link's frame, inertia {:.9e} kg m² about the COM (from the <inertial> of {})",
                    b.mass,
                    b.com[0],
                    b.com[1],
                    b.inertia,
                    j.links.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
                );
            }
            let servo = j.servo();
            for (what, value, unit, source) in [
                ("damping", j.damping.value, "N m s/rad", j.damping.source.to_string()),
                ("friction", j.friction.value, "N m", j.friction.source.to_string()),
                ("torque limit", j.effort.value, "N m", j.effort.source.to_string()),
                ("top speed", j.velocity.value, "rad/s", j.velocity.source.to_string()),
                ("kp", servo.kp, "N m/rad", Source::Default("a URDF has no servo gains").to_string()),
                ("kv", servo.kv, "N m s/rad", Source::Default("a URDF has no servo gains").to_string()),
                ("armature", servo.armature, "kg m²", Source::Default("a URDF has no armature").to_string()),
            ] {
                let _ = writeln!(s, "  servo {what} {value} {unit} ({source})");
            }
        }
        s
    }
}

/// The tree of a robot: each link's parent joint and child joints.
struct Tree<'a> {
    robot: &'a urdf_rs::Robot,
    parent: HashMap<&'a str, usize>,
    children: HashMap<&'a str, Vec<usize>>,
    root: &'a str,
}

impl<'a> Tree<'a> {
    fn new(robot: &'a urdf_rs::Robot) -> Result<Self, UrdfError> {
        let mut links: HashMap<&str, ()> = HashMap::new();
        for l in &robot.links {
            if links.insert(l.name.as_str(), ()).is_some() {
                return Err(UrdfError::NotATree(format!("link `{}` is defined twice", l.name)));
            }
        }
        let mut parent: HashMap<&str, usize> = HashMap::new();
        let mut children: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, j) in robot.joints.iter().enumerate() {
            for end in [&j.parent.link, &j.child.link] {
                if !links.contains_key(end.as_str()) {
                    return Err(UrdfError::NotATree(format!(
                        "joint `{}` names link `{end}`, which is not defined",
                        j.name
                    )));
                }
            }
            if let Some(&other) = parent.get(j.child.link.as_str()) {
                return Err(UrdfError::NotATree(format!(
                    "link `{}` is the child of two joints (`{}` and `{}`)",
                    j.child.link, robot.joints[other].name, j.name
                )));
            }
            parent.insert(j.child.link.as_str(), i);
            children.entry(j.parent.link.as_str()).or_default().push(i);
        }
        let roots: Vec<&str> =
            robot.links.iter().map(|l| l.name.as_str()).filter(|n| !parent.contains_key(n)).collect();
        let root = match roots.as_slice() {
            [] => return Err(UrdfError::NoRoot),
            [root] => *root,
            several => return Err(UrdfError::SeveralRoots(names(several))),
        };
        Ok(Self { robot, parent, children, root })
    }

    /// The leaves below the root.
    fn leaves(&self) -> Vec<&'a str> {
        let mut leaves = Vec::new();
        let mut stack = vec![self.root];
        while let Some(l) = stack.pop() {
            match self.children.get(l) {
                Some(c) if !c.is_empty() => {
                    stack.extend(c.iter().rev().map(|&j| self.robot.joints[j].child.link.as_str()))
                }
                _ => leaves.push(l),
            }
        }
        leaves
    }

    /// The joints from the root to `tip`, root first.
    fn path(&self, tip: &str) -> Result<Vec<usize>, UrdfError> {
        let not_below = || UrdfError::TipNotBelowRoot { tip: tip.to_string(), root: self.root.to_string() };
        let mut path = Vec::new();
        let mut link = tip;
        while let Some(&j) = self.parent.get(link) {
            path.push(j);
            if path.len() > self.robot.joints.len() {
                return Err(not_below()); // a loop that never reaches the root
            }
            link = self.robot.joints[j].parent.link.as_str();
        }
        if link != self.root || path.is_empty() {
            return Err(not_below());
        }
        path.reverse();
        Ok(path)
    }

    /// `link` and every link below it, except through joint `skip`, with their poses.
    fn carried(
        &self,
        link: &'a str,
        pose: Isometry3<f64>,
        skip: Option<usize>,
        value: &dyn Fn(usize) -> f64,
        out: &mut Vec<(&'a str, Isometry3<f64>)>,
    ) {
        out.push((link, pose));
        for &j in self.children.get(link).map(Vec::as_slice).unwrap_or(&[]) {
            if Some(j) == skip {
                continue;
            }
            let joint = &self.robot.joints[j];
            let child = pose * origin(&joint.origin) * motion(joint, value(j));
            self.carried(joint.child.link.as_str(), child, None, value, out);
        }
    }
}

/// Checks a link's inertial and returns its mass, centre of mass and inertia tensor in the root's
/// frame, the link at `pose`.
fn inertial(link: &urdf_rs::Link, pose: &Isometry3<f64>) -> Result<(f64, Vector3<f64>, Matrix3<f64>), UrdfError> {
    let bad = |what: String| UrdfError::NotPhysical { link: link.name.clone(), what };
    let i = &link.inertial;
    let m = i.mass.value;
    if !(m.is_finite() && m >= 0.0) {
        return Err(bad(format!("its mass must be a finite number of kg, at least 0, got {m}")));
    }
    let t = &i.inertia;
    let tensor = Matrix3::new(t.ixx, t.ixy, t.ixz, t.ixy, t.iyy, t.iyz, t.ixz, t.iyz, t.izz);
    if !finite(tensor.as_slice()) || !finite(&i.origin.xyz.0) || !finite(&i.origin.rpy.0) {
        return Err(bad("its <inertial> holds a number that is not finite".into()));
    }
    let eigen = tensor.symmetric_eigenvalues();
    let (lo, hi) = (eigen.min(), eigen.max());
    if lo < -1e-12 * hi.abs().max(1e-12) {
        return Err(bad(format!("its inertia is not positive semi-definite (an eigenvalue of {lo:.3e} kg m²)")));
    }
    let frame = pose * origin(&i.origin);
    let r = frame.rotation.to_rotation_matrix();
    let world = r.matrix() * tensor * r.matrix().transpose();
    Ok((m, frame.translation.vector, world))
}

fn build(path: &str, robot: &urdf_rs::Robot, options: &UrdfOptions) -> Result<UrdfArm, UrdfError> {
    let tree = Tree::new(robot)?;
    let by_name: HashMap<&str, usize> = robot.joints.iter().enumerate().map(|(i, j)| (j.name.as_str(), i)).collect();
    let links: HashMap<&str, &urdf_rs::Link> = robot.links.iter().map(|l| (l.name.as_str(), l)).collect();

    // The tip and the path to it.
    let tip: &str = match &options.tip {
        Some(t) => links.get_key_value(t.as_str()).map(|(k, _)| *k).ok_or_else(|| UrdfError::UnknownLink(t.clone()))?,
        None => match tree.leaves().as_slice() {
            [one] => one,
            several => return Err(UrdfError::SeveralLeaves(names(several))),
        },
    };
    let path_joints = tree.path(tip)?;
    for &j in &path_joints {
        let joint = &robot.joints[j];
        if matches!(joint.joint_type, JointType::Floating | JointType::Planar | JointType::Spherical) {
            return Err(UrdfError::FreeJoint { joint: joint.name.clone(), kind: joint_kind(&joint.joint_type) });
        }
        let o = &joint.origin;
        if !finite(&o.xyz.0) || !finite(&o.rpy.0) || !finite(&joint.axis.xyz.0) {
            return Err(UrdfError::BadNumber(format!("joint `{}`: its origin or axis is not finite", joint.name)));
        }
        if movable(&joint.joint_type) && Vector3::from(joint.axis.xyz.0).norm() < 1e-12 {
            return Err(UrdfError::BadNumber(format!("joint `{}`: its axis is zero", joint.name)));
        }
    }
    let on_path = |name: &str| path_joints.iter().position(|&j| robot.joints[j].name == name);

    // Held values.
    for (name, &value) in &options.hold {
        let Some(&j) = by_name.get(name.as_str()) else {
            return Err(UrdfError::BadJointName(format!("hold: no joint named `{name}` in the file")));
        };
        let joint = &robot.joints[j];
        if !movable(&joint.joint_type) {
            return Err(UrdfError::BadJointName(format!(
                "hold: joint `{name}` is {}, it has no value to hold",
                joint_kind(&joint.joint_type)
            )));
        }
        let l = &joint.limit;
        let limited = joint.joint_type != JointType::Continuous;
        if !value.is_finite() || (limited && !(l.lower <= value && value <= l.upper)) {
            return Err(UrdfError::BadNumber(format!(
                "hold: joint `{name}` must be held within its limits [{}, {}], got {value}",
                l.lower, l.upper
            )));
        }
    }
    let value = |j: usize| options.hold.get(&robot.joints[j].name).copied().unwrap_or(0.0);

    // Poses of the path's links at the reference pose.
    let mut poses = vec![Isometry3::identity()];
    for &j in &path_joints {
        let joint = &robot.joints[j];
        let last = *poses.last().expect("the root's pose");
        poses.push(last * origin(&joint.origin) * motion(joint, value(j)));
    }
    // Joint i of the path (0-based): its anchor and axis in the root's frame.
    let anchor = |i: usize| (poses[i] * origin(&robot.joints[path_joints[i]].origin)).translation.vector;
    let axis = |i: usize| {
        let frame = poses[i] * origin(&robot.joints[path_joints[i]].origin);
        (frame.rotation * Vector3::from(robot.joints[path_joints[i]].axis.xyz.0)).normalize()
    };
    let angle = |a: &Vector3<f64>, b: &Vector3<f64>| a.cross(b).norm().atan2(a.dot(b).abs());

    // The kept joints.
    let kept: Vec<usize> = match &options.joints {
        Some(named) => {
            let mut kept = Vec::new();
            for name in named {
                let Some(i) = on_path(name) else {
                    return Err(UrdfError::BadJointName(format!(
                        "joints: no joint named `{name}` on the way from `{}` to `{tip}`",
                        tree.root
                    )));
                };
                let joint = &robot.joints[path_joints[i]];
                match joint.joint_type {
                    JointType::Prismatic => return Err(UrdfError::Prismatic(name.clone())),
                    JointType::Fixed => {
                        return Err(UrdfError::BadJointName(format!(
                            "joints: joint `{name}` is fixed, it cannot turn"
                        )));
                    }
                    _ => {}
                }
                if options.hold.contains_key(name) {
                    return Err(UrdfError::BadJointName(format!("joint `{name}` is both kept and held")));
                }
                if kept.contains(&i) {
                    return Err(UrdfError::BadJointName(format!("joints: `{name}` is named twice")));
                }
                kept.push(i);
            }
            kept.sort_unstable();
            if kept.len() < 2 {
                return Err(UrdfError::TooFewParallel(format!("{} named", kept.len())));
            }
            for &i in &kept[1..] {
                let a = angle(&axis(kept[0]), &axis(i));
                if a > PARALLEL_TOLERANCE {
                    return Err(UrdfError::NotParallel {
                        first: robot.joints[path_joints[kept[0]]].name.clone(),
                        other: robot.joints[path_joints[i]].name.clone(),
                        angle: a,
                    });
                }
            }
            kept
        }
        None => {
            let mut groups: Vec<Vec<usize>> = Vec::new();
            for (i, &j) in path_joints.iter().enumerate() {
                let joint = &robot.joints[j];
                if !revolute(&joint.joint_type) || options.hold.contains_key(&joint.name) {
                    continue;
                }
                match groups.iter_mut().find(|g| angle(&axis(g[0]), &axis(i)) <= PARALLEL_TOLERANCE) {
                    Some(g) => g.push(i),
                    None => groups.push(vec![i]),
                }
            }
            let largest = groups.iter().map(Vec::len).max().unwrap_or(0);
            let group_names = |g: &Vec<usize>| {
                g.iter().map(|&i| format!("`{}`", robot.joints[path_joints[i]].name)).collect::<Vec<_>>().join(", ")
            };
            if largest < 2 {
                let found = groups.iter().flatten().count();
                return Err(UrdfError::TooFewParallel(if found == 0 {
                    "no revolute joint".into()
                } else {
                    format!("{found} revolute joint(s), none parallel to another")
                }));
            }
            let biggest: Vec<&Vec<usize>> = groups.iter().filter(|g| g.len() == largest).collect();
            if biggest.len() > 1 {
                return Err(UrdfError::Ambiguous(
                    biggest.iter().map(|g| group_names(g)).collect::<Vec<_>>().join("; "),
                ));
            }
            biggest[0].clone()
        }
    };

    // The plane.
    let up = Vector3::z();
    let normal = axis(kept[0]);
    let o = anchor(kept[0]);
    let tip_point = poses[path_joints.len()].translation.vector;
    let tilt = normal.dot(&up).abs().asin(); // 0 when the axes are level
    let plane = if tilt <= PARALLEL_TOLERANCE {
        let y = (up - normal * normal.dot(&up)).normalize();
        let x = y.cross(&normal);
        let (x, z) = if x.dot(&(tip_point - o)) < 0.0 { (-x, -normal) } else { (x, normal) };
        Plane { origin: o, x, y, z }
    } else if std::f64::consts::FRAC_PI_2 - tilt <= PARALLEL_TOLERANCE {
        let z = if normal.dot(&up) > 0.0 { normal } else { -normal };
        let x = (Vector3::x() - z * z.dot(&Vector3::x())).normalize();
        Plane { origin: o, x, y: z.cross(&x), z }
    } else {
        return Err(UrdfError::TiltedPlane(tilt));
    };
    let vertical = tilt <= PARALLEL_TOLERANCE;

    // The chain.
    let n = kept.len();
    let mut points: Vec<Point2> = kept.iter().map(|&i| plane.project(&anchor(i))).collect();
    points.push(plane.project(&tip_point));
    let mut joints = Vec::with_capacity(n);
    let mut chain_links = Vec::with_capacity(n);
    let mut bodies = Vec::with_capacity(n);
    let mut previous = 0.0;
    for k in 0..n {
        let i = kept[k];
        let joint = &robot.joints[path_joints[i]];
        let d = points[k + 1] - points[k];
        let phi = d.y.atan2(d.x);
        let offset = if k == 0 { phi } else { wrap_angle(phi - previous) };
        previous = phi;
        let sign = if axis(i).dot(&plane.z) > 0.0 { 1.0 } else { -1.0 };
        let (limits, range) = if joint.joint_type == JointType::Continuous {
            (None, JointLimits::FULL)
        } else {
            let (lo, hi) = (joint.limit.lower, joint.limit.upper);
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(UrdfError::BadNumber(format!(
                    "joint `{}`: its <limit lower upper> must be finite with lower < upper, got [{lo}, {hi}]",
                    joint.name
                )));
            }
            let (a, b) = (sign * lo, sign * hi);
            (Some((lo, hi)), JointLimits { min: offset + a.min(b), max: offset + a.max(b) })
        };
        chain_links.push(ChainLink { length: d.norm(), limits: range });

        // The body: every link carried from this joint to the next kept one.
        let end = if k + 1 < n { kept[k + 1] } else { path_joints.len() };
        let mut carried = Vec::new();
        for (p, pose) in poses.iter().enumerate().take(end + 1).skip(i + 1) {
            let link = robot.joints[path_joints[p - 1]].child.link.as_str();
            let skip = path_joints.get(p).copied();
            tree.carried(link, *pose, skip, &value, &mut carried);
        }
        let mut mass = 0.0;
        let mut moment = Vector3::zeros();
        let mut parts = Vec::new();
        for (name, pose) in &carried {
            let (m, c, tensor) = inertial(links[name], pose)?;
            let c2 = plane.project(&c);
            mass += m;
            moment += Vector3::new(m * c2.x, m * c2.y, 0.0);
            parts.push((m, c2, (plane.z.transpose() * tensor * plane.z)[0]));
        }
        let com = if mass > 0.0 { Point2::new(moment.x / mass, moment.y / mass) } else { points[k] };
        let inertia: f64 = parts.iter().map(|&(m, c, izz)| izz + m * (c - com).norm_squared()).sum();
        let r = com - points[k];
        let (s, c) = phi.sin_cos();
        bodies.push(Inertia { mass, com: [c * r.x + s * r.y, -s * r.x + c * r.y], inertia });

        let dynamics = joint.dynamics.as_ref();
        let sourced = |v: Option<f64>, file: &'static str, default: f64, why: &'static str| match v {
            Some(value) => Sourced { value, source: Source::File(file) },
            None => Sourced { value: default, source: Source::Default(why) },
        };
        let given = |v: f64| (v.is_finite() && v > 0.0).then_some(v);
        for (what, v) in [("damping", dynamics.map(|d| d.damping)), ("friction", dynamics.map(|d| d.friction))] {
            if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                return Err(UrdfError::BadNumber(format!(
                    "joint `{}`: its <dynamics {what}> must be a finite number, at least 0, got {}",
                    joint.name,
                    v.unwrap_or_default()
                )));
            }
        }
        joints.push(KeptJoint {
            name: joint.name.clone(),
            sign,
            offset,
            limits,
            links: carried.iter().map(|(l, _)| l.to_string()).collect(),
            damping: sourced(dynamics.map(|d| d.damping), "<dynamics damping>", DEFAULT_SERVO.damping, "no <dynamics>"),
            friction: sourced(
                dynamics.map(|d| d.friction),
                "<dynamics friction>",
                DEFAULT_SERVO.frictionloss,
                "no <dynamics>",
            ),
            effort: sourced(
                given(joint.limit.effort),
                "<limit effort>",
                DEFAULT_SERVO.torque_limit,
                "no <limit effort> above 0",
            ),
            velocity: sourced(
                given(joint.limit.velocity),
                "<limit velocity>",
                DEFAULT_SERVO.no_load_speed(),
                "no <limit velocity> above 0",
            ),
        });
    }
    let chain = Chain::new(None, chain_links)?;
    let held = path_joints
        .iter()
        .enumerate()
        .filter(|(i, j)| movable(&robot.joints[**j].joint_type) && !kept.contains(i))
        .map(|(_, &j)| {
            let name = robot.joints[j].name.clone();
            let given = options.hold.contains_key(&name);
            (name, value(j), given)
        })
        .collect();
    let stem = Path::new(path).file_name().map_or_else(|| path.to_string(), |f| f.to_string_lossy().into_owned());
    let name = if robot.name.is_empty() { format!("file {stem}") } else { format!("file {stem} ({})", robot.name) };
    let prior = Prior::uniform(&chain);
    let arm = Arm { name, kind: None, chain, prior, body: Some(Body { bodies, vertical }) };
    Ok(UrdfArm { arm, path: path.to_string(), root: tree.root.to_string(), tip: tip.to_string(), joints, held, plane })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::{ArmKind, so101};
    use nalgebra::{Matrix4, Rotation3};
    use rand::{RngExt, SeedableRng};

    const SO101: &str = include_str!("../../tests/data/so101_pitch.urdf");

    fn so101_options() -> UrdfOptions {
        UrdfOptions {
            tip: Some("gripper_frame".into()),
            hold: [("shoulder_pan".to_string(), 0.0)].into(),
            ..UrdfOptions::default()
        }
    }

    fn so101_file() -> UrdfArm {
        UrdfArm::parse("so101_pitch.urdf", SO101, &so101_options()).unwrap()
    }

    /// A small arm: a base yaw joint, two pitch joints (the second of type `second`), a fixed
    /// tip; link `l1` with `inertial`.
    pub(super) fn small(second: &str, inertial: &str) -> String {
        format!(
            r#"<robot name="small">
  <link name="base"/>
  <link name="yaw_link"/>
  <link name="l1">{inertial}</link>
  <link name="l2"/>
  <link name="tip"/>
  <joint name="yaw" type="revolute"><origin xyz="0 0 0.1"/><parent link="base"/><child link="yaw_link"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j1" type="revolute"><parent link="yaw_link"/><child link="l1"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j2" type="{second}"><origin xyz="0.3 0 0"/><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="end" type="fixed"><origin xyz="0.2 0 0"/><parent link="l2"/><child link="tip"/></joint>
</robot>"#
        )
    }

    fn load(text: &str, options: &UrdfOptions) -> Result<UrdfArm, UrdfError> {
        UrdfArm::parse("small.urdf", text, options)
    }

    #[test]
    fn a_small_arm_loads() {
        let a = load(&small("revolute", ""), &UrdfOptions::default()).unwrap();
        let lengths: Vec<f64> = a.arm.chain.links().iter().map(|l| l.length).collect();
        assert!((lengths[0] - 0.3).abs() < 1e-12 && (lengths[1] - 0.2).abs() < 1e-12, "{lengths:?}");
        assert_eq!(a.held, vec![("yaw".to_string(), 0.0, false)]);
        assert!(a.arm.vertical());
    }

    #[test]
    fn the_so101_urdf_is_the_registrys_so101() {
        let file = so101_file();
        let registry = ArmKind::So101.arm();
        let names: Vec<&str> = file.joints.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["shoulder_lift", "elbow_flex", "wrist_flex"]);
        assert_eq!(file.held, vec![("shoulder_pan".to_string(), 0.0, true), ("wrist_roll".to_string(), 0.0, false)]);
        for (k, (ours, theirs)) in file.arm.chain.links().iter().zip(registry.chain.links()).enumerate() {
            assert!((ours.length - theirs.length).abs() < 1e-6, "link {k}: {ours:?} against {theirs:?}");
            assert!((ours.limits.min - theirs.limits.min).abs() < 1e-9, "link {k}: {ours:?} against {theirs:?}");
            assert!((ours.limits.max - theirs.limits.max).abs() < 1e-9, "link {k}: {ours:?} against {theirs:?}");
            assert!((file.joints[k].offset - so101::ZERO_OFFSETS[k]).abs() < 1e-9, "offset {k}");
            assert_eq!(file.joints[k].sign, -1.0, "every pitch axis points along our -z");
        }
        assert_eq!(file.arm.coords(), 3);
        let (ours, theirs) = (file.arm.real(), registry.real());
        for (k, (a, b)) in ours.bodies.iter().zip(&theirs.bodies).enumerate() {
            assert!((a.mass - b.mass).abs() < 1e-12, "body {k}: {a:?} against {b:?}");
            assert!(
                (a.com[0] - b.com[0]).abs() < 1e-6 && (a.com[1] - b.com[1]).abs() < 1e-6,
                "body {k}: {a:?} against {b:?}"
            );
            assert!(
                (a.inertia - b.inertia).abs() < 1e-9 * b.inertia.max(1e-6) + 1e-12,
                "body {k}: {a:?} against {b:?}"
            );
        }
        assert_eq!(ours.bodies.len(), 3);
        assert_eq!(file.joints[2].links, ["wrist", "gripper", "camera_mount", "moving_jaw", "gripper_frame"]);
        assert!(file.arm.vertical(), "the pitch axes are level: gravity in the plane");
        // Servos: shoulder_lift's from the file (the STS3215's own numbers), the others' defaults.
        assert_eq!(file.joints[0].damping.source, Source::File("<dynamics damping>"));
        assert_eq!(file.joints[0].velocity, Sourced { value: 4.7, source: Source::File("<limit velocity>") });
        assert!(matches!(file.joints[1].effort.source, Source::Default(_)));
        for j in &file.joints {
            assert_eq!(j.servo(), Servo::STS3215, "{}", j.name);
        }
    }

    /// The pose of `link` with joint values `q` (by name, 0 otherwise), composed here from the
    /// file's numbers as 4x4 matrices, apart from [`origin`] and [`motion`].
    fn urdf_fk(robot: &urdf_rs::Robot, link: &str, q: &HashMap<&str, f64>) -> Matrix4<f64> {
        let Some(j) = robot.joints.iter().find(|j| j.child.link == link) else { return Matrix4::identity() };
        let [x, y, z] = j.origin.xyz.0;
        let [r, p, w] = j.origin.rpy.0;
        let rpy = Rotation3::from_axis_angle(&Vector3::z_axis(), w)
            * Rotation3::from_axis_angle(&Vector3::y_axis(), p)
            * Rotation3::from_axis_angle(&Vector3::x_axis(), r);
        let mut o = rpy.to_homogeneous();
        o[(0, 3)] = x;
        o[(1, 3)] = y;
        o[(2, 3)] = z;
        let v = q.get(j.name.as_str()).copied().unwrap_or(0.0);
        let axis = Unit::new_normalize(Vector3::from(j.axis.xyz.0));
        let m = match j.joint_type {
            JointType::Revolute => Rotation3::from_axis_angle(&axis, v).to_homogeneous(),
            _ => Matrix4::identity(),
        };
        urdf_fk(robot, &j.parent.link, q) * o * m
    }

    #[test]
    fn fk_of_the_loaded_arm_is_the_urdfs_own() {
        let file = so101_file();
        let robot = urdf_rs::read_from_string(SO101).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(54);
        let mut normal = None;
        for _ in 0..200 {
            let q: Vec<f64> = file
                .joints
                .iter()
                .map(|j| {
                    let (lo, hi) = j.limits.unwrap();
                    rng.random_range(lo..hi)
                })
                .collect();
            let by_name: HashMap<&str, f64> =
                file.joints.iter().map(|j| j.name.as_str()).zip(q.iter().copied()).collect();
            let tip = urdf_fk(&robot, "gripper_frame", &by_name).column(3).xyz();
            let theirs = file.plane.project(&tip);
            let x = file.chain_coords(&q);
            assert!(file.arm.chain.within_limits(&x), "{q:?} in the file's limits is {x:?}");
            let ours = file.arm.chain.tip(&x);
            assert!((ours - theirs).norm() < 1e-9, "{q:?}: {ours:?} against the file's {theirs:?}");
            // The tip stays in one plane parallel to ours.
            let off = file.plane.z.dot(&(tip - file.plane.origin));
            assert!((off - *normal.get_or_insert(off)).abs() < 1e-9, "{off} off the plane");
        }
    }
}

#[cfg(test)]
mod refusals {
    use super::tests::small;
    use super::*;

    fn err(text: &str, options: &UrdfOptions) -> UrdfError {
        UrdfArm::parse("small.urdf", text, options).unwrap_err()
    }

    fn inertial(mass: &str, ixx: &str, ixy: &str) -> String {
        format!(
            r#"<inertial><mass value="{mass}"/><inertia ixx="{ixx}" ixy="{ixy}" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial>"#
        )
    }

    #[test]
    fn fewer_than_two_parallel_joints_are_refused() {
        // j2 turns about x: one pitch joint, one yaw, one roll.
        let e = err(
            &small("revolute", "").replace(
                r#"<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="end""#,
                r#"<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="end""#,
            ),
            &UrdfOptions::default(),
        );
        assert!(matches!(e, UrdfError::TooFewParallel(_)), "{e}");
        assert!(e.to_string().contains("3 revolute joint(s), none parallel"), "{e}");
        // Named joints that are not parallel.
        let named = UrdfOptions { joints: Some(vec!["yaw".into(), "j1".into()]), ..UrdfOptions::default() };
        let e = err(&small("revolute", ""), &named);
        assert!(matches!(&e, UrdfError::NotParallel { first, other, .. } if first == "yaw" && other == "j1"), "{e}");
        // Holding one of two leaves one.
        let held = UrdfOptions { hold: [("j2".to_string(), 0.5)].into(), ..UrdfOptions::default() };
        assert!(matches!(err(&small("revolute", ""), &held), UrdfError::TooFewParallel(_)));
    }

    #[test]
    fn a_tip_not_below_the_root_is_refused() {
        let at_root = UrdfOptions { tip: Some("base".into()), ..UrdfOptions::default() };
        let e = err(&small("revolute", ""), &at_root);
        assert_eq!(e, UrdfError::TipNotBelowRoot { tip: "base".into(), root: "base".into() });
        let unknown = UrdfOptions { tip: Some("hand".into()), ..UrdfOptions::default() };
        assert_eq!(err(&small("revolute", ""), &unknown), UrdfError::UnknownLink("hand".into()));
        // A tip on a loop of its own, away from the root.
        let island = small("revolute", "").replace(
            "</robot>",
            r#"<link name="a"/><link name="b"/>
  <joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
  <joint name="ba" type="fixed"><parent link="b"/><child link="a"/></joint>
</robot>"#,
        );
        let e = err(&island, &UrdfOptions { tip: Some("b".into()), ..UrdfOptions::default() });
        assert!(matches!(e, UrdfError::TipNotBelowRoot { .. }), "{e}");
    }

    #[test]
    fn loops_and_several_parents_are_refused() {
        let twice = small("revolute", "").replace(
            "</robot>",
            r#"<joint name="again" type="fixed"><parent link="base"/><child link="l2"/></joint></robot>"#,
        );
        let e = err(&twice, &UrdfOptions::default());
        assert!(
            matches!(e, UrdfError::NotATree(_)) && e.to_string().contains("`l2` is the child of two joints"),
            "{e}"
        );
        let looped = small("revolute", "").replace(
            "</robot>",
            r#"<joint name="back" type="fixed"><parent link="tip"/><child link="base"/></joint></robot>"#,
        );
        assert_eq!(err(&looped, &UrdfOptions::default()), UrdfError::NoRoot);
    }

    #[test]
    fn a_floating_or_planar_joint_on_the_way_is_refused() {
        for kind in ["floating", "planar"] {
            let e = err(
                &small("revolute", "").replace(r#"name="end" type="fixed""#, &format!(r#"name="end" type="{kind}""#)),
                &UrdfOptions::default(),
            );
            assert_eq!(
                e,
                UrdfError::FreeJoint {
                    joint: "end".into(),
                    kind: if kind == "planar" { "planar" } else { "floating" }
                }
            );
        }
    }

    #[test]
    fn a_prismatic_joint_is_held_not_kept() {
        let named = UrdfOptions { joints: Some(vec!["j1".into(), "j2".into()]), ..UrdfOptions::default() };
        assert_eq!(err(&small("prismatic", ""), &named), UrdfError::Prismatic("j2".into()));
        // Unnamed, it is held at 0 and leaves one revolute pitch joint.
        assert!(matches!(err(&small("prismatic", ""), &UrdfOptions::default()), UrdfError::TooFewParallel(_)));
    }

    #[test]
    fn a_malformed_file_is_one_sentence() {
        for text in [
            "",
            "not xml at all",
            "<robot name=\"r\"><link name=\"a\"></robot>",
            "<robot><joint name=\"j\" type=\"revolute\"/></robot>",
        ] {
            let e = err(text, &UrdfOptions::default());
            assert!(matches!(e, UrdfError::Malformed { .. }), "{text:?}: {e}");
            let s = e.to_string();
            assert!(!s.contains('\n') && s.starts_with("small.urdf is not a URDF file"), "{s}");
        }
    }

    #[test]
    fn masses_and_inertias_that_are_not_physical_are_refused() {
        for (mass, ixx, ixy, needle) in [
            ("-0.1", "1e-4", "0", "mass"),
            ("NaN", "1e-4", "0", "mass"),
            ("0.1", "NaN", "0", "not finite"),
            ("0.1", "-1e-4", "0", "positive semi-definite"),
            ("0.1", "1e-4", "5e-4", "positive semi-definite"),
        ] {
            let e = err(&small("revolute", &inertial(mass, ixx, ixy)), &UrdfOptions::default());
            assert!(matches!(&e, UrdfError::NotPhysical { link, .. } if link == "l1"), "{mass} {ixx} {ixy}: {e}");
            assert!(e.to_string().contains(needle), "{e}");
        }
        assert!(
            UrdfArm::parse("ok", &small("revolute", &inertial("0.1", "1e-4", "0")), &UrdfOptions::default()).is_ok()
        );
    }

    #[test]
    fn several_leaves_need_a_tip() {
        let text = include_str!("../../tests/data/so101_pitch.urdf");
        let e = err(text, &UrdfOptions::default());
        assert_eq!(e, UrdfError::SeveralLeaves("`gripper_frame`, `camera_mount`, `moving_jaw`".into()));
    }

    #[test]
    fn describe_lists_every_value_and_its_source() {
        let options = UrdfOptions { tip: Some("gripper_frame".into()), ..UrdfOptions::default() };
        let file =
            UrdfArm::parse("so101_pitch.urdf", include_str!("../../tests/data/so101_pitch.urdf"), &options).unwrap();
        let d = file.describe();
        for needle in [
            "3 kept joints (`shoulder_lift`, `elbow_flex`, `wrist_flex`)",
            "plane: vertical",
            "held: `shoulder_pan` at 0 (default 0)",
            "length 0.116000021 m",
            "servo damping 0.6 N m s/rad (from the file's <dynamics damping>)",
            "servo torque limit 2.94 N m (STS3215 default: no <limit effort> above 0)",
            "servo kp 998.22 N m/rad (STS3215 default",
            "mass 0.190000000 kg",
        ] {
            assert!(d.contains(needle), "{needle:?} not in\n{d}");
        }
        assert_eq!(d.matches("\n  servo ").count(), 21, "seven servo values per joint\n{d}");
    }
}
