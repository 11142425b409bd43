//! Trace readers: good files of every format, each kind of bad row with its line, the
//! out-of-order flag, re-blocking through the reader, and the shipped traces' figures.

use std::io::Write;
use std::path::{Path, PathBuf};

use hicache_sim::error::InputError;
use hicache_sim::workload::reblock::mix;
use hicache_sim::workload::{
    Request, TraceFormat, TraceOptions, block_stats, collect_sorted, open_trace, open_trace_with,
    read::RecordReader, stats,
};

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(text.as_bytes()).unwrap();
    p
}

fn read_all(p: &Path, fmt: Option<TraceFormat>, page: u32) -> Result<Vec<Request>, InputError> {
    open_trace(p, fmt, page)?.collect()
}

fn first_err(p: &Path, fmt: Option<TraceFormat>, page: u32) -> InputError {
    read_all(p, fmt, page).unwrap_err()
}

const MOONCAKE: &str = r#"{"timestamp": 0, "input_length": 1100, "output_length": 6, "hash_ids": [0, 1, 2]}

{"timestamp": 27, "input_length": 512, "output_length": 10, "hash_ids": [0], "session_id": 3, "delay": 1.5}
"#;

#[test]
fn mooncake_good_file() {
    let d = tempfile::tempdir().unwrap();
    let p = file(&d, "m.jsonl", MOONCAKE);
    assert_eq!(TraceFormat::detect(&p).unwrap(), TraceFormat::Mooncake);
    let r = read_all(&p, None, 512).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].id, 0);
    assert_eq!(r[0].arrival_ns, 0);
    assert_eq!(r[0].input_tokens, 1100);
    assert_eq!(r[0].output_tokens, 6);
    // 1100 // 512 = 2 whole pages; the partial block 2 is not a page
    assert_eq!(r[0].page_hashes, vec![mix(0, 0), mix(1, 0)]);
    assert_eq!(r[1].id, 1);
    assert_eq!(r[1].arrival_ns, 27_000_000);
    assert_eq!(r[1].page_hashes, vec![mix(0, 0)]);
    // at 64-token pages: 1100 // 64 = 17 pages, 8 per block
    let r = read_all(&p, None, 64).unwrap();
    assert_eq!(r[0].page_hashes.len(), 17);
    assert_eq!(r[0].page_hashes[7], mix(0, 7));
    assert_eq!(r[0].page_hashes[8], mix(1, 0));
    assert_eq!(r[0].page_hashes[16], mix(2, 0));
    // the shared first block gives the same first 8 pages
    assert_eq!(r[1].page_hashes[..], r[0].page_hashes[..8]);
}

#[test]
fn mooncake_bad_rows_name_their_line() {
    let d = tempfile::tempdir().unwrap();
    let good = r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#;
    // truncated line
    let p = file(
        &d,
        "a.jsonl",
        &format!("{good}\n{{\"timestamp\": 5, \"input_len\n"),
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.line, Some(2), "{e}");
    assert!(e.source.ends_with("a.jsonl"));
    assert!(e.message.starts_with("truncated line"), "{e}");
    // wrong type
    let p = file(
        &d,
        "b.jsonl",
        &format!(
            "{good}\n{good}\n{{\"timestamp\": 5, \"input_length\": \"ten\", \"output_length\": 1, \"hash_ids\": []}}\n"
        ),
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("invalid type"), "{e}");
    assert_eq!(e.field.as_deref(), Some("input_length"));
    // unknown field, named
    let p = file(
        &d,
        "c.jsonl",
        "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [], \"prompt\": \"x\"}\n",
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.line, Some(1));
    assert_eq!(e.field.as_deref(), Some("prompt"));
    // missing field, named
    let p = file(
        &d,
        "d.jsonl",
        "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n",
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.field.as_deref(), Some("hash_ids"));
    // hash_ids shorter than the whole blocks of the prompt
    let p = file(
        &d,
        "e.jsonl",
        &format!(
            "{good}\n{{\"timestamp\": 5, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [1]}}\n"
        ),
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.line, Some(2));
    assert_eq!(e.field.as_deref(), Some("hash_ids"));
    assert!(e.message.contains("need at least 2"), "{e}");
    // negative timestamp
    let p = file(
        &d,
        "f.jsonl",
        "{\"timestamp\": -5, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": []}\n",
    );
    let e = first_err(&p, Some(TraceFormat::Mooncake), 512);
    assert_eq!(e.field.as_deref(), Some("timestamp"));
    // page size that does not divide or multiply the block size
    let p = file(&d, "g.jsonl", &format!("{good}\n"));
    let e = read_all(&p, None, 48).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("page_size"));
}

#[test]
fn out_of_order_timestamps_are_flagged_or_refused() {
    let d = tempfile::tempdir().unwrap();
    let row = |t: u32| {
        format!(
            "{{\"timestamp\": {t}, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}}\n"
        )
    };
    let p = file(&d, "o.jsonl", &(row(5) + &row(9) + &row(7) + &row(3)));
    let mut r = open_trace(&p, None, 512).unwrap();
    let all: Vec<Request> = r.by_ref().map(Result::unwrap).collect();
    assert_eq!(all.len(), 4);
    // file order kept
    assert_eq!(all[2].arrival_ns, 7_000_000);
    assert_eq!(r.first_out_of_order(), Some(3));
    let opts = TraceOptions {
        require_monotonic: true,
        ..TraceOptions::default()
    };
    let e = open_trace_with(&p, &opts, 512)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_err();
    assert_eq!(e.line, Some(3));
    assert_eq!(e.field.as_deref(), Some("timestamp"));
    // or sorted stably, ids renumbered to the sorted position
    let sorted = collect_sorted(open_trace(&p, None, 512).unwrap()).unwrap();
    let t: Vec<u64> = sorted.iter().map(|r| r.arrival_ns / 1_000_000).collect();
    assert_eq!(t, vec![3, 5, 7, 9]);
    assert_eq!(
        sorted.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
}

#[test]
fn bailian_rows() {
    let d = tempfile::tempdir().unwrap();
    let p = file(
        &d,
        "q.jsonl",
        concat!(
            r#"{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61.114, "input_length": 40, "output_length": 132, "type": "text", "turn": 1, "hash_ids": [1089, 1090, 1091]}"#,
            "\n",
            r#"{"chat_id": 160, "parent_chat_id": 159, "timestamp": 62.5, "input_length": 33, "output_length": 1, "type": "text", "turn": 2, "hash_ids": [1089, 1090, 7]}"#,
            "\n",
            r#"{"chat_id": 161, "parent_chat_id": 159, "timestamp": 63, "input_length": 33, "output_length": 1, "type": "text", "turn": "two", "hash_ids": [1]}"#,
            "\n",
        ),
    );
    assert_eq!(TraceFormat::detect(&p).unwrap(), TraceFormat::Bailian);
    let mut it = open_trace(&p, None, 16).unwrap();
    let a = it.next().unwrap().unwrap();
    assert_eq!(a.arrival_ns, 61_114_000_000);
    assert_eq!(a.page_hashes, vec![mix(1089, 0), mix(1090, 0)]);
    let b = it.next().unwrap().unwrap();
    assert_eq!(b.page_hashes, vec![mix(1089, 0), mix(1090, 0)]);
    let e = it.next().unwrap().unwrap_err();
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("invalid type"), "{e}");
    assert!(it.next().is_none());
    // 32-token pages: one page per two 16-token blocks, hashed by the second
    let r = read_all(&p, Some(TraceFormat::Bailian), 32);
    assert!(r.is_err());
    let mut it = open_trace(&p, None, 32).unwrap();
    assert_eq!(it.next().unwrap().unwrap().page_hashes, vec![mix(1090, 0)]);
}

#[test]
fn csv_rows() {
    let d = tempfile::tempdir().unwrap();
    let p = file(
        &d,
        "t.csv",
        "# exported\ntimestamp_ms,input_length,output_length,hash_ids\n0,1024,5,1;2\n1.5,512,5,1\n2,0,1,\n",
    );
    let r = read_all(&p, None, 512).unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0].page_hashes, vec![mix(1, 0), mix(2, 0)]);
    assert_eq!(r[1].arrival_ns, 1_500_000);
    assert_eq!(r[2].page_hashes, Vec::<u64>::new());
    let p = file(
        &d,
        "bad.csv",
        "timestamp,input_length,output_length,hash_ids\n",
    );
    let e = first_err(&p, None, 512);
    assert_eq!(e.line, Some(1));
    assert!(e.message.contains("header"), "{e}");
    let p = file(
        &d,
        "bad2.csv",
        "timestamp_ms,input_length,output_length,hash_ids\n0,10,1,1\n0,10,1,1;x\n",
    );
    let e = first_err(&p, None, 512);
    assert_eq!(e.line, Some(3));
    assert_eq!(e.field.as_deref(), Some("hash_ids"));
    let p = file(
        &d,
        "bad3.csv",
        "timestamp_ms,input_length,output_length,hash_ids\n0,10,1\n",
    );
    let e = first_err(&p, None, 512);
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("4 comma-separated columns"), "{e}");
}

#[test]
fn kv_cache_tester_shipped_trace() {
    let p = Path::new("traces/kv-cache-tester/trace_0012.json");
    assert_eq!(TraceFormat::detect(p).unwrap(), TraceFormat::KvCacheTester);
    let rr = RecordReader::open(p, &TraceOptions::default()).unwrap();
    assert_eq!(rr.block_size(), 64);
    let reqs = read_all(p, None, 64).unwrap();
    assert_eq!(reqs.len(), 14);
    assert_eq!(reqs[0].input_tokens, 15161);
    assert_eq!(reqs[0].output_tokens, 291);
    assert_eq!(reqs[1].arrival_ns, 12_000_000_000);
    // hash_ids list whole blocks only: 15161 // 64 = 236 pages
    assert_eq!(reqs[0].page_hashes.len(), 236);
    let s = stats(reqs.into_iter().map(Ok::<_, InputError>), 64).unwrap();
    assert_eq!(s.pages, 10140);
    assert_eq!(s.distinct_pages, 1019);
}

#[test]
fn kv_cache_tester_bad_request() {
    let d = tempfile::tempdir().unwrap();
    let p = file(
        &d,
        "k.json",
        "{\"block_size\": 64,\n \"requests\": [\n {\"t\": 0, \"in\": 10, \"out\": 1, \"hash_ids\": []},\n {\"t\": 1, \"in\": 10, \"out\": 1, \"hash_ids\": [], \"oops\": 1}]}\n",
    );
    let e = first_err(&p, None, 64);
    assert_eq!(e.line, Some(4));
    assert_eq!(e.field.as_deref(), Some("oops"));
}

#[test]
fn synthetic_trace_figures() {
    let p = Path::new("traces/synthetic_trace.jsonl");
    // block level, as the shared README counts: 3,993 requests, 121,877 references,
    // 43,924 distinct, timestamps 0 .. 1,022,025 ms
    let rr = RecordReader::open(p, &TraceOptions::default()).unwrap();
    let s = block_stats(rr, 512).unwrap();
    assert_eq!(s.requests, 3993);
    assert_eq!(s.pages, 121_877);
    assert_eq!(s.distinct_pages, 43_924);
    assert_eq!(s.time_span_ns, 1_022_025_000_000);
    assert_eq!(s.input_tokens, 61_194_628);
    assert_eq!(s.output_tokens, 595_432);
    assert_eq!(s.repeated_tokens, 39_852_661);
    assert_eq!(s.infinite_capacity_hit_ceiling, 1.0 - 43_924.0 / 121_877.0);
    assert_eq!(s.out_of_order_requests, 0);
    // page level at 512 (whole pages only): 117,888 references, 40,148 distinct
    let s = stats(open_trace(p, None, 512).unwrap(), 512).unwrap();
    assert_eq!(s.pages, 117_888);
    assert_eq!(s.distinct_pages, 40_148);
    // at 64-token pages every whole 512-block gives 8 pages
    let s64 = stats(open_trace(p, None, 64).unwrap(), 64).unwrap();
    assert!(s64.pages >= 8 * 117_888);
    assert_eq!(s64.requests, 3993);
}
