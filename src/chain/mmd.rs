//! The posterior mismatch: the unbiased estimate of the squared maximum mean discrepancy
//! (Gretton et al. 2012) between two sample sets, with a sum of inverse multiquadratic kernels
//! `k(x, x') = sum_h h² / (h² + |x - x'|²)`, the kernel of the invertible-network benchmarks
//! (Ardizzone et al. 2019, Kruse et al. 2021) with their widths `h` = 0.05, 0.2 and 0.9 by
//! default.
//!
//! `MMD²_u = 1/(n(n-1)) sum_{i≠j} k(a_i, a_j) + 1/(m(m-1)) sum_{i≠j} k(b_i, b_j)
//!         - 2/(nm) sum_{i,j} k(a_i, b_j)`:
//! its expectation is 0 when both sets come from the same distribution (so it can come out
//! slightly negative), and it grows as they part. Points are rows of `dims` values; the sums run
//! over a structure-of-arrays copy, one division per pair (the kernel's terms over a common
//! denominator), dispatched to the widest vector unit.

use serde::{Deserialize, Serialize};

/// A sum of inverse multiquadratic kernels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// The widths `h`, in the coordinates' own units.
    pub widths: Vec<f64>,
}

impl Default for Kernel {
    /// The widths 0.05, 0.2 and 0.9 of the benchmark.
    fn default() -> Self {
        Self { widths: vec![0.05, 0.2, 0.9] }
    }
}

impl Kernel {
    /// `k(x, x')` for two points at squared distance `d2`.
    pub fn at(&self, d2: f64) -> f64 {
        self.widths.iter().map(|h| h * h / (h * h + d2)).sum()
    }

    /// The squared widths.
    fn squares(&self) -> Vec<f64> {
        self.widths.iter().map(|h| h * h).collect()
    }
}

/// A sample set as a structure of arrays: coordinate `k` of every point in one column.
#[derive(Debug, Clone)]
pub struct Columns {
    cols: Vec<Vec<f64>>,
    n: usize,
}

impl Columns {
    /// The points of `rows` (`dims` values each).
    pub fn new(rows: &[f64], dims: usize) -> Self {
        let n = rows.len() / dims.max(1);
        let cols = (0..dims).map(|k| (0..n).map(|i| rows[i * dims + k]).collect()).collect();
        Self { cols, n }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// `sum_j k(p, b_j)` for `j` in `from..`, with the squared distances built in `d2`.
#[inline(always)]
fn row_sum_body(p: &[f64], b: &[Vec<f64>], from: usize, squares: &[f64], d2: &mut [f64]) -> f64 {
    let n = b.first().map_or(0, Vec::len);
    let d2 = &mut d2[from..n];
    d2.fill(0.0);
    for (k, col) in b.iter().enumerate() {
        let pk = p[k];
        for (d, &v) in d2.iter_mut().zip(&col[from..n]) {
            let t = v - pk;
            *d += t * t;
        }
    }
    // sum_h a_h / (a_h + d) over a common denominator: one division per pair. Eight running
    // sums, so the divisions run a vector at a time (one running sum would chain them); the
    // order of the additions is the same at every SIMD level.
    const LANES: usize = 8;
    let mut sums = [0.0; LANES];
    let mut chunks = d2.chunks_exact(LANES);
    for c in &mut chunks {
        let (mut num, mut den) = ([0.0; LANES], [1.0; LANES]);
        for &a in squares {
            for l in 0..LANES {
                let ad = a + c[l];
                num[l] = num[l] * ad + a * den[l];
                den[l] *= ad;
            }
        }
        for l in 0..LANES {
            sums[l] += num[l] / den[l];
        }
    }
    let mut sum: f64 = sums.iter().sum();
    for &d in chunks.remainder() {
        let (mut num, mut den) = (0.0, 1.0);
        for &a in squares {
            num = num * (a + d) + a * den;
            den *= a + d;
        }
        sum += num / den;
    }
    sum
}

crate::simd::dispatch!(fn row_sum(p: &[f64], b: &[Vec<f64>], from: usize, squares: &[f64], d2: &mut [f64]) -> f64 => row_sum_body);

/// `sum_{i<j} k(a_i, a_j)`.
pub fn self_sum(a: &Columns, kernel: &Kernel) -> f64 {
    let squares = kernel.squares();
    let mut d2 = vec![0.0; a.n];
    let mut p = vec![0.0; a.cols.len()];
    let mut total = 0.0;
    for i in 0..a.n {
        for (k, col) in a.cols.iter().enumerate() {
            p[k] = col[i];
        }
        total += row_sum(&p, &a.cols, i + 1, &squares, &mut d2);
    }
    total
}

/// `sum_{i,j} k(a_i, b_j)`.
pub fn cross_sum(a: &Columns, b: &Columns, kernel: &Kernel) -> f64 {
    let squares = kernel.squares();
    let mut d2 = vec![0.0; b.n];
    let mut p = vec![0.0; a.cols.len()];
    let mut total = 0.0;
    for i in 0..a.n {
        for (k, col) in a.cols.iter().enumerate() {
            p[k] = col[i];
        }
        total += row_sum(&p, &b.cols, 0, &squares, &mut d2);
    }
    total
}

/// The unbiased `MMD²` from the three sums: `aa` and `bb` over unordered pairs within each set
/// of `n` and `m` points, `ab` over all cross pairs. NaN when a set has fewer than two points.
pub fn mmd_from_sums(aa: f64, n: usize, bb: f64, m: usize, ab: f64) -> f64 {
    if n < 2 || m < 2 {
        return f64::NAN;
    }
    let (n, m) = (n as f64, m as f64);
    2.0 * aa / (n * (n - 1.0)) + 2.0 * bb / (m * (m - 1.0)) - 2.0 * ab / (n * m)
}

/// The unbiased `MMD²` between the point sets `a` and `b` (rows of `dims` values).
pub fn mmd_unbiased(a: &[f64], b: &[f64], dims: usize, kernel: &Kernel) -> f64 {
    let (ca, cb) = (Columns::new(a, dims), Columns::new(b, dims));
    mmd_from_sums(self_sum(&ca, kernel), ca.len(), self_sum(&cb, kernel), cb.len(), cross_sum(&ca, &cb, kernel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, StandardNormal};

    fn gaussian(rng: &mut ChaCha8Rng, n: usize, dims: usize, shift: f64) -> Vec<f64> {
        (0..n * dims)
            .map(|i| {
                let z: f64 = StandardNormal.sample(rng);
                0.3 * z + if i % dims == 0 { shift } else { 0.0 }
            })
            .collect()
    }

    #[test]
    fn sums_match_the_plain_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let k = Kernel::default();
        let (a, b) = (gaussian(&mut rng, 37, 3, 0.0), gaussian(&mut rng, 23, 3, 0.1));
        let d2 = |p: &[f64], q: &[f64]| p.iter().zip(q).map(|(x, y)| (x - y) * (x - y)).sum::<f64>();
        let pts = |s: &[f64]| s.chunks(3).map(<[f64]>::to_vec).collect::<Vec<_>>();
        let (pa, pb) = (pts(&a), pts(&b));
        let mut want = 0.0;
        for (i, p) in pa.iter().enumerate() {
            for (j, q) in pa.iter().enumerate() {
                if i != j {
                    want += k.at(d2(p, q)) / (37.0 * 36.0);
                }
            }
            for q in &pb {
                want -= 2.0 * k.at(d2(p, q)) / (37.0 * 23.0);
            }
        }
        for (i, p) in pb.iter().enumerate() {
            for (j, q) in pb.iter().enumerate() {
                if i != j {
                    want += k.at(d2(p, q)) / (23.0 * 22.0);
                }
            }
        }
        // The same value, bit for bit, at every SIMD level.
        let mut first = None;
        crate::simd::for_each_level(|level| {
            let got = mmd_unbiased(&a, &b, 3, &k);
            assert!((got - want).abs() < 1e-12, "{level:?}: {got} vs {want}");
            assert_eq!(got, *first.get_or_insert(got), "{level:?}");
        });
    }

    #[test]
    fn a_set_against_itself_is_near_zero_and_shifted_sets_are_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let k = Kernel::default();
        let a = gaussian(&mut rng, 400, 4, 0.0);
        let same = gaussian(&mut rng, 400, 4, 0.0);
        let shifted = gaussian(&mut rng, 400, 4, 0.2);
        let null = mmd_unbiased(&a, &same, 4, &k);
        let apart = mmd_unbiased(&a, &shifted, 4, &k);
        assert!(null.abs() < 2e-3, "{null}");
        assert!(apart > 10.0 * null.abs().max(1e-4), "{apart} vs {null}");
        // The very same set: the unbiased estimate sits just below zero, by at most the
        // diagonal it leaves out (2 k(0) / n).
        let itself = mmd_unbiased(&a, &a, 4, &k);
        assert!(itself < 0.0 && itself > -2.0 * k.at(0.0) / 400.0, "{itself}");
        assert!(mmd_unbiased(&a[..4], &a, 4, &k).is_nan());
    }
}
