//! Content fingerprints: FNV-1a 64, stable across platforms and releases (unlike std's
//! hasher). A sweep's journal names its points and scenario by one; a binary trace
//! records its source file's; the replay memo keys on the trace's.

/// FNV-1a 64 of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_update(FNV1A_INIT, bytes)
}

/// FNV-1a's starting state, for [`fnv1a_update`] over data read in pieces.
pub const FNV1A_INIT: u64 = 0xcbf2_9ce4_8422_2325;

/// Folds `bytes` into an FNV-1a 64 state.
pub fn fnv1a_update(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// FNV-1a 64 of a file's bytes, streamed: the identity of a trace's content (a sweep's
/// resume and merge refuse a trace that changed under the same name). Only a regular
/// file has one: a device (`/dev/zero` never ends), a FIFO (`<(…)`, consumed by the
/// hash) or a folder is refused before any byte is read.
pub fn content_hash(path: &std::path::Path) -> std::io::Result<u64> {
    use std::io::Read;
    // Before opening: opening a FIFO without a writer would block.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "not a regular file ({}): a sweep reads its trace more than once and fingerprints its content, so it must be a file",
                if meta.is_dir() {
                    "a folder"
                } else {
                    "a device, pipe or socket"
                }
            ),
        ));
    }
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut h = FNV1A_INIT;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(h);
        }
        h = fnv1a_update(h, &buf[..n]);
    }
}
