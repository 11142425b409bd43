//! The generated traces shipped in `traces/` are reproducible byte for byte from their
//! recipe and seed (see `traces/README.md`). To rewrite them after a deliberate change
//! of the generator: `REGEN_TRACES=1 cargo test --test it workload_shipped_traces`.

use std::path::Path;

use hicache_sim::workload::{
    GeneratorConfig, MooncakeWriter, TraceFormat, TraceOptions, generate_records, open_trace_with,
    stats,
};

/// (recipe, output, seed)
const SHIPPED: &[(&str, &str, u64)] = &[
    (
        "traces/recipes/chat_agentic_mix.json",
        "traces/generated_chat_agentic_mix.jsonl",
        20261130,
    ),
    (
        "traces/recipes/agentic_bursty.json",
        "traces/generated_agentic_bursty.jsonl",
        7,
    ),
];

fn render(recipe: &str, seed: u64) -> (GeneratorConfig, Vec<u8>) {
    let cfg: GeneratorConfig =
        serde_json::from_str(&std::fs::read_to_string(recipe).unwrap()).unwrap();
    let mut w = MooncakeWriter::new(Vec::new(), true).with_block_size(cfg.block_size);
    for r in generate_records(&cfg, seed).unwrap() {
        w.write(&r).unwrap();
    }
    (cfg, w.finish().unwrap().0)
}

#[test]
fn shipped_generated_traces_are_reproducible() {
    for &(recipe, out, seed) in SHIPPED {
        let (cfg, bytes) = render(recipe, seed);
        if std::env::var_os("REGEN_TRACES").is_some() {
            std::fs::write(out, &bytes).unwrap();
        }
        let shipped = std::fs::read(out).unwrap();
        assert!(
            shipped == bytes,
            "{out} differs from {recipe} with seed {seed}"
        );
        // and it reads back as a Mooncake trace at the recipe's block size
        let opts = TraceOptions {
            format: Some(TraceFormat::Mooncake),
            block_size: Some(cfg.block_size),
            require_monotonic: true,
        };
        let s = stats(
            open_trace_with(Path::new(out), &opts, cfg.page_size).unwrap(),
            cfg.page_size,
        )
        .unwrap();
        assert_eq!(s.requests, cfg.requests);
        assert_eq!(s.out_of_order_requests, 0);
        // shared system prompts and growing sessions: most pages repeat
        assert!(s.infinite_capacity_hit_ceiling > 0.5, "{out}: {s:?}");
    }
}
