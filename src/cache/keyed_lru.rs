//! A plain LRU keyed by 64-bit page hashes: an open-addressing table holding only the
//! *resident* pages (bounded by the capacity) whose entries are the LRU list's nodes
//! themselves (key, previous, next: 16 bytes, four to a cache line). This is how
//! libCacheSim keeps its LRU (a map of the resident objects with list links); an index
//! by dense page id instead needs every distinct page ever seen interned first, whose
//! map grows with the trace and misses the CPU caches once it holds millions of pages.
//! One table for the index and the list: a hit reads the page's home line and its two
//! neighbours, nothing else (a map to a separate slab read a control byte, a bucket and
//! a slot first). The home line of a page can be fetched ahead ([`KeyedLru::prefetch`]).
//! Not SGLang's eviction (SGLang evicts radix-tree leaves only): used for
//! `lru_mode: plain_page` and as the L3 store's own order.

/// End of the list (no previous / no next entry).
const NIL: u32 = u32::MAX;
/// `prev` of an empty table entry.
const EMPTY: u32 = u32::MAX - 1;

#[derive(Debug, Clone, Copy)]
struct Node {
    key: u64,
    /// Table position of the more recently used neighbour (`NIL` at the head), or
    /// `EMPTY` for an unused entry.
    prev: u32,
    /// Table position of the less recently used neighbour (`NIL` at the tail).
    next: u32,
}

const VACANT: Node = Node {
    key: 0,
    prev: EMPTY,
    next: NIL,
};

/// LRU set of page hashes with a capacity in pages (`u64::MAX` = unbounded).
#[derive(Debug, Clone)]
pub struct KeyedLru {
    /// Linear probing, at most 2/5 full (short probe runs: a deletion scans its run to
    /// the end); a power of two long.
    table: Vec<Node>,
    /// `64 - log2(table.len())`: a key's home is the top bits of its Fibonacci hash.
    shift: u32,
    len: u64,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    capacity: u64,
}

/// Pages the table is sized for up front: the capacity, up to this many (larger LRUs,
/// and unbounded ones, grow on demand, doubling).
const RESERVE_MAX: u64 = 1 << 16;

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
            head: NIL,
            tail: NIL,
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
        (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// `Ok(position)` of `k`, else `Err(first empty position of its probe)`.
    #[inline]
    fn find(&self, k: u64) -> Result<usize, usize> {
        let mask = self.mask();
        let mut i = self.home(k);
        loop {
            let n = &self.table[i];
            if n.prev == EMPTY {
                return Err(i);
            }
            if n.key == k {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Asks the CPU to start loading `k`'s home line (a hint: no effect on the
    /// contents). What a replay calls for the pages of requests a few ahead, so their
    /// cache misses overlap with the work on the current one.
    #[inline]
    pub fn prefetch(&self, k: u64) {
        prefetch_read(&self.table[self.home(k)]);
    }

    fn unlink(&mut self, s: u32) {
        let Node { prev, next, .. } = self.table[s as usize];
        if prev != NIL {
            self.table[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.table[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    fn push_front(&mut self, s: u32) {
        let head = self.head;
        let n = &mut self.table[s as usize];
        n.prev = NIL;
        n.next = head;
        if head != NIL {
            self.table[head as usize].prev = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    #[inline]
    fn move_to_front(&mut self, s: u32) {
        if self.head != s {
            self.unlink(s);
            self.push_front(s);
        }
    }

    /// Stores `k` at the empty position `at` as most recently used.
    fn put_front(&mut self, at: usize, k: u64) {
        self.table[at] = Node {
            key: k,
            prev: NIL,
            next: NIL,
        };
        self.len += 1;
        self.push_front(at as u32);
    }

    /// Empties position `i` (already unlinked): backward-shift deletion, moving later
    /// entries of the probe run into the hole and relinking their neighbours.
    fn vacate(&mut self, i: usize) {
        let mask = self.mask();
        let mut hole = i;
        let mut j = (i + 1) & mask;
        loop {
            let n = self.table[j];
            if n.prev == EMPTY {
                break;
            }
            let home = self.home(n.key);
            // `n` may fill the hole unless its home lies cyclically in (hole, j].
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(hole) & mask) {
                self.table[hole] = n;
                let h = hole as u32;
                if n.prev != NIL {
                    self.table[n.prev as usize].next = h;
                } else {
                    self.head = h;
                }
                if n.next != NIL {
                    self.table[n.next as usize].prev = h;
                } else {
                    self.tail = h;
                }
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.table[hole] = VACANT;
        self.len -= 1;
    }

    /// Doubles the table when one more page would fill it past 2/5, re-inserting the
    /// pages from the least recently used to the most (the order is kept).
    fn reserve_one(&mut self) {
        if 5 * (self.len + 1) <= 2 * self.table.len() as u64 {
            return;
        }
        let size = 2 * self.table.len();
        let old = std::mem::replace(&mut self.table, vec![VACANT; size]);
        self.shift = 64 - size.trailing_zeros();
        let mut at = self.tail;
        self.head = NIL;
        self.tail = NIL;
        self.len = 0;
        while at != NIL {
            let n = old[at as usize];
            let e = self.find(n.key).expect_err("keys are distinct");
            self.put_front(e, n.key);
            at = n.prev;
        }
    }

    /// Marks `k` most recently used if present; returns whether it was.
    #[inline]
    pub fn touch(&mut self, k: u64) -> bool {
        match self.find(k) {
            Ok(s) => {
                self.move_to_front(s as u32);
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
                self.move_to_front(s as u32);
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

    /// Removes `k`; returns whether it was present.
    pub fn remove(&mut self, k: u64) -> bool {
        let Ok(s) = self.find(k) else {
            return false;
        };
        self.unlink(s as u32);
        self.vacate(s);
        true
    }

    /// Removes and returns the least recently used page.
    pub fn pop_lru(&mut self) -> Option<u64> {
        if self.tail == NIL {
            return None;
        }
        let s = self.tail;
        let k = self.table[s as usize].key;
        self.unlink(s);
        self.vacate(s as usize);
        // The next page to evict is the new tail's predecessor: its line is fetched
        // now (the new tail's own line was just written by the unlink).
        if self.tail != NIL {
            let p = self.table[self.tail as usize].prev;
            if p != NIL {
                prefetch_read(&self.table[p as usize]);
            }
        }
        Some(k)
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
