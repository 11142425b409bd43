//! `replay --sensitivity`: the timed replay once more per cost term of the time model,
//! each made 25 % dearer on its own (`runtime::sensitivity`), ranked by how far it moves
//! the mean TTFT.

use crate::error::InputError;
use crate::runtime::sensitivity::{Row, Term, rank};
use crate::runtime::{ReplayConfig, ReplayMetrics, Timing};
use crate::scenario::RuntimeSection;

/// The report's rows for the timed replay `base` of `section` under `cfg`: one replay
/// per term with a cost in `cfg`, run in parallel (rows in a fixed order whatever the
/// threads), ranked.
pub fn sensitivity(
    section: &RuntimeSection,
    cfg: &ReplayConfig,
    base: &ReplayMetrics,
) -> Result<Vec<Row>, InputError> {
    use rayon::prelude::*;
    needs_timing(cfg)?;
    let variants: Vec<(Term, ReplayConfig, String)> = Term::ALL
        .iter()
        .filter_map(|&t| t.dearer(cfg).map(|(c, what)| (t, c, what)))
        .collect();
    let rows = variants
        .into_par_iter()
        .map(|(t, c, what)| super::run_replay(section, &c).map(|m| Row::of(t, what, &m)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rank(crate::runtime::sensitivity::ttft_mean(base), rows))
}

/// The report needs a timed replay: the cost terms move times only. Checked before the
/// replay it compares with.
pub fn needs_timing(cfg: &ReplayConfig) -> Result<(), InputError> {
    match cfg.measurement.timing {
        Timing::On => Ok(()),
        _ => Err(InputError::new(
            "--sensitivity",
            "the cost terms move times only: the replay must be timed (runtime.replay.timing: on, or --timing on)",
        )),
    }
}
