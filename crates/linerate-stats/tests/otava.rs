//! linerate's change points against Apache Otava's (`scripts/otava_changes.py`, Otava's
//! `compute_change_points`, the E-divisive detector of Hunter) on the same synthetic series:
//! steps, two steps, a step back, single outliers and pure noise. Both must find the same
//! number of change points, each within one run of the other's.
//!
//! Needs Otava from PyPI: `scripts/test.sh` installs it in a virtual environment and sets
//! `OTAVA_PYTHON` to that environment's python; without it the test fails and says so.

use linerate_stats::changepoint::{e_divisive, Config, Outcome};
use std::io::Write;
use std::process::{Command, Stdio};

/// Splitmix64 and Box–Muller: Gaussian noise fixed by its seed.
fn noise(n: usize, sd: f64, seed: u64) -> Vec<f64> {
    let mut s = seed;
    let mut next = move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let (a, b) = (next().max(1e-300), next());
            sd * (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
        })
        .collect()
}

fn series() -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for seed in 1..=5 {
        let n = noise(24, 0.5, seed);
        out.push((
            format!("tbf-50-then-40-{seed}"),
            (0..24)
                .map(|i| if i < 12 { 50.0 } else { 40.0 } + n[i])
                .collect(),
        ));
        let n = noise(40, 1.0, seed + 100);
        out.push((
            format!("step-at-25-{seed}"),
            (0..40)
                .map(|i| if i < 25 { 100.0 } else { 92.0 } + n[i])
                .collect(),
        ));
        let n = noise(40, 2.0, seed + 200);
        out.push((
            format!("noise-{seed}"),
            n.iter().map(|v| 100.0 + v).collect(),
        ));
        let mut x: Vec<f64> = noise(30, 1.0, seed + 300)
            .iter()
            .map(|v| 100.0 + v)
            .collect();
        x[10 + seed as usize] = 70.0;
        out.push((format!("outlier-{seed}"), x));
    }
    let n = noise(36, 1.0, 7);
    out.push((
        "down-and-back".into(),
        (0..36)
            .map(|i| match i {
                0..=11 => 100.0,
                12..=23 => 90.0,
                _ => 100.0,
            } + n[i])
            .collect(),
    ));
    out
}

#[test]
#[ignore = "needs Apache Otava: scripts/test.sh installs it in a venv and sets OTAVA_PYTHON"]
fn otava_finds_the_same_change_points_within_one_run() {
    let python = std::env::var("OTAVA_PYTHON")
        .expect("OTAVA_PYTHON: the python of a virtual environment with apache-otava installed");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/otava_changes.py"
    );
    let all = series();
    let input: serde_json::Map<String, serde_json::Value> = all
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::json!(v)))
        .collect();
    let mut child = Command::new(&python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run Otava's python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::Value::Object(input).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "otava_changes.py failed");
    let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found_any = 0;
    for (name, x) in &all {
        let ours: Vec<usize> = match e_divisive(x, &Config::default()) {
            Outcome::Changes(c) => c.iter().map(|c| c.index).collect(),
            other => panic!("{name}: {other:?}"),
        };
        let otava: Vec<usize> = theirs[name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(
            ours.len(),
            otava.len(),
            "{name}: linerate {ours:?}, Otava {otava:?}"
        );
        for (a, b) in ours.iter().zip(&otava) {
            assert!(
                a.abs_diff(*b) <= 1,
                "{name}: linerate {ours:?}, Otava {otava:?}"
            );
        }
        // What each kind of series must give, so that agreement on nothing proves nothing.
        if name.starts_with("tbf") {
            assert_eq!(ours, vec![12], "{name}");
        }
        if name.starts_with("noise") || name.starts_with("outlier") {
            assert!(ours.is_empty(), "{name}: {ours:?}");
        }
        found_any += ours.len();
    }
    assert!(found_any >= 12, "the steps were found: {found_any}");
}
