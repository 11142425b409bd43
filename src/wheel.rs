//! The SGLang wheels this simulator models, as one typed value: [`Release`]. It sits at
//! the bottom of the crate so that the generated flag table (`crate::flags`) is keyed by
//! it; what each release decides is `crate::release` (`Release::rules`).

use std::fmt;

use serde::Serialize;

/// A released SGLang wheel on PyPI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Release {
    #[serde(rename = "0.5.14")]
    V0_5_14,
    #[serde(rename = "0.5.15")]
    V0_5_15,
    #[serde(rename = "0.5.15.post1")]
    V0_5_15Post1,
    #[serde(rename = "0.5.16")]
    V0_5_16,
    #[serde(rename = "0.5.17")]
    V0_5_17,
    #[serde(rename = "0.5.18")]
    V0_5_18,
    #[serde(rename = "0.5.19")]
    V0_5_19,
    #[serde(rename = "0.5.20")]
    V0_5_20,
    #[serde(rename = "0.5.21")]
    V0_5_21,
    #[serde(rename = "0.5.22")]
    V0_5_22,
    #[serde(rename = "0.5.23")]
    V0_5_23,
}

impl Release {
    /// Oldest first.
    pub const ALL: [Release; 11] = [
        Release::V0_5_14,
        Release::V0_5_15,
        Release::V0_5_15Post1,
        Release::V0_5_16,
        Release::V0_5_17,
        Release::V0_5_18,
        Release::V0_5_19,
        Release::V0_5_20,
        Release::V0_5_21,
        Release::V0_5_22,
        Release::V0_5_23,
    ];

    /// The newest modelled release: what `latest` and a scenario without `sglang:` mean.
    pub const LATEST: Release = Release::V0_5_23;

    pub fn id(self) -> &'static str {
        match self {
            Release::V0_5_14 => "0.5.14",
            Release::V0_5_15 => "0.5.15",
            Release::V0_5_15Post1 => "0.5.15.post1",
            Release::V0_5_16 => "0.5.16",
            Release::V0_5_17 => "0.5.17",
            Release::V0_5_18 => "0.5.18",
            Release::V0_5_19 => "0.5.19",
            Release::V0_5_20 => "0.5.20",
            Release::V0_5_21 => "0.5.21",
            Release::V0_5_22 => "0.5.22",
            Release::V0_5_23 => "0.5.23",
        }
    }

    /// Build date of the wheel (the newest file timestamp inside it, which is also its
    /// `dist-info/METADATA` date).
    pub fn date(self) -> &'static str {
        match self {
            Release::V0_5_14 => "2026-06-26",
            Release::V0_5_15 => "2026-07-10",
            Release::V0_5_15Post1 => "2026-07-14",
            Release::V0_5_16 => "2026-07-25",
            Release::V0_5_17 => "2026-08-08",
            Release::V0_5_18 => "2026-08-21",
            Release::V0_5_19 => "2026-09-04",
            Release::V0_5_20 => "2026-09-18",
            Release::V0_5_21 => "2026-10-01",
            Release::V0_5_22 => "2026-10-15",
            Release::V0_5_23 => "2026-10-30",
        }
    }

    /// The earlier release whose modelled rules this one repeats (an alias), if any.
    pub fn same_as(self) -> Option<Release> {
        match self {
            Release::V0_5_15Post1 | Release::V0_5_16 => Some(Release::V0_5_15),
            _ => None,
        }
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}
