//! Research sweeps: axes over any scenario field, their cartesian product with
//! zipped groups and seed replicas ([`spec`], [`expand`]); parallel, deterministic
//! execution with a per-row journal, resume (of an earlier build's journal too,
//! [`upgrade`]) and shards ([`run`]); merging shard CSVs
//! into exactly the unsharded file ([`merge`]).
//!
//! The per-point pipeline (start-up → host pool → replay → one row) is not here: it is
//! the `runner` closure handed to [`run()`]. This module only guarantees that the CSV it
//! writes depends on the points and the runner's results, never on thread count,
//! completion order, interruptions or sharding.

pub mod expand;
pub mod spec;

pub use expand::{Point, apply, check_points, expand, lookup, scenario_seed};
pub use spec::{Axis, Seeding, Seeds, SweepSpec, ZipGroup};
pub mod journal;
pub mod merge;
pub mod row;
pub mod run;
pub mod shard;
pub mod upgrade;

pub use merge::{merge, merge_to};
pub use row::{Row, value_cell};
pub use run::{PlotData, PointError, RunOptions, Runner, SweepSummary, run};
pub use shard::Shard;

use std::path::{Path, PathBuf};

/// Errors of running or merging a sweep (bad sweep *files* are [`crate::error::InputError`]s
/// from [`expand()`]).
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Journal {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: {message}", path.display())]
    Mismatch { path: PathBuf, message: String },
    #[error("merge: {0}")]
    Merge(String),
    #[error("{0}")]
    Locked(String),
    #[error("thread pool: {0}")]
    Pool(String),
    #[error(transparent)]
    Input(#[from] crate::error::InputError),
}

impl SweepError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        SweepError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
