//! Two contenders judged move by move: where time matters (a controller that adapts over an
//! episode, a baseline that calibrates from the moves so far), an average over the moves hides
//! where the curves cross. [`compare`] takes two per-move error series (each the mean error at
//! move index k, lower is better, optionally with each mean's standard error), says per move
//! which contender is lower or whether they are tied, and names the crossovers in words with
//! 1-based move numbers: "the head is lower on moves 2-3, calibration from move 4".
//!
//! The tie rule is fixed in advance ([`Margin::DEFAULT`]), not tuned to an outcome: two means
//! `a` and `b` are tied when `|a - b|` is at most the largest of
//! - an absolute floor (1 mm: below it there is nothing to judge, the randomization claims'
//!   floor too),
//! - a relative margin (5 % of the larger mean),
//! - two standard errors of the difference, `2 sqrt(sa^2 + sb^2)`, where the standard errors of
//!   both means are given and finite (the two treated as independent, which overstates the
//!   noise of a paired comparison: a tie is the cautious answer).
//!
//! An infinite mean loses to a finite one and ties with another infinite one; a NaN mean (nothing
//! measured) is neither lower nor tied ([`Lower::Unmeasured`]). The unit is generic: the names
//! of the two contenders are passed in, so the two-link arm's feedback head
//! ([`super::feedback`]) and the chains' baselines use the same rule and the same words.

use crate::stats::json_numbers;
use serde::Serialize;

/// When a difference between two means counts as a tie (see the module's rule).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Margin {
    /// The absolute floor, in the series' unit (metres).
    pub floor: f64,
    /// The relative margin, a share of the larger mean.
    pub relative: f64,
    /// How many standard errors of the difference count as noise.
    pub spreads: f64,
}

impl Margin {
    /// The rule fixed in advance: 1 mm, 5 % of the larger mean, two standard errors.
    pub const DEFAULT: Margin = Margin { floor: 1e-3, relative: 0.05, spreads: 2.0 };

    /// The margin within which `a` and `b` (finite means, with their standard errors where
    /// known) are tied.
    fn of(&self, a: f64, b: f64, sa: Option<f64>, sb: Option<f64>) -> f64 {
        let noise = match (sa, sb) {
            (Some(x), Some(y)) if x.hypot(y).is_finite() => self.spreads * x.hypot(y),
            _ => 0.0,
        };
        self.floor.max(self.relative * a.abs().max(b.abs())).max(noise)
    }
}

/// Who is lower on one move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lower {
    /// The first contender, beyond the margin.
    First,
    /// The second contender, beyond the margin.
    Second,
    /// Within the margin of each other.
    Tie,
    /// A mean is NaN: nothing measured on that move.
    Unmeasured,
}

/// One contender's series: its name in the sentences ("the head", "calibration"), its mean
/// error per move index and, optionally, each mean's standard error.
#[derive(Debug, Clone, Copy)]
pub struct Series<'a> {
    /// The name used in the crossover sentence.
    pub name: &'a str,
    /// Mean error at each move index (lower is better).
    pub mean: &'a [f64],
    /// The standard error of each mean (a non-finite one adds nothing to the margin).
    pub spread: Option<&'a [f64]>,
}

/// Two series compared move by move.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerMove {
    /// The first contender's name.
    pub first: String,
    /// The second contender's name.
    pub second: String,
    /// The 1-based number of each move compared, in order.
    pub moves: Vec<usize>,
    /// The first contender's mean at each move compared.
    #[serde(serialize_with = "json_numbers")]
    pub first_means: Vec<f64>,
    /// The second contender's mean at each move compared.
    #[serde(serialize_with = "json_numbers")]
    pub second_means: Vec<f64>,
    /// Who is lower on each move compared.
    pub lower: Vec<Lower>,
    /// The name of the lower contender on each move compared, `tie` or `unmeasured`.
    pub winners: Vec<String>,
    /// Where the curves cross, in words: "the head is lower on moves 2-3, calibration from move 4".
    pub crossover: String,
    /// The rule a tie was judged by.
    pub margin: Margin,
}

impl PerMove {
    /// Whether the first contender is lower on every move compared (false when nothing was).
    pub fn first_lower_everywhere(&self) -> bool {
        !self.lower.is_empty() && self.lower.iter().all(|&l| l == Lower::First)
    }

    /// Whether the second contender is lower on every move compared (false when nothing was).
    pub fn second_lower_everywhere(&self) -> bool {
        !self.lower.is_empty() && self.lower.iter().all(|&l| l == Lower::Second)
    }
}

/// Who is lower on one move, by `margin`.
fn judge(a: f64, b: f64, sa: Option<f64>, sb: Option<f64>, margin: &Margin) -> Lower {
    if a.is_nan() || b.is_nan() {
        return Lower::Unmeasured;
    }
    if a == b {
        return Lower::Tie;
    }
    if !(a.is_finite() && b.is_finite()) || (a - b).abs() > margin.of(a, b, sa, sb) {
        if a < b { Lower::First } else { Lower::Second }
    } else {
        Lower::Tie
    }
}

/// Compares `a` and `b` move by move from move index `from` (0-based; moves are named from 1, so
/// `from = 1` compares moves 2 on), over the moves both series have, by `margin`.
pub fn compare(a: Series, b: Series, from: usize, margin: Margin) -> PerMove {
    let n = a.mean.len().min(b.mean.len());
    let spread = |s: &Series, k: usize| s.spread.and_then(|v| v.get(k).copied());
    let indices: Vec<usize> = (from..n).collect();
    let lower: Vec<Lower> =
        indices.iter().map(|&k| judge(a.mean[k], b.mean[k], spread(&a, k), spread(&b, k), &margin)).collect();
    let moves: Vec<usize> = indices.iter().map(|k| k + 1).collect();
    let winners = lower
        .iter()
        .map(|l| match l {
            Lower::First => a.name.to_string(),
            Lower::Second => b.name.to_string(),
            Lower::Tie => "tie".to_string(),
            Lower::Unmeasured => "unmeasured".to_string(),
        })
        .collect();
    PerMove {
        first: a.name.to_string(),
        second: b.name.to_string(),
        crossover: sentence(a.name, b.name, &moves, &lower),
        first_means: indices.iter().map(|&k| a.mean[k]).collect(),
        second_means: indices.iter().map(|&k| b.mean[k]).collect(),
        moves,
        lower,
        winners,
        margin,
    }
}

/// The crossover in words, from runs of the same outcome: each run "on move k" or "on moves
/// j-k", the last of several runs "from move j" when it holds two moves or more; "lower" is said
/// once, in the first clause that names a contender.
fn sentence(first: &str, second: &str, moves: &[usize], lower: &[Lower]) -> String {
    let Some((&start, _)) = moves.split_first() else {
        return "no moves to compare".to_string();
    };
    let mut runs: Vec<(Lower, usize, usize)> = Vec::new();
    for (&m, &l) in moves.iter().zip(lower) {
        match runs.last_mut() {
            Some((last, _, end)) if *last == l => *end = m,
            _ => runs.push((l, m, m)),
        }
    }
    let single = runs.len() == 1;
    let mut said_lower = false;
    let mut clauses = Vec::new();
    for (i, &(l, from, to)) in runs.iter().enumerate() {
        let span = if single {
            if from == to && from != 1 {
                format!("on move {from}")
            } else if start == 1 {
                "on every move".to_string()
            } else {
                format!("on every move from move {start}")
            }
        } else if from == to {
            format!("on move {from}")
        } else if i + 1 == runs.len() {
            format!("from move {from}")
        } else {
            format!("on moves {from}-{to}")
        };
        let clause = match l {
            Lower::Tie => format!("tied {span}"),
            Lower::Unmeasured => format!("not measured {span}"),
            Lower::First | Lower::Second => {
                let name = if l == Lower::First { first } else { second };
                let verb = if said_lower { "" } else { " is lower" };
                said_lower = true;
                format!("{name}{verb} {span}")
            }
        };
        clauses.push(clause);
    }
    clauses.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series<'a>(name: &'a str, mean: &'a [f64]) -> Series<'a> {
        Series { name, mean, spread: None }
    }

    fn head_vs_calibration(head: &[f64], calibration: &[f64], from: usize) -> PerMove {
        compare(series("the head", head), series("calibration", calibration), from, Margin::DEFAULT)
    }

    #[test]
    fn one_crossing_is_named_with_its_move() {
        // The example: the head lower on moves 1-3, calibration from move 4.
        let c = head_vs_calibration(
            &[0.030, 0.028, 0.024, 0.026, 0.022, 0.024],
            &[0.076, 0.034, 0.077, 0.017, 0.016, 0.017],
            0,
        );
        assert_eq!(c.crossover, "the head is lower on moves 1-3, calibration from move 4");
        use Lower::{First, Second};
        assert_eq!(c.lower, [First, First, First, Second, Second, Second]);
        assert_eq!(c.winners[0], "the head");
        assert_eq!(c.winners[5], "calibration");
        assert_eq!(c.moves, [1, 2, 3, 4, 5, 6]);
        assert!(!c.first_lower_everywhere() && !c.second_lower_everywhere());
        // From move 2 on, the moves keep their episode numbers.
        let c = head_vs_calibration(&[0.075, 0.029, 0.024, 0.026], &[0.076, 0.034, 0.077, 0.017], 1);
        assert_eq!(c.moves, [2, 3, 4]);
        assert_eq!(c.crossover, "the head is lower on moves 2-3, calibration on move 4");
        assert_eq!(c.first_means, [0.029, 0.024, 0.026]);
    }

    #[test]
    fn one_winner_everywhere_and_ties_within_the_margin() {
        let c = head_vs_calibration(&[0.05, 0.04, 0.03], &[0.02, 0.01, 0.005], 0);
        assert_eq!(c.crossover, "calibration is lower on every move");
        assert!(c.second_lower_everywhere() && !c.first_lower_everywhere());
        let c = head_vs_calibration(&[0.07, 0.02, 0.01], &[0.08, 0.03, 0.02], 1);
        assert_eq!(c.crossover, "the head is lower on every move from move 2");
        assert!(c.first_lower_everywhere());
        // 4 % apart, and 0.5 mm apart: both within the margin; then the head clearly lower.
        let c = head_vs_calibration(&[0.100, 0.0020, 0.010, 0.010], &[0.104, 0.0025, 0.030, 0.040], 0);
        assert_eq!(c.crossover, "tied on moves 1-2, the head is lower from move 3");
        assert_eq!(c.winners[..2], ["tie", "tie"]);
        // Just beyond the floor (1.2 mm on 10 mm means, 12 %): not a tie.
        let c = head_vs_calibration(&[0.0100], &[0.0112], 0);
        assert_eq!(c.crossover, "the head is lower on every move");
        let c = head_vs_calibration(&[0.05, 0.05], &[0.05, 0.0502], 0);
        assert_eq!(c.crossover, "tied on every move");
        assert!(!c.first_lower_everywhere());
    }

    #[test]
    fn several_crossings_are_each_named() {
        // Outside the ranges: calibration on move 2, the head on move 3, calibration from move 4.
        let c = head_vs_calibration(
            &[0.205, 0.0907, 0.0987, 0.0848, 0.0809, 0.0793],
            &[0.204, 0.0845, 0.1226, 0.0463, 0.0434, 0.0496],
            1,
        );
        assert_eq!(c.crossover, "calibration is lower on move 2, the head on move 3, calibration from move 4");
        let c = head_vs_calibration(&[0.01, 0.03, 0.01, 0.03, 0.01], &[0.03, 0.01, 0.03, 0.01, 0.03], 0);
        assert_eq!(
            c.crossover,
            "the head is lower on move 1, calibration on move 2, the head on move 3, calibration on move 4, the head on move 5"
        );
        let c = head_vs_calibration(&[0.01, 0.01, 0.05], &[0.03, 0.03, 0.02], 0);
        assert_eq!(c.crossover, "the head is lower on moves 1-2, calibration on move 3");
    }

    #[test]
    fn spreads_widen_the_margin_and_odd_values_are_named() {
        // 10 mm apart on 50-60 mm means: lower without spreads, tied with standard errors of 4
        // mm each (2 x 5.7 mm > 10 mm), lower again with 3 mm (2 x 4.2 mm < 10 mm).
        let (a, b) = ([0.05], [0.06]);
        let with = |s: f64| {
            let (sa, sb) = ([s], [s]);
            compare(
                Series { name: "a", mean: &a, spread: Some(&sa) },
                Series { name: "b", mean: &b, spread: Some(&sb) },
                0,
                Margin::DEFAULT,
            )
            .lower[0]
        };
        assert_eq!(with(0.004), Lower::Tie);
        assert_eq!(with(0.003), Lower::First);
        assert_eq!(with(f64::NAN), Lower::First, "an unknown spread adds nothing");
        // An infinite mean loses; two tie; NaN is unmeasured; an empty comparison says so.
        let c = head_vs_calibration(&[f64::INFINITY, f64::INFINITY, f64::NAN], &[0.5, f64::INFINITY, 0.1], 0);
        assert_eq!(c.lower, [Lower::Second, Lower::Tie, Lower::Unmeasured]);
        assert_eq!(c.crossover, "calibration is lower on move 1, tied on move 2, not measured on move 3");
        assert!(!c.second_lower_everywhere());
        let c = head_vs_calibration(&[0.1], &[0.2, 0.3], 1);
        assert_eq!(c.crossover, "no moves to compare");
        assert!(!c.first_lower_everywhere() && !c.second_lower_everywhere());
        let c = head_vs_calibration(&[0.1, 0.2, 0.3], &[0.2, 0.1], 0);
        assert_eq!(c.moves, [1, 2], "the moves both series have");
        let text = serde_json::to_string(&head_vs_calibration(&[f64::INFINITY], &[0.1], 0)).unwrap();
        assert!(text.contains("\"inf\"") && !text.contains("null"), "{text}");
    }
}
