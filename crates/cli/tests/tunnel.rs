//! `mpsched tunnel` between two namespaces: real TCP through it (iperf3) against the sum of the
//! paths, a TCP path kept by the connection that proved the key while others connect to its
//! port, datagrams forged, replayed, truncated and oversized refused and counted, failover
//! when a path's link goes down, reordering over paths of 10 and 50 ms, and nothing left
//! behind after SIGINT, SIGTERM or SIGKILL; and a scenario's `[[tunnel]]` on the kernel backend,
//! a daemon at each end.
//!
//! These tests need root (namespaces, TUN devices). Without it they are reported as ignored,
//! with the reason, except under CI=true, where each of them fails instead.

#[path = "tunnel/backup.rs"]
mod backup;
#[path = "tunnel/bond.rs"]
mod bond;
mod common;
#[path = "tunnel/mss.rs"]
mod mss;
#[path = "tunnel/net.rs"]
mod net;
#[path = "tunnel/reload.rs"]
mod reload;

use net::{Net, Paths, B_TUN, PORT};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One network at a time: the figures are rates on a shared 2-core machine.
static SERIAL: Mutex<()> = Mutex::new(());

const TESTS: &[(&str, fn())] = &[
    (
        "one_tcp_flow_gets_nine_tenths_of_the_sum_of_unequal_paths",
        one_tcp_flow_gets_nine_tenths_of_the_sum_of_unequal_paths,
    ),
    (
        "tcp_through_the_tunnel_uses_both_paths",
        tcp_through_the_tunnel_uses_both_paths,
    ),
    (
        "tcp_paths_carry_tcp_with_afmt_and_round_robin",
        tcp_paths_carry_tcp_with_afmt_and_round_robin,
    ),
    (
        "a_tcp_path_stays_with_the_connection_that_proved_the_key",
        a_tcp_path_stays_with_the_connection_that_proved_the_key,
    ),
    (
        "forged_replayed_truncated_and_oversized_datagrams_are_refused_and_counted",
        forged_replayed_truncated_and_oversized_datagrams_are_refused_and_counted,
    ),
    (
        "traffic_moves_off_a_path_whose_link_goes_down",
        traffic_moves_off_a_path_whose_link_goes_down,
    ),
    (
        "a_backup_path_carries_data_only_while_the_active_one_is_down_and_status_shows_it",
        backup::a_backup_path_carries_data_only_while_the_active_one_is_down_and_status_shows_it,
    ),
    (
        "a_syn_asking_more_than_the_device_carries_is_clamped_with_a_valid_checksum",
        mss::a_syn_asking_more_than_the_device_carries_is_clamped_with_a_valid_checksum,
    ),
    (
        "sighup_reloads_paths_and_roles_without_a_new_session",
        reload::sighup_reloads_paths_and_roles_without_a_new_session,
    ),
    (
        "reordering_over_paths_of_10_and_50_ms_stays_below_a_thousandth",
        reordering_over_paths_of_10_and_50_ms_stays_below_a_thousandth,
    ),
    (
        "sigint_sigterm_and_sigkill_leave_no_device_or_route_and_a_restart_is_a_new_session",
        sigint_sigterm_and_sigkill_leave_no_device_or_route_and_a_restart_is_a_new_session,
    ),
    (
        "afmt_scenario_runs_on_the_kernel_with_a_daemon_at_each_tunnel_end",
        afmt_scenario_runs_on_the_kernel_with_a_daemon_at_each_tunnel_end,
    ),
    (
        "a_tunnel_ending_at_a_two_link_host_runs_on_the_kernel",
        a_tunnel_ending_at_a_two_link_host_runs_on_the_kernel,
    ),
    (
        "cmon_in_the_ebpf_upf_leaves_wifi_in_its_2_s_outage_and_returns_after_it",
        cmon_in_the_ebpf_upf_leaves_wifi_in_its_2_s_outage_and_returns_after_it,
    ),
    (
        "the_upf_benchmark_fills_the_slides_table_and_runs_every_program_through_veths",
        the_upf_benchmark_fills_the_slides_table_and_runs_every_program_through_veths,
    ),
];

fn main() {
    let missing = if mpsched_netns::ns::is_root() {
        mpsched_testkit::missing_tool("iperf3", &["--version"])
            .or_else(|| mpsched_testkit::missing_tool("python3", &["--version"]))
    } else {
        Some("they need root (namespaces, TUN devices)".to_string())
    };
    common::clean_leftovers_of_earlier_runs();
    common::run_or_skip(TESTS, missing, "tunnel").exit();
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The default scheduler (`bond`: rates measured, queues kept alike) over 40+20, 40+10 and 50+10+10 Mbit/s with
/// one-way delays of 5 and 30 ms: one TCP flow, and four, get at least 90 % of the sum of what
/// each path carries alone through the tunnel (measured in the same test), every path carries
/// a share, and the exit delivers nearly everything in order. Prints docs/tunnel.md's table.
fn one_tcp_flow_gets_nine_tenths_of_the_sum_of_unequal_paths() {
    let _g = serial();
    let mut cache = Vec::new();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for layout in bond::LAYOUTS {
        let m = bond::measure(layout, &mut cache);
        let r = bond::row(layout, &m);
        eprintln!("{r}");
        let sum: f64 = m.alone.iter().sum();
        let total: f64 = m.per_path.iter().sum();
        if m.one < 0.9 * sum || m.four < 0.9 * sum {
            failures.push(format!("below 90 % of the sum: {r}"));
        }
        if m.per_path.iter().any(|&p| p < 0.05 * total) {
            failures.push(format!("a path nearly unused: {r}"));
        }
        if m.late > 0.001 * m.delivered {
            failures.push(format!("more than 0.1 % late: {r}"));
        }
        rows.push(r);
    }
    eprintln!("{}\n{}", bond::HEADER, rows.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Two paths of 40 Mbit/s: one TCP flow through the tunnel gets nearly their sum with round
/// robin and with the default `bond`, each path carrying half. AFMT gets less (a packet may move to a path only if it
/// would not overtake the flow's last one by the paths' smoothed RTTs, so the flow leaves the
/// more queued path only in its pauses) and both use both paths. How many packets waited in
/// b's reordering buffer is printed for each: measured, not asserted (docs/tunnel.md).
fn tcp_through_the_tunnel_uses_both_paths() {
    let _g = serial();
    for sched in ["rr", "bond", "afmt"] {
        let mut net = Net::build(
            &format!("tcp{sched}"),
            &Paths {
                rate: Some("40mbit"),
                delay_ms: vec![0, 0],
            },
        );
        net.start_both(sched, "");
        let goodput = net.iperf(6);
        let tx: Vec<f64> = (1..=2)
            .map(|n| net.counter('a', &format!("mpsched_tunnel_path_tx_packets_total{{path=\"p{n}\"}}")))
            .collect();
        // What 80 Mbit/s of tbf leaves for TCP payload: a 1400-byte inner packet (1348 of
        // payload) travels in 1400 + 48 (tunnel) + 28 (UDP/IP) + 14 (Ethernet) bytes.
        let ceiling = 80e6 * 1348.0 / 1490.0;
        eprintln!(
            "{sched}: goodput {:.1} Mbit/s = {:.0} % of the paths' 80 Mbit/s ({:.0} % of the {:.1} Mbit/s TCP can get \
             through the headers); packets per path {tx:?}",
            goodput / 1e6,
            goodput / 80e6 * 100.0,
            goodput / ceiling * 100.0,
            ceiling / 1e6
        );
        let held = net.counter('b', "mpsched_tunnel_reorder_held_total")
            / net.counter('b', "mpsched_tunnel_tun_tx_packets_total");
        eprintln!(
            "{sched}: {:.1} % of the packets waited in b's reordering buffer",
            held * 100.0
        );
        // AFMT moves the one flow to the other path only in its pauses, so what the second
        // path carries varies from run to run (44-63 Mbit/s measured, docs/tunnel.md): asked
        // for is more than one path could carry (one path's ceiling is 50 % of `ceiling`).
        let want = if sched == "afmt" { 0.55 } else { 0.9 };
        assert!(goodput > want * ceiling, "{sched}: {:.1} Mbit/s", goodput / 1e6);
        assert!(
            tx.iter().all(|&t| t > 0.1 * (tx[0] + tx[1])),
            "{sched}: a path nearly unused: {tx:?}"
        );
    }
}

/// The paper's subtunnels: one kernel TCP connection per path (`transport = "tcp"`), AFMT
/// weighing each by the kernel's own queue, window and smoothed RTT. One TCP flow through the
/// tunnel over two 40 Mbit/s paths: both paths carry it, each path made one connection and
/// none broke, and the goodput is printed beside round robin's over the same connections.
fn tcp_paths_carry_tcp_with_afmt_and_round_robin() {
    let _g = serial();
    for sched in ["afmt", "rr"] {
        let mut net = Net::build(
            &format!("tcpp{sched}"),
            &Paths {
                rate: Some("40mbit"),
                delay_ms: vec![0, 0],
            },
        );
        net.transport = "tcp";
        net.start_both(sched, "");
        let goodput = net.iperf(6);
        let per_path = |end, what: &str| -> Vec<f64> {
            (1..=2)
                .map(|n| net.counter(end, &format!("mpsched_tunnel_path_{what}{{path=\"p{n}\"}}")))
                .collect()
        };
        let tx = per_path('a', "tx_packets_total");
        let drops = per_path('a', "tcp_send_buffer_drops_total");
        eprintln!(
            "{sched} over TCP paths: goodput {:.1} Mbit/s; packets per path {tx:?}; send-buffer drops {drops:?}; \
             late at b {}",
            goodput / 1e6,
            net.counter('b', "mpsched_tunnel_reorder_late_total")
        );
        for end in ['a', 'b'] {
            assert_eq!(
                per_path(end, "tcp_connections_total"),
                [1.0, 1.0],
                "{end}: {}",
                net.log(end)
            );
            assert_eq!(per_path(end, "tcp_breaks_total"), [0.0, 0.0], "{end}: {}", net.log(end));
        }
        assert!(goodput > 20e6, "{sched}: {:.1} Mbit/s", goodput / 1e6);
        assert!(
            tx.iter().all(|&t| t > 0.1 * (tx[0] + tx[1])),
            "{sched}: a path nearly unused: {tx:?}"
        );
    }
}

/// Pings through the tunnel from a, one every 250 ms for 10 s, over a raw ICMP socket (no
/// `ping` binary needed); prints how many were answered.
const PINGS: &str = r#"
import os, select, socket, struct, time
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident, n, got, sent = os.getpid() & 0xffff, 40, set(), 0
def checksum(b):
    t = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    t = (t >> 16) + (t & 0xffff)
    return ~(t + (t >> 16)) & 0xffff
t0 = time.monotonic()
while sent < n or time.monotonic() < t0 + n * 0.25 + 2:
    if sent < n and time.monotonic() >= t0 + sent * 0.25:
        m = struct.pack("!BBHHH", 8, 0, 0, ident, sent) + b"mpsched!"
        s.sendto(m[:2] + struct.pack("!H", checksum(m)) + m[4:], ("10.99.0.2", 0))
        sent += 1
    if select.select([s], [], [], 0.01)[0]:
        p = s.recv(2048)
        kind, _, _, i, seq = struct.unpack("!BBHHH", p[(p[0] & 15) * 4:][:8])
        if kind == 0 and i == ident:
            got.add(seq)
print(len(got))
"#;

/// Connections to b's port of a TCP path from another socket of a's host, one every 250 ms,
/// each a kind of its own in turn: a genuine record captured on the wire and sent again
/// (authentic, but replayed), bytes of no record, a record of the right shape that is forged,
/// silence (held open past b's deadline), and a close. Prints how many it opened.
fn intruder_script() -> String {
    format!(
        r#"
import os, socket, time
# ETH_P_ALL: a socket of one protocol is not shown what its host sends.
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
raw.bind(("a1", 0)); raw.settimeout(5)
record, end = None, time.monotonic() + 10
while record is None:
    assert time.monotonic() < end, "no record of a's seen on a1"
    f = raw.recv(65535)
    ip = f[14:]; ihl = (ip[0] & 15) * 4
    if f[12:14] != b"\x08\x00" or ip[9] != 6 or ip[12:16] != bytes([192, 168, 1, 1]):
        continue
    tcp = ip[ihl:int.from_bytes(ip[2:4], "big")]
    data = tcp[(tcp[12] >> 4) * 4:]
    if int.from_bytes(tcp[0:2], "big") == {PORT} and len(data) > 2 and int.from_bytes(data[:2], "big") == len(data) - 2:
        record = data
held = []
for k in range(20):
    c = socket.create_connection(("192.168.1.2", {PORT}), timeout=5)
    kind = k % 5
    if kind == 0:
        c.sendall(record)
    elif kind == 1:
        c.sendall(os.urandom(300))
    elif kind == 2:
        c.sendall((100).to_bytes(2, "big") + os.urandom(100))
    if kind == 4:
        c.close()
    else:
        held.append(c)
    time.sleep(0.25)
time.sleep(5.5)
print(20)
"#
    )
}

/// What b's log says of connections dropped unauthenticated: its lines, and the connections
/// they count (a line of one, or of how many were held back).
fn unauthenticated_lines(log: &str) -> (usize, u64) {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("unauthenticated connection"))
        .collect();
    let count = |l: &&str| match l.split("dropped ").nth(1).and_then(|r| r.split(' ').next()) {
        Some("an") => 1,
        Some(n) => n.parse().unwrap_or_else(|_| panic!("a count in {l}")),
        None => panic!("no count in {l}"),
    };
    (lines.len(), lines.iter().map(count).sum())
}

/// Over one TCP path (so any connection taking it would cut the pings), while 40 pings cross
/// the tunnel, another socket of a's host opens 20 connections to b's port of the path: a
/// replayed genuine record, garbage, forged records, silent and closed connections. Every ping
/// is answered; the path keeps the connection that proved the key (one made, one accepted,
/// none broken, none pending at the end); all 20 are dropped and counted; and b's log says so
/// in at most a line a second (plus the first), the held-back ones counted, not lost.
fn a_tcp_path_stays_with_the_connection_that_proved_the_key() {
    let _g = serial();
    let mut net = Net::build(
        "tcptake",
        &Paths {
            rate: None,
            delay_ms: vec![0],
        },
    );
    net.transport = "tcp";
    net.start_both("rr", "");
    let pinger = net.a.spawn("python3", &["-c", PINGS]).unwrap();
    let started = Instant::now();
    let intruder = net.a.exec("python3", &["-c", &intruder_script()]).unwrap();
    assert!(
        intruder.status.success(),
        "intruder: {}",
        String::from_utf8_lossy(&intruder.stderr)
    );
    let pings = pinger.wait_with_output().unwrap();
    let answered: u32 = String::from_utf8_lossy(&pings.stdout)
        .trim()
        .parse()
        .expect("the pinger's count");
    let per_end = |end, what: &str| net.counter(end, &format!("mpsched_tunnel_path_{what}{{path=\"p1\"}}"));
    assert_eq!(answered, 40, "pings answered; b's log:\n{}", net.log('b'));
    for end in ['a', 'b'] {
        assert_eq!(per_end(end, "tcp_connections_total"), 1.0, "{end}: {}", net.log(end));
        assert_eq!(per_end(end, "tcp_breaks_total"), 0.0, "{end}: {}", net.log(end));
        assert_eq!(per_end(end, "up"), 1.0, "{end}");
    }
    let log_b = net.log('b');
    let connected: Vec<&str> = log_b.lines().filter(|l| l.contains("connected to")).collect();
    assert!(
        connected.len() == 1 && connected[0].ends_with(&format!("connected to 192.168.1.1:{PORT}")),
        "the path's one connection, a's daemon's: {connected:?}"
    );
    // Every connection is accounted for once the last held-back count is said.
    let deadline = Instant::now() + Duration::from_secs(15);
    while unauthenticated_lines(&net.log('b')).1 < 20 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let (lines, counted) = unauthenticated_lines(&net.log('b'));
    eprintln!(
        "40 pings answered, 20 connections dropped in {lines} lines over {elapsed:.1} s; replayed {}, forged {}",
        net.counter('b', "mpsched_tunnel_rejected_datagrams_total{reason=\"replayed\"}"),
        net.counter('b', "mpsched_tunnel_rejected_datagrams_total{reason=\"forged\"}")
    );
    assert_eq!(counted, 20, "{}", net.log('b'));
    assert_eq!(per_end('b', "tcp_unauthenticated_connections_total"), 20.0);
    assert_eq!(per_end('b', "tcp_pending_connections"), 0.0);
    assert!(
        lines as f64 <= elapsed.floor() + 1.0 && lines < 20,
        "{lines} lines in {elapsed:.1} s:\n{}",
        net.log('b')
    );
    assert!(
        net.counter('b', "mpsched_tunnel_rejected_datagrams_total{reason=\"replayed\"}") >= 4.0,
        "the genuine record sent again is refused as replayed"
    );
}

/// Python in b's namespace captures a genuine datagram on path 1 and sends it again as it was
/// (replayed), with a packet number never used and the payload unchanged (forged: its tag no
/// longer matches), cut to 20 bytes (truncated) and padded past the largest datagram
/// (oversized). Each is counted once under its reason and nothing else is refused.
fn forged_replayed_truncated_and_oversized_datagrams_are_refused_and_counted() {
    let _g = serial();
    let mut net = Net::build(
        "forge",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0],
        },
    );
    net.start_both("rr", "");
    let script = format!(
        r#"
import socket
raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
raw.bind(("b1", 0)); raw.settimeout(5)
while True:
    f = raw.recv(65535)
    ip = f[14:]; ihl = (ip[0] & 15) * 4
    if ip[9] == 17 and int.from_bytes(ip[ihl+2:ihl+4], "big") == {PORT} and ip[16:20] == bytes([192,168,1,2]):
        d = ip[ihl+8:]
        break
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
to = ("192.168.1.2", {PORT})
u.sendto(d, to)
forged = d[:12] + (2**62).to_bytes(8, "big") + d[20:]
u.sendto(forged, to)
u.sendto(d[:20], to)
u.sendto(d + bytes(3000), to)
print(len(d))
"#
    );
    let out = net.b.exec("python3", &["-c", &script]).unwrap();
    assert!(out.status.success(), "python: {}", String::from_utf8_lossy(&out.stderr));
    std::thread::sleep(Duration::from_millis(300));
    let m = net.metrics('b').unwrap();
    let r = |reason: &str| m[&format!("mpsched_tunnel_rejected_datagrams_total{{reason=\"{reason}\"}}")];
    eprintln!(
        "captured a {}-byte datagram; refused at b: forged {}, replayed {}, truncated {}, oversized {}, bad header {}, \
         wrong path {}, malformed {}",
        String::from_utf8_lossy(&out.stdout).trim(),
        r("forged"),
        r("replayed"),
        r("truncated"),
        r("oversized"),
        r("bad_header"),
        r("wrong_path"),
        r("malformed")
    );
    for reason in ["forged", "replayed", "truncated", "oversized"] {
        assert_eq!(r(reason), 1.0, "{reason}");
    }
    for reason in ["bad_header", "wrong_path", "malformed"] {
        assert_eq!(r(reason), 0.0, "{reason}");
    }
    assert_eq!(m["mpsched_tunnel_sessions_total"], 1.0, "no forgery started a session");
    // The tunnel still carries traffic.
    assert!(net.iperf(1) > 1e6);
}

/// A UDP stream of 1000 packets/s through the tunnel (round robin over two paths); path 2's
/// far end goes down after 1.5 s. Packets sent on path 2 are lost until a's daemon judges it
/// down (dead_after 300 ms here, keepalives every 100 ms); after that none is.
fn traffic_moves_off_a_path_whose_link_goes_down() {
    let _g = serial();
    let mut net = Net::build(
        "failover",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0],
        },
    );
    net.start_both("rr", "keepalive = \"100ms\"\ndead_after = \"300ms\"");
    let rx_script = r#"
import socket, time, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9000)); s.settimeout(2)
got = []
try:
    while True:
        d, _ = s.recvfrom(2048)
        got.append(int.from_bytes(d[:4], "big"))
except socket.timeout:
    pass
print(" ".join(map(str, got)))
"#;
    let rx = net.b.spawn("python3", &["-c", rx_script]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let tx_script = format!(
        r#"
import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
print(time.time(), flush=True)
for i in range(4000):
    while time.monotonic() < t0 + i / 1000: pass
    s.sendto(i.to_bytes(4, "big") + bytes(96), ("{B_TUN}", 9000))
"#
    );
    let wall = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    let tx = net.a.spawn("python3", &["-c", &tx_script]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let down_wall = wall();
    let o = net.b.ip(&["link", "set", "b2", "down"]).unwrap();
    assert!(o.status.success());
    let sent = tx.wait_with_output().unwrap();
    // The sender's packet i left at its t0 + i ms (wall clock, the same in every namespace).
    let t0: f64 = String::from_utf8_lossy(&sent.stdout)
        .trim()
        .parse()
        .expect("the sender's t0");
    let out = rx.wait_with_output().unwrap();
    let got: std::collections::BTreeSet<u32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let lost: Vec<u32> = (0..4000).filter(|i| !got.contains(i)).collect();
    let down_ms = (down_wall - t0) * 1e3;
    let (first, last) = (lost.first().copied(), lost.last().copied());
    eprintln!(
        "link down at {down_ms:.0} ms; {} of 4000 lost, sent from {first:?} to {last:?} ms: traffic moved {} ms after \
         the link went down; a's log:\n{}",
        lost.len(),
        last.map_or(0.0, |l| f64::from(l) - down_ms).round(),
        net.log('a')
    );
    assert!(net.log('a').contains("path `p2` down"), "{}", net.log('a'));
    let last = last.expect("packets on path 2 are lost before it is judged down") as f64;
    let moved_ms = last - down_ms;
    // Judged down 300 ms after the oldest unacknowledged message: within 300 ms plus one
    // keepalive interval and the sender's timing slack.
    assert!((0.0..=500.0).contains(&moved_ms), "moved after {moved_ms} ms");
    assert!(
        lost.iter().all(|&l| f64::from(l) >= down_ms - 50.0),
        "lost before the link went down: {lost:?}"
    );
    // While the path was being judged, about every other packet went on it.
    assert!(
        lost.len() as f64 <= moved_ms * 0.6 + 20.0,
        "{} lost in {moved_ms} ms",
        lost.len()
    );
}

/// Paths of 10 and 50 ms one way (delay lines), 20 Mbit/s each, round robin: TCP through the
/// tunnel sees its packets in order, the reordering buffer having held the fast path's; out
/// of order delivery to the TUN device stays below 0.1 %.
fn reordering_over_paths_of_10_and_50_ms_stays_below_a_thousandth() {
    let _g = serial();
    let mut net = Net::build(
        "reorder",
        &Paths {
            rate: Some("20mbit"),
            delay_ms: vec![10, 50],
        },
    );
    net.start_both("rr", "reorder_timeout = \"200ms\"");
    let goodput = net.iperf(8);
    let m = net.metrics('b').unwrap();
    let k = |s: &str| {
        *m.get(&format!("mpsched_tunnel_reorder_{s}"))
            .unwrap_or_else(|| panic!("no {s} in {m:?}"))
    };
    let delivered = m["mpsched_tunnel_tun_tx_packets_total"];
    let late = k("late_total");
    let held = k("held_total");
    eprintln!(
        "goodput {:.1} Mbit/s; at b: {delivered} delivered, {} in order, {held} held (mean {:.1} ms, max {:.1} ms), \
         {late} late = {:.4} %, {} skipped, {} timeouts, {} overflows, {} losses ({} of them late, grace now {:.2} ms), \
         occupancy max {}; reordered on the paths at b: {:?}; srtt a: {:?}",
        goodput / 1e6,
        k("in_order_total"),
        k("held_seconds_total") / held.max(1.0) * 1e3,
        k("held_seconds_max") * 1e3,
        late / delivered * 100.0,
        k("skipped_total"),
        k("timeouts_total"),
        k("overflows_total"),
        k("losses_total"),
        k("loss_late_total"),
        k("loss_grace_seconds") * 1e3,
        k("max_occupancy_packets"),
        (1..=2)
            .map(|n| net.counter('b', &format!("mpsched_tunnel_path_rx_reordered_total{{path=\"p{n}\"}}")))
            .collect::<Vec<_>>(),
        (1..=2)
            .map(|n| net.counter('a', &format!("mpsched_tunnel_path_srtt_seconds{{path=\"p{n}\"}}")))
            .collect::<Vec<_>>()
    );
    assert!(delivered > 1000.0);
    assert!(late / delivered < 0.001, "{late} of {delivered} out of order");
    assert!(held > 0.0, "nothing held: the paths' delays did not differ");
}

/// SIGINT to one daemon, SIGTERM to the other: both exit cleanly and their TUN devices and
/// routes are gone. A daemon killed with SIGKILL leaves nothing either (the device lives only
/// while its descriptor is open). The restarted initiator is a new session the responder
/// follows, and traffic flows again.
fn sigint_sigterm_and_sigkill_leave_no_device_or_route_and_a_restart_is_a_new_session() {
    let _g = serial();
    let mut net = Net::build(
        "signal",
        &Paths {
            rate: None,
            delay_ms: vec![0, 0],
        },
    );
    net.start_both("afmt", "");
    let has_device = |net: &Net, ns: &mpsched_netns::ns::Netns| {
        let links = ns.ip(&["-o", "link"]).unwrap();
        let routes = ns.ip(&["route"]).unwrap();
        let _ = net;
        String::from_utf8_lossy(&links.stdout).contains("mpt0")
            || String::from_utf8_lossy(&routes.stdout).contains("mpt0")
    };
    assert!(has_device(&net, &net.a) && has_device(&net, &net.b));
    let signal = |net: &mut Net, end: &str, sig: i32| {
        let (_, child) = net.daemons.iter_mut().find(|(e, _)| e == end).unwrap();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as libc::pid_t, sig) };
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "{end} did not end on signal {sig}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    // SIGKILL first: a, then restart it.
    let st = signal(&mut net, "a", libc::SIGKILL);
    assert!(!st.success());
    assert!(!has_device(&net, &net.a), "SIGKILL left the device");
    net.daemons.retain(|(e, _)| e != "a");
    let ca = net.config('a', "afmt", "");
    net.start('a', &ca);
    let deadline = Instant::now() + Duration::from_secs(5);
    while net.counter('b', "mpsched_tunnel_sessions_total") < 2.0 {
        assert!(
            Instant::now() < deadline,
            "b did not follow a's new session: {}",
            net.log('b')
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(net.iperf(2) > 1e6, "no traffic after the restart");
    // b started afresh with a's new session: its acknowledgements are taken, paths stay up,
    // and its reordering buffer orders the new session's packets.
    for n in 1..=2 {
        assert_eq!(
            net.counter('a', &format!("mpsched_tunnel_path_up{{path=\"p{n}\"}}")),
            1.0,
            "{}",
            net.log('a')
        );
    }
    assert_eq!(net.counter('b', "mpsched_tunnel_peer_restarts_total"), 1.0);
    let late = net.counter('b', "mpsched_tunnel_reorder_late_total");
    let delivered = net.counter('b', "mpsched_tunnel_tun_tx_packets_total");
    assert!(late < 0.01 * delivered, "{late} of {delivered} late after the restart");
    assert!(net.log('b').contains("the peer restarted"), "{}", net.log('b'));
    assert_eq!(
        net.counter('b', "mpsched_tunnel_rejected_datagrams_total{reason=\"forged\"}"),
        0.0
    );
    let sa = signal(&mut net, "a", libc::SIGINT);
    let sb = signal(&mut net, "b", libc::SIGTERM);
    assert!(
        sa.success() && sb.success(),
        "{sa:?} {sb:?}: {}\n{}",
        net.log('a'),
        net.log('b')
    );
    assert!(!has_device(&net, &net.a) && !has_device(&net, &net.b));
    for e in ['a', 'b'] {
        let out = std::fs::read_to_string(net.dir.join(format!("{e}.out"))).unwrap();
        assert!(
            out.contains("mpsched_tunnel_tun_tx_packets_total"),
            "{e} printed no counters: {out}"
        );
        assert!(net.log(e).contains("mpt0 removed"));
    }
    let names = (net.a.name().to_string(), net.b.name().to_string());
    drop(net);
    let list = String::from_utf8_lossy(
        &std::process::Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    assert!(
        !list.contains(&names.0) && !list.contains(&names.1),
        "namespaces left: {list}"
    );
}

/// The AFMT paper's three-subtunnel scenario on the kernel (`--backend netns`), its timeline
/// cut at 10 s: a daemon at each tunnel end over UDP (RR) and kernel TCP subtunnels (AFMT,
/// RR-TCP). Every subtunnel carries packets both ways, the downloads arrive, AFMT keeps a
/// flow on its subtunnel (it moved one on 1.5-2.4 % of the packets of known flows idle, 2.5 % with
/// the two cores busy) and so delivers fewer packets out of order than round robin (its point:
/// the paper's 7 % against 48 %; here 11-13 % against 45-51 % idle, 18-19 % against 53 % busy,
/// 25 % against 45 % once in CI), and the run leaves no namespace or file behind.
fn afmt_scenario_runs_on_the_kernel_with_a_daemon_at_each_tunnel_end() {
    let _g = serial();
    let out = common::scratch("mps-tunnel-afmt", "out");
    let o = common::mpsched()
        .args([
            "run",
            "afmt/three-subtunnels",
            "--backend",
            "netns",
            "--ignore-delay",
            "--duration",
            "10s",
            "--no-plot",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    common::ok(&o);
    let mut reordered = std::collections::BTreeMap::new();
    let mut afmt_counters = serde_json::Value::Null;
    for v in ["RR", "AFMT", "RR-TCP"] {
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(v).join("summary.json")).unwrap()).unwrap();
        let run = &s["repetitions"][0];
        let tunnels = run["tunnels"].as_array().unwrap();
        assert_eq!(tunnels.len(), 2, "{v}: both directions: {tunnels:?}");
        for t in tunnels {
            let per: Vec<u64> = t["per_subtunnel_pkts"]
                .as_object()
                .unwrap()
                .values()
                .map(|n| n.as_u64().unwrap())
                .collect();
            assert_eq!(per.len(), 3, "{v}: {t}");
            assert!(per.iter().all(|&n| n > 100), "{v}: a subtunnel unused: {t}");
            assert!(t["forwarded_pkts"].as_u64().unwrap() > 1000, "{v}: {t}");
        }
        let down = &tunnels[0];
        assert_eq!(down["id"], "mt.down");
        reordered.insert(v, down["reordered_pct"].as_f64().unwrap());
        if v == "AFMT" {
            afmt_counters = down["scheduler_counters"].clone();
        }
        let mib: f64 = run["flows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["id"].as_str().unwrap().starts_with("download"))
            .map(|f| f["delivered_mib"].as_f64().unwrap())
            .sum();
        eprintln!(
            "{v}: downloads {mib:.1} MiB, reordered at the exit {} %, scheduler {}",
            reordered[v], down["scheduler_counters"]
        );
        assert!(mib > 5.0, "{v}: {mib} MiB");
    }
    // What AFMT decides: a known flow's packet stays on its subtunnel unless it cannot
    // overtake its predecessor there. Round robin turns a flow to another of the three
    // subtunnels on about 2 of 3 packets; AFMT moves it on under a tenth of that.
    let c = &afmt_counters;
    let count = |k: &str| {
        c[k].as_f64()
            .unwrap_or_else(|| panic!("no {k} in the AFMT entry's counters: {c}"))
    };
    let moves = count("afmt_moves");
    let known = moves + count("afmt_stays");
    assert!(
        known > 1000.0 && moves / known < 2.0 / 3.0 / 10.0,
        "AFMT moves flows: {c}"
    );
    // What the exit sees follows, though how much a move reorders depends on the machine's
    // load (the daemons read queues that a busy CPU lets grow): less than both round robins.
    assert!(
        reordered["AFMT"] < reordered["RR"].min(reordered["RR-TCP"]),
        "AFMT reorders less than round robin: {reordered:?}"
    );
    let left: Vec<String> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("mps-") && n.contains(".tunnel."))
        .filter(|n| common::made_by_this_test(n.split('.').next().unwrap_or("")))
        .collect();
    assert!(left.is_empty(), "files left: {left:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A tunnel from a gateway switch to a host with two links (a phone on Wi-Fi and cellular), on
/// the kernel: the host's daemon runs beside its own traffic. A TCP download from the server
/// behind the gateway and a TCP upload from the device both cross the tunnel, over both paths.
fn a_tunnel_ending_at_a_two_link_host_runs_on_the_kernel() {
    let _g = serial();
    let dir = common::scratch("mps-tunnel-host", "dir");
    std::fs::create_dir_all(&dir).unwrap();
    let mut t = String::from(
        "[scenario]\nname = \"host-end\"\nduration = \"6s\"\n\
         [[node]]\nname = \"srv\"\nkind = \"host\"\n[[node]]\nname = \"upf\"\nkind = \"switch\"\n\
         [[node]]\nname = \"wifi\"\nkind = \"switch\"\n[[node]]\nname = \"cell\"\nkind = \"switch\"\n\
         [[node]]\nname = \"ue\"\nkind = \"host\"\n",
    );
    // The device has an address per interface, as a multi-homed host on the kernel needs.
    for (a, b, rate, a_ip) in [
        ("srv", "upf", "1Gbps", ""),
        ("upf", "wifi", "1Gbps", ""),
        ("upf", "cell", "1Gbps", ""),
        ("ue", "wifi", "20Mbps", "a_ip = \"10.1.0.2\"\n"),
        ("ue", "cell", "10Mbps", "a_ip = \"10.2.0.2\"\n"),
    ] {
        t += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\nrate = \"{rate}\"\n{a_ip}");
    }
    t += "[[path]]\nname = \"wifi\"\nnodes = [\"upf\", \"wifi\", \"ue\"]\n\
          [[path]]\nname = \"cell\"\nnodes = [\"upf\", \"cell\", \"ue\"]\n\
          [[tunnel]]\nname = \"t\"\nentry = \"upf\"\nexit = \"ue\"\nsubtunnels = [\"wifi\", \"cell\"]\n\
          scheduler = \"rr\"\ntransport = \"udp\"\n\
          [[flow]]\nname = \"down\"\nsrc = \"srv\"\ndst = \"ue\"\nprotocol = \"tcp\"\nstart = \"0s\"\nstop = \"5s\"\ndst_port = 5201\n\
          [[flow]]\nname = \"up\"\nsrc = \"ue\"\ndst = \"srv\"\nprotocol = \"tcp\"\nstart = \"0s\"\nstop = \"5s\"\ndst_port = 5202\n";
    let file = dir.join("host-end.toml");
    std::fs::write(&file, t).unwrap();
    let out = dir.join("out");
    let o = common::mpsched()
        .args(["run", "--backend", "netns", "--no-plot", "--out"])
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    common::ok(&o);
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let run = &s["repetitions"][0];
    for f in run["flows"].as_array().unwrap() {
        // Round robin over 20 and 10 Mbit/s: about twice the slower path, less TCP's share.
        let mbps = f["delivered_mbps"].as_f64().unwrap();
        eprintln!("{}: {mbps:.1} Mbit/s", f["id"]);
        assert!(mbps > 5.0, "{f}");
    }
    for t in run["tunnels"].as_array().unwrap() {
        eprintln!("{t}");
        let per: Vec<u64> = t["per_subtunnel_pkts"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .collect();
        assert!(per.len() == 2 && per.iter().all(|&n| n > 500), "{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// ATSSS on the kernel (`atsss/one-ue-outage`, 15 s, 100 ms samples, the kernel's finest): the
/// UPF is the switch program `atsss` in XDP with CMon, the UE the daemon in clear, WiFi's
/// capacity trace played by htb and its 2 s outage (10 to 12 s) a leaf that drops everything.
/// Stated bounds (docs/reproduction.md): CMon moves the 24 Mbit/s stream to cellular within
/// 300 ms of the outage's start (it declares a path down after max(4 target RTTs, the 20 ms
/// floor) of silence, then cellular's window grows from 10 packets; measured 100-200 ms, the
/// rest room for `tc` landing late on a loaded machine) and is back on WiFi within 800 ms of
/// its end (its probes of a dead path back off to 16 floors, 320 ms; measured 300-400 ms);
/// loss under 2 %.
fn cmon_in_the_ebpf_upf_leaves_wifi_in_its_2_s_outage_and_returns_after_it() {
    let _g = serial();
    let dir = common::scratch("mps-tunnel-atsss", "dir");
    std::fs::create_dir_all(&dir).unwrap();
    let builtin = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atsss/one-ue-outage.toml");
    let text = std::fs::read_to_string(builtin).unwrap();
    assert!(
        text.contains("sample_interval = \"10ms\""),
        "the built-in changed: adapt this test"
    );
    let file = dir.join("outage.toml");
    std::fs::write(
        &file,
        text.replace("sample_interval = \"10ms\"", "sample_interval = \"100ms\""),
    )
    .unwrap();
    let out = dir.join("out");
    let o = common::mpsched()
        .args([
            "run",
            "--backend",
            "netns",
            "--ignore-delay",
            "--variant",
            "CMon",
            "--duration",
            "15s",
        ])
        .args(["--no-plot", "--out"])
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    common::ok(&o);
    let csv = std::fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        head.iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}: {head:?}"))
    };
    let (t, wifi, cell) = (col("time_s"), col("via_wifi_mbps"), col("via_cellular_mbps"));
    let rows: Vec<(f64, f64, f64)> = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap_or(0.0)).collect();
            (v[t], v[wifi], v[cell])
        })
        .collect();
    let share = |from: f64, to: f64| {
        let (w, c) = rows
            .iter()
            .filter(|r| r.0 > from + 1e-6 && r.0 <= to + 1e-6)
            .fold((0.0, 0.0), |(w, c), r| (w + r.1, c + r.2));
        w / (w + c).max(1e-9)
    };
    let first_after = |at: f64, pred: &dyn Fn(&(f64, f64, f64)) -> bool| {
        rows.iter().find(|r| r.0 > at + 1e-6 && pred(r)).map(|r| r.0 - at)
    };
    let moved = first_after(10.0, &|r| r.1 < 0.5 && r.2 > 0.8 * 24.0);
    let back = first_after(12.0, &|r| r.1 > 0.9 * 24.0);
    eprintln!(
        "ATSSS on the kernel, CMon: WiFi share before {:.3}, during {:.3}, after {:.3}; moved {moved:?} s after \
         the outage began, back {back:?} s after it ended",
        share(8.0, 10.0),
        share(10.3, 12.0),
        share(13.0, 15.0)
    );
    assert!(
        share(8.0, 10.0) > 0.9,
        "before the outage WiFi carries the stream: {rows:?}"
    );
    assert!(moved.is_some_and(|s| s <= 0.3 + 1e-6), "moved {moved:?}: {rows:?}");
    assert!(share(10.3, 12.0) < 0.02, "nothing but probes into the outage: {rows:?}");
    assert!(back.is_some_and(|s| s <= 0.8 + 1e-6), "back {back:?}: {rows:?}");
    assert!(share(13.0, 15.0) > 0.9, "WiFi carries the stream again: {rows:?}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let run = &s["repetitions"][0];
    let video = &run["flows"][0];
    assert!(video["loss_pct"].as_f64().unwrap() < 2.0, "{video}");
    let upf = &run["counters"]["upf"];
    assert!(
        upf["counter.atsss.acks"].as_u64().unwrap() > 10_000,
        "the UE acknowledges: {upf}"
    );
    let tunnel = &run["tunnels"][0];
    assert_eq!(tunnel["id"], "ue.down", "{tunnel}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mpsched bench --atsss`, small (1 000 UEs, 20 000 runs a size, veth runs of 0.3 s): every
/// cell of the slides' table measured, with the share each scheduler realised equal to its
/// row's (WRR and DWRR by their weight; RTTMon's UEs at weight 62 or 0 send 63/64 or 1/64 of
/// theirs to the preferred path; CMon's congested UEs probe it, once at their first packet and
/// then once per target RTT), the UPF's own rate above the
/// harness-included one, and the baseline and the four schedulers through veths at every row.
/// Rates are not bounded here (docs/performance.md has them, measured on a quiet machine).
fn the_upf_benchmark_fills_the_slides_table_and_runs_every_program_through_veths() {
    let _g = serial();
    let o = common::mpsched()
        .args(["bench", "--atsss", "--atsss-ues", "1000", "--atsss-reps", "1"])
        .args(["--bpf-repeat", "20000", "--atsss-veth-seconds", "0.3", "--json"])
        .output()
        .unwrap();
    common::ok(&o);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cells = v["test_run"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 28, "7 rows x 4 schedulers");
    for c in cells {
        let (total, own) = (
            c["mpps_median"].as_f64().unwrap(),
            c["mpps_upf_median"].as_f64().unwrap(),
        );
        assert!(total > 0.1 && own > total, "{c}");
        let row = c["row"].as_str().unwrap();
        let want = match row.split(':').next().unwrap() {
            "1" => 1.0,
            "0" => 0.0,
            x => x.parse::<f64>().unwrap(),
        };
        let slack = match c["kind"].as_str().unwrap() {
            "wrr" | "dwrr" => 0.01,
            "rttmon" => 0.025,
            // A congested UE's first packet probes the preferred path: 1 in the ~20 packets
            // each of 1 000 UEs gets in so short a run.
            _ => 0.1,
        };
        let got = c["preferred_share"].as_f64().unwrap();
        assert!((got - want).abs() <= slack, "{row}: share {got}, want {want}: {c}");
    }
    let veth = v["veth"].as_array().unwrap();
    assert_eq!(veth.len(), 7, "every row through veths");
    for row in veth {
        let runs = row[1].as_array().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r["what"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            ["baseline (atsss_fwd)", "wrr", "dwrr", "rttmon", "cmon"],
            "{row}"
        );
        for r in runs {
            assert!(r["delivered"].as_u64().unwrap() > 1000, "{r}");
            assert!(r["mpps_per_cpu_s"].as_f64().unwrap() > 0.0, "{r}");
        }
    }
}
