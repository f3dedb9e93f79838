//! The files linerate reads whole (result files, campaign and agent lists, users and hook
//! files), each read under a cap that fits what it expects: a longer file, `/dev/zero` or
//! a device that never ends is refused with one line that names the file and the cap, after
//! reading at most one byte over it, and a FIFO nobody writes to ends at once (it is opened
//! without waiting for a writer) instead of hanging the command.

use std::io::Read;
use std::path::Path;

/// Why a file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Opening or reading it failed.
    Io(std::io::Error),
    /// It is longer than the cap (bytes).
    TooLong(u64),
    /// It is not UTF-8 text.
    NotText,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::TooLong(cap) => write!(
                f,
                "longer than the {} this command reads: is it the right file?",
                size(*cap)
            ),
            ReadError::NotText => write!(f, "not UTF-8 text"),
        }
    }
}

/// Reads the text file `path` whole, at most `cap` bytes; `what` names it in errors
/// (`--agents-file agents.txt`). The error is one line naming the file and the cap.
pub fn read_text(path: &Path, cap: u64, what: &str) -> Result<String, String> {
    read_capped(path, cap).map_err(|e| match e {
        ReadError::Io(e) => format!("cannot read {what}: {e}"),
        e => format!("{what} is {e}"),
    })
}

/// [`read_text`], with the reason alone as its error.
pub fn read_capped(path: &Path, cap: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes(path, cap)?).map_err(|_| ReadError::NotText)
}

/// The file's bytes, at most `cap` of them (a journal whose last line a kill tore may end
/// inside a character: its reader keeps what it can).
pub fn read_bytes(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    // A FIFO without a writer reads as its end instead of blocking the open.
    let file = super::system::open_for_reading(path).map_err(ReadError::Io)?;
    let mut out = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(ReadError::Io)?;
    if out.len() as u64 > cap {
        return Err(ReadError::TooLong(cap));
    }
    Ok(out)
}

/// `cap` in words: "1 MiB", "64 KiB", "100 bytes".
fn size(cap: u64) -> String {
    match cap {
        c if c >= 1 << 20 && c % (1 << 20) == 0 => format!("{} MiB", c >> 20),
        c if c >= 1 << 10 && c % (1 << 10) == 0 => format!("{} KiB", c >> 10),
        c => format!("{c} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_its_cap_is_refused_with_the_cap_and_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        std::fs::write(&p, "x".repeat(2048)).unwrap();
        assert_eq!(read_text(&p, 2048, "r.json").unwrap().len(), 2048);
        let e = read_text(&p, 2047, "r.json").unwrap_err();
        assert!(e.contains("r.json") && e.contains("2047 bytes"), "{e}");
        let e = read_text(Path::new("/dev/zero"), 1 << 20, "/dev/zero").unwrap_err();
        assert!(e.contains("/dev/zero") && e.contains("1 MiB"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = read_text(&dir.path().join("none"), 10, "none").unwrap_err();
        assert!(e.starts_with("cannot read none"), "{e}");
    }

    #[test]
    fn a_fifo_without_a_writer_ends_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("fifo");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(read_text(&p, 1 << 20, "fifo").unwrap(), "");
    }
}
