//! SGLang's own vocabulary, typed: the server arguments a scenario gives
//! ([`ServerArgs`], under SGLang's dest names) and one enum per SGLang choice
//! ([`choices`]), spelled exactly as SGLang's flags spell them.
//!
//! Every layer speaks it — the scenario loader fills it, the release rules check it, the
//! sizing rules, the pools and the replay read it — so it sits below all of them and
//! imports nothing of the simulator but [`crate::error::nearest`] (for "did you mean").
//! What a *release* accepts of a choice (its argparse `choices=`, which change from
//! release to release) is the release module's business; the enums here hold every
//! spelling any modelled release, or the simulator's replay, knows.

pub mod choices;
mod server_args;

pub use choices::{
    Choice, DisaggregationMode, EvictionPolicy, HostMemoryMode, IoBackend, KvCacheDtype, MemLayout,
    PrefetchPolicy, SpecAlgorithm, SpeculativeAlgorithm, StorageBackend, WritePolicy,
};
pub use server_args::{ServerArgs, SglangEnv};
