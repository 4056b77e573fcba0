//! The daemon's counters as Prometheus metric families, and as the summary it prints on exit.

use crate::daemon::{Daemon, PathIo};
use crate::metrics::{render, Family};

/// Seconds from nanoseconds.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// A family of one unlabelled sample.
fn one(name: &'static str, kind: &'static str, help: &'static str, v: f64) -> Family {
    Family::new(name, kind, help).sample(Vec::new(), v)
}

/// The per-path families: name, type, help, and the value of one path.
type PathMetric = (&'static str, &'static str, &'static str, fn(&PathIo) -> f64);

const PATH_METRICS: &[PathMetric] = &[
    (
        "mpsched_tunnel_path_up",
        "gauge",
        "Whether the path is up: its far end known and acknowledging within dead_after.",
        |p| f64::from(u8::from(p.tx.is_up() && p.remote().is_some())),
    ),
    (
        "mpsched_tunnel_path_srtt_seconds",
        "gauge",
        "Smoothed RTT from the tunnel's acknowledgements.",
        |p| secs(p.tx.view().srtt_ns),
    ),
    (
        "mpsched_tunnel_path_min_rtt_seconds",
        "gauge",
        "Smallest RTT sampled.",
        |p| secs(p.tx.view().min_rtt_ns),
    ),
    (
        "mpsched_tunnel_path_in_flight_messages",
        "gauge",
        "Messages sent and not yet acknowledged.",
        |p| p.tx.view().in_flight as f64,
    ),
    (
        "mpsched_tunnel_path_in_flight_bytes",
        "gauge",
        "Data bytes in flight: the sizes of the messages sent and not yet acknowledged.",
        |p| p.tx.view().in_flight_bytes as f64,
    ),
    (
        "mpsched_tunnel_path_delivery_rate_bytes_per_second",
        "gauge",
        "Delivery rate from the acknowledgements: the largest recent sample.",
        |p| p.tx.view().delivery_rate_bytes_per_s as f64,
    ),
    (
        "mpsched_tunnel_path_acked_messages",
        "gauge",
        "Messages the far end reports received in its current session.",
        |p| p.tx.view().acked as f64,
    ),
    (
        "mpsched_tunnel_path_lost_messages",
        "gauge",
        "Messages the far end reports missing below the highest it received.",
        |p| p.tx.view().lost as f64,
    ),
    (
        "mpsched_tunnel_path_sent_messages_total",
        "counter",
        "Messages numbered on the path (data and keepalives).",
        |p| p.tx.view().sent as f64,
    ),
    (
        "mpsched_tunnel_path_downs_total",
        "counter",
        "Times the path went down.",
        |p| p.tx.view().downs as f64,
    ),
    (
        "mpsched_tunnel_path_tx_packets_total",
        "counter",
        "Inner packets sent on the path.",
        |p| p.stats.tx_data as f64,
    ),
    (
        "mpsched_tunnel_path_tx_bytes_total",
        "counter",
        "Bytes of data datagrams sent on the path.",
        |p| p.stats.tx_bytes as f64,
    ),
    (
        "mpsched_tunnel_path_rx_packets_total",
        "counter",
        "Inner packets received on the path.",
        |p| p.stats.rx_data as f64,
    ),
    (
        "mpsched_tunnel_path_rx_reordered_total",
        "counter",
        "Messages that arrived after one sent later on the same path.",
        |p| p.rx.reordered() as f64,
    ),
    (
        "mpsched_tunnel_path_rx_bytes_total",
        "counter",
        "Bytes of authentic datagrams received on the path.",
        |p| p.stats.rx_bytes as f64,
    ),
    (
        "mpsched_tunnel_path_send_errors_total",
        "counter",
        "Sends the socket refused.",
        |p| p.stats.send_errors as f64,
    ),
    (
        "mpsched_tunnel_path_remote_changes_total",
        "counter",
        "Times the far end's address changed (learned or roamed), or a TCP path connected.",
        |p| p.stats.remote_changes as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_connections_total",
        "counter",
        "TCP paths: connections made or accepted.",
        |p| p.stream_stats().connections as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_breaks_total",
        "counter",
        "TCP paths: connections that broke.",
        |p| p.stream_stats().breaks as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_send_buffer_drops_total",
        "counter",
        "TCP paths: messages dropped because the connection's send buffer was full.",
        |p| p.stream_stats().send_buffer_drops as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_framing_errors_total",
        "counter",
        "TCP paths: records of a length no message has (the connection is dropped).",
        |p| p.stream_stats().framing_errors as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_unauthenticated_connections_total",
        "counter",
        "TCP paths (responder): connections dropped before their first record proved the key.",
        |p| p.stream_stats().unauthenticated as f64,
    ),
    (
        "mpsched_tunnel_path_tcp_pending_connections",
        "gauge",
        "TCP paths (responder): connections waiting for their first record to prove the key.",
        |p| p.tcp_pending() as f64,
    ),
];

fn path_families(d: &Daemon) -> impl Iterator<Item = Family> + '_ {
    PATH_METRICS.iter().map(|&(name, kind, help, value)| {
        d.paths.iter().fold(Family::new(name, kind, help), |fam, p| {
            fam.sample(vec![("path", p.spec.name.clone())], value(p))
        })
    })
}

/// What `mpsched tunnel status` shows beside the counters: the end's role, scheduler and
/// device, its uptime and the peer's session age, each path's addresses and last
/// acknowledgement.
fn status_families(d: &Daemon) -> Vec<Family> {
    let now = d.now_ns();
    let role = match d.cfg.role {
        crate::config::Role::Initiator => "initiator",
        crate::config::Role::Responder => "responder",
    };
    let mut f = vec![
        Family::new(
            "mpsched_tunnel_info",
            "gauge",
            "This end: its role, scheduler and device (always 1).",
        )
        .sample(
            vec![
                ("role", role.into()),
                ("scheduler", d.cfg.scheduler.clone()),
                ("device", d.device().into()),
            ],
            1.0,
        ),
        one(
            "mpsched_tunnel_uptime_seconds",
            "gauge",
            "Time since this end started.",
            secs(now),
        ),
    ];
    if let Some(t) = d.session_started_ns {
        f.push(one(
            "mpsched_tunnel_session_age_seconds",
            "gauge",
            "Time since the peer's current session was first heard (absent before one).",
            secs(now.saturating_sub(t)),
        ));
    }
    let info = d.paths.iter().fold(
        Family::new(
            "mpsched_tunnel_path_info",
            "gauge",
            "A path's local and remote addresses (remote empty until known; always 1).",
        ),
        |fam, p| {
            let remote = p.remote().map(|r| r.to_string()).unwrap_or_default();
            fam.sample(
                vec![
                    ("path", p.spec.name.clone()),
                    ("local", p.spec.local.to_string()),
                    ("remote", remote),
                ],
                1.0,
            )
        },
    );
    let ack = d.paths.iter().fold(
        Family::new(
            "mpsched_tunnel_path_last_ack_age_seconds",
            "gauge",
            "Time since the path's latest acknowledgement (absent before the first).",
        ),
        |fam, p| match p.tx.last_ack_ns() {
            Some(t) => fam.sample(vec![("path", p.spec.name.clone())], secs(now.saturating_sub(t))),
            None => fam,
        },
    );
    f.extend([info, ack]);
    f
}

/// Datagrams refused, one sample per reason.
fn rejected(d: &Daemon) -> Family {
    let (o, c) = (d.opener.stats(), &d.counters);
    [
        ("truncated", o.truncated),
        ("oversized", o.oversized),
        ("bad_header", o.bad_header),
        ("forged", o.forged),
        ("replayed", o.replayed),
        ("wrong_path", c.wrong_path),
        ("malformed", c.malformed),
    ]
    .into_iter()
    .fold(
        Family::new(
            "mpsched_tunnel_rejected_datagrams_total",
            "counter",
            "Datagrams refused before delivery, by reason.",
        ),
        |fam, (reason, v)| fam.sample(vec![("reason", reason.into())], v as f64),
    )
}

/// The daemon's own counters and its reordering buffer's.
fn daemon_families(d: &Daemon) -> Vec<Family> {
    let (o, r, c) = (d.opener.stats(), d.reorder.stats(), &d.counters);
    let counts: [(&'static str, &'static str, &'static str, u64); 24] = [
        (
            "mpsched_tunnel_arrived_reordered_total",
            "counter",
            "Inner packets that arrived after a packet of their flow that entered the tunnel later \
             (RFC 4737 on the order of entry, before the reordering buffer).",
            d.arrival_order.stats().reordered,
        ),
        (
            "mpsched_tunnel_foreign_source_total",
            "counter",
            "Authentic datagrams from another address than the path's remote, not followed.",
            c.foreign_source,
        ),
        (
            "mpsched_tunnel_peer_restarts_total",
            "counter",
            "Times the peer restarted (a new session after the first).",
            c.peer_restarts,
        ),
        (
            "mpsched_tunnel_mss_clamped_total",
            "counter",
            "TCP SYNs whose MSS was lowered to what the tunnel's device carries (both ways).",
            c.mss_clamped,
        ),
        (
            "mpsched_tunnel_reloads_total",
            "counter",
            "Configuration reloads applied (SIGHUP), the session kept.",
            c.reloads,
        ),
        (
            "mpsched_tunnel_reloads_refused_total",
            "counter",
            "Configuration reloads refused (the daemon ran on unchanged; the log says why).",
            c.reloads_refused,
        ),
        (
            "mpsched_tunnel_sessions_total",
            "counter",
            "Sessions of the peer seen (restarts + 1).",
            o.sessions,
        ),
        (
            "mpsched_tunnel_tun_rx_packets_total",
            "counter",
            "Packets read from the TUN device.",
            c.tun_rx,
        ),
        (
            "mpsched_tunnel_tun_tx_packets_total",
            "counter",
            "Packets written to the TUN device.",
            c.tun_tx,
        ),
        (
            "mpsched_tunnel_tun_write_errors_total",
            "counter",
            "Writes to the TUN device that failed.",
            c.tun_write_errors,
        ),
        (
            "mpsched_tunnel_no_path_drops_total",
            "counter",
            "Packets dropped with no path to send on.",
            c.no_path_drops,
        ),
        (
            "mpsched_tunnel_not_ip_total",
            "counter",
            "Packets from the TUN device that were not IP.",
            c.not_ip,
        ),
        (
            "mpsched_tunnel_stale_acks_total",
            "counter",
            "Acknowledgements of nothing sent, or older than one taken.",
            c.stale_acks,
        ),
        (
            "mpsched_tunnel_reorder_in_order_total",
            "counter",
            "Packets delivered as they arrived.",
            r.in_order,
        ),
        (
            "mpsched_tunnel_reorder_held_total",
            "counter",
            "Packets that waited in the reordering buffer.",
            r.held,
        ),
        (
            "mpsched_tunnel_reorder_late_total",
            "counter",
            "Packets delivered out of order (after their gap was given up).",
            r.late,
        ),
        (
            "mpsched_tunnel_reorder_skipped_total",
            "counter",
            "Sequence numbers given up before they arrived.",
            r.skipped,
        ),
        (
            "mpsched_tunnel_reorder_timeouts_total",
            "counter",
            "Gaps given up by the timeout.",
            r.timeouts,
        ),
        (
            "mpsched_tunnel_reorder_overflows_total",
            "counter",
            "Gaps given up for room.",
            r.overflows,
        ),
        (
            "mpsched_tunnel_reorder_losses_total",
            "counter",
            "Gaps given up because every live path had delivered past them.",
            r.losses,
        ),
        (
            "mpsched_tunnel_reorder_loss_late_total",
            "counter",
            "Packets that arrived after their number was given up as lost (a path reordered).",
            r.loss_late,
        ),
        (
            "mpsched_tunnel_reorder_duplicates_total",
            "counter",
            "Duplicates of a waiting packet dropped.",
            r.duplicates,
        ),
        (
            "mpsched_tunnel_reorder_occupancy_packets",
            "gauge",
            "Packets waiting in the reordering buffer.",
            r.occupancy,
        ),
        (
            "mpsched_tunnel_reorder_max_occupancy_packets",
            "gauge",
            "Most packets ever waiting at once.",
            r.max_occupancy,
        ),
    ];
    let mut fams: Vec<Family> = counts.into_iter().map(|(n, k, h, v)| one(n, k, h, v as f64)).collect();
    fams.push(one(
        "mpsched_tunnel_reorder_held_seconds_total",
        "counter",
        "Time packets waited in the reordering buffer, summed.",
        secs(r.held_ns_sum),
    ));
    fams.extend(equalizer_families(d));
    fams.push(one(
        "mpsched_tunnel_reorder_loss_grace_seconds",
        "gauge",
        "How long a gap every path has passed waits before it is given up as lost.",
        secs(r.loss_grace_ns),
    ));
    fams.push(one(
        "mpsched_tunnel_reorder_held_seconds_max",
        "gauge",
        "Longest a packet waited in the reordering buffer.",
        secs(r.held_ns_max),
    ));
    fams
}

/// The scheduler's own counters (`afmt_moves`, `bond_path0_packets`...), one sample each.
fn scheduler_counters(d: &Daemon) -> Family {
    d.scheduler.counters().into_iter().fold(
        Family::new(
            "mpsched_tunnel_scheduler_counter",
            "gauge",
            "The scheduler's own counters and registers, by name (what each means: the scheduler's documentation).",
        ),
        |fam, (name, v)| fam.sample(vec![("name", name)], v as f64),
    )
}

/// The delay equalizer's counters (`bond`), none without one.
fn equalizer_families(d: &Daemon) -> Vec<Family> {
    let Some(e) = &d.equalizer else {
        return Vec::new();
    };
    let mut fams = Vec::new();
    let st = e.stats();
    fams.push(one(
        "mpsched_tunnel_equalizer_held_total",
        "counter",
        "Packets the delay equalizer held (a faster path's, made up to the slowest in use).",
        st.held as f64,
    ));
    fams.push(one(
        "mpsched_tunnel_equalizer_forced_total",
        "counter",
        "Packets the delay equalizer let go early for room.",
        st.forced as f64,
    ));
    fams.push(one(
        "mpsched_tunnel_equalizer_held_seconds_total",
        "counter",
        "Time packets were to wait in the delay equalizer when held, summed.",
        secs(st.held_ns_sum),
    ));
    fams
}

/// Every counter of the daemon, as metric families.
pub fn families(d: &Daemon) -> Vec<Family> {
    let mut f: Vec<Family> = path_families(d).collect();
    f.push(rejected(d));
    f.push(scheduler_counters(d));
    f.extend(status_families(d));
    f.extend(daemon_families(d));
    f
}

/// The exposition text of every counter.
pub fn exposition(d: &Daemon) -> String {
    render(&families(d))
}
