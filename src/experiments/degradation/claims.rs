//! The lesson's claims, each with the numbers that support or refute it and a plain verdict
//! computed from them. Nothing here is tuned toward an outcome: a case that fails its test is
//! named in the verdict.

use super::channels::{Channel, Split};
use super::report::{Cell, DegradationReport};
use crate::learned::HeadKind;
use crate::lineup::{Pipeline, SolverId};
use serde::Serialize;

/// A claim's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every case passes.
    Holds,
    /// No case passes.
    DoesNotHold,
    /// Only the named cases pass.
    HoldsOnlyFor(Vec<String>),
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Holds => f.write_str("HOLDS"),
            Verdict::DoesNotHold => f.write_str("DOES NOT HOLD"),
            Verdict::HoldsOnlyFor(cases) => write!(f, "HOLDS ONLY FOR {}", cases.join(", ")),
        }
    }
}

/// One claim of the lesson.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// Short key (`analytic-graceful`).
    pub key: &'static str,
    /// What the lesson claims.
    pub statement: &'static str,
    /// What the numbers say.
    pub verdict: Verdict,
    /// The numbers, one line per case, each ending in `ok` or `FAILS`.
    pub evidence: Vec<String>,
}

/// Builds a claim from its cases `(name, passes, numbers)`; cases with `None` are listed but
/// do not vote (nothing to judge).
fn claim(key: &'static str, statement: &'static str, cases: Vec<(String, Option<bool>, String)>) -> Claim {
    let voting: Vec<&(String, Option<bool>, String)> = cases.iter().filter(|c| c.1.is_some()).collect();
    let passing: Vec<String> = voting.iter().filter(|c| c.1 == Some(true)).map(|c| c.0.clone()).collect();
    let verdict = if voting.is_empty() || passing.is_empty() {
        Verdict::DoesNotHold
    } else if passing.len() == voting.len() {
        Verdict::Holds
    } else {
        Verdict::HoldsOnlyFor(passing)
    };
    let mark = |p: Option<bool>| match p {
        Some(true) => "ok",
        Some(false) => "FAILS",
        None => "nothing to judge (no failures, or under 1 mm of change)",
    };
    let evidence = cases.iter().map(|(name, p, numbers)| format!("{name}: {numbers} -> {}", mark(*p))).collect();
    Claim { key, statement, verdict, evidence }
}

fn analytic() -> Pipeline {
    Pipeline::plain(SolverId::Analytic)
}

/// The pose heads a "learned controller" means here (MSE is the averaging trap, a separate lesson).
const LEARNED: [HeadKind; 2] = [HeadKind::Mdn, HeadKind::Mode];

fn join(values: impl IntoIterator<Item = f64>, digits: usize) -> String {
    values.into_iter().map(|v| format!("{v:.digits$}")).collect::<Vec<_>>().join(" -> ")
}

/// One case of the envelope claim: bare vs enveloped MSE, MDN and mode head on the cells `pick`
/// finds. Heads without silent failures do not vote.
fn wraps<'a>(name: String, pick: &dyn Fn(Pipeline) -> Option<&'a Cell>) -> (String, Option<bool>, String) {
    let mut judged = None;
    let mut numbers = Vec::new();
    for h in [HeadKind::Mse, HeadKind::Mdn, HeadKind::Mode] {
        let (Some(bare), Some(env)) =
            (pick(Pipeline::plain(SolverId::Learned(h))), pick(Pipeline::enveloped(SolverId::Learned(h))))
        else {
            continue;
        };
        numbers.push(format!(
            "{} silent {:.1}% -> {:.1}% (reported {:.1}% -> {:.1}%)",
            h.key(),
            100.0 * bare.silent,
            100.0 * env.silent,
            100.0 * bare.reported,
            100.0 * env.reported
        ));
        if bare.silent >= 0.01 {
            let ok = env.silent <= bare.silent - 0.01 && env.silent <= 0.75 * bare.silent;
            judged = Some(judged.unwrap_or(true) && ok);
        }
    }
    (name, judged, numbers.join("; "))
}

/// Every claim, on the plant protocol when it ran (else on the exercise).
pub fn claims(r: &DegradationReport) -> Vec<Claim> {
    let Some(&p) = r.protocols().first() else { return Vec::new() };
    let channels = r.channels(p);
    let ood: Vec<Split> = r.targets.iter().map(|t| t.0).filter(|s| *s != Split::In).collect();
    let mean = |c: &Cell| c.error.mean;
    let at_max = |pipe: Pipeline, ch: Channel| r.series(p, pipe, ch, Split::In).last().copied();
    let base = |pipe: Pipeline, split: Split| r.series(p, pipe, Channel::Encoder, split).first().copied();
    let mut out = Vec::new();

    // 1. Graceful: the analytic error never falls as the level rises and grows about linearly.
    let cases = channels
        .iter()
        .map(|&ch| {
            let s = r.series(p, analytic(), ch, Split::In);
            let e: Vec<f64> = s.iter().map(|c| mean(c)).collect();
            let slopes: Vec<f64> = s.iter().skip(1).map(|c| (mean(c) - e[0]) / c.level).collect();
            let monotone = e.windows(2).all(|w| w[1] >= w[0] * 0.95 - 1e-4);
            let (lo, hi) = slopes.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
            let proportional = lo > 0.0 && hi <= 3.0 * lo;
            let levels = join(s.iter().map(|c| c.level), 3);
            // Below a millimetre of added error there is nothing to judge proportionality on.
            let measurable = e.last().is_some_and(|&last| last - e[0] >= 1e-3);
            let numbers = format!("levels {levels}: mean error {} m, error/level {}", join(e, 4), join(slopes, 3));
            (ch.key().to_string(), measurable.then_some(monotone && proportional), numbers)
        })
        .collect();
    out.push(claim(
        "analytic-graceful",
        "An analytic solver degrades gracefully and predictably: its error grows roughly in proportion to the perturbation.",
        cases,
    ));

    // 2. Honest: the analytic pipeline reports (almost) every miss it makes.
    let honest = |name: String, c: &Cell| {
        let judged = (c.missed >= 0.01).then_some(c.silent <= 0.1 * c.missed);
        let numbers = format!(
            "missed {:.1}%, reported {:.1}%, silent {:.1}%, false alarms {:.1}%",
            100.0 * c.missed,
            100.0 * c.reported,
            100.0 * c.silent,
            100.0 * c.false_alarm
        );
        (name, judged, numbers)
    };
    let mut cases: Vec<_> = channels
        .iter()
        .filter_map(|&ch| at_max(analytic(), ch).map(|c| honest(format!("{} {}", ch.key(), c.level), c)))
        .collect();
    cases.extend(ood.iter().filter_map(|&s| base(analytic(), s).map(|c| honest(format!("ood-{}", s.key()), c))));
    out.push(claim(
        "analytic-reports",
        "...and still reports non-convergence when it fails (at least 90% of its misses reported; the largest level of each channel).",
        cases,
    ));

    // 3. Faster: a learned head's error grows more than the analytic one's.
    let rise = |pipe: Pipeline, ch: Option<Channel>, split: Split| -> Option<f64> {
        match ch {
            Some(ch) => Some(mean(at_max(pipe, ch)?) - mean(base(pipe, Split::In)?)),
            None => Some(mean(base(pipe, split)?) - mean(base(pipe, Split::In)?)),
        }
    };
    let faster = |name: String, ch: Option<Channel>, split: Split| {
        let a = rise(analytic(), ch, split)?;
        let mut ok = true;
        let mut numbers = format!("error rise analytic {a:.4} m");
        for h in LEARNED {
            let l = rise(Pipeline::plain(SolverId::Learned(h)), ch, split)?;
            ok &= l > 1.25 * a + 1e-4;
            numbers += &format!(", {} {l:.4} m", h.key());
        }
        Some((name, Some(ok), numbers))
    };
    let mut cases: Vec<_> =
        channels.iter().filter_map(|&ch| faster(ch.key().to_string(), Some(ch), Split::In)).collect();
    cases.extend(ood.iter().filter_map(|&s| faster(format!("ood-{}", s.key()), None, s)));
    out.push(claim(
        "learned-degrades-faster",
        "A learned controller (MDN, mode head) degrades faster than the analytic solver (error rise from the perfect arm to the largest level, or to OOD targets, more than 1.25x the analytic rise).",
        cases,
    ));

    // 4. Confident: bare heads never report anything, whatever happens.
    let cases = channels
        .iter()
        .map(|&ch| (ch.key().to_string(), Some(ch)))
        .chain(ood.iter().map(|s| (format!("ood-{}", s.key()), None)))
        .map(|(name, ch)| {
            let cells: Vec<&Cell> = [HeadKind::Mse, HeadKind::Mdn, HeadKind::Mode]
                .iter()
                .flat_map(|&h| {
                    let pipe = Pipeline::plain(SolverId::Learned(h));
                    match ch {
                        Some(ch) => r.series(p, pipe, ch, Split::In),
                        None => ood
                            .iter()
                            .filter_map(|&s| base(pipe, s))
                            .filter(|c| name.ends_with(c.split.key()))
                            .collect(),
                    }
                })
                .collect();
            let reported = cells.iter().map(|c| c.reported).fold(0.0, f64::max);
            let silent = cells.iter().map(|c| c.silent).fold(0.0, f64::max);
            (
                name,
                Some(reported == 0.0 && silent > 0.0),
                format!("largest reported rate {:.1}%, largest silent rate {:.1}%", 100.0 * reported, 100.0 * silent),
            )
        })
        .collect();
    out.push(claim(
        "learned-confident",
        "...and keeps returning confident outputs the whole way (MSE, MDN, mode: never a reported failure, while missing).",
        cases,
    ));

    // 5. The envelope turns silent failures into reported (or fixed) ones.
    let mut cases = vec![wraps("perfect arm".into(), &|pipe| base(pipe, Split::In))];
    cases.extend(channels.iter().map(|&ch| wraps(ch.key().to_string(), &|pipe| at_max(pipe, ch))));
    cases.extend(ood.iter().map(|&s| wraps(format!("ood-{}", s.key()), &|pipe| base(pipe, s))));
    out.push(claim(
        "envelope-reports",
        "Wrapping a learned head in analytically verified limits turns its silent failures into reported (or corrected) ones (silent rate down by a quarter and at least 1 point).",
        cases,
    ));

    // 6. The residual hybrid inside the envelope is never worse than the classical answer.
    let residual = Pipeline::enveloped(SolverId::Learned(HeadKind::Residual));
    let no_worse = |name: String, cells: Vec<(&Cell, &Cell)>| {
        let ok = cells.iter().all(|(res, an)| {
            res.error.mean <= an.error.mean * 1.05 + 1e-3 && res.error.p95 <= an.error.p95 * 1.05 + 1e-3
        });
        let numbers = cells
            .iter()
            .map(|(res, an)| {
                format!(
                    "@{}: mean {:.4} vs {:.4}, p95 {:.4} vs {:.4}",
                    res.level, res.error.mean, an.error.mean, res.error.p95, an.error.p95
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        (name, (!cells.is_empty()).then_some(ok), format!("envelope(residual) vs analytic {numbers}"))
    };
    let pair = |split: Split, ch: Channel| -> Vec<(&Cell, &Cell)> {
        r.series(p, residual, ch, split)
            .into_iter()
            .zip(r.series(p, analytic(), ch, split))
            .filter(|(c, _)| c.channel.is_some())
            .collect()
    };
    let mut cases = vec![no_worse(
        "perfect arm".into(),
        base(residual, Split::In).zip(base(analytic(), Split::In)).into_iter().collect(),
    )];
    cases.extend(channels.iter().map(|&ch| no_worse(ch.key().to_string(), pair(Split::In, ch))));
    cases.extend(ood.iter().map(|&s| {
        no_worse(format!("ood-{}", s.key()), base(residual, s).zip(base(analytic(), s)).into_iter().collect())
    }));
    out.push(claim(
        "residual-worst-case-classical",
        "A residual hybrid's worst case is the classical answer, not nothing (enveloped residual mean and p95 error within 5% + 1 mm of the analytic solver's at every level).",
        cases,
    ));

    // 7. Mismatch under perfect encoders stays silent for everyone.
    if channels.contains(&Channel::Mismatch) {
        let cases = r
            .pipelines()
            .into_iter()
            .filter_map(|pipe| {
                let (b, m) = (base(pipe, Split::In)?, at_max(pipe, Channel::Mismatch)?);
                let silent = m.reported <= b.reported + 0.01;
                let numbers = format!(
                    "mismatch x{}: missed {:.1}% -> {:.1}%, reported {:.1}% -> {:.1}%",
                    m.level,
                    100.0 * b.missed,
                    100.0 * m.missed,
                    100.0 * b.reported,
                    100.0 * m.reported
                );
                Some((pipe.key(), (m.missed > b.missed + 0.01).then_some(silent), numbers))
            })
            .collect();
        out.push(claim(
            "mismatch-silent-for-everyone",
            "What no sensor can see (model mismatch under perfect encoders) stays silent for everyone: the misses it adds are not reported by any pipeline.",
            cases,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, passes: Option<bool>) -> (String, Option<bool>, String) {
        (name.to_string(), passes, "numbers".to_string())
    }

    #[test]
    fn verdicts_follow_the_cases_that_vote() {
        let v = |cases| claim("k", "s", cases).verdict;
        assert_eq!(v(vec![case("a", Some(true)), case("b", None)]), Verdict::Holds);
        assert_eq!(v(vec![case("a", Some(false)), case("b", Some(false))]), Verdict::DoesNotHold);
        assert_eq!(v(vec![case("a", None)]), Verdict::DoesNotHold, "nothing to judge is no evidence");
        assert_eq!(
            v(vec![case("a", Some(true)), case("b", Some(false)), case("c", Some(true))]),
            Verdict::HoldsOnlyFor(vec!["a".into(), "c".into()])
        );
        let c = claim("k", "s", vec![case("a", Some(false)), case("b", None)]);
        assert!(c.evidence[0].ends_with("FAILS") && c.evidence[1].contains("nothing to judge"));
        assert_eq!(Verdict::HoldsOnlyFor(vec!["x".into(), "y".into()]).to_string(), "HOLDS ONLY FOR x, y");
    }
}
