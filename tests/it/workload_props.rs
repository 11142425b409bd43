//! Property tests of re-blocking: two prompts that share their first `k` blocks share
//! exactly the pages inside those blocks, and no page after them.

use hicache_sim::workload::Reblocker;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn shared_blocks_give_shared_pages(
        (block, page) in prop::sample::select(vec![(512u32, 64u32), (64, 64), (64, 16), (16, 64), (16, 512), (512, 512)]),
        n in 1usize..20,
        k in 0usize..20,
        tail in 0u32..600,
    ) {
        let k = k.min(n);
        let a: Vec<u64> = (0..n as u64).collect();
        let b: Vec<u64> = (0..n as u64).map(|i| if (i as usize) < k { i } else { 1000 + i }).collect();
        let input = n as u32 * block - tail.min(block - 1);
        let rb = Reblocker::new(block, page).unwrap();
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        rb.page_hashes(&a, input, &mut pa).unwrap();
        rb.page_hashes(&b, input, &mut pb).unwrap();
        prop_assert_eq!(pa.len(), (input / page) as usize);
        for i in 0..pa.len() {
            // the last token of page i lies in block ((i+1)*page - 1) / block
            let last_block = ((i as u64 + 1) * page as u64 - 1) / block as u64;
            if (last_block as usize) < k {
                prop_assert_eq!(pa[i], pb[i]);
            } else {
                prop_assert_ne!(pa[i], pb[i]);
            }
        }
    }
}
