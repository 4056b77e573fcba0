//! The control plane of the ATSSS UPF's P4 program (`crates/programs/src/atsss/atsss.p4`): the
//! node's UE table (`SwitchConfig::upf`) into its address tables (`ue_by_ip`, `ue_by_path`)
//! and per-UE registers, its routes and port MACs into their tables, the test clock and draws
//! into their registers; its counters and every UE's registers back under the names the Rust
//! twin and the kernel's [`mpsched_netns::programs::atsss::AtsssPlane`] give them
//! (`counter.atsss.encapsulated`, `atsss.ue<i>.weight`, `atsss.ue<i>.path<j>.cwnd`, ...); the
//! weight written through the control channel as the vectors write it.

use crate::cli::SwitchCli;
use crate::layout::{MAX_PORTS, MAX_ROUTES};
use crate::Bmv2Error;
use mpsched_core::control::ControlError;
use mpsched_core::table::ECMP_GROUP;
use mpsched_netns::dataplane::NodeTables;
use mpsched_netns::programs::atsss::layout::counter_names;
use mpsched_programs::atsss::registers::{PathReg, UeReg, MAX_PATHS};
use mpsched_programs::atsss::upf::{self, PathCfg, UeSlot, UpfParams};
use std::collections::BTreeMap;

/// The UPF's control in the program: every register and table is under it.
const UPF: &str = "AtIngress.upf";
/// Most UEs the program's registers hold (`ATSSS_P4_UES` in atsss.p4): BMv2 sizes registers
/// when it loads the program, so a larger table is refused here.
pub const MAX_UES: usize = 256;
/// Fixed draws the `test_draws` register holds (`ATSSS_TEST_DRAWS`).
pub const TEST_DRAWS: usize = 64;
/// The register of the counters (indices as `enum atsss_counter` in atsss.h).
pub const COUNTERS_REGISTER: &str = "AtIngress.upf.counters";
/// Each port's queue count (`port_queues`, [`crate::queues`]).
pub const PORT_QUEUES_REGISTER: &str = "AtIngress.upf.port_queues";
/// Ingress's runs, counted after each ended: a step's registers are written once it moved.
pub const INGRESS_RUNS_REGISTER: &str = "AtIngress.ingress_runs";

/// Check that `t` fits the program's tables and registers, before anything is started.
pub fn check(t: &NodeTables) -> Result<(), Bmv2Error> {
    let cfg = &t.switch;
    cfg.upf
        .check(cfg.own_ip, t.ports.len())
        .map_err(|e| Bmv2Error::Config(format!("atsss: {e}")))?;
    let over = |what: &str, n: usize, max: usize| {
        (n > max).then(|| Bmv2Error::Config(format!("{n} {what}; the UPF's P4 program holds {max}")))
    };
    let checks = [
        over("UEs", cfg.upf.ues.len(), MAX_UES),
        over("ports", t.ports.len(), MAX_PORTS),
        over("routes", cfg.routes.len(), MAX_ROUTES),
        over("fixed draws", t.test_draws.len(), TEST_DRAWS),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(e);
    }
    if !t.markers.is_empty() || !cfg.splits.is_empty() || !cfg.confluences.is_empty() || !cfg.classify.is_empty() {
        return Err(Bmv2Error::Config(
            "atsss: the UPF has no marker, split, confluence or classifier on BMv2".into(),
        ));
    }
    if let Some(r) = cfg.routes.iter().find(|r| r.port & ECMP_GROUP != 0) {
        return Err(Bmv2Error::Config(format!(
            "atsss: a route to equal-cost group {}; the UPF routes by one shortest path",
            r.port & !ECMP_GROUP
        )));
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
    let p = UpfParams::from_params(&t.params);
    let rc = p.config();
    cli.run(&format!(
        "table_set_default {UPF}.node {UPF}.set_node {} {} {} {}",
        cfg.own_ip, cfg.upf.epoch, p.mtu, rc.outage_floor_ticks
    ))?;
    for (port, b) in t.ports.iter().enumerate() {
        cli.run(&format!(
            "table_add {UPF}.port_macs {UPF}.set_macs {port} => {} {}",
            mac(b.own_mac),
            mac(b.peer_mac)
        ))?;
    }
    for r in &cfg.routes {
        cli.run(&format!(
            "table_add {UPF}.routes {UPF}.route_port {}/{} => {}",
            r.prefix, r.len, r.port
        ))?;
    }
    for (u, s) in upf::slots_of(&cfg.upf, &rc).iter().enumerate() {
        cli.run(&format!("table_add {UPF}.ue_by_ip {UPF}.set_ue {} => {u}", s.ip))?;
        let w = |cli: &mut SwitchCli, reg: &str, v: u64| cli.register_write(&format!("{UPF}.{reg}"), u, v);
        w(cli, "ue_weight", u64::from(s.regs.weight))?;
        w(cli, "ue_n_paths", u64::from(s.regs.n_paths))?;
        w(cli, "ue_kind", u64::from(s.regs.kind))?;
        w(cli, "ue_ip", u64::from(s.ip))?;
        for (j, (reg, pc)) in s.regs.paths.iter().zip(&s.paths).enumerate() {
            let at = u * MAX_PATHS + j;
            let w = |cli: &mut SwitchCli, name: &str, v: u64| cli.register_write(&format!("{UPF}.{name}"), at, v);
            w(cli, "path_cwnd", u64::from(reg.cwnd))?;
            w(cli, "path_flags", u64::from(reg.flags))?;
            if j < usize::from(s.regs.n_paths) {
                cli.run(&format!(
                    "table_add {UPF}.ue_by_path {UPF}.set_path {} => {u} {j}",
                    pc.addr
                ))?;
                w(cli, "path_addr", u64::from(pc.addr))?;
                w(cli, "path_port", u64::from(pc.port))?;
                w(cli, "path_egress", u64::from(pc.egress_port))?;
            }
        }
    }
    for (i, d) in t.test_draws.iter().enumerate() {
        cli.register_write(&format!("{UPF}.test_draws"), i, u64::from(*d))?;
    }
    cli.register_write(&format!("{UPF}.test_draws_n"), 0, t.test_draws.len() as u64)?;
    cli.register_write(&format!("{UPF}.test_draw_next"), 0, 0)?;
    cli.register_write(&format!("{UPF}.test_clock_on"), 0, u64::from(t.test_clock))?;
    Ok(())
}

/// Set the ingress test clock (with [`NodeTables::test_clock`]): BMv2 counts microseconds.
pub fn set_clock(cli: &mut SwitchCli, now_ns: u64) -> Result<(), Bmv2Error> {
    cli.register_write(&format!("{UPF}.test_clock_us"), 0, now_ns / 1000)
}

/// The first `n_ues` UEs' rows, read from the registers.
fn read_slots(cli: &mut SwitchCli, n_ues: usize) -> Result<Vec<UeSlot>, Bmv2Error> {
    let mut read = |name: &str| cli.register_read_all(&format!("{UPF}.{name}"));
    let ue: Vec<Vec<u64>> = [
        "ue_weight",
        "ue_n_paths",
        "ue_kind",
        "ue_probe_backoff",
        "ue_last_change",
        "ue_packet_number",
        "ue_tunnel_seq",
        "ue_ip",
    ]
    .iter()
    .map(|n| read(n))
    .collect::<Result<_, _>>()?;
    let path: Vec<Vec<u64>> = [
        "path_cur_rtt",
        "path_min_rtt",
        "path_seq_sent",
        "path_seq_acked",
        "path_last_heard",
        "path_lost",
        "path_last_cut",
        "path_cwnd",
        "path_acks_in_round",
        "path_flags",
        "path_addr",
        "path_port",
        "path_egress",
    ]
    .iter()
    .map(|n| read(n))
    .collect::<Result<_, _>>()?;
    let at = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
    Ok((0..n_ues)
        .map(|u| {
            let mut regs = UeReg {
                weight: at(&ue[0], u) as u8,
                n_paths: at(&ue[1], u) as u8,
                kind: at(&ue[2], u) as u8,
                probe_backoff: at(&ue[3], u) as u8,
                last_change: at(&ue[4], u) as u32,
                ..UeReg::default()
            };
            let mut paths = [PathCfg::default(); MAX_PATHS];
            for (j, (reg, cfg)) in regs.paths.iter_mut().zip(paths.iter_mut()).enumerate() {
                let i = u * MAX_PATHS + j;
                *reg = PathReg {
                    cur_rtt: at(&path[0], i) as u32,
                    min_rtt: at(&path[1], i) as u32,
                    seq_sent: at(&path[2], i) as u32,
                    seq_acked: at(&path[3], i) as u32,
                    last_heard: at(&path[4], i) as u32,
                    lost: at(&path[5], i) as u32,
                    last_cut: at(&path[6], i) as u32,
                    cwnd: at(&path[7], i) as u16,
                    acks_in_round: at(&path[8], i) as u16,
                    flags: at(&path[9], i) as u16,
                    ..PathReg::default()
                };
                *cfg = PathCfg {
                    addr: at(&path[10], i) as u32,
                    port: at(&path[11], i) as u16,
                    egress_port: at(&path[12], i) as u16,
                };
            }
            UeSlot {
                regs,
                ip: at(&ue[7], u) as u32,
                paths,
                packet_number: at(&ue[5], u),
                tunnel_seq: at(&ue[6], u) as u32,
            }
        })
        .collect())
}

/// The counters (`redirect_failed` only once it moved), per-port packet counts and every UE's
/// registers, named as the Rust runner names them.
pub fn snapshot(cli: &mut SwitchCli, t: &NodeTables) -> Result<BTreeMap<String, u64>, Bmv2Error> {
    let mut out = BTreeMap::new();
    let counters = cli.register_read_all(COUNTERS_REGISTER)?;
    for (i, name) in counter_names().into_iter().enumerate() {
        let v = counters.get(i).copied().unwrap_or(0);
        if name != "counter.redirect_failed" || v != 0 {
            out.insert(name, v);
        }
    }
    let rx = cli.register_read_all(&format!("{UPF}.port_rx_pkts"))?;
    let tx = cli.register_read_all(&format!("{UPF}.port_tx_pkts"))?;
    for p in 0..t.ports.len() {
        out.insert(format!("port{p}.rx_pkts"), rx.get(p).copied().unwrap_or(0));
        out.insert(format!("port{p}.tx_pkts"), tx.get(p).copied().unwrap_or(0));
    }
    let slots = read_slots(cli, t.switch.upf.ues.len())?;
    out.extend(upf::ue_registers(&slots));
    Ok(out)
}

/// The name of counter `i` of [`COUNTERS_REGISTER`] in snapshots.
pub fn counter_name(i: usize) -> Option<String> {
    counter_names().get(i).cloned()
}

/// The registers the control channel writes: the weight, by UE (`atsss.weight`) or by name
/// (`atsss.ue<i>.weight`).
pub const WRITABLE: [&str; 1] = ["atsss.weight"];

/// Write a UE's weight through the control channel, as [`upf::listing`] names it and within its
/// kind's register (RTTMon 0 to 62, the others 0 to 255); every other register is read-only.
/// The UEs are the rows with paths (a configured UE has at least one).
pub fn write_register(cli: &mut SwitchCli, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
    let err = |e: Bmv2Error| ControlError::Unsupported(e.to_string());
    let n_ues = cli
        .register_read_all(&format!("{UPF}.ue_n_paths"))
        .map_err(err)?
        .iter()
        .take_while(|n| **n != 0)
        .count();
    let (u, rest) = upf::locate(name, index, n_ues)?;
    let slots = read_slots(cli, n_ues).map_err(err)?;
    let w = upf::check_write(&slots[u], &rest, value, name)?;
    cli.register_write(&format!("{UPF}.ue_weight"), u, u64::from(w))
        .map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::upf::SteeringKind;
    use mpsched_netns::dataplane::PortBinding;
    use mpsched_programs::atsss::vector_sets::{ue, upf_config};

    /// A UPF of four ports and `n` two-path WRR UEs, each at addresses of its own.
    fn tables(n: usize) -> NodeTables {
        let ues = (0..n)
            .map(|i| {
                let mut u = ue(0, SteeringKind::Wrr, 128, 2);
                u.ip = 0x0b00_0000 + i as u32;
                for (j, p) in u.paths.iter_mut().enumerate() {
                    p.addr = 0x0c00_0000 + (i * MAX_PATHS + j) as u32;
                }
                u
            })
            .collect();
        NodeTables {
            switch: upf_config(ues),
            ports: vec![
                PortBinding {
                    ifindex: 0,
                    own_mac: [2, 0, 1, 0, 0, 0],
                    peer_mac: [2, 0, 2, 0, 0, 0],
                };
                4
            ],
            markers: Vec::new(),
            test_draws: Vec::new(),
            test_clock: true,
            program: "atsss",
            params: Default::default(),
            port_queues: Vec::new(),
            port_classes: Vec::new(),
            far_ends: Vec::new(),
        }
    }

    #[test]
    fn a_ue_table_beyond_the_registers_is_refused_by_name() {
        assert!(check(&tables(MAX_UES)).is_ok());
        let e = check(&tables(MAX_UES + 1)).unwrap_err().to_string();
        assert!(e.contains("257 UEs; the UPF's P4 program holds 256"), "{e}");
    }

    #[test]
    fn the_counters_are_named_as_the_kernels() {
        assert_eq!(counter_name(0).as_deref(), Some("counter.atsss.encapsulated"));
        assert_eq!(counter_name(16).as_deref(), Some("counter.not_ipv4"));
        assert_eq!(counter_name(18).as_deref(), Some("counter.redirect_failed"));
        assert_eq!(counter_name(19), None);
    }
}
