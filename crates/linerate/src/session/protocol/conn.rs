//! Framed control I/O over a TCP connection.
//!
//! Writes happen on the session's own thread. Reads happen on a dedicated reader thread that
//! turns frames into [`Incoming`] events on a channel, so the session can wait for "a message
//! or a time-out or a local event" with one `recv_timeout` and never blocks on the socket.
//! The reader checks every frame length against the cap before allocating, and ends at the
//! first malformed frame (the stream cannot be resynchronised after it).

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
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
    read_frame_sized(r, &FrameCap::new(max_len)).map(|m| m.map(|(m, _)| m))
}

/// The longest frame body a reader accepts, which its session may change while the reader
/// waits: a server raises it only in the state that expects a large message (`results`),
/// so that a peer elsewhere in the protocol cannot make it hold more than a small frame.
/// The cap is read when a frame's header has arrived, not before the wait for it.
#[derive(Debug, Clone)]
pub struct FrameCap(Arc<AtomicU32>);

impl FrameCap {
    /// A cap of `max` bytes.
    pub fn new(max: u32) -> FrameCap {
        FrameCap(Arc::new(AtomicU32::new(max)))
    }

    /// Changes the cap for the frames whose header has not arrived yet.
    pub fn set(&self, max: u32) {
        self.0.store(max, SeqCst);
    }

    /// The cap now.
    pub fn get(&self) -> u32 {
        self.0.load(SeqCst)
    }
}

/// [`read_frame`], with the length of the frame's body; the cap is read once the header is in.
fn read_frame_sized(r: &mut impl Read, cap: &FrameCap) -> Result<Option<(Message, usize)>, String> {
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
        // A first byte that cannot begin a frame ends the read at once: an iperf3 server
        // answers a hello with one state byte and then waits, so waiting for the rest of a
        // header would only time out.
        if hdr[0] != linerate_wire::control::frame::MAGIC[0] {
            if linerate_wire::iperf3::is_server_first_byte(hdr[0]) {
                return Err(format!(
                    "the peer answered with byte {}, as an iperf3 server does: it is an iperf3 server, so test it with --iperf3 (linerate tcp|udp HOST --iperf3)",
                    hdr[0]
                ));
            }
            return Err(format!(
                "the peer's first byte is {:#04x}, not the start of a linerate frame: is it a linerate server?",
                hdr[0]
            ));
        }
    }
    let h = FrameHeader::parse(&hdr, cap.get()).map_err(|e| e.to_string())?;
    let mut body = vec![0u8; h.len as usize];
    r.read_exact(&mut body)
        .map_err(|e| format!("connection closed inside a frame body: {e}"))?;
    control::decode_body(&body)
        .map(|m| Some((m, body.len())))
        .map_err(|e| e.to_string())
}

/// Most control frames a reader thread queues for its session before it waits.
pub const MAX_QUEUED_FRAMES: usize = 64;
/// Most bytes of frame bodies a reader thread queues for its session before it waits (one
/// frame is always let through, whatever its length up to the frame cap).
pub const MAX_QUEUED_BYTES: usize = 8 << 20;

/// The bound on what a reader thread has queued and its session not yet taken: frames and
/// their bytes. While it is full the reader stops reading, so a peer that floods frames
/// fills its own socket buffers (TCP pushes back) instead of this process's memory. The
/// session calls [`Backlog::took`] for every control event it takes off the channel;
/// dropping the `Backlog` lets the reader end.
pub struct Backlog {
    shared: Arc<(Mutex<Queued>, Condvar)>,
}

#[derive(Default)]
struct Queued {
    frames: usize,
    bytes: usize,
    /// The size of each queued frame, oldest first.
    sizes: std::collections::VecDeque<usize>,
    closed: bool,
}

impl Backlog {
    fn new() -> (Backlog, Arc<(Mutex<Queued>, Condvar)>) {
        let shared = Arc::new((Mutex::new(Queued::default()), Condvar::new()));
        (
            Backlog {
                shared: shared.clone(),
            },
            shared,
        )
    }

    /// The session took one control event off the channel.
    pub fn took(&self) {
        let (m, cv) = &*self.shared;
        if let Ok(mut q) = m.lock() {
            if let Some(size) = q.sizes.pop_front() {
                q.frames -= 1;
                q.bytes -= size;
            }
        }
        cv.notify_all();
    }

    /// Frames queued and not yet taken (for tests).
    pub fn queued(&self) -> usize {
        self.shared.0.lock().map_or(0, |q| q.frames)
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        let (m, cv) = &*self.shared;
        if let Ok(mut q) = m.lock() {
            q.closed = true;
        }
        cv.notify_all();
    }
}

/// Waits until a frame of `size` bytes may be queued and counts it; `false` when the
/// session is gone.
fn reserve(shared: &(Mutex<Queued>, Condvar), size: usize) -> bool {
    let (m, cv) = shared;
    let Ok(mut q) = m.lock() else {
        return false;
    };
    loop {
        if q.closed {
            return false;
        }
        let fits =
            q.frames == 0 || (q.frames < MAX_QUEUED_FRAMES && q.bytes + size <= MAX_QUEUED_BYTES);
        if fits {
            q.frames += 1;
            q.bytes += size;
            q.sizes.push_back(size);
            return true;
        }
        q = match cv.wait_timeout(q, Duration::from_millis(500)) {
            Ok((q, _)) => q,
            Err(_) => return false,
        };
    }
}

/// Starts the reader thread. Each frame becomes `wrap(Incoming)` on `tx`, at most
/// [`MAX_QUEUED_FRAMES`] (and [`MAX_QUEUED_BYTES`]) of them not yet taken, as counted by
/// the returned [`Backlog`]. The thread ends at close, at the first bad frame, or when the
/// session is gone (the `Backlog` or the receiving side of the channel dropped).
pub fn spawn_reader<E: Send + 'static>(
    mut stream: TcpStream,
    cap: FrameCap,
    debug: Debug,
    label: &'static str,
    tx: Sender<E>,
    wrap: fn(Incoming) -> E,
) -> io::Result<Backlog> {
    let (backlog, shared) = Backlog::new();
    std::thread::Builder::new()
        .name(format!("lr-ctl-{label}"))
        .spawn(move || loop {
            let (ev, size) = match read_frame_sized(&mut stream, &cap) {
                Ok(Some((m, size))) => {
                    if debug.0 {
                        eprintln!(
                            "[protocol] {label} <- {}",
                            serde_json::to_string(&m).unwrap_or_default()
                        );
                    }
                    (Incoming::Msg(m), size)
                }
                Ok(None) => (Incoming::Closed, 0),
                Err(e) => (Incoming::Broken(e), 0),
            };
            let end = !matches!(ev, Incoming::Msg(_));
            if !reserve(&shared, size) || tx.send(wrap(ev)).is_err() || end {
                return;
            }
        })
        .map(|_| backlog)
}

/// Fuzzing entry point (`fuzz/`, and the property test below): reads frames from arbitrary
/// bytes until the end or the first error, with a cap taken from the input. Never panics,
/// and never accepts a frame longer than the cap.
#[doc(hidden)]
pub fn fuzz_read_frames(data: &[u8]) {
    let cap = data.first().map_or(0, |&b| u32::from(b) << 6);
    let mut r = data.get(1..).unwrap_or_default();
    for _ in 0..64 {
        let before = r.len();
        match read_frame_sized(&mut r, &FrameCap::new(cap)) {
            Ok(Some((m, size))) => {
                assert!(size <= cap as usize, "a frame over the cap was read");
                assert!(before - r.len() == size + FRAME_HEADER_LEN);
                let _ = linerate_wire::text::sanitize_message(m);
            }
            Ok(None) | Err(_) => return,
        }
    }
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
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn reading_arbitrary_bytes_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            fuzz_read_frames(&data);
        }

        #[test]
        fn reading_damaged_frames_never_panics(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            cut in any::<usize>(),
        ) {
            let mut data = vec![255u8];
            for m in [Message::Stop(Stop::default()), Message::Start(linerate_wire::control::Start {})] {
                data.extend(control::encode(&m).unwrap());
            }
            for (at, b) in edits {
                let i = 1 + at % (data.len() - 1);
                data[i] = b;
            }
            data.truncate(1 + cut % data.len());
            fuzz_read_frames(&data);
        }
    }

    #[test]
    fn a_reader_queues_a_bounded_number_of_frames() {
        use std::net::{TcpListener, TcpStream};
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut w = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (r, _) = l.accept().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let backlog =
            spawn_reader(r, FrameCap::new(1 << 20), Debug(false), "test", tx, |i| i).unwrap();
        let frame = control::encode(&Message::Stop(Stop::default())).unwrap();
        // Far more than the bound; the writer may block once the reader stops reading, so
        // it writes from its own thread.
        let writer = std::thread::spawn(move || {
            w.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
            for _ in 0..(MAX_QUEUED_FRAMES * 20) {
                if w.write_all(&frame).is_err() {
                    break;
                }
            }
            w
        });
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(backlog.queued(), MAX_QUEUED_FRAMES);
        // The channel holds no more than the backlog counts.
        let mut taken = 0;
        while rx.try_recv().is_ok() {
            taken += 1;
        }
        assert_eq!(taken, MAX_QUEUED_FRAMES);
        // Taking them lets the reader go on.
        for _ in 0..taken {
            backlog.took();
        }
        let got = rx.recv_timeout(Duration::from_secs(2));
        assert!(
            matches!(got, Ok(Incoming::Msg(Message::Stop(_)))),
            "{got:?}"
        );
        drop(backlog);
        drop(rx);
        let _ = writer.join();
    }

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
