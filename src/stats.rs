//! Summary statistics of error samples: mean, median, 95th percentile, maximum.

use serde::{Deserialize, Serialize};

/// Summary of a set of non-negative errors.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// 50th percentile.
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises `values`; non-finite values count as infinitely bad (they sort last and make the
    /// mean infinite) rather than being dropped. An empty slice gives all zeros.
    pub fn of(values: &[f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        let mut v: Vec<f64> = values.iter().map(|&x| if x.is_nan() { f64::INFINITY } else { x }).collect();
        v.sort_by(f64::total_cmp);
        let pick = |q: f64| v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)];
        Self {
            n: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            median: pick(0.5),
            p95: pick(0.95),
            max: v[v.len() - 1],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        let s = Summary::of(&v);
        assert_eq!((s.n, s.mean, s.median, s.p95, s.max), (101, 50.0, 50.0, 95.0, 100.0));
        assert_eq!(Summary::of(&[]), Summary::default());
        assert_eq!(Summary::of(&[1.0, f64::NAN]).max, f64::INFINITY);
    }
}
