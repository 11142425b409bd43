//! The L3 store: which pages storage holds, by page hash (one hash per page,
//! `get_hash_str` chained). Bounded capacity evicts least recently used pages (a
//! storage backend's own policy, not SGLang's); unbounded never evicts. The LRU is
//! keyed by the page hash itself ([`KeyedLru`]: only resident pages are held).

use super::keyed_lru::KeyedLru;
use super::node::PageKey;

#[derive(Debug, Clone)]
pub struct Storage {
    lru: KeyedLru,
    pub evicted_pages: u64,
}

impl Storage {
    /// `capacity` in pages; `u64::MAX` = unbounded.
    pub fn new(capacity: u64) -> Self {
        Self {
            lru: KeyedLru::new(capacity),
            evicted_pages: 0,
        }
    }
    pub fn len(&self) -> u64 {
        self.lru.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
    pub fn contains(&self, p: PageKey) -> bool {
        self.lru.contains(p)
    }
    /// `batch_exists` run by `_storage_hit_query`: the number of leading pages present,
    /// stopping at the first miss (reads refresh their LRU position).
    pub fn hit_run(&mut self, pages: &[PageKey]) -> u64 {
        let mut n = 0;
        for &p in pages {
            if !self.lru.touch(p) {
                break;
            }
            n += 1;
        }
        n
    }
    /// Writes pages (`_page_backup`); returns how many were new.
    pub fn write(&mut self, pages: &[PageKey]) -> u64 {
        let mut new = 0;
        for &p in pages {
            if let Err(evicted) = self.lru.access(p) {
                new += 1;
                if evicted.is_some() {
                    self.evicted_pages += 1;
                }
            }
        }
        new
    }
}
