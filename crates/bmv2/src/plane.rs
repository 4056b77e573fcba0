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
//! A switch port of several strict-priority queues is BMv2's own ([`crate::queues`]): the switch
//! starts with `--priority-queues 8`, the port's htb keeps the link's rate over one deep pfifo,
//! and BMv2's queues fill behind it once its socket's send buffer is full. Once an interface's
//! pfifo holds more than that buffer (about 80 full frames) the same happens on ports of one
//! queue: BMv2's 64-packet queue fills first (`docs/performance.md`, "Strict priority on BMv2").
//! Ports of weighted queues (`wrr`, `drr`) are refused ([`Bmv2Planes::port_queues`]).
//!
//! `MPSCHED_BMV2_LOG=DIR` writes each switch's per-packet log to `DIR/<namespace>.log`.

use crate::control;
use crate::programs::{self, Bmv2Program};
use crate::queues;
use crate::switch::{Bmv2Switch, SwitchOptions};
use crate::{toolchain, Bmv2Error};
use mpsched_core::control::{ControlError, ControlListing, ProgramControl};
use mpsched_core::marker::VQ_SCALE_PER_BYTE;
use mpsched_core::packet::PortId;
use mpsched_netns::backend::NetnsError;
use mpsched_netns::dataplane::NodeTables;
use mpsched_netns::ns::Netns;
use mpsched_netns::switchplane::{snapshot_control, snapshot_register_of, QueuesServedBy, SwitchPlane, SwitchPlanes};
use mpsched_programs::SwitchProgram;
use mpsched_topo::QueueDiscipline;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long one snapshot serves the control channel's register reads. A control loop reads
/// every class of every port in one go (PMQECN's: two registers of 8 classes per port, and
/// more): with a snapshot each, a CLI round trip per register array, a step of PMQECN's took
/// over a second on BMv2 (7 steps in a 10 s run, each dividing the arrivals by the 100 ms it
/// should have taken). A write drops it.
const READS_SHARE_A_SNAPSHOT_FOR: Duration = Duration::from_millis(10);

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

    /// Strict priority by BMv2's own priority queues ([`crate::queues`]); weighted queues are
    /// refused: BMv2 has no weights, and the kernel's weighted classes after it do not see the
    /// backlog (BMv2's single queue holds it), so they would split the link as the packets
    /// arrive, not by the weights (measured, docs/performance.md).
    fn port_queues(&self, discipline: &QueueDiscipline) -> Result<QueuesServedBy, String> {
        match discipline {
            QueueDiscipline::StrictPriority => Ok(QueuesServedBy::Switch),
            QueueDiscipline::Wrr(_) | QueueDiscipline::Drr(_) | QueueDiscipline::Fifo => Err(
                "BMv2 serves several queues by strict priority only (`discipline = \"strict-priority\"`); \
                 `wrr` and `drr` ports run on the simulator and the eBPF backend (--backend netns)"
                    .into(),
            ),
        }
    }

    fn own_queues_description(&self) -> Option<String> {
        Some(
            "strict priority by BMv2's priority queues (simple_switch --priority-queues 8, each queue's depth the \
             link's queue_pkts); the port's rate is its htb's, which holds BMv2 back once the send buffer of \
             BMv2's socket (about 80 full frames) and BMv2's 128-frame output buffer are full"
                .into(),
        )
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
            priority_queues: queues::priority_queues(prog, tables),
        };
        queues::check(tables).map_err(netns_error)?;
        let mut switch = Bmv2Switch::start(ns, &opts).map_err(netns_error)?;
        (prog.configure)(&mut switch.cli, tables).map_err(netns_error)?;
        queues::configure(&mut switch.cli, prog, tables).map_err(netns_error)?;
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
            reads: Mutex::new(None),
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
    /// The snapshot register reads share, and when it was taken.
    reads: Mutex<Option<(Instant, BTreeMap<String, u64>)>>,
}

impl Bmv2Plane {
    fn read(&self, register: &str) -> Option<Vec<u64>> {
        let mut sw = self.switch.lock().unwrap_or_else(|e| e.into_inner());
        sw.cli.register_read_all(register).ok()
    }
}

/// BMv2's registers are read through its snapshot (the CLI's `register_read`; reads within
/// [`READS_SHARE_A_SNAPSHOT_FOR`] of one share it) and written where the program's control
/// plane offers it ([`Bmv2Program::write_register`]: vq-wrr's `vq_weight`, PMQECN's class
/// registers); table entries through the control channel are not offered yet.
impl ProgramControl for Bmv2Plane {
    fn control_listing(&self) -> ControlListing {
        let mut listing = snapshot_control(self);
        for r in &mut listing.registers {
            r.writable = self.prog.writable_registers.contains(&r.name.as_str());
        }
        listing
    }

    fn read_register(&self, name: &str, index: usize) -> Result<u64, ControlError> {
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        if reads
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= READS_SHARE_A_SNAPSHOT_FOR)
        {
            let snap = self
                .snapshot()
                .ok_or_else(|| ControlError::Unsupported(format!("register `{name}`: the switch cannot be read")))?;
            *reads = Some((Instant::now(), snap));
        }
        let (_, snap) = reads.as_ref().expect("just taken");
        mpsched_core::control::snapshot_register(snap, name, index)
    }

    fn write_register(&mut self, name: &str, index: usize, value: u64) -> Result<(), ControlError> {
        *self.reads.lock().unwrap_or_else(|e| e.into_inner()) = None;
        let Some(write) = self.prog.write_register else {
            snapshot_register_of(self, name, index)?;
            return Err(ControlError::ReadOnly(name.to_string()));
        };
        let mut sw = self.switch.lock().unwrap_or_else(|e| e.into_inner());
        write(&mut sw.cli, name, index, value)
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

    fn set_queue_depth(&mut self, port: PortId, queue: u8, pkts: u32) -> Option<Result<(), ControlError>> {
        let q = self
            .tables
            .port_queues
            .get(usize::from(port))
            .filter(|q| q.queues > 1)?;
        if queue >= q.queues {
            return Some(Err(ControlError::Unsupported(format!(
                "port {port} has {} queues, no queue {queue}",
                q.queues
            ))));
        }
        let mut sw = self.switch.lock().unwrap_or_else(|e| e.into_inner());
        Some(
            sw.cli
                .run(&format!("set_queue_depth {} {port} {queue}", pkts.max(1)))
                .map(|_| ())
                .map_err(|e| ControlError::Unsupported(format!("BMv2: {e}"))),
        )
    }
}
