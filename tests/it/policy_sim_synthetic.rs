//! `policy_sim` against SGLang's own `hicache_policy_simulator.py` on the Mooncake
//! synthetic trace (`traces/synthetic_trace.jsonl`, 3,993 requests). The expected
//! metrics below are the Python tool's output (upstream commit 110816e7, run with
//! CPython 3.11 on this trace: `simulate_policies(load_trace_records(trace), both
//! policies, l1, l2)`), pasted verbatim as JSON: every counter and every rate must
//! match exactly.

use std::path::Path;

use hicache_sim::policy_sim::{self, PolicyMetrics, PolicySimConfig, SimPolicy};

const PY_L1_6000_L2_12000: &str = r#"{"main_write_through": {"policy": "main_write_through", "requests": 3993, "total_input_pages": 121877, "l1_hit_pages": 38027, "l2_hit_pages": 18937, "miss_pages": 64913, "l1_evictions": 77850, "l2_evictions": 52913, "d_to_h_demotions": 0, "dh_to_d_l2_dedup_evictions": 0, "h_to_deleted_evictions": 52913, "failed_h_allocations": 0, "d_pages": 6000, "h_pages": 12000, "dh_pages": 6000, "unique_cached_pages": 12000, "duplicate_ratio": 0.5, "l1_hit_rate": 0.3120112900711373, "l1_l2_hit_rate": 0.4673892530994363}, "boundary_l1_l2": {"policy": "boundary_l1_l2", "requests": 3993, "total_input_pages": 121877, "l1_hit_pages": 38027, "l2_hit_pages": 26199, "miss_pages": 57651, "l1_evictions": 77850, "l2_evictions": 113695, "d_to_h_demotions": 3257, "dh_to_d_l2_dedup_evictions": 69447, "h_to_deleted_evictions": 44248, "failed_h_allocations": 0, "d_pages": 6000, "h_pages": 12000, "dh_pages": 4597, "unique_cached_pages": 13403, "duplicate_ratio": 0.38308333333333333, "l1_hit_rate": 0.3120112900711373, "l1_l2_hit_rate": 0.5269739163254756}}"#;
const PY_L1_6000_L2_3000: &str = r#"{"main_write_through": {"policy": "main_write_through", "requests": 3993, "total_input_pages": 121877, "l1_hit_pages": 38027, "l2_hit_pages": 224, "miss_pages": 83626, "l1_evictions": 77850, "l2_evictions": 38945, "d_to_h_demotions": 0, "dh_to_d_l2_dedup_evictions": 0, "h_to_deleted_evictions": 38945, "failed_h_allocations": 2041, "d_pages": 6000, "h_pages": 3000, "dh_pages": 2999, "unique_cached_pages": 6001, "duplicate_ratio": 0.9996666666666667, "l1_hit_rate": 0.3120112900711373, "l1_l2_hit_rate": 0.31384920862837123}, "boundary_l1_l2": {"policy": "boundary_l1_l2", "requests": 3993, "total_input_pages": 121877, "l1_hit_pages": 38027, "l2_hit_pages": 9550, "miss_pages": 74300, "l1_evictions": 77850, "l2_evictions": 181331, "d_to_h_demotions": 3506, "dh_to_d_l2_dedup_evictions": 114781, "h_to_deleted_evictions": 66550, "failed_h_allocations": 0, "d_pages": 6000, "h_pages": 3000, "dh_pages": 1250, "unique_cached_pages": 7750, "duplicate_ratio": 0.4166666666666667, "l1_hit_rate": 0.3120112900711373, "l1_l2_hit_rate": 0.39036897856035185}}"#;

/// The float printed for `field` in the block of `policy`, parsed with Rust's correctly
/// rounded `str::parse` (serde_json's default float parser may be off by one ulp).
fn py_float(expected: &str, policy: &str, field: &str) -> f64 {
    let block = &expected[expected.find(&format!("\"{policy}\": {{")).unwrap()..];
    let key = format!("\"{field}\": ");
    let rest = &block[block.find(&key).unwrap() + key.len()..];
    let end = rest.find([',', '}']).unwrap();
    rest[..end].trim().parse().unwrap()
}

fn check(l1: u64, l2: u64, expected: &str) {
    let records =
        policy_sim::load_trace_records(Path::new("traces/synthetic_trace.jsonl"), None).unwrap();
    assert_eq!(records.len(), 3993);
    let want: std::collections::BTreeMap<String, PolicyMetrics> =
        serde_json::from_str(expected).unwrap();
    for policy in SimPolicy::ALL {
        let got = policy_sim::run(&PolicySimConfig::new(policy, l1, l2), &records).unwrap();
        let mut want = want[policy.id()].clone();
        want.duplicate_ratio = py_float(expected, policy.id(), "duplicate_ratio");
        want.l1_hit_rate = py_float(expected, policy.id(), "l1_hit_rate");
        want.l1_l2_hit_rate = py_float(expected, policy.id(), "l1_l2_hit_rate");
        assert_eq!(got, want, "{policy} L1 {l1} L2 {l2}");
    }
}

#[test]
fn synthetic_l1_6000_l2_12000_matches_the_python_tool() {
    check(6000, 12000, PY_L1_6000_L2_12000);
}

#[test]
fn synthetic_l1_6000_l2_3000_matches_the_python_tool() {
    check(6000, 3000, PY_L1_6000_L2_3000);
}

#[test]
fn records_from_the_workload_reader_equal_the_tools_loader() {
    use hicache_sim::workload::{TraceOptions, read::RecordReader};
    let p = Path::new("traces/synthetic_trace.jsonl");
    let tool = policy_sim::load_trace_records(p, None).unwrap();
    let ours =
        policy_sim::records_from_blocks(RecordReader::open(p, &TraceOptions::default()).unwrap())
            .unwrap();
    assert_eq!(tool, ours);
}
