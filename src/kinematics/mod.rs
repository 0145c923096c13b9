//! Planar two-link arm kinematics, in four small parts:
//! - [`pose`]: joint space (a [`Pose`], angle wrapping, the two elbow branches);
//! - [`arm`]: the arm ([`TwoLinkArm`]: validated lengths and limits, FK, the Jacobian) and the
//!   mismatched real arm behind it ([`RealArm`], [`Mismatch`]);
//! - [`workspace`]: the reachable annulus, target regions and samplers, and the projection of a
//!   point onto the annulus;
//! - [`serial`]: what damped least squares needs of any serial arm ([`SerialArm`]), two-link or
//!   chain.
//!
//! The base sits at the origin. The shoulder angle `q1` is measured from the +x axis, the elbow
//! angle `q2` from the upper arm, both counter-clockwise, in radians. A positive elbow angle puts
//! the elbow clockwise of the base-to-tip line ("elbow down" for a target in front of the arm), a
//! negative one counter-clockwise ("elbow up").

pub mod arm;
pub mod pose;
pub mod serial;
pub mod workspace;

pub use arm::{ArmError, JointLimits, Mismatch, RealArm, TwoLinkArm};
pub use pose::{ElbowMode, Point2, Pose, wrap_angle};
pub use serial::{MAX_COORDS, SerialArm};
pub(crate) use workspace::REACH_EPS;
pub use workspace::{Projection, Region, RegionError, SampleMode, UnreachableReason, project_to_workspace};
