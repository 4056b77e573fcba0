//! Building a run's network: a namespace per node, a veth pair per link shaped by htb (with
//! netem or a pfifo as its leaf), the hosts' addresses and routes, and the switches' data planes.

use super::{mac_of, mac_string, Build, Live, NetnsError};
use crate::dataplane::{FarEnd, NodeTables, PortBinding, PortQueues};
use crate::hosts;
use crate::ns::{self, Netns};
use crate::switchplane::QueuesServedBy;
use mpsched_core::frame::MarkerConfig;
use mpsched_core::packet::PortId;
use mpsched_scenario::{NodeKind, Scenario, TcpFlow};

impl Build<'_> {
    /// A namespace per node: no IPv6, no kernel forwarding on switches, hosts' TCP settings.
    pub(super) fn namespaces(&self, live: &mut Live) -> Result<(), NetnsError> {
        let (b, sc) = (self, self.sc);

        for i in 0..sc.nodes.len() {
            let n = Netns::create(&b.ns_name(i))?;
            n.sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
            n.sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
            // Switches forward only through their program (a tunnel's end turns the kernel's
            // forwarding on: it runs the daemon, not a program).
            n.sysctl("net.ipv4.ip_forward", "0")?;
            if sc.nodes[i].kind == NodeKind::Host {
                tcp_sysctls(&n, sc, i)?;
            }
            live.nss.push(n);
            b.check_stop()?;
        }
        Ok(())
    }

    /// Links: veth pairs made inside both namespaces, shaped in each direction.
    pub(super) fn links(&self, live: &Live) -> Result<(), NetnsError> {
        let (b, sc, w) = (self, self.sc, self.w);
        let tunnel_links = super::tunnels::subtunnel_links(sc, w);

        for (li, l) in sc.links.iter().enumerate() {
            let pa = w.ports[l.a].iter().position(|e| e.link == li).unwrap() as PortId;
            let pb = w.ports[l.b].iter().position(|e| e.link == li).unwrap() as PortId;
            let (ea, eb) = (format!("e{pa}"), format!("e{pb}"));
            ns::ip(&[
                "link",
                "add",
                &ea,
                "netns",
                &b.ns_name(l.a),
                "type",
                "veth",
                "peer",
                "name",
                &eb,
                "netns",
                &b.ns_name(l.b),
            ])?;
            let mtu = tunnel_links.contains(&li).then(|| super::SUBTUNNEL_MTU.to_string());
            for (node, port, ifname) in [(l.a, pa, &ea), (l.b, pb, &eb)] {
                let n = &live.nss[node];
                n.ip(&["link", "set", ifname, "address", &mac_string(mac_of(node, port))])?;
                if let Some(mtu) = &mtu {
                    // Room for the tunnel's headers on a full-size inner packet.
                    n.ip(&["link", "set", ifname, "mtu", mtu])?;
                }
                n.ip(&["link", "set", ifname, "up"])?;
                // Offloads would let TCP hand htb 64 KB super-packets.
                n.frames_as_on_the_wire(ifname, b.opts.planes().needs_checksummed_frames());
                let delay_ps = if b.have_netem { l.delay_ps } else { 0 };
                // Whatever can arrive at the node may leave through this interface.
                let in_rate_bps: u64 = w.ports[node].iter().map(|e| sc.links[e.link].rate_bps).sum();
                let queue_pkts = l.queue_pkts_at(sc.nodes[node].kind == NodeKind::Host);
                let limit = netem_limit_pkts(queue_pkts, in_rate_bps, delay_ps, b.ref_frame);
                if b.switch_serves_queues(node, l) {
                    // The switch queues (BMv2's priority queues); the link's shaper holds it
                    // back and must not drop what it lets through.
                    shape(
                        n,
                        ifname,
                        l.rate_bps,
                        limit.max(OWN_QUEUES_SHAPER_PKTS),
                        delay_ps,
                        b.have_netem,
                    )?;
                } else if l.queues > 1 {
                    let layout = super::queues::Layout::of(&l.discipline, usize::from(l.queues), b.strict)
                        .map_err(NetnsError::Unsupported)?;
                    let leaf = leaf_qdisc(l.rate_bps, limit, delay_ps, b.have_netem);
                    super::queues::shape_queues(n, ifname, l.rate_bps, &layout, &leaf)?;
                } else {
                    shape(n, ifname, l.rate_bps, limit, delay_ps, b.have_netem)?;
                }
            }
            b.check_stop()?;
        }
        Ok(())
    }

    /// Hosts: addresses, routes, neighbours and MPTCP path managers ([`crate::hosts`]).
    pub(super) fn hosts(&self, live: &Live) -> Result<(), NetnsError> {
        for (i, node) in self.sc.nodes.iter().enumerate() {
            if node.kind == NodeKind::Host && !self.w.ports[i].is_empty() {
                hosts::configure(&live.nss[i], self.sc, self.w, i)?;
                hosts::configure_mptcp(&live.nss[i], self.sc, self.w, i)?;
                let ifnames: Vec<String> = (0..self.w.ports[i].len()).map(|p| format!("e{p}")).collect();
                crate::hostclass::attach(&live.nss[i], &ifnames, &self.iperf3_classes(i))?;
            }
        }
        Ok(())
    }

    /// Switches: each node's program ([`crate::programs`]) on every interface, the marker on
    /// marking ones.
    pub(super) fn switches(&self, live: &mut Live) -> Result<(), NetnsError> {
        let (b, sc, w) = (self, self.sc, self.w);

        for (i, cfg) in w.switches.iter().enumerate() {
            let Some(cfg) = cfg else {
                continue;
            };
            if super::tunnels::is_end(sc, i) {
                continue;
            }
            let n = &live.nss[i];
            let mut ports = Vec::new();
            for (p, e) in w.ports[i].iter().enumerate() {
                ports.push(PortBinding {
                    ifindex: n.ifindex(&format!("e{p}"))?,
                    own_mac: mac_of(i, p as PortId),
                    peer_mac: mac_of(e.peer, e.peer_port),
                });
            }
            let markers: Vec<MarkerConfig> = cfg
                .ecn_markers
                .iter()
                .map(|&(port, th)| {
                    let link = &sc.links[w.ports[i][usize::from(port)].link];
                    MarkerConfig {
                        port,
                        rate_bps: link.rate_bps,
                        threshold_bytes: u64::from(th) * b.ref_frame,
                        limit_bytes: (u64::from(link.queue_pkts) + 1) * b.ref_frame,
                    }
                })
                .collect();
            let mut cfg = cfg.clone();
            let upf = super::tunnels::is_upf(sc, i);
            let (program, params) = match sc.program_of(i) {
                _ if upf => {
                    let (table, params) = super::tunnels::upf_table(sc, w, i).map_err(NetnsError::Unsupported)?;
                    cfg.upf = table;
                    ("atsss", params)
                }
                Some((p, params)) => (p.name(), params.clone()),
                None => {
                    let p = mpsched_programs::switch_program(mpsched_programs::DEFAULT_PROGRAM)
                        .expect("the default program is registered");
                    (p.name(), mpsched_programs::Params::defaults(p.params()))
                }
            };
            let port_queues = w.ports[i]
                .iter()
                .map(|e| {
                    let l = &sc.links[e.link];
                    match b.switch_serves_queues(i, l) {
                        true => PortQueues {
                            queues: l.queues,
                            queue_pkts: l.queue_pkts,
                        },
                        false => PortQueues {
                            queues: 1,
                            queue_pkts: l.queue_pkts,
                        },
                    }
                })
                .collect();
            let (port_classes, far_ends) = b.port_classes_and_far_ends(live, i)?;
            let tables = NodeTables {
                switch: cfg,
                ports: ports.clone(),
                markers: markers.clone(),
                test_draws: Vec::new(),
                test_clock: false,
                program,
                params,
                port_queues,
                port_classes,
                far_ends,
            };
            let dp = b.opts.planes().start(n, &tables)?;
            live.dataplanes.push((i, dp));
            if upf {
                for e in &w.ports[i] {
                    crate::programs::atsss::prepare_upf_peer(&live.nss[e.peer], &format!("e{}", e.peer_port))?;
                }
            }
            b.check_stop()?;
        }
        // Once every switch has its programs on its own ports, those that watch departures
        // attach their stage at the far ends (ahead of the programs there).
        for (_, dp) in &mut live.dataplanes {
            dp.attach_departures()?;
        }
        Ok(())
    }
}

impl Build<'_> {
    /// The far end (the other host's address, the server port) and DSCP of every flow with a
    /// DSCP whose iperf3 client or server runs on host `i` ([`crate::hostclass`]).
    fn iperf3_classes(&self, i: usize) -> Vec<(crate::hostclass::FarFlow, u8)> {
        let mut out: Vec<(crate::hostclass::FarFlow, u8)> = self
            .sc
            .flows
            .iter()
            .filter(|f| (f.src == i || f.dst == i) && f.dscp != 0)
            .filter(|f| !super::is_transfer(f) && !super::paced::is_paced(f))
            .map(|f| {
                let (src, dst) = self.sc.flow_addresses(self.w, f);
                let other = if f.src == i { dst } else { src };
                let far = crate::hostclass::FarFlow {
                    addr_be: u32::from_ne_bytes(other.to_be_bytes()),
                    port: f.dst_port,
                    pad: 0,
                };
                (far, f.dscp)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Per port of switch `i`: the `skb->priority` of each queue where the kernel's qdiscs
    /// serve several ([`NodeTables::port_classes`]), and the interface at the link's other end
    /// ([`NodeTables::far_ends`]).
    fn port_classes_and_far_ends(&self, live: &Live, i: usize) -> Result<(Vec<Vec<u32>>, Vec<FarEnd>), NetnsError> {
        let mut classes = Vec::new();
        let mut far_ends = Vec::new();
        for e in &self.w.ports[i] {
            let l = &self.sc.links[e.link];
            let mut c = Vec::new();
            if l.queues > 1 && !self.switch_serves_queues(i, l) {
                let layout = super::queues::Layout::of(&l.discipline, usize::from(l.queues), self.strict)
                    .map_err(NetnsError::Unsupported)?;
                c = (0..layout.queues()).map(|q| layout.queue_priority(q)).collect();
            }
            classes.push(c);
            let far = &live.nss[e.peer];
            far_ends.push(FarEnd {
                netns: far.name().to_string(),
                ifname: format!("e{}", e.peer_port),
            });
        }
        Ok((classes, far_ends))
    }

    /// Whether `node`'s end of link `l` is a switch port whose several queues the switch serves
    /// itself ([`QueuesServedBy::Switch`]: BMv2's priority queues), not the kernel's qdiscs.
    pub(super) fn switch_serves_queues(&self, node: usize, l: &mpsched_scenario::Link) -> bool {
        l.queues > 1
            && self.w.switches[node].is_some()
            && self.opts.planes().port_queues(&l.discipline) == Ok(QueuesServedBy::Switch)
    }
}

/// The leaf limit (packets) of a link end whose queues the switch serves: its shaper must hold
/// the switch back, not drop. A user-space switch (BMv2) writes frames with a blocking packet
/// socket, which waits once the frames it has queued in the kernel fill its send buffer
/// (`net.core.wmem_default`, 212 992 bytes on Debian 12: about 80 frames of 1 514 bytes, 280
/// of the smallest); so the switch's own queues fill, and it drops, before this limit is met.
pub const OWN_QUEUES_SHAPER_PKTS: u32 = 1024;

/// Per-namespace TCP settings of a host, matched to what the simulator models: ECN negotiated
/// when a flow from this host asks for it, SACK off (the simulator's TCP recovers with NewReno
/// and no SACK; docs/algorithms/tcp.md), no metrics cached between connections.
pub(super) fn tcp_sysctls(n: &Netns, sc: &Scenario, host: usize) -> Result<(), NetnsError> {
    let tcp_flows: Vec<&TcpFlow> = sc
        .flows
        .iter()
        .filter(|f| f.src == host || f.dst == host)
        .filter_map(|f| f.tcp.as_ref())
        .collect();
    if tcp_flows.is_empty() {
        return Ok(());
    }
    let ecn = tcp_flows.iter().any(|t| t.config.ecn);
    tcp_settings(n, ecn)
}

/// A namespace's TCP settings, matched to the simulator's TCP (see [`tcp_sysctls`]).
fn tcp_settings(n: &Netns, ecn: bool) -> Result<(), NetnsError> {
    n.sysctl("net.ipv4.tcp_ecn", if ecn { "1" } else { "0" })?;
    n.sysctl("net.ipv4.tcp_sack", "0")?;
    n.sysctl("net.ipv4.tcp_no_metrics_save", "1")?;
    // Namespaces share one kernel, and a packet forwarded by the eBPF data plane (redirected at
    // TC ingress, never passing the switch's IP layer, which would orphan it) keeps its sending
    // socket's reference until the receiving host's IP layer. TCP small queues then count the
    // packets waiting in a remote bottleneck queue as the sender's own, and throttle a sender to
    // about 1 ms of its pacing rate there (limit = pacing_rate >> 10, capped by
    // tcp_limit_output_bytes), which a separate machine would not: a flow that starts into a
    // full queue stays throttled (measured: 2.9 against 45 Mbit/s). Without fq or BBR nothing
    // paces, so the pacing ratios only scale that limit; raise them and the cap to the maximum.
    n.sysctl("net.ipv4.tcp_pacing_ss_ratio", "1000")?;
    n.sysctl("net.ipv4.tcp_pacing_ca_ratio", "1000")?;
    n.sysctl("net.ipv4.tcp_limit_output_bytes", "268435456")?;
    Ok(())
}

/// TCP settings of a tunnel end's namespace, for its daemon's TCP subtunnels: as a host's
/// ([`tcp_sysctls`]) without ECN.
pub(super) fn tunnel_tcp_sysctls(n: &Netns) -> Result<(), NetnsError> {
    tcp_settings(n, false)
}

/// The limit of a link's leaf qdisc: the scenario's queue, plus room for the packets netem
/// holds while it delays them.
///
/// netem's `limit` counts every packet it holds, and as htb's leaf it holds a packet from its
/// arrival: through the delay first, then while it waits for htb's tokens. The simulator's queue
/// counts only packets waiting to be serialised; propagation has no bound. So the limit is the
/// queue plus what can arrive within one delay: `in_rate_bps` (every link into the node) for
/// that long, in frames of `frame_bytes` (the scenario's largest data frame). Smaller frames in
/// the delay line (ACKs) take some of the queue's room; documented in docs/architecture.md.
pub fn netem_limit_pkts(queue_pkts: u32, in_rate_bps: u64, delay_ps: u64, frame_bytes: u64) -> u32 {
    let queue = queue_pkts.max(1);
    if delay_ps == 0 {
        return queue;
    }
    let bits_in_delay = u128::from(in_rate_bps) * u128::from(delay_ps) / 1_000_000_000_000;
    let frames = bits_in_delay.div_ceil(8 * u128::from(frame_bytes.max(1)));
    u32::try_from(u128::from(queue) + frames).unwrap_or(u32::MAX)
}

/// What a run's `link_model` says, by whether the kernel has netem.
pub fn link_model(have_netem: bool) -> &'static str {
    if have_netem {
        "htb + netem rate: each frame takes its serialisation time at the link's rate, as in the simulator"
    } else {
        "htb + pfifo: no serialisation delay (this kernel has no netem); frames leave in token-bucket \
         bursts, so reordering across paths is not comparable with the simulator's"
    }
}

/// htb at `rate_bps` over a leaf of `queue_pkts` packets: netem where the kernel has it (with
/// `rate`, so that a frame is delayed by its serialisation time, which htb alone does not do, and
/// the propagation delay), otherwise a pfifo.
pub(super) fn shape(
    n: &Netns,
    ifname: &str,
    rate_bps: u64,
    queue_pkts: u32,
    delay_ps: u64,
    netem: bool,
) -> Result<(), NetnsError> {
    htb_root(n, ifname, rate_bps, "1")?;
    let mut args = vec!["qdisc", "add", "dev", ifname, "parent", "1:1", "handle", "10:"];
    let leaf = leaf_qdisc(rate_bps, queue_pkts, delay_ps, netem);
    args.extend(leaf.iter().map(String::as_str));
    n.exec("tc", &args)?;
    Ok(())
}

/// htb at the root of `ifname` with its one class `1:1` at `rate_bps`, unclassified packets to
/// class `1:<default_class>`.
pub(super) fn htb_root(n: &Netns, ifname: &str, rate_bps: u64, default_class: &str) -> Result<(), NetnsError> {
    let rate = format!("{rate_bps}bit");
    n.exec(
        "tc",
        &[
            "qdisc",
            "add",
            "dev",
            ifname,
            "root",
            "handle",
            "1:",
            "htb",
            "default",
            default_class,
        ],
    )
    .map_err(|e| NetnsError::Missing(format!("the htb qdisc is needed to shape links: {e}")))?;
    n.exec(
        "tc",
        &[
            "class", "add", "dev", ifname, "parent", "1:", "classid", "1:1", "htb", "rate", &rate, "ceil", &rate,
            "quantum", "1514",
        ],
    )?;
    Ok(())
}

/// The leaf qdisc of a link's htb class, as `tc` arguments after `handle 10:`.
pub(super) fn leaf_qdisc(rate_bps: u64, queue_pkts: u32, delay_ps: u64, netem: bool) -> Vec<String> {
    let limit = queue_pkts.max(1).to_string();
    if !netem {
        return vec!["pfifo".into(), "limit".into(), limit];
    }
    let mut a = vec!["netem".to_string()];
    if delay_ps > 0 {
        a.extend(["delay".into(), format!("{}us", (delay_ps / 1_000_000).max(1))]);
    }
    a.extend(["rate".into(), format!("{rate_bps}bit"), "limit".into(), limit]);
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hardening item 20: where the kernel has netem, every link's leaf is netem with the link's
    /// rate (serialisation delay) and its propagation delay; otherwise a pfifo, delay refused
    /// or ignored before this point.
    #[test]
    fn links_get_serialisation_delay_from_netem_where_the_kernel_has_it() {
        let args = |r, q, d, n| leaf_qdisc(r, q, d, n).join(" ");
        assert_eq!(args(3_000_000, 64, 0, false), "pfifo limit 64");
        assert_eq!(args(3_000_000, 64, 0, true), "netem rate 3000000bit limit 64");
        assert_eq!(
            args(6_000_000, 80, 2_000_000_000, true),
            "netem delay 2000us rate 6000000bit limit 80"
        );
        assert_eq!(args(1, 0, 0, false), "pfifo limit 1", "never a zero limit");
    }

    /// Defect 8: netem's limit counted the packets it was delaying, so once rate x delay
    /// exceeded the queue the kernel dropped what the simulator delivered.
    #[test]
    fn netem_limit_leaves_the_queue_its_room_beside_the_delay_line() {
        assert_eq!(netem_limit_pkts(64, 10_000_000, 0, 1512), 64, "no delay: the queue");
        // 100 Mbit/s for 20 ms is 250 000 bytes: 166 frames of 1512 bytes in the delay line.
        assert_eq!(netem_limit_pkts(64, 100_000_000, 20_000_000_000, 1512), 64 + 166);
        assert_eq!(netem_limit_pkts(0, 1, 1, 1), 1, "never a zero limit");
        assert_eq!(netem_limit_pkts(64, u64::MAX, u64::MAX, 1), u32::MAX, "saturates");
    }
}
