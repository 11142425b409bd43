//! Command-line arguments of `hicache-sim sweep`, `merge` and `plot`, as clap `Args`
//! structs for `main.rs` to embed in its subcommands, and the two commands that need
//! nothing from the scenario or the pipeline (`merge`, `plot`).
//!
//! ```text
//! hicache-sim sweep SCENARIO [--jobs N] [--out DIR] [--resume] [--shard K/N] [--quiet] [--no-plots]
//! hicache-sim merge SHARD.csv… [--out FILE]
//! hicache-sim plot RESULTS.csv [--x FIELD] [--y FIELD[,FIELD…]] [--group FIELD] [--out DIR]
//! ```

use std::path::PathBuf;

use clap::Args;

use super::{RunOptions, Shard, SweepError};
use crate::error::InputError;
use crate::report::plot::{self, PlotError, PlotInfo};

/// `hicache-sim sweep`.
#[derive(Debug, Clone, Args)]
pub struct SweepArgs {
    /// Scenario YAML with a `sweep:` section.
    pub scenario: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j', default_value_t = 0)]
    pub jobs: usize,
    /// Output folder for results.csv, its journal and the plots.
    #[arg(long, short = 'o', default_value = "sweep-out")]
    pub out: PathBuf,
    /// Keep the rows already in the folder's journal; compute only the missing points.
    #[arg(long)]
    pub resume: bool,
    /// Run only shard K of N (points with index % N == K-1), e.g. 2/8.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Do not draw the default plots next to the CSV.
    #[arg(long)]
    pub no_plots: bool,
}

impl SweepArgs {
    /// The run options, given the pipeline's columns.
    pub fn options(&self, columns: Vec<String>) -> Result<RunOptions, InputError> {
        let mut o = RunOptions::new(&self.out, columns);
        o.jobs = self.jobs;
        o.resume = self.resume;
        o.quiet = self.quiet;
        o.shard = self.shard.as_deref().map(Shard::parse).transpose()?;
        o.plots = !self.no_plots;
        Ok(o)
    }
}

/// `hicache-sim merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shard CSVs (results.shard-K-of-N.csv), any order.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output CSV (default: results.csv beside the first shard).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

impl MergeArgs {
    /// Merge and write; returns the path written.
    pub fn run(&self) -> Result<PathBuf, SweepError> {
        let out = self.out.clone().unwrap_or_else(|| {
            self.files[0]
                .parent()
                .map_or_else(|| PathBuf::from("results.csv"), |d| d.join("results.csv"))
        });
        super::merge_to(&self.files, &out)?;
        Ok(out)
    }
}

/// `hicache-sim plot`.
#[derive(Debug, Clone, Args)]
pub struct PlotArgs {
    /// A results CSV (from sweep or merge) or a replay timeline CSV.
    pub csv: PathBuf,
    /// Column for the x axis (default: the sweep's fraction axis, or its first axis).
    #[arg(long)]
    pub x: Option<String>,
    /// Column(s) for the y axis, comma-separated (default: the standard plots).
    #[arg(long)]
    pub y: Option<String>,
    /// Column whose values make one line each.
    #[arg(long)]
    pub group: Option<String>,
    /// Output folder (default: the CSV's folder).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

impl PlotArgs {
    pub fn run(&self) -> Result<Vec<PlotInfo>, PlotError> {
        let out = self.out.clone().unwrap_or_else(|| {
            self.csv
                .parent()
                .map_or_else(|| PathBuf::from("."), PathBuf::from)
        });
        plot::plot_csv(
            &self.csv,
            self.x.as_deref(),
            self.y.as_deref(),
            self.group.as_deref(),
            &out,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sweep: SweepArgs,
    }

    #[test]
    fn sweep_flags() {
        let c = Cli::parse_from([
            "x", "s.yaml", "--jobs", "2", "--shard", "2/3", "--resume", "-q",
        ]);
        let o = c.sweep.options(vec!["a".into()]).unwrap();
        assert_eq!(o.jobs, 2);
        assert_eq!(o.shard, Some(Shard { k: 2, n: 3 }));
        assert!(o.resume && o.quiet && o.plots);
        let c = Cli::parse_from(["x", "s.yaml", "--shard", "4/3"]);
        let e = c.sweep.options(vec![]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("--shard"));
    }
}
