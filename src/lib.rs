//! hicache-sim: a discrete-event simulator of SGLang's HiCache memory tiers — GPU HBM
//! (L1), pinned host DRAM (L2) and storage (L3) — and of the start-up sizing of the host
//! pools under each SGLang version's rules, on real machines under real memory limits.
//!
//! The binary (`src/main.rs`) is a thin CLI over this library ([`cli`] is its grammar). Module map:
//! - [`units`], [`error`], [`fingerprint`], [`input`]: quantities at the edges, input errors
//!   with file/line/field, stable content hashes, bounded reads of the user's files;
//! - [`domain`]: SGLang's vocabulary, typed — server arguments and one enum per choice;
//! - [`engine`]: virtual time, event queue, seeded RNG — no model code;
//! - [`hardware`], [`model`]: node presets, Linux/cgroup memory accounting, KV geometry;
//! - [`release`]: SGLang releases (`0.5.14`…`0.5.23`) and PR-era what-ifs, each one
//!   complete rule set (sizing, controller, tree, flags) read by every layer;
//! - [`sizing`]: SGLang's host-pool sizing rules, one policy per version;
//! - [`startup`]: ranks starting up as events, Monte Carlo over rank jitter;
//! - [`cache`], [`runtime`], [`workload`], [`policy_sim`]: the runtime tiers and traces;
//! - [`scenario`], [`sweep`], [`report`]: YAML input, parameter sweeps, text/JSON/plots;
//! - [`capture`]: a scenario's `node:` and `memory:` measured on the machine it runs on.

pub mod cache;
pub mod capture;
pub mod cli;
pub mod commands;
pub mod domain;
pub mod engine;
pub mod error;
pub mod fingerprint;
pub mod flags;
pub mod hardware;
pub mod input;
pub mod model;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod policy_sim;
pub mod pools;
pub mod reference;
pub mod release;
pub mod report;
pub mod runtime;
pub mod scenario;
pub mod sizing;
pub mod startup;
pub mod sweep;
pub mod units;
pub mod wheel;
pub mod workload;
