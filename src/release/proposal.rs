//! Tree and controller rules that open SGLang pull requests propose on top of the newest
//! release, as what-ifs a maintainer can replay before the merge (`--sglang pr39395`,
//! …). Each is 0.5.23 with one rule changed, named by its PR, and selects that PR's
//! behaviour as if its flag were on. Their sizing is 0.5.23's: they change what the
//! replay does with the pools, not the pools.
//!
//! Where a PR's code is known the rule mirrors it (39395: `unified_radix_cache.py:
//! _load_back_per_node` as a stored version of the PR has it); where only its description
//! and tests are known (40576, 39845) the rule is the simplest reading of them and every
//! choice it makes is listed in [`Proposal::assumptions`], printed with every replay
//! that runs it.

use serde::{Deserialize, Serialize};

/// An open upstream PR's rule set on top of 0.5.23.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Proposal {
    /// sglang PR 39395 (open), `--hicache-serialize-load-back`: a load-back from host
    /// loads and acks one radix node at a time.
    SerializeLoadBack,
    /// sglang PR 40576 (open), `--hicache-write-back-threshold`: under write_back, device
    /// KV above a watermark is backed up to host ahead of its eviction.
    WriteBackWatermark,
    /// sglang PR 39845 (open): opt-in exclusive L2→L3 tiering, storage written from host
    /// pages as they leave the host tier instead of at their host admission, and cache-mode
    /// L3 writes deduplicated through the storage existence cache.
    ExclusiveL3,
}

/// How a load-back from host reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadBackMode {
    /// Every release: the whole matched host span is allocated at once (its shortfall
    /// evicted once), copied as one batch that overlaps the forward layer by layer, and
    /// acked at the next scheduler iteration (`unified_radix_cache.py:
    /// _load_back_transfers`, 0.5.19–0.5.23).
    #[default]
    Batched,
    /// sglang PR 39395 `_load_back_per_node`: root-first, one radix node per step, each
    /// step evicting only its own shortfall and acked at once (`loading_check(finish_count=1)`),
    /// so an earlier step's host copy is already a reclaimable duplicate when a later step
    /// evicts; a failed step leaves the earlier ones on the device and the request
    /// recomputes. The copies are synchronous inside admission: no overlap with the
    /// forward.
    SerializedPerNode,
}

/// When write_back copies device KV to host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteBackTrigger {
    /// Every release: at device eviction (`_evict_write_back`).
    #[default]
    AtEviction,
    /// sglang PR 40576: at each scheduler iteration, when the device pages not backed up
    /// exceed the threshold × the device pool, the least recently used of them are
    /// backed up (they stay on the device, a host duplicate), down to the watermark;
    /// eviction stays the fallback. The threshold is the scenario's
    /// `server.hicache_write_back_threshold` ([`DEFAULT_WRITE_BACK_THRESHOLD`]).
    Watermark,
}

/// When a cache-mode L3 write happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum L3WriteRule {
    /// Every release: at the host admission of a page, after its D2H ack
    /// (`_finish_write_through_ack` → `write_backup_storage`): L3 holds a superset of L2.
    #[default]
    AtHostAdmission,
    /// sglang PR 39845: written when the page is evicted from host (coldest first), and
    /// skipped when storage already holds it: L3 an overflow tier of L2.
    AtHostEviction,
}

/// The default watermark of [`Proposal::WriteBackWatermark`] when the scenario sets no
/// `server.hicache_write_back_threshold`: the value of the PR's own test
/// (`test_proactive_write_back_preserves_kv_on_gpu_round_trip`); the PR publishes no
/// default other than 1 (today's behaviour).
pub const DEFAULT_WRITE_BACK_THRESHOLD: f64 = 0.7;

impl Proposal {
    pub const ALL: [Proposal; 3] = [
        Proposal::SerializeLoadBack,
        Proposal::WriteBackWatermark,
        Proposal::ExclusiveL3,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Proposal::SerializeLoadBack => "pr39395",
            Proposal::WriteBackWatermark => "pr40576",
            Proposal::ExclusiveL3 => "pr39845",
        }
    }

    /// Parses an id or its PR number (`39395`, `#39395`).
    pub fn from_id(s: &str) -> Option<Proposal> {
        let t = s.trim().trim_start_matches('#').to_ascii_lowercase();
        Self::ALL
            .into_iter()
            .find(|p| p.id() == t || p.id().strip_prefix("pr") == Some(t.as_str()))
    }

    /// The PR's address.
    pub fn url(self) -> &'static str {
        match self {
            Proposal::SerializeLoadBack => "https://github.com/sgl-project/sglang/pull/39395",
            Proposal::WriteBackWatermark => "https://github.com/sgl-project/sglang/pull/40576",
            Proposal::ExclusiveL3 => "https://github.com/sgl-project/sglang/pull/39845",
        }
    }

    /// One line for `hicache-sim versions`.
    pub fn summary(self) -> &'static str {
        match self {
            Proposal::SerializeLoadBack => {
                "#39395 (open): 0.5.23 with --hicache-serialize-load-back: a host hit is loaded and acked one radix node at a time, each node evicting only its own shortfall; synchronous in admission (no overlap with the forward)"
            }
            Proposal::WriteBackWatermark => {
                "#40576 (open): 0.5.23 with --hicache-write-back-threshold (default here 0.7): under write_back, device KV not backed up above the watermark is copied to host each iteration, so eviction finds duplicates"
            }
            Proposal::ExclusiveL3 => {
                "#39845 (open): 0.5.23 with exclusive L2->L3 tiering: storage written from host pages as they are evicted (skipped if storage holds them), not at host admission"
            }
        }
    }

    /// What the rule set chooses where the PR's code is not known: printed with every
    /// replay that runs it.
    pub fn assumptions(self) -> &'static str {
        match self {
            Proposal::SerializeLoadBack => {
                "the rule follows the PR's `_load_back_per_node` as stored at sglang f6984249 (possibly not its final state); the per-node synchronisation cost is not published and is 0 here; --allow-subagent-keepalive is not modelled"
            }
            Proposal::WriteBackWatermark => {
                "the PR's code is not public in the stored sources: the hook (each scheduler iteration), what occupancy means (device pages not backed up over the device pool), the order (least recently used device leaves first) and the default 0.7 (the PR's test) are this simulator's reading; the L2->L3 half of the PR is not modelled"
            }
            Proposal::ExclusiveL3 => {
                "the PR's code and flag name are not public in the stored sources: L3 is written at host eviction (no earlier lead), an L3 hit is not moved out of L3, and the host copy is freed only by host eviction"
            }
        }
    }
}
