//! Research sweeps (issue #4): axes over any scenario field, their cartesian product with
//! zipped groups and seed replicas ([`spec`], [`expand`]); parallel, deterministic
//! execution with a per-row journal, resume and shards ([`run`]); merging shard CSVs
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
