//! Shared helpers: an in-process server on 127.0.0.1:0 that stops when dropped.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use linerate::session::client::{self, StreamPlan};
use linerate::session::conn::Debug;
use linerate::session::server::{Server, ServerConfig};
use linerate_wire::control::{Direction, TestSpec, Transport};

pub struct TestServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestServer {
    pub fn start() -> TestServer {
        Self::with(|_| {})
    }

    pub fn with(f: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut cfg = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            log: false,
            handshake_timeout: Duration::from_secs(2),
            ..ServerConfig::default()
        };
        f(&mut cfg);
        let server = Server::bind(cfg).expect("bind test server");
        let addr = server.local_addr().unwrap();
        let stop = server.shutdown_handle();
        let handle = Some(std::thread::spawn(move || server.run()));
        TestServer { addr, stop, handle }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn spec(transport: Transport, direction: Direction) -> TestSpec {
    let len = if transport == Transport::Tcp {
        65536
    } else {
        1200
    };
    let mut s = linerate::session::default_spec(transport, direction, len, 600);
    s.interval_ms = 200;
    s
}

pub fn plan(addr: SocketAddr, spec: TestSpec) -> StreamPlan {
    StreamPlan {
        host: addr.ip().to_string(),
        port: addr.port(),
        spec,
        local: Default::default(),
        client_cpu: None,
        connect_timeout: Duration::from_secs(3),
        debug: Debug(false),
    }
}

pub fn run(p: &StreamPlan) -> linerate::model::RunRecord {
    let never = AtomicBool::new(false);
    client::run(p, &mut client::Quiet, &never).expect("test run")
}

pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_linerate"))
}
