//! Elbow: a lab for the failure modes of learned inverse kinematics on a planar two-link arm and
//! on redundant planar chains.
//!
//! This library is the headless core; it never touches bevy. The command line (`src/cli/`, the
//! `cli` feature) and the desktop app (`src/app/`, the `app` feature) live in the binary: thin
//! layers that parse, call and print or draw. Every measurement, with the command that made it,
//! is in the repository's chapters, `docs/0-the-app.md` to `docs/5-design.md`.
//!
//! # The modules, in the order data flows through them
//!
//! 1. [`kinematics`]: poses, the arm (FK, the Jacobian, the mismatched real arm) and the
//!    reachable workspace, where the targets are drawn.
//! 2. [`solver`]: the [`IkSolver`] trait every solver implements and the [`Solution`] it
//!    returns, with its status. The classical answers: [`analytic`] (the closed form, both elbow
//!    branches, honest about unreachable targets) and [`iterative`] (the one damped least
//!    squares, on any [`SerialArm`](kinematics::serial::SerialArm)).
//! 3. [`nn`]: small networks written with nalgebra (dense layers, losses, Adam), on which
//!    [`learned`] builds the learned heads (MSE, MDN, mode-conditioned, residual hybrid): their
//!    data with both branches, training, evaluation and model files.
//! 4. [`lineup`]: one typed identity per solver ([`SolverId`]), pipelines with or without the
//!    envelope, tables keyed by them, and the one place that runs any solver.
//! 5. [`plant`]: the simulated real arm the answers are sent to as servo goals: rigid-body
//!    dynamics under position servos, checked against MuJoCo, with latency, backlash, friction,
//!    flex, mismatch, encoder noise and a camera.
//! 6. [`envelope`]: the safety envelope between a learned proposal and the plant: the learned
//!    part proposes, the classical part disposes, and every intervention is counted by reason.
//! 7. [`experiments`]: plain configurations in, reports with computed claims out (the averaging
//!    trap, Bishop 1994, the gap to reality, tracking, domain randomization, the feedback head,
//!    redundant chains); [`bench`](mod@bench) gives the headless speed figures.
//! 8. [`chain`]: the same questions on redundant chains (named arms, DLS with restarts, the exact
//!    posterior sampler, MMD, self-motion along the solution manifold, the squared-error and
//!    mixture nets; the normalizing flow is [`nn::flow`]).
//! 9. What the app and the command line show on top: [`atlas`] (one solver's answer over the
//!    whole workspace, as maps of miss, branch, envelope and silent failures), [`explain`] (one
//!    head's answer for one target taken apart: "why did it do that?") and [`lessons`] (the
//!    scenes the app opens in one click, each with a caption).
//!
//! Underneath all of them: [`keys`] (the one way named enums parse and print by key), [`rng`]
//! (the one table of seeded random streams), [`files`] (atomic writes, bounded reads,
//! destinations checked up front), [`stats`] (error summaries and JSON numbers that keep NaN and
//! infinity apart) and [`simd`] (runtime dispatch of hot loops to the CPU's widest vector unit).

#![warn(missing_docs)]

pub mod analytic;
pub mod arm;
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
