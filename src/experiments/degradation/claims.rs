//! The lesson's claims, each with the numbers that support or refute it and a plain verdict
//! computed from them (the [`Claim`] and its verdict rule live in [`super::verdict`]). Nothing here is tuned toward an outcome: a case that fails its test is
//! named in the verdict.

use super::channels::{Channel, Split};
use super::report::{Cell, CheckRates, DegradationReport};
use super::verdict::{Claim, claim};
use crate::learned::{HeadKind, Output};
use crate::lineup::{Pipeline, SolverId};

/// Who plays which part in the claims: data the arm answers, not `if`s in each claim. On the
/// two-link arm the line-up comes from the head registry: a "learned controller" is a head that
/// picks a branch ([`HeadSpec::picks_a_branch`]: not the MSE head's averaging trap, a lesson of
/// its own); a bare proposer is any head that checks nothing (not a correction of the analytic
/// answer, which passes on its verdicts); the residual claim is about the correction heads
/// inside the envelope. On a chain DLS is the classical solver, the MDN and the flow are the
/// controllers (each picks a mode), every net is a bare proposer, and the hybrid (net seeds
/// finished by DLS) is the one whose worst case should be the classical answer.
///
/// [`HeadSpec::picks_a_branch`]: crate::learned::HeadSpec::picks_a_branch
struct Cast {
    /// The classical solver the learned ones are measured against.
    reference: Pipeline,
    /// Its name in a statement.
    reference_name: &'static str,
    /// The classical pipelines whose honesty is judged.
    classical: Vec<Pipeline>,
    /// Learned controllers that pick a branch (or a mode) by themselves.
    controllers: Vec<SolverId>,
    /// Learned pipelines that propose and check nothing.
    proposers: Vec<SolverId>,
    /// Hybrids whose worst case should be the classical answer.
    hybrids: Vec<Pipeline>,
    /// True on a chain.
    chain: bool,
}

impl Cast {
    fn of(r: &DegradationReport) -> Self {
        let iterative = Pipeline::plain(SolverId::Iterative);
        if r.config.chain.is_some() {
            return Cast {
                reference: iterative,
                reference_name: "DLS",
                classical: vec![iterative],
                controllers: vec![SolverId::Learned(HeadKind::Mdn), SolverId::Flow],
                proposers: super::chain::NETS.to_vec(),
                hybrids: vec![Pipeline::plain(SolverId::Hybrid)],
                chain: true,
            };
        }
        let heads = |pick: &dyn Fn(HeadKind) -> bool| -> Vec<HeadKind> {
            HeadKind::ALL.into_iter().filter(|&h| pick(h)).collect()
        };
        let learned = |hs: Vec<HeadKind>| hs.into_iter().map(SolverId::Learned).collect::<Vec<_>>();
        let analytic = Pipeline::plain(SolverId::Analytic);
        Cast {
            reference: analytic,
            reference_name: "analytic",
            classical: vec![analytic, iterative],
            controllers: learned(heads(&|h| h.spec().picks_a_branch)),
            proposers: learned(heads(&|h| h.spec().output != Output::Correction)),
            hybrids: heads(&|h| h.spec().output == Output::Correction)
                .into_iter()
                .map(|h| Pipeline::enveloped(SolverId::Learned(h)))
                .collect(),
            chain: false,
        }
    }
}

/// The solvers' short labels joined for a statement (`MSE, MDN, mode`; a chain's `flow`).
fn named(ids: &[SolverId]) -> String {
    let short = |id: &SolverId| match id {
        SolverId::Learned(h) => h.spec().short,
        SolverId::Flow => "flow",
        other => other.key(),
    };
    ids.iter().map(short).collect::<Vec<_>>().join(", ")
}

fn join(values: impl IntoIterator<Item = f64>, digits: usize) -> String {
    values.into_iter().map(|v| format!("{v:.digits$}")).collect::<Vec<_>>().join(" -> ")
}

/// One case of the envelope claim: bare vs enveloped [`proposers`] on the cells `pick` finds.
/// Heads without silent failures do not vote.
fn wraps<'a>(
    name: String,
    proposers: &[SolverId],
    pick: &dyn Fn(Pipeline) -> Option<&'a Cell>,
) -> (String, Option<bool>, String) {
    let mut judged = None;
    let mut numbers = Vec::new();
    for &h in proposers {
        let (Some(bare), Some(env)) = (pick(Pipeline::plain(h)), pick(Pipeline::enveloped(h))) else {
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

/// One case of the honesty claims: every classical solver (analytic, DLS; DLS on a chain) judged on the cell
/// `pick` finds, with the encoder check or the camera check; the case passes only when each
/// judged solver passes. The camera check must also not cry wolf (false alarms under 10%).
fn honest<'a>(
    name: String,
    classical: &[Pipeline],
    pick: &dyn Fn(Pipeline) -> Option<&'a Cell>,
    camera: bool,
) -> Option<(String, Option<bool>, String)> {
    let mut judged: Option<bool> = None;
    let mut numbers = Vec::new();
    for &pipe in classical {
        let Some(c) = pick(pipe) else { continue };
        let CheckRates { reported, silent, false_alarm } = c.rates(camera);
        let misses = c.missed >= 0.01;
        let vote = if camera {
            (misses || false_alarm >= 0.01).then_some(silent <= 0.1 * c.missed && false_alarm <= 0.1)
        } else {
            misses.then_some(silent <= 0.1 * c.missed)
        };
        if let Some(v) = vote {
            judged = Some(judged.unwrap_or(true) && v);
        }
        numbers.push(format!(
            "{} @{}: missed {:.1}%, reported {:.1}%, silent {:.1}%, false alarms {:.1}%",
            pipe.key(),
            c.level,
            100.0 * c.missed,
            100.0 * reported,
            100.0 * silent,
            100.0 * false_alarm
        ));
    }
    (!numbers.is_empty()).then(|| (name, judged, numbers.join("; ")))
}

/// Every claim, on the plant protocol when it ran (else on the exercise).
pub fn claims(r: &DegradationReport) -> Vec<Claim> {
    let Some(&p) = r.protocols().first() else { return Vec::new() };
    let channels = r.channels(p);
    let ood: Vec<Split> = r.targets.iter().map(|t| t.0).filter(|s| *s != Split::In).collect();
    let mean = |c: &Cell| c.error.mean;
    let at_max = |pipe: Pipeline, ch: Channel| r.series(p, pipe, ch, Split::In).last().copied();
    let base = |pipe: Pipeline, split: Split| r.series(p, pipe, Channel::Encoder, split).first().copied();
    let cast = Cast::of(r);
    let reference = cast.reference;
    let mut out = Vec::new();

    // 1. Graceful: the analytic error never falls as the level rises and grows about linearly.
    let cases = channels
        .iter()
        .map(|&ch| {
            let s = r.series(p, reference, ch, Split::In);
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
    out.push(if cast.chain {
        claim(
            "dls-graceful",
            "DLS, the classical solver of a chain, degrades gracefully and predictably: its error grows roughly in proportion to the perturbation.",
            cases,
        )
    } else {
        claim(
            "analytic-graceful",
            "An analytic solver degrades gracefully and predictably: its error grows roughly in proportion to the perturbation.",
            cases,
        )
    });

    // 2. Honest: the classical pipelines report (almost) every miss they make, with the encoder
    // check; 3. the same with the camera check, which must not cry wolf either.
    for camera in [false, true] {
        let classical = &cast.classical;
        let mut cases: Vec<_> = channels
            .iter()
            .filter_map(|&ch| honest(ch.key().to_string(), classical, &|pipe| at_max(pipe, ch), camera))
            .collect();
        cases.extend(
            ood.iter().filter_map(|&s| honest(format!("ood-{}", s.key()), classical, &|pipe| base(pipe, s), camera)),
        );
        let who = if cast.chain { "DLS" } else { "analytic and DLS" };
        let solvers = if cast.chain { "DLS reports" } else { "the analytic solver and DLS report" };
        out.push(if camera {
            claim(
                "classical-reports-on-camera",
                format!("...and, checking the move with a camera on the tip instead of the encoders, reports at least 90% of its misses with false alarms on under 10% of the moves ({who}; the largest level of each channel). The camera sees what the encoders cannot, and brings its own noise, offset and frame rate."),
                cases,
            )
        } else {
            claim(
                "classical-reports",
                format!("...and still reports non-convergence when it fails: checking the move with its encoders, {solvers} at least 90% of their misses (the largest level of each channel)."),
                cases,
            )
        });
    }

    // 3. Faster: a learned head's error grows more than the analytic one's.
    let rise = |pipe: Pipeline, ch: Option<Channel>, split: Split| -> Option<f64> {
        match ch {
            Some(ch) => Some(mean(at_max(pipe, ch)?) - mean(base(pipe, Split::In)?)),
            None => Some(mean(base(pipe, split)?) - mean(base(pipe, Split::In)?)),
        }
    };
    let faster = |name: String, ch: Option<Channel>, split: Split| {
        let a = rise(reference, ch, split)?;
        let mut ok = true;
        let mut largest = a.abs();
        let mut numbers = format!("error rise {} {a:.4} m", cast.reference_name);
        for &h in &cast.controllers {
            let l = rise(Pipeline::plain(h), ch, split)?;
            ok &= l > 1.25 * a + 1e-4;
            largest = largest.max(l.abs());
            numbers += &format!(", {} {l:.4} m", h.key());
        }
        // Where nobody's error moves by a millimetre, nothing degrades, faster or not.
        Some((name, (largest >= 1e-3).then_some(ok), numbers))
    };
    let mut cases: Vec<_> =
        channels.iter().filter_map(|&ch| faster(ch.key().to_string(), Some(ch), Split::In)).collect();
    cases.extend(ood.iter().filter_map(|&s| faster(format!("ood-{}", s.key()), None, s)));
    out.push(claim(
        "learned-degrades-faster",
        if cast.chain {
            format!("A learned controller ({}) degrades faster than DLS (error rise from the perfect arm to the largest level, or to OOD targets, more than 1.25x DLS's rise).", named(&cast.controllers))
        } else {
            format!("A learned controller ({}) degrades faster than the analytic solver (error rise from the perfect arm to the largest level, or to OOD targets, more than 1.25x the analytic rise).", named(&cast.controllers))
        },
        cases,
    ));

    // 4. Confident: bare heads never report anything, whatever happens.
    let cases = channels
        .iter()
        .map(|&ch| (ch.key().to_string(), Some(ch)))
        .chain(ood.iter().map(|s| (format!("ood-{}", s.key()), None)))
        .map(|(name, ch)| {
            let cells: Vec<&Cell> = cast
                .proposers
                .iter()
                .flat_map(|&h| {
                    let pipe = Pipeline::plain(h);
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
            // Where no bare head misses, there is nothing to stay confident about.
            (
                name,
                (silent > 0.0 || reported > 0.0).then_some(reported == 0.0),
                format!("largest reported rate {:.1}%, largest silent rate {:.1}%", 100.0 * reported, 100.0 * silent),
            )
        })
        .collect();
    out.push(claim(
        "learned-confident",
        format!(
            "...and keeps returning confident outputs the whole way ({}: never a reported failure, while missing).",
            named(&cast.proposers)
        ),
        cases,
    ));

    // 5. The envelope turns silent failures into reported (or fixed) ones.
    let proposers = &cast.proposers;
    let mut cases = vec![wraps("perfect arm".into(), proposers, &|pipe| base(pipe, Split::In))];
    cases.extend(channels.iter().map(|&ch| wraps(ch.key().to_string(), proposers, &|pipe| at_max(pipe, ch))));
    cases.extend(ood.iter().map(|&s| wraps(format!("ood-{}", s.key()), proposers, &|pipe| base(pipe, s))));
    out.push(claim(
        "envelope-reports",
        "Wrapping a learned head in analytically verified limits turns its silent failures into reported (or corrected) ones (silent rate down by a quarter and at least 1 point).",
        cases,
    ));

    // 6. The residual hybrid inside the envelope is never worse than the classical answer.
    let no_worse = |name: String, residual: Pipeline, cells: Vec<(&Cell, &Cell)>| {
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
        (name, (!cells.is_empty()).then_some(ok), format!("{residual} vs {} {numbers}", cast.reference_name))
    };
    let pair = |residual: Pipeline, split: Split, ch: Channel| -> Vec<(&Cell, &Cell)> {
        r.series(p, residual, ch, split)
            .into_iter()
            .zip(r.series(p, reference, ch, split))
            .filter(|(c, _)| c.channel.is_some())
            .collect()
    };
    let mut cases = Vec::new();
    for &residual in &cast.hybrids {
        let both = |split: Split| base(residual, split).zip(base(reference, split)).into_iter().collect();
        cases.push(no_worse("perfect arm".into(), residual, both(Split::In)));
        cases
            .extend(channels.iter().map(|&ch| no_worse(ch.key().to_string(), residual, pair(residual, Split::In, ch))));
        cases.extend(ood.iter().map(|&s| no_worse(format!("ood-{}", s.key()), residual, both(s))));
    }
    out.push(if cast.chain {
        claim(
            "hybrid-worst-case-classical",
            "A hybrid's worst case is the classical answer, not nothing (the hybrid's mean and p95 error, net seeds finished by DLS, within 5% + 1 mm of DLS's at every level).",
            cases,
        )
    } else {
        let correctors: Vec<SolverId> = cast.hybrids.iter().map(|p| p.solver).collect();
        claim(
            "residual-worst-case-classical",
            format!("A residual hybrid's worst case is the classical answer, not nothing (enveloped {} mean and p95 error within 5% + 1 mm of the analytic solver's at every level).", named(&correctors)),
            cases,
        )
    });

    // 8. What the encoders cannot see (mismatch, flex) stays silent on them for everyone.
    let cases = [Channel::Mismatch, Channel::Flex]
        .into_iter()
        .filter(|ch| channels.contains(ch))
        .map(|ch| {
            let mut judged: Option<bool> = None;
            let mut numbers = Vec::new();
            for pipe in r.pipelines() {
                let (Some(b), Some(m)) = (base(pipe, Split::In), at_max(pipe, ch)) else { continue };
                if m.missed > b.missed + 0.01 {
                    judged = Some(judged.unwrap_or(true) && m.reported <= b.reported + 0.01);
                }
                numbers.push(format!(
                    "{} missed {:.1}% -> {:.1}%, reported {:.1}% -> {:.1}%",
                    pipe.key(),
                    100.0 * b.missed,
                    100.0 * m.missed,
                    100.0 * b.reported,
                    100.0 * m.reported
                ));
            }
            let level = at_max(reference, ch).map_or(0.0, |c| c.level);
            (ch.key().to_string(), judged, format!("@{level}: {}", numbers.join("; ")))
        })
        .collect::<Vec<_>>();
    if !cases.is_empty() {
        out.push(claim(
            "unseen-by-encoders-silent",
            "What the encoders cannot see (model mismatch, link flex) stays silent on them for everyone: the misses it adds are reported by no pipeline that checks with its encoders (the camera claim shows who sees them).",
            cases,
        ));
    }
    out
}
