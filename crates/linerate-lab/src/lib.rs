//! `linerate-lab`: network-namespace topologies on one Linux machine.
//!
//! A [`Lab`] is a small set of network namespaces joined by veth pairs, used by
//! the `linerate lab` CLI and by linerate's integration tests to run a client
//! and a server over a real (virtual) link that can be rate-limited with `tc`
//! and made lossy with `nftables`.
//!
//! Two topologies exist (see [`Topology`]):
//!
//! * **pair**: hosts `a` and `b` on one link.
//! * **router**: `a` — `r` — `b`, with `r` forwarding IPv4 and IPv6 and `a`/`b`
//!   using `r` as their default route.
//!
//! # Invariants
//!
//! * Every namespace of lab `NAME` is called `lr-NAME-HOST` (HOST is `a`, `b`
//!   or `r`), so [`Lab::list`] and [`Lab::down_by_name`] can find labs that a
//!   crashed process left behind. Lab names match `[a-z0-9-]{1,12}`.
//! * Everything a lab creates lives *inside* its namespaces: veths are created
//!   directly in their target namespace (they never appear in the root
//!   namespace), qdiscs sit on those veths and nftables tables live in the
//!   namespaces' own rulesets. Deleting the namespaces therefore removes all of
//!   it; nothing in the host's own network configuration is ever touched.
//! * Addresses are reserved for benchmarks or private (IPv4 in `198.19.0.0/16`, the
//!   upper half of RFC 2544's benchmark range 198.18.0.0/15; IPv6 in the ULA prefix
//!   `fd6c:7200::/24`) and derived deterministically from the lab name (FNV-1a
//!   and murmur3's finalizer, [`topology::name_hash`]), see [`topology::plan`]. Because every lab is isolated in its own namespaces,
//!   two labs whose hashes collide still cannot see each other.
//! * Namespaces have no route to anything but the lab's own links, so traffic
//!   generated inside a lab can only reach the lab's hosts.
//! * A [`Lab`] value owns its namespaces: dropping it deletes them (errors are
//!   only logged), [`Lab::down`] does the same and reports errors. Creating a
//!   lab whose namespaces already exist tears the old ones down first
//!   (teardown-and-recreate), and a stale [`Lab`] value never deletes a newer
//!   lab of the same name (each namespace's `lo` carries an alias unique to
//!   the value that created it, see [`lab`]).
//!
//! Requires root (`CAP_NET_ADMIN` and `CAP_SYS_ADMIN`), plus the Debian packages
//! `iproute2` (`ip`, `tc`), `nftables` (`nft`, only for loss) and `procps`
//! (`sysctl`, only for the router topology).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cmd;
mod error;
pub mod lab;
pub mod netns;
mod os;
pub mod shape;
pub mod topology;

pub use error::{LabError, Result};
pub use lab::Lab;
pub use netns::run_in;
pub use shape::{QdiscStats, Shaping, ShapingKind};
pub use topology::{Interface, LabInfo, LabOptions, ShapedWays, Topology};
