//! Reproducible experiments behind `elbow experiment ...`.
//!
//! - [`averaging`](mod@averaging): exercise 1, the averaging trap (MSE vs branch average vs MDN).
//! - [`degradation`](mod@degradation): every solver on the simulated real arm under noise and backlash.

pub mod averaging;
pub mod degradation;

pub use averaging::{AveragingArgs, AveragingReport, averaging, run_averaging};
pub use degradation::{DegradationArgs, DegradationReport, degradation, run_degradation};
