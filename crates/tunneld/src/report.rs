//! The daemon's counters as Prometheus metric families, and as the summary it prints on exit.

use crate::daemon::Daemon;
use crate::metrics::{render, Family};

type Labels = Vec<(&'static str, String)>;

fn per_path(
    d: &Daemon,
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    f: impl Fn(&crate::daemon::PathIo) -> f64,
) -> Family {
    d.paths.iter().fold(Family::new(name, kind, help), |fam, p| {
        fam.sample(vec![("path", p.spec.name.clone())], f(p))
    })
}

fn one(name: &'static str, kind: &'static str, help: &'static str, v: u64) -> Family {
    Family::new(name, kind, help).sample(Labels::new(), v as f64)
}

/// Every counter of the daemon, as metric families.
pub fn families(d: &Daemon) -> Vec<Family> {
    let s = |ns: u64| ns as f64 / 1e9;
    let o = d.opener.stats();
    let r = d.reorder.stats();
    let c = &d.counters;
    let mut rejected = Family::new(
        "mpsched_tunnel_rejected_datagrams_total",
        "counter",
        "Datagrams refused before delivery, by reason.",
    );
    for (reason, v) in [
        ("truncated", o.truncated),
        ("oversized", o.oversized),
        ("bad_header", o.bad_header),
        ("forged", o.forged),
        ("replayed", o.replayed),
        ("wrong_path", c.wrong_path),
        ("malformed", c.malformed),
    ] {
        rejected = rejected.sample(vec![("reason", reason.into())], v as f64);
    }
    vec![
        per_path(
            d,
            "mpsched_tunnel_path_up",
            "gauge",
            "Whether the path is up: its far end known and acknowledging within dead_after.",
            |p| f64::from(u8::from(p.tx.is_up() && p.remote().is_some())),
        ),
        per_path(
            d,
            "mpsched_tunnel_path_srtt_seconds",
            "gauge",
            "Smoothed RTT from the tunnel's acknowledgements.",
            |p| s(p.tx.view().srtt_ns),
        ),
        per_path(
            d,
            "mpsched_tunnel_path_min_rtt_seconds",
            "gauge",
            "Smallest RTT sampled.",
            |p| s(p.tx.view().min_rtt_ns),
        ),
        per_path(
            d,
            "mpsched_tunnel_path_in_flight_messages",
            "gauge",
            "Messages sent and not yet acknowledged.",
            |p| p.tx.view().in_flight as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_lost_messages",
            "gauge",
            "Messages the far end reports missing below the highest it received.",
            |p| p.tx.view().lost as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_sent_messages_total",
            "counter",
            "Messages numbered on the path (data and keepalives).",
            |p| p.tx.view().sent as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_downs_total",
            "counter",
            "Times the path went down.",
            |p| p.tx.view().downs as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_tx_packets_total",
            "counter",
            "Inner packets sent on the path.",
            |p| p.stats.tx_data as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_tx_bytes_total",
            "counter",
            "Bytes of data datagrams sent on the path.",
            |p| p.stats.tx_bytes as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_rx_packets_total",
            "counter",
            "Inner packets received on the path.",
            |p| p.stats.rx_data as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_rx_bytes_total",
            "counter",
            "Bytes of authentic datagrams received on the path.",
            |p| p.stats.rx_bytes as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_send_errors_total",
            "counter",
            "Sends the socket refused.",
            |p| p.stats.send_errors as f64,
        ),
        per_path(
            d,
            "mpsched_tunnel_path_remote_changes_total",
            "counter",
            "Times the far end's address changed (learned or roamed).",
            |p| p.stats.remote_changes as f64,
        ),
        rejected,
        one(
            "mpsched_tunnel_foreign_source_total",
            "counter",
            "Authentic datagrams from another address than the path's remote, not followed.",
            c.foreign_source,
        ),
        one(
            "mpsched_tunnel_peer_restarts_total",
            "counter",
            "Times the peer restarted (a new session after the first).",
            c.peer_restarts,
        ),
        one(
            "mpsched_tunnel_sessions_total",
            "counter",
            "Sessions of the peer seen (restarts + 1).",
            o.sessions,
        ),
        one(
            "mpsched_tunnel_tun_rx_packets_total",
            "counter",
            "Packets read from the TUN device.",
            c.tun_rx,
        ),
        one(
            "mpsched_tunnel_tun_tx_packets_total",
            "counter",
            "Packets written to the TUN device.",
            c.tun_tx,
        ),
        one(
            "mpsched_tunnel_tun_write_errors_total",
            "counter",
            "Writes to the TUN device that failed.",
            c.tun_write_errors,
        ),
        one(
            "mpsched_tunnel_no_path_drops_total",
            "counter",
            "Packets dropped with no path to send on.",
            c.no_path_drops,
        ),
        one(
            "mpsched_tunnel_not_ip_total",
            "counter",
            "Packets from the TUN device that were not IP.",
            c.not_ip,
        ),
        one(
            "mpsched_tunnel_stale_acks_total",
            "counter",
            "Acknowledgements of nothing sent, or older than one taken.",
            c.stale_acks,
        ),
        one(
            "mpsched_tunnel_reorder_in_order_total",
            "counter",
            "Packets delivered as they arrived.",
            r.in_order,
        ),
        one(
            "mpsched_tunnel_reorder_held_total",
            "counter",
            "Packets that waited in the reordering buffer.",
            r.held,
        ),
        one(
            "mpsched_tunnel_reorder_late_total",
            "counter",
            "Packets delivered out of order (after their gap was given up).",
            r.late,
        ),
        one(
            "mpsched_tunnel_reorder_skipped_total",
            "counter",
            "Sequence numbers given up before they arrived.",
            r.skipped,
        ),
        one(
            "mpsched_tunnel_reorder_timeouts_total",
            "counter",
            "Gaps given up by the timeout.",
            r.timeouts,
        ),
        one(
            "mpsched_tunnel_reorder_overflows_total",
            "counter",
            "Gaps given up for room.",
            r.overflows,
        ),
        one(
            "mpsched_tunnel_reorder_losses_total",
            "counter",
            "Gaps given up because every live path had delivered past them.",
            r.losses,
        ),
        one(
            "mpsched_tunnel_reorder_duplicates_total",
            "counter",
            "Duplicates of a waiting packet dropped.",
            r.duplicates,
        ),
        one(
            "mpsched_tunnel_reorder_occupancy_packets",
            "gauge",
            "Packets waiting in the reordering buffer.",
            r.occupancy,
        ),
        one(
            "mpsched_tunnel_reorder_max_occupancy_packets",
            "gauge",
            "Most packets ever waiting at once.",
            r.max_occupancy,
        ),
        Family::new(
            "mpsched_tunnel_reorder_held_seconds_total",
            "counter",
            "Time packets waited in the reordering buffer, summed.",
        )
        .sample(Labels::new(), s(r.held_ns_sum)),
        Family::new(
            "mpsched_tunnel_reorder_held_seconds_max",
            "gauge",
            "Longest a packet waited in the reordering buffer.",
        )
        .sample(Labels::new(), s(r.held_ns_max)),
    ]
}

/// The exposition text of every counter.
pub fn exposition(d: &Daemon) -> String {
    render(&families(d))
}
