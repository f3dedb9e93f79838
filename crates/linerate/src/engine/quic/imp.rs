//! quinn and rustls: the runtime, the server's certificate, the test's endpoints, the
//! pinned verifier, and the stream loops.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use linerate_wire::control::QuicOffer;
use linerate_wire::report::QuicReport;
use linerate_wire::stream_hello::{self, StreamHello};
use quinn::VarInt;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use sha2::{Digest, Sha256};

use super::{Driver, POLL};

/// The ALPN of linerate's own QUIC tests.
pub const ALPN: &[u8] = b"linerate";
/// The server name the client asks for (the certificate is pinned by its hash, not its name).
const SERVER_NAME: &str = "linerate";
/// Longest wait for a connection's handshake at the server.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest wait for a stream's hello at the server, after the stream opened.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a sender waits, after its last byte, for the peer to acknowledge them all.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection that hears nothing for this long is closed (keep-alives go every second).
const IDLE_TIMEOUT_MS: u32 = 10_000;
/// Flow-control windows ([`super::STREAM_WINDOW_BYTES`], [`super::CONN_WINDOW_BYTES`]):
/// large enough that a loopback or a LAN path is not bound by them (the bandwidth-delay
/// product of 10 Gbit/s at 5 ms is 6.25 MB).
const STREAM_WINDOW: u32 = super::STREAM_WINDOW_BYTES as u32;
const CONN_WINDOW: u32 = super::CONN_WINDOW_BYTES as u32;

/// The runtime every QUIC endpoint of this process runs on: two worker threads.
fn runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lr-quic")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the QUIC runtime: {e}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// The server's self-signed certificate and key, made once per process.
struct Identity {
    cert: CertificateDer<'static>,
    key: Vec<u8>,
    sha256_hex: String,
}

fn identity() -> Result<&'static Identity, String> {
    static ID: OnceLock<Result<Identity, String>> = OnceLock::new();
    ID.get_or_init(|| {
        let ck = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| format!("cannot make the QUIC certificate: {e}"))?;
        let cert = ck.cert.der().clone();
        let sha256_hex = linerate_wire::hex::encode(&Sha256::digest(cert.as_ref()));
        Ok(Identity {
            cert,
            key: ck.key_pair.serialize_der(),
            sha256_hex,
        })
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Makes the server's certificate and starts the runtime (`serve` calls it at start, so
/// the first QUIC test does not wait for them); `Err` says why QUIC tests cannot run.
pub fn prepare() -> Result<String, String> {
    runtime()?;
    Ok(identity()?.sha256_hex.clone())
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The transport settings of both ends: `bidi` streams the peer may open at once.
fn transport(bidi: u32) -> quinn::TransportConfig {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_bidi_streams(VarInt::from_u32(bidi))
        .max_concurrent_uni_streams(VarInt::from_u32(0))
        .stream_receive_window(VarInt::from_u32(STREAM_WINDOW))
        .receive_window(VarInt::from_u32(CONN_WINDOW))
        .send_window(u64::from(CONN_WINDOW))
        .max_idle_timeout(Some(VarInt::from_u32(IDLE_TIMEOUT_MS).into()))
        .keep_alive_interval(Some(Duration::from_secs(1)));
    t
}

/// One QUIC stream of a test, both halves until the engine takes the one it uses.
pub struct QuicStream {
    handle: tokio::runtime::Handle,
    conn: quinn::Connection,
    /// Which of the test's connections (stream index modulo their number).
    connection: u16,
    local: SocketAddr,
    send: Mutex<Option<quinn::SendStream>>,
    recv: Mutex<Option<quinn::RecvStream>>,
    /// The client's endpoint, kept as long as its streams.
    _endpoint: Option<quinn::Endpoint>,
}

impl std::fmt::Debug for QuicStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuicStream")
            .field("connection", &self.connection)
            .field("local", &self.local)
            .field("remote", &self.conn.remote_address())
            .finish()
    }
}

impl QuicStream {
    /// The peer's address.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.conn.remote_address())
    }

    /// The local address of the stream's endpoint.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }

    /// The connection's figures now.
    pub fn report(&self) -> QuicReport {
        let s = self.conn.stats();
        QuicReport {
            connection: self.connection,
            rtt_us: u64::try_from(s.path.rtt.as_micros()).unwrap_or(u64::MAX),
            cwnd_bytes: s.path.cwnd,
            mtu_bytes: s.path.current_mtu,
            sent_packets: s.path.sent_packets,
            lost_packets: s.path.lost_packets,
            lost_bytes: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            udp_tx_datagrams: s.udp_tx.datagrams,
            udp_tx_calls: s.udp_tx.ios,
            udp_rx_datagrams: s.udp_rx.datagrams,
            udp_rx_calls: s.udp_rx.ios,
            stream_frames_tx: s.frame_tx.stream,
            stream_frames_rx: s.frame_rx.stream,
        }
    }
}

fn take<T>(m: &Mutex<Option<T>>) -> Option<T> {
    m.lock().ok().and_then(|mut g| g.take())
}

/// A sender's loop: writes of the test's size (paced, up to its quota) until stopped, then
/// the stream's end, and waits (at most [`FLUSH_TIMEOUT`]) until the peer has every byte, so
/// that the connection's close cannot cut them off.
pub fn send(d: &mut dyn Driver, q: &QuicStream) -> io::Result<()> {
    drop(take(&q.recv));
    let Some(mut s) = take(&q.send) else {
        return Err(io::Error::other("QUIC stream without its send half"));
    };
    q.handle.block_on(async {
        // The pattern of the TCP senders.
        let buf: Vec<u8> = (0..d.write_size().max(1)).map(|i| (i % 251) as u8).collect();
        while !d.stopped() {
            d.turn();
            let Some(len) = d.next_len() else {
                break;
            };
            if len == 0 {
                continue;
            }
            let t0 = d.now_ns();
            match tokio::time::timeout(POLL, s.write(&buf[..len.min(buf.len())])).await {
                Ok(Ok(n)) => d.moved(n),
                Ok(Err(e)) => return Err(io::Error::other(format!("QUIC stream: {e}"))),
                Err(_) => d.blocked_since(t0),
            }
        }
        let _ = s.finish();
        match tokio::time::timeout(FLUSH_TIMEOUT, s.stopped()).await {
            Ok(_) => Ok(()),
            Err(_) => Err(io::Error::other(format!(
                "the peer had not acknowledged every byte of the QUIC stream {} s after the last was written",
                FLUSH_TIMEOUT.as_secs()
            ))),
        }
    })
}

/// A receiver's loop: reads to the stream's end (or until stopped).
pub fn recv(d: &mut dyn Driver, q: &QuicStream) -> io::Result<()> {
    if let Some(mut s) = take(&q.send) {
        let _ = s.finish();
    }
    let Some(mut r) = take(&q.recv) else {
        return Err(io::Error::other("QUIC stream without its receive half"));
    };
    q.handle.block_on(async {
        let mut buf = vec![0u8; d.write_size().clamp(64 * 1024, 1 << 20)];
        while !d.stopped() {
            d.turn();
            match tokio::time::timeout(POLL, r.read(&mut buf)).await {
                Ok(Ok(Some(n))) => d.moved(n),
                Ok(Ok(None)) | Ok(Err(quinn::ReadError::Reset(_))) => break,
                Ok(Err(e)) => return Err(io::Error::other(format!("QUIC stream: {e}"))),
                Err(_) => continue,
            }
        }
        Ok(())
    })
}

/// Hands each stream of the test to the session, by its stream index.
pub type Deliver = Arc<dyn Fn(u16, QuicStream) + Send + Sync>;

/// A test's QUIC endpoint at the server; closed when dropped.
pub struct QuicServer {
    endpoint: quinn::Endpoint,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        self.endpoint.close(VarInt::from_u32(0), b"test over");
        self.task.abort();
    }
}

/// What a test's endpoint accepts: its token, and `connections` connections at most.
#[derive(Debug, Clone, Copy)]
pub struct Admission {
    /// The test's token, which each stream's hello must carry.
    pub token: [u8; 16],
    /// The test's connections: the endpoint refuses any beyond them.
    pub connections: u16,
    /// The test's streams, both directions together.
    pub streams: u16,
}

impl QuicServer {
    /// Opens an endpoint on `ip` (the port the kernel picks) for one test: at most
    /// `adm.connections` connections, each with at most its share of the streams, every
    /// stream's hello within [`HELLO_TIMEOUT`] or the connection is closed.
    pub fn open(
        ip: IpAddr,
        adm: Admission,
        deliver: Deliver,
    ) -> Result<(QuicServer, QuicOffer), String> {
        let id = identity()?;
        let rt = runtime()?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(id.key.clone()));
        let mut tls = rustls::ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .and_then(|b| {
                b.with_no_client_auth()
                    .with_single_cert(vec![id.cert.clone()], key)
            })
            .map_err(|e| format!("QUIC's TLS configuration: {e}"))?;
        tls.alpn_protocols = vec![ALPN.to_vec()];
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
            .map_err(|e| format!("QUIC's TLS configuration: {e}"))?;
        let mut sc = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let per_conn = adm.streams.div_ceil(adm.connections.max(1));
        sc.transport_config(Arc::new(transport(u32::from(per_conn))));
        let _guard = rt.enter();
        let endpoint = quinn::Endpoint::server(sc, SocketAddr::new(ip, 0))
            .map_err(|e| format!("cannot open a UDP port for QUIC on {ip}: {e}"))?;
        let local = endpoint.local_addr().map_err(|e| e.to_string())?;
        let task = rt.spawn(accept_loop(endpoint.clone(), adm, deliver, local));
        let offer = QuicOffer {
            port: local.port(),
            cert_sha256: id.sha256_hex.clone(),
        };
        Ok((QuicServer { endpoint, task }, offer))
    }
}

/// Takes the test's connections: at most `adm.connections` at once, handshakes included;
/// a handshake that fails or is not done within [`HANDSHAKE_TIMEOUT`] gives its place back,
/// one that succeeds keeps it until the test ends.
async fn accept_loop(ep: quinn::Endpoint, adm: Admission, deliver: Deliver, local: SocketAddr) {
    let taken = Arc::new(AtomicU16::new(0));
    while let Some(inc) = ep.accept().await {
        if taken.load(Relaxed) >= adm.connections {
            inc.refuse();
            continue;
        }
        taken.fetch_add(1, Relaxed);
        let place = taken.clone();
        tokio::spawn(serve_connection(inc, adm, deliver.clone(), local, place));
    }
}

async fn serve_connection(
    inc: quinn::Incoming,
    adm: Admission,
    deliver: Deliver,
    local: SocketAddr,
    place: Arc<AtomicU16>,
) {
    let Ok(Ok(conn)) = tokio::time::timeout(HANDSHAKE_TIMEOUT, inc).await else {
        place.fetch_sub(1, Relaxed);
        return;
    };
    // A connection whose first stream does not come within the hello's time is closed; one
    // that ends without a stream of the test gives its place back.
    let delivered = Arc::new(AtomicBool::new(false));
    let first = tokio::time::timeout(HELLO_TIMEOUT, conn.accept_bi()).await;
    let mut next = match first {
        Ok(r) => r,
        Err(_) => {
            conn.close(VarInt::from_u32(1), b"no stream of this test");
            Err(quinn::ConnectionError::TimedOut)
        }
    };
    while let Ok((send, recv)) = next {
        let d = (deliver.clone(), delivered.clone());
        tokio::spawn(take_stream(conn.clone(), (send, recv), adm, d, local));
        next = conn.accept_bi().await;
    }
    if !delivered.load(Relaxed) {
        place.fetch_sub(1, Relaxed);
    }
}

async fn take_stream(
    conn: quinn::Connection,
    (send, mut recv): (quinn::SendStream, quinn::RecvStream),
    adm: Admission,
    (deliver, delivered): (Deliver, Arc<AtomicBool>),
    local: SocketAddr,
) {
    let mut hello = [0u8; stream_hello::LEN];
    let read = tokio::time::timeout(HELLO_TIMEOUT, recv.read_exact(&mut hello)).await;
    let h = match read.map(|r| r.ok().and_then(|()| StreamHello::parse(&hello).ok())) {
        Ok(Some(h)) if h.token == adm.token => h,
        _ => return conn.close(VarInt::from_u32(1), b"no stream hello of this test"),
    };
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    delivered.store(true, Relaxed);
    deliver(
        h.stream_index,
        QuicStream {
            handle,
            connection: h.stream_index % adm.connections.max(1),
            conn,
            local,
            send: Mutex::new(Some(send)),
            recv: Mutex::new(Some(recv)),
            _endpoint: None,
        },
    );
}

/// The client's check of the server's certificate: exactly the one whose SHA-256 the
/// control connection gave, self-signed and otherwise unknown.
#[derive(Debug)]
struct Pinned {
    sha256: Vec<u8>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if Sha256::digest(end_entity.as_ref()).as_slice() == self.sha256.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "the QUIC server's certificate is not the one its control connection named (SHA-256 differs)"
                    .into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The client's QUIC configuration: TLS 1.3 with `alpn`, the certificate pinned by its
/// SHA-256 (64 hex digits).
fn client_config(cert_sha256: &str, alpn: &[u8]) -> Result<quinn::ClientConfig, String> {
    let sha256 = linerate_wire::hex::decode(cert_sha256)
        .filter(|h| h.len() == 32)
        .ok_or("the server's certificate hash is not 64 hex digits")?;
    let provider = provider();
    let verifier = Arc::new(Pinned {
        sha256,
        provider: provider.clone(),
    });
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("QUIC's TLS configuration: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    tls.alpn_protocols = vec![alpn.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .map_err(|e| format!("QUIC's TLS configuration: {e}"))?;
    let mut cc = quinn::ClientConfig::new(Arc::new(crypto));
    cc.transport_config(Arc::new(transport(0)));
    Ok(cc)
}

/// Where the client's streams go.
#[derive(Debug, Clone)]
pub struct Target {
    /// The server's address (the control connection's) with the QUIC port of the offer.
    pub addr: SocketAddr,
    /// The client's address for its endpoints (the control connection's).
    pub local_ip: IpAddr,
    /// The certificate's SHA-256, 64 hex digits.
    pub cert_sha256: String,
    /// Longest wait for each handshake and each stream.
    pub timeout: Duration,
}

/// The client's side: `connections` connections (an endpoint each, so that their UDP
/// sockets' work spreads over the runtime's threads), then a stream for each of `indices`
/// on connection `index % connections`, each opened with its stream hello.
pub fn connect(
    t: &Target,
    token: [u8; 16],
    connections: u16,
    indices: &[u16],
) -> Result<Vec<QuicStream>, String> {
    let rt = runtime()?;
    let cc = client_config(&t.cert_sha256, ALPN)?;
    let n = connections.max(1);
    let timeout = t.timeout;
    let in_time = |what: String| move |_| format!("{what}: no answer within {timeout:?}");
    rt.block_on(async {
        let mut conns = Vec::new();
        for c in 0..n {
            let ep = quinn::Endpoint::client(SocketAddr::new(t.local_ip, 0))
                .map_err(|e| format!("QUIC endpoint: {e}"))?;
            let local = ep.local_addr().map_err(|e| e.to_string())?;
            let what = format!("QUIC connection {c} to {}", t.addr);
            let connecting = ep
                .connect_with(cc.clone(), t.addr, SERVER_NAME)
                .map_err(|e| format!("{what}: {e}"))?;
            let conn = tokio::time::timeout(timeout, connecting)
                .await
                .map_err(in_time(what.clone()))?
                .map_err(|e| format!("{what}: {e}"))?;
            conns.push((ep, conn, local));
        }
        let mut out = Vec::new();
        for &index in indices {
            let (ep, conn, local) = &conns[usize::from(index % n)];
            let what = format!("QUIC stream {index}");
            let (mut s, r) = tokio::time::timeout(timeout, conn.open_bi())
                .await
                .map_err(in_time(what.clone()))?
                .map_err(|e| format!("{what}: {e}"))?;
            let hello = StreamHello {
                token,
                stream_index: index,
            };
            s.write_all(&hello.to_bytes())
                .await
                .map_err(|e| format!("{what}: {e}"))?;
            out.push(QuicStream {
                handle: rt.handle().clone(),
                conn: conn.clone(),
                connection: index % n,
                local: *local,
                send: Mutex::new(Some(s)),
                recv: Mutex::new(Some(r)),
                _endpoint: Some(ep.clone()),
            });
        }
        Ok(out)
    })
}
