//! How dense a solver's training targets are around a target: the one measure both halves of
//! `explain` report (a head's training data on the two-link arm, a net's prior draws on a chain).

use crate::kinematics::Point2;
use crate::stats::json_numbers;
use serde::Serialize;

/// Training targets whose neighbourhoods give the typical count the target's is compared with.
const DENSITY_PROBES: usize = 256;

/// How dense the head's training targets are around the target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Density {
    /// Radius of the neighbourhood, metres: a fixed share of the reach
    /// ([`crate::explain::DENSITY_RADIUS`] on the two-link arm,
    /// [`crate::explain::chain::DENSITY_RADIUS`] on a chain).
    #[serde(serialize_with = "json_numbers")]
    pub radius: f64,
    /// Training targets within it.
    pub count: usize,
    /// The mean count within the same radius of a training target (the density the head was
    /// trained at).
    #[serde(serialize_with = "json_numbers")]
    pub typical: f64,
    /// `count / typical`: 1 is as dense as training went, 0 is where no training target lies.
    #[serde(serialize_with = "json_numbers")]
    pub relative: f64,
}

/// Training targets within `radius` of `target`, against the count around a typical training
/// target (an evenly spaced subset of them).
pub fn density(training: &[Point2], target: Point2, radius: f64) -> Density {
    let within = |p: Point2| training.iter().filter(|t| (**t - p).norm() <= radius).count();
    let count = within(target);
    let step = (training.len() / DENSITY_PROBES).max(1);
    let probes: Vec<usize> = training.iter().step_by(step).map(|&t| within(t)).collect();
    let typical = probes.iter().sum::<usize>() as f64 / probes.len().max(1) as f64;
    let relative = if typical > 0.0 { count as f64 / typical } else { 0.0 };
    Density { radius, count, typical, relative }
}
