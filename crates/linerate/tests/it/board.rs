//! The features draw the line between the core a board runs and the workstation's tools
//! (Cargo.toml): a tool's command is in `linerate --help` exactly when its feature is built,
//! and in a build without a tool, a core command's flag that needs it is refused with one
//! line that names the full build (exit 2). Both builds run these tests (scripts/test.sh).

use crate::common::bin;

/// The commands `linerate --help` lists.
fn commands() -> Vec<String> {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line starts two spaces in; its wrapped description further in.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

#[test]
fn help_lists_the_core_and_the_tools_built() {
    let c = commands();
    for core in [
        "serve", "tcp", "udp", "rr", "compare", "demo", "rfc2544", "doctor",
    ] {
        assert!(c.iter().any(|x| x == core), "{core} missing from {c:?}");
    }
    for (tool, built) in [
        ("lab", cfg!(feature = "lab")),
        ("analyze", cfg!(feature = "analyze")),
        ("sweep", cfg!(feature = "sweep")),
        ("campaign", cfg!(feature = "sweep")),
        ("history", cfg!(feature = "store")),
        ("check", cfg!(feature = "store")),
        ("report", cfg!(feature = "report")),
    ] {
        assert_eq!(c.iter().any(|x| x == tool), built, "{tool} in {c:?}");
    }
}

#[test]
#[cfg(not(all(feature = "analyze", feature = "chart", feature = "store")))]
fn a_missing_tool_is_refused_with_one_line_naming_the_full_build() {
    use crate::common::run_usage_error;
    let mut cases: Vec<(Vec<&str>, &str)> = Vec::new();
    if !cfg!(feature = "analyze") {
        cases.push((
            vec!["tcp", "127.0.0.1", "--capture", "x.pcap"],
            "--capture needs linerate's `analyze` feature",
        ));
    }
    if !cfg!(feature = "chart") {
        cases.push((
            vec![
                "rfc2544",
                "127.0.0.1",
                "--line-rate",
                "1G",
                "--chart",
                "x.svg",
            ],
            "--chart needs linerate's `chart` feature",
        ));
        cases.push((
            vec![
                "tcp",
                "127.0.0.1",
                "--profile",
                "--profile-callchains",
                "--profile-out",
                "d",
            ],
            "--profile-out needs linerate's `chart` feature",
        ));
    }
    if !cfg!(feature = "store") {
        cases.push((
            vec!["compare", "1", "2"],
            "a stored run id (1) needs linerate's `store` feature",
        ));
        // Absent from the core's command line.
        cases.push((vec!["tcp", "127.0.0.1", "--db", "x.db"], "'--db'"));
    }
    for (args, needle) in &cases {
        let err = run_usage_error(args);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        if needle.contains("feature") {
            assert!(err.contains("cargo build -p linerate"), "{args:?}: {err}");
        }
    }
}
