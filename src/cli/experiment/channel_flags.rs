//! The experiments' per-channel flags, built from the channel table
//! ([`elbow::plant::channel::ROWS`]): one levels flag per channel for `elbow experiment
//! degradation` ([`LevelArgs`]), and a training and an outside range flag per randomized channel
//! for `elbow experiment randomization` ([`RangeArgs`]), each with its row's help, bound and
//! defaults. A new row gets its flags here without a line of code.

use crate::cli::Levels;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use elbow::experiments::randomization::Ranges;
use elbow::plant::channel::{Channel, ChannelLevels, ROWS, Row};
use std::sync::LazyLock;

/// One generated flag: its id, `--long` name, value name, help and default, all as static text
/// (clap borrows them for the life of the program).
struct Flag {
    id: String,
    long: String,
    value_name: String,
    help: String,
    default: String,
    aliases: &'static [&'static str],
}

impl Flag {
    /// A flag called `--long` taking one `T` (parsed by its `FromStr`), hyphen values allowed so
    /// that a negative number is refused by the parser, in words.
    fn arg<T>(&'static self) -> Arg
    where
        T: std::str::FromStr + Clone + Send + Sync + 'static,
        T::Err: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    {
        Arg::new(self.id.as_str())
            .long(self.long.as_str())
            .aliases(self.aliases.iter().copied())
            .value_name(self.value_name.as_str())
            .help(self.help.clone())
            .default_value(self.default.as_str())
            .allow_hyphen_values(true)
            .value_parser(|s: &str| s.parse::<T>())
    }
}

/// `--flag` as clap's derive names it: the id with `_` for `-`, the value name in capitals.
fn flag(long: String, help: String, default: String, aliases: &'static [&'static str]) -> Flag {
    let id = long.replace('-', "_");
    Flag { value_name: id.to_uppercase(), id, long, help, default, aliases }
}

/// The largest level of `row`, in words, for the help (`, each at most pi rad`).
fn bound_words(row: &Row) -> String {
    row.bound.map_or(String::new(), |b| format!(", each at most {}", b.words))
}

/// The degradation experiment's levels flags, in table order.
static LEVEL_FLAGS: LazyLock<Vec<Flag>> = LazyLock::new(|| {
    ROWS.iter()
        .map(|row| {
            let help = format!("Channel `{}`, levels comma-separated{}: {}.", row.key, bound_words(row), row.help);
            let default = Levels(row.levels.to_vec()).to_string();
            flag(row.flag.to_string(), help, default, row.aliases)
        })
        .collect()
});

/// The levels swept on every channel: `--encoder`, `--actuator`, ..., `--combined`, one flag per
/// row of the channel table, each defaulting to its row's levels; and which were given on the
/// command line (a chain scales the defaults of the channels in metres to its reach).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LevelArgs(pub(crate) ChannelLevels, Vec<Channel>);

impl LevelArgs {
    /// True when `channel`'s levels were given on the command line.
    pub(crate) fn given(&self, channel: Channel) -> bool {
        self.1.contains(&channel)
    }
}

impl FromArgMatches for LevelArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut levels = ChannelLevels::default();
        let mut given = Vec::new();
        for (row, f) in ROWS.iter().zip(LEVEL_FLAGS.iter()) {
            if let Some(v) = m.get_one::<Levels>(&f.id) {
                levels[row.channel] = v.0.clone();
            }
            if m.value_source(&f.id) == Some(clap::parser::ValueSource::CommandLine) {
                given.push(row.channel);
            }
        }
        Ok(LevelArgs(levels, given))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for LevelArgs {
    fn augment_args(cmd: Command) -> Command {
        LEVEL_FLAGS.iter().fold(cmd, |cmd, f| cmd.arg(f.arg::<Levels>()))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// `LO,HI`: a range of non-negative numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span(pub(crate) [f64; 2]);

impl std::str::FromStr for Span {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (lo, hi) = crate::cli::parse_pair(s, "a range")?;
        if !(0.0 <= lo && lo <= hi) {
            return Err(format!("a range must be `LO,HI` with 0 <= LO <= HI, got `{}`", crate::cli::shown(s)));
        }
        Ok(Span([lo, hi]))
    }
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.0[0], self.0[1])
    }
}

/// The highest end of `channel`'s ranges, in words, for the help.
fn limit_words(channel: Channel) -> String {
    let row = channel.row();
    match (row.bound, row.randomized) {
        (Some(b), Some(r)) if b.max == r.limit => b.words.to_string(),
        (_, Some(r)) => format!("{}{}", r.limit, r.unit),
        _ => String::new(),
    }
}

/// The randomization experiment's range flags: the training ranges, then the outside ones, each
/// in the order a plant draws its channels ([`Ranges::CHANNELS`]).
static RANGE_FLAGS: LazyLock<Vec<(Channel, bool, Flag)>> = LazyLock::new(|| {
    let training = Ranges::CHANNELS.map(|ch| {
        let help = format!(
            "Randomized training range of channel `{}`, `LO,HI`, up to {}: {}.",
            ch.key(),
            limit_words(ch),
            ch.row().help
        );
        let default = Span(Ranges::TRAINING.span(ch).unwrap_or_default()).to_string();
        (ch, false, flag(ch.key().to_string(), help, default, &[]))
    });
    let outside = Ranges::CHANNELS.map(|ch| {
        let help = format!("Range of channel `{}` of the \"outside\" test plants, `LO,HI`.", ch.key());
        let default = Span(Ranges::OUTSIDE.span(ch).unwrap_or_default()).to_string();
        (ch, true, flag(format!("outside-{}", ch.key()), help, default, &[]))
    });
    training.into_iter().chain(outside).collect()
});

/// The randomization ranges, training and outside: `--mismatch`, ..., `--outside-backlash`, one
/// pair per randomized channel of the table, each defaulting to its row's ranges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RangeArgs {
    /// The randomized training ranges.
    pub(crate) training: Ranges,
    /// The ranges of the test plants outside them.
    pub(crate) outside: Ranges,
}

impl FromArgMatches for RangeArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut out = RangeArgs { training: Ranges::TRAINING, outside: Ranges::OUTSIDE };
        for (ch, outside, f) in RANGE_FLAGS.iter() {
            let ranges = if *outside { &mut out.outside } else { &mut out.training };
            if let (Some(v), Some(span)) = (m.get_one::<Span>(&f.id), ranges.span_mut(*ch)) {
                *span = v.0;
            }
        }
        Ok(out)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for RangeArgs {
    fn augment_args(cmd: Command) -> Command {
        RANGE_FLAGS.iter().fold(cmd, |cmd, (_, _, f)| cmd.arg(f.arg::<Span>()))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Degradation {
        #[command(flatten)]
        levels: LevelArgs,
    }

    #[derive(Debug, Parser)]
    struct Randomization {
        #[command(flatten)]
        ranges: RangeArgs,
    }

    #[test]
    fn every_row_has_its_flags_with_its_defaults() {
        assert_eq!(Degradation::try_parse_from(["x"]).unwrap().levels.0, ChannelLevels::default());
        let r = Randomization::try_parse_from(["x"]).unwrap().ranges;
        assert_eq!((r.training, r.outside), (Ranges::TRAINING, Ranges::OUTSIDE));
        let d =
            Degradation::try_parse_from(["x", "--noise", "0,0.5", "--target-noise", "0,2", "--combined", "1"]).unwrap();
        let expected = ChannelLevels::default()
            .with(Channel::Encoder, vec![0.0, 0.5])
            .with(Channel::Target, vec![0.0, 2.0])
            .with(Channel::Combined, vec![1.0]);
        assert_eq!(d.levels.0, expected);
        let r = Randomization::try_parse_from(["x", "--outside-flex", "0.1,0.2", "--friction", "0,1"]).unwrap().ranges;
        assert_eq!((r.outside.flex, r.training.friction), ([0.1, 0.2], [0.0, 1.0]));
        assert_eq!((r.training.flex, r.outside.friction), (Ranges::TRAINING.flex, Ranges::OUTSIDE.friction));
        let err = Degradation::try_parse_from(["x", "--flex", "0,-1"]).unwrap_err().to_string();
        assert!(err.contains("invalid value '0,-1' for '--flex <FLEX>': levels must be"), "{err}");
    }
}
