//! std plus clap and serde_json as linerate's core uses them (see Cargo.toml).

use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    bind: String,
}

#[derive(serde::Serialize, serde::Deserialize, Debug)]
struct Record {
    name: String,
    bytes: u64,
    rate_bps: Option<f64>,
    samples: Vec<u32>,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    size_floor::serve(&args.bind, |request| {
        let record: Record = serde_json::from_slice(request)?;
        println!("{record:?}");
        Ok(serde_json::to_vec(&record)?)
    })
}
