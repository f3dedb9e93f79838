//! `serve --metrics ADDR`: a minimal HTTP responder for Prometheus to scrape. It answers
//! `GET /metrics` (HTTP/1.0 or 1.1) with the server's figures (`export::prom::server`) and
//! nothing else: other paths get 404, other methods 405, a request head over
//! [`MAX_REQUEST`] bytes 431, anything unreadable 400. Connections are answered at once,
//! each on its own small thread, up to [`MAX_CONNECTIONS`]; one more takes the place of the
//! oldest connection still waiting for its request head, of the address that holds the
//! most (which is closed), and gets 503 at once only when all are answering. A request
//! head must arrive whole within [`HEAD_TIMEOUT`] of the accept (not per byte: a peer
//! dripping a byte a second gets 408 then), the answer is written within
//! [`WRITE_TIMEOUT`], and the connection is closed after it, so idle or slow peers cost a
//! slot for at most that long (less when others need it), never a scrape's wait, and never
//! any memory they ask for.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::export::prom;
use crate::session::server::policy::metrics::ServerMetrics;

/// Longest request head read, bytes.
pub const MAX_REQUEST: usize = 8192;
/// Time the whole request head may take to arrive, from the accept.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Time the answer may take to be written.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most connections answered at the same time (a scraper needs one).
pub const MAX_CONNECTIONS: usize = 32;
/// Stack of a connection's thread: it reads at most 8 KiB into the heap.
const STACK_BYTES: usize = 128 * 1024;

/// The connections being answered, each with a handle that can close it: when all
/// [`MAX_CONNECTIONS`] are taken, a new connection takes the place of the oldest one that
/// has not sent its whole request head yet, of the address that holds the most places
/// (closed at once: its thread ends), so that idle peers cannot keep a scraper out. Only
/// when every place is answering a request is a connection refused with 503.
#[derive(Default)]
struct Places {
    next_id: u64,
    held: Vec<Place>,
}

struct Place {
    id: u64,
    peer: IpAddr,
    since: Instant,
    /// A handle on the connection, to close it.
    stream: TcpStream,
    /// Its request head is in: it is being answered and keeps its place.
    answering: Arc<AtomicBool>,
}

/// A connection's place among [`MAX_CONNECTIONS`], given back on drop.
struct Slot {
    places: Arc<Mutex<Places>>,
    id: u64,
    answering: Arc<AtomicBool>,
}

impl Slot {
    /// A place for `c`, taken from the oldest idle connection of the address holding the
    /// most places when all are taken; `None` when every place is answering.
    fn take(places: &Arc<Mutex<Places>>, c: &TcpStream, now: Instant) -> Option<Slot> {
        let mut p = places.lock().ok()?;
        if p.held.len() >= MAX_CONNECTIONS {
            let k = evictee(&p.held)?;
            let gone = p.held.swap_remove(k);
            let _ = gone.stream.shutdown(std::net::Shutdown::Both);
        }
        let stream = c.try_clone().ok()?;
        let peer = c.peer_addr().ok()?.ip();
        p.next_id += 1;
        let id = p.next_id;
        let answering = Arc::new(AtomicBool::new(false));
        p.held.push(Place {
            id,
            peer,
            since: now,
            stream,
            answering: answering.clone(),
        });
        Some(Slot {
            places: places.clone(),
            id,
            answering,
        })
    }
}

/// Which idle place to give up: the oldest of the address with the most places.
fn evictee(held: &[Place]) -> Option<usize> {
    let count = |ip: IpAddr| held.iter().filter(|h| h.peer == ip).count();
    held.iter()
        .enumerate()
        .filter(|(_, h)| !h.answering.load(SeqCst))
        .max_by_key(|(_, h)| (count(h.peer), std::cmp::Reverse(h.since)))
        .map(|(k, _)| k)
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Ok(mut p) = self.places.lock() {
            p.held.retain(|h| h.id != self.id);
        }
    }
}

/// Binds `addr` and answers scrapes from a thread; returns the bound address.
pub fn spawn(addr: SocketAddr, metrics: Arc<ServerMetrics>) -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).map_err(|e| {
        crate::cli::UsageError(format!(
            "--metrics {addr}: cannot listen there ({e}): pick a free port, e.g. 127.0.0.1:9464"
        ))
    })?;
    let local = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            let places = Arc::new(Mutex::new(Places::default()));
            for conn in listener.incoming() {
                match conn {
                    Ok(c) => {
                        let Some(slot) = Slot::take(&places, &c, Instant::now()) else {
                            refuse(c);
                            continue;
                        };
                        let m = metrics.clone();
                        // A thread that cannot start drops its closure: the slot is given
                        // back and the connection closed.
                        let _ = std::thread::Builder::new()
                            .name("metrics-conn".into())
                            .stack_size(STACK_BYTES)
                            .spawn(move || answer(c, &m, &slot));
                    }
                    // Out of descriptors or the like: wait rather than spin.
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        })?;
    Ok(local)
}

/// Over [`MAX_CONNECTIONS`]: 503 without reading or waiting (a non-blocking write into an
/// empty socket buffer), then close.
fn refuse(c: TcpStream) {
    let body = "busy: too many connections to the metrics endpoint; retry\n";
    let msg = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    if c.set_nonblocking(true).is_ok() {
        let _ = (&c).write(msg.as_bytes());
    }
    let _ = c.shutdown(std::net::Shutdown::Both);
}

/// The request head, up to the blank line; `Err(status)` when it cannot be had.
fn read_head(c: &mut TcpStream, start: Instant) -> Result<String, &'static str> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let left = HEAD_TIMEOUT.saturating_sub(start.elapsed());
        if left.is_zero() || c.set_read_timeout(Some(left)).is_err() {
            return Err("408 Request Timeout");
        }
        let n = match c.read(&mut chunk) {
            Ok(0) => return Err("400 Bad Request"),
            Ok(n) => n,
            Err(_) => return Err("408 Request Timeout"),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return String::from_utf8(buf).map_err(|_| "400 Bad Request");
        }
        if buf.len() > MAX_REQUEST {
            return Err("431 Request Header Fields Too Large");
        }
    }
}

/// What to answer a request head: (status, body).
pub fn respond(head: &str, metrics: &ServerMetrics) -> (&'static str, String) {
    let line = head.lines().next().unwrap_or("");
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(target), Some(version), None) = (method, target, version, parts.next())
    else {
        return ("400 Bad Request", "bad request line\n".into());
    };
    if !version.starts_with("HTTP/1.") {
        return ("400 Bad Request", "HTTP/1.0 or HTTP/1.1 only\n".into());
    }
    if method != "GET" {
        return ("405 Method Not Allowed", "GET /metrics only\n".into());
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return ("404 Not Found", "GET /metrics only\n".into());
    }
    ("200 OK", prom::server(&metrics.snapshot()))
}

fn answer(mut c: TcpStream, metrics: &ServerMetrics, slot: &Slot) {
    let start = Instant::now();
    let _ = c.set_write_timeout(Some(WRITE_TIMEOUT));
    let (status, body) = match read_head(&mut c, start) {
        Ok(head) => {
            slot.answering.store(true, SeqCst);
            respond(&head, metrics)
        }
        Err(status) => (status, format!("{status}\n")),
    };
    let ctype = if status.starts_with("200") {
        prom::CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let msg = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = c.write_all(msg.as_bytes());
    let _ = c.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_metrics_is_answered() {
        let m = ServerMetrics::default();
        assert_eq!(respond("GET /metrics HTTP/1.1\r\nHost: x", &m).0, "200 OK");
        assert_eq!(respond("GET /metrics?x=1 HTTP/1.0", &m).0, "200 OK");
        assert_eq!(
            respond("POST /metrics HTTP/1.1", &m).0,
            "405 Method Not Allowed"
        );
        assert_eq!(respond("GET / HTTP/1.1", &m).0, "404 Not Found");
        assert_eq!(respond("GET /metrics", &m).0, "400 Bad Request");
        assert_eq!(respond("GET /metrics SPDY/3", &m).0, "400 Bad Request");
        assert_eq!(respond("", &m).0, "400 Bad Request");
        assert!(respond("GET /metrics HTTP/1.1", &m)
            .1
            .contains("linerate_server_tests_running 0"));
    }
}
