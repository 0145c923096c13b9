//! The command line's one parser of real-valued flags and its one way of echoing a bad value.
//!
//! Every real-valued flag parses through [`Range::parse`] (a single number, `value_parser =
//! real(...)`) or [`finite`] (each element of a list or pair): a refusal names the accepted
//! range and its unit, and clap names the flag. A bad value is echoed through [`shown`], never
//! as Rust's `{}` of an `f64` (which writes `1e300` as three hundred digits), and the clap
//! errors' own echo of the raw value is bounded the same way ([`bound_clap_error`]).

use elbow::stats::fmt_num;

/// The longest text echoed as typed.
const MAX_SHOWN: usize = 24;

/// A value as an error message echoes it: as typed when short; a longer number in its short form
/// ([`fmt_num`]: three hundred typed digits read `1e299`); anything else cut to its first
/// characters with the count of the rest.
pub(crate) fn shown(text: &str) -> String {
    let t = text.trim();
    let n = t.chars().count();
    if n <= MAX_SHOWN {
        return t.to_string();
    }
    if let Ok(v) = t.parse::<f64>() {
        return fmt_num(v);
    }
    let head: String = t.chars().take(MAX_SHOWN).collect();
    format!("{head}… ({n} characters)")
}

/// A finite number (each element of a list or pair flag); the refusal echoes the value through
/// [`shown`].
pub(crate) fn finite(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{}` is not a finite number", shown(s))),
    }
}

/// The farthest a target may lie from the base on each axis, metres (the longest arm reaches
/// 2e6 m): beyond it a distance would overflow to infinity on screen.
pub(crate) const MAX_TARGET: f64 = 1e9;

/// A target coordinate: a finite number of metres within ±[`MAX_TARGET`].
pub(crate) fn target_coordinate(s: &str) -> Result<f64, String> {
    let v = finite(s)?;
    if v.abs() > MAX_TARGET {
        return Err(format!("a target coordinate must lie within ±1e9 m, got {}", shown(s)));
    }
    Ok(v)
}

/// The accepted values of a real-valued flag: `lo` to `hi` (either end open or closed; an
/// infinite `hi` admits `inf`) in `unit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Range {
    /// The lowest value.
    pub(crate) lo: f64,
    /// Whether `lo` itself is refused.
    pub(crate) lo_open: bool,
    /// The highest value.
    pub(crate) hi: f64,
    /// Whether `hi` itself is refused.
    pub(crate) hi_open: bool,
    /// The unit, after the range (`""` for a plain number).
    pub(crate) unit: &'static str,
}

impl Range {
    /// `[lo, hi]`.
    pub(crate) const fn closed(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self { lo, lo_open: false, hi, hi_open: false, unit }
    }

    /// `(lo, hi]`: above `lo`, at most `hi`.
    pub(crate) const fn above(lo: f64, hi: f64, unit: &'static str) -> Self {
        Self { lo, lo_open: true, hi, hi_open: false, unit }
    }

    /// This range in `unit`.
    pub(crate) const fn with_unit(self, unit: &'static str) -> Self {
        Self { unit, ..self }
    }

    /// This range with `hi` itself refused.
    pub(crate) const fn below_hi(self) -> Self {
        Self { hi_open: true, ..self }
    }

    /// Whether `v` lies in the range (NaN never does; infinity only when `hi` is infinite and
    /// included).
    pub(crate) fn contains(&self, v: f64) -> bool {
        let lo = if self.lo_open { v > self.lo } else { v >= self.lo };
        let hi = if self.hi_open { v < self.hi } else { v <= self.hi };
        lo && hi
    }

    /// The range in words: `from 0 to 1e6 N m s/rad`, `in (0, 1000] m`.
    pub(crate) fn words(&self) -> String {
        // `1e6` rather than `1000000`; `2.94`, `1000` and `10000` as they are.
        let end = |v: f64| match v {
            f64::INFINITY => "inf".to_string(),
            v if v.abs() >= 1e5 => format!("{v:e}"),
            v => fmt_num(v),
        };
        let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
        if !self.lo_open && !self.hi_open {
            format!("from {} to {}{unit}", end(self.lo), end(self.hi))
        } else {
            let (l, r) = (if self.lo_open { '(' } else { '[' }, if self.hi_open { ')' } else { ']' });
            format!("in {l}{}, {}{r}{unit}", end(self.lo), end(self.hi))
        }
    }

    /// Parses one number in the range; the refusal names the range and its unit and echoes the
    /// value through [`shown`].
    pub(crate) fn parse(&self, s: &str) -> Result<f64, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if self.contains(v) => Ok(v),
            _ => Err(format!("must be a number {}, got {}", self.words(), shown(s))),
        }
    }

    /// Parses a comma-separated list of 1 to `most` numbers, each in the range.
    pub(crate) fn parse_list(&self, s: &str, most: usize) -> Result<Vec<f64>, String> {
        let parts: Vec<&str> = s.split(',').collect();
        if parts.len() > most {
            return Err(format!(
                "must be 1 to {most} comma-separated numbers {}, got {} values",
                self.words(),
                parts.len()
            ));
        }
        parts
            .iter()
            .map(|p| {
                self.parse(p).map_err(|_| format!("each value must be a number {}, got {}", self.words(), shown(p)))
            })
            .collect()
    }
}

/// The value parser of a real-valued flag in `range` (`value_parser = real(Range::closed(0.0,
/// 2.0, ""))`).
pub(crate) fn real(range: Range) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |s: &str| range.parse(s)
}

/// Bounds the raw value a clap error echoes (`invalid value '...' for '--flag'`) with [`shown`],
/// so a three-hundred-digit argument is not printed back whole.
pub(crate) fn bound_clap_error(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue};
    if let Some(ContextValue::String(raw)) = e.get(ContextKind::InvalidValue)
        && raw.chars().count() > MAX_SHOWN
    {
        let short = shown(raw);
        e.insert(ContextKind::InvalidValue, ContextValue::String(short));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_echoed_bounded() {
        assert_eq!(shown(" 1e300 "), "1e300");
        let digits = format!("1{}", "0".repeat(299));
        assert_eq!(shown(&digits), "1e299");
        assert_eq!(shown(&format!("0.{}1", "0".repeat(299))), "1e-300");
        let junk = "x".repeat(300);
        assert!(shown(&junk).len() < 60 && shown(&junk).contains("300 characters"));
        let r = Range::above(0.0, 1e6, "N m/rad");
        assert_eq!(r.parse("2.5"), Ok(2.5));
        for bad in ["0", "-1", "1e300", "nan", "inf", "x"] {
            let e = r.parse(bad).unwrap_err();
            assert!(e.contains("in (0, 1e6] N m/rad") && e.len() < 80, "{bad}: {e}");
        }
        assert_eq!(Range::closed(0.0, f64::INFINITY, "rad/s").parse("inf"), Ok(f64::INFINITY));
        assert!(Range::closed(0.0, f64::INFINITY, "s").below_hi().parse("inf").is_err());
    }
}
