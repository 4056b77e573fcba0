//! Host namespaces: addresses, routes, neighbours, and the kernel's MPTCP path manager.
//!
//! A single-homed host gets its interface's address on `e0` and a default route through its
//! neighbour. A multi-homed host needs an address per interface (the preflight refuses one
//! without): each interface gets its address, a routing table and a rule that sends whatever
//! leaves from that address by that interface (each MPTCP subflow and each reply must leave by
//! the interface its source address names, or the switches would carry it back the wrong way),
//! and the main table reaches every other host by the port the simulator's routes use, from
//! that port's address. The node's own address, where no interface carries it, goes on `lo`.
//!
//! MPTCP on the kernel: upstream Linux's in-kernel path manager opens the first subflow from
//! the address the socket is bound to and one more per `subflow` endpoint, each from that
//! endpoint's address. The simulator puts subflow `k` of a connection on a multi-homed host's
//! interface `k mod n`; the kernel's equivalent is the first subflow bound to interface 0's
//! address and an endpoint on each of interfaces 1 to N - 1, which is what [`configure_mptcp`]
//! sets up. A host cannot give one subflow per source port on a single interface that way,
//! nor couple congestion control (upstream MPTCP runs the socket's TCP controller on every
//! subflow), nor speak version 0: [`check`] refuses those by flow name.

use crate::backend::NetnsError;
use crate::ns::Netns;
use mpsched_core::mptcp::MptcpVersion;
use mpsched_core::packet::{ipv4_to_string, Ipv4};
use mpsched_scenario::{Flow, MptcpScheduler, NodeKind, Protocol, Scenario};
use mpsched_topo::Wiring;

/// A multi-homed host's routing table for its interface `eP` is this plus P.
const TABLE_BASE: usize = 100;

/// What the kernel backend cannot do with the scenario's hosts and MPTCP flows, refused by name
/// before anything is made.
pub fn check(sc: &Scenario, w: &Wiring) -> Result<(), NetnsError> {
    for (i, n) in sc.nodes.iter().enumerate() {
        let ips = &w.interface_ips[i];
        if n.kind != NodeKind::Host || ips.len() < 2 {
            continue;
        }
        // An interface without an address of its own has the node's: at most one may.
        let shared = (0..ips.len()).find(|&p| ips[..p].contains(&ips[p]));
        if let Some(p) = shared {
            let l = w.ports[i][p].link;
            let end = if sc.links[l].a == i { "a" } else { "b" };
            return Err(NetnsError::Unsupported(format!(
                "host `{}` has {} links, and its interface {p} (link[{l}]) shares its address with another; on the \
                 kernel a multi-homed host needs one per interface (`link[{l}].{end}_ip`), so that what leaves from \
                 an address leaves by its interface; use --backend sim",
                n.name,
                ips.len()
            )));
        }
    }
    let mptcp: Vec<&Flow> = sc.flows.iter().filter(|f| f.protocol == Protocol::Mptcp).collect();
    for f in &mptcp {
        check_mptcp_flow(sc, w, f)?;
        let other = mptcp
            .iter()
            .find(|g| g.src == f.src && subflows_of(g) != subflows_of(f));
        if let Some(g) = other {
            return Err(NetnsError::Unsupported(format!(
                "MPTCP flows `{}` and `{}` leave `{}` with {} and {} subflows; on the kernel the host's path \
                 manager endpoints decide the subflows of all its connections, so they must agree; use --backend sim",
                f.name,
                g.name,
                sc.nodes[f.src].name,
                subflows_of(f),
                subflows_of(g)
            )));
        }
    }
    Ok(())
}

/// One MPTCP flow against what upstream Linux's MPTCP offers.
fn check_mptcp_flow(sc: &Scenario, w: &Wiring, f: &Flow) -> Result<(), NetnsError> {
    let Some(t) = &f.tcp else { return Ok(()) };
    let refuse = |why: String| {
        Err(NetnsError::Unsupported(format!(
            "MPTCP flow `{}`: {why}; use --backend sim",
            f.name
        )))
    };
    if t.config.cc.is_coupled() {
        return refuse(format!(
            "`{}` couples the subflows' windows, and upstream Linux's MPTCP couples nothing (each subflow runs the \
             socket's TCP controller): on the kernel run it uncoupled (`reno` or `cubic`)",
            t.config.cc.linux_name()
        ));
    }
    let Some(m) = &t.mptcp else { return Ok(()) };
    if m.version != MptcpVersion::V1 {
        return refuse("Linux speaks MPTCP version 1 (RFC 8684) only, not version 0".into());
    }
    if m.scheduler != MptcpScheduler::LowestRtt {
        return refuse("Linux's MPTCP has one packet scheduler (`default`, lowest RTT with room)".into());
    }
    let interfaces = if f.path.is_some() {
        1
    } else {
        w.interface_ips[f.src].len()
    };
    if usize::from(m.subflows) > interfaces {
        return refuse(format!(
            "{} subflows from `{}`, which sends by {interfaces} interface(s); the kernel's path manager opens one \
             subflow per interface address, not one per source port",
            m.subflows, sc.nodes[f.src].name
        ));
    }
    Ok(())
}

/// Subflows of an MPTCP flow (1 for any other).
fn subflows_of(f: &Flow) -> u8 {
    f.tcp.as_ref().and_then(|t| t.mptcp.as_ref()).map_or(1, |m| m.subflows)
}

/// The address flow `f`'s sender binds to: its interface's as the simulator gives it (an MPTCP
/// flow's first subflow: interface 0 of a multi-homed host). None on a single-homed host,
/// whose one address the kernel picks anyway.
pub fn bind_address(sc: &Scenario, w: &Wiring, f: &Flow) -> Option<Ipv4> {
    let ips = &w.interface_ips[f.src];
    if ips.len() < 2 {
        return None;
    }
    if f.protocol == Protocol::Mptcp && f.path.is_none() {
        return Some(ips[0]);
    }
    Some(sc.flow_addresses(w, f).0)
}

/// Addresses, routes and static neighbour entries of host `i` in its namespace `n`.
pub fn configure(n: &Netns, sc: &Scenario, w: &Wiring, i: usize) -> Result<(), NetnsError> {
    let gateway = |p: usize| ipv4_to_string(sc.nodes[w.ports[i][p].peer].ip);
    for (p, e) in w.ports[i].iter().enumerate() {
        let lladdr = crate::backend::mac_string(crate::backend::mac_of(e.peer, e.peer_port));
        let dev = format!("e{p}");
        n.ip(&[
            "neigh",
            "replace",
            &gateway(p),
            "lladdr",
            &lladdr,
            "dev",
            &dev,
            "nud",
            "permanent",
        ])?;
    }
    // The node's own address, where no interface carries it (the link gives each its own).
    if !w.interface_ips[i].contains(&sc.nodes[i].ip) {
        n.ip(&[
            "addr",
            "add",
            &format!("{}/32", ipv4_to_string(sc.nodes[i].ip)),
            "dev",
            "lo",
        ])?;
    }
    if w.ports[i].len() > 1 {
        source_routes(n, sc, w, i, &gateway)?;
    } else {
        let addr = ipv4_to_string(w.interface_ips[i][0]);
        n.ip(&["addr", "add", &format!("{addr}/32"), "dev", "e0"])?;
        n.ip(&["route", "add", &format!("{}/32", gateway(0)), "dev", "e0"])?;
    }
    let first = ipv4_to_string(w.interface_ips[i][0]);
    n.ip(&[
        "route",
        "add",
        "default",
        "via",
        &gateway(0),
        "dev",
        "e0",
        "src",
        &first,
    ])?;
    Ok(())
}

/// A multi-homed host's interfaces: each its address, a routing table and a rule sending what
/// leaves from that address by that interface; and main-table routes to every other host by
/// the port the simulator's routes use, from that port's address.
fn source_routes(
    n: &Netns,
    sc: &Scenario,
    w: &Wiring,
    i: usize,
    gateway: &dyn Fn(usize) -> String,
) -> Result<(), NetnsError> {
    for p in 0..w.ports[i].len() {
        let (dev, gw, table) = (format!("e{p}"), gateway(p), (TABLE_BASE + p).to_string());
        let addr = ipv4_to_string(w.interface_ips[i][p]);
        n.ip(&["addr", "add", &format!("{addr}/32"), "dev", &dev])?;
        // Two links to one neighbour share its address: one main-table route to it will do.
        n.ip(&["route", "replace", &format!("{gw}/32"), "dev", &dev])?;
        n.ip(&["route", "add", &format!("{gw}/32"), "dev", &dev, "table", &table])?;
        n.ip(&[
            "route", "add", "default", "via", &gw, "dev", &dev, "src", &addr, "table", &table,
        ])?;
        n.ip(&["rule", "add", "from", &addr, "table", &table])?;
    }
    for (d, other) in sc.nodes.iter().enumerate() {
        let port = w.routes.port(i, d).map(usize::from);
        let Some(p) = port.filter(|_| d != i && other.kind == NodeKind::Host) else {
            continue;
        };
        let (dev, gw, src) = (format!("e{p}"), gateway(p), ipv4_to_string(w.interface_ips[i][p]));
        let mut addrs = w.interface_ips[d].clone();
        addrs.push(other.ip);
        addrs.sort_unstable();
        addrs.dedup();
        for a in addrs {
            let dst = format!("{}/32", ipv4_to_string(a));
            n.ip(&["route", "add", &dst, "via", &gw, "dev", &dev, "src", &src])?;
        }
    }
    Ok(())
}

/// The MPTCP path manager of host `i`: limits that let every MPTCP connection it sends or
/// receives have its subflows, and a `subflow` endpoint on interfaces 1 to N - 1 of a host that
/// sends N. Nothing on a host without MPTCP flows.
pub fn configure_mptcp(n: &Netns, sc: &Scenario, w: &Wiring, i: usize) -> Result<(), NetnsError> {
    let flows: Vec<&Flow> = sc
        .flows
        .iter()
        .filter(|f| f.protocol == Protocol::Mptcp && (f.src == i || f.dst == i))
        .collect();
    let Some(most) = flows.iter().map(|f| subflows_of(f)).max() else {
        return Ok(());
    };
    let extra = (most - 1).to_string();
    n.ip(&["mptcp", "limits", "set", "subflows", &extra, "add_addr_accepted", "0"])?;
    let sent = flows
        .iter()
        .filter(|f| f.src == i && f.path.is_none())
        .map(|f| subflows_of(f))
        .max();
    for p in 1..usize::from(sent.unwrap_or(1)) {
        let addr = ipv4_to_string(w.interface_ips[i][p]);
        n.ip(&["mptcp", "endpoint", "add", &addr, "dev", &format!("e{p}"), "subflow"])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in two-paths scenario with `from` replaced by `to`.
    fn two_paths(from: &str, to: &str) -> Scenario {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/mptcp/two-paths.toml"
        ))
        .unwrap();
        Scenario::from_toml(&text.replacen(from, to, 1), "two-paths.toml").unwrap()
    }

    fn refusal(sc: &Scenario) -> String {
        let w = sc.wiring().unwrap();
        check(sc, &w).err().map(|e| e.to_string()).unwrap_or_default()
    }

    /// What upstream Linux's MPTCP cannot do is refused by flow name and reason; the built-in
    /// two paths with an uncoupled controller is not.
    #[test]
    fn what_kernel_mptcp_lacks_is_refused_by_name() {
        assert_eq!(refusal(&two_paths("", "")), "");
        let sub = "mptcp.subflows = 2";
        for (from, to, expect) in [
            ("tcp.cc = \"cubic\"", "tcp.cc = \"lia\"", "couples nothing"),
            (sub, "mptcp.subflows = 4", "4 subflows from `client`"),
            (sub, "mptcp.subflows = 2\nmptcp.version = 0", "version 1"),
            (
                sub,
                "mptcp.subflows = 2\nmptcp.scheduler = \"roundrobin\"",
                "one packet scheduler",
            ),
        ] {
            let err = refusal(&two_paths(from, to));
            assert!(err.contains("MPTCP flow `mp`") && err.contains(expect), "{to}: {err}");
        }
    }

    /// A multi-homed host with an interface that has no address of its own is refused, naming
    /// the link end that would give it one.
    #[test]
    fn a_multi_homed_host_needs_an_address_per_interface() {
        // One interface may have the node's address; two may not.
        assert_eq!(refusal(&two_paths("a_ip = \"10.2.0.2\"\n", "")), "");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/mptcp/two-paths.toml"
        ))
        .unwrap()
        .replace("a_ip = \"10.1.0.2\"\n", "")
        .replace("a_ip = \"10.2.0.2\"\n", "");
        let err = refusal(&Scenario::from_toml(&text, "x.toml").unwrap());
        assert!(err.contains("host `client`") && err.contains("link[1].a_ip"), "{err}");
    }

    /// The first subflow binds to interface 0's address, a TCP flow to its route's interface.
    #[test]
    fn senders_bind_to_the_address_the_simulator_gives_them() {
        let sc = two_paths("", "");
        let w = sc.wiring().unwrap();
        assert_eq!(
            bind_address(&sc, &w, &sc.flows[0]).map(ipv4_to_string).as_deref(),
            Some("10.1.0.2")
        );
        let back = Flow {
            src: sc.flows[0].dst,
            dst: sc.flows[0].src,
            ..sc.flows[0].clone()
        };
        assert_eq!(bind_address(&sc, &w, &back), None, "the server is single-homed");
    }
}
