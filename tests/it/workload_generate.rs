//! Generators: determinism per seed, exact session shapes on hand-set configs, shared
//! system prompts, the Mooncake writer round trip, and config validation.

use hicache_sim::workload::generate::{Arrivals, Range, SessionKind, SystemPrompts};
use hicache_sim::workload::read::RecordReader;
use hicache_sim::workload::{
    GeneratorConfig, Reblocker, TraceFormat, TraceOptions, generate, generate_records,
    write_mooncake_jsonl,
};

fn jsonl(cfg: &GeneratorConfig, seed: u64) -> Vec<u8> {
    let mut out = Vec::new();
    write_mooncake_jsonl(&mut out, generate_records(cfg, seed).unwrap()).unwrap();
    out
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let cfg = GeneratorConfig::example(400);
    let a = jsonl(&cfg, 7);
    let b = jsonl(&cfg, 7);
    let c = jsonl(&cfg, 8);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.iter().filter(|&&x| x == b'\n').count(), 400);
}

#[test]
fn requests_come_in_arrival_order_with_sequential_ids() {
    let cfg = GeneratorConfig::example(2000);
    let reqs: Vec<_> = generate(&cfg, 1).unwrap().collect();
    assert_eq!(reqs.len(), 2000);
    for (i, w) in reqs.windows(2).enumerate() {
        assert!(w[0].arrival_ns <= w[1].arrival_ns, "request {i}");
        assert_eq!(w[1].id, w[0].id + 1);
    }
    assert_eq!(reqs[0].id, 0);
    // page hashes are the records' block hashes re-blocked 16 -> 64
    let rb = Reblocker::new(16, 64).unwrap();
    let mut v = Vec::new();
    for (r, rec) in reqs.iter().zip(generate_records(&cfg, 1).unwrap()) {
        rb.page_hashes(&rec.block_hashes, rec.input_tokens, &mut v)
            .unwrap();
        assert_eq!(r.page_hashes, v);
        assert_eq!(r.input_tokens as usize / 64, v.len());
    }
}

/// Sessions far apart (1 per 1000 s, think time 0), so each session's requests are
/// consecutive and its shape can be checked exactly.
fn lone_sessions(kind: SessionKind, system: u32) -> GeneratorConfig {
    GeneratorConfig {
        requests: 9,
        block_size: 16,
        page_size: 16,
        arrivals: Arrivals::Poisson { rate_per_s: 0.001 },
        system_prompts: SystemPrompts {
            count: if system > 0 { 1 } else { 0 },
            zipf_s: 1.0,
            tokens: Range::fixed(system),
        },
        sessions: vec![kind],
    }
}

#[test]
fn chat_context_grows_by_answer_and_user_message() {
    let cfg = lone_sessions(
        SessionKind::Chat {
            weight: 1.0,
            turns: Range::fixed(3),
            user_tokens: Range::fixed(100),
            output_tokens: Range::fixed(40),
            think_time_s: 0.0,
        },
        64,
    );
    let r: Vec<_> = generate(&cfg, 3).unwrap().collect();
    // turn 1: 64 + 100; turn 2: + 40 + 100; turn 3: + 40 + 100
    let inputs: Vec<u32> = r.iter().map(|x| x.input_tokens).collect();
    assert_eq!(inputs, vec![164, 304, 444, 164, 304, 444, 164, 304, 444]);
    assert!(r.iter().all(|x| x.output_tokens == 40));
    // within a session each prompt extends the previous one page for page
    for s in 0..3 {
        let (a, b, c) = (&r[3 * s], &r[3 * s + 1], &r[3 * s + 2]);
        assert_eq!(b.page_hashes[..a.page_hashes.len()], a.page_hashes[..]);
        assert_eq!(c.page_hashes[..b.page_hashes.len()], b.page_hashes[..]);
        assert_eq!(a.arrival_ns, c.arrival_ns); // think time 0
    }
    // the shared system prompt (64 tokens = 4 pages) is common to all sessions, the
    // user messages are not
    assert_eq!(r[0].page_hashes[..4], r[3].page_hashes[..4]);
    assert_eq!(r[0].page_hashes[..4], r[6].page_hashes[..4]);
    assert_ne!(r[0].page_hashes[4], r[3].page_hashes[4]);
}

#[test]
fn agentic_loop_appends_short_tool_results_to_a_long_context() {
    let cfg = lone_sessions(
        SessionKind::Agentic {
            weight: 1.0,
            context_tokens: Range::fixed(1000),
            loops: Range::fixed(3),
            append_tokens: Range::fixed(100),
            output_tokens: Range::fixed(10),
            think_time_s: 1.0,
        },
        0,
    );
    let r: Vec<_> = generate(&cfg, 5).unwrap().collect();
    let inputs: Vec<u32> = r.iter().take(3).map(|x| x.input_tokens).collect();
    assert_eq!(inputs, vec![1000, 1110, 1220]);
    assert!(r[1].arrival_ns > r[0].arrival_ns);
    // different sessions have different task contexts
    assert_ne!(r[0].page_hashes[0], r[3].page_hashes[0]);
}

#[test]
fn written_trace_reads_back_identically() {
    let cfg = GeneratorConfig {
        arrivals: Arrivals::Gamma {
            rate_per_s: 3.0,
            cv: 2.0,
        },
        ..GeneratorConfig::example(300)
    };
    let bytes = jsonl(&cfg, 11);
    let opts = TraceOptions {
        format: Some(TraceFormat::Mooncake),
        block_size: Some(16),
        require_monotonic: true,
    };
    let back: Vec<_> = RecordReader::from_reader(
        "gen",
        std::io::Cursor::new(bytes),
        TraceFormat::Mooncake,
        &opts,
    )
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap();
    let orig: Vec<_> = generate_records(&cfg, 11).unwrap().collect();
    assert_eq!(back.len(), 300);
    for (a, b) in orig.iter().zip(&back) {
        assert_eq!(a.arrival_ns, b.arrival_ns);
        assert_eq!(a.input_tokens, b.input_tokens);
        assert_eq!(a.output_tokens, b.output_tokens);
        assert_eq!(a.block_hashes, b.block_hashes);
    }
}

#[test]
fn config_is_checked() {
    let json = serde_json::to_string(&GeneratorConfig::example(10)).unwrap();
    let back: GeneratorConfig = serde_json::from_str(&json).unwrap();
    assert_eq!(back, GeneratorConfig::example(10));
    let bad = json.replacen("\"requests\"", "\"requestz\"", 1);
    let e = serde_json::from_str::<GeneratorConfig>(&bad).unwrap_err();
    assert!(e.to_string().contains("unknown field `requestz`"), "{e}");
    let mut c = GeneratorConfig::example(10);
    c.page_size = 24; // neither a multiple nor a divisor of 16
    assert_eq!(generate(&c, 1).err().unwrap().field, "page_size");
    let mut c = GeneratorConfig::example(10);
    c.arrivals = Arrivals::Poisson { rate_per_s: 0.0 };
    assert_eq!(generate(&c, 1).err().unwrap().field, "arrivals.rate_per_s");
}
