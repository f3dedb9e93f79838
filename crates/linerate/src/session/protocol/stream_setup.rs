//! A test's streams as the engine takes them: the plan's [`StreamSlot`] (index, role, byte
//! quota, paced rate; `model::plan::stream_slots`, the same split at both ends) with its
//! socket, and for a UDP sender of a raw-frame test its raw sender opened ahead of time.

use linerate_wire::control::TestSpec;
use linerate_wire::report::StreamRole;

use crate::engine::rawgen::RawSender;
use crate::engine::{DataSocket, StreamSetup};
use crate::model::plan::StreamSlot;

/// The engine's setup of one stream. Raw frames: the sender is opened now, before `start`,
/// because resolving the next hop takes tens of milliseconds, and frames the peer sends
/// before this end's engine starts would be in the receiver's count but not in its
/// interface counters' window.
pub fn setup(slot: StreamSlot, socket: DataSocket, spec: &TestSpec) -> StreamSetup {
    let raw = match (&socket, slot.role == StreamRole::Tx && spec.raw_frames) {
        (DataSocket::Udp(u), true) => Some(RawSender::open(
            u,
            (spec.write_size as usize).max(linerate_wire::probe::LEN),
            spec.raw_tx,
        )),
        _ => None,
    };
    StreamSetup {
        index: slot.index,
        role: slot.role,
        socket,
        quota: slot.quota,
        rate_bps: slot.rate_bps,
        raw,
    }
}
