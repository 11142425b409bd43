//! The start-up simulation: ranks as event sequences on each node's memory, sized under
//! one SGLang version's rules; one run per seed, or a Monte Carlo over rank jitter.

pub mod montecarlo;
pub mod outcome;
pub mod plan;
pub mod sim;

pub use montecarlo::{MonteCarlo, Quantiles, RunOutcomes, run};
pub use outcome::{Failure, binding_rank, first_failure, status, verdict};
pub use plan::StartupPlan;
pub use sim::{ALL_HOST_POOLS, Outcome, PoolResult, RankResult, Scratch, simulate};
