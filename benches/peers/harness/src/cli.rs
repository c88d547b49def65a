//! The command line every peer binary accepts.
//!
//! ```text
//! <peer> single --replies N [--middlewares M] [--warmup W] [--layer-on P] [--events read]
//! <peer> many --n N [--workers W]
//! <peer> floor --n N [--workers W]
//! ```
//!
//! `--workers` sets the runtime's worker threads (default 2, the scenario's; 0: tokio's
//! current-thread runtime, everything on the thread that waits for the replies).
//!
//! `--layer-on P` installs one pass-through layer on the peer's position `P` only (a peer lists
//! its positions in [`Peer::POSITIONS`](crate::Peer::POSITIONS)): what the first layer on one
//! position costs, run against the same binary without it (`scripts/bench-pairs.py --new-args`).
//!
//! `--events read` has a peer that builds a reply's events only for a reader (towerscope)
//! read every one of them, as a peer that always builds them (AutoAgents) does; `--events
//! none`, the default, calls its plain reply.

use crate::BoxError;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Replies one after the other on one agent.
    Single {
        /// Timed replies.
        replies: usize,
        /// Pass-through middlewares to install.
        middlewares: usize,
        /// Untimed replies first.
        warmup: usize,
        /// The position to install one pass-through layer on, if any.
        layer_on: Option<String>,
        /// Whether every event of each reply is read (`--events read`).
        events: bool,
    },
    /// `n` replies in flight at once, each on its own agent.
    Many {
        /// Replies (and agents).
        n: usize,
        /// Worker threads (0: a current-thread runtime).
        workers: usize,
    },
    /// `many`'s runtime with no agent: `n` tasks that only sleep the model's delay once per
    /// model call (the CPU the runtime itself spends on the scenario, the same for every peer).
    Floor {
        /// Tasks.
        n: usize,
        /// Worker threads (0: a current-thread runtime).
        workers: usize,
    },
}

/// How to call the binary.
pub const USAGE: &str = "usage: <peer> single --replies N [--middlewares M] [--warmup W] [--layer-on P] [--events read|none]\n       <peer> many --n N [--workers W]\n       <peer> floor --n N [--workers W]";

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Mode, BoxError> {
    let mut args = args.into_iter();
    let mode = args.next().ok_or(USAGE)?;
    let mut replies = None;
    let mut middlewares = 0;
    let mut warmup = None;
    let mut n = None;
    let mut workers = 2;
    let mut layer_on = None;
    let mut events = false;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        if (mode.as_str(), flag.as_str()) == ("single", "--layer-on") {
            layer_on = Some(value);
            continue;
        }
        if (mode.as_str(), flag.as_str()) == ("single", "--events") {
            events = match value.as_str() {
                "read" => true,
                "none" => false,
                other => return Err(format!("--events {other}: read or none\n{USAGE}").into()),
            };
            continue;
        }
        let number: usize = value
            .replace('_', "")
            .parse()
            .map_err(|e| format!("{flag} {value}: not a count ({e})\n{USAGE}"))?;
        match (mode.as_str(), flag.as_str()) {
            ("single", "--replies") => replies = Some(number),
            ("single", "--middlewares") => middlewares = number,
            ("single", "--warmup") => warmup = Some(number),
            ("many" | "floor", "--n") => n = Some(number),
            ("many" | "floor", "--workers") => workers = number,
            _ => return Err(format!("unknown option {flag} for mode {mode}\n{USAGE}").into()),
        }
    }
    match mode.as_str() {
        "single" => {
            let replies = replies.ok_or_else(|| format!("single needs --replies\n{USAGE}"))?;
            if replies == 0 {
                return Err("--replies must be at least 1".into());
            }
            let warmup = warmup.unwrap_or((replies / 5).clamp(20, 500));
            Ok(Mode::Single {
                replies,
                middlewares,
                warmup,
                layer_on,
                events,
            })
        }
        "many" => Ok(Mode::Many {
            n: n.ok_or_else(|| format!("many needs --n\n{USAGE}"))?,
            workers,
        }),
        "floor" => Ok(Mode::Floor {
            n: n.ok_or_else(|| format!("floor needs --n\n{USAGE}"))?,
            workers,
        }),
        other => Err(format!("unknown mode {other:?}\n{USAGE}").into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_both_modes() {
        assert_eq!(
            parse(args("single --replies 2_000 --middlewares 5")).ok(),
            Some(Mode::Single {
                replies: 2000,
                middlewares: 5,
                warmup: 400,
                layer_on: None,
                events: false,
            })
        );
        assert_eq!(
            parse(args("single --replies 100 --layer-on reasoning")).ok(),
            Some(Mode::Single {
                replies: 100,
                middlewares: 0,
                warmup: 20,
                layer_on: Some("reasoning".to_owned()),
                events: false,
            })
        );
        assert_eq!(
            parse(args("many --n 1000")).ok(),
            Some(Mode::Many { n: 1000, workers: 2 })
        );
        assert_eq!(
            parse(args("floor --n 1000 --workers 0")).ok(),
            Some(Mode::Floor { n: 1000, workers: 0 })
        );
    }

    #[test]
    fn rejects_bad_input() {
        assert!(parse(args("single")).is_err());
        assert!(parse(args("single --replies x")).is_err());
        assert!(parse(args("many --replies 3")).is_err());
        assert!(parse(args("many --n")).is_err());
        assert!(parse(args("floor")).is_err());
        assert!(parse(args("single --replies 3 --workers 1")).is_err());
        assert!(parse(args("both")).is_err());
        assert!(parse(args("many --n 3 --layer-on reply")).is_err());
        assert!(parse(args("single --replies 3 --layer-on")).is_err());
        assert!(parse(args("single --replies 3 --events some")).is_err());
        assert!(matches!(
            parse(args("single --replies 3 --events read")).ok(),
            Some(Mode::Single { events: true, .. })
        ));
    }
}
