//! `linerate doctor`'s table: this host's findings, the server's, the RTT and the warnings.

use linerate_wire::doctor::{DoctorReport, Severity};

use crate::model::doctor::DoctorRecord;

fn severity_name(s: Severity) -> &'static str {
    match s {
        Severity::Ok => "ok",
        Severity::Info => "info",
        Severity::Warn => "warn",
        Severity::Unknown => "?",
    }
}

fn section(title: &str, r: &DoctorReport, out: &mut String) {
    let host = r.host.as_ref();
    let name = host
        .and_then(|h| h.hostname.clone())
        .unwrap_or_else(|| "-".into());
    let kernel = host
        .and_then(|h| h.kernel.clone())
        .map_or(String::new(), |k| format!(", kernel {k}"));
    let iface = r
        .interface
        .as_ref()
        .map_or(String::new(), |i| format!(", interface {i}"));
    out.push_str(&format!("{title}: {name}{kernel}{iface}\n"));
    for f in &r.findings {
        let value = f
            .value
            .as_ref()
            .map_or(String::new(), |v| format!(" = {v}"));
        out.push_str(&format!(
            "  [{:<4}] {}{value}: {}\n",
            severity_name(f.severity),
            f.check,
            f.what
        ));
        if let Some(fix) = &f.fix {
            out.push_str(&format!("         fix: {fix}\n"));
        }
    }
}

/// The human-readable report: this host, then the server, then warnings.
pub fn render(rec: &DoctorRecord) -> String {
    let mut out = String::new();
    section("this host", &rec.local, &mut out);
    if let Some(s) = &rec.server {
        out.push('\n');
        let title = format!("server {}", rec.server_address.as_deref().unwrap_or(""));
        section(title.trim_end(), s, &mut out);
    }
    if let Some(rtt) = rec.rtt_us {
        out.push_str(&format!(
            "\nRTT to the server: {rtt} us (control connection)\n"
        ));
    }
    let warns = std::iter::once(&rec.local)
        .chain(rec.server.as_ref())
        .flat_map(|r| &r.findings)
        .filter(|f| f.severity == Severity::Warn)
        .count();
    out.push_str(&format!(
        "\n{warns} warning(s). doctor changes nothing: run a fix as root on the host it is listed under.\n"
    ));
    for w in &rec.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use linerate_wire::doctor::DoctorReport;

    use super::*;
    use crate::doctor::checks::checks;
    use crate::doctor::tests::{inputs, FOUR_MIB};

    #[test]
    fn render_lists_both_ends_with_fixes() {
        let local = DoctorReport {
            host: None,
            interface: Some("lo".into()),
            findings: checks(&inputs(), &FOUR_MIB),
        };
        let rec = DoctorRecord {
            tool_version: "linerate 0.1.0".into(),
            server_address: Some("127.0.0.1:5301".into()),
            rtt_us: Some(42),
            server: Some(local.clone()),
            local,
            warnings: vec!["w".into()],
        };
        let out = render(&rec);
        assert!(out.starts_with("this host: -, interface lo\n"), "{out}");
        assert!(out.contains("\nserver 127.0.0.1:5301: -, interface lo\n"));
        assert!(out.contains("  [warn] net.core.rmem_max = 212992: SO_RCVBUF requests are capped"));
        assert!(out.contains("         fix: sysctl -w net.core.rmem_max=4194304\n"));
        assert!(out.contains("RTT to the server: 42 us"));
        // rmem_max and wmem_max warn on both ends.
        assert!(
            out.contains("\n4 warning(s). doctor changes nothing"),
            "{out}"
        );
        assert!(out.ends_with("warning: w\n"));
    }
}
