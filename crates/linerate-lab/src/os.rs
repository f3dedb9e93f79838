//! The lab's few calls into the operating system: Linux's (network namespaces are Linux's).
//! On any other OS the crate builds, so that linerate's `lab` feature builds everywhere, and
//! these calls fail: `linerate lab` says it needs Linux.

use std::fs::{File, Metadata};
use std::io;

/// The inode of a file.
#[cfg(target_os = "linux")]
pub fn inode(m: &Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(m.ino())
}

/// Whether a file is executable by someone.
#[cfg(target_os = "linux")]
pub fn executable(m: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.is_file() && m.permissions().mode() & 0o111 != 0
}

/// Whether the effective user is root.
#[cfg(target_os = "linux")]
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Moves the calling thread into the network namespace `file` names (setns(2)).
#[cfg(target_os = "linux")]
pub fn enter_netns(file: &File) -> io::Result<()> {
    use nix::sched::{setns, CloneFlags};
    Ok(setns(file, CloneFlags::CLONE_NEWNET)?)
}

/// No inodes here.
#[cfg(not(target_os = "linux"))]
pub fn inode(_m: &Metadata) -> Option<u64> {
    None
}

/// Any file: no mode bits here.
#[cfg(not(target_os = "linux"))]
pub fn executable(m: &Metadata) -> bool {
    m.is_file()
}

/// Never: the lab needs Linux.
#[cfg(not(target_os = "linux"))]
pub fn is_root() -> bool {
    false
}

/// Network namespaces are Linux's.
#[cfg(not(target_os = "linux"))]
pub fn enter_netns(_file: &File) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "network namespaces need Linux",
    ))
}
