//! Summary statistics of error samples (mean, median, 95th percentile, maximum), and the one
//! way numbers are written to JSON: finite numbers as numbers, NaN and infinities as the
//! strings `"NaN"`, `"inf"` and `"-inf"` (serde_json would write `null` for all three).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number for a message: plain when of ordinary size, in scientific notation when huge or
/// tiny (so `1e300` does not print as three hundred digits).
pub fn fmt_num(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || (1e-4..1e9).contains(&v.abs()) { v.to_string() } else { format!("{v:e}") }
}

/// `v` rounded to `digits` significant digits, as a decimal reads it (`0.0102775` to two:
/// `0.01`); zero and non-finite values as they are.
pub fn round_sig(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let exp = digits - 1 - v.abs().log10().floor() as i32;
    // Through the decimal text, so the result is the decimal's nearest double (0.01, not
    // 0.010000000000000002).
    if exp >= 0 {
        format!("{:.*}", exp as usize, v).parse::<f64>().unwrap_or(v)
    } else {
        let unit = 10f64.powi(-exp);
        (v / unit).round() * unit
    }
}

/// A value holding floating-point numbers that [`json_numbers`] can write.
pub trait JsonNumbers {
    /// Serialises the value, writing each non-finite number as `"NaN"`, `"inf"` or `"-inf"`.
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
}

/// The string written for a non-finite number.
fn non_finite_name(v: f64) -> &'static str {
    if v.is_nan() {
        "NaN"
    } else if v > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

impl JsonNumbers for f64 {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_finite() { s.serialize_f64(*self) } else { s.serialize_str(non_finite_name(*self)) }
    }
}

impl JsonNumbers for f32 {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_finite() { s.serialize_f32(*self) } else { s.serialize_str(non_finite_name(f64::from(*self))) }
    }
}

/// Borrows a [`JsonNumbers`] value as a [`Serialize`] one.
struct Numbers<'a, T: ?Sized>(&'a T);

impl<T: JsonNumbers + ?Sized> Serialize for Numbers<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize_numbers(s)
    }
}

impl<T: JsonNumbers> JsonNumbers for Option<T> {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Some(v) => s.serialize_some(&Numbers(v)),
            None => s.serialize_none(),
        }
    }
}

impl<T: JsonNumbers> JsonNumbers for [T] {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(Numbers))
    }
}

impl<T: JsonNumbers, const N: usize> JsonNumbers for [T; N] {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize_numbers(s)
    }
}

impl<T: JsonNumbers> JsonNumbers for Vec<T> {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize_numbers(s)
    }
}

impl<T: JsonNumbers> JsonNumbers for (String, T) {
    fn serialize_numbers<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.0)?;
        t.serialize_element(&Numbers(&self.1))?;
        t.end()
    }
}

/// `#[serde(serialize_with = "crate::stats::json_numbers")]`: writes the field's numbers with
/// NaN and infinities kept apart as strings. Every report field that can hold a non-finite
/// number goes through this one helper.
pub fn json_numbers<T: JsonNumbers + ?Sized, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    value.serialize_numbers(s)
}

/// Reads back what [`json_numbers`] wrote for an `f64`: a number, or `"NaN"`, `"inf"`, `"-inf"`
/// (and `null`, as older files hold, as NaN).
pub fn json_f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        N(f64),
        S(String),
        Null(()),
    }
    match Num::deserialize(d)? {
        Num::N(v) => Ok(v),
        Num::Null(()) => Ok(f64::NAN),
        Num::S(s) => match s.as_str() {
            "NaN" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            other => Err(serde::de::Error::custom(format!(
                "expected a number, \"NaN\", \"inf\" or \"-inf\", got \"{other}\""
            ))),
        },
    }
}

/// Summary of a set of errors (or of any per-target figure).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub mean: f64,
    /// 50th percentile.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub median: f64,
    /// 25th percentile (first quartile; 0 in files written before it was kept).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64", default)]
    pub q25: f64,
    /// 75th percentile (third quartile; 0 in files written before it was kept).
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64", default)]
    pub q75: f64,
    /// 95th percentile.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub p95: f64,
    /// Largest value.
    #[serde(serialize_with = "json_numbers", deserialize_with = "json_f64")]
    pub max: f64,
}

impl Summary {
    /// Summarises `values`; non-finite values count as infinitely bad (they sort last and make the
    /// mean infinite) rather than being dropped. An empty slice gives all zeros.
    pub fn of(values: &[f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        let v = sorted_worst_last(values);
        let pick = |q: f64| quantile(&v, q);
        Self {
            n: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            median: pick(0.5),
            q25: pick(0.25),
            q75: pick(0.75),
            p95: pick(0.95),
            max: v[v.len() - 1],
        }
    }
}

/// `values` in ascending order with NaN counted as infinitely bad (sorted last), the way every
/// summary of errors treats it.
pub fn sorted_worst_last(values: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = values.iter().map(|&x| if x.is_nan() { f64::INFINITY } else { x }).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The `q` quantile (nearest rank) of the sorted, non-empty `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    v[((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_to_significant_digits_reads_as_the_decimal() {
        assert_eq!(round_sig(0.0102775, 2), 0.01);
        assert_eq!(round_sig(0.05 * 0.2055, 2), 0.01);
        assert_eq!(round_sig(0.0256, 2), 0.026);
        assert_eq!(round_sig(133.0, 2), 130.0);
        assert_eq!(round_sig(-0.04567, 2), -0.046);
        assert_eq!((round_sig(0.0, 2), round_sig(f64::INFINITY, 2)), (0.0, f64::INFINITY));
    }

    #[test]
    fn percentiles() {
        let v: Vec<f64> = (0..=100).map(f64::from).collect();
        let s = Summary::of(&v);
        assert_eq!((s.n, s.mean, s.median, s.p95, s.max), (101, 50.0, 50.0, 95.0, 100.0));
        assert_eq!((s.q25, s.q75), (25.0, 75.0));
        assert_eq!(Summary::of(&[]), Summary::default());
        assert_eq!(Summary::of(&[1.0, f64::NAN]).max, f64::INFINITY);
    }

    #[test]
    fn message_numbers_stay_short() {
        assert_eq!(fmt_num(1e155), "1e155");
        assert_eq!(fmt_num(1e-200), "1e-200");
        assert_eq!(fmt_num(-2.0), "-2");
        assert_eq!(fmt_num(0.25), "0.25");
    }

    #[test]
    fn json_keeps_nan_and_infinity_apart() {
        let s = Summary {
            n: 3,
            mean: f64::NAN,
            median: f64::INFINITY,
            q25: 0.5,
            q75: 1.0,
            p95: f64::NEG_INFINITY,
            max: 1.5,
        };
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text, r#"{"n":3,"mean":"NaN","median":"inf","q25":0.5,"q75":1.0,"p95":"-inf","max":1.5}"#);
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert!(back.mean.is_nan() && back.median == f64::INFINITY && back.p95 == f64::NEG_INFINITY);
        assert_eq!((back.q25, back.q75), (0.5, 1.0));
        // Files written before the quartiles were kept still load.
        let old: Summary = serde_json::from_str(r#"{"n":1,"mean":2,"median":2,"p95":2,"max":2}"#).unwrap();
        assert_eq!((old.n, old.median, old.q25, old.q75), (1, 2.0, 0.0, 0.0));
        #[derive(Serialize)]
        struct All {
            #[serde(serialize_with = "json_numbers")]
            a: Option<f64>,
            #[serde(serialize_with = "json_numbers")]
            b: [f64; 2],
            #[serde(serialize_with = "json_numbers")]
            c: Vec<(String, f64)>,
            #[serde(serialize_with = "json_numbers")]
            d: f32,
        }
        let all = All { a: Some(f64::NAN), b: [1.0, f64::INFINITY], c: vec![("x".into(), f64::NAN)], d: f32::NAN };
        let text = serde_json::to_string(&all).unwrap();
        assert_eq!(text, r#"{"a":"NaN","b":[1.0,"inf"],"c":[["x","NaN"]],"d":"NaN"}"#);
    }
}
