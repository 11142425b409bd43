//! `--sglang` as clap parses it: the release (or what-if) once, typed, for every command.
//! Past this point no command holds the id as text; the loader takes the typed value.
//!
//! An unknown id is refused by clap's parse (exit 2) in the wording each command has
//! always used: the flag and the value, where the scenario field it stands for is named
//! (`startup`, `replay` of a scenario), or the `--set` it is written as (`sweep`).

use std::fmt;

use crate::release::{Sglang, UnknownSglang};

/// How a command's error names a refused `--sglang` (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wording {
    /// `--sglang V: …` (`plan`, `check`: the whole list typed).
    Flag,
    /// `--sglang V: field `sglang`: …` (`startup`: it overrides the scenario's field).
    Field,
    /// `--set sglang=V: field `sglang`: …` (`sweep`).
    Set,
    /// `--sglang: …` (the debug hooks).
    Bare,
    /// `replay`: [`Wording::Field`] with a scenario, [`Wording::Bare`] without (clap's
    /// parse does not know which; `main` asks, see [`SglangArgError::with_scenario`]).
    Replay,
}

/// A `--sglang` value that is not a release nor a what-if.
#[derive(Debug, Clone)]
pub struct SglangArgError {
    given: String,
    wording: Wording,
    why: UnknownSglang,
}

impl SglangArgError {
    /// Whether this error needs to know if `replay` was given a scenario.
    pub fn asks_for_scenario(&self) -> bool {
        self.wording == Wording::Replay
    }

    /// `replay`'s wording, once it is known whether a scenario was given.
    pub fn with_scenario(mut self, scenario: bool) -> Self {
        if self.wording == Wording::Replay {
            self.wording = if scenario {
                Wording::Field
            } else {
                Wording::Bare
            };
        }
        self
    }
}

impl fmt::Display for SglangArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (v, why) = (&self.given, &self.why);
        match self.wording {
            Wording::Flag => write!(f, "--sglang {v}: {why}"),
            Wording::Field | Wording::Replay => write!(f, "--sglang {v}: field `sglang`: {why}"),
            Wording::Set => write!(f, "--set sglang={v}: field `sglang`: {why}"),
            Wording::Bare => write!(f, "--sglang: {why}"),
        }
    }
}

impl std::error::Error for SglangArgError {}

fn one(s: &str, wording: Wording) -> Result<Sglang, SglangArgError> {
    Sglang::from_id(s).map_err(|why| SglangArgError {
        given: s.to_string(),
        wording,
        why,
    })
}

/// `startup --sglang`: one release or what-if, or `all` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SglangOrAll {
    One(Sglang),
    /// Every release and what-if ([`Sglang::all`]).
    All,
}

/// `plan --sglang` / `check --sglang`: a comma-separated list, or `all` (every release,
/// not the what-ifs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SglangList {
    Listed(Vec<Sglang>),
    AllReleases,
}

impl SglangList {
    /// The releases to run, `None` standing for the file's own when no list was given.
    pub fn of(arg: Option<&SglangList>) -> Vec<Option<Sglang>> {
        match arg {
            None => vec![None],
            Some(SglangList::AllReleases) => Sglang::all()
                .into_iter()
                .filter(|v| v.is_release())
                .map(Some)
                .collect(),
            Some(SglangList::Listed(v)) => v.iter().copied().map(Some).collect(),
        }
    }
}

/// clap's parser for `startup --sglang`.
pub fn startup(s: &str) -> Result<SglangOrAll, SglangArgError> {
    if s.trim() == "all" {
        return Ok(SglangOrAll::All);
    }
    one(s, Wording::Field).map(SglangOrAll::One)
}

/// clap's parser for `plan --sglang` and `check --sglang`.
pub fn list(s: &str) -> Result<SglangList, SglangArgError> {
    if s.trim() == "all" {
        return Ok(SglangList::AllReleases);
    }
    s.split(',')
        .map(|v| {
            Sglang::from_id(v).map_err(|why| SglangArgError {
                given: s.trim().to_string(),
                wording: Wording::Flag,
                why,
            })
        })
        .collect::<Result<_, _>>()
        .map(SglangList::Listed)
}

/// clap's parser for `replay --sglang`.
pub fn replay(s: &str) -> Result<Sglang, SglangArgError> {
    one(s, Wording::Replay)
}

/// clap's parser for `sweep --sglang`.
pub fn sweep(s: &str) -> Result<Sglang, SglangArgError> {
    one(s, Wording::Set)
}

/// clap's parser for the debug hooks' `--sglang`.
pub fn bare(s: &str) -> Result<Sglang, SglangArgError> {
    one(s, Wording::Bare)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::release::Release;

    #[test]
    fn each_command_names_a_refused_id_as_it_always_has() {
        let why = "unknown SGLang version `bogus`: expected a release";
        let e = startup("bogus").unwrap_err().to_string();
        assert!(e.starts_with("--sglang bogus: field `sglang`: "), "{e}");
        assert!(e.contains(why), "{e}");
        let e = list("0.5.21,bogus").unwrap_err().to_string();
        assert!(e.starts_with("--sglang 0.5.21,bogus: unknown"), "{e}");
        let e = sweep("bogus").unwrap_err().to_string();
        assert!(e.starts_with("--set sglang=bogus: field `sglang`: "), "{e}");
        let e = replay("bogus").unwrap_err();
        assert!(e.asks_for_scenario());
        assert!(
            e.clone()
                .with_scenario(false)
                .to_string()
                .starts_with("--sglang: unknown")
        );
        assert!(
            e.with_scenario(true)
                .to_string()
                .starts_with("--sglang bogus: field `sglang`: unknown")
        );
        assert!(
            bare("")
                .unwrap_err()
                .to_string()
                .starts_with("--sglang: unknown")
        );
    }

    #[test]
    fn typed_once() {
        assert_eq!(startup(" all ").unwrap(), SglangOrAll::All);
        assert_eq!(
            startup("latest").unwrap(),
            SglangOrAll::One(Sglang::Release(Release::LATEST))
        );
        let l = list("0.5.21, v0.5.23").unwrap();
        assert_eq!(
            SglangList::of(Some(&l)),
            vec![
                Some(Sglang::Release(Release::V0_5_21)),
                Some(Sglang::Release(Release::V0_5_23))
            ]
        );
        // `all` of plan / check: the 11 releases, no what-if.
        assert_eq!(SglangList::of(Some(&list("all").unwrap())).len(), 11);
        assert_eq!(SglangList::of(None), vec![None]);
    }
}
