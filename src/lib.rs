//! Elbow: a lab for the failure modes of learned inverse kinematics on a planar two-link arm.
//!
//! This library is the headless core; it never touches bevy. It holds:
//! - [`kinematics`]: the arm, forward kinematics, the Jacobian and the reachable workspace;
//! - [`solver`]: the [`solver::IkSolver`] trait every solver implements and its [`solver::Solution`];
//! - [`analytic`] and [`iterative`]: the classical solvers (closed form, damped least squares);
//! - [`nn`]: small networks written with nalgebra (dense layers, losses, Adam);
//! - [`learned`]: the learned heads (MSE, MDN, mode-conditioned, residual hybrid) and training;
//! - [`plant`]: the simulated real arm (mismatch, backlash, lag, encoder noise);
//! - [`envelope`]: the safety envelope around learned solvers;
//! - [`experiments`], [`cli`] and [`bench`](mod@bench): everything the command line reproduces;
//! - [`stats`]: error summaries.
//!
//! The desktop app (`src/app/`, behind the default `app` feature) is a thin layer over this core.

#![warn(missing_docs)]

pub mod analytic;
pub mod bench;
pub mod cli;
pub mod envelope;
pub mod experiments;
pub mod iterative;
pub mod kinematics;
pub mod learned;
pub mod nn;
pub mod plant;
pub mod solver;
pub mod stats;

pub use analytic::{AnalyticSolver, BranchChoice, Branches, solve_branches};
pub use envelope::{EnvelopeConfig, InterventionLog, SafetyEnvelope};
pub use iterative::DlsSolver;
pub use kinematics::{ElbowMode, JointLimits, Point2, Pose, RealArm, Region, SampleMode, TwoLinkArm};
pub use learned::{HeadKind, LearnedIk, LearnedModel, LearnedSolver, TrainConfig, Trainer};
pub use plant::{Plant, PlantConfig};
pub use solver::{IkSolver, Solution, SolveStatus, UnreachableReason};
