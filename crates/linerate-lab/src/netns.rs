//! Named network namespaces (the `ip netns` kind) and running code in them.
//!
//! Invariants:
//! * A named namespace is a bind mount of an nsfs inode at
//!   `/var/run/netns/<name>` (created by `ip netns add`). Its inode number
//!   identifies the namespace: a namespace that was deleted and re-created
//!   under the same name has a different inode.
//! * [`run_in`] only ever changes the network namespace of a fresh, scoped
//!   thread that ends when the closure returns, so the calling thread and the
//!   rest of the process stay in their namespace. Threads and sockets that the
//!   closure creates belong to the target namespace (sockets keep it for life,
//!   so a listener created in `run_in` can be used from any thread later).
//! * No `unsafe`: `setns(2)` goes through `nix::sched::setns` with a borrowed fd (src/os.rs).

use std::fs::File;
use std::path::PathBuf;

use crate::cmd;
use crate::error::{LabError, Result};

/// Where `ip netns` keeps its bind mounts.
pub const NETNS_DIR: &str = "/var/run/netns";

/// Path of the bind mount of named namespace `ns`.
pub fn ns_path(ns: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(ns)
}

/// Names of all named network namespaces (empty if the directory is missing).
pub fn list_namespaces() -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(NETNS_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::io(format!("reading {NETNS_DIR}"), e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| LabError::io(format!("reading {NETNS_DIR}"), e))?;
        if let Some(name) = entry.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// Whether named namespace `ns` exists.
pub fn exists(ns: &str) -> bool {
    ns_path(ns).exists()
}

/// Inode of named namespace `ns`, or `None` if it does not exist.
pub fn inode(ns: &str) -> Option<u64> {
    std::fs::metadata(ns_path(ns))
        .ok()
        .and_then(|m| crate::os::inode(&m))
}

/// `ip netns add ns`.
pub fn add(ns: &str) -> Result<()> {
    cmd::run("ip", &["netns", "add", ns]).map(drop)
}

/// `ip netns del ns`; succeeds if `ns` does not exist.
pub fn delete(ns: &str) -> Result<()> {
    if !exists(ns) {
        return Ok(());
    }
    match cmd::run("ip", &["netns", "del", ns]) {
        Ok(_) => Ok(()),
        // Lost a race with another deleter: fine, it is gone.
        Err(_) if !exists(ns) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs `f` on a scoped thread that has first joined network namespace
/// `ns_name` (`/var/run/netns/<ns_name>`), and returns its result.
///
/// Errors if the namespace cannot be opened or joined; a panic in `f` is
/// propagated to the caller.
pub fn run_in<F, R>(ns_name: &str, f: F) -> Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let path = ns_path(ns_name);
    let file = File::open(&path)
        .map_err(|e| LabError::io(format!("opening network namespace {}", path.display()), e))?;
    std::thread::scope(|scope| {
        let handle = scope.spawn(move || -> Result<R> {
            crate::os::enter_netns(&file).map_err(|source| LabError::Setns {
                ns: ns_name.to_string(),
                source,
            })?;
            drop(file);
            Ok(f())
        });
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ns_path_is_under_netns_dir() {
        assert_eq!(ns_path("lr-x-a"), PathBuf::from("/var/run/netns/lr-x-a"));
    }

    #[test]
    fn run_in_missing_namespace_is_a_clear_error() {
        let err = run_in("lr-definitely-missing-zz", || 1).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("/var/run/netns/lr-definitely-missing-zz"),
            "{msg}"
        );
    }

    #[test]
    fn delete_missing_namespace_is_ok() {
        delete("lr-definitely-missing-zz").unwrap();
    }
}
