//! Redundant planar chains: the case where a learned inverse map can earn its place.
//!
//! The two-link arm of the rest of the lab has a closed form that answers in nanoseconds; a
//! chain with more joints than the plane needs has, for almost every target, a whole manifold of
//! solutions, and the question becomes which of them, and how they are spread. This module holds:
//!
//! - [`arm`](mod@arm): the chain itself ([`Chain`]): an optional prismatic base rail along `y`,
//!   then any number of revolute joints with link lengths and limits; forward kinematics, joint
//!   positions and the positional Jacobian; and the [`Prior`] over its coordinates;
//! - [`dls`]: damped least squares for any chain, with random restarts ([`ChainDls`]);
//! - [`sampler`]: exact samples of the posterior `p(x | y*)` over the joint coordinates for a
//!   target ([`ExactSampler`]), the ground truth every method is scored against;
//! - [`mmd`]: the unbiased maximum mean discrepancy between two sample sets (the posterior
//!   mismatch of Kruse et al. 2021), with a sum of inverse multiquadratic kernels;
//! - [`solve`]: every method's answers for one target ([`solve::solutions`]), the one
//!   implementation the experiment, the command line and the app share;
//! - [`manifold`]: self-motion, a walk along the solution manifold of a target;
//! - [`model`]: the trained nets of one arm ([`ChainModel`]), saved and loaded as a model file
//!   ([`crate::learned::file`], one format for every arm);
//! - [`nets`]: squared-error and mixture-density networks from targets to joint coordinates
//!   (diagonal or full-covariance components, [`crate::nn::FullMdn`]), trained on the arm's prior
//!   by the two-link heads' own fitter ([`crate::learned::train::Fitter`]), and sampling from them.
//!
//! Coordinates `x` are ordered base first: the rail height (metres) when the chain has a rail,
//! then the revolute joint angles (radians), each measured from the previous link, so the
//! absolute angle of link `k` is the sum of the joint angles up to `k` (the cumulative
//! convention of Ardizzone et al. 2019).

pub mod arm;
pub mod dls;
pub mod manifold;
pub mod mmd;
pub mod model;
pub mod nets;
pub mod sampler;
pub mod solve;

pub use arm::{Chain, ChainError, Link, MAX_COORDS, Marginal, Prior, Travel};
pub use dls::{ChainDls, DlsOutcome};
pub use mmd::{Kernel, mmd_unbiased};
pub use model::ChainModel;
pub use sampler::{ExactSampler, PosteriorSamples};
pub use solve::{Effort, NetSet, Nets, Seeds, Setting, SettingsError, SolveError, SolveSettings};
