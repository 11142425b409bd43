//! State shared by the timed and untimed replays: the tree, the L3
//! store, the prefetch budget, and the metric accumulators.

use crate::cache::{HiRadixTree, HostMemoryMode, TreeConfig, TreeRules};

use super::config::ReplayConfig;
use super::l3_store::StoreHandle;
use super::metrics::{ReplayMetrics, TimelinePoint};

/// Per-request hit split, in pages.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Hits {
    pub device: u64,
    pub host: u64,
    pub storage: u64,
    /// Pages the request's L3 prefetch added to the host tier.
    pub fetched: u64,
}

pub(crate) struct Session<R: TreeRules> {
    pub cfg: ReplayConfig,
    pub tree: HiRadixTree<R>,
    /// Its L3 store: its own, or one its deployment's schedulers share
    /// ([`super::l3_store`]).
    pub storage: Option<StoreHandle>,
    pub m: ReplayMetrics,
    pub ps: u64,
    /// `prefetch_tokens_occupied`.
    pub prefetch_occupied: u64,
    pub prefetch_limit: u64,
    pub timeline_stride: u64,
    pub device_hit_pages: u64,
    pub host_hit_pages: u64,
    pub storage_hit_pages: u64,
    /// Scratch for a backup's pages on their way to L3 (`HiRadixTree::backup_span`).
    pub span: Vec<crate::cache::PageKey>,
}

impl<R: TreeRules> Session<R> {
    pub fn new(cfg: &ReplayConfig) -> Self {
        let host_tier = cfg.policy.host_memory_mode == HostMemoryMode::Cache;
        let l3_at_host_eviction = host_tier
            && cfg.has_storage()
            && cfg.policy.l3_write == crate::release::proposal::L3WriteRule::AtHostEviction;
        let tree = HiRadixTree::new(TreeConfig {
            l1_pages: cfg.capacities.l1_pages,
            l2_pages: if host_tier {
                cfg.capacities.l2_pages
            } else {
                0
            },
            page_size: cfg.capacities.page_size,
            write_policy: cfg.effective_write_policy(),
            eviction_policy: cfg.policy.eviction_policy,
            evict_host_rule: cfg.policy.evict_host_rule,
            evict_version: cfg.policy.evict_version,
            device_evict_amount: cfg.policy.device_evict_amount,
            host_tier,
            load_back_threshold: cfg.policy.load_back_threshold,
            // An L3 written at host eviction (the what-if of sglang PR 39845) takes no
            // host pin at the backup: nothing is written then.
            storage_backup_pins: cfg.has_storage() && host_tier && !l3_at_host_eviction,
            buffer_storage_intents: !host_tier
                && cfg.policy.storage_write_gate
                    == crate::release::StorageWriteGate::WriteThreshold,
            serialize_load_back: cfg.serializes_load_back() && R::KIND == cfg.policy.tree,
            l3_at_host_eviction,
            debug_checks: cfg.measurement.debug_checks,
        });
        Self {
            cfg: cfg.clone(),
            tree,
            storage: cfg
                .has_storage()
                .then(|| StoreHandle::new(cfg.l3_capacity())),
            m: ReplayMetrics::default(),
            ps: u64::from(cfg.capacities.page_size),
            prefetch_occupied: 0,
            prefetch_limit: cfg.prefetch_capacity_limit_tokens(),
            timeline_stride: 1,
            device_hit_pages: 0,
            host_hit_pages: 0,
            storage_hit_pages: 0,
            span: Vec::new(),
        }
    }

    /// Reads and writes `store`, which other schedulers share, instead of its own L3
    /// (nothing without an L3 tier). Before its first request.
    pub fn share_store(&mut self, store: StoreHandle) {
        if self.storage.is_some() {
            self.storage = Some(store);
        }
    }

    /// A handle on its L3 store for another scheduler to share.
    pub fn store_to_share(&self) -> Option<StoreHandle> {
        self.storage.as_ref().map(StoreHandle::share)
    }

    /// Gives `sessions` (engines of `ranks` each, engine-major) the L3 stores their
    /// `l3_scope` says they share ([`super::l3_store::share_stores`]).
    pub fn share_stores(sessions: &mut [Self], ranks: usize) {
        let Some((scope, nodes)) = sessions
            .first()
            .map(|s| (s.cfg.capacities.l3_scope, s.cfg.capacities.nodes))
        else {
            return;
        };
        let mut engines: Vec<&mut [Self]> = sessions.chunks_mut(ranks.max(1)).collect();
        super::l3_store::share_stores(
            scope,
            nodes,
            &mut engines,
            Self::store_to_share,
            Self::share_store,
        );
    }

    /// Pages a buffer_only prefetch may stage now: the budget staged prefetches do not
    /// hold yet (`prefetch_capacity_limit - prefetch_tokens_occupied`, in whole pages),
    /// the same rule in both replays (the untimed one never holds a prefetch across
    /// requests, so its room is the whole budget). A hit larger than the room is staged
    /// in part; 0.5.23 allocates the whole hit or parks the prefetch
    /// (`buffer_mode/pipeline.py: _allocate_prefetch_host_indices`,
    /// `allocate_storage_hit(allow_partial=False)`) — not modelled.
    pub fn staging_room_pages(&self) -> u64 {
        (self.prefetch_limit - self.prefetch_occupied) / self.ps
    }

    pub fn bytes(&self, pages: u64) -> u64 {
        pages * self.ps * self.cfg.capacities.bytes_per_token
    }

    /// Counts one request's hits (after warm-up).
    pub fn record(&mut self, index: u64, input_tokens: u32, whole_pages: u64, h: Hits) {
        self.m.requests = self.m.requests.max(index + 1);
        if index < self.cfg.measurement.warmup_requests {
            return;
        }
        let ps = self.ps;
        let m = &mut self.m;
        m.measured_requests += 1;
        m.input_tokens += u64::from(input_tokens);
        m.input_pages += whole_pages;
        m.device_hit_tokens += h.device * ps;
        m.host_hit_tokens += h.host * ps;
        m.storage_hit_tokens += h.storage * ps;
        m.miss_tokens += u64::from(input_tokens) - (h.device + h.host + h.storage) * ps;
        self.device_hit_pages += h.device;
        self.host_hit_pages += h.host;
        self.storage_hit_pages += h.storage;
    }

    /// Adds a timeline point every `timeline_stride` requests; halves the series and
    /// doubles the stride when it grows past twice `timeline_samples` (streaming).
    pub fn sample(&mut self, index: u64, time_ns: u64) {
        let want = u64::from(self.cfg.measurement.timeline_samples);
        if want == 0 || !(index + 1).is_multiple_of(self.timeline_stride) {
            return;
        }
        let m = &self.m;
        let r = |n: u64| {
            if m.input_tokens == 0 {
                0.0
            } else {
                n as f64 / m.input_tokens as f64
            }
        };
        let point = TimelinePoint {
            request_index: index + 1,
            time_ns,
            host_device_resident_pages: self.tree.host_device_resident_pages(),
            host_only_pages: self.tree.host_only_pages(),
            device_pages: self.tree.device_used(),
            device_hit_rate: r(m.device_hit_tokens),
            host_hit_rate: r(m.host_hit_tokens),
            storage_hit_rate: r(m.storage_hit_tokens),
            total_hit_rate: r(m.device_hit_tokens + m.host_hit_tokens + m.storage_hit_tokens),
        };
        self.m.timeline.push(point);
        if self.m.timeline.len() as u64 >= 2 * want {
            let mut i = 0;
            self.m.timeline.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.timeline_stride *= 2;
        }
    }

    /// Writes `pages` to L3 (after a D2H ack, or through the bounce buffer); returns
    /// the pages storage did not hold.
    pub fn write_storage(&mut self, pages: &[crate::cache::PageKey]) -> u64 {
        if let Some(s) = self.storage.as_ref() {
            let new = s.get().write(pages);
            self.m.l3_write_bytes += new * self.ps * self.cfg.capacities.bytes_per_token;
            new
        } else {
            0
        }
    }

    /// The what-if of sglang PR 39845: the pages whose host copies the tree freed since
    /// the last call go to L3, less those it already holds (the storage existence
    /// cache). Returns the pages written.
    pub fn write_host_evictions(&mut self) -> u64 {
        let mut pages = std::mem::take(&mut self.span);
        pages.clear();
        self.tree.take_host_evictions(&mut pages);
        let new = if pages.is_empty() {
            0
        } else {
            self.write_storage(&pages)
        };
        self.span = pages;
        new
    }

    /// The pages a `buffer_only` request writes to storage through the bounce buffer
    /// (`storage_write_gate`): `every_backup` writes the pages it added (`new`);
    /// `write_threshold` the paths of the tree's backup intents
    /// (`BufferModePipeline.enqueue_backup_intent`), less the pages storage already
    /// holds (`StorageExistenceCache`). Returns the pages to move (D2H, then L3).
    pub fn buffer_writes(
        &mut self,
        new: &[crate::cache::PageKey],
        out: &mut Vec<crate::cache::PageKey>,
    ) {
        out.clear();
        match self.cfg.policy.storage_write_gate {
            crate::release::StorageWriteGate::EveryBackup => out.extend_from_slice(new),
            crate::release::StorageWriteGate::WriteThreshold => {
                self.tree.take_storage_intents(out);
                if let Some(st) = self.storage.as_ref() {
                    let st = st.peek();
                    out.retain(|&p| !st.contains(p));
                }
                out.sort_unstable();
                out.dedup();
            }
        }
    }

    /// Final counters from the tree and the store.
    pub fn finish(mut self) -> ReplayMetrics {
        let st = self.tree.stats;
        let ps = self.ps;
        let bpt = self.cfg.capacities.bytes_per_token;
        let m = &mut self.m;
        m.load_back_bytes = st.load_back_pages * ps * bpt;
        m.backup_bytes += st.backup_pages * ps * bpt;
        m.device_evicted_pages = st.device_evicted_pages;
        m.host_evicted_pages = st.host_evicted_pages;
        m.failed_backups = st.failed_backups;
        m.tokens_dropped_without_backup = st.dropped_pages_without_backup * ps;
        m.load_back_skipped_tokens = st.load_back_skipped_pages * ps;
        m.final_device_pages = self.tree.device_used();
        m.final_host_device_resident_pages = self.tree.host_device_resident_pages();
        m.final_host_only_pages = self.tree.host_only_pages();
        m.peak_host_device_resident_pages = st.peak_host_device_resident;
        m.peak_host_only_pages = st.peak_host_only;
        m.peak_host_pages = st.peak_host_used;
        // A shared store's figures once, from the scheduler that made it.
        if let Some(s) = self.storage.as_ref().filter(|s| s.reports()) {
            let s = s.peek();
            m.final_storage_pages = s.len();
            m.storage_evicted_pages = s.evicted_pages;
        }
        let (d, h, s) = (
            self.device_hit_pages,
            self.host_hit_pages,
            self.storage_hit_pages,
        );
        m.finish_rates(d, h, s);
        self.m
    }
}
