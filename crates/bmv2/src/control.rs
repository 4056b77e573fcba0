//! The control plane of `p4/mpsched.p4`: a node's configuration (the [`NodeTables`] the eBPF
//! data plane is configured with; interface indexes aside) into BMv2's tables, registers
//! and mirror sessions, and its registers back under the names the Rust programs give them
//! ([`mpsched_core::frame::FrameSwitch::snapshot`]).
//!
//! Tables match (which group a flow belongs to, routes, ECMP members, port MACs); registers
//! hold what the Rust programs hold per group, path and port, configuration and state alike, at
//! the indices `p4/include/layout.p4` fixes ([`crate::layout`]). A group's initial registers come from the same
//! checked constructor the eBPF control plane uses ([`mpsched_netns::dataplane::split_registers`]).

use crate::cli::SwitchCli;
use crate::layout::p4;
use crate::Bmv2Error;
use mpsched_core::classify::{prefix_mask, ClassRule};
use mpsched_core::marker::VirtualQueueMarker;
use mpsched_core::switch::SwitchConfig;
use mpsched_core::table::ECMP_GROUP;
use mpsched_netns::dataplane::NodeTables;
use mpsched_netns::layout::COUNTERS;
use std::collections::BTreeMap;

pub use crate::layout::{
    MAX_CLASS_RULES, MAX_ECMP_GROUPS, MAX_GROUPS, MAX_PATHS, MAX_PORTS, MAX_ROUTES, SESSION_BASE, STACK_PORT,
    TEST_DRAWS,
};

const INGRESS: &str = "MpsIngress";
const SPLIT: &str = "MpsIngress.split_stage";
const CONFLUENCE: &str = "MpsIngress.confluence_stage";
const ROUTE: &str = "MpsIngress.route_stage";
const EGRESS: &str = "MpsEgress";
/// Each port's queue count (`port_queues`, [`crate::queues`]).
pub const PORT_QUEUES_REGISTER: &str = "MpsIngress.port_queues";

/// Check that `t` fits the program's tables and registers, before anything is started.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    let cfg = &t.switch;
    let over = |what: &str, n: usize, max: usize| {
        (n > max).then(|| Bmv2Error::Config(format!("{n} {what}; the P4 program holds {max}")))
    };
    let checks = [
        over("ports", t.ports.len(), MAX_PORTS),
        over("splitting groups", cfg.splits.len(), MAX_GROUPS),
        over("confluence entries", cfg.confluences.len(), MAX_GROUPS),
        over("routes", cfg.routes.len(), MAX_ROUTES),
        over("ECMP groups", cfg.ecmp_groups.len(), MAX_ECMP_GROUPS),
        over("classifier rules", cfg.classify.len(), MAX_CLASS_RULES),
        over("fixed RS draws", t.test_draws.len(), TEST_DRAWS),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(e);
    }
    mpsched_core::classify::check_rules(&cfg.classify).map_err(Bmv2Error::Config)?;
    for s in &cfg.splits {
        mpsched_netns::dataplane::split_registers(s).map_err(|e| Bmv2Error::Config(e.to_string()))?;
    }
    for c in &cfg.confluences {
        if c.path_ingress_ports.len() > MAX_PATHS || c.return_ports.len() != c.path_ingress_ports.len() {
            return Err(Bmv2Error::Config(format!(
                "confluence group {}: bad path ports",
                c.group
            )));
        }
    }
    for (i, g) in cfg.ecmp_groups.iter().enumerate() {
        if g.is_empty() || g.len() > MAX_PORTS {
            return Err(Bmv2Error::Config(format!("ECMP group {i}: 1 to {MAX_PORTS} ports")));
        }
    }
    Ok(())
}

/// `table_add TABLE ACTION KEYS => PARAMS`, the action named within the table's control as
/// BMv2's JSON names it.
fn table_add(cli: &mut SwitchCli, table: &str, action: &str, entry: &str) -> Result<(), Bmv2Error> {
    let control = table.rsplit_once('.').map_or("", |(c, _)| c);
    cli.run(&format!("table_add {table} {control}.{action} {entry}"))
        .map(|_| ())
}

/// The classifier's rules in order: rule `i` at priority `i` (BMv2 takes the lowest of the
/// ternary entries a packet matches).
fn configure_classifier(cli: &mut SwitchCli, rules: &[ClassRule]) -> Result<(), Bmv2Error> {
    for (i, r) in rules.iter().enumerate() {
        let (sm, dm) = (prefix_mask(r.src_len), prefix_mask(r.dst_len));
        let (tos, tos_mask) = r.dscp.map_or((0, 0), |d| (u32::from(d) << 2, 0xfc));
        table_add(
            cli,
            &format!("{INGRESS}.classify"),
            "set_class",
            &format!(
                "{}&&&{sm} {}&&&{dm} {tos}&&&{tos_mask} => {} {i}",
                r.src & sm,
                r.dst & dm,
                r.dscp_set()
            ),
        )?;
    }
    Ok(())
}

/// A MAC address as the CLI takes a 48-bit action parameter.
fn mac(m: [u8; 6]) -> u64 {
    m.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b))
}

/// The mirror session a program's rate feedback clones take (`MPS_RECIRC_SESSION`, to
/// `MPS_RECIRC_PORT`, which has no interface: there egress builds the feedback and
/// recirculates it), for the programs that send one (PMQECN's, P4QCN's).
pub fn add_rate_feedback_session(cli: &mut SwitchCli) -> Result<(), Bmv2Error> {
    cli.run(&format!(
        "mirroring_add {} {}",
        crate::layout::RECIRC_SESSION,
        crate::layout::RECIRC_PORT
    ))
    .map(|_| ())
}

/// Fill every table, register and mirror session from `t` (checked with [`check`] first).
pub fn configure(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    let cfg = &t.switch;
    cli.run(&format!(
        "table_set_default {INGRESS}.node {INGRESS}.set_node {} {} {}",
        cfg.own_ip, cfg.feedback_port, cfg.hash_seed
    ))?;
    for (p, b) in t.ports.iter().enumerate() {
        let (own, peer) = (mac(b.own_mac), mac(b.peer_mac));
        table_add(
            cli,
            &format!("{INGRESS}.port_macs"),
            "set_macs",
            &format!("{p} => {own} {peer}"),
        )?;
        table_add(
            cli,
            &format!("{EGRESS}.feedback_macs"),
            "set_macs",
            &format!("{p} => {own} {peer}"),
        )?;
        cli.run(&format!("mirroring_add {} {p}", p as u16 + SESSION_BASE))?;
    }
    configure_routes(cli, cfg)?;
    configure_classifier(cli, &cfg.classify)?;
    for (slot, s) in cfg.splits.iter().enumerate() {
        configure_split(cli, slot, s)?;
    }
    for (slot, c) in cfg.confluences.iter().enumerate() {
        configure_confluence(cli, slot, c)?;
    }
    for &(port, threshold) in &cfg.ecn_markers {
        cli.register_write(
            &format!("{EGRESS}.marker_qdepth_threshold"),
            usize::from(port),
            u64::from(threshold),
        )?;
    }
    for m in &t.markers {
        let vq = VirtualQueueMarker::new(m.rate_bps, m.threshold_bytes, m.limit_bytes);
        let p = usize::from(m.port);
        for (name, v) in [
            ("rate_bps", vq.rate_bps),
            ("max_elapsed_ns", vq.max_elapsed_ns),
            ("threshold_scaled", vq.threshold_scaled.max(1)),
            ("limit_scaled", vq.limit_scaled),
        ] {
            cli.register_write(&format!("{EGRESS}.marker_{name}"), p, v)?;
        }
    }
    for (i, d) in t.test_draws.iter().enumerate() {
        cli.register_write(&format!("{SPLIT}.rs_test_draws"), i, u64::from(*d))?;
    }
    cli.register_write(&format!("{SPLIT}.rs_test_draws_n"), 0, t.test_draws.len() as u64)?;
    cli.register_write(&format!("{EGRESS}.test_clock_on"), 0, u64::from(t.test_clock))?;
    Ok(())
}

fn configure_routes(cli: &mut SwitchCli, cfg: &SwitchConfig) -> Result<(), Bmv2Error> {
    for r in &cfg.routes {
        let key = format!("{}/{}", r.prefix, r.len);
        if r.port & ECMP_GROUP != 0 {
            table_add(
                cli,
                &format!("{ROUTE}.routes"),
                "route_ecmp",
                &format!("{key} => {}", r.port & !ECMP_GROUP),
            )?;
        } else {
            table_add(
                cli,
                &format!("{ROUTE}.routes"),
                "route_port",
                &format!("{key} => {}", r.port),
            )?;
        }
    }
    for (g, ports) in cfg.ecmp_groups.iter().enumerate() {
        table_add(
            cli,
            &format!("{ROUTE}.ecmp_group"),
            "set_group_size",
            &format!("{g} => {}", ports.len()),
        )?;
        for (i, p) in ports.iter().enumerate() {
            table_add(
                cli,
                &format!("{ROUTE}.ecmp_member"),
                "route_port",
                &format!("{g} {i} => {p}"),
            )?;
        }
    }
    Ok(())
}

fn configure_split(
    cli: &mut SwitchCli,
    slot: usize,
    s: &mpsched_core::switch::SplitGroupConfig,
) -> Result<(), Bmv2Error> {
    let v = mpsched_netns::dataplane::split_registers(s).map_err(|e| Bmv2Error::Config(e.to_string()))?;
    table_add(
        cli,
        &format!("{SPLIT}.split"),
        "set_slot",
        &format!("{} {} => {slot}", s.src_ip, s.dst_ip),
    )?;
    table_add(
        cli,
        &format!("{SPLIT}.feedback_group"),
        "set_slot",
        &format!("{} => {slot}", s.group),
    )?;
    let mut w =
        |name: &str, index: usize, value: u64| cli.register_write(&format!("{SPLIT}.split_{name}"), index, value);
    for (name, value) in [
        ("sched", u64::from(v.sched)),
        ("n_paths", u64::from(v.n_paths)),
        ("cursor", u64::from(v.cursor)),
        ("groups", u64::from(v.groups)),
        ("groups_left", u64::from(v.groups_left)),
        ("min_weight", u64::from(v.min_weight)),
        ("max_step", u64::from(v.max_step)),
        ("feedback_ports", u64::from(v.feedback_ports)),
        ("avoidance_drop_pkts", u64::from(v.avoidance_drop_pkts)),
    ] {
        w(name, slot, value)?;
    }
    for i in 0..usize::from(v.n_paths) {
        let at = slot * MAX_PATHS + i;
        w("port", at, u64::from(v.ports[i]))?;
        w("rs_lo", at, u64::from(v.rs_lo[i]))?;
        w("rs_hi", at, u64::from(v.rs_hi[i]))?;
        w("weight", at, u64::from(v.weights[i]))?;
        w("remaining", at, u64::from(v.remaining[i]))?;
    }
    Ok(())
}

fn configure_confluence(
    cli: &mut SwitchCli,
    slot: usize,
    c: &mpsched_core::switch::ConfluenceConfig,
) -> Result<(), Bmv2Error> {
    table_add(
        cli,
        &format!("{CONFLUENCE}.confluence"),
        "set_slot",
        &format!("{} {} => {slot}", c.src_ip, c.dst_ip),
    )?;
    for (i, p) in c.path_ingress_ports.iter().enumerate() {
        table_add(
            cli,
            &format!("{CONFLUENCE}.confluence_path"),
            "set_path",
            &format!("{slot} {p} => {i}"),
        )?;
        cli.register_write(
            &format!("{CONFLUENCE}.conf_return_port"),
            slot * MAX_PATHS + i,
            u64::from(c.return_ports[i]),
        )?;
    }
    let mut w = |name: &str, value: u64| cli.register_write(&format!("{CONFLUENCE}.conf_{name}"), slot, value);
    w("n_paths", c.path_ingress_ports.len() as u64)?;
    w("group", u64::from(c.group))?;
    w("every", u64::from(c.feedback_every.max(1)))?;
    w("splitter_ip", u64::from(c.splitter_ip))
}

/// The registers BMv2 holds, for the registers [`snapshot`] reports.
struct Registers<'a> {
    cli: &'a mut SwitchCli,
    read: BTreeMap<String, Vec<u64>>,
}

impl Registers<'_> {
    fn get(&mut self, name: &str, index: usize) -> Result<u64, Bmv2Error> {
        if !self.read.contains_key(name) {
            let values = self.cli.register_read_all(name)?;
            self.read.insert(name.to_string(), values);
        }
        self.read[name]
            .get(index)
            .copied()
            .ok_or_else(|| Bmv2Error::Switch(format!("register {name} has no index {index}")))
    }
}

/// Every register and counter, named as [`mpsched_core::frame::FrameSwitch::snapshot`] names
/// them (the same keys as the eBPF data plane's snapshot).
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut r = Registers {
        cli,
        read: BTreeMap::new(),
    };
    let mut out = BTreeMap::new();
    for (i, name) in COUNTERS.iter().enumerate() {
        let v = r.get(&format!("{INGRESS}.counters"), i)?;
        if *name != "redirect_failed" || v != 0 {
            out.insert(format!("counter.{name}"), v);
        }
    }
    for (slot, s) in t.switch.splits.iter().enumerate() {
        split_snapshot(&mut r, slot, s, &mut out)?;
    }
    for (slot, c) in t.switch.confluences.iter().enumerate() {
        let g = format!("confluence{}", c.group);
        for i in 0..c.path_ingress_ports.len() {
            out.insert(
                format!("{g}.ce_pending{i}"),
                r.get(&format!("{CONFLUENCE}.conf_ce_pending"), slot * MAX_PATHS + i)?,
            );
        }
        out.insert(
            format!("{g}.ce_arrivals"),
            r.get(&format!("{CONFLUENCE}.conf_ce_arrivals"), slot)?,
        );
        out.insert(
            format!("{g}.feedback_sent"),
            r.get(&format!("{CONFLUENCE}.conf_feedback_sent"), slot)?,
        );
    }
    for p in 0..t.ports.len() {
        out.insert(
            format!("port{p}.rx_pkts"),
            r.get(&format!("{INGRESS}.port_rx_pkts"), p)?,
        );
        out.insert(
            format!("port{p}.tx_pkts"),
            r.get(&format!("{INGRESS}.port_tx_pkts"), p)?,
        );
    }
    for m in &t.markers {
        let p = usize::from(m.port);
        let mut get = |name: &str| r.get(&format!("{EGRESS}.marker_{name}"), p);
        let vq = VirtualQueueMarker {
            rate_bps: get("rate_bps")?,
            max_elapsed_ns: get("max_elapsed_ns")?,
            threshold_scaled: get("threshold_scaled")?,
            limit_scaled: get("limit_scaled")?,
            backlog_scaled: get("backlog_scaled")?,
            last_ns: get("last_ns")?,
            marked: get("marked")?,
            not_ect_over_threshold: get("not_ect_over_threshold")?,
            overflow: get("overflow")?,
        };
        for (k, v) in vq.registers() {
            out.insert(format!("marker{p}.{k}"), v);
        }
    }
    Ok(out)
}

/// The name of counter `i` of `MpsIngress.counters` in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| format!("counter.{n}"))
}

fn split_snapshot(
    r: &mut Registers<'_>,
    slot: usize,
    s: &mpsched_core::switch::SplitGroupConfig,
    out: &mut BTreeMap<String, u64>,
) -> Result<(), Bmv2Error> {
    let sched = u64::from(
        mpsched_netns::dataplane::split_registers(s)
            .map_err(|e| Bmv2Error::Config(e.to_string()))?
            .sched,
    );
    let g = format!("split{}", s.group);
    let n = s.ports.len();
    let mut per_path = |r: &mut Registers<'_>, key: &str, suffix: &str, reg: &str| -> Result<(), Bmv2Error> {
        for i in 0..n {
            let v = r.get(&format!("{SPLIT}.split_{reg}"), slot * MAX_PATHS + i)?;
            out.insert(format!("{g}.{key}{i}{suffix}"), v);
        }
        Ok(())
    };
    per_path(r, "path", "_pkts", "path_pkts")?;
    if sched == p4::SCHED_WRR || sched == p4::SCHED_DWRR {
        per_path(r, "weight", "", "weight")?;
        per_path(r, "remaining", "", "remaining")?;
    }
    if sched == p4::SCHED_DWRR {
        per_path(r, "adjust", "", "adjust")?;
        for k in [
            "groups_left",
            "drop_left",
            "cursor",
            "feedback_rx",
            "windows",
            "adjustments",
            "avoidance_events",
            "avoidance_drops",
        ] {
            out.insert(format!("{g}.{k}"), r.get(&format!("{SPLIT}.split_{k}"), slot)?);
        }
    }
    Ok(())
}
