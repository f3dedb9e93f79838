//! `linerate sweep` in namespaces: a server hook (declared by `serve --hooks`) that really
//! changes the server's veth MTU and a client command that sets a tbf rate on the router,
//! checked against the records, `ip link` and the rates; the best pick is the fastest rate;
//! the hook's restore runs when the sweep ends.

use linerate_lab::{Lab, LabOptions};
use serde_json::Value;

use crate::common;

/// Router lab a - r - b. Points: b's MTU (1280, 9000) set by the server's `mtu` hook x the
/// router's tbf rate toward b (20, 60, 40 Mbit/s) set by a client command (argv, `tc -n`,
/// no shell). Each point's server record shows the MTU the hook set, each point's
/// throughput stays under its tbf rate, the best point is a 60 Mbit/s one, and the server
/// restores b's MTU when the sweep ends (witness: `ip link show`).
#[test]
#[ignore = "needs root: network namespaces"]
fn lab_sweep_changes_the_server_mtu_and_router_rate_and_picks_the_fastest() {
    let lab = Lab::router(&common::lab_name("s", "sw"), &LabOptions::default())
        .expect("lab up (needs root)");
    let b = lab.addr("b").unwrap().to_string();
    let b_ns = lab.ns_name("b").unwrap().to_string();
    let b_if = lab.iface("b").unwrap().to_string();
    let r_ns = lab.ns_name("r").unwrap().to_string();
    // The router's interface toward b is its second.
    let r_if = lab.interfaces("r").unwrap()[1].name.clone();
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join("hooks.toml");
    std::fs::write(
        &hooks,
        format!(
            "[hooks.mtu]\ncommand = [\"ip\", \"link\", \"set\", \"dev\", \"{b_if}\", \"mtu\", \"{{mtu}}\"]\nrestore = [\"ip\", \"link\", \"set\", \"dev\", \"{b_if}\", \"mtu\", \"1500\"]\nparams.mtu = {{ type = \"int\", min = 1280, max = 9216 }}\n"
        ),
    )
    .unwrap();
    let mut cmd = lab.command("b", env!("CARGO_BIN_EXE_linerate")).unwrap();
    cmd.args(["serve", "--bind", &b, "-q", "--hooks"])
        .arg(&hooks);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let srv = common::LabServer::spawn(cmd);
    let rate_cmd = format!(
        "tc -n {r_ns} qdisc replace dev {r_if} root tbf rate {{tbf}} burst 64kb latency 100ms"
    );
    let restore_rate = format!("tc -n {r_ns} qdisc del dev {r_if} root");
    let out = lab
        .exec(
            "a",
            &[
                env!("CARGO_BIN_EXE_linerate"),
                "sweep",
                "--vary",
                "mtu=1280,9000",
                "--vary",
                "tbf=20mbit,60mbit,40mbit",
                "--hook",
                "mtu mtu={mtu}",
                "--client-cmd",
                &rate_cmd,
                "--client-restore",
                &restore_rate,
                "--no-store",
                "--json",
                "--",
                "tcp",
                &b,
                "-t",
                "1.5",
                "-O",
                "0.5",
            ],
        )
        .expect("sweep in a");
    assert!(
        out.status.success(),
        "sweep failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rec: Value = serde_json::from_slice(&out.stdout).expect("json");
    let points = rec["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    for p in points {
        assert_eq!(p["status"], "ok", "{p:#}");
        let mtu: u64 = p["values"]["mtu"].as_str().unwrap().parse().unwrap();
        let rate_bps = match p["values"]["tbf"].as_str().unwrap() {
            "20mbit" => 20e6,
            "40mbit" => 40e6,
            "60mbit" => 60e6,
            other => panic!("{other}"),
        };
        let run = &p["runs"]["trials"][0];
        // The server's hook ran the declared command with this point's value, and the
        // server saw that MTU on its interface during the test.
        assert_eq!(p["server_hooks"][0]["exit_code"], 0, "{p:#}");
        assert_eq!(
            p["server_hooks"][0]["argv"]
                .as_array()
                .unwrap()
                .last()
                .unwrap(),
            &Value::from(mtu.to_string())
        );
        assert_eq!(
            run["server"]["interface"]["mtu"].as_u64(),
            Some(mtu),
            "{p:#}"
        );
        let got = run["summary"]["flows"][0]["receiver_bps"].as_f64().unwrap();
        // tbf passes at most its rate (goodput is a little below it); well above the
        // next lower rate, so each point really ran at its own rate.
        assert!(got <= rate_bps * 1.02, "{got} through {rate_bps}");
        assert!(got >= rate_bps * 0.6, "{got} through {rate_bps}");
        assert!(p["commands"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["exit_code"] == 0));
    }
    let best = &rec["best"];
    let bp = best["point"].as_u64().unwrap() as usize;
    assert_eq!(points[bp - 1]["values"]["tbf"], "60mbit", "{best:#}");
    assert!(rec["restore"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["exit_code"] == 0));
    // Witness: ip link shows b's MTU restored by the server when the sweep's session ended.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let show = std::process::Command::new("ip")
        .args(["-n", &b_ns, "-j", "link", "show", "dev", &b_if])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(v[0]["mtu"], 1500);
    drop(srv);
}
