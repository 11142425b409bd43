//! A plain LRU over dense page ids: an intrusive doubly linked list in a `Vec` indexed
//! by page id (no hashing, no allocation per access). Not SGLang's eviction — SGLang
//! evicts radix-tree leaves only — but the classic page LRU that cache simulators such
//! as libCacheSim run; used for `lru_mode: plain_page` and as the L3 store's order.

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    present: bool,
}

const EMPTY: Link = Link {
    prev: NIL,
    next: NIL,
    present: false,
};

/// LRU set of page ids with a capacity in pages (`u64::MAX` = unbounded).
#[derive(Debug, Clone)]
pub struct PageLru {
    links: Vec<Link>,
    /// Most recently used.
    head: u32,
    /// Least recently used.
    tail: u32,
    len: u64,
    capacity: u64,
}

impl PageLru {
    pub fn new(capacity: u64) -> Self {
        Self {
            links: Vec::new(),
            head: NIL,
            tail: NIL,
            len: 0,
            capacity,
        }
    }
    pub fn len(&self) -> u64 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    #[inline]
    pub fn contains(&self, p: u32) -> bool {
        self.links.get(p as usize).is_some_and(|l| l.present)
    }

    fn unlink(&mut self, p: u32) {
        let Link { prev, next, .. } = self.links[p as usize];
        if prev != NIL {
            self.links[prev as usize].next = next;
        } else {
            self.head = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        } else {
            self.tail = prev;
        }
    }

    fn push_front(&mut self, p: u32) {
        let l = &mut self.links[p as usize];
        l.prev = NIL;
        l.next = self.head;
        if self.head != NIL {
            self.links[self.head as usize].prev = p;
        } else {
            self.tail = p;
        }
        self.head = p;
    }

    /// Marks `p` most recently used if present; returns whether it was.
    #[inline]
    pub fn touch(&mut self, p: u32) -> bool {
        if !self.contains(p) {
            return false;
        }
        if self.head != p {
            self.unlink(p);
            self.push_front(p);
        }
        true
    }

    /// Inserts `p` as most recently used (or touches it). When over capacity, evicts
    /// and returns the least recently used page. A zero-capacity LRU stores nothing and
    /// returns `p` itself.
    pub fn insert(&mut self, p: u32) -> Option<u32> {
        if self.touch(p) {
            return None;
        }
        if self.capacity == 0 {
            return Some(p);
        }
        if self.links.len() <= p as usize {
            self.links
                .resize((p as usize + 1).max(self.links.len() * 2), EMPTY);
        }
        self.links[p as usize].present = true;
        self.push_front(p);
        self.len += 1;
        if self.len > self.capacity {
            self.pop_lru()
        } else {
            None
        }
    }

    /// Removes `p`; returns whether it was present.
    pub fn remove(&mut self, p: u32) -> bool {
        if !self.contains(p) {
            return false;
        }
        self.unlink(p);
        self.links[p as usize] = EMPTY;
        self.len -= 1;
        true
    }

    /// Removes and returns the least recently used page.
    pub fn pop_lru(&mut self) -> Option<u32> {
        if self.tail == NIL {
            return None;
        }
        let p = self.tail;
        self.remove(p);
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recent() {
        let mut l = PageLru::new(2);
        assert_eq!(l.insert(1), None);
        assert_eq!(l.insert(2), None);
        assert!(l.touch(1));
        assert_eq!(l.insert(3), Some(2));
        assert!(l.contains(1) && l.contains(3) && !l.contains(2));
        assert_eq!(l.pop_lru(), Some(1));
        assert_eq!(l.len(), 1);
        let mut z = PageLru::new(0);
        assert_eq!(z.insert(5), Some(5));
        assert!(z.is_empty());
    }
}
