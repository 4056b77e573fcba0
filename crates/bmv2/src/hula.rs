//! The control plane of HULA's and MP-HULA's P4 program (`crates/programs/src/hula/hula.p4`):
//! a node's routes, equal-cost groups, port MACs, probe configuration (`SwitchConfig::probe`)
//! and parameters ([`HulaConfig::from_params`]) into its tables and registers, one multicast
//! group per ingress port for probe replication and one for origination, the test clock, and
//! its registers back under the names of the README's "Counters and registers".
//!
//! BMv2 has no timer that sends packets: a ToR's probes are originated by a *trigger frame*
//! written into its port [`TIMER_PORT`] (a veth whose peer [`Prober`] writes into every probe
//! period, or the vector runner at a `hook: "timer"` step). The trigger is a probe frame
//! ([`trigger_frame`]); the ToR's ingress fills in its ToR id, zero util and hops, and
//! replicates it to its up ports by group [`ORIGIN_GROUP`].

use crate::cli::SwitchCli;
use crate::layout::{MAX_ECMP_GROUPS, MAX_PORTS, MAX_ROUTES};
use crate::Bmv2Error;
use mpsched_core::headers::{Header, HeaderStack, ProbeHeader};
use mpsched_core::packet::{Ipv4, PacketMeta, PortId};
use mpsched_core::probe::{PortDir, ProbeConfig, HULA_PROBE_PORT, PROBE_FRAME_BYTES};
use mpsched_core::table::ECMP_GROUP;
use mpsched_core::wire::{emit_udp_frame, insert_shims};
use mpsched_netns::dataplane::NodeTables;
use mpsched_programs::hula::{util_scale, HulaConfig, MAX_BEST_K, MAX_SUBFLOWS, NO_PORT, SWITCH_MTU};
use std::collections::BTreeMap;

const INGRESS: &str = "HulaIngress";
const EGRESS: &str = "HulaEgress";
/// Slots of the flowlet, association and connection registers (`HULA_SLOTS`): the parameters'
/// default; BMv2 holds a register cell in about 700 bytes, so 65 536 cost 1.5 GB a switch.
pub const TABLE_SLOTS: u64 = 4096;
/// Destination ToRs the best-hop registers hold (`HULA_MAX_TORS`).
pub const MAX_TORS: usize = 256;
/// The port trigger frames come in by (`HULA_TIMER_PORT`).
pub const TIMER_PORT: u16 = 65;
/// The multicast group of originated probes (`HULA_ORIGIN_GROUP`); the probes that came in by
/// port p are replicated by group p + 1.
pub const ORIGIN_GROUP: u16 = 100;
/// Index of the origination group's port mask in `mcast_mask` (`HULA_ORIGIN_MASK`).
const ORIGIN_MASK: usize = 16;
/// The register of the counters (indices as `HC_*` in hula.p4).
pub const COUNTERS_REGISTER: &str = "counters";
/// A vector runner's sign that a frame's ingress has run: it counts ingress runs.
pub const INGRESS_RUNS_REGISTER: &str = "ingress_runs";
/// Each port's queue count (`port_queues`, [`crate::queues`]).
pub const PORT_QUEUES_REGISTER: &str = "port_queues";

/// The counters in the data plane's order, as vectors name them (one list for every backend).
pub use mpsched_programs::hula::DATA_PLANE_COUNTERS as COUNTERS;

/// Port direction codes of the `port_dir` register (`DIR_*` in hula.p4).
fn dir_code(d: PortDir) -> u64 {
    match d {
        PortDir::Host => 0,
        PortDir::Down => 1,
        PortDir::Up => 2,
        PortDir::None => 3,
    }
}

/// The probe configuration of a node's tables, or why it has none.
fn probe_config(t: &NodeTables) -> Result<&ProbeConfig, Bmv2Error> {
    t.switch.probe.as_ref().ok_or_else(|| {
        Bmv2Error::Config(format!(
            "program `{}` needs the probe configuration the control plane computes for probe-driven programs",
            t.program
        ))
    })
}

/// The node's HULA parameters in the units of the data plane.
fn hula_config(t: &NodeTables) -> Result<HulaConfig, Bmv2Error> {
    HulaConfig::from_params(&t.params, t.program == "mphula").map_err(Bmv2Error::Config)
}

/// Check that `t` fits the program's tables and registers, before anything is started.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    let cfg = &t.switch;
    let probe = probe_config(t)?;
    let hc = hula_config(t)?;
    let over = |what: &str, n: usize, max: usize| {
        (n > max).then(|| Bmv2Error::Config(format!("{n} {what}; HULA's P4 program holds {max}")))
    };
    let checks = [
        over("ports", t.ports.len(), MAX_PORTS),
        over("routes", cfg.routes.len(), MAX_ROUTES),
        over("host prefixes (dest_tors)", probe.dest_tors.len(), MAX_ROUTES),
        over("ECMP groups", cfg.ecmp_groups.len(), MAX_ECMP_GROUPS),
        over("ToRs", usize::from(probe.n_tors), MAX_TORS),
        over("next hops per ToR (best_k)", hc.best_k, MAX_BEST_K),
        over("flowlet slots", hc.table_entries as usize, TABLE_SLOTS as usize),
        over("association slots", hc.assoc_entries as usize, TABLE_SLOTS as usize),
        over("connection slots", hc.conn_entries as usize, TABLE_SLOTS as usize),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(e);
    }
    for (what, n) in [
        ("table_entries", hc.table_entries),
        ("assoc_entries", hc.assoc_entries),
        ("conn_entries", hc.conn_entries),
    ] {
        if !n.is_power_of_two() {
            return Err(Bmv2Error::Config(format!("{what} {n} is not a power of two")));
        }
    }
    if probe.ports.len() != t.ports.len() {
        return Err(Bmv2Error::Config(format!(
            "the probe configuration has {} ports, the node {}",
            probe.ports.len(),
            t.ports.len()
        )));
    }
    if !t.markers.is_empty() || !cfg.splits.is_empty() || !cfg.confluences.is_empty() {
        return Err(Bmv2Error::Config(
            "HULA's P4 program has no markers, splits or confluence points".into(),
        ));
    }
    for (i, g) in cfg.ecmp_groups.iter().enumerate() {
        if g.is_empty() || g.len() > MAX_PORTS {
            return Err(Bmv2Error::Config(format!("ECMP group {i}: 1 to {MAX_PORTS} ports")));
        }
    }
    for (p, port) in probe.ports.iter().enumerate() {
        util_scale(port.rate_bps, hc.tau_us).map_err(|e| Bmv2Error::Config(format!("port {p}: {e}")))?;
    }
    Ok(())
}

/// A MAC address as the CLI takes a 48-bit action parameter.
fn mac(m: [u8; 6]) -> u64 {
    m.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b))
}

/// The ports a probe that came in by `p` is replicated to (README "Processing", step 5), in
/// port order: from a `down` port to every `up` port and every other `down` port; from an `up`
/// port to every `down` port; from others, none.
pub fn replication_ports(probe: &ProbeConfig, p: PortId) -> Vec<PortId> {
    let Some(from) = probe.ports.get(usize::from(p)) else {
        return Vec::new();
    };
    probe
        .ports
        .iter()
        .enumerate()
        .filter(|&(q, port)| match (from.dir, port.dir) {
            (PortDir::Down, PortDir::Up) => true,
            (PortDir::Down, PortDir::Down) => q != usize::from(p),
            (PortDir::Up, PortDir::Down) => true,
            _ => false,
        })
        .map(|(q, _)| q as PortId)
        .collect()
}

/// The up ports a ToR originates its probes on.
pub fn origination_ports(probe: &ProbeConfig) -> Vec<PortId> {
    if probe.tor_id.is_none() {
        return Vec::new();
    }
    probe
        .ports
        .iter()
        .enumerate()
        .filter(|(_, port)| port.dir == PortDir::Up)
        .map(|(q, _)| q as PortId)
        .collect()
}

/// Create multicast group `group` of `ports` (BMv2's pre: a node of the ports, associated).
fn multicast_group(cli: &mut SwitchCli, group: u16, ports: &[PortId]) -> Result<(), Bmv2Error> {
    cli.run(&format!("mc_mgrp_create {group}"))?;
    let list: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
    let out = cli.run(&format!("mc_node_create {group} {}", list.join(" ")))?;
    // "node was created with handle N"
    let handle = out
        .split("handle")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| Bmv2Error::Switch(format!("unexpected answer to mc_node_create: {out}")))?;
    cli.run(&format!("mc_node_associate {group} {handle}"))?;
    Ok(())
}

/// Fill every table, register and multicast group from `t` (checked with [`check`] first).
pub fn configure(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    let cfg = &t.switch;
    let probe = probe_config(t)?;
    let hc = hula_config(t)?;
    cli.run(&format!(
        "table_set_default {INGRESS}.node {INGRESS}.set_node {} {} {} {} {} {} {} {} {} {} {}",
        cfg.own_ip,
        cfg.hash_seed,
        hc.flowlet_gap_us,
        hc.table_entries - 1,
        probe.tor_id.unwrap_or(NO_PORT),
        probe.n_tors,
        u8::from(hc.mp),
        hc.best_k,
        hc.ageing_us,
        hc.assoc_entries - 1,
        hc.conn_entries - 1,
    ))?;
    for (p, b) in t.ports.iter().enumerate() {
        for (control, table) in [(INGRESS, "port_macs"), (EGRESS, "copy_macs")] {
            cli.run(&format!(
                "table_add {control}.{table} {control}.set_macs {p} => {} {}",
                mac(b.own_mac),
                mac(b.peer_mac)
            ))?;
        }
    }
    for r in &cfg.routes {
        let key = format!("{}/{}", r.prefix, r.len);
        if r.port & ECMP_GROUP != 0 {
            cli.run(&format!(
                "table_add {INGRESS}.routes {INGRESS}.route_ecmp {key} => {}",
                r.port & !ECMP_GROUP
            ))?;
        } else {
            cli.run(&format!(
                "table_add {INGRESS}.routes {INGRESS}.route_port {key} => {}",
                r.port
            ))?;
        }
    }
    for (g, ports) in cfg.ecmp_groups.iter().enumerate() {
        cli.run(&format!(
            "table_add {INGRESS}.ecmp_group {INGRESS}.set_group_size {g} => {}",
            ports.len()
        ))?;
        for (i, p) in ports.iter().enumerate() {
            cli.run(&format!(
                "table_add {INGRESS}.ecmp_member {INGRESS}.route_port {g} {i} => {p}"
            ))?;
        }
    }
    // An LPM table keeps one entry per prefix: the first of a duplicated prefix, as
    // ProbeConfig::dest_tor's longest match takes the first of equals.
    let mut seen = std::collections::BTreeSet::new();
    for d in &probe.dest_tors {
        let prefix = if d.len == 0 {
            0
        } else {
            d.prefix & (u32::MAX << (32 - u32::from(d.len.min(32))))
        };
        if seen.insert((prefix, d.len)) {
            cli.run(&format!(
                "table_add {INGRESS}.dest_tor {INGRESS}.set_dest_tor {prefix}/{} => {}",
                d.len, d.tor
            ))?;
        }
    }
    for (p, port) in probe.ports.iter().enumerate() {
        cli.register_write("port_dir", p, dir_code(port.dir))?;
        let scale = util_scale(port.rate_bps, hc.tau_us).map_err(Bmv2Error::Config)?;
        cli.register_write("util_scale", p, scale)?;
    }
    cli.register_write("tau_us", 0, hc.tau_us)?;
    cli.register_write("log2_tau", 0, u64::from(hc.log2_tau))?;
    // Replication groups: probes from port p by group p + 1; ingress counts each copy's port
    // from the group's mask.
    let mask = |ports: &[PortId]| ports.iter().fold(0u64, |m, p| m | 1 << p);
    for p in 0..t.ports.len() as PortId {
        let ports = replication_ports(probe, p);
        if !ports.is_empty() {
            multicast_group(cli, p + 1, &ports)?;
        }
        cli.register_write(&format!("{INGRESS}.mcast_mask"), usize::from(p), mask(&ports))?;
    }
    let up = origination_ports(probe);
    if !up.is_empty() {
        multicast_group(cli, ORIGIN_GROUP, &up)?;
    }
    cli.register_write(&format!("{INGRESS}.mcast_mask"), ORIGIN_MASK, mask(&up))?;
    // Vectors: the test clock, and the estimator on egress steps only (the Rust twin's egress
    // stage runs on those).
    let flags = if t.test_clock { 3 } else { 0 };
    cli.register_write("test_flags", 0, flags)?;
    Ok(())
}

/// Set the test clock (with [`NodeTables::test_clock`]): BMv2 counts microseconds.
pub fn set_clock(cli: &mut SwitchCli, now_ns: u64) -> Result<(), Bmv2Error> {
    cli.register_write("test_clock_us", 0, now_ns / 1000)
}

/// The trigger frame of a ToR whose address is `own_ip`: a probe frame (README "Wire format")
/// with ToR 0, which the ToR's ingress fills in. Its IPv4 checksum is right for `own_ip`, so
/// ingress leaves the IPv4 header alone.
pub fn trigger_frame(own_ip: Ipv4) -> Vec<u8> {
    let mut m = PacketMeta::udp(own_ip, 0xFFFF_FFFF, HULA_PROBE_PORT, HULA_PROBE_PORT, 0);
    m.ttl = 64;
    let mut out = Vec::new();
    emit_udp_frame(&m, [0; 6], [0; 6], 0, &[0u8; 10], &mut out);
    // UDP checksum 0, as the README's wire format says.
    if out.len() >= 14 + 28 {
        out[14 + 26] = 0;
        out[14 + 27] = 0;
    }
    let mut stack = HeaderStack::new();
    let _ = stack.push(Header::Probe(ProbeHeader::default()));
    insert_shims(&mut out, &stack);
    debug_assert_eq!(out.len(), PROBE_FRAME_BYTES as usize);
    out
}

/// The counters (`redirect_failed` only once it moved), the per-port packet counts and the
/// README's registers (the association's at MP-HULA's ToRs, the connection table's at every
/// MP-HULA switch), as the Rust twin's `vector_registers` lists them.
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = BTreeMap::new();
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in COUNTERS.iter().enumerate() {
        let v = counters.get(i).copied().unwrap_or(0);
        if *name == "counter.redirect_failed" && v == 0 {
            continue;
        }
        out.insert(name.to_string(), v);
    }
    // A register of 64-bit values is two of 32-bit halves (hula.p4's R64: BMv2's Thrift
    // interface saturates values above 2^63 - 1); `read` joins them.
    let mut read = |name: &str| -> Result<Vec<u64>, Bmv2Error> {
        let wide = ["aux_key_a", "aux_key_b", "assoc_conn_id", "conn_conn_id"];
        if !wide.iter().any(|w| name.ends_with(w)) {
            return cli.register_read_all(name);
        }
        let hi = cli.register_read_all(&format!("{name}_hi"))?;
        let lo = cli.register_read_all(&format!("{name}_lo"))?;
        Ok(hi.iter().zip(&lo).map(|(h, l)| h << 32 | l).collect())
    };
    let rx = read("port_rx_pkts")?;
    let tx = read("port_tx_pkts")?;
    let bytes = read("txutil_bytes")?;
    let last = read("txutil_last_us")?;
    let seen = read("probe_in_us")?;
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    for p in 0..t.ports.len() {
        out.insert(format!("port{p}.rx_pkts"), at(&rx, p));
        out.insert(format!("port{p}.tx_pkts"), at(&tx, p));
        out.insert(format!("txutil.{p}.bytes"), at(&bytes, p));
        out.insert(format!("txutil.{p}.last_us"), at(&last, p));
        out.insert(format!("probe_in.{p}.last_us"), at(&seen, p));
    }
    let Some(probe) = t.switch.probe.as_ref() else {
        return Ok(out);
    };
    let hc = hula_config(t)?;
    let bp = read(&format!("{INGRESS}.best_port"))?;
    let bu = read(&format!("{INGRESS}.best_util"))?;
    let bt = read(&format!("{INGRESS}.best_time_us"))?;
    for tor in 0..usize::from(probe.n_tors) {
        for rank in 0..hc.best_k {
            let i = tor * MAX_BEST_K + rank;
            let port = at(&bp, i).checked_sub(1).unwrap_or(u64::from(NO_PORT));
            out.insert(format!("best.{tor}.{rank}.port"), port);
            out.insert(format!("best.{tor}.{rank}.util"), at(&bu, i));
            out.insert(format!("best.{tor}.{rank}.time_us"), at(&bt, i));
        }
    }
    let fs = read(&format!("{INGRESS}.flowlet_slot"))?;
    let fl = read(&format!("{INGRESS}.flowlet_last_us"))?;
    for (slot, &e) in fs.iter().enumerate().take(hc.table_entries as usize) {
        if e >> 48 != 0 {
            out.insert(format!("flowlet.{slot}.tag"), e & 0xFFFF_FFFF);
            out.insert(format!("flowlet.{slot}.port"), (e >> 32) & 0xFFFF);
            out.insert(format!("flowlet.{slot}.last_us"), at(&fl, slot));
        }
    }
    if !hc.mp {
        return Ok(out);
    }
    let n = hc.assoc_entries as usize;
    let occupied = |v: &[u64]| -> Vec<usize> { (0..n).filter(|&i| at(v, i) != 0).collect() };
    if probe.tor_id.is_some() {
        // aux: a slot any handshake wrote (a field non-zero), as the twin lists it.
        let fields = [
            ("tag", "aux_tag"),
            ("key_a", "aux_key_a"),
            ("key_b", "aux_key_b"),
            ("flags", "aux_flags"),
        ];
        let mut values = Vec::new();
        for (field, reg) in fields {
            values.push((field, read(&format!("{INGRESS}.{reg}"))?));
        }
        for s in (0..n).filter(|&s| values.iter().any(|(_, v)| at(v, s) != 0)) {
            for (field, v) in &values {
                out.insert(format!("aux.{s}.{field}"), at(v, s));
            }
        }
        let assoc = occupied(&read(&format!("{INGRESS}.assoc_valid"))?);
        if !assoc.is_empty() {
            let fields = [
                ("tag", "assoc_tag"),
                ("conn_id", "assoc_conn_id"),
                ("subflow", "assoc_subflow"),
                ("count", "assoc_count"),
            ];
            for (field, reg) in fields {
                let v = read(&format!("{INGRESS}.{reg}"))?;
                for &s in &assoc {
                    out.insert(format!("assoc.{s}.{field}"), at(&v, s));
                }
            }
        }
        let tokens = occupied(&read(&format!("{INGRESS}.token_valid"))?);
        if !tokens.is_empty() {
            for (field, reg) in [("token", "token_token"), ("assoc_slot", "token_assoc_slot")] {
                let v = read(&format!("{INGRESS}.{reg}"))?;
                for &s in &tokens {
                    out.insert(format!("token.{s}.{field}"), at(&v, s));
                }
            }
        }
    }
    let nc = hc.conn_entries as usize;
    let cv = read(&format!("{INGRESS}.conn_valid"))?;
    let conns: Vec<usize> = (0..nc).filter(|&i| at(&cv, i) != 0).collect();
    if !conns.is_empty() {
        let id = read(&format!("{INGRESS}.conn_conn_id"))?;
        let rr = read(&format!("{INGRESS}.conn_rr"))?;
        let ports = read(&format!("{INGRESS}.conn_port"))?;
        let lasts = read(&format!("{INGRESS}.conn_last_us"))?;
        for &s in &conns {
            out.insert(format!("conn.{s}.conn_id"), at(&id, s));
            out.insert(format!("conn.{s}.rr"), at(&rr, s));
            for sub in 1..=MAX_SUBFLOWS {
                let i = s * MAX_SUBFLOWS + sub - 1;
                let port = at(&ports, i).checked_sub(1).unwrap_or(u64::from(NO_PORT));
                out.insert(format!("conn.{s}.port{sub}"), port);
                out.insert(format!("conn.{s}.last{sub}_us"), at(&lasts, i));
            }
        }
    }
    Ok(out)
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::probe::ProbePort;
    use mpsched_core::wire::parse_frame_with_headers;

    fn cfg(dirs: &[PortDir]) -> ProbeConfig {
        ProbeConfig {
            tor_id: Some(0),
            n_tors: 2,
            ports: dirs
                .iter()
                .map(|&dir| ProbePort {
                    dir,
                    rate_bps: 10_000_000,
                })
                .collect(),
            dest_tors: Vec::new(),
        }
    }

    #[test]
    fn probes_from_below_go_up_and_to_the_other_down_ports_and_from_above_down() {
        use PortDir::*;
        let c = cfg(&[Host, Down, Down, Up, Up, None]);
        assert_eq!(replication_ports(&c, 1), vec![2, 3, 4]);
        assert_eq!(replication_ports(&c, 3), vec![1, 2]);
        assert!(replication_ports(&c, 0).is_empty());
        assert!(replication_ports(&c, 5).is_empty());
        assert_eq!(origination_ports(&c), vec![3, 4]);
    }

    #[test]
    fn the_trigger_frame_is_a_64_byte_probe_frame_with_a_valid_ipv4_header() {
        let f = trigger_frame(0x0a00_0001);
        assert_eq!(f.len(), PROBE_FRAME_BYTES as usize);
        let (meta, _, stack) = parse_frame_with_headers(&f, 0).unwrap();
        assert_eq!(meta.dst_ip, 0xFFFF_FFFF);
        assert_eq!(meta.src_port, HULA_PROBE_PORT);
        assert!(stack.probe().is_some());
        assert_eq!(mpsched_core::wire::internet_checksum(&f[26..46], 0), 0);
    }
}

/// The cost of HULA's and MP-HULA's frames on BMv2, each as [`crate::vectors::ingress_cost`]
/// measures it, on the nodes of the standard vector sets: (what, ns per frame).
pub fn costs(n: usize) -> Result<Vec<(String, f64)>, String> {
    use crate::vectors::{ingress_cost, CostFrames};
    use mpsched_core::vectors::from_hex;
    let sets = mpsched_programs::vectors::standard_sets();
    let set = |name: &str| {
        sets.iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| format!("no vector set {name}"))
    };
    let frame = |s: &mpsched_core::vectors::VectorSet, i: usize| -> Result<(PortId, Vec<u8>), String> {
        Ok((s.steps[i].port, from_hex(&s.steps[i].frame)?))
    };
    let mut out = Vec::new();
    // An aggregation switch: a data packet of a known flowlet; a probe from above replicated
    // to two down ports; one from below replicated to three ports.
    let agg = set("hula-probes")?;
    let cases: [(&str, usize); 3] = [
        ("hula data packet to a ToR by its best hop", 6),
        ("hula probe, 2 copies", 3),
        ("hula probe, 3 copies", 10),
    ];
    for (what, i) in cases {
        let ns = ingress_cost(&agg, &CostFrames::Ports(vec![frame(&agg, i)?]), n)?;
        out.push((what.to_string(), ns));
    }
    // A ToR: origination (a trigger frame, two up ports).
    let tor = set("hula-tor")?;
    out.push((
        "hula origination, 2 probes".to_string(),
        ingress_cost(&tor, &CostFrames::Timer, n)?,
    ));
    // MP-HULA's ToR: a data segment of an associated connection (the option walk, the
    // association lookup, the connection table), and handshakes whose third ACK associates
    // (two SHA-256 tokens) against the same handshakes of a connection already associated.
    let v1 = set("mphula-kernel-v1")?;
    let (syn_port, syn) = frame(&v1, 2)?;
    let (ack_port, ack) = frame(&v1, 4)?;
    out.push((
        "mphula data segment at a ToR".to_string(),
        ingress_cost(&v1, &CostFrames::Ports(vec![(ack_port, ack.clone())]), n)?,
    ));
    // Handshake pairs of flows of their own (the client's TCP port stepped: the source port
    // of its segments, bytes 34..36 of an unshimmed frame, the destination port, 36..38, of the
    // server's; BMv2 checks no TCP checksum) against the same pair over and over (associated
    // after the first).
    // `apart`: the second segment of each pair is another flow's (its port 30 000 further),
    // so that it finds no keys and associates nothing: the pair's cost without the tokens.
    let pairs = |first: (PortId, Vec<u8>, usize), second: (PortId, Vec<u8>, usize), apart: bool| {
        let mut fresh = Vec::new();
        for i in 0..(n / 2).clamp(1, 30_000) as u16 {
            for (k, (port, f, at)) in [&first, &second].into_iter().enumerate() {
                let mut f = f.clone();
                let step = if apart && k == 1 { i + 30_001 } else { i + 1 };
                let p = u16::from_be_bytes([f[*at], f[at + 1]]).wrapping_add(step);
                f[*at..at + 2].copy_from_slice(&p.to_be_bytes());
                fresh.push((*port, f));
            }
        }
        fresh
    };
    let same = ingress_cost(
        &v1,
        &CostFrames::Ports(vec![(syn_port, syn.clone()), (ack_port, ack.clone())]),
        n,
    )?;
    let fresh = pairs((syn_port, syn, 34), (ack_port, ack, 34), false);
    let assoc = ingress_cost(&v1, &CostFrames::Ports(fresh), n)?;
    out.push(("mphula v1 pair (SYN, ACK), associated before".to_string(), same));
    out.push(("mphula v1 pair, associating (SHA-256 tokens)".to_string(), assoc));
    // Version 0: the SYN/ACK associates (two SHA-1 tokens).
    let v0 = set("mphula-assoc-v0")?;
    let (s_port, s) = frame(&v0, 2)?;
    let (sa_port, sa) = frame(&v0, 3)?;
    // (The same pair again would associate again: a SYN/ACK associates whenever it finds
    // both keys.)
    let apart = pairs((s_port, s.clone(), 34), (sa_port, sa.clone(), 36), true);
    let same = ingress_cost(&v0, &CostFrames::Ports(apart), n)?;
    let fresh = pairs((s_port, s, 34), (sa_port, sa, 36), false);
    let assoc = ingress_cost(&v0, &CostFrames::Ports(fresh), n)?;
    out.push(("mphula v0 pair (SYN, SYN/ACK), no keys match".to_string(), same));
    out.push(("mphula v0 pair, associating (SHA-1 tokens)".to_string(), assoc));
    Ok(out)
}

/// The timer port's interface in a switch's namespace (BMv2 port [`TIMER_PORT`]) and its
/// peer, which the prober writes into.
pub const TIMER_IFACE: (&str, &str) = ("et", "etq");

/// Whether a node needs a prober: a ToR (it has a ToR id) with at least one up port.
pub fn needs_prober(t: &NodeTables) -> bool {
    t.switch
        .probe
        .as_ref()
        .is_some_and(|p| !origination_ports(p).is_empty())
}

/// Under MP-HULA, give the node's ports other than host ports [`SWITCH_MTU`] (before the
/// switch starts): the source ToR pushes a 16-byte header onto full-size packets, which the
/// kernel would refuse to send out of (or receive on) a veth of the hosts' MTU.
pub fn set_switch_mtus(ns: &mpsched_netns::ns::Netns, t: &NodeTables) -> Result<(), Bmv2Error> {
    if !hula_config(t)?.mp {
        return Ok(());
    }
    let probe = probe_config(t)?;
    for (p, port) in probe.ports.iter().enumerate() {
        if port.dir != PortDir::Host {
            ns.ip(&["link", "set", &format!("e{p}"), "mtu", &SWITCH_MTU.to_string()])?;
        }
    }
    Ok(())
}

/// Make the timer port's veth pair in `ns` (before the switch starts, which takes
/// [`TIMER_IFACE`]`.0` as port [`TIMER_PORT`]).
pub fn add_timer_port(ns: &mpsched_netns::ns::Netns) -> Result<(), Bmv2Error> {
    let (a, b) = TIMER_IFACE;
    ns.ip(&["link", "add", a, "type", "veth", "peer", "name", b])?;
    ns.ip(&["link", "set", a, "up"])?;
    ns.ip(&["link", "set", b, "up"])?;
    Ok(())
}

/// A ToR's probe clock on BMv2: a thread writing the trigger frame into the timer port's peer
/// every probe period, on absolute deadlines (a late period is sent at once and counted
/// missed, never made up for twice). Stopped when dropped.
pub struct Prober {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stats: std::sync::Arc<ProberStats>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a prober did: triggers written, periods it was late for, its CPU time.
#[derive(Debug, Default)]
pub struct ProberStats {
    /// Trigger frames written.
    pub triggers: std::sync::atomic::AtomicU64,
    /// Periods whose trigger was written more than one period late.
    pub missed: std::sync::atomic::AtomicU64,
    /// The thread's CPU time, µs.
    pub cpu_us: std::sync::atomic::AtomicU64,
}

/// The calling thread's CPU time, µs.
fn thread_cpu_us() -> u64 {
    // SAFETY: clock_gettime fills the timespec it is given.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

impl Prober {
    /// Start the prober of node `t` in `ns` (its timer port made by [`add_timer_port`]).
    pub fn start(ns: &mpsched_netns::ns::Netns, t: &NodeTables) -> Result<Prober, Bmv2Error> {
        use std::sync::atomic::Ordering;
        let hc = hula_config(t)?;
        let ifindex = ns.ifindex(TIMER_IFACE.1)?;
        let tap = ns
            .enter(|| mpsched_netns::tap::Tap::open(ifindex))?
            .map_err(Bmv2Error::Switch)?;
        let frame = trigger_frame(t.switch.own_ip);
        let period = std::time::Duration::from_micros(hc.probe_period_us);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stats = std::sync::Arc::new(ProberStats::default());
        let (s, st) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("hula-prober".into())
            .spawn(move || {
                let mut next = std::time::Instant::now() + period;
                while !s.load(Ordering::Relaxed) {
                    let now = std::time::Instant::now();
                    if now < next {
                        std::thread::sleep(next - now);
                        continue;
                    }
                    if tap.send(&frame).is_ok() {
                        st.triggers.fetch_add(1, Ordering::Relaxed);
                    }
                    next += period;
                    if std::time::Instant::now() > next {
                        // More than a period late: skip to the next deadline ahead.
                        st.missed.fetch_add(1, Ordering::Relaxed);
                        next = std::time::Instant::now() + period;
                    }
                    st.cpu_us.store(thread_cpu_us(), Ordering::Relaxed);
                }
            })
            .map_err(Bmv2Error::io("starting the prober thread"))?;
        Ok(Prober {
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// Its figures so far, as registers (`prober.triggers`, `prober.missed`, `prober.cpu_us`).
    pub fn registers(&self) -> BTreeMap<String, u64> {
        use std::sync::atomic::Ordering;
        BTreeMap::from([
            (
                "prober.triggers".to_string(),
                self.stats.triggers.load(Ordering::Relaxed),
            ),
            ("prober.missed".to_string(), self.stats.missed.load(Ordering::Relaxed)),
            ("prober.cpu_us".to_string(), self.stats.cpu_us.load(Ordering::Relaxed)),
        ])
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
