//! `policy_sim` against SGLang's `hicache_policy_simulator.py` on a small random trace
//! built to stress its tie rules: ints and strings mixed as hash ids (`1` and `"1"` are
//! different pages; reprs `1` and `'1'` order the heaps), unsorted timestamps with
//! many ties (the stable sort), tiny capacities and thresholds 1 to 3. Expected values
//! are the Python tool's output with `sanity_check_interval=1`; `None` marks the runs
//! where the tool itself stops with `AssertionError: boundary invariant violation`
//! (its `boundary_l1_l2` policy can leave an H-only child under a D-only parent when
//! L2 is small), which this port reproduces as `PolicySimError::Invariant`.

use hicache_sim::policy_sim::{self, PolicySimConfig, PolicySimError, SimPolicy};

const TRACE: &str = r#"{"timestamp": 10, "hash_ids": [2]}
{"timestamp": 23, "hash_ids": [27, 19, 1, 5, 20, 23, 16, 17, 16, 1]}
{"timestamp": 43, "hash_ids": [27, 19, 1, 5, 20, 23, 28, 5, 7, 5, 4, 11]}
{"timestamp": 29, "hash_ids": [27, 19, 1, 5, 20, 23, 16, 24, 18, 27, 5, 12, 14, 7, 29, 16, 11]}
{"timestamp": 30, "hash_ids": [11, 29, 14, 7, 26, 5, 19]}
{"timestamp": 21, "hash_ids": [11, 29, 14, 7, 26, 5, 23, 16, 21, 2]}
{"timestamp": 43, "hash_ids": ["23", 18, 8]}
{"timestamp": 17, "hash_ids": [24]}
{"timestamp": 1, "hash_ids": [27, 28, "1", "11", "21", 3, "0"]}
{"timestamp": 16, "hash_ids": [27, 19, 5, 0, 1, "7", "1", 30, 23, 9, 0, 17, "23"]}
{"timestamp": 21, "hash_ids": ["22", 30, 21, "26", 14, "30", 18, 15, 4]}
{"timestamp": 39, "hash_ids": [27, 19, 5, 0, 1, "7", 0, "30", 1, "4", 3, 7, 22, 7, "14", 2]}
{"timestamp": 1, "hash_ids": [22, 21, 16, "4", "13", 16, "7", "0", "7"]}
{"timestamp": 27, "hash_ids": [24, 17, 6, 24, 23]}
{"timestamp": 26, "hash_ids": [27, 19, 5, 0, 1, "7", "1", 30, 23]}
{"timestamp": 12, "hash_ids": [5, 21, "11", 30, 19, 22, 11, 27, "3"]}
{"timestamp": 45, "hash_ids": ["26", "14", 20, 6, "19", "9", 9, 2, "15", 18]}
{"timestamp": 5, "hash_ids": [27, 19, 5, 0, 1, "7", 0, "30", 1, "4", 3, 7, "8"]}
{"timestamp": 45, "hash_ids": ["22", 30, 21, "26", 14, "30", "22", 19, "24"]}
{"timestamp": 30, "hash_ids": [27, 19, 5, 0, 1, "7", 0, "30", 1, "4", 3, 7, 22, 7, 25, 15]}
{"timestamp": 4, "hash_ids": [25, 15, 9, 5, 8, 22, "29", 23, "3", 5, 4]}
{"timestamp": 32, "hash_ids": [25, 4, 12, 21, 10, 16, 4, 30, "13", 16]}
{"timestamp": 23, "hash_ids": [11, 29, 14, 7, 26, 5, 23, 7, 11, 18, 14, 0, 12, 5, 1, 12, 23, 22]}
{"timestamp": 42, "hash_ids": [22, "21", 26, 7, 6]}
{"timestamp": 36, "hash_ids": [14, 29, "20", "3", 30]}
{"timestamp": 27, "hash_ids": [26, "25", 23, "18", 25, 0]}
{"timestamp": 22, "hash_ids": ["26", "14", 20, 6, "19", "9", 9, 2, "15", 14, 30]}
{"timestamp": 46, "hash_ids": [5, 21, "11", 30, 19, 22, 11, 27, "21", 18, 21, 14, 16, 2, "11", 24, 12, 20]}
{"timestamp": 43, "hash_ids": [11, 29, 14, 7, 26, 5, 23, 14, "4", 17, 0, 17, 18]}
{"timestamp": 5, "hash_ids": [25, 15, 22, 29, 8, 9, 30, 20, 16]}
{"timestamp": 13, "hash_ids": ["23", 18, 8, 16, 4, "20", 1, 14, 16, "30", 21, 12]}
{"timestamp": 30, "hash_ids": [27, 19, 1, 5, 20, "11", 14, 14, 29, 20, 8, 3]}
{"timestamp": 46, "hash_ids": [22, 4, 7, 17, 12, 23]}
{"timestamp": 25, "hash_ids": [18, 30, 12, 27, 20, 22, 19, 2]}
{"timestamp": 41, "hash_ids": ["26", "14", 20, 6, "19", "15", "29", 30, "30", "11", 2, 28]}
{"timestamp": 9, "hash_ids": ["26", "14", 20, 6, "19", 26, 12, 15]}
{"timestamp": 21, "hash_ids": [22, 21, 16, "4", "13", 16, "7", 4]}
{"timestamp": 41, "hash_ids": ["26", "14", 20, 6, "19", 2, 7, 23, 10]}
{"timestamp": 9, "hash_ids": []}
{"timestamp": 31, "hash_ids": [11, 29, 14, 7, 26, 5, 24, 10, "27", 20, 19, 7, 12]}
{"timestamp": 32, "hash_ids": [25, 15, 9, 5, 8, 22, "29", 23, "19", 16, 15, 26, 5, 16, "28", "18", 29]}
{"timestamp": 45, "hash_ids": [12]}
{"timestamp": 41, "hash_ids": ["23", 18, "5", 13, 2]}
{"timestamp": 1, "hash_ids": ["23", 18, 8, "15"]}
{"timestamp": 3, "hash_ids": [22, 4, 7, 17]}
{"timestamp": 49, "hash_ids": [2, 16, 4, "0", 3, 14, 1, 20, 19, 12, 22]}
{"timestamp": 13, "hash_ids": ["16", "26"]}
{"timestamp": 33, "hash_ids": [22, 21, 16, "4", "13", 4, 25, 3, 15]}
"#;

/// (l1, l2, threshold, policy, [l1_hit, l2_hit, miss, l1_evictions, l2_evictions,
/// d_to_h_demotions, dh_to_d_l2_dedup_evictions, h_to_deleted_evictions,
/// failed_h_allocations, d_pages, h_pages, dh_pages])
type Case = (u64, u64, u64, &'static str, Option<[u64; 12]>);
const CASES: &[Case] = &[
    (
        15,
        8,
        1,
        "main_write_through",
        Some([15, 2, 416, 403, 110, 0, 0, 110, 40, 15, 8, 4]),
    ),
    (
        15,
        8,
        1,
        "boundary_l1_l2",
        Some([15, 2, 416, 403, 487, 49, 93, 394, 29, 15, 8, 1]),
    ),
    (
        13,
        22,
        1,
        "main_write_through",
        Some([13, 10, 410, 407, 322, 0, 0, 322, 15, 13, 22, 11]),
    ),
    (13, 22, 1, "boundary_l1_l2", None),
    (
        17,
        21,
        1,
        "main_write_through",
        Some([15, 9, 409, 401, 263, 0, 0, 263, 26, 17, 21, 15]),
    ),
    (
        17,
        21,
        1,
        "boundary_l1_l2",
        Some([15, 16, 402, 401, 784, 44, 419, 365, 0, 17, 21, 1]),
    ),
];

#[test]
fn mixed_id_trace_matches_the_python_tool() {
    let records: Vec<_> = TRACE
        .lines()
        .enumerate()
        .map(|(i, l)| policy_sim::parse_record_line(l, i).unwrap())
        .collect();
    assert_eq!(records.len(), 48);
    for &(l1, l2, thr, policy, want) in CASES {
        let mut cfg = PolicySimConfig::new(SimPolicy::from_id(policy).unwrap(), l1, l2);
        cfg.write_through_threshold = thr;
        cfg.sanity_check_interval = 1;
        let got = policy_sim::run(&cfg, &records);
        match want {
            None => assert!(
                matches!(&got, Err(PolicySimError::Invariant(m)) if m.contains("boundary invariant violation")),
                "{policy} {l1}/{l2}: {got:?}"
            ),
            Some(w) => {
                let m = got.unwrap();
                let have = [
                    m.l1_hit_pages,
                    m.l2_hit_pages,
                    m.miss_pages,
                    m.l1_evictions,
                    m.l2_evictions,
                    m.d_to_h_demotions,
                    m.dh_to_d_l2_dedup_evictions,
                    m.h_to_deleted_evictions,
                    m.failed_h_allocations,
                    m.d_pages,
                    m.h_pages,
                    m.dh_pages,
                ];
                assert_eq!(have, w, "{policy} L1 {l1} L2 {l2} threshold {thr}");
            }
        }
    }
}
