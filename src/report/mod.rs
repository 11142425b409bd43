//! Output: text tables and JSON for each command, and plots.

pub mod html;
pub mod plan_plot;
pub mod plot;
pub mod startup;
pub mod startup_all;
