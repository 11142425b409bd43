//! A journal of the same sweep written by an earlier build: `--resume` takes it when
//! the only differences are keys this build added at their default value and output
//! columns this build added. Its rows keep every figure they hold; an added column is
//! empty in them, and the run says so. Anything else (a key with another value, a key
//! removed, a column removed or renamed, other points, another shard, bundled data or a
//! trace that changed) is still refused by [`super::run::header_difference`].

use std::collections::BTreeMap;

use super::journal::Header;

/// What an earlier build's journal lacks, against this build's header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Upgrade {
    /// Scenario keys this build writes that the journal lacks, each at its default.
    pub added_keys: Vec<String>,
    /// Output columns this build writes that the journal lacks (empty in its rows).
    pub added_columns: Vec<String>,
}

impl Upgrade {
    /// One line for stderr: what was taken from the earlier build and what is empty.
    pub fn describe(&self, rows: usize) -> String {
        let mut parts = Vec::new();
        if !self.added_keys.is_empty() {
            parts.push(format!(
                "it lacks key(s) {} (this build's default, the value it had)",
                self.added_keys.join(", ")
            ));
        }
        if !self.added_columns.is_empty() {
            parts.push(format!(
                "column(s) {} are empty in its {rows} row(s) (run without --resume to fill them)",
                self.added_columns.join(", ")
            ));
        }
        format!(
            "resumed a journal written by an earlier build: {}",
            parts.join("; ")
        )
    }

    /// `row` (in `old`'s columns) in `new`'s columns: each cell under its column's name,
    /// an added column empty.
    pub fn convert_row(old: &[String], new: &[String], row: &[String]) -> Vec<String> {
        new.iter()
            .map(|c| {
                old.iter()
                    .position(|o| o == c)
                    .and_then(|i| row.get(i).cloned())
                    .unwrap_or_default()
            })
            .collect()
    }
}

/// `Some` when `old` is this sweep's journal written by an earlier build that differs
/// from `new` only by keys added at their default (`defaults`: the flattened
/// [`crate::scenario::load::flattened_defaults`]) and columns added (the point, axis,
/// seed and error columns unchanged, every old column kept in order); `None` otherwise.
/// An identical header, or one that differs only by its fingerprint (other points), is
/// not an upgrade (`None`). The caller checks each row against its point.
pub fn upgrade(old: &Header, new: &Header, defaults: &BTreeMap<String, String>) -> Option<Upgrade> {
    if old == new
        || old.hicache_sim_journal != new.hicache_sim_journal
        || old.points_total != new.points_total
        || old.shard != new.shard
    {
        return None;
    }
    // Keys: none removed, none changed, each added one at its default.
    if old
        .scenario
        .iter()
        .any(|(k, v)| new.scenario.get(k) != Some(v))
    {
        return None;
    }
    let mut added_keys = Vec::new();
    for (k, v) in &new.scenario {
        if !old.scenario.contains_key(k) {
            if defaults.get(k) != Some(v) {
                return None;
            }
            added_keys.push(k.clone());
        }
    }
    // Columns: the old ones, in order, a subsequence of the new; the fixed ones (point,
    // axes, seed: everything up to `seed`; `error` last) the same.
    let fixed = |h: &[String]| h.iter().position(|c| c == "seed").map(|i| i + 1);
    let (Some(fo), Some(fnew)) = (fixed(&old.columns), fixed(&new.columns)) else {
        return None;
    };
    let ends_in_error = |h: &[String]| h.last().map(String::as_str) == Some("error");
    if old.columns[..fo] != new.columns[..fnew]
        || !ends_in_error(&old.columns)
        || !ends_in_error(&new.columns)
    {
        return None;
    }
    let mut it = new.columns.iter();
    if !old.columns.iter().all(|c| it.any(|n| n == c)) {
        return None;
    }
    let added_columns: Vec<String> = new
        .columns
        .iter()
        .filter(|c| !old.columns.contains(c))
        .cloned()
        .collect();
    // Nothing added: the difference is elsewhere (the points), not an earlier build.
    if added_keys.is_empty() && added_columns.is_empty() {
        return None;
    }
    Some(Upgrade {
        added_keys,
        added_columns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn header(cols: &[&str], scen: &[(&str, &str)]) -> Header {
        Header {
            hicache_sim_journal: 3,
            fingerprint: "f".into(),
            points_total: 4,
            shard: None,
            columns: s(cols),
            scenario: scen
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn defaults() -> BTreeMap<String, String> {
        [("server.new_key", "null"), ("server.page_size", "1")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_added_default_key_and_column_are_an_upgrade() {
        let old = header(
            &["point", "x", "seed", "a", "error"],
            &[("server.page_size", "64")],
        );
        let new = header(
            &["point", "x", "seed", "a", "binding_pool", "error"],
            &[("server.page_size", "64"), ("server.new_key", "null")],
        );
        let u = upgrade(&old, &new, &defaults()).unwrap();
        assert_eq!(u.added_keys, s(&["server.new_key"]));
        assert_eq!(u.added_columns, s(&["binding_pool"]));
        assert_eq!(
            Upgrade::convert_row(&old.columns, &new.columns, &s(&["0", "1", "7", "42", ""])),
            s(&["0", "1", "7", "42", "", ""])
        );
        assert!(
            u.describe(3)
                .contains("binding_pool are empty in its 3 row(s)")
        );
    }

    #[test]
    fn anything_else_is_not() {
        let old = header(
            &["point", "x", "seed", "a", "error"],
            &[("server.page_size", "64")],
        );
        let d = defaults();
        // identical: not an upgrade
        assert_eq!(upgrade(&old, &old, &d), None);
        // a key added at a value other than its default
        let new = header(
            &["point", "x", "seed", "a", "error"],
            &[("server.page_size", "64"), ("server.new_key", "3")],
        );
        assert_eq!(upgrade(&old, &new, &d), None);
        // a key changed
        let new = header(
            &["point", "x", "seed", "a", "error"],
            &[("server.page_size", "32")],
        );
        assert_eq!(upgrade(&old, &new, &d), None);
        // a key removed
        let new = header(&["point", "x", "seed", "a", "error"], &[]);
        assert_eq!(upgrade(&old, &new, &d), None);
        // a column removed, or an axis added
        let new = header(
            &["point", "x", "seed", "error"],
            &[("server.page_size", "64")],
        );
        assert_eq!(upgrade(&old, &new, &d), None);
        let new = header(
            &["point", "x", "y", "seed", "a", "error"],
            &[("server.page_size", "64")],
        );
        assert_eq!(upgrade(&old, &new, &d), None);
        // columns reordered
        let old2 = header(
            &["point", "x", "seed", "a", "b", "error"],
            &[("server.page_size", "64")],
        );
        let new = header(
            &["point", "x", "seed", "b", "a", "c", "error"],
            &[("server.page_size", "64")],
        );
        assert_eq!(upgrade(&old2, &new, &d), None);
        // only the fingerprint (other axis values): not an upgrade
        let mut other = old.clone();
        other.fingerprint = "g".into();
        assert_eq!(upgrade(&old, &other, &d), None);
        // other points or shard
        let mut new = header(
            &["point", "x", "seed", "a", "c", "error"],
            &[("server.page_size", "64")],
        );
        assert!(upgrade(&old, &new, &d).is_some());
        new.points_total = 5;
        assert_eq!(upgrade(&old, &new, &d), None);
        new.points_total = 4;
        new.shard = Some("1/2".into());
        assert_eq!(upgrade(&old, &new, &d), None);
    }
}
