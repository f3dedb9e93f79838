//! The model's fixture records ([`crate::model::fixtures`]) with the diagnosis the client
//! attaches to every record: what the exporters render.

use crate::model::{fixtures, RunRecord};

fn diagnosed(mut rec: RunRecord) -> RunRecord {
    rec.diagnosis = Some(crate::diagnose::diagnose(&rec));
    rec
}

/// [`fixtures::tcp_send`], diagnosed.
pub(crate) fn tcp_send() -> RunRecord {
    diagnosed(fixtures::tcp_send())
}

/// [`fixtures::tcp_receive`], diagnosed.
pub(crate) fn tcp_receive() -> RunRecord {
    diagnosed(fixtures::tcp_receive())
}

/// [`fixtures::udp_send`], diagnosed.
pub(crate) fn udp_send() -> RunRecord {
    diagnosed(fixtures::udp_send())
}

/// [`fixtures::no_server`], diagnosed.
pub(crate) fn no_server() -> RunRecord {
    diagnosed(fixtures::no_server())
}

/// [`fixtures::ttcp_seed`], diagnosed.
pub(crate) fn ttcp_seed() -> RunRecord {
    diagnosed(fixtures::ttcp_seed())
}

/// [`fixtures::tcp_rr`], diagnosed.
pub(crate) fn tcp_rr() -> RunRecord {
    diagnosed(fixtures::tcp_rr())
}

/// Every fixture, diagnosed.
pub(crate) fn all() -> Vec<RunRecord> {
    fixtures::all().into_iter().map(diagnosed).collect()
}
