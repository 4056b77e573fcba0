//! The traffic: iperf3 servers and clients per bulk flow, the traffic generator for fixed-size
//! transfers, and waiting for them to finish.

use super::results::report_interval;
use super::{check_stop_plain, is_transfer, push_child, trafficgen_exe, Build, Live, NetnsError, DRAIN};
use crate::hosts;
use crate::ns::Netns;
use crate::trafficgen::{format_schedule, unix_ns, ScheduledFlow, TG_PORT};
use mpsched_core::packet::{ipv4_to_string, Ecn};
use mpsched_scenario::{Flow, Protocol, Scenario, TcpApp, TcpFlow};
use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

impl Build<'_> {
    /// A one-off iperf3 server per flow, and a traffic generator server on every host that
    /// receives fixed-size transfers; then wait until all listen.
    pub(super) fn servers(&self, live: &mut Live) -> Result<(), NetnsError> {
        let sc = self.sc;
        let mut listeners: Vec<(usize, u16, String)> = Vec::new();
        let mut tg_hosts: Vec<usize> = Vec::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            if is_transfer(f) {
                if !tg_hosts.contains(&f.dst) {
                    tg_hosts.push(f.dst);
                }
                continue;
            }
            if super::paced::is_paced(f) {
                continue; // its receiver starts with its sender (`paced_flows`)
            }
            let addr = ipv4_to_string(sc.flow_addresses(self.w, f).1);
            let port = f.dst_port.to_string();
            let args = ["-s", "-1", "-J", "-i", &report_interval(sc), "-B", &addr, "-p", &port];
            let server = spawn_iperf3(&live.nss[f.dst], f, &args)?;
            live.server_of[fi] = Some(live.children.len());
            push_child(live, server);
            listeners.push((f.dst, f.dst_port, format!("the server of flow `{}`", f.name)));
        }
        let exe = trafficgen_exe()?;
        for &h in &tg_hosts {
            // Every address of the host (a multi-homed one has several); an MPTCP listener
            // where MPTCP transfers arrive, which plain TCP clients fall back on.
            let port = TG_PORT.to_string();
            let mut args = vec!["trafficgen", "serve", "--bind", "0.0.0.0", "--port", &port];
            if sc
                .flows
                .iter()
                .any(|f| f.dst == h && is_transfer(f) && f.protocol == Protocol::Mptcp)
            {
                args.push("--mptcp");
            }
            let server = live.nss[h].spawn(&exe, &args)?;
            live.tg_servers.push(live.children.len());
            push_child(live, server);
            listeners.push((h, TG_PORT, format!("the traffic generator on `{}`", sc.nodes[h].name)));
        }
        // Clients may start at once: wait until every server listens (a fixed pause was too
        // short for 16 servers on a busy machine, and a client then found no server).
        let deadline = Instant::now() + Duration::from_secs(10);
        for (node, port, what) in &listeners {
            while !listening(&live.nss[*node], *port) {
                if Instant::now() > deadline {
                    return Err(NetnsError::Traffic(format!(
                        "{what} was not listening on port {port} after 10 s"
                    )));
                }
                self.check_stop()?;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(())
    }

    /// One traffic generator client per host that sends fixed-size transfers, given its
    /// schedule; `t0` is the run's time zero.
    pub(super) fn generator_clients(&self, live: &mut Live, t0: Instant) -> Result<(), NetnsError> {
        let sc = self.sc;
        // One client per sending host and transport: MPTCP is chosen per process.
        let mut by_src: BTreeMap<(usize, bool), Vec<ScheduledFlow>> = BTreeMap::new();
        for (fi, f) in sc.flows.iter().enumerate() {
            let (Some(t), true) = (&f.tcp, is_transfer(f)) else {
                continue;
            };
            let TcpApp::Transfer { size_bytes } = t.app else {
                continue;
            };
            let maxseg = if t.config.mss_bytes == mpsched_transport::tcp::DEFAULT_MSS_BYTES {
                0
            } else {
                // TCP_MAXSEG clamps the MSS before Linux takes the 12 bytes of timestamps off.
                t.config.mss_bytes + 12
            };
            by_src
                .entry((f.src, f.protocol == Protocol::Mptcp))
                .or_default()
                .push(ScheduledFlow {
                    id: fi,
                    dst: std::net::Ipv4Addr::from(sc.flow_addresses(self.w, f).1),
                    size_bytes,
                    start_ns: f.start_ps / 1000,
                    cc: t.config.cc.linux_name().to_string(),
                    nodelay: t.config.nodelay,
                    maxseg,
                });
        }
        if by_src.is_empty() {
            return Ok(());
        }
        let exe = trafficgen_exe()?;
        // `t0` may be ahead: the clients start before time zero and wait for it.
        let now = Instant::now();
        let zero = std::time::SystemTime::now() + t0.saturating_duration_since(now) - now.saturating_duration_since(t0);
        let t0_ns = unix_ns(zero).to_string();
        // They stop at the end of the run and its drain, as the simulator's transfers do, and
        // report what each unfinished one delivered by then.
        let stop_ns = unix_ns(zero + Duration::from_nanos(sc.duration_ps / 1000) + DRAIN).to_string();
        for ((src, mptcp), flows) in by_src {
            let ids: Vec<usize> = flows.iter().map(|f| f.id).collect();
            let mut args = vec![
                "trafficgen",
                "client",
                "--t0-unix-ns",
                &t0_ns,
                "--stop-unix-ns",
                &stop_ns,
            ];
            if mptcp {
                args.push("--mptcp");
            }
            let c = live.nss[src].spawn_with_input(&exe, &args, format_schedule(&flows))?;
            for id in ids {
                live.tg_client_of[id] = Some(live.children.len());
            }
            push_child(live, c);
        }
        Ok(())
    }
}

/// Wait for the clients and servers (servers exit after their one test), then read them.
pub(super) fn wait_for_traffic(b: &Build, live: &mut Live, t0: Instant) -> Result<Vec<String>, NetnsError> {
    let (opts, run_id) = (b.opts, b.run_id);

    let deadline = Instant::now() + DRAIN + Duration::from_secs(5);
    let mut outputs = vec![String::new(); live.children.len()];
    live.ended_late_s = vec![None; live.children.len()];
    // The generator's servers run until killed: wait for everything else, then stop them.
    for (ci, c) in live.children.iter_mut().enumerate() {
        if live.tg_servers.contains(&ci) {
            continue;
        }
        loop {
            check_stop_plain(&opts.stop, run_id)?;
            if c.try_wait().ok().flatten().is_some() {
                break;
            }
            if Instant::now() > deadline {
                live.ended_late_s[ci] = Some(t0.elapsed().as_secs_f64());
                end_late(c);
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(r) = live.readers[ci].take() {
            outputs[ci] = r.join().unwrap_or_default();
        }
    }
    for &ci in &live.tg_servers {
        let c = &mut live.children[ci];
        let _ = c.kill();
        let _ = c.wait();
    }
    Ok(outputs)
}

/// End a process still running past the drain: SIGTERM first, on which an iperf3 server prints
/// its report (marked `interrupt`) before it exits, then SIGKILL if it has not exited within a
/// second. An iperf3 server outlives its client's last packet when its closing exchange over its
/// control connection is late: that connection carries no DSCP (iperf3 marks only its data
/// streams), so under strict priority it waits in the lowest class's queue.
fn end_late(c: &mut Child) {
    // SAFETY: kill(2) on the pid of a child not yet waited for (so not reused).
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(1) {
        if let Ok(Some(_)) = c.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = c.kill();
    let _ = c.wait();
}

/// iperf3 client arguments for a bulk TCP flow: `-C` for the congestion control, `-t`, `-N` for
/// no Nagle.
pub(super) fn tcp_client_args(
    sc: &Scenario,
    w: &mpsched_topo::Wiring,
    f: &Flow,
    t: &TcpFlow,
    dur_s: f64,
) -> Vec<String> {
    let mut args = client_args(sc, w, f);
    args.extend([
        "-C".into(),
        t.config.cc.linux_name().into(),
        "-i".into(),
        report_interval(sc),
    ]);
    // TCP_MAXSEG clamps the MSS before Linux takes the 12 bytes of timestamps off it.
    if t.config.mss_bytes != mpsched_transport::tcp::DEFAULT_MSS_BYTES {
        args.push("-M".into());
        args.push((t.config.mss_bytes + 12).to_string());
    }
    // Fixed-size transfers run in the traffic generator, not iperf3: this is a bulk flow.
    args.push("-t".into());
    args.push(format!("{dur_s:.3}"));
    if t.config.nodelay {
        args.push("-N".into());
    }
    args
}

/// iperf3 client arguments for a UDP flow at its rate, payload size and duration.
pub(super) fn udp_client_args(sc: &Scenario, w: &mpsched_topo::Wiring, f: &Flow, dur_s: f64) -> Vec<String> {
    let mut args = client_args(sc, w, f);
    args.extend([
        "-u".into(),
        "-b".into(),
        f.rate_bps.to_string(),
        "-l".into(),
        f.payload_bytes.to_string(),
        "-t".into(),
        format!("{dur_s:.3}"),
    ]);
    // Namespaces share one kernel, and since Linux 4.19 a packet keeps its socket reference
    // across veth: packets queued at a remote bottleneck count against the sender's send
    // buffer, which then blocks the sender instead of letting the bottleneck drop, as a
    // separate machine would. A send buffer as large as the system allows (net.core.wmem_max)
    // keeps the sender at its rate.
    args.extend(["-w".into(), send_buffer_bytes().to_string()]);
    if f.ecn != Ecn::NotEct || f.dscp != 0 {
        args.extend(["--tos".into(), ((f.dscp << 2) | f.ecn.bits()).to_string()]);
    }
    args
}

/// What every iperf3 client of flow `f` is given: the server's address and port, the flow's
/// source port and, on a multi-homed host, the address to send from; JSON output.
pub(super) fn client_args(sc: &Scenario, w: &mpsched_topo::Wiring, f: &Flow) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "-c".into(),
        ipv4_to_string(sc.flow_addresses(w, f).1),
        "-p".into(),
        f.dst_port.to_string(),
        "--cport".into(),
        f.src_port.to_string(),
        "-J".into(),
    ];
    if let Some(a) = hosts::bind_address(sc, w, f) {
        args.extend(["-B".into(), ipv4_to_string(a)]);
    }
    args
}

/// iperf3 in namespace `n` for flow `f`: under `mptcpize` (its sockets then open as
/// `IPPROTO_MPTCP`) for an MPTCP flow, since Debian's iperf3 3.12 has no MPTCP option.
pub(super) fn spawn_iperf3(n: &Netns, f: &Flow, args: &[&str]) -> Result<Child, NetnsError> {
    if f.protocol != Protocol::Mptcp {
        return Ok(n.spawn("iperf3", args)?);
    }
    let mut wrapped = vec!["run", "iperf3"];
    wrapped.extend_from_slice(args);
    Ok(n.spawn("mptcpize", &wrapped)?)
}

/// The largest send buffer a socket may ask for (net.core.wmem_max), at most 16 MB.
pub(super) fn send_buffer_bytes() -> u64 {
    std::fs::read_to_string("/proc/sys/net/core/wmem_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(212_992u64)
        .min(16 << 20)
}

/// Whether a TCP socket listens on `port` in the namespace (`/proc/net/tcp`, state 0A).
pub(super) fn listening(n: &Netns, port: u16) -> bool {
    let want = format!(":{port:04X}");
    n.enter(move || {
        let text = std::fs::read_to_string("/proc/thread-self/net/tcp").unwrap_or_default();
        text.lines().skip(1).any(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1).unwrap_or("");
            let state = f.nth(1).unwrap_or("");
            local.ends_with(&want) && state == "0A"
        })
    })
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::end_late;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    /// An iperf3 server ended past the drain still gives its report: SIGTERM makes it print
    /// what it received (marked `interrupt`), which `results` accepts. Before, SIGKILL left
    /// no output and the run failed with "server report unreadable".
    #[test]
    fn an_iperf3_server_ended_late_still_reports_what_it_received() {
        if Command::new("iperf3").arg("--version").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "CI installs iperf3");
            eprintln!("skipped: iperf3 is not installed");
            return;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
            .to_string();
        let mut server = Command::new("iperf3")
            .args(["-s", "-1", "-J", "-i", "0.2", "-B", "127.0.0.1", "-p", &port])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        // A client that sends for longer than the server is given.
        let mut client = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-u", "-b", "5M", "-t", "5", "-J"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let mut out = String::new();
        let mut stdout = server.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let _ = stdout.read_to_string(&mut out);
            out
        });
        end_late(&mut server);
        let out = reader.join().unwrap();
        let _ = client.kill();
        let _ = client.wait();
        let report: serde_json::Value = serde_json::from_str(&out).expect("a JSON report");
        let err = report["error"].as_str().unwrap_or_default();
        assert!(super::super::results::ended_late_with_report(&report, err), "{out}");
        let bytes = report["end"]["sum_received"]["bytes"].as_f64().unwrap();
        assert!(bytes > 100_000.0, "it received the client's first second: {bytes} B");
    }
}
