//! Issue 13 (trace scale): reading a trace and the policy simulator on long requests.
//! - `read/jsonl` and `read/binary`: every record of the Mooncake synthetic trace
//!   (3,993 requests, 121,877 hash ids) through `RecordReader`; throughput in hash ids.
//! - `read/shared`: the same records from a parse already in memory (what every sweep
//!   point after the first reads).
//! - `policy_sim/10k`: one 10,000-page request then a 5,000-page prefix, both policies
//!   (quadratic before: seconds; now milliseconds).
//!
//! Run: `cargo bench --bench trace_scale -- --warm-up-time 1 --measurement-time 5`.
//! The whole-trace figures (×10 / ×50 conversation trace, before/after) come from
//! `scripts/bench_trace_scale.sh`.

use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hicache_sim::policy_sim::{HashId, SimPolicy, Simulator};
use hicache_sim::workload::read::{BlockRecord, RecordReader, TraceColumns, TraceOptions};

const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/synthetic_trace.jsonl");

fn drain(mut r: RecordReader) -> u64 {
    let mut rec = BlockRecord::default();
    let mut n = 0u64;
    while r.read_into(&mut rec).unwrap() {
        n += rec.block_hashes.len() as u64;
    }
    n
}

fn read(c: &mut Criterion) {
    let opts = TraceOptions::default();
    let cols = TraceColumns::collect(RecordReader::open(Path::new(TRACE), &opts).unwrap());
    let ids = cols.id_count();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("t.bin");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&bin).unwrap());
    cols.write_binary(&mut f).unwrap();
    drop(f);
    let shared = Arc::new(cols);
    let mut g = c.benchmark_group("read");
    g.throughput(Throughput::Elements(ids));
    g.bench_function("jsonl", |b| {
        b.iter(|| drain(RecordReader::open(Path::new(TRACE), &opts).unwrap()))
    });
    g.bench_function("binary", |b| {
        b.iter(|| drain(RecordReader::open(&bin, &opts).unwrap()))
    });
    g.bench_function("shared", |b| {
        b.iter(|| drain(RecordReader::from_columns("t", Arc::clone(&shared), &opts).unwrap()))
    });
    g.finish();
}

fn policy_sim_long(c: &mut Criterion) {
    let first: Vec<HashId> = (0..10_000i64).map(|i| HashId::Int(i as i128)).collect();
    let second = first[..5_000].to_vec();
    let mut g = c.benchmark_group("policy_sim");
    g.throughput(Throughput::Elements(15_000 * 2));
    g.sample_size(10);
    g.bench_function("10k", |b| {
        b.iter(|| {
            for p in SimPolicy::ALL {
                let mut s = Simulator::new(p, 4_000, 20_000, 1).unwrap();
                s.process_request(&first, false).unwrap();
                s.process_request(&second, false).unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, read, policy_sim_long);
criterion_main!(benches);
