//! The server's side of `--capture`: a test's packets captured at the server when its
//! client asks and the server allows it (`serve --allow-capture`), returned with the
//! results.

use std::net::SocketAddr;

use linerate_wire::control::{self, ReturnedCapture, TestSpec};

use crate::sys;

/// `Some` when the request asked for a capture (with a note when the server does not
/// capture), holding the running capture and its temporary file.
pub(super) struct ServerCapture {
    running: Option<(sys::capture::Capture, std::path::PathBuf)>,
    note: Option<String>,
}

/// Starts the capture `spec` asks for, filtered on the client's address and the server's
/// port (`filter`), into a temporary file named after the session.
pub(super) fn start(
    spec: &TestSpec,
    allowed: bool,
    filter: SocketAddr,
    session_id: &str,
) -> Option<ServerCapture> {
    let snaplen = spec.capture_snaplen?;
    if !allowed {
        return Some(ServerCapture {
            running: None,
            note: Some(
                "the server does not allow captures (linerate serve --allow-capture)".into(),
            ),
        });
    }
    let path = std::env::temp_dir().join(format!(
        "linerate-capture-{}-{session_id}.pcap",
        std::process::id(),
    ));
    let snaplen = snaplen.clamp(64, 262_144);
    match sys::capture::Capture::start_filtered(
        &path,
        filter,
        filter.ip(),
        snaplen,
        control::MAX_RETURNED_CAPTURE as u64,
    ) {
        Ok(c) => Some(ServerCapture {
            running: Some((c, path)),
            note: None,
        }),
        Err(e) => Some(ServerCapture {
            running: None,
            note: Some(format!("the server could not capture: {e}")),
        }),
    }
}

/// Stops the capture and reads it back (the temporary file is removed), or says why there
/// is none.
pub(super) fn finish(c: &mut ServerCapture) -> ReturnedCapture {
    let Some((cap, path)) = c.running.take() else {
        return ReturnedCapture {
            pcap_hex: None,
            note: c.note.take(),
        };
    };
    let stats = cap.stop();
    let bytes = std::fs::read(&path);
    let _ = std::fs::remove_file(&path);
    match (stats, bytes) {
        (Ok(st), Ok(b)) => ReturnedCapture {
            pcap_hex: Some(linerate_wire::hex::encode(&b)),
            note: (st.over_cap > 0).then(|| {
                format!(
                    "{} packets left out: the returned capture is capped at {} MiB",
                    st.over_cap,
                    control::MAX_RETURNED_CAPTURE >> 20
                )
            }),
        },
        (Err(e), _) | (_, Err(e)) => ReturnedCapture {
            pcap_hex: None,
            note: Some(format!("the server's capture failed: {e}")),
        },
    }
}
