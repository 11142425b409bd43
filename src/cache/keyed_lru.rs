//! A plain LRU keyed by 64-bit page hashes: an open-addressing table holding only the
//! *resident* pages (bounded by the capacity), each with the time of its last use, and
//! a queue of uses in time order. The least recently used page is the queue's oldest
//! entry whose time is still its page's: an entry a later use of the same page (or its
//! removal) made stale is skipped. This is exact LRU, as a doubly-linked list is, without
//! the list: a hit writes its own entry and appends to the queue, where a list's
//! move-to-front also writes both neighbours — two more cache misses anywhere in the
//! table once it is larger than the CPU's caches (libCacheSim keeps such a list). The
//! queue is read in order, so the entries the next evictions will check are fetched
//! ahead, and a page's home line can be fetched ahead by the replay
//! ([`KeyedLru::prefetch`]). An index by dense page id instead needs every distinct page
//! ever seen interned first, whose map grows with the trace. Not SGLang's eviction
//! (SGLang evicts radix-tree leaves only): used for `lru_mode: plain_page` and as the L3
//! store's own order.

use std::collections::VecDeque;

/// `stamp` of an empty table entry (uses are stamped from 1).
const EMPTY: u64 = 0;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    /// The time of the page's last use, or `EMPTY`.
    stamp: u64,
}

const VACANT: Entry = Entry {
    key: 0,
    stamp: EMPTY,
};

/// One use: the page and its time (stale once the page is used again or leaves).
#[derive(Debug, Clone, Copy)]
struct Use {
    key: u64,
    stamp: u64,
}

/// Queue entries ahead of the front whose home lines an eviction fetches.
const EVICT_AHEAD: usize = 8;

/// LRU set of page hashes with a capacity in pages (`u64::MAX` = unbounded).
#[derive(Debug, Clone)]
pub struct KeyedLru {
    /// Linear probing, at most 2/5 full (short probe runs: a deletion scans its run to
    /// the end); a power of two long.
    table: Vec<Entry>,
    /// `64 - log2(table.len())`: a key's home is the top bits of its Fibonacci hash.
    shift: u32,
    len: u64,
    /// Uses, oldest first: every resident page's last use is here, with stale ones
    /// between (at most about twice the resident pages: [`Self::compact`]).
    uses: VecDeque<Use>,
    /// The last stamp given.
    clock: u64,
    capacity: u64,
}

/// Pages the table is sized for up front: the capacity, up to this many (larger LRUs,
/// and unbounded ones, grow on demand, doubling).
const RESERVE_MAX: u64 = 1 << 16;

/// Stale uses the queue may hold beyond twice the resident pages before they are
/// dropped (so a cache that only hits does not grow its queue without bound).
const STALE_SLACK: usize = 1024;

impl KeyedLru {
    pub fn new(capacity: u64) -> Self {
        // Room for the capacity plus the one page `insert_absent` holds before it
        // evicts, at most 2/5 full.
        let reserve = capacity.saturating_add(1).min(RESERVE_MAX);
        let size = (reserve * 5).div_ceil(2).next_power_of_two().max(8);
        Self {
            table: vec![VACANT; size as usize],
            shift: 64 - size.trailing_zeros(),
            len: 0,
            uses: VecDeque::with_capacity((2 * reserve as usize).min(1 << 20)),
            clock: 0,
            capacity,
        }
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn contains(&self, k: u64) -> bool {
        self.find(k).is_ok()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    /// A key's home position (Fibonacci hashing: the product's top bits).
    #[inline]
    fn home(&self, k: u64) -> usize {
        home(k, self.shift)
    }

    /// `Ok(position)` of `k`, else `Err(first empty position of its probe)`.
    #[inline]
    fn find(&self, k: u64) -> Result<usize, usize> {
        find(&self.table, self.shift, k)
    }

    /// Asks the CPU to start loading `k`'s home line (a hint: no effect on the
    /// contents). What a replay calls for the pages of requests a few ahead, so their
    /// cache misses overlap with the work on the current one.
    #[inline]
    pub fn prefetch(&self, k: u64) {
        prefetch_read(&self.table[self.home(k)]);
    }

    /// A new use of the page at position `at`, now the most recently used.
    #[inline]
    fn stamp(&mut self, at: usize) {
        self.clock += 1;
        let e = &mut self.table[at];
        e.stamp = self.clock;
        self.uses.push_back(Use {
            key: e.key,
            stamp: self.clock,
        });
        if self.uses.len() > 2 * self.len as usize + STALE_SLACK {
            self.compact();
        }
    }

    /// Drops the stale uses (each page's last use stays, in order): linear in the queue,
    /// and at most once per `len + STALE_SLACK` uses.
    #[cold]
    fn compact(&mut self) {
        let (table, shift) = (&self.table, self.shift);
        self.uses
            .retain(|u| matches!(find(table, shift, u.key), Ok(i) if table[i].stamp == u.stamp));
    }

    /// Stores `k` at the empty position `at` as most recently used.
    fn put_front(&mut self, at: usize, k: u64) {
        self.table[at] = Entry {
            key: k,
            stamp: EMPTY,
        };
        self.len += 1;
        self.stamp(at);
    }

    /// Empties position `i`: backward-shift deletion, moving later entries of the probe
    /// run into the hole (a page's queue entries name its key, not its position, so
    /// nothing else changes).
    fn vacate(&mut self, i: usize) {
        let mask = self.mask();
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let n = self.table[j];
            if n.stamp == EMPTY {
                break;
            }
            let home = self.home(n.key);
            // `n` may fill the hole unless its home lies cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.table[hole] = n;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.table[hole] = VACANT;
        self.len -= 1;
    }

    /// Doubles the table when one more page would fill it past 2/5, re-inserting the
    /// resident pages with their stamps (the order is the stamps': kept).
    fn reserve_one(&mut self) {
        if 5 * (self.len + 1) <= 2 * self.table.len() as u64 {
            return;
        }
        let size = 2 * self.table.len();
        let old = std::mem::replace(&mut self.table, vec![VACANT; size]);
        self.shift = 64 - size.trailing_zeros();
        for e in old.into_iter().filter(|e| e.stamp != EMPTY) {
            let at = self.find(e.key).expect_err("keys are distinct");
            self.table[at] = e;
        }
    }

    /// Marks `k` most recently used if present; returns whether it was.
    #[inline]
    pub fn touch(&mut self, k: u64) -> bool {
        match self.find(k) {
            Ok(s) => {
                self.stamp(s);
                true
            }
            Err(_) => false,
        }
    }

    /// Inserts `k`, which must not be present, as most recently used. When over
    /// capacity, evicts and returns the least recently used page; a zero-capacity LRU
    /// stores nothing and returns `k` itself.
    pub fn insert_absent(&mut self, k: u64) -> Option<u64> {
        if self.capacity == 0 {
            return Some(k);
        }
        self.reserve_one();
        // Checked on the insert's own probe (no second lookup): kept in release builds.
        let at = match self.find(k) {
            Ok(_) => panic!("insert_absent of a present key {k}"),
            Err(at) => at,
        };
        self.put_front(at, k);
        if self.len > self.capacity {
            self.pop_lru()
        } else {
            None
        }
    }

    /// [`Self::touch`], else [`Self::insert_absent`], in one probe on a hit (a miss at
    /// full capacity first evicts the LRU page, then probes again for the new one).
    /// `Err(evicted)` on a miss.
    #[inline]
    pub fn access(&mut self, k: u64) -> Result<(), Option<u64>> {
        if self.capacity == 0 {
            return Err(Some(k));
        }
        let at = match self.find(k) {
            Ok(s) => {
                self.stamp(s);
                return Ok(());
            }
            Err(at) => at,
        };
        if self.len >= self.capacity {
            // Evicting may shift entries of `k`'s probe run: probe again after it.
            let old = self.pop_lru();
            let at = self.find(k).expect_err("k is absent");
            self.put_front(at, k);
            Err(old)
        } else {
            let size = self.table.len();
            self.reserve_one();
            // The table was rebuilt: `k`'s empty position moved.
            let at = if self.table.len() != size {
                self.find(k).expect_err("k is absent")
            } else {
                at
            };
            self.put_front(at, k);
            Err(None)
        }
    }

    /// Inserts `k` as most recently used, or touches it (see [`Self::insert_absent`]).
    pub fn insert(&mut self, k: u64) -> Option<u64> {
        if self.touch(k) {
            None
        } else {
            self.insert_absent(k)
        }
    }

    /// Removes `k`; returns whether it was present (its queue entries go stale).
    pub fn remove(&mut self, k: u64) -> bool {
        let Ok(s) = self.find(k) else {
            return false;
        };
        self.vacate(s);
        true
    }

    /// Removes and returns the least recently used page: the oldest use still current.
    pub fn pop_lru(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        while let Some(u) = self.uses.pop_front() {
            // The page the eviction some entries from now checks: its line is fetched
            // now, so the checks do not wait on memory one after another.
            if let Some(a) = self.uses.get(EVICT_AHEAD) {
                prefetch_read(&self.table[self.home(a.key)]);
            }
            if let Ok(i) = self.find(u.key)
                && self.table[i].stamp == u.stamp
            {
                self.vacate(i);
                return Some(u.key);
            }
        }
        unreachable!("a resident page's last use is queued")
    }
}

/// A key's home position in a table of `64 - shift` bits (Fibonacci hashing: the
/// product's top bits).
#[inline]
fn home(k: u64, shift: u32) -> usize {
    (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// `Ok(position)` of `k` in `table`, else `Err(first empty position of its probe)`.
#[inline]
fn find(table: &[Entry], shift: u32, k: u64) -> Result<usize, usize> {
    let mask = table.len() - 1;
    let mut i = home(k, shift);
    loop {
        let n = &table[i];
        if n.stamp == EMPTY {
            return Err(i);
        }
        if n.key == k {
            return Ok(i);
        }
        i = (i + 1) & mask;
    }
}

/// A read prefetch of the cache line holding `p`: a hint with no effect on memory.
#[inline(always)]
fn prefetch_read<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` only hints the cache; it never faults and reads or writes
    // nothing observable, and `p` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>((p as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent_and_reuses_slots() {
        let mut l = KeyedLru::new(2);
        assert_eq!(l.insert(10), None);
        assert_eq!(l.insert(20), None);
        assert!(l.touch(10));
        assert_eq!(l.insert(30), Some(20));
        assert!(l.touch(10) && l.touch(30) && !l.touch(20));
        assert_eq!(l.pop_lru(), Some(10));
        assert_eq!(l.len(), 1);
        assert_eq!(l.insert(40), None);
        assert_eq!(l.insert(50), Some(30));
        assert!(l.remove(40) && !l.remove(40));
        let mut z = KeyedLru::new(0);
        assert_eq!(z.insert(5), Some(5));
        assert!(z.is_empty());
    }

    #[test]
    fn access_equals_touch_then_insert() {
        // Same evictions and the same resident order as touch / insert_absent, over a
        // pseudo-random stream with repeats, at capacities 0..6.
        for cap in 0..6u64 {
            let (mut a, mut b) = (KeyedLru::new(cap), KeyedLru::new(cap));
            let mut x = 12345u64;
            for _ in 0..2000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let k = (x >> 33) % 9;
                let want = if b.touch(k) {
                    Ok(())
                } else {
                    Err(b.insert_absent(k))
                };
                assert_eq!(a.access(k), want, "cap {cap}");
            }
            let drain = |l: &mut KeyedLru| std::iter::from_fn(|| l.pop_lru()).collect::<Vec<_>>();
            assert_eq!(drain(&mut a), drain(&mut b));
        }
    }

    #[test]
    fn a_cache_that_only_hits_keeps_its_queue_bounded() {
        // 100,000 hits on three pages: the stale uses are dropped as they pile up, and
        // the order stays exact (2 was used last, 0 first).
        let mut l = KeyedLru::new(3);
        for k in 0..3 {
            assert_eq!(l.access(k), Err(None));
        }
        for i in 0..100_000u64 {
            assert_eq!(l.access(i % 3), Ok(()));
            assert!(l.uses.len() <= 2 * 3 + STALE_SLACK + 1, "{}", l.uses.len());
        }
        // The last use was 99,999 % 3 = 0, so 1 is the least recent, then 2.
        assert_eq!(l.access(7), Err(Some(1)));
        assert_eq!(l.pop_lru(), Some(2));
        assert_eq!(l.pop_lru(), Some(0));
        assert_eq!(l.pop_lru(), Some(7));
        assert_eq!(l.pop_lru(), None);
    }

    /// A reference LRU: a vector, most recent first.
    fn model_access(v: &mut Vec<u64>, cap: u64, k: u64) -> Result<(), Option<u64>> {
        if let Some(i) = v.iter().position(|&x| x == k) {
            v.remove(i);
            v.insert(0, k);
            return Ok(());
        }
        if cap == 0 {
            return Err(Some(k));
        }
        v.insert(0, k);
        Err(if v.len() as u64 > cap { v.pop() } else { None })
    }

    #[test]
    fn matches_a_reference_lru_through_growth_and_removal() {
        // Keys that collide in the table's home positions (multiples of a large power of
        // two), capacities below and above the initial table, removals in between.
        for cap in [1u64, 3, 7, 40, 300, u64::MAX] {
            let mut l = KeyedLru::new(cap);
            let mut v: Vec<u64> = Vec::new();
            let mut x = 99u64;
            for step in 0..20_000u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let r = x >> 33;
                let k = if r % 2 == 0 { (r % 500) << 40 } else { r % 500 };
                if step % 7 == 3 {
                    let want = v.iter().position(|&y| y == k).map(|i| v.remove(i));
                    assert_eq!(l.remove(k), want.is_some(), "cap {cap}");
                } else {
                    assert_eq!(l.access(k), model_access(&mut v, cap, k), "cap {cap}");
                }
                assert_eq!(l.len(), v.len() as u64);
                if step % 1000 == 0 {
                    assert!(v.iter().all(|&y| l.contains(y)));
                }
            }
            let drained: Vec<u64> = std::iter::from_fn(|| l.pop_lru()).collect();
            v.reverse();
            assert_eq!(drained, v, "cap {cap}");
        }
    }
}
