//! Trace scale: reading a trace and the policy simulator on long requests.
//! - `read/jsonl` and `read/binary`: every record of the Mooncake synthetic trace
//!   (3,993 requests, 121,877 hash ids) through `RecordReader`; throughput in hash ids.
//! - `read/shared`: the same records from a parse already in memory (what every sweep
//!   point after the first reads).
//! - `policy_sim/10k`: one 10,000-page request then a 5,000-page prefix, both policies
//!   (quadratic before: seconds; now milliseconds).
//! - `replay/binary`: the untimed replay's hot path, the synthetic trace ×8 (ids shifted
//!   per copy, 975,016 hash ids) from the binary form, 512-token pages, L1 20k / L2 60k
//!   pages (the figures of `scripts/bench_trace_scale.sh`); throughput in whole pages.
//! - `replay/floor_read_and_probe`: the same file read once and one hash probe per
//!   whole page into a set of every page seen: the floor the replay is measured against.
//!
//! Run: `cargo bench --features bench --bench trace_scale -- --warm-up-time 1 --measurement-time 5`.
//! The whole-trace figures (×10 / ×50 conversation trace, before/after) come from
//! `scripts/bench_trace_scale.sh`.

use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hicache_sim::policy_sim::{HashId, SimPolicy, Simulator};
use hicache_sim::runtime::{Capacities, Measurement, ReplayConfig, Timing, replay};
use hicache_sim::workload::read::{
    BlockRecord, RecordReader, TraceColumns, TraceOptions, open_trace_with,
};

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

fn replay_binary(c: &mut Criterion) {
    let opts = TraceOptions::default();
    let one = TraceColumns::collect(RecordReader::open(Path::new(TRACE), &opts).unwrap());
    // ×8: copy k's hash ids shifted by k·2^32 (distinct conversations, same tree shape).
    let mut cols = TraceColumns::empty(one.format, one.block_size);
    cols.offsets.clear();
    cols.offsets.push(0);
    for k in 0..8u64 {
        for i in 0..one.input_tokens.len() {
            cols.arrival_ns.push(one.arrival_ns[i]);
            cols.line.push(one.line[i]);
            cols.input_tokens.push(one.input_tokens[i]);
            cols.output_tokens.push(one.output_tokens[i]);
            let (a, b) = (one.offsets[i] as usize, one.offsets[i + 1] as usize);
            cols.ids
                .extend(one.ids[a..b].iter().map(|&x| x + (k << 32)));
            cols.offsets.push(cols.ids.len() as u64);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("t8.bin");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&bin).unwrap());
    cols.write_binary(&mut f).unwrap();
    drop(f);
    let cfg = ReplayConfig {
        capacities: Capacities {
            page_size: 512,
            l1_pages: 20_000,
            l2_pages: 60_000,
            ..Default::default()
        },
        measurement: Measurement {
            timing: Timing::Off,
            ..Default::default()
        },
        ..ReplayConfig::default()
    };
    let run = || {
        replay(
            &cfg,
            open_trace_with(&bin, &opts, 512)
                .unwrap()
                .map(Result::unwrap),
        )
        .unwrap()
    };
    // The floor: the same file read once and one hash probe per whole page (512-token
    // pages: one id each) into a set of every page seen — no tree, no eviction, no
    // accounting. The replay's distance from it is what the tree and tiers cost.
    let floor = || {
        let mut r = RecordReader::open(&bin, &opts).unwrap();
        let mut rec = BlockRecord::default();
        let mut seen: rustc_hash::FxHashSet<u64> = Default::default();
        let mut hits = 0u64;
        while r.read_into(&mut rec).unwrap() {
            let whole = (rec.input_tokens / 512) as usize;
            for &id in rec.block_hashes.iter().take(whole) {
                hits += u64::from(!seen.insert(id));
            }
        }
        hits
    };
    let pages = run().input_pages;
    let mut g = c.benchmark_group("replay");
    g.throughput(Throughput::Elements(pages));
    g.sample_size(10);
    g.bench_function("binary", |b| b.iter(run));
    g.bench_function("floor_read_and_probe", |b| b.iter(floor));
    g.finish();
}

criterion_group!(benches, read, policy_sim_long, replay_binary);
criterion_main!(benches);
