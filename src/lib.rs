//! Elbow: a lab for the failure modes of learned inverse kinematics on a planar two-link arm.
//!
//! This library is the headless core; it never touches bevy. It holds:
//! - [`kinematics`]: the arm, forward kinematics, the Jacobian and the reachable workspace;
//! - [`solver`]: the [`solver::IkSolver`] trait every solver implements and its [`solver::Solution`];
//! - [`analytic`] and [`iterative`]: the classical solvers (closed form, damped least squares).
//!
//! The desktop app (`src/app/`, behind the default `app` feature) is a thin layer over this core.

pub mod analytic;
pub mod iterative;
pub mod kinematics;
pub mod nn;
pub mod solver;

pub use analytic::{AnalyticSolver, BranchChoice, Branches, solve_branches};
pub use iterative::DlsSolver;
pub use kinematics::{ElbowMode, JointLimits, Point2, Pose, Region, SampleMode, TwoLinkArm};
pub use solver::{IkSolver, Solution, SolveStatus, UnreachableReason};
