//! One integration-test crate: a module per area, so `cargo test` links one test binary
//! instead of one per file (the link step dominated a cold build on 2 cores).

mod cache_props;
mod cache_rules;
mod check;
mod cli_replay_trace;
mod cli_startup;
mod fuzz_cli;
mod golden_startup;
mod launch_corpus;
mod launch_issue9;
mod pipeline_quickstart;
mod plan;
mod plot_charts;
mod policy_sim_mixed_ids;
mod policy_sim_props;
mod policy_sim_synthetic;
mod releases;
mod reliability;
mod replay_rules;
mod sizing_headroom;
mod sizing_host_memory_props;
mod sizing_incidents;
mod sizing_presets;
mod sizing_sglang_cases;
mod startup_incidents;
mod sweep_cli;
mod sweep_props;
mod sweep_run;
mod sweep_spec;
mod trace_scale;
mod tree_golden;
mod tree_unified_rules;
mod workload_generate;
mod workload_props;
mod workload_readers;
mod workload_shipped_traces;
