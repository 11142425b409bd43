//! The L3 store: which pages storage holds, by page hash (one hash per page,
//! `get_hash_str` chained). Bounded capacity evicts least recently used pages (a
//! storage backend's own policy, not SGLang's); unbounded never evicts. Hashes are
//! interned to dense ids here so the LRU can live in a `Vec`.

use rustc_hash::FxHashMap;

use super::node::PageKey;
use super::page_lru::PageLru;

#[derive(Debug, Clone)]
pub struct Storage {
    ids: FxHashMap<PageKey, u32>,
    lru: PageLru,
    pub evicted_pages: u64,
}

impl Storage {
    /// `capacity` in pages; `u64::MAX` = unbounded.
    pub fn new(capacity: u64) -> Self {
        Self {
            ids: FxHashMap::default(),
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
    pub fn contains(&self, p: PageKey) -> bool {
        self.ids.get(&p).is_some_and(|&i| self.lru.contains(i))
    }
    /// `batch_exists` run by `_storage_hit_query`: the number of leading pages present,
    /// stopping at the first miss (reads refresh their LRU position).
    pub fn hit_run(&mut self, pages: &[PageKey]) -> u64 {
        let mut n = 0;
        for p in pages {
            match self.ids.get(p) {
                Some(&i) if self.lru.touch(i) => n += 1,
                _ => break,
            }
        }
        n
    }
    /// Writes pages (`_page_backup`); returns how many were new.
    pub fn write(&mut self, pages: &[PageKey]) -> u64 {
        let mut new = 0;
        for &p in pages {
            let next = self.ids.len() as u32;
            let i = *self.ids.entry(p).or_insert(next);
            if !self.lru.contains(i) {
                new += 1;
            }
            if self.lru.insert(i).is_some() {
                self.evicted_pages += 1;
            }
        }
        new
    }
}
