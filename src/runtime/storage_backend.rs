//! Storage (L3) backend presets: `runtime.replay.storage_backend: NAME`
//! picks read / write bandwidth and per-operation latency for the timed replay's storage
//! links from `storage_backends.yaml`, each with its stated source. The names are
//! SGLang's `--hicache-storage-backend` values (`server_args.py`, 0.5.14-0.5.23); a
//! figure the scenario sets itself wins over the preset's.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

use crate::domain::{Choice, StorageBackend};
use crate::units::{Bandwidth, Duration};

/// The embedded preset file (also read by the published-benchmark replays).
pub const STORAGE_BACKENDS_YAML: &str = include_str!("storage_backends.yaml");

/// One backend's figures, per rank. `None`: nothing published, the node's are kept.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageBackendPreset {
    /// First SGLang release that accepts the name.
    pub since: String,
    pub read: Option<Bandwidth>,
    pub write: Option<Bandwidth>,
    pub latency: Option<Duration>,
    /// Where the figures come from, or why there are none.
    pub source: String,
}

/// Every preset, by SGLang backend (every [`StorageBackend`] has one: checked when the
/// file is read, and by a unit test).
pub fn presets() -> &'static BTreeMap<StorageBackend, StorageBackendPreset> {
    static P: OnceLock<BTreeMap<StorageBackend, StorageBackendPreset>> = OnceLock::new();
    P.get_or_init(|| {
        let p: BTreeMap<StorageBackend, StorageBackendPreset> =
            serde_saphyr::from_str(STORAGE_BACKENDS_YAML)
                .expect("src/runtime/storage_backends.yaml parses (checked by a unit test)");
        assert!(
            StorageBackend::ALL.iter().all(|b| p.contains_key(b)),
            "src/runtime/storage_backends.yaml has every backend (checked by a unit test)"
        );
        p
    })
}

/// `b`'s preset.
pub fn preset(b: StorageBackend) -> &'static StorageBackendPreset {
    &presets()[&b]
}

/// The backends' names, sorted (as messages list them).
fn names() -> Vec<&'static str> {
    let mut n: Vec<&str> = StorageBackend::ALL.iter().map(|b| b.id()).collect();
    n.sort_unstable();
    n
}

/// The backend SGLang spells `name`, or an error listing the names (and the nearest one).
pub fn find(name: &str) -> Result<StorageBackend, crate::error::UnknownName> {
    StorageBackend::from_id(name).ok_or_else(|| {
        crate::error::UnknownName::new(
            "storage backend",
            name,
            names(),
            names().into_iter().map(str::to_string).collect(),
        )
    })
}

/// `runtime.replay.storage_backend`: a backend's name (`null` = none), else [`find`]'s
/// message.
pub fn deserialize_opt<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<StorageBackend>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|n| find(&n).map_err(serde::de::Error::custom))
        .transpose()
}

/// The replay fields a preset fills, with its values (those it has).
pub fn fields(p: &StorageBackendPreset) -> Vec<(&'static str, serde_json::Value)> {
    let mut out = Vec::new();
    if let Some(b) = p.read {
        out.push(("storage_read_bandwidth", serde_json::Value::from(b.0)));
    }
    if let Some(b) = p.write {
        out.push(("storage_write_bandwidth", serde_json::Value::from(b.0)));
    }
    if let Some(d) = p.latency {
        out.push((
            "storage_latency",
            serde_json::Value::from(format!("{}ns", d.0)),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_parse_and_carry_sources() {
        let p = presets();
        // SGLang 0.5.22's choices, all present.
        for n in [
            "file",
            "sim",
            "mooncake",
            "npu_memcache",
            "hf3fs",
            "nixl",
            "aibrix",
            "dynamic",
            "eic",
            "simm",
            "mori",
            "shm",
            "tensorcast",
            "seaweedfs",
        ] {
            let b = find(n).unwrap();
            assert!(p.contains_key(&b), "{n}");
            assert!(!p[&b].source.is_empty(), "{n}");
        }
        assert_eq!(p.len(), StorageBackend::ALL.len());
        use StorageBackend::*;
        // Mooncake: 190 GB/s per node over 8x400 Gbps / 8 ranks = 23.75 GB/s.
        assert_eq!(p[&Mooncake].read, Some(Bandwidth(23.75e9)));
        // 3FS: 40 GiB/s = 42.95 GB/s per node / 8 = 5.37 GB/s.
        assert_eq!(p[&Hf3fs].read, Some(Bandwidth(5.37e9)));
        assert_eq!(p[&Hf3fs].write, None);
        // EIC as corpus #08 measured.
        assert_eq!(p[&Eic].read, Some(Bandwidth(0.57e9)));
        assert_eq!(p[&Eic].write, Some(Bandwidth(0.16e9)));
        assert_eq!(p[&File].read, None);
        assert!(
            find("mooncak")
                .unwrap_err()
                .to_string()
                .contains("did you mean `mooncake`")
        );
    }
}
