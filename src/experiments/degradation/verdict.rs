//! A claim of the lesson and its verdict, and the one rule from a claim's cases to its verdict:
//! below the report (which holds the claims) and the claims' computation (which reads the report).

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

/// One case of a claim and how it voted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// The case (a channel, an OOD set, `perfect arm`).
    pub name: String,
    /// `Some(true)`: passes; `Some(false)`: fails; `None`: nothing to judge (does not vote;
    /// left out of JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<bool>,
}

/// One claim of the lesson.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// Short key (`analytic-graceful`).
    pub key: &'static str,
    /// What the lesson claims (naming the heads it is about, from the head registry).
    pub statement: String,
    /// What the numbers say.
    pub verdict: Verdict,
    /// The numbers, one line per case, each ending in `ok` or `FAILS`.
    pub evidence: Vec<String>,
    /// Every case's vote, in the order of the evidence.
    pub cases: Vec<Case>,
}

impl Claim {
    /// The vote of the case named `name` (`None` when the claim has no such case).
    pub fn case(&self, name: &str) -> Option<&Case> {
        self.cases.iter().find(|c| c.name == name)
    }
}

/// Builds a claim from its cases `(name, passes, numbers)`; cases with `None` are listed but
/// do not vote (nothing to judge).
pub(crate) fn claim(
    key: &'static str,
    statement: impl Into<String>,
    cases: Vec<(String, Option<bool>, String)>,
) -> Claim {
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
    let cases = cases.into_iter().map(|(name, passes, _)| Case { name, passes }).collect();
    Claim { key, statement: statement.into(), verdict, evidence, cases }
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
        assert_eq!(c.case("a").map(|c| c.passes), Some(Some(false)));
        assert_eq!(c.case("b").map(|c| c.passes), Some(None));
        assert_eq!(Verdict::HoldsOnlyFor(vec!["x".into(), "y".into()]).to_string(), "HOLDS ONLY FOR x, y");
    }
}
