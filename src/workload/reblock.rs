//! Re-blocking: from a trace's chained block hash ids (block size `B` tokens) to the
//! engine's chained page hashes (page size `P` tokens). The two are separate knobs.
//!
//! The rule. A block id stands for its block *and everything before it* (Mooncake,
//! Bailian and kv-cache-tester all chain their ids). Page `i` covers tokens
//! `[i·P, (i+1)·P)`; only whole pages of the prompt are produced (`input_tokens / P`
//! pages), because SGLang page-aligns keys before matching and inserting
//! (`mem_cache/radix_cache.py: RadixCache.match_prefix`, `page_aligned_len`).
//! - `P ≤ B` (`B` a multiple of `P`, `k = B/P`): page `i` lies in block `i / k`;
//!   its hash is `mix(block_id, i % k)`.
//! - `P > B` (`P` a multiple of `B`, `m = P/B`): page `i` ends with block
//!   `(i+1)·m − 1`; its hash is `mix(that block's id, 0)` — the last block of the page
//!   already identifies everything before it.
//!
//! With `P = B` both give `mix(id, 0)`. `mix` is a fixed 64-bit function (SplitMix64
//! finaliser over the id and the index), so hashes are the same on every machine and
//! run; no std `RandomState` anywhere.
//!
//! Short `hash_ids`: a trace must list every *whole* block of the prompt
//! (`input_length / B`); the id of a trailing partial block is optional (Mooncake lists
//! it, kv-cache-tester does not). Pages whose tokens fall in a partial block without an
//! id are dropped. Fewer ids than whole blocks is an error (see [`Reblocker::page_hashes`]).

use super::PageHash;

/// SplitMix64's finaliser over `(id, index)`: the page-hash mix.
#[inline]
pub fn mix(id: u64, index: u64) -> PageHash {
    let mut z = id ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Maps block hash ids at `block_size` to page hashes at `page_size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reblocker {
    block_size: u32,
    page_size: u32,
}

/// Why a page size and a block size cannot be combined, or a row is too short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReblockError {
    #[error("block size and page size must be positive (block {block}, page {page})")]
    Zero { block: u32, page: u32 },
    #[error(
        "page size {page} is neither a divisor nor a multiple of the trace block size {block}; \
         use a page size such as {block} or one that divides or is a multiple of it"
    )]
    Incompatible { block: u32, page: u32 },
    #[error(
        "hash_ids has {have} entries but the {input} input tokens need at least {need} \
         (one per whole {block}-token block)"
    )]
    TooFewHashIds {
        have: usize,
        need: usize,
        input: u32,
        block: u32,
    },
}

impl Reblocker {
    pub fn new(block_size: u32, page_size: u32) -> Result<Self, ReblockError> {
        if block_size == 0 || page_size == 0 {
            return Err(ReblockError::Zero {
                block: block_size,
                page: page_size,
            });
        }
        if !block_size.is_multiple_of(page_size) && !page_size.is_multiple_of(block_size) {
            return Err(ReblockError::Incompatible {
                block: block_size,
                page: page_size,
            });
        }
        Ok(Reblocker {
            block_size,
            page_size,
        })
    }

    pub fn block_size(&self) -> u32 {
        self.block_size
    }

    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// Fill `out` with the page hashes of a prompt of `input_tokens` tokens whose
    /// chained block ids are `blocks`. Clears `out` first (reuse it across requests).
    pub fn page_hashes(
        &self,
        blocks: &[u64],
        input_tokens: u32,
        out: &mut Vec<PageHash>,
    ) -> Result<(), ReblockError> {
        out.clear();
        let b = self.block_size as u64;
        let p = self.page_size as u64;
        let whole_blocks = (input_tokens as u64 / b) as usize;
        if blocks.len() < whole_blocks {
            return Err(ReblockError::TooFewHashIds {
                have: blocks.len(),
                need: whole_blocks,
                input: input_tokens,
                block: self.block_size,
            });
        }
        let pages = input_tokens as u64 / p;
        if p <= b {
            let k = b / p;
            // pages inside listed blocks only
            let pages = pages.min(blocks.len() as u64 * k);
            out.reserve(pages as usize);
            // Page i is (block i / k, index i % k); walked block by block, no division
            // per page (the untimed replay's hot path).
            if k == 1 {
                out.extend(blocks[..pages as usize].iter().map(|&b| mix(b, 0)));
            } else {
                'blocks: for &blk in blocks {
                    for r in 0..k {
                        if out.len() as u64 == pages {
                            break 'blocks;
                        }
                        out.push(mix(blk, r));
                    }
                }
            }
        } else {
            let m = p / b;
            let pages = pages.min(blocks.len() as u64 / m);
            out.reserve(pages as usize);
            for i in 0..pages {
                out.push(mix(blocks[((i + 1) * m - 1) as usize], 0));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages(b: u32, p: u32, blocks: &[u64], input: u32) -> Vec<PageHash> {
        let mut v = Vec::new();
        Reblocker::new(b, p)
            .unwrap()
            .page_hashes(blocks, input, &mut v)
            .unwrap();
        v
    }

    #[test]
    fn same_size_one_page_per_whole_block() {
        // 1100 tokens at 512: blocks [7, 8, 9] (9 is the partial tail), 2 whole pages
        assert_eq!(
            pages(512, 512, &[7, 8, 9], 1100),
            vec![mix(7, 0), mix(8, 0)]
        );
    }

    #[test]
    fn smaller_pages_split_blocks() {
        // B=64, P=16: 100 tokens -> 6 whole pages; block 0 gives pages 0..4, block 1
        // pages 4,5 with indices 0,1
        assert_eq!(
            pages(64, 16, &[5, 6], 100),
            vec![
                mix(5, 0),
                mix(5, 1),
                mix(5, 2),
                mix(5, 3),
                mix(6, 0),
                mix(6, 1)
            ]
        );
        // kv-cache-tester style: the partial block has no id -> its pages are dropped
        assert_eq!(
            pages(64, 16, &[5], 100),
            vec![mix(5, 0), mix(5, 1), mix(5, 2), mix(5, 3)]
        );
    }

    #[test]
    fn larger_pages_take_the_last_block() {
        // B=16, P=64: 150 tokens -> 2 whole pages; page 0 ends with block 3, page 1 with 7
        let blocks: Vec<u64> = (100..110).collect();
        assert_eq!(pages(16, 64, &blocks, 150), vec![mix(103, 0), mix(107, 0)]);
    }

    #[test]
    fn equal_prefixes_give_equal_pages_and_divergence_propagates() {
        let a = pages(32, 16, &[1, 2, 3], 96);
        let b = pages(32, 16, &[1, 2, 4], 96);
        assert_eq!(a[..4], b[..4]);
        assert_ne!(a[4], b[4]);
        assert_ne!(a[5], b[5]);
        // mix is fixed: pin one value so a change of the function is noticed
        assert_eq!(mix(0, 0), 0xE220A8397B1DCDAF);
    }

    #[test]
    fn bad_sizes_and_short_rows_are_errors() {
        assert_eq!(
            Reblocker::new(512, 48),
            Err(ReblockError::Incompatible {
                block: 512,
                page: 48
            })
        );
        assert!(Reblocker::new(0, 16).is_err());
        let r = Reblocker::new(512, 64).unwrap();
        let mut v = Vec::new();
        assert_eq!(
            r.page_hashes(&[1], 1100, &mut v),
            Err(ReblockError::TooFewHashIds {
                have: 1,
                need: 2,
                input: 1100,
                block: 512
            })
        );
    }
}
