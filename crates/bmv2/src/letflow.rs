//! The control plane of LetFlow's P4 program (`crates/programs/src/letflow/letflow.p4`): a
//! node's routes, equal-cost groups, port MACs and LetFlow's parameters into its tables, the
//! test clock and draws into its registers, and its counters back under the names the Rust
//! twin's vector runner gives them (the same keys as the kernel's
//! [`mpsched_netns::programs::letflow::LetflowPlane`]).

use crate::cli::SwitchCli;
use crate::layout::{MAX_ECMP_GROUPS, MAX_PORTS, MAX_ROUTES};
use crate::Bmv2Error;
use mpsched_core::table::ECMP_GROUP;
use mpsched_netns::dataplane::NodeTables;
use mpsched_netns::programs::letflow::COUNTERS;
use std::collections::BTreeMap;

const INGRESS: &str = "LfIngress";
/// The flowlet registers' size (`LF_TABLE_SLOTS` in letflow.p4): BMv2 sizes registers when
/// it loads the program, so `table_entries` may be at most this here.
pub const TABLE_SLOTS: u64 = 65536;
/// Fixed draws the `test_draws` register holds (`LF_TEST_DRAWS`).
pub const TEST_DRAWS: usize = 64;
/// The register of LetFlow's counters (indices as `enum lf_counter`, [`COUNTERS`]).
pub const COUNTERS_REGISTER: &str = "LfIngress.counters";
/// Each port's queue count (`port_queues`, [`crate::queues`]).
pub const PORT_QUEUES_REGISTER: &str = "LfIngress.port_queues";

/// Check that `t` fits the program's tables and registers, before anything is started.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    let cfg = &t.switch;
    let over = |what: &str, n: usize, max: usize| {
        (n > max).then(|| Bmv2Error::Config(format!("{n} {what}; LetFlow's P4 program holds {max}")))
    };
    let entries = t.params.get("table_entries");
    let checks = [
        over("ports", t.ports.len(), MAX_PORTS),
        over("routes", cfg.routes.len(), MAX_ROUTES),
        over("ECMP groups", cfg.ecmp_groups.len(), MAX_ECMP_GROUPS),
        over("fixed draws", t.test_draws.len(), TEST_DRAWS),
        over("flowlet table slots", entries as usize, TABLE_SLOTS as usize),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(e);
    }
    if !entries.is_power_of_two() {
        return Err(Bmv2Error::Config(format!(
            "table_entries {entries} is not a power of two"
        )));
    }
    if !t.markers.is_empty() || !cfg.splits.is_empty() || !cfg.confluences.is_empty() {
        return Err(Bmv2Error::Config(
            "LetFlow's P4 program has no markers, splits or confluence points".into(),
        ));
    }
    for (i, g) in cfg.ecmp_groups.iter().enumerate() {
        if g.is_empty() || g.len() > MAX_PORTS {
            return Err(Bmv2Error::Config(format!("ECMP group {i}: 1 to {MAX_PORTS} ports")));
        }
    }
    Ok(())
}

/// A MAC address as the CLI takes a 48-bit action parameter.
fn mac(m: [u8; 6]) -> u64 {
    m.iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b))
}

/// Fill every table and register from `t` (checked with [`check`] first).
pub fn configure(cli: &mut SwitchCli, t: &NodeTables) -> Result<(), Bmv2Error> {
    check(t)?;
    let cfg = &t.switch;
    let gap_us = t.params.get("flowlet_gap") / 1_000_000;
    let mask = t.params.get("table_entries") - 1;
    cli.run(&format!(
        "table_set_default {INGRESS}.node {INGRESS}.set_node {} {} {gap_us} {mask}",
        cfg.own_ip, cfg.hash_seed
    ))?;
    for (p, b) in t.ports.iter().enumerate() {
        cli.run(&format!(
            "table_add {INGRESS}.port_macs {INGRESS}.set_macs {p} => {} {}",
            mac(b.own_mac),
            mac(b.peer_mac)
        ))?;
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
        let mut members = ports.clone();
        members.sort_unstable();
        members.dedup();
        for p in members {
            cli.run(&format!("table_add {INGRESS}.ecmp_has_port NoAction {g} {p} =>"))?;
        }
    }
    for (i, d) in t.test_draws.iter().enumerate() {
        cli.register_write(&format!("{INGRESS}.test_draws"), i, u64::from(*d))?;
    }
    cli.register_write(&format!("{INGRESS}.test_draws_n"), 0, t.test_draws.len() as u64)?;
    cli.register_write(&format!("{INGRESS}.test_draw_next"), 0, 0)?;
    cli.register_write(&format!("{INGRESS}.test_clock_on"), 0, u64::from(t.test_clock))?;
    Ok(())
}

/// Set the ingress test clock (with [`NodeTables::test_clock`]): BMv2 counts microseconds.
pub fn set_clock(cli: &mut SwitchCli, now_ns: u64) -> Result<(), Bmv2Error> {
    cli.register_write(&format!("{INGRESS}.test_clock_us"), 0, now_ns / 1000)
}

/// The counters (`redirect_failed` only once it moved) and per-port packet counts.
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = BTreeMap::new();
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in COUNTERS.iter().enumerate() {
        let v = counters.get(i).copied().unwrap_or(0);
        if *name != "counter.redirect_failed" || v != 0 {
            out.insert(name.to_string(), v);
        }
    }
    let rx = cli.register_read_all(&format!("{INGRESS}.port_rx_pkts"))?;
    let tx = cli.register_read_all(&format!("{INGRESS}.port_tx_pkts"))?;
    for p in 0..t.ports.len() {
        out.insert(format!("port{p}.rx_pkts"), rx.get(p).copied().unwrap_or(0));
        out.insert(format!("port{p}.tx_pkts"), tx.get(p).copied().unwrap_or(0));
    }
    Ok(out)
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    COUNTERS.get(i).map(|n| n.to_string())
}
