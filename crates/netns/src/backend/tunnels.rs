//! Multipath tunnels on the kernel: `mpsched tunnel` (the daemon of `mpsched-tunneld`) at each
//! end of each `[[tunnel]]`.
//!
//! A tunnel's end at a switch node runs no switch program on the kernel: its namespace forwards
//! with the kernel's routing (static /32 routes and neighbours, as the hosts have), and routes
//! the hosts behind the far end into the daemon's TUN device. A tunnel's end at a host runs the
//! daemon beside the host's own traffic, whose routes to the far end go into the device. The daemon sends each
//! packet on the subtunnel its scheduler picks, from the subtunnel's own address on the port
//! where the subtunnel's path starts, to the far end's address of that subtunnel
//! ([`subtunnel_addr`]), which the switches along the path route along it, as in the
//! simulator. UDP subtunnels carry one datagram per packet; TCP subtunnels one kernel TCP
//! connection each, with the tunnel's congestion control, buffers and `TCP_NODELAY`, and its
//! minimum RTO as the route's `rto_min`.
//!
//! The daemons run with the tunnel's reordering buffer (`reorder_capacity`, none by default, as
//! the simulator's tunnel and the AFMT paper's); reordering is measured at the exit (RFC 4737
//! on the order of entry) before it.
//! Their headers (authenticated header, tag and data header, 48 bytes) ride on top of the
//! outer UDP/IP headers the simulator counts, so the links of every subtunnel path get an MTU
//! of [`SUBTUNNEL_MTU`] and the TUN device the hosts' 1500 bytes.
//!
//! **ATSSS**: a UDP tunnel with an ATSSS scheduler (`wrr`, `cmon`, ... of
//! `mpsched_programs::atsss`) from a switch to a host is a UE behind a UPF. The switch runs no
//! daemon but the UPF in eBPF (the switch program `atsss` at XDP,
//! `crates/netns/src/programs/atsss.rs`), one UE table row per such tunnel ([`upf_table`]):
//! it encapsulates the UE's downlink into the daemon's datagram in clear, from its own address
//! to the UE's address of the path its scheduler picks, and takes the UE's acknowledgements.
//! The UE runs the daemon with `seal = "none"`, as responder: it learns the UPF's address from
//! the first datagram of each path and acknowledges every datagram. Its own traffic up the
//! tunnel goes round robin (the UPF decapsulates it, and acknowledges nothing).

use super::{mac_of, mac_string, Build, Live, NetnsError};
use crate::ns::Netns;
use mpsched_core::packet::{Ipv4, PortId};
use mpsched_core::upf::{UeEntry, UePath, UpfTable};
use mpsched_programs::atsss::{atsss_program, UeSetup};
use mpsched_programs::Params;
use mpsched_scenario::results::{round, TunnelFigures};
use mpsched_scenario::{NodeKind, Scenario, SubtunnelTransport};
use mpsched_topo::addressing::{subtunnel_addr, TunnelDir};
use mpsched_topo::Wiring;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The daemons' UDP or TCP port on every subtunnel address.
const TUNNEL_PORT: u16 = 4789;
/// Where each daemon serves its counters, inside its own namespace.
const METRICS_ADDR: &str = "127.0.0.1:9120";
/// MTU of the links along subtunnel paths: a 1500-byte inner packet, the tunnel's 48 bytes
/// and outer UDP/IP (28), or TCP/IP with a record's length, fit.
pub const SUBTUNNEL_MTU: u32 = 1600;
/// The inner packets' MTU (the hosts').
const INNER_MTU: u32 = 1500;
/// Most tunnels a kernel run starts (two daemon processes each).
pub const MAX_KERNEL_TUNNELS: usize = 16;
/// How long the daemons may take to see every subtunnel up.
const UP_TIMEOUT: Duration = Duration::from_secs(15);

/// One end of a tunnel on the kernel.
#[derive(Clone, Debug)]
pub(super) struct End {
    /// Tunnel index.
    pub tunnel: usize,
    /// 0 at the entry (sends down), 1 at the exit.
    pub side: usize,
    /// The node.
    pub node: usize,
    /// Per subtunnel: the port where its path leaves this end.
    pub ports: Vec<PortId>,
    /// The hosts behind the far end, reached through the tunnel: their addresses.
    pub far_addrs: Vec<Ipv4>,
}

impl End {
    /// This end's address of subtunnel `j` (where the far end sends) and the far end's.
    fn addrs(&self, j: usize) -> (Ipv4, Ipv4) {
        let (here, there) = match self.side {
            0 => (TunnelDir::Up, TunnelDir::Down),
            _ => (TunnelDir::Down, TunnelDir::Up),
        };
        (
            subtunnel_addr(self.tunnel, j, here),
            subtunnel_addr(self.tunnel, j, there),
        )
    }
}

/// Whether node `i` ends a tunnel with a daemon (it then runs no switch program). A UPF
/// ([`upf_setup`]) is no such end: it runs the switch program `atsss`.
pub(super) fn is_end(sc: &Scenario, i: usize) -> bool {
    sc.tunnels
        .iter()
        .enumerate()
        .any(|(t, tun)| tun.exit == i || (tun.entry == i && upf_setup(sc, t).is_none()))
}

/// The UE row of tunnel `t`, if its entry is a UPF on the kernel: a UDP tunnel with an ATSSS
/// scheduler from a switch.
pub(super) fn upf_setup(sc: &Scenario, t: usize) -> Option<UeSetup> {
    let tun = &sc.tunnels[t];
    if tun.transport != SubtunnelTransport::Udp || sc.nodes[tun.entry].kind != NodeKind::Switch {
        return None;
    }
    Some(atsss_program(tun.scheduler)?.ue_setup(&tun.scheduler_params))
}

/// Whether node `i` is a UPF: the entry of an ATSSS tunnel ([`upf_setup`]).
pub(super) fn is_upf(sc: &Scenario, i: usize) -> bool {
    (0..sc.tunnels.len()).any(|t| sc.tunnels[t].entry == i && upf_setup(sc, t).is_some())
}

/// The UE table and the `atsss` program's parameters of UPF node `i`: one UE per ATSSS tunnel
/// it enters, its paths the tunnel's subtunnels in order (the first preferred), each UE's
/// address on a path its subtunnel address there. Refuses tunnels that disagree on a setting
/// the UPF shares between its UEs (the outage floor, CMon's initial window), and a UE that is
/// not a host.
pub(super) fn upf_table(sc: &Scenario, w: &Wiring, i: usize) -> Result<(UpfTable, Params), String> {
    let program = mpsched_programs::switch_program("atsss").ok_or("the switch program `atsss` is not registered")?;
    let mut params = Params::defaults(program.params());
    let mut table = UpfTable {
        epoch: session_epoch(),
        ues: Vec::new(),
    };
    let mut shared: Option<(u64, u16, &str)> = None;
    for (t, tun) in sc.tunnels.iter().enumerate().filter(|(_, tun)| tun.entry == i) {
        let Some(setup) = upf_setup(sc, t) else { continue };
        if sc.nodes[tun.exit].kind != NodeKind::Host {
            return Err(format!(
                "tunnel `{}`: an ATSSS tunnel on the kernel ends at a UE, a host; `{}` is a switch",
                tun.name, sc.nodes[tun.exit].name
            ));
        }
        match shared {
            None => shared = Some((setup.outage_floor_ps, setup.initial_cwnd, &tun.name)),
            Some((floor, cwnd, first)) if (floor, cwnd) != (setup.outage_floor_ps, setup.initial_cwnd) => {
                return Err(format!(
                    "tunnels `{first}` and `{}` meet at the UPF `{}` with different outage floors or initial \
                     windows: the UPF in eBPF shares them between its UEs; give them the same",
                    tun.name, sc.nodes[i].name
                ));
            }
            Some(_) => {}
        }
        let paths = tun
            .subtunnels
            .iter()
            .enumerate()
            .map(|(j, &p)| {
                let next = sc.paths[p].nodes[1];
                let port = w.ports[i]
                    .iter()
                    .position(|e| e.peer == next)
                    .ok_or_else(|| format!("tunnel `{}`: no link from `{}`", tun.name, sc.nodes[i].name))?;
                Ok(UePath {
                    addr: subtunnel_addr(t, j, TunnelDir::Down),
                    port: TUNNEL_PORT,
                    egress_port: port as PortId,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        table.ues.push(UeEntry {
            ip: ue_address(sc, w, tun.exit).map_err(|e| format!("tunnel `{}`: {e}", tun.name))?,
            kind: setup.kind,
            weight: setup.weight,
            paths,
        });
    }
    let declared = program.params();
    if let Some((floor, cwnd, _)) = shared {
        params.set(declared, "outage_floor", floor)?;
        params.set(declared, "initial_cwnd", u64::from(cwnd))?;
    }
    params.set(declared, "mtu", u64::from(SUBTUNNEL_MTU))?;
    table.check(sc.nodes[i].ip, w.ports[i].len())?;
    Ok((table, params))
}

/// The one address of UE `ue` the UPF tunnels: the one the flows to it are sent to (a
/// multi-homed host's is its interface's), or its own without flows.
fn ue_address(sc: &Scenario, w: &Wiring, ue: usize) -> Result<Ipv4, String> {
    let used: BTreeSet<Ipv4> = sc
        .flows
        .iter()
        .filter(|f| f.dst == ue && f.src != ue)
        .map(|f| sc.flow_addresses(w, f).1)
        .collect();
    match used.len() {
        0 => Ok(sc.nodes[ue].ip),
        1 => Ok(used.into_iter().next().unwrap_or_default()),
        _ => Err(format!(
            "the flows to `{}` use {} of its addresses; the UPF in eBPF tunnels one per UE",
            sc.nodes[ue].name,
            used.len()
        )),
    }
}

/// A UPF's session epoch: the wall clock in ns, as the daemon's (a restarted UPF has a newer
/// session, which the UEs follow).
fn session_epoch() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// Every tunnel's two ends, or why the kernel cannot run them.
pub(super) fn ends(sc: &Scenario, w: &Wiring) -> Result<Vec<End>, String> {
    if sc.tunnels.len() > MAX_KERNEL_TUNNELS {
        return Err(format!(
            "{} tunnels: a kernel run starts two daemons per tunnel and takes at most {MAX_KERNEL_TUNNELS}; use \
             --backend sim",
            sc.tunnels.len()
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (t, tun) in sc.tunnels.iter().enumerate() {
        let ends = [tun.entry, tun.exit];
        let upf = upf_setup(sc, t).is_some();
        if upf {
            upf_table(sc, w, tun.entry)?;
        }
        for (side, &node) in ends.iter().enumerate() {
            let name = &sc.nodes[node].name;
            if upf && side == 0 {
                if sc
                    .program_of(node)
                    .is_some_and(|(p, _)| p.name() != mpsched_programs::DEFAULT_PROGRAM)
                {
                    return Err(format!(
                        "`{name}` is the UPF of ATSSS tunnel `{}`: on the kernel it runs the UPF (the switch \
                         program `atsss`) and no other; remove its program",
                        tun.name
                    ));
                }
                continue;
            }
            if is_upf(sc, node) {
                return Err(format!(
                    "`{name}` is a UPF and ends tunnel `{}` too: on the kernel it runs the UPF in eBPF, not a \
                     tunnel daemon; use --backend sim",
                    tun.name
                ));
            }
            if !seen.insert(node) {
                return Err(format!(
                    "`{name}` ends two tunnels: on the kernel a node runs one tunnel daemon; use --backend sim"
                ));
            }
            if sc
                .program_of(node)
                .is_some_and(|(p, _)| p.name() != mpsched_programs::DEFAULT_PROGRAM)
            {
                return Err(format!(
                    "`{name}` ends tunnel `{}` and has a switch program: on the kernel a tunnel's end runs the \
                     tunnel daemon and the kernel's forwarding, no switch program; remove its program",
                    tun.name
                ));
            }
            let far = ends[1 - side];
            let hop = |pn: &[usize], from_start: bool| if from_start { pn[1] } else { pn[pn.len() - 2] };
            let port_to = |from: usize, to: usize| -> Result<PortId, String> {
                w.ports[from]
                    .iter()
                    .position(|e| e.peer == to)
                    .map(|p| p as PortId)
                    .ok_or_else(|| format!("tunnel `{}`: no link from `{}`", tun.name, sc.nodes[from].name))
            };
            let ports = tun
                .subtunnels
                .iter()
                .map(|&p| port_to(node, hop(&sc.paths[p].nodes, side == 0)))
                .collect::<Result<Vec<_>, _>>()?;
            let far_ports = tun
                .subtunnels
                .iter()
                .map(|&p| port_to(far, hop(&sc.paths[p].nodes, side == 1)))
                .collect::<Result<Vec<_>, _>>()?;
            // As in the simulator: a far end that is a host is itself behind it; a switch has
            // the hosts it reaches by another port than a subtunnel's.
            let far_addrs = match sc.nodes[far].kind {
                NodeKind::Host => host_addrs(sc, w, far),
                NodeKind::Switch => (0..sc.nodes.len())
                    .filter(|&h| sc.nodes[h].kind == NodeKind::Host)
                    .filter(|&h| w.routes.port(far, h).is_some_and(|p| !far_ports.contains(&p)))
                    .flat_map(|h| host_addrs(sc, w, h))
                    .collect(),
            };
            out.push(End {
                tunnel: t,
                side,
                node,
                ports,
                far_addrs,
            });
        }
    }
    Ok(out)
}

/// Every address of host `h`: its own and its interfaces'.
fn host_addrs(sc: &Scenario, w: &Wiring, h: usize) -> Vec<Ipv4> {
    let mut a: BTreeSet<Ipv4> = w.interface_ips[h].iter().copied().collect();
    a.insert(sc.nodes[h].ip);
    a.into_iter().collect()
}

/// The links along the tunnels' subtunnel paths (they get [`SUBTUNNEL_MTU`]).
pub(super) fn subtunnel_links(sc: &Scenario, w: &Wiring) -> BTreeSet<usize> {
    let mut links = BTreeSet::new();
    for tun in &sc.tunnels {
        for &p in &tun.subtunnels {
            for pair in sc.paths[p].nodes.windows(2) {
                if let Some(e) = w.ports[pair[0]].iter().find(|e| e.peer == pair[1]) {
                    links.insert(e.link);
                }
            }
        }
    }
    links
}

fn ip(a: Ipv4) -> String {
    std::net::Ipv4Addr::from(a).to_string()
}

/// The daemon's configuration for end `e` (TOML, as a user would write it).
fn daemon_config(sc: &Scenario, e: &End, key_file: &str) -> String {
    let tun = &sc.tunnels[e.tunnel];
    let role = if e.side == 0 { "initiator" } else { "responder" };
    let dev_addr = format!("169.254.{}.{}/30", e.tunnel / 64, (e.tunnel % 64) * 4 + 1 + e.side);
    // A host already has routes to the far hosts (by its links): those are replaced once the
    // device is up ([`Build::route_host_end_into_the_tunnel`]).
    let routes: Vec<String> = match sc.nodes[e.node].kind {
        NodeKind::Switch => e.far_addrs.iter().map(|&a| format!("\"{}/32\"", ip(a))).collect(),
        NodeKind::Host => Vec::new(),
    };
    let transport = match tun.transport {
        SubtunnelTransport::Udp => "udp",
        SubtunnelTransport::Tcp => "tcp",
    };
    let upf = upf_setup(sc, e.tunnel).is_some();
    // A UE behind the UPF in eBPF: datagrams in clear, its uplink round robin (module docs).
    let (protection, scheduler) = match upf {
        true => ("seal = \"none\"".to_string(), "rr"),
        false => (format!("key_file = \"{key_file}\""), tun.scheduler),
    };
    let mut t = format!(
        "# Written by mpsched for tunnel `{}` ({}) of scenario `{}`.\nrole = \"{role}\"\n{protection}\n\
         scheduler = \"{scheduler}\"\nmetrics = \"{METRICS_ADDR}\"\ntransport = \"{transport}\"\n",
        tun.name,
        ["entry", "exit"][e.side],
        sc.name,
    );
    let params: Vec<(&str, u64)> = tun.scheduler_params.iter().collect();
    if !params.is_empty() && !upf {
        t += "[scheduler_params]\n";
        for (k, v) in params {
            t += &format!("{k} = {v}\n");
        }
    }
    t += &format!(
        "[device]\nname = \"mpt{}\"\naddress = \"{dev_addr}\"\nmtu = \"{INNER_MTU}B\"\nroutes = [{}]\n",
        e.tunnel,
        routes.join(", ")
    );
    // The tunnel's reordering buffer (none by default: the simulator's tunnel and the AFMT
    // paper's deliver as packets arrive).
    t += &format!(
        "[timing]\nreorder_capacity = {}\nreorder_timeout = \"{}ns\"\n",
        tun.reorder_capacity,
        tun.reorder_timeout_ps / 1000
    );
    if upf {
        // The UPF's schedulers count on an acknowledgement per datagram, as the simulator's.
        t += "ack_every = 1\n";
    }
    if tun.transport == SubtunnelTransport::Tcp {
        t += &format!(
            "[tcp]\ncongestion = \"{}\"\nsend_buffer = \"{}B\"\nreceive_buffer = \"{}B\"\nnodelay = {}\n",
            tun.tcp.cc.linux_name(),
            tun.send_buffer_bytes,
            tun.tcp.receive_window_bytes,
            tun.tcp.nodelay
        );
    }
    for (j, &port) in e.ports.iter().enumerate() {
        let (here, there) = e.addrs(j);
        t += &format!(
            "[[path]]\nname = \"{}\"\nlocal = \"{}:{TUNNEL_PORT}\"\ninterface = \"e{port}\"\n",
            sc.paths[tun.subtunnels[j]].name,
            ip(here),
        );
        // A UE learns the UPF's address from its datagrams.
        if !upf {
            t += &format!("remote = \"{}:{TUNNEL_PORT}\"\n", ip(there));
        }
    }
    t
}

impl Build<'_> {
    /// Each tunnel end: kernel forwarding, routes and neighbours to every host (those behind
    /// the far end through the daemon's device), the subtunnel addresses, and the daemon;
    /// then wait until every subtunnel is up at both ends.
    pub(super) fn tunnel_ends(&self, live: &mut Live) -> Result<(), NetnsError> {
        let ends = ends(self.sc, self.w).map_err(NetnsError::Unsupported)?;
        if ends.is_empty() {
            return Ok(());
        }
        let key: String = {
            let mut k = [0u8; 32];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut k))
                .map_err(|e| NetnsError::Missing(format!("/dev/urandom for the tunnel's key: {e}")))?;
            k.iter().map(|b| format!("{b:02x}")).collect()
        };
        for e in &ends {
            self.route_end(&live.nss[e.node], e)?;
            let name = self.ns_name(e.node);
            let dir = std::env::temp_dir();
            let key_file = dir.join(format!("{name}.tunnel.key"));
            let cfg_file = dir.join(format!("{name}.tunnel.toml"));
            let err_file = dir.join(format!("{name}.tunnel.err"));
            if upf_setup(self.sc, e.tunnel).is_none() {
                write_private(&key_file, &key)?;
                live.files.push(key_file.clone());
            }
            write_private(&cfg_file, &daemon_config(self.sc, e, &key_file.to_string_lossy()))?;
            live.files.extend([cfg_file.clone(), err_file.clone()]);
            let child = Command::new("ip")
                .args(["netns", "exec", &name])
                .arg(super::trafficgen_exe()?)
                .arg("tunnel")
                .arg(&cfg_file)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&err_file).map_err(|e| NetnsError::Traffic(e.to_string()))?)
                .spawn()
                .map_err(|e| NetnsError::Traffic(format!("cannot start the tunnel daemon: {e}")))?;
            live.daemons.push(child);
            live.tunnel_ends.push((e.clone(), err_file));
            self.check_stop()?;
        }
        self.wait_until_up(live)?;
        for (e, _) in live
            .tunnel_ends
            .iter()
            .filter(|(e, _)| self.sc.nodes[e.node].kind == NodeKind::Host)
        {
            self.route_host_end_into_the_tunnel(&live.nss[e.node], e)?;
        }
        Ok(())
    }

    /// At a host end, once the device exists: the far addresses through it, ahead of the
    /// per-interface source rules a host with several links has (`hosts::configure`).
    fn route_host_end_into_the_tunnel(&self, n: &Netns, e: &End) -> Result<(), NetnsError> {
        let dev = format!("mpt{}", e.tunnel);
        for &a in &e.far_addrs {
            let dst = format!("{}/32", ip(a));
            n.ip(&["route", "replace", &dst, "dev", &dev])?;
            n.ip(&["rule", "add", "to", &dst, "lookup", "main", "pref", "100"])?;
        }
        Ok(())
    }

    /// Kernel forwarding at end `e`: routes and static neighbours to every host not behind
    /// the far end and to the far end's subtunnel addresses, the subtunnel addresses here.
    fn route_end(&self, n: &Netns, e: &End) -> Result<(), NetnsError> {
        let (sc, w) = (self.sc, self.w);
        for key in ["all", "default"] {
            n.sysctl(&format!("net.ipv4.conf.{key}.rp_filter"), "0")?;
        }
        let host = sc.nodes[e.node].kind == NodeKind::Host;
        let own_tcp = sc
            .flows
            .iter()
            .any(|f| f.tcp.is_some() && (f.src == e.node || f.dst == e.node));
        if !own_tcp {
            // A host with TCP flows keeps the settings they need (`setup::tcp_sysctls`).
            super::setup::tunnel_tcp_sysctls(n)?;
        }
        self.route_subtunnels(n, e)?;
        if host {
            // A host forwards nothing; its routes to other hosts are `hosts::configure`'s.
            return Ok(());
        }
        n.sysctl("net.ipv4.ip_forward", "1")?;
        for h in (0..sc.nodes.len()).filter(|&h| sc.nodes[h].kind == NodeKind::Host) {
            let Some(port) = w.routes.port(e.node, h) else { continue };
            for a in host_addrs(sc, w, h).into_iter().filter(|a| !e.far_addrs.contains(a)) {
                n.ip(&["route", "replace", &format!("{}/32", ip(a)), "dev", &format!("e{port}")])?;
                self.static_neighbour(n, e.node, a, port)?;
            }
        }
        Ok(())
    }

    /// The subtunnels' addresses at end `e`, and routes and neighbours to the far end's.
    fn route_subtunnels(&self, n: &Netns, e: &End) -> Result<(), NetnsError> {
        let tun = &self.sc.tunnels[e.tunnel];
        let rto_min = format!("{}ms", (tun.tcp.min_rto_ns / 1_000_000).max(1));
        let upf = upf_setup(self.sc, e.tunnel)
            .is_some()
            .then(|| self.sc.nodes[tun.entry].ip);
        for (j, &port) in e.ports.iter().enumerate() {
            let (here, there) = e.addrs(j);
            let dev = format!("e{port}");
            n.ip(&["addr", "add", &format!("{}/32", ip(here)), "dev", &dev])?;
            if let Some(upf_ip) = upf {
                // The UPF's one address on every path: a route per path's device (the daemon's
                // sockets are bound to them), told apart by their metrics.
                let (dst, metric) = (format!("{}/32", ip(upf_ip)), (j + 1).to_string());
                n.ip(&["route", "replace", &dst, "dev", &dev, "metric", &metric])?;
                self.static_neighbour(n, e.node, upf_ip, port)?;
                continue;
            }
            let dst = format!("{}/32", ip(there));
            let mut route = vec!["route", "replace", &dst, "dev", &dev];
            if tun.transport == SubtunnelTransport::Tcp {
                route.extend(["rto_min", &rto_min]);
            }
            n.ip(&route)?;
            self.static_neighbour(n, e.node, there, port)?;
        }
        Ok(())
    }

    /// A permanent neighbour entry: `addr` is reached through the peer of `node`'s `port`.
    fn static_neighbour(&self, n: &Netns, node: usize, addr: Ipv4, port: PortId) -> Result<(), NetnsError> {
        let peer = &self.w.ports[node][usize::from(port)];
        let mac = mac_string(mac_of(peer.peer, peer.peer_port));
        let dev = format!("e{port}");
        n.ip(&[
            "neigh",
            "replace",
            &ip(addr),
            "lladdr",
            &mac,
            "dev",
            &dev,
            "nud",
            "permanent",
        ])?;
        Ok(())
    }

    /// Wait until each daemon answers and sees every subtunnel's RTT.
    fn wait_until_up(&self, live: &Live) -> Result<(), NetnsError> {
        let deadline = Instant::now() + UP_TIMEOUT;
        for (e, err_file) in &live.tunnel_ends {
            let paths = self.sc.tunnels[e.tunnel].subtunnels.len();
            // A UE hears from the UPF only once its traffic starts: it need only answer.
            let ue = upf_setup(self.sc, e.tunnel).is_some();
            loop {
                let up = match scrape(&live.nss[e.node]) {
                    Some(_) if ue => true,
                    Some(m) => every_path_measured(&m, paths),
                    None => false,
                };
                if up {
                    break;
                }
                self.check_stop()?;
                if Instant::now() > deadline {
                    let log = std::fs::read_to_string(err_file).unwrap_or_default();
                    return Err(NetnsError::Traffic(format!(
                        "tunnel `{}`: the daemon at `{}` did not see every subtunnel up within {} s:\n{}",
                        self.sc.tunnels[e.tunnel].name,
                        self.sc.nodes[e.node].name,
                        UP_TIMEOUT.as_secs(),
                        log.trim_end()
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    }
}

/// Whether a daemon's counters show an RTT on each of its `paths` paths.
fn every_path_measured(m: &BTreeMap<String, f64>, paths: usize) -> bool {
    let srtts: Vec<f64> = m
        .iter()
        .filter(|(k, _)| {
            k.split_once('{')
                .is_some_and(|(name, _)| name == "mpsched_tunnel_path_srtt_seconds")
        })
        .map(|(_, &v)| v)
        .collect();
    srtts.len() == paths && srtts.iter().all(|&v| v > 0.0)
}

/// Write `text` to a file only its owner can read (the key, and the configuration naming it).
fn write_private(path: &PathBuf, text: &str) -> Result<(), NetnsError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| NetnsError::Traffic(format!("{}: {e}", path.display())))
}

/// A daemon's counters (its metrics port, inside its namespace).
fn scrape(n: &Netns) -> Option<BTreeMap<String, f64>> {
    tunnel_counters(n, METRICS_ADDR)
}

/// The counters of the `mpsched tunnel` daemon serving metrics on `addr` inside namespace `n`,
/// by sample name (`mpsched_tunnel_path_up{path="wifi"}`); None while it does not answer.
pub fn tunnel_counters(n: &Netns, addr: &str) -> Option<BTreeMap<String, f64>> {
    let text = n
        .enter(|| -> Option<String> {
            let addr = addr.parse().ok()?;
            let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").ok()?;
            let mut r = String::new();
            s.read_to_string(&mut r).ok()?;
            Some(r)
        })
        .ok()??;
    let body = text.split_once("\r\n\r\n")?.1;
    Some(
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (k, v) = l.rsplit_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .collect(),
    )
}

/// The tunnels' figures from their daemons' counters: per direction, what the entry read from
/// its device and sent on each subtunnel, what the exit wrote to its device and how much of
/// it arrived reordered, and what a full TCP send buffer dropped.
pub(super) fn figures(b: &Build<'_>, live: &Live) -> Vec<TunnelFigures> {
    let counters: Vec<(&End, BTreeMap<String, f64>)> = live
        .tunnel_ends
        .iter()
        .map(|(e, _)| (e, scrape(&live.nss[e.node]).unwrap_or_default()))
        .collect();
    let mut out = Vec::new();
    for (t, tun) in b.sc.tunnels.iter().enumerate() {
        if upf_setup(b.sc, t).is_some() {
            if let Some(f) = upf_figures(b, live, &counters, t) {
                out.push(f);
            }
            continue;
        }
        let at = |side: usize| {
            counters
                .iter()
                .find(|(e, _)| e.tunnel == t && e.side == side)
                .map(|(_, m)| m)
        };
        let (Some(down), Some(up)) = (at(0), at(1)) else {
            continue;
        };
        for (dir, entry, exit) in [("down", down, up), ("up", up, down)] {
            let get = |m: &BTreeMap<String, f64>, k: &str| m.get(k).copied().unwrap_or(0.0) as u64;
            let per_path = |what: &str| -> BTreeMap<String, u64> {
                tun.subtunnels
                    .iter()
                    .map(|&p| {
                        let name = &b.sc.paths[p].name;
                        (
                            name.clone(),
                            get(entry, &format!("mpsched_tunnel_path_{what}{{path=\"{name}\"}}")),
                        )
                    })
                    .collect()
            };
            let forwarded = get(exit, "mpsched_tunnel_tun_tx_packets_total");
            let reordered = get(exit, "mpsched_tunnel_arrived_reordered_total");
            out.push(TunnelFigures {
                id: format!("{}.{dir}", tun.name),
                scheduler: tun.scheduler.to_string(),
                transport: match tun.transport {
                    SubtunnelTransport::Udp => "udp".into(),
                    SubtunnelTransport::Tcp => "tcp".into(),
                },
                scheduled_pkts: per_path("tx_packets_total").values().sum(),
                forwarded_pkts: forwarded,
                reordered_pkts: reordered,
                reordered_pct: round(100.0 * reordered as f64 / forwarded.max(1) as f64, 2),
                send_buffer_drops: per_path("tcp_send_buffer_drops_total").values().sum(),
                per_subtunnel_pkts: per_path("tx_packets_total"),
                subtunnels: Vec::new(),
                per_subtunnel: BTreeMap::new(),
                reorder_buffer: None,
                scheduler_counters: scheduler_counters(entry),
            });
        }
    }
    out
}

/// The `mpsched_tunnel_scheduler_counter{name="..."}` samples of a daemon's metrics, by name.
fn scheduler_counters(m: &BTreeMap<String, f64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter_map(|(k, &v)| {
            let name = k
                .strip_prefix("mpsched_tunnel_scheduler_counter{name=\"")?
                .strip_suffix("\"}")?;
            Some((name.to_string(), v as u64))
        })
        .collect()
}

/// An ATSSS tunnel's downlink figures: what the UPF sent on each path (its registers: the
/// UE's row is the tunnel's rank among the UPF's tunnels) and what the UE's daemon wrote to
/// its device and saw reordered. Its uplink is not counted per UE by the UPF, so it has none.
fn upf_figures(
    b: &Build<'_>,
    live: &Live,
    counters: &[(&End, BTreeMap<String, f64>)],
    t: usize,
) -> Option<TunnelFigures> {
    let (sc, tun) = (b.sc, &b.sc.tunnels[t]);
    let row = (0..t)
        .filter(|&x| sc.tunnels[x].entry == tun.entry && upf_setup(sc, x).is_some())
        .count();
    let upf = live
        .dataplanes
        .iter()
        .find(|(node, _)| *node == tun.entry)
        .and_then(|(_, dp)| dp.snapshot())
        .unwrap_or_default();
    let (_, exit) = counters.iter().find(|(e, _)| e.tunnel == t && e.side == 1)?;
    let get = |k: &str| exit.get(k).copied().unwrap_or(0.0) as u64;
    let per_subtunnel_pkts: BTreeMap<String, u64> = tun
        .subtunnels
        .iter()
        .enumerate()
        .map(|(j, &p)| {
            let sent = upf
                .get(&format!("atsss.ue{row}.path{j}.seq_sent"))
                .copied()
                .unwrap_or(0);
            (sc.paths[p].name.clone(), sent)
        })
        .collect();
    let forwarded = get("mpsched_tunnel_tun_tx_packets_total");
    let reordered = get("mpsched_tunnel_arrived_reordered_total");
    Some(TunnelFigures {
        id: format!("{}.down", tun.name),
        scheduler: tun.scheduler.to_string(),
        transport: "udp".into(),
        scheduled_pkts: per_subtunnel_pkts.values().sum(),
        forwarded_pkts: forwarded,
        reordered_pkts: reordered,
        reordered_pct: round(100.0 * reordered as f64 / forwarded.max(1) as f64, 2),
        send_buffer_drops: 0,
        per_subtunnel_pkts,
        subtunnels: Vec::new(),
        per_subtunnel: BTreeMap::new(),
        reorder_buffer: None,
        scheduler_counters: BTreeMap::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn afmt(variant: &str) -> Scenario {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/afmt");
        let text = std::fs::read_to_string(dir.join("three-subtunnels.toml")).unwrap();
        Scenario::from_toml(&text, "three-subtunnels.toml")
            .unwrap()
            .with_variant(variant)
            .unwrap()
    }

    /// The entry routes the clients into the tunnel and the exit the server; each sends on a
    /// subtunnel to the other's address of it, from the port where the subtunnel's path starts.
    #[test]
    fn each_end_routes_the_far_hosts_into_the_tunnel_and_names_both_addresses_of_each_subtunnel() {
        let sc = afmt("AFMT");
        let w = sc.wiring().unwrap();
        let ends = ends(&sc, &w).unwrap();
        assert_eq!(ends.len(), 2);
        let addrs = |names: &[&str]| -> Vec<Ipv4> {
            let mut v: Vec<Ipv4> = names
                .iter()
                .flat_map(|n| host_addrs(&sc, &w, sc.node_index(n).unwrap()))
                .collect();
            v.sort_unstable();
            v
        };
        let mut far0 = ends[0].far_addrs.clone();
        far0.sort_unstable();
        assert_eq!(far0, addrs(&["c0", "c1", "c2"]), "behind the exit: the clients");
        assert_eq!(ends[1].far_addrs, addrs(&["s"]), "behind the entry: the server");
        for j in 0..3 {
            let (a_here, a_there) = ends[0].addrs(j);
            let (b_here, b_there) = ends[1].addrs(j);
            assert_eq!((a_here, a_there), (b_there, b_here));
        }
        let cfg = daemon_config(&sc, &ends[0], "/k");
        assert!(
            cfg.contains("transport = \"tcp\"") && cfg.contains("congestion = \"reno\""),
            "{cfg}"
        );
        assert!(cfg.contains("reorder_capacity = 0"), "{cfg}");
        assert!(cfg.contains("name = \"up16\""), "{cfg}");
        assert_eq!(subtunnel_links(&sc, &w).len(), 9, "three links on each of three paths");
    }

    #[test]
    fn what_the_kernel_cannot_run_is_refused_with_the_node() {
        let mut sc = afmt("RR");
        sc.tunnels.push(sc.tunnels[0].clone());
        let w = sc.wiring().unwrap();
        let e = ends(&sc, &w).unwrap_err();
        assert!(e.contains("ends two tunnels"), "{e}");
    }

    fn one_ue(variant: &str) -> Scenario {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atsss");
        let text = std::fs::read_to_string(dir.join("one-ue.toml")).unwrap();
        Scenario::from_toml(&text, "one-ue.toml")
            .unwrap()
            .with_variant(variant)
            .unwrap()
    }

    /// An ATSSS tunnel makes its entry a UPF (no daemon, a UE table row) and its exit a daemon
    /// in clear that learns the UPF's address; the UE's row names the address its flows use,
    /// its paths the subtunnels' addresses at the UE, by the UPF's ports towards them.
    #[test]
    fn an_atsss_tunnel_is_a_upf_row_and_a_ue_daemon_in_clear() {
        let sc = one_ue("WRR");
        let w = sc.wiring().unwrap();
        let (upf, ue) = (sc.node_index("upf").unwrap(), sc.node_index("ue").unwrap());
        assert!(is_upf(&sc, upf) && !is_end(&sc, upf) && is_end(&sc, ue));
        let ue_ends = ends(&sc, &w).unwrap();
        assert_eq!(ue_ends.len(), 1, "the UE's daemon only");
        let (table, params) = upf_table(&sc, &w, upf).unwrap();
        assert_eq!(table.ues.len(), 1);
        let row = &table.ues[0];
        let video = &sc.flows[0];
        assert_eq!(
            row.ip,
            sc.flow_addresses(&w, video).1,
            "the address the stream is sent to"
        );
        assert_eq!((row.kind.name(), row.weight), ("wrr", 191));
        assert_eq!(row.paths.len(), 2);
        for (j, p) in row.paths.iter().enumerate() {
            assert_eq!(p.addr, ue_ends[0].addrs(j).0);
            let next = sc.paths[sc.tunnels[0].subtunnels[j]].nodes[1];
            assert_eq!(w.ports[upf][usize::from(p.egress_port)].peer, next);
        }
        assert_eq!(params.get("mtu"), u64::from(SUBTUNNEL_MTU));
        let cfg = daemon_config(&sc, &ue_ends[0], "/k");
        assert!(cfg.contains("seal = \"none\"") && !cfg.contains("key_file"), "{cfg}");
        assert!(cfg.contains("ack_every = 1") && !cfg.contains("remote ="), "{cfg}");
        // A UPF that also ends a daemon's tunnel is refused by name.
        let mut two = one_ue("CMon");
        let mut back = two.tunnels[0].clone();
        back.scheduler = "rr";
        back.name = "back".into();
        two.tunnels.push(back);
        let e = ends(&two, &two.wiring().unwrap()).unwrap_err();
        assert!(e.contains("is a UPF and ends tunnel `back`"), "{e}");
    }
}
