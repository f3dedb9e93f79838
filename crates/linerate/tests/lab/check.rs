//! `linerate check` and `history --changes` on a real shaped path: a router lab a - r - b
//! whose tbf toward b passes 50 Mbit/s for 12 runs and then 40 Mbit/s for 12 (short TCP
//! runs into a temporary database). The change point is found at run 13; `check` against
//! the first 12 fails each later run (exit 1) and passes another run at 50 Mbit/s (exit 0);
//! 24 runs of the unchanged lab give no change point. Witness of each rate: the router's
//! qdisc (`tc -j`) and every run's throughput below its own rate and above the other.

use linerate_lab::{Lab, LabOptions};
use serde_json::Value;

use crate::common;

struct Ctx<'a> {
    lab: &'a Lab,
    b: String,
    db: String,
}

impl Ctx<'_> {
    fn linerate(&self, args: &[&str]) -> std::process::Output {
        // scripts/test.sh keeps the store off for every test (LINERATE_NO_STORE, honoured even
        // with --db); this one stores into its own temporary database.
        let mut full = vec![
            "env",
            "-u",
            "LINERATE_NO_STORE",
            env!("CARGO_BIN_EXE_linerate"),
        ];
        full.extend_from_slice(args);
        self.lab.exec("a", &full).expect("linerate in a")
    }

    /// One stored 1-second TCP run to b, tagged; its throughput.
    fn run(&self, tag: &str) -> f64 {
        let out = self.linerate(&[
            "tcp", &self.b, "-t", "1", "--db", &self.db, "--tag", tag, "--json",
        ]);
        assert!(
            out.status.success(),
            "tcp: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap()
    }

    fn changes(&self, tag: &str) -> Value {
        let out = self.linerate(&[
            "history",
            "--db",
            &self.db,
            "--tag",
            tag,
            "--changes",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "history: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    }
}

fn set_rate(lab: &Lab, r_if: &str, rate: &str) {
    let r_ns = lab.ns_name("r").unwrap();
    let st = std::process::Command::new("tc")
        .args([
            "-n", r_ns, "qdisc", "replace", "dev", r_if, "root", "tbf", "rate", rate,
        ])
        .args(["burst", "64kb", "latency", "100ms"])
        .status()
        .unwrap();
    assert!(st.success());
    // Witness: the qdisc the kernel holds.
    let show = std::process::Command::new("tc")
        .args(["-n", r_ns, "-j", "qdisc", "show", "dev", r_if])
        .output()
        .unwrap();
    let q: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(q[0]["kind"], "tbf", "{q}");
}

#[test]
#[ignore = "needs root: network namespaces"]
fn lab_check_and_change_points_see_a_router_slowed_from_50_to_40_mbit() {
    let t0 = std::time::Instant::now();
    let lab = Lab::router(&common::lab_name("c", "ck"), &LabOptions::default())
        .expect("lab up (needs root)");
    let r_if = lab.interfaces("r").unwrap()[1].name.clone();
    let dir = tempfile::tempdir().unwrap();
    let ctx = Ctx {
        lab: &lab,
        b: lab.addr("b").unwrap().to_string(),
        db: dir.path().join("results.db").display().to_string(),
    };
    let _srv = common::serve_in(&lab, "b");
    set_rate(&lab, &r_if, "50mbit");
    // A first run to warm the path (neighbours, routes), not stored.
    let warm = ctx.linerate(&["tcp", &ctx.b, "-t", "0.5", "--no-store"]);
    assert!(warm.status.success());

    for _ in 0..12 {
        let bps = ctx.run("tbf50");
        assert!(bps <= 50e6 * 1.02 && bps > 42e6, "{bps} through 50 Mbit/s");
    }
    set_rate(&lab, &r_if, "40mbit");
    for _ in 0..12 {
        let bps = ctx.run("series");
        assert!(bps <= 40e6 * 1.02 && bps > 32e6, "{bps} through 40 Mbit/s");
    }
    // The whole series: the 24 runs share command, parameters and hosts (the tags differ,
    // so take the runs by host instead).
    let out = ctx.linerate(&["history", "--db", &ctx.db, "--changes", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    let series = rec["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{rec:#}");
    let s = &series[0];
    assert_eq!(s["points"].as_array().unwrap().len(), 24);
    let changes = s["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{s:#}");
    assert_eq!(changes[0]["run"], 13, "{s:#}");
    assert!(changes[0]["p_value"].as_f64().unwrap() < 0.005);
    // Its size is the rate's: −20 % within a few points.
    let pct = changes[0]["change_percent"].as_f64().unwrap();
    assert!((pct + 20.0).abs() < 4.0, "{pct}");
    assert!(rec["method"].as_str().unwrap().contains("E-divisive"));

    // check against the first 12: every later run fails.
    let later: Vec<i64> = s["points"].as_array().unwrap()[12..]
        .iter()
        .map(|p| p["id"].as_i64().unwrap())
        .collect();
    for id in &later {
        let out = ctx.linerate(&[
            "check",
            "--db",
            &ctx.db,
            "--baseline",
            "tbf50",
            &id.to_string(),
            "--json",
        ]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "run {id}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let c: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(c["baseline"]["runs"], 12);
        assert_eq!(c["regressions"], serde_json::json!(["throughput_bps"]));
        assert!(c["metrics"][0]["test"]
            .as_str()
            .unwrap()
            .contains("prediction t-test"));
    }
    // And another run at 50 Mbit/s, run now by check, passes (JUnit: no failure element).
    set_rate(&lab, &r_if, "50mbit");
    let out = ctx.linerate(&[
        "check",
        "--db",
        &ctx.db,
        "--baseline",
        "tbf50",
        "--junit",
        "--",
        "tcp",
        &ctx.b,
        "-t",
        "1",
    ]);
    let xml = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{xml}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = roxmltree::Document::parse(&xml).expect("JUnit XML");
    assert!(doc.descendants().any(|n| n.has_tag_name("testcase")));
    assert!(
        !doc.descendants().any(|n| n.has_tag_name("failure")),
        "{xml}"
    );

    // 24 runs of the unchanged lab: no change point.
    for _ in 0..24 {
        let bps = ctx.run("steady");
        assert!(bps <= 50e6 * 1.02 && bps > 42e6, "{bps} through 50 Mbit/s");
    }
    let rec = ctx.changes("steady");
    let s = &rec["series"][0];
    assert_eq!(s["points"].as_array().unwrap().len(), 24, "{rec:#}");
    assert_eq!(s["changes"], serde_json::json!([]), "{s:#}");
    assert!(s.get("too_few").is_none());
    // Fewer points than the test needs: said, not guessed.
    let out = ctx.linerate(&[
        "history",
        "--db",
        &ctx.db,
        "--tag",
        "steady",
        "--limit",
        "5",
        "--changes",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("too few to call a change"), "{text}");
    eprintln!("lab check test: {:.1} s", t0.elapsed().as_secs_f64());
}
