//! A plain LRU keyed by 64-bit page hashes: a hash map holding only the *resident* pages
//! (bounded by the capacity) over a slab of intrusive list links. This is how libCacheSim
//! keeps its LRU; an index by dense page id instead needs every distinct page ever seen
//! interned first, whose map grows with the trace and misses the CPU caches once it
//! holds millions of pages. Not SGLang's eviction (SGLang evicts radix-tree leaves
//! only): used for `lru_mode: plain_page` and as the L3 store's own order.

use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    prev: u32,
    next: u32,
}

/// LRU set of page hashes with a capacity in pages (`u64::MAX` = unbounded).
#[derive(Debug, Clone)]
pub struct KeyedLru {
    map: FxHashMap<u64, u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    capacity: u64,
}

/// Slots reserved up front: the capacity, up to this many (larger LRUs, and unbounded
/// ones, grow on demand).
const RESERVE_MAX: u64 = 1 << 16;

impl KeyedLru {
    pub fn new(capacity: u64) -> Self {
        let reserve = capacity.saturating_add(1).min(RESERVE_MAX) as usize;
        let mut map = FxHashMap::default();
        map.reserve(reserve);
        Self {
            map,
            slots: Vec::with_capacity(reserve),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity,
        }
    }
    pub fn len(&self) -> u64 {
        self.map.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn contains(&self, k: u64) -> bool {
        self.map.contains_key(&k)
    }

    fn unlink(&mut self, s: u32) {
        let Slot { prev, next, .. } = self.slots[s as usize];
        if prev != NIL {
            self.slots[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.slots[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    fn push_front(&mut self, s: u32) {
        let head = self.head;
        let slot = &mut self.slots[s as usize];
        slot.prev = NIL;
        slot.next = head;
        if head != NIL {
            self.slots[head as usize].prev = s;
        } else {
            self.tail = s;
        }
        self.head = s;
    }

    /// Marks `k` most recently used if present; returns whether it was.
    #[inline]
    pub fn touch(&mut self, k: u64) -> bool {
        let Some(&s) = self.map.get(&k) else {
            return false;
        };
        if self.head != s {
            self.unlink(s);
            self.push_front(s);
        }
        true
    }

    /// Inserts `k`, which must not be present, as most recently used. When over
    /// capacity, evicts and returns the least recently used page; a zero-capacity LRU
    /// stores nothing and returns `k` itself.
    pub fn insert_absent(&mut self, k: u64) -> Option<u64> {
        if self.capacity == 0 {
            return Some(k);
        }
        let slot = Slot {
            key: k,
            prev: NIL,
            next: NIL,
        };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        // Checked on the insert's own probe (no second lookup): kept in release builds.
        let present = self.map.insert(k, s);
        assert!(present.is_none(), "insert_absent of a present key {k}");
        self.push_front(s);
        if self.len() > self.capacity {
            self.pop_lru()
        } else {
            None
        }
    }

    /// [`Self::touch`], else [`Self::insert_absent`], in one hash probe (a miss at full
    /// capacity takes the LRU page's slot and a second probe to drop its key).
    /// `Err(evicted)` on a miss.
    #[inline]
    pub fn access(&mut self, k: u64) -> Result<(), Option<u64>> {
        if self.capacity == 0 {
            return Err(Some(k));
        }
        let full = self.map.len() as u64 >= self.capacity;
        let reuse = if full { self.tail } else { NIL };
        let s = match self.map.entry(k) {
            Entry::Occupied(e) => {
                let s = *e.get();
                if self.head != s {
                    self.unlink(s);
                    self.push_front(s);
                }
                return Ok(());
            }
            Entry::Vacant(e) => {
                let s = if reuse != NIL {
                    reuse
                } else if let Some(s) = self.free.pop() {
                    s
                } else {
                    self.slots.push(Slot {
                        key: k,
                        prev: NIL,
                        next: NIL,
                    });
                    (self.slots.len() - 1) as u32
                };
                e.insert(s);
                s
            }
        };
        let evicted = if reuse != NIL {
            let old = self.slots[s as usize].key;
            self.unlink(s);
            self.map.remove(&old);
            Some(old)
        } else {
            None
        };
        self.slots[s as usize].key = k;
        self.push_front(s);
        Err(evicted)
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
        let Some(s) = self.map.remove(&k) else {
            return false;
        };
        self.unlink(s);
        self.free.push(s);
        true
    }

    /// Removes and returns the least recently used page.
    pub fn pop_lru(&mut self) -> Option<u64> {
        if self.tail == NIL {
            return None;
        }
        let k = self.slots[self.tail as usize].key;
        self.remove(k);
        Some(k)
    }
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
        // The freed slots are reused: two live pages never need more than 3 slots.
        assert_eq!(l.insert(40), None);
        assert_eq!(l.insert(50), Some(30));
        assert!(l.slots.len() <= 3);
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
}
