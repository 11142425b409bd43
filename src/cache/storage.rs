//! The L3 store: which pages storage holds, by page hash id (one hash per page,
//! `get_hash_str` chained). Bounded capacity evicts least recently used pages (a
//! storage backend's own policy, not SGLang's); unbounded never evicts.

use super::page_lru::PageLru;

#[derive(Debug, Clone)]
pub struct Storage {
    lru: PageLru,
    pub evicted_pages: u64,
}

impl Storage {
    /// `capacity` in pages; `u64::MAX` = unbounded.
    pub fn new(capacity: u64) -> Self {
        Self {
            lru: PageLru::new(capacity),
            evicted_pages: 0,
        }
    }
    pub fn len(&self) -> u64 {
        self.lru.len()
    }
    pub fn is_empty(&self) -> bool {
        self.lru.is_empty()
    }
    pub fn contains(&self, p: u32) -> bool {
        self.lru.contains(p)
    }
    /// `batch_exists` run by `_storage_hit_query`: the number of leading pages present,
    /// stopping at the first miss (reads refresh their LRU position).
    pub fn hit_run(&mut self, pages: &[u32]) -> u64 {
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
    pub fn write(&mut self, pages: &[u32]) -> u64 {
        let mut new = 0;
        for &p in pages {
            if !self.lru.contains(p) {
                new += 1;
            }
            if self.lru.insert(p).is_some() {
                self.evicted_pages += 1;
            }
        }
        new
    }
}
