//! Framed control I/O over a TCP connection.
//!
//! Writes happen on the session's own thread. Reads happen on a dedicated reader thread that
//! turns frames into [`Incoming`] events on a channel, so the session can wait for "a message
//! or a time-out or a local event" with one `recv_timeout` and never blocks on the socket.
//! The reader checks every frame length against the cap before allocating, and ends at the
//! first malformed frame (the stream cannot be resynchronised after it).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use linerate_wire::control::{self, FrameHeader, Message, FRAME_HEADER_LEN};

pub use super::machine::Incoming;
use crate::model::plan::Debug;

/// The writing half of a control connection.
pub struct ControlWriter {
    stream: TcpStream,
    debug: Debug,
    label: &'static str,
    max_frame: u32,
}

impl ControlWriter {
    /// Wraps a connected stream. Writes time out after `write_timeout`, so a peer that stops
    /// reading cannot block us forever.
    pub fn new(stream: TcpStream, label: &'static str, debug: Debug) -> io::Result<Self> {
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        Ok(ControlWriter {
            stream,
            debug,
            label,
            max_frame: control::MAX_CONTROL_FRAME,
        })
    }

    /// Refuses to send a frame whose body is longer than `max` bytes (the peer's reader
    /// cap; [`control::MAX_CONTROL_FRAME`] unless a test lowers it).
    pub fn with_max_frame(mut self, max: u32) -> Self {
        self.max_frame = max.min(control::MAX_CONTROL_FRAME);
        self
    }

    /// The longest frame body this writer sends.
    pub fn max_frame(&self) -> u32 {
        self.max_frame
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &Message) -> io::Result<()> {
        let frame =
            control::encode(msg).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let body = frame.len() - FRAME_HEADER_LEN;
        if body > self.max_frame as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a {} frame of {body} bytes exceeds the control frame limit of {} bytes",
                    msg.name(),
                    self.max_frame
                ),
            ));
        }
        if self.debug.0 {
            eprintln!(
                "[protocol] {} -> {}",
                self.label,
                String::from_utf8_lossy(&frame[FRAME_HEADER_LEN..])
            );
        }
        self.stream.write_all(&frame)
    }

    /// Closes both directions (also wakes the reader thread).
    pub fn close(&self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }
}

/// Reads one frame. `max_len` caps the body; nothing larger is allocated.
pub fn read_frame(r: &mut impl Read, max_len: u32) -> Result<Option<Message>, String> {
    let mut hdr = [0u8; FRAME_HEADER_LEN];
    // Distinguish a clean close before a frame from a truncated one.
    let mut got = 0;
    while got < hdr.len() {
        match r.read(&mut hdr[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(format!(
                    "connection closed inside a frame header ({got} of 8 bytes)"
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    let h = FrameHeader::parse(&hdr, max_len).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; h.len as usize];
    r.read_exact(&mut body)
        .map_err(|e| format!("connection closed inside a frame body: {e}"))?;
    control::decode_body(&body)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Starts the reader thread. Each frame becomes `wrap(Incoming)` on `tx`. The thread ends at
/// close, at the first bad frame, or when the receiving side of the channel is dropped.
pub fn spawn_reader<E: Send + 'static>(
    mut stream: TcpStream,
    max_len: u32,
    debug: Debug,
    label: &'static str,
    tx: Sender<E>,
    wrap: fn(Incoming) -> E,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("lr-ctl-{label}"))
        .spawn(move || loop {
            let ev = match read_frame(&mut stream, max_len) {
                Ok(Some(m)) => {
                    if debug.0 {
                        eprintln!(
                            "[protocol] {label} <- {}",
                            serde_json::to_string(&m).unwrap_or_default()
                        );
                    }
                    Incoming::Msg(m)
                }
                Ok(None) => Incoming::Closed,
                Err(e) => Incoming::Broken(e),
            };
            let end = !matches!(ev, Incoming::Msg(_));
            if tx.send(wrap(ev)).is_err() || end {
                return;
            }
        })
        .map(|_| ())
}

/// Waits for the next event until `deadline`; `None` on time-out.
pub fn recv_until<T>(rx: &Receiver<T>, deadline: Instant) -> Option<T> {
    let now = Instant::now();
    if now >= deadline {
        return rx.try_recv().ok();
    }
    rx.recv_timeout(deadline - now).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linerate_wire::control::Stop;

    #[test]
    fn reads_frames_and_rejects_oversize_without_allocating() {
        let f = control::encode(&Message::Stop(Stop::default())).unwrap();
        let mut two = f.clone();
        two.extend_from_slice(&f);
        let mut r = &two[..];
        assert!(matches!(
            read_frame(&mut r, 1024),
            Ok(Some(Message::Stop(_)))
        ));
        assert!(matches!(
            read_frame(&mut r, 1024),
            Ok(Some(Message::Stop(_)))
        ));
        assert!(matches!(read_frame(&mut r, 1024), Ok(None)));
        let huge = [b'L', b'R', 1, 0, 0x7f, 0xff, 0xff, 0xff];
        let e = read_frame(&mut &huge[..], 1024).unwrap_err();
        assert!(e.contains("exceeds the limit"), "{e}");
        let e = read_frame(&mut &f[..5], 1024).unwrap_err();
        assert!(e.contains("inside a frame header"), "{e}");
        let e = read_frame(&mut &f[..10], 1024).unwrap_err();
        assert!(e.contains("inside a frame body"), "{e}");
    }
}
