//! Named enums by key: the one way the crate parses and prints a value that has a fixed, ordered
//! set of keys (solvers, heads, layers, protocols, arms, methods, ...).
//!
//! An enum implements [`Keyed`] (usually through `keyed!`), and then:
//! - [`parse`] reads it from text: surrounding whitespace trimmed, case ignored, the enum's
//!   aliases accepted, and one error sentence for anything else:
//!   "`what` must be one of a, b, c; got `s`";
//! - `Display` prints its key, `FromStr` is [`parse`], and (with `serde`) `String` conversions
//!   let `#[serde(into = "String", try_from = "String")]` serialise it as its key.
//!
//! This module is a leaf: it names nothing else in the crate.

/// A value with a fixed, ordered set of keys.
pub trait Keyed: Copy + 'static {
    /// What a value is called in an error sentence (`head`, `OOD set`).
    const WHAT: &'static str;
    /// Every value, in order (the order the error sentence lists the keys in).
    const ALL: &'static [Self];
    /// Other spellings accepted on input (matched like keys), each with its value.
    const ALIASES: &'static [(&'static str, Self)] = &[];

    /// The key: on the command line, in JSON and CSV.
    fn key(self) -> &'static str;
}

/// The value of `T` whose key or alias is `s`, surrounding whitespace trimmed and case ignored;
/// otherwise "`T::WHAT` must be one of `keys`; got `s`".
pub fn parse<T: Keyed>(s: &str) -> Result<T, String> {
    let t = s.trim();
    let by_key = T::ALL.iter().copied().find(|v| v.key().eq_ignore_ascii_case(t));
    let by_alias = || T::ALIASES.iter().find(|(alias, _)| alias.eq_ignore_ascii_case(t)).map(|&(_, v)| v);
    by_key.or_else(by_alias).ok_or_else(|| format!("{} must be one of {}; got `{s}`", T::WHAT, keys::<T>()))
}

/// Parses `s` as one of `among` (a subset of `T::ALL`, such as the solvers of one arm), the
/// error naming `what` and listing only those keys.
pub fn parse_among<T: Keyed + PartialEq>(s: &str, among: &[T], what: &str) -> Result<T, String> {
    let t = s.trim();
    among
        .iter()
        .copied()
        .find(|v| v.key().eq_ignore_ascii_case(t))
        .ok_or_else(|| format!("{what} must be one of {}; got `{s}`", join(among).replace(',', ", ")))
}

/// Every key of `T`, comma-separated, in order.
pub fn keys<T: Keyed>() -> String {
    T::ALL.iter().map(|v| v.key()).collect::<Vec<_>>().join(", ")
}

/// A comma-separated list of keys (`mdn, residual`), each read by [`parse`].
pub fn parse_list<T: Keyed>(s: &str) -> Result<Vec<T>, String> {
    s.split(',').map(parse).collect()
}

/// `values`' keys joined by commas without spaces (`mdn,residual`): what [`parse_list`] reads.
pub fn join<T: Keyed>(values: &[T]) -> String {
    values.iter().map(|v| v.key()).collect::<Vec<_>>().join(",")
}

/// Implements [`Keyed`] for an enum from its inherent `ALL` array and `key` method, with
/// `Display` (the key) and `FromStr` ([`parse`]); `serde` adds `From<T> for String` and
/// `TryFrom<String>`, for enums marked `#[serde(into = "String", try_from = "String")]`.
///
/// ```ignore
/// keyed!(HeadKind, "head", serde);
/// keyed!(Activation, "activation", aliases: [("linear", Activation::Identity)]);
/// ```
macro_rules! keyed {
    ($ty:ty, $what:literal, serde) => {
        $crate::keys::keyed!($ty, $what);

        impl From<$ty> for String {
            fn from(v: $ty) -> String {
                <$ty>::key(v).to_string()
            }
        }

        impl TryFrom<String> for $ty {
            type Error = String;

            fn try_from(s: String) -> Result<Self, String> {
                $crate::keys::parse(&s)
            }
        }
    };
    ($ty:ty, $what:literal $(, aliases: [$(($alias:literal, $value:expr)),* $(,)?])?) => {
        impl $crate::keys::Keyed for $ty {
            const WHAT: &'static str = $what;
            const ALL: &'static [Self] = &<$ty>::ALL;
            $(const ALIASES: &'static [(&'static str, Self)] = &[$(($alias, $value)),*];)?

            fn key(self) -> &'static str {
                <$ty>::key(self)
            }
        }

        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(<$ty>::key(*self))
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = String;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::keys::parse(s)
            }
        }
    };
}
pub(crate) use keyed;

#[cfg(test)]
mod tests {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(into = "String", try_from = "String")]
    enum Fruit {
        Apple,
        BloodOrange,
    }

    impl Fruit {
        const ALL: [Fruit; 2] = [Fruit::Apple, Fruit::BloodOrange];

        const fn key(self) -> &'static str {
            match self {
                Fruit::Apple => "apple",
                Fruit::BloodOrange => "blood-orange",
            }
        }
    }

    keyed!(Fruit, "fruit", serde);

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Tool {
        Hammer,
        Saw,
    }

    impl Tool {
        const ALL: [Tool; 2] = [Tool::Hammer, Tool::Saw];

        const fn key(self) -> &'static str {
            match self {
                Tool::Hammer => "hammer",
                Tool::Saw => "saw",
            }
        }
    }

    keyed!(Tool, "tool", aliases: [("mallet", Tool::Hammer)]);

    #[test]
    fn keys_parse_trimmed_and_in_any_case() {
        for f in Fruit::ALL {
            assert_eq!(f.to_string(), f.key());
            assert_eq!(f.key().parse::<Fruit>(), Ok(f));
            assert_eq!(format!("  {}\t", f.key().to_ascii_uppercase()).parse::<Fruit>(), Ok(f));
        }
        assert_eq!(" Mallet ".parse::<Tool>(), Ok(Tool::Hammer));
        assert_eq!("saw".parse::<Tool>(), Ok(Tool::Saw));
    }

    #[test]
    fn lists_parse_each_key_and_join_back() {
        let list = super::parse_list::<Tool>("saw, Mallet,hammer").unwrap();
        assert_eq!(list, [Tool::Saw, Tool::Hammer, Tool::Hammer]);
        assert_eq!(super::join(&list), "saw,hammer,hammer");
        assert_eq!(super::parse_list::<Tool>(&super::join(&list)), Ok(list));
        assert_eq!(super::parse_list::<Tool>("saw,,hammer"), Err("tool must be one of hammer, saw; got ``".into()));
    }

    #[test]
    fn anything_else_gets_the_one_sentence() {
        assert_eq!("pear".parse::<Fruit>(), Err("fruit must be one of apple, blood-orange; got `pear`".to_string()));
        assert_eq!("".parse::<Tool>(), Err("tool must be one of hammer, saw; got ``".to_string()));
        assert!("apple pie".parse::<Fruit>().is_err());
    }

    #[test]
    fn serde_goes_through_the_key() {
        let json = serde_json::to_string(&Fruit::BloodOrange).unwrap();
        assert_eq!(json, "\"blood-orange\"");
        assert_eq!(serde_json::from_str::<Fruit>(&json).unwrap(), Fruit::BloodOrange);
        let err = serde_json::from_str::<Fruit>("\"kiwi\"").unwrap_err().to_string();
        assert!(err.contains("fruit must be one of apple, blood-orange; got `kiwi`"), "{err}");
    }
}
