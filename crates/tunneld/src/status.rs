//! `mpsched tunnel status`: what a running daemon reports about itself, read from its metrics
//! endpoint and laid out for a person (peer, session, each path's state, RTT, loss, rate, last
//! acknowledgement, bytes).

use crate::metrics::Sample;
use std::fmt::Write as _;

/// The value of the unlabelled sample `name`.
fn value(s: &[Sample], name: &str) -> Option<f64> {
    s.iter()
        .find(|x| x.name == name && x.labels.is_empty())
        .map(|x| x.value)
}

/// The value of `name` for path `path`.
fn path_value(s: &[Sample], name: &str, path: &str) -> Option<f64> {
    s.iter()
        .find(|x| x.name == name && x.label("path") == Some(path))
        .map(|x| x.value)
}

fn ms(v: Option<f64>) -> String {
    v.filter(|v| *v > 0.0).map_or("-".into(), |v| format!("{:.2}", v * 1e3))
}

fn mb(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.3}", v / 1e6))
}

/// The status of the daemon whose metrics are `samples`, served at `addr`; an error when they
/// are not a tunnel daemon's.
pub fn render(samples: &[Sample], addr: &str) -> Result<String, String> {
    if samples.is_empty() {
        return Err(format!(
            "{addr} answered with no counters yet (an end publishes its first 100 ms after it starts): ask again"
        ));
    }
    let info = samples
        .iter()
        .find(|x| x.name == "mpsched_tunnel_info")
        .ok_or_else(|| format!("{addr} answers, but not with an mpsched tunnel's metrics"))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "mpsched tunnel at {addr}: {}, scheduler {}, device {}, up {:.1} s",
        info.label("role").unwrap_or("?"),
        info.label("scheduler").unwrap_or("?"),
        info.label("device").unwrap_or("?"),
        value(samples, "mpsched_tunnel_uptime_seconds").unwrap_or(0.0)
    );
    let restarts = value(samples, "mpsched_tunnel_peer_restarts_total").unwrap_or(0.0);
    match value(samples, "mpsched_tunnel_session_age_seconds") {
        Some(age) => {
            let _ = writeln!(out, "peer: session heard for {age:.1} s ({restarts} restarts seen)");
        }
        None => {
            let _ = writeln!(out, "peer: not heard yet");
        }
    }
    let _ = writeln!(
        out,
        "{:<10} {:<5} {:<45} {:>8} {:>8} {:>6} {:>11} {:>9} {:>9} {:>9}",
        "path",
        "state",
        "local -> remote",
        "srtt ms",
        "min ms",
        "loss %",
        "rate Mbit/s",
        "last ack",
        "sent MB",
        "recv MB"
    );
    for p in samples.iter().filter(|x| x.name == "mpsched_tunnel_path_info") {
        let name = p.label("path").unwrap_or("?");
        let get = |n: &str| path_value(samples, n, name);
        let up = get("mpsched_tunnel_path_up") == Some(1.0);
        let remote = match p.label("remote") {
            Some("") | None => "(not known)",
            Some(r) => r,
        };
        // Both counted since the peer's current session began (acked + lost).
        let lost = get("mpsched_tunnel_path_lost_messages").unwrap_or(0.0);
        let sent = lost + get("mpsched_tunnel_path_acked_messages").unwrap_or(0.0);
        let loss = if sent > 0.0 {
            format!("{:.2}", 100.0 * lost / sent)
        } else {
            "-".into()
        };
        let rate = get("mpsched_tunnel_path_delivery_rate_bytes_per_second")
            .filter(|r| *r > 0.0)
            .map_or("-".into(), |r| format!("{:.1}", r * 8.0 / 1e6));
        let ack = get("mpsched_tunnel_path_last_ack_age_seconds").map_or("never".into(), |a| format!("{a:.3} s"));
        let _ = writeln!(
            out,
            "{:<10} {:<5} {:<45} {:>8} {:>8} {:>6} {:>11} {:>9} {:>9} {:>9}",
            name,
            if up { "up" } else { "down" },
            format!("{} -> {remote}", p.label("local").unwrap_or("?")),
            ms(get("mpsched_tunnel_path_srtt_seconds")),
            ms(get("mpsched_tunnel_path_min_rtt_seconds")),
            loss,
            rate,
            ack,
            mb(get("mpsched_tunnel_path_tx_bytes_total")),
            mb(get("mpsched_tunnel_path_rx_bytes_total")),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::parse;

    const TEXT: &str = "mpsched_tunnel_info{role=\"initiator\",scheduler=\"bond\",device=\"mpt0\"} 1\n\
        mpsched_tunnel_uptime_seconds 12.5\n\
        mpsched_tunnel_session_age_seconds 11.25\n\
        mpsched_tunnel_peer_restarts_total 1\n\
        mpsched_tunnel_path_info{path=\"wifi\",local=\"10.0.0.1:4789\",remote=\"10.0.0.2:4789\"} 1\n\
        mpsched_tunnel_path_info{path=\"lte\",local=\"10.1.0.1:4789\",remote=\"\"} 1\n\
        mpsched_tunnel_path_up{path=\"wifi\"} 1\n\
        mpsched_tunnel_path_up{path=\"lte\"} 0\n\
        mpsched_tunnel_path_srtt_seconds{path=\"wifi\"} 0.0123\n\
        mpsched_tunnel_path_min_rtt_seconds{path=\"wifi\"} 0.0101\n\
        mpsched_tunnel_path_acked_messages{path=\"wifi\"} 1997\n\
        mpsched_tunnel_path_lost_messages{path=\"wifi\"} 3\n\
        mpsched_tunnel_path_delivery_rate_bytes_per_second{path=\"wifi\"} 5000000\n\
        mpsched_tunnel_path_last_ack_age_seconds{path=\"wifi\"} 0.004\n\
        mpsched_tunnel_path_tx_bytes_total{path=\"wifi\"} 3000000\n";

    #[test]
    fn status_lays_out_the_peer_and_each_path() {
        let s = render(&parse(TEXT), "127.0.0.1:9120").unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "mpsched tunnel at 127.0.0.1:9120: initiator, scheduler bond, device mpt0, up 12.5 s"
        );
        assert_eq!(lines[1], "peer: session heard for 11.2 s (1 restarts seen)");
        let wifi: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            wifi,
            [
                "wifi",
                "up",
                "10.0.0.1:4789",
                "->",
                "10.0.0.2:4789",
                "12.30",
                "10.10",
                "0.15",
                "40.0",
                "0.004",
                "s",
                "3.000",
                "-"
            ]
        );
        let lte: Vec<&str> = lines[4].split_whitespace().collect();
        assert_eq!(&lte[..6], ["lte", "down", "10.1.0.1:4789", "->", "(not", "known)"]);
        assert_eq!(lte.last(), Some(&"-"));
        assert!(lines[4].contains("never"));
    }

    #[test]
    fn another_service_s_metrics_are_refused() {
        let e = render(&parse("go_goroutines 7\n"), "127.0.0.1:9100").unwrap_err();
        assert!(e.contains("not with an mpsched tunnel's metrics"), "{e}");
        let e = render(&parse(""), "127.0.0.1:9120").unwrap_err();
        assert!(e.contains("no counters yet"), "an end that just started: {e}");
    }
}
