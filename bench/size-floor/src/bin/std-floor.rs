//! std alone: what every program on the board pays before its own code (see Cargo.toml).

fn main() -> std::io::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_string());
    size_floor::serve(&bind, |request| {
        Ok(format!("{} bytes\n", request.len()).into_bytes())
    })
}
