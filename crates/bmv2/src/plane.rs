//! `simple_switch` as the switches' data plane on the kernel backend (`--backend bmv2`): the
//! netns topology, links, hosts and traffic as with the eBPF programs, and in each switch's
//! namespace a `simple_switch` on its interfaces running the node's program's P4 program
//! ([`crate::programs`]) in place of the eBPF programs, as Mininet runs the papers' switches.
//!
//! The links stay shaped by the kernel's qdiscs (htb and pfifo, netem where present), so the
//! queue that builds up is the interface's, after BMv2, as with eBPF; a marker therefore runs
//! on the program's virtual queue (`marker_*` registers), as the eBPF marker does, on BMv2's
//! microsecond egress clock. The program's `deq_qdepth` marker is for setups that make BMv2's
//! own queues the bottleneck (`set_queue_rate`), as the papers' Mininet runs did.
//!
//! `MPSCHED_BMV2_LOG=DIR` writes each switch's per-packet log to `DIR/<namespace>.log`.

use crate::control;
use crate::programs::{self, Bmv2Program};
use crate::switch::{Bmv2Switch, SwitchOptions};
use crate::{toolchain, Bmv2Error};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::marker::VQ_SCALE_PER_BYTE;
use mpsched_core::packet::PortId;
use mpsched_netns::backend::NetnsError;
use mpsched_netns::dataplane::NodeTables;
use mpsched_netns::ns::Netns;
use mpsched_netns::switchplane::{snapshot_control, snapshot_register_of, SwitchPlane, SwitchPlanes};
use mpsched_programs::SwitchProgram;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Starts a `simple_switch` per switch node.
#[derive(Debug, Default)]
pub struct Bmv2Planes;

fn netns_error(e: Bmv2Error) -> NetnsError {
    match e {
        Bmv2Error::Missing(m) => NetnsError::Missing(m),
        Bmv2Error::Config(m) => NetnsError::Unsupported(m),
        e => NetnsError::Plane(e.to_string()),
    }
}

impl SwitchPlanes for Bmv2Planes {
    fn backend_name(&self) -> &'static str {
        "bmv2"
    }

    fn description(&self) -> &'static str {
        "BMv2 simple_switch (netns)"
    }

    fn switch_name(&self) -> &'static str {
        "BMv2"
    }

    fn needs_checksummed_frames(&self) -> bool {
        true
    }

    fn preflight(&self) -> Result<(), NetnsError> {
        toolchain::find().map_err(netns_error)?;
        toolchain::program_json().map_err(netns_error)?;
        Ok(())
    }

    fn supports(&self, program: &dyn SwitchProgram) -> Result<(), String> {
        let prog = programs::bmv2_program(program)?;
        toolchain::program_json_of(prog.p4)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    fn start(&self, ns: &Netns, tables: &NodeTables) -> Result<Box<dyn SwitchPlane>, NetnsError> {
        let prog = programs::of_tables(tables).map_err(netns_error)?;
        (prog.check)(tables).map_err(netns_error)?;
        // Thrift listens on the namespace's loopback.
        ns.ip(&["link", "set", "lo", "up"])?;
        // A HULA ToR's probe clock: the timer port and its prober (crate::hula).
        let prober_needed = prog.p4 == "hula" && crate::hula::needs_prober(tables);
        let mut ports: Vec<(u16, String)> = (0..tables.ports.len() as u16).map(|p| (p, format!("e{p}"))).collect();
        if prog.p4 == "hula" {
            crate::hula::set_switch_mtus(ns, tables).map_err(netns_error)?;
        }
        if prober_needed {
            crate::hula::add_timer_port(ns).map_err(netns_error)?;
            ports.push((crate::hula::TIMER_PORT, crate::hula::TIMER_IFACE.0.to_string()));
        }
        let opts = SwitchOptions {
            ports,
            thrift_port: 9090,
            // Per-packet logs, for debugging a run: slow, so only on request.
            log_file: std::env::var_os("MPSCHED_BMV2_LOG")
                .map(|d| std::path::PathBuf::from(d).join(format!("{}.log", ns.name()))),
            program: prog.p4,
        };
        let mut switch = Bmv2Switch::start(ns, &opts).map_err(netns_error)?;
        (prog.configure)(&mut switch.cli, tables).map_err(netns_error)?;
        let prober = if prober_needed {
            Some(crate::hula::Prober::start(ns, tables).map_err(netns_error)?)
        } else {
            None
        };
        Ok(Box::new(Bmv2Plane {
            switch: Mutex::new(switch),
            tables: tables.clone(),
            prog,
            prober,
        }))
    }
}

/// One running switch.
struct Bmv2Plane {
    /// A HULA ToR's prober: first, so that it stops before the switch (fields drop in order).
    prober: Option<crate::hula::Prober>,
    switch: Mutex<Bmv2Switch>,
    tables: NodeTables,
    prog: &'static Bmv2Program,
}

impl Bmv2Plane {
    fn read(&self, register: &str) -> Option<Vec<u64>> {
        let mut sw = self.switch.lock().unwrap_or_else(|e| e.into_inner());
        sw.cli.register_read_all(register).ok()
    }
}

/// BMv2's registers are read through its snapshot (the CLI's `register_read`); writes and
/// table entries through the control channel are not offered yet.
impl ProgramControl for Bmv2Plane {
    fn control_listing(&self) -> ControlListing {
        snapshot_control(self)
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        snapshot_register_of(self, name, index)
    }
}

impl SwitchPlane for Bmv2Plane {
    fn weights(&self) -> Vec<(u8, Vec<u16>)> {
        if self.tables.switch.splits.is_empty() {
            return Vec::new();
        }
        let Some(all) = self.read("MpsIngress.split_stage.split_weight") else {
            return Vec::new();
        };
        self.tables
            .switch
            .splits
            .iter()
            .enumerate()
            .map(|(slot, s)| {
                let at = slot * control::MAX_PATHS;
                let ws = all[at..at + s.ports.len()].iter().map(|&w| w as u16).collect();
                (s.group, ws)
            })
            .collect()
    }

    fn marker_backlog_bytes(&self, port: PortId) -> Option<u64> {
        if self.tables.markers.is_empty() {
            return None;
        }
        let all = self.read("MpsEgress.marker_backlog_scaled")?;
        all.get(usize::from(port)).map(|b| b / VQ_SCALE_PER_BYTE)
    }

    fn snapshot(&self) -> Option<BTreeMap<String, u64>> {
        let mut sw = self.switch.lock().unwrap_or_else(|e| e.into_inner());
        let mut regs = (self.prog.snapshot)(&mut sw.cli, &self.tables).ok()?;
        if let Some(p) = &self.prober {
            regs.extend(p.registers());
        }
        Some(regs)
    }
}
