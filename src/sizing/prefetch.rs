//! The L3 prefetch capacity limit (`managers/cache_controller.py:
//! HiCacheController.__init__`, `prefetch_capacity_limit`): one rule per release era, the
//! start-up's record of it ([`super::Rules::prefetch_cap`], the release's controller)
//! and the replay's (`runtime.replay.prefetch_capacity_rule`) alike.

use serde::{Deserialize, Serialize};

use crate::domain::HostMemoryMode;

/// Host tokens L3 prefetches may hold at once. Serde names are the replay
/// configuration's (`pre-28614`, `pr28614`, `buffer-only`, `pr16909`); [`Self::id`] is
/// the formula's name, as `hicache-sim versions` prints the release rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PrefetchCapRule {
    /// V0, before #28614 (0.5.14): `int(0.8 * (host - device))`. SGLang does not clamp
    /// it, but V0 asserts host > device so it is positive there; applied as a what-if to
    /// a smaller host it is floored at 0 here (a negative limit blocks every prefetch, as
    /// 0 does).
    #[serde(rename = "pre-28614")]
    ExcessOverDevice,
    /// #28614 and later (0.5.15+): `int(0.5 * host)`.
    #[default]
    #[serde(rename = "pr28614")]
    HalfHost,
    /// `--hicache-host-memory-mode buffer_only` (0.5.19+):
    /// `int(HICACHE_LOAD_POOL_USAGE_FRACTION * host)` = `int(0.9 * host)`.
    #[serde(rename = "buffer-only")]
    BufferOnly,
    /// #16909's proposal (not merged): `0.8 * (host - device)` if host > device, else
    /// `0.5 * host`.
    #[serde(rename = "pr16909")]
    Pr16909Proposal,
}

impl PrefetchCapRule {
    /// The formula's name (`versions`' rule tables).
    pub fn id(self) -> &'static str {
        match self {
            PrefetchCapRule::ExcessOverDevice => "excess_over_device",
            PrefetchCapRule::HalfHost => "half_host",
            PrefetchCapRule::BufferOnly => "buffer_only",
            PrefetchCapRule::Pr16909Proposal => "pr16909_proposal",
        }
    }

    /// The rule in force under `mode`: buffer_only's staging cap replaces a release's
    /// cache-mode rule (the mode exists from 0.5.19, whose cache-mode rule is
    /// `HalfHost`; a what-if's older rule gives way to it too).
    pub fn in_mode(self, mode: HostMemoryMode) -> PrefetchCapRule {
        match mode {
            HostMemoryMode::BufferOnly => PrefetchCapRule::BufferOnly,
            HostMemoryMode::Cache => self,
        }
    }

    /// The limit in tokens, from pool sizes in tokens.
    pub fn limit_tokens(self, host_tokens: u64, device_tokens: u64) -> u64 {
        let h = host_tokens as f64;
        let excess = h - device_tokens as f64;
        let v = match self {
            PrefetchCapRule::ExcessOverDevice => 0.8 * excess,
            PrefetchCapRule::HalfHost => 0.5 * h,
            PrefetchCapRule::BufferOnly => 0.9 * h,
            PrefetchCapRule::Pr16909Proposal if host_tokens > device_tokens => 0.8 * excess,
            PrefetchCapRule::Pr16909Proposal => 0.5 * h,
        };
        // `int()` truncates; a negative V0 limit is 0.
        v.trunc().max(0.0) as u64
    }

    /// Serde with the formula names ([`Self::id`]), for the rule tables.
    pub fn serialize_id<S: serde::Serializer>(r: &Self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.id())
    }

    /// See [`Self::serialize_id`].
    pub fn deserialize_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let s = String::deserialize(d)?;
        [
            PrefetchCapRule::ExcessOverDevice,
            PrefetchCapRule::HalfHost,
            PrefetchCapRule::BufferOnly,
            PrefetchCapRule::Pr16909Proposal,
        ]
        .into_iter()
        .find(|r| r.id() == s)
        .ok_or_else(|| D::Error::custom(format!("unknown prefetch cap rule `{s}`")))
    }
}

/// [`PrefetchCapRule::limit_tokens`] of `rule` in cache mode, or in buffer_only mode.
pub fn prefetch_capacity_limit(
    rule: PrefetchCapRule,
    host_tokens: u64,
    device_tokens: u64,
    buffer_only: bool,
) -> u64 {
    let mode = if buffer_only {
        HostMemoryMode::BufferOnly
    } else {
        HostMemoryMode::Cache
    };
    rule.in_mode(mode).limit_tokens(host_tokens, device_tokens)
}
