//! Reading the user's files, bounded: only a regular file is opened (a FIFO blocks its
//! reader until a writer comes, a device such as `/dev/zero` never ends, a folder is no
//! text), and a file read whole is capped. The type of the file is asked of
//! `std::fs::metadata` (which follows symlinks) before it is opened, since opening a FIFO
//! already blocks.
//!
//! - [`read_to_string`] / [`read`]: a whole document (scenario, launch file, model JSON,
//!   generator config, `check` input, CSV table) up to [`DOCUMENT_CAP`], or a procfs /
//!   cgroupfs file up to [`KERNEL_FILE_CAP`] (those report size 0: they are regular
//!   files, read until their end);
//! - [`open`]: a trace, streamed with no whole-file cap (they run to GBs), but still only
//!   a regular file (it is opened more than once: its format is sniffed first).
//!
//! The errors are `std::io::Error`s whose text says what the path is ("a FIFO, not a
//! regular file"), so each caller's existing "cannot read the scenario: …", naming the
//! file, carries them.

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::Path;

/// The largest document read whole (64 MiB): scenarios and launch files are KiBs, a
/// model's `config.json` tens of KiBs, the largest safetensors index (a 1T-parameter
/// model's, ~100k tensor names) ~10 MiB.
pub const DOCUMENT_CAP: u64 = 64 << 20;

/// The largest procfs or cgroupfs file read (16 MiB): `memory.max` and `memory.stat` are
/// bytes to a few KiB, `meminfo` ~1.5 KiB; `mountinfo` on a node with thousands of
/// mounts (a Kubernetes node's volumes and overlays) reaches about 1 MiB.
pub const KERNEL_FILE_CAP: u64 = 16 << 20;

/// What a path that is not a regular file is, as an error says it (`None`: a regular
/// file).
pub fn not_regular(meta: &Metadata) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a folder")
    } else if t.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else {
        Some("not a file")
    }
}

/// An already open descriptor named by path (`/dev/fd/N`, `/proc/self/fd/N`,
/// `/dev/stdin`): what the shell's process substitution `<(…)` passes. A pipe there has
/// its writer already (the substituted command), so a document read once from it is
/// read as the shell meant; a FIFO anywhere else may have none.
fn inherited_descriptor(path: &Path) -> bool {
    path.starts_with("/dev/fd")
        || path.starts_with("/proc/self/fd")
        || path.starts_with("/proc/thread-self/fd")
        || path == Path::new("/dev/stdin")
}

fn refused(what: &str, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file{why}"),
    )
}

/// Checks that `path` is a regular file (following symlinks) without opening it.
pub fn regular(path: &Path) -> io::Result<Metadata> {
    let meta = std::fs::metadata(path)?;
    match not_regular(&meta) {
        None => Ok(meta),
        Some(what) => Err(refused(what, reason(&meta))),
    }
}

fn reason(meta: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if meta.file_type().is_fifo() {
        " (reading one waits for a writer that may never come)"
    } else if meta.file_type().is_char_device() || meta.file_type().is_block_device() {
        " (a device may never end)"
    } else {
        ""
    }
}

/// Opens `path` read-only without blocking and checks what was opened: a regular file
/// checked by [`regular`] but swapped for a FIFO before the open (which would block
/// waiting for a writer) is refused, not waited on. `O_NONBLOCK` does not change reads
/// of a regular file.
fn open_checked(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    match not_regular(&meta) {
        None => Ok(f),
        Some(what) => Err(refused(what, reason(&meta))),
    }
}

/// Opens a regular file for streaming (a trace): no size cap.
pub fn open(path: &Path) -> io::Result<File> {
    regular(path)?;
    open_checked(path)
}

/// Reads a whole document of at most `cap` bytes: a regular file, or a pipe passed as
/// `/dev/fd/N` (`<(…)`).
pub fn read(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if let Some(what) = not_regular(&meta) {
        let pipe = {
            use std::os::unix::fs::FileTypeExt;
            meta.file_type().is_fifo() && inherited_descriptor(path)
        };
        if !pipe {
            return Err(refused(what, reason(&meta)));
        }
    }
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "larger than the {} MiB a file of this kind may have",
                cap >> 20
            ),
        )
    };
    if meta.is_file() && meta.len() > cap {
        return Err(too_big());
    }
    let f = if meta.is_file() {
        open_checked(path)?
    } else {
        File::open(path)?
    };
    let mut bytes = Vec::with_capacity((meta.len().min(cap) as usize).max(4096));
    f.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_to_string(path: &Path, cap: u64) -> io::Result<String> {
    String::from_utf8(read(path, cap)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A FIFO reached past the check (the check-then-open race): the open does not wait
    /// for a writer, and what was opened is refused.
    #[test]
    fn a_fifo_past_the_check_is_refused_without_waiting() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo");
        let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = open_checked(&p).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let mut s = String::new();
        open_checked(&f).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "x");
    }

    #[test]
    fn refuses_what_is_not_a_regular_file_and_caps_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let e = read(d.path(), DOCUMENT_CAP).unwrap_err();
        assert_eq!(e.to_string(), "a folder, not a regular file");
        let e = read_to_string(Path::new("/dev/zero"), DOCUMENT_CAP).unwrap_err();
        assert!(e.to_string().starts_with("a character device"), "{e}");
        let f = d.path().join("f");
        std::fs::write(&f, "12345").unwrap();
        assert_eq!(read_to_string(&f, 5).unwrap(), "12345");
        let e = read(&f, 4).unwrap_err();
        assert!(e.to_string().starts_with("larger than"), "{e}");
        // procfs files report size 0 and are read to their end, within the cap
        let text = read_to_string(Path::new("/proc/self/status"), KERNEL_FILE_CAP).unwrap();
        assert!(text.contains("Name:"));
        assert!(read(Path::new("/proc/self/status"), 8).is_err());
    }
}
