//! Cache-aware routing as sglang-router 0.3.2 implements it
//! (`src/policies/cache_aware.rs: CacheAwarePolicy::select_worker` and
//! `select_worker_min_load`), every worker healthy and one model (one tree).
//!
//! ```text
//! (min, max) = min and max of every worker's load
//! imbalanced = max - min > balance_abs_threshold  and  max (f32) > min (f32) * balance_rel_threshold
//! imbalanced: the first worker of least load (Iterator::min_by_key); the text still inserted
//! otherwise:  rate = matched chars / input chars (f32, 0 for an empty text)
//!             rate > cache_threshold: the tenant the match returns
//!             else:                   the first worker of least load
//!             the text inserted for the chosen worker
//! ```
//!
//! The doc comment atop the router's file says a miss goes to "the smallest tree"; its
//! code picks the least load, and so does this port. Thresholds are `f32` as in the
//! router's `CacheAwareConfig`.

use super::tree::ApproxTree;

/// Which branch of `select_worker` chose the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// Loads imbalanced: shortest queue.
    Imbalanced,
    /// Match rate above `cache_threshold`: the tree's tenant.
    Hit,
    /// Match rate at or below it: shortest queue.
    Miss,
}

/// The policy's state: its thresholds and its tree.
#[derive(Debug, Clone)]
pub struct CacheAware {
    pub cache_threshold: f32,
    pub balance_abs_threshold: u64,
    pub balance_rel_threshold: f32,
    pub tree: ApproxTree,
}

impl CacheAware {
    pub fn new(
        engines: u32,
        cache_threshold: f32,
        balance_abs_threshold: u64,
        balance_rel_threshold: f32,
    ) -> Self {
        Self {
            cache_threshold,
            balance_abs_threshold,
            balance_rel_threshold,
            tree: ApproxTree::new(engines),
        }
    }

    /// `select_worker`: the engine (slice position) for routing text `key` under the
    /// in-flight `loads`, and the branch taken; the tree is updated as the router does.
    pub fn select_worker(&mut self, loads: &[u32], key: &[u8]) -> (u16, Branch) {
        let min = loads.iter().copied().min().unwrap_or(0);
        let max = loads.iter().copied().max().unwrap_or(0);
        let imbalanced = u64::from(max.saturating_sub(min)) > self.balance_abs_threshold
            && (max as f32) > (min as f32) * self.balance_rel_threshold;
        let (engine, branch) = if imbalanced {
            (first_least_loaded(loads), Branch::Imbalanced)
        } else {
            let m = self.tree.prefix_match_with_counts(key);
            let rate = if m.input_chars == 0 {
                0.0
            } else {
                m.matched_chars as f32 / m.input_chars as f32
            };
            match m.tenant {
                // A positive rate has matched at least one edge, so a tenant.
                Some(t) if rate > self.cache_threshold => (t, Branch::Hit),
                _ => (first_least_loaded(loads), Branch::Miss),
            }
        };
        self.tree.insert(key, engine);
        (engine, branch)
    }
}

/// `healthy_indices.iter().min_by_key(load)`: the first of the least loaded.
pub fn first_least_loaded(loads: &[u32]) -> u16 {
    let mut best = 0usize;
    for (i, &l) in loads.iter().enumerate() {
        if l < loads[best] {
            best = i;
        }
    }
    best as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_miss_and_imbalance_branches() {
        // thresholds 0.5 / abs 1 / rel 1.5
        let mut p = CacheAware::new(2, 0.5, 1, 1.5);
        // empty tree: rate 0, a miss to the first least loaded of [0, 0]: engine 0
        assert_eq!(p.select_worker(&[0, 0], b"11 12 13"), (0, Branch::Miss));
        // "11 12 14" matches "11 12 1" = 7 of 8 chars: 0.875 > 0.5, engine 0 although
        // it is the busier one (1 vs 0; max - min = 1 is not above abs 1)
        assert_eq!(p.select_worker(&[1, 0], b"11 12 14"), (0, Branch::Hit));
        // "11 9" matches "11 " = 3 of 4: 0.75 > 0.5 -> engine 0
        assert_eq!(p.select_worker(&[1, 0], b"11 9"), (0, Branch::Hit));
        // "2 3 4 5" matches nothing: a miss to the least loaded, engine 1 (loads [1, 0]:
        // balanced)
        assert_eq!(p.select_worker(&[1, 0], b"2 3 4 5"), (1, Branch::Miss));
        // loads [2, 0] are imbalanced: 2 - 0 > 1 and 2 > 0 * 1.5
        assert_eq!(
            p.select_worker(&[2, 0], b"2 3 4 6"),
            (1, Branch::Imbalanced)
        );
        // loads [3, 0]: 3 - 0 > 1 and 3 > 0 * 1.5: imbalanced, engine 1 even for a hit
        assert_eq!(
            p.select_worker(&[3, 0], b"11 12 13"),
            (1, Branch::Imbalanced)
        );
        // ... and the text was inserted for engine 1, but "11 12 13" was created by 0
        assert_eq!(p.tree.prefix_match_with_counts(b"11 12 13").tenant, Some(0));
        // rate exactly at the threshold is a miss: "2 3 9 9" matches "2 3 " = 4 of 8
        assert_eq!(p.select_worker(&[0, 0], b"2 3 9 99"), (0, Branch::Miss));
    }

    #[test]
    fn first_of_the_least_loaded() {
        assert_eq!(first_least_loaded(&[2, 1, 1, 3]), 1);
        assert_eq!(first_least_loaded(&[0, 0]), 0);
    }
}
