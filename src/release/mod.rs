//! SGLang releases as versions: one value, resolved once from `--sglang` / `sglang:`,
//! that every layer reads — host-pool sizing ([`crate::sizing::Rules`]), the HiCache
//! controller ([`ControllerRules`]), which tree the replay uses ([`ReleaseRules::tree`]) and
//! which flags exist ([`FlagRules`]).
//!
//! Two kinds of id:
//! - **releases**, the literal PyPI versions `0.5.14` … `0.5.23` (and `latest` =
//!   [`Release::LATEST`]). Each was read from its wheel (`pip download sglang==X
//!   --no-deps`, paths under `sglang/srt/`); a release whose modelled code equals its
//!   predecessor's is accepted as an id and resolves to the same rules
//!   ([`Release::same_as`]).
//! - **what-ifs**, the PR-era rule sets ([`SglangVersion`]: `pre-28614`, …,
//!   `auto-hicache`): named rule sets, some shipped in a release, some proposals that no
//!   release up to 0.5.23 contains ([`first_shipped`]).
//! - **proposals**, open upstream PRs' tree and controller rules on top of 0.5.23
//!   ([`proposal::Proposal`]: `pr39395`, `pr40576`, `pr39845`).

pub mod copy_kernel;
pub mod diff;
pub mod log_lines;
pub mod proposal;
mod rules;
mod server_check;
pub mod step_sync;

use std::fmt;

use serde::Serialize;

use crate::sizing::{self, SglangVersion};

pub use crate::wheel::Release;
pub use rules::{
    BufferOnlyWriteBack, ControllerRules, CpuOffloadResident, DSV4_DEFAULT_SWA_FULL_TOKENS_RATIO,
    DecodeRestoreGate, DevicePoolRules, DraftCell, DsaIndexK, DsaPage, Dsv4DraftTokenBound,
    Dsv4HostPools, Dsv4Pools, EvictionChoices, FlagRules, HicacheSizeSplit, MambaSlotFormula,
    MidGpuTier, MmReservation, MtpDraftHost, PdRoles, PoolRules, PrefetchRetries, PrefetchTimeout,
    PrefetchTimeoutClock, PrefetchTimeoutTokens, PrefillGraphDefault, REPORTED_NOT_MODELLED,
    ReleaseRules, RunningOffset, Sm100Attention, StorageWriteGate,
};
pub use server_check::{
    FieldError, RELEASE_CHOICE_FIELDS, check_server, choice_refusal, chunk_page_refusal,
    decode_radix_speculative_refusal, dsv4_kv_cache_dtype_refusal, dsv4_speculative_refusal,
    eviction_policy_refusal, storage_backend_refusal,
};

impl Release {
    /// The PR-era rule set whose *sizing* this release ships, when it ships one exactly.
    pub fn sizing_what_if(self) -> Option<SglangVersion> {
        use Release as R;
        match self {
            R::V0_5_14 => Some(SglangVersion::Pre28614),
            R::V0_5_15 | R::V0_5_15Post1 | R::V0_5_16 | R::V0_5_17 | R::V0_5_18 => {
                Some(SglangVersion::Pr28614)
            }
            R::V0_5_19 | R::V0_5_20 => Some(SglangVersion::Pr35540),
            R::V0_5_21 => Some(SglangVersion::Pr40135),
            R::V0_5_22 | R::V0_5_23 => None,
        }
    }

    /// One line for `hicache-sim versions`.
    pub fn summary(self) -> &'static str {
        use Release as R;
        match self {
            R::V0_5_14 => {
                "host pool must exceed the device pool (assert before any memory is read); psutil available - 10 GiB, live per pool; prefetch cap 0.8 x (host - device)"
            }
            R::V0_5_15 | R::V0_5_15Post1 | R::V0_5_16 => {
                "host <= device only warns; prefetch cap 0.5 x host; device eviction asks for the whole request"
            }
            R::V0_5_17 => {
                "as 0.5.15; device eviction asks only for the shortfall; --hicache-size split between host pools by device bytes; Mamba state pool keeps a padding slot"
            }
            R::V0_5_18 => {
                "as 0.5.17; NextN MTP drafts packed into UnifiedRadixCache host pools (plain models' HiRadixCache keeps no host copy of the draft KV); DSA index-K kept only on the layers that own it unless HiCache or PD is on"
            }
            R::V0_5_19 => {
                "(psutil available - 10 GiB) // ranks_per_host, sampled live by each pool (the start-up race); UnifiedRadixCache for every model; buffer_only cap 0.9 x host; MTP drafts packed into the target host pools"
            }
            R::V0_5_20 => {
                "as 0.5.19; retries every 8 polls up to 8; an SWA device pool below sliding window + page size is refused"
            }
            R::V0_5_21 => {
                "min(psutil, cgroup headroom with page cache counted as used) // ranks; no cgroup fallback; auto-size with --hicache-host-memory-fraction; tlru"
            }
            R::V0_5_22 => {
                "page cache credited unless a descendant cgroup has memory.min != 0 or unreadable; explicit sizes fall back to psutil; buffer_only + write_back -> write_through; DSA index-K on its owned layers only, HiCache on or off (device and host)"
            }
            R::V0_5_23 => {
                "as 0.5.22; prefetch timeout clock starts at the first blocked admission poll, retries every 8 polls up to 8"
            }
        }
    }

    /// The complete rule set of this release.
    pub fn rules(self) -> ReleaseRules {
        rules::of_release(self)
    }

    /// This release's argument parser, from the generated flag table (a post release
    /// reads its base release's table when the generator found it unchanged).
    pub fn flags(self) -> &'static crate::flags::ReleaseFlags {
        crate::flags::table().release(self)
    }
}

/// The release that first shipped a what-if's sizing rules, or `None` when no release up
/// to [`Release::LATEST`] contains it (a proposal or a downstream layer).
pub fn first_shipped(v: SglangVersion) -> Option<Release> {
    Release::ALL
        .into_iter()
        .find(|r| r.sizing_what_if() == Some(v))
}

/// The release a what-if is nearest to: the one that first shipped it, else the release
/// its rules were written against.
pub fn nearest_release(v: SglangVersion) -> Release {
    first_shipped(v).unwrap_or(match v {
        SglangVersion::Pr40135WholeHeadroom => Release::V0_5_21,
        SglangVersion::PageCacheCredit | SglangVersion::PageCacheCreditClean => Release::V0_5_22,
        _ => Release::LATEST,
    })
}

/// What the user selected with `--sglang` / `sglang:`: a release or a what-if rule set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sglang {
    Release(Release),
    WhatIf(SglangVersion),
    /// An open PR's replay rules on 0.5.23 (sizing unchanged).
    Proposal(proposal::Proposal),
}

/// An unknown `--sglang` id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown SGLang version `{given}`{hint}: expected a release ({}, latest) or a what-if ({})",
    Release::ALL.iter().map(|r| r.id()).collect::<Vec<_>>().join(", "),
    SglangVersion::ALL.iter().map(|v| v.id()).chain(proposal::Proposal::ALL.iter().map(|p| p.id())).collect::<Vec<_>>().join(", "))]
pub struct UnknownSglang {
    pub given: String,
    hint: String,
}

impl Sglang {
    /// What a scenario without `sglang:` means.
    pub const DEFAULT: Sglang = Sglang::Release(Release::LATEST);

    /// Every id `--sglang all` expands to: the releases (aliases included), oldest first,
    /// then the sizing what-ifs. The proposals are not in it: their sizing is 0.5.23's
    /// (a start-up row of theirs would repeat 0.5.23's); they are named one by one.
    pub fn all() -> Vec<Sglang> {
        Release::ALL
            .into_iter()
            .map(Sglang::Release)
            .chain(SglangVersion::ALL.into_iter().map(Sglang::WhatIf))
            .collect()
    }

    /// Parses a release id (`0.5.21`, `v0.5.21`, `latest`) or a what-if id / alias.
    pub fn from_id(s: &str) -> Result<Sglang, UnknownSglang> {
        let t = s.trim().to_ascii_lowercase();
        let r = t
            .strip_prefix('v')
            .filter(|x| x.starts_with('0'))
            .unwrap_or(&t);
        if r == "latest" {
            return Ok(Sglang::Release(Release::LATEST));
        }
        if let Some(rel) = Release::ALL.into_iter().find(|x| x.id() == r) {
            return Ok(Sglang::Release(rel));
        }
        if let Some(p) = proposal::Proposal::from_id(&t) {
            return Ok(Sglang::Proposal(p));
        }
        match SglangVersion::from_id(&t) {
            Ok(v) => Ok(Sglang::WhatIf(v)),
            Err(_) => {
                let ids = Release::ALL
                    .iter()
                    .map(|x| x.id())
                    .chain(SglangVersion::ALL.iter().map(|v| v.id()))
                    .chain(proposal::Proposal::ALL.iter().map(|p| p.id()))
                    .chain(["latest"]);
                let hint = if r.starts_with(|c: char| c.is_ascii_digit())
                    && r.chars().all(|c| c.is_ascii_digit() || c == '.')
                {
                    // A version number: the nearest modelled one by its numbers.
                    let key = |v: &str| -> Vec<u64> {
                        v.split(|c: char| !c.is_ascii_digit())
                            .filter_map(|x| x.parse().ok())
                            .collect()
                    };
                    let k = key(r);
                    let near = Release::ALL
                        .iter()
                        .map(|x| x.id())
                        .filter(|x| key(x) <= k)
                        .next_back()
                        .unwrap_or(Release::ALL[0].id());
                    format!(
                        " (not a modelled release: did you mean `{near}`? the newest is {}, `latest`)",
                        Release::LATEST.id()
                    )
                } else {
                    crate::error::nearest(&t, ids)
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default()
                };
                Err(UnknownSglang {
                    given: s.to_string(),
                    hint,
                })
            }
        }
    }

    /// The stable id (CSV columns, reports): the release's version string or the
    /// what-if's id.
    pub fn id(self) -> &'static str {
        match self {
            Sglang::Release(r) => r.id(),
            Sglang::WhatIf(v) => v.id(),
            Sglang::Proposal(p) => p.id(),
        }
    }

    /// The release id of the selection: the release itself, or for a what-if the release
    /// that first shipped it / it is nearest to. For the flag table.
    pub fn release_id(self) -> &'static str {
        self.release().id()
    }

    /// See [`Sglang::release_id`].
    pub fn release(self) -> Release {
        match self {
            Sglang::Release(r) => r,
            Sglang::WhatIf(v) => nearest_release(v),
            Sglang::Proposal(_) => Release::V0_5_23,
        }
    }

    /// `releases` as the outputs list them: their ids, comma-separated.
    pub fn join(releases: &[Sglang]) -> String {
        releases
            .iter()
            .map(|v| v.id())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// As [`Self::join`], a rule set that is no release marked as such (`page-cache-credit
    /// (what-if: in no release)`): a plan that holds only on a proposal must say so.
    pub fn join_labelled(releases: &[Sglang]) -> String {
        releases
            .iter()
            .map(|v| match v {
                Sglang::Release(_) => v.id().to_string(),
                Sglang::WhatIf(_) | Sglang::Proposal(_) => {
                    format!("{} (what-if: in no release)", v.id())
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn is_release(self) -> bool {
        matches!(self, Sglang::Release(_))
    }

    pub fn summary(self) -> &'static str {
        match self {
            Sglang::Release(r) => r.summary(),
            Sglang::WhatIf(v) => v.summary(),
            Sglang::Proposal(p) => p.summary(),
        }
    }

    /// The host-pool sizing rules.
    pub fn rules(self) -> sizing::Rules {
        self.release_rules().sizing
    }

    /// Everything: sizing, controller, tree, flags. A what-if takes its sizing rules
    /// from the rule set and the rest from the release it is nearest to.
    pub fn release_rules(self) -> ReleaseRules {
        match self {
            Sglang::Release(r) => r.rules(),
            Sglang::WhatIf(v) => rules::of_what_if(v, nearest_release(v)),
            Sglang::Proposal(p) => rules::of_proposal(p),
        }
    }
}

/// [`Sglang::from_id`] for callers outside the commands and the loader (tests).
impl std::str::FromStr for Sglang {
    type Err = UnknownSglang;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_id(s)
    }
}

/// A release is named by its stable id ([`Sglang::id`]): a row's release compares with
/// the id a test or a report expects.
impl PartialEq<&str> for Sglang {
    fn eq(&self, other: &&str) -> bool {
        self.id() == *other
    }
}

/// The stable id ([`Sglang::id`]), padded as asked (`{:<14}` in tables): how every
/// output names the release.
impl fmt::Display for Sglang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.id())
    }
}

/// A scenario's `sglang:` key, read by the loader (`scenario::load::release_value`: the
/// file's key, a `--set sglang=…`, a sweep's `sglang` axis values): a string that
/// [`Sglang::from_id`] reads, refused with its message.
impl<'de> serde::Deserialize<'de> for Sglang {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let id = <String as serde::Deserialize>::deserialize(d)?;
        Sglang::from_id(&id).map_err(serde::de::Error::custom)
    }
}

/// The stable id ([`Sglang::id`]): a scenario written back out reads the same.
impl Serialize for Sglang {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(test)]
mod tests;
