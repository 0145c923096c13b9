//! Elbow: a lab for the failure modes of learned inverse kinematics on a planar two-link arm.
//!
//! This library is the headless core; it never touches bevy. It holds:
//! - [`kinematics`]: poses, the arm (FK, the Jacobian, the mismatched real arm) and the
//!   reachable workspace;
//! - [`solver`]: the [`solver::IkSolver`] trait every solver implements and its [`solver::Solution`];
//! - [`analytic`] and [`iterative`]: the classical solvers (closed form, damped least squares);
//! - [`chain`]: redundant planar chains (named arms, DLS, the exact posterior sampler, MMD);
//! - [`nn`]: small networks written with nalgebra (dense layers, losses, Adam);
//! - [`learned`]: the learned heads (MSE, MDN, mode-conditioned, residual hybrid) and training;
//! - [`plant`]: the simulated real arm: rigid-body dynamics under position servos, checked against
//!   MuJoCo (latency, backlash, friction, flex, mismatch, encoder noise, a camera);
//! - [`envelope`]: the safety envelope around learned solvers;
//! - [`lineup`]: one typed identity per solver ([`lineup::SolverId`]), pipelines with or without
//!   the envelope, tables keyed by them, and the one place that runs any solver;
//! - [`atlas`]: one solver's answer over the whole workspace, as maps (miss, branch, envelope,
//!   silent failures);
//! - [`explain`]: one head's answer for one target taken apart ("why did it do that?");
//! - [`lessons`]: the lessons the app opens in one click, each a plain scene with a caption;
//! - [`experiments`] and [`bench`](mod@bench): plain configurations in, reports out;
//! - [`keys`]: the one way named enums parse and print by key;
//! - [`rng`]: the one table of seeded random streams;
//! - [`files`]: atomic writes, bounded reads, destinations checked up front;
//! - [`stats`]: error summaries and JSON numbers that keep NaN and infinity apart; [`simd`]: runtime dispatch of hot loops to the CPU's widest
//!   vector unit.
//!
//! The command line (`src/cli/`, the `cli` feature) and the desktop app (`src/app/`, the `app`
//! feature) live in the binary: thin layers that parse, call and print or draw.

#![warn(missing_docs)]

pub mod analytic;
pub mod atlas;
pub mod bench;
pub mod chain;
pub mod envelope;
pub mod experiments;
pub mod explain;
pub mod files;
pub mod iterative;
pub mod keys;
pub mod kinematics;
pub mod learned;
pub mod lessons;
pub mod lineup;
pub mod nn;
pub mod plant;
pub mod rng;
pub mod simd;
pub mod solver;
pub mod stats;

pub use analytic::{AnalyticSolver, BranchChoice, Branches, solve_branches};
pub use envelope::{Envelope, EnvelopeConfig, InterventionLog, SafetyEnvelope};
pub use iterative::DlsSolver;
pub use kinematics::{ElbowMode, JointLimits, Mismatch, Point2, Pose, RealArm, Region, SampleMode, TwoLinkArm};
pub use learned::{HeadKind, LearnedIk, LearnedModel, LearnedSolver, TrainConfig, Trainer};
pub use lineup::{Lineup, Pipeline, SolverId, Table};
pub use plant::{Body, Plant, PlantConfig};
pub use solver::{IkSolver, Solution, SolveStatus, UnreachableReason};
