//! `--shard K/N`: a deterministic 1/N of the points (those with `index % N == K-1`),
//! for Slurm job arrays, and the file names each shard writes.

use std::fmt;

use crate::error::InputError;

/// Shard `k` of `n`, 1-based (`k` in `1..=n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub k: usize,
    pub n: usize,
}

/// A shard number out of range: `K/N` needs 1 ≤ K ≤ N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("shard {k}/{n}: expected K/N with 1 ≤ K ≤ N (e.g. 2/3)")]
pub struct BadShard {
    pub k: usize,
    pub n: usize,
}

impl Shard {
    pub fn new(k: usize, n: usize) -> Result<Self, BadShard> {
        if n == 0 || k == 0 || k > n {
            return Err(BadShard { k, n });
        }
        Ok(Self { k, n })
    }

    /// Parse `K/N` as given to `--shard`.
    pub fn parse(s: &str) -> Result<Self, InputError> {
        let bad = |m: String| InputError::new("<command line>", m).field("--shard");
        let (k, n) = s
            .split_once('/')
            .ok_or_else(|| bad(format!("`{s}`: expected K/N, e.g. 2/3")))?;
        let k: usize = k
            .trim()
            .parse()
            .map_err(|_| bad(format!("`{s}`: K is not a positive integer")))?;
        let n: usize = n
            .trim()
            .parse()
            .map_err(|_| bad(format!("`{s}`: N is not a positive integer")))?;
        Self::new(k, n).map_err(|e| bad(e.to_string()))
    }

    /// Whether point `index` belongs to this shard.
    pub fn owns(&self, index: usize) -> bool {
        index % self.n == self.k - 1
    }

    /// File-name stem: `results.shard-K-of-N`.
    pub fn stem(&self) -> String {
        format!("results.shard-{}-of-{}", self.k, self.n)
    }

    /// The shard a file name such as `results.shard-2-of-3.csv` belongs to.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let i = name.find("shard-")?;
        let rest = &name[i + 6..];
        let (k, rest) = rest.split_once("-of-")?;
        let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Self::new(k.parse().ok()?, n.parse().ok()?).ok()
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

/// Stem of the output files: `results` unsharded, `results.shard-K-of-N` for a shard.
pub fn stem(shard: Option<Shard>) -> String {
    shard.map_or_else(|| "results".to_string(), |s| s.stem())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_own() {
        let s = Shard::parse("2/3").unwrap();
        assert_eq!(s, Shard { k: 2, n: 3 });
        assert!(s.owns(1) && s.owns(4) && !s.owns(0) && !s.owns(2));
        assert!(Shard::parse("0/3").is_err());
        assert!(Shard::parse("4/3").is_err());
        assert!(Shard::parse("x").is_err());
        assert_eq!(
            Shard::from_file_name("results.shard-2-of-3.csv"),
            Some(Shard { k: 2, n: 3 })
        );
        assert_eq!(stem(Some(s)), "results.shard-2-of-3");
        assert_eq!(stem(None), "results");
    }
}
