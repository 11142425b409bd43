//! Replay memoisation across sweep points. Many points of a sweep resolve
//! to the same effective replay: the axis moved only start-up inputs (a seed, a
//! memory figure the pool sizing clamps away, ...), so the device and host page
//! capacities, policies and page size come out the same. The replay is a pure function
//! of the *resolved* [`ReplayConfig`], the trace's content and the runtime section's
//! read options (no randomness: the seed drives only the start-up Monte Carlo), so each
//! distinct key is replayed once and its metrics shared by every point with that key.
//!
//! Deterministic for any thread count: a key's cell is filled once (`OnceLock`; a
//! second point with that key waits for the first) with exactly what a replay of its
//! own would return, errors included. Off until [`enable`] (a single `replay` has one
//! point); the sweep turns it on unless `HICACHE_SIM_NO_REPLAY_MEMO` is set (the test
//! that memoisation changes no byte of the CSV compares the two).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::run_replay;
use crate::error::InputError;
use crate::runtime::{ReplayConfig, ReplayMetrics};
use crate::scenario::RuntimeSection;

type Cell = Arc<OnceLock<Result<ReplayMetrics, InputError>>>;

struct Memo {
    /// Canonical key → the replay's result.
    replays: BTreeMap<String, Cell>,
    /// Trace path → content hash (hashed once per path and run: a sweep already
    /// treats its traces as fixed, its provenance records their hashes up front).
    hashes: BTreeMap<PathBuf, u64>,
}

static MEMO: Mutex<Option<Memo>> = Mutex::new(None);
static REPLAYS: AtomicU64 = AtomicU64::new(0);
static LOOKUPS: AtomicU64 = AtomicU64::new(0);

/// Memoise replays from now on (sweeps).
pub fn enable() {
    let mut g = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = Some(Memo {
            replays: BTreeMap::new(),
            hashes: BTreeMap::new(),
        });
    }
}

/// `(replays actually run, replays asked for)` through [`replay`] since start.
pub fn stats() -> (u64, u64) {
    (
        REPLAYS.load(Ordering::Relaxed),
        LOOKUPS.load(Ordering::Relaxed),
    )
}

/// The canonical key of a replay: everything its result depends on. The config is
/// serialised whole (struct field order is fixed), so any field an axis reaches is in
/// it; the trace enters by path (errors name it) and content hash.
pub fn key(section: &RuntimeSection, cfg: &ReplayConfig, content_hash: u64) -> String {
    let cfg = serde_json::to_string(cfg).expect("config serializes");
    // The router's keys, when engines are behind one (absent: the key as before).
    let router = section
        .router
        .as_ref()
        .map(|r| {
            format!(
                " router={}",
                serde_json::to_string(r).expect("router serializes")
            )
        })
        .unwrap_or_default();
    // A PD deployment's keys and its decode server (absent: the key as before).
    let pd = section
        .pd
        .as_ref()
        .map(|p| {
            format!(
                " pd={} decode={}",
                serde_json::to_string(p).expect("pd serializes"),
                serde_json::to_string(&p.decode).expect("decode server serializes")
            )
        })
        .unwrap_or_default();
    format!(
        "trace={:?} hash={content_hash:016x} format={:?} block={:?} max_requests={:?} slowdown={:?} engine={:?}{router}{pd} cfg={cfg}",
        section.trace,
        section.trace_format,
        section.block_size,
        section.max_requests,
        section.slowdown_factor,
        section.engine
    )
}

/// [`run_replay`], memoised when [`enable`]d.
pub fn replay(section: &RuntimeSection, cfg: &ReplayConfig) -> Result<ReplayMetrics, InputError> {
    LOOKUPS.fetch_add(1, Ordering::Relaxed);
    let run = || {
        REPLAYS.fetch_add(1, Ordering::Relaxed);
        run_replay(section, cfg)
    };
    let cell = {
        let mut g = MEMO.lock().unwrap_or_else(|e| e.into_inner());
        let (Some(memo), Some(path)) = (g.as_mut(), section.trace.as_deref()) else {
            drop(g);
            return run();
        };
        let path = PathBuf::from(path);
        let hash = match memo.hashes.get(&path) {
            Some(&h) => h,
            None => match crate::fingerprint::content_hash(&path) {
                Ok(h) => *memo.hashes.entry(path).or_insert(h),
                // Unreadable: the replay itself reports it, per point.
                Err(_) => {
                    drop(g);
                    return run();
                }
            },
        };
        Arc::clone(memo.replays.entry(key(section, cfg, hash)).or_default())
    };
    cell.get_or_init(run).clone()
}
