//! The part both floor programs share: a TCP server on a thread that reads a request,
//! prints a line about it, and answers with the caller's reply and /proc/stat.

use std::io::{Read, Write};
use std::net::TcpListener;

/// Serves on `bind` until accept fails; `reply` turns each request into its answer.
pub fn serve<F>(bind: &str, reply: F) -> std::io::Result<()>
where
    F: Fn(&[u8]) -> std::io::Result<Vec<u8>> + Send + 'static,
{
    let listener = TcpListener::bind(bind)?;
    println!("listening on {}", listener.local_addr()?);
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let mut buf = vec![0u8; 65536];
        for stream in listener.incoming() {
            let mut stream = stream?;
            let n = stream.read(&mut buf)?;
            println!("{n} bytes at {:?}", std::time::Instant::now());
            stream.write_all(&reply(&buf[..n])?)?;
            stream.write_all(std::fs::read_to_string("/proc/stat")?.as_bytes())?;
        }
        Ok(())
    });
    server
        .join()
        .map_err(|_| std::io::Error::other("server thread panicked"))?
}
