//! HULA (Katta et al., SOSR 2016) and MP-HULA (Hernandez Benet et al., NetCompute 2018):
//! probe-driven, utilisation-aware flowlet routing in a multi-rooted tree, and MP-HULA's
//! MPTCP-aware sub-flowlet routing. `README.md` in this folder is the specification the Rust
//! twin (here), the eBPF program (`hula.bpf.c`) and the P4 program (`hula.p4`) follow.

pub mod assoc;
pub mod besthop;
pub mod conn;
pub mod estimator;
mod kernel_frames;
mod registers;
pub use registers::DATA_PLANE_COUNTERS;
pub mod state;
pub mod switch;
pub mod vector_sets;

pub use switch::{canonical_hash, Hula, HulaCounters};

use crate::params::{Param, ParamKind, Params};
use crate::{BuildInput, SwitchProgram, TablesNeed};
use mpsched_core::program::Program;
use mpsched_core::rng::RandomSource;
use mpsched_core::sched::ConfigError;

/// The registry entry for HULA (one best hop per destination ToR).
pub static HULA: HulaProgram = HulaProgram { mp: false };
/// The registry entry for MP-HULA (best k hops, MPTCP association, sub-flowlets).
pub static MPHULA: HulaProgram = HulaProgram { mp: true };

/// Most next hops kept per destination ToR (`best_k`).
pub const MAX_BEST_K: usize = 4;
/// Subflows per connection whose hops the connection table keeps.
pub const MAX_SUBFLOWS: usize = 4;
/// Most slots of each table (flowlets, association, connections): BMv2 sizes registers when it
/// loads the program, so the bound is the same on every backend.
pub const MAX_TABLE_ENTRIES: u64 = 1 << 16;
/// The estimator's byte counter saturates here (2^31; a 400 Gbit/s port at the longest time
/// constant reaches 4.1e8).
pub const UTIL_BYTES_MAX: u64 = 1 << 31;
/// A port must carry at least this many bytes in the estimator's time constant, so that its
/// `util_scale` (2^40 / bytes) stays within 2^32.
pub const MIN_CAP_BYTES: u64 = 256;
/// Longest estimator time constant, µs (a power of two).
pub const MAX_TAU_US: u64 = 8192;
/// Most ports a HULA switch may have (the estimators and port directions are arrays of this
/// size on every backend): a ToR of MP-HULA's Fig. 4 has 16 hosts and 2 uplinks.
pub const MAX_PORTS: usize = 64;
/// Most ToRs (destinations of the best-hop table): ids are 16-bit.
pub const MAX_TORS: usize = 1 << 16;
/// An empty best-hop slot's or connection table's port.
pub const NO_PORT: u16 = 0xFFFF;
/// MTU of an MP-HULA switch's ports other than host ports, on the kernel backends (eBPF and
/// BMv2 in namespaces): a full-size packet grows by the 16-byte connection header between
/// ToRs, and a veth drops a frame longer than its receiving end's MTU.
pub const SWITCH_MTU: u32 = 1600;

const US: u64 = 1_000_000;

const COMMON_PARAMS: [Param; 5] = [
    Param {
        name: "probe_period",
        kind: ParamKind::Time,
        default: 200 * US,
        min: 10 * US,
        // Up to a second: a fabric of software switches (BMv2) cannot carry probes much faster.
        max: 1_000_000 * US,
        power_of_two: false,
        multiple_of: US,
        doc: "probe period at ToRs (whole microseconds, 10us to 1s)",
    },
    Param {
        name: "flowlet_gap",
        kind: ParamKind::Time,
        default: 100 * US,
        min: US,
        max: 1_000_000 * US,
        power_of_two: false,
        multiple_of: US,
        doc: "idle time after which a flow's next packet starts a new flowlet (whole microseconds)",
    },
    Param {
        name: "ageing",
        kind: ParamKind::Time,
        default: 1_000 * US,
        min: US,
        max: 10_000_000 * US,
        power_of_two: false,
        multiple_of: US,
        doc: "a next hop no probe refreshed for this long is forgotten (whole microseconds, more than probe_period)",
    },
    Param {
        name: "util_tau",
        kind: ParamKind::Time,
        default: 512 * US,
        min: US,
        max: MAX_TAU_US * US,
        power_of_two: false,
        multiple_of: US,
        doc: "time constant of the transmit utilisation estimator (a power of two microseconds, up to 8192us)",
    },
    Param {
        name: "table_entries",
        kind: ParamKind::Count,
        default: 4096,
        min: 1,
        max: MAX_TABLE_ENTRIES,
        power_of_two: true,
        multiple_of: 1,
        doc: "flowlet table slots per switch (a power of two, up to 65 536)",
    },
];

const MP_PARAMS: [Param; 8] = [
    COMMON_PARAMS[0],
    COMMON_PARAMS[1],
    COMMON_PARAMS[2],
    COMMON_PARAMS[3],
    COMMON_PARAMS[4],
    Param {
        name: "best_k",
        kind: ParamKind::Count,
        default: 2,
        min: 1,
        max: MAX_BEST_K as u64,
        power_of_two: false,
        multiple_of: 1,
        doc: "next hops kept per destination ToR (1 to 4)",
    },
    Param {
        name: "assoc_entries",
        kind: ParamKind::Count,
        default: 4096,
        min: 1,
        max: MAX_TABLE_ENTRIES,
        power_of_two: true,
        multiple_of: 1,
        doc: "slots of each MPTCP association table (keys, associations, tokens) at a ToR (a power of two, up to 65 536)",
    },
    Param {
        name: "conn_entries",
        kind: ParamKind::Count,
        default: 4096,
        min: 1,
        max: MAX_TABLE_ENTRIES,
        power_of_two: true,
        multiple_of: 1,
        doc: "connection table slots per switch: the next hops of each connection's subflows (a power of two, up to 65 536)",
    },
];

/// HULA or MP-HULA as the registry knows it.
pub struct HulaProgram {
    mp: bool,
}

impl SwitchProgram for HulaProgram {
    fn name(&self) -> &'static str {
        if self.mp {
            "mphula"
        } else {
            "hula"
        }
    }

    fn summary(&self) -> &'static str {
        if self.mp {
            "MP-HULA (NetCompute 2018): best-k next hops by probes, MPTCP subflows of a connection on different hops"
        } else {
            "HULA (SOSR 2016): probes carry path utilisation, flowlets to the least utilised next hop"
        }
    }

    fn params(&self) -> &'static [Param] {
        if self.mp {
            &MP_PARAMS
        } else {
            &COMMON_PARAMS
        }
    }

    fn tables_need(&self) -> TablesNeed {
        TablesNeed::EqualCostGroups
    }

    fn probe_tables(&self) -> bool {
        true
    }

    fn build(&self, input: &BuildInput<'_>) -> Result<Box<dyn Program>, ConfigError> {
        crate::refuse_classifier(self.name(), input)?;
        let err = |e: String| ConfigError(format!("node `{}`: {}: {e}", input.node, self.name()));
        let cfg = HulaConfig::from_params(input.params, self.mp).map_err(err)?;
        Ok(Box::new(Hula::new(input.tables, cfg).map_err(err)?))
    }

    fn build_with_rng(
        &self,
        input: &BuildInput<'_>,
        rng: Box<dyn RandomSource>,
    ) -> Result<Box<dyn Program>, ConfigError> {
        let _ = rng;
        self.build(input)
    }

    fn check_params(&self, params: &Params) -> Result<(), (&'static str, String)> {
        check(params).map(|_| ())
    }

    fn check_port_rate(&self, params: &Params, rate_bps: u64) -> Result<(), (&'static str, String)> {
        let tau_us = params.get("util_tau") / US;
        util_scale(rate_bps, tau_us).map(|_| ()).map_err(|e| ("util_tau", e))
    }

    fn ebpf_object(&self) -> Option<&'static str> {
        Some("hula")
    }

    fn p4_program(&self) -> Option<&'static str> {
        Some("hula")
    }
}

/// HULA's and MP-HULA's parameters in the units the data planes count in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HulaConfig {
    /// MP-HULA (association, connection header, sub-flowlets) or HULA.
    pub mp: bool,
    /// Probe period, µs.
    pub probe_period_us: u64,
    /// Flowlet gap, µs.
    pub flowlet_gap_us: u64,
    /// Ageing time of a best-hop slot, µs.
    pub ageing_us: u64,
    /// The estimator's time constant, µs (a power of two).
    pub tau_us: u64,
    /// log2 of `tau_us`.
    pub log2_tau: u32,
    /// Next hops kept per destination ToR (1 for HULA).
    pub best_k: usize,
    /// Flowlet slots (a power of two).
    pub table_entries: u32,
    /// Slots of each association table (a power of two).
    pub assoc_entries: u32,
    /// Connection table slots (a power of two).
    pub conn_entries: u32,
}

impl HulaConfig {
    /// From checked parameters; refuses a time constant that is not a power of two
    /// microseconds and an ageing time not longer than the probe period.
    pub fn from_params(p: &Params, mp: bool) -> Result<HulaConfig, String> {
        check(p).map_err(|(key, e)| format!("programs.{}.{key}: {e}", if mp { "mphula" } else { "hula" }))?;
        let us = |k: &str| p.get(k) / US;
        let tau_us = us("util_tau");
        Ok(HulaConfig {
            mp,
            probe_period_us: us("probe_period"),
            flowlet_gap_us: us("flowlet_gap"),
            ageing_us: us("ageing"),
            tau_us,
            log2_tau: tau_us.trailing_zeros(),
            best_k: if mp { p.get("best_k") as usize } else { 1 },
            table_entries: p.get("table_entries") as u32,
            assoc_entries: if mp { p.get("assoc_entries") as u32 } else { 1 },
            conn_entries: if mp { p.get("conn_entries") as u32 } else { 1 },
        })
    }
}

/// What bounds cannot say: the time constant a power of two microseconds, the ageing time
/// longer than the probe period.
fn check(p: &Params) -> Result<(), (&'static str, String)> {
    let tau_us = p.get("util_tau") / US;
    if !tau_us.is_power_of_two() {
        return Err((
            "util_tau",
            format!("{tau_us}us is not a power of two microseconds (256us, 512us, 1024us, ...)"),
        ));
    }
    let (ageing, period) = (p.get("ageing") / US, p.get("probe_period") / US);
    if ageing <= period {
        return Err((
            "ageing",
            format!(
                "{ageing}us is not longer than the probe period ({period}us): every next hop would be forgotten between probes"
            ),
        ));
    }
    Ok(())
}

/// Bytes a link of `rate_bps` carries in `tau_us`.
pub fn cap_bytes(rate_bps: u64, tau_us: u64) -> u64 {
    ((u128::from(rate_bps) * u128::from(tau_us)) / 8_000_000).min(u128::from(u64::MAX)) as u64
}

/// The factor turning a port's decayed byte count into Q16 utilisation (`(bytes * scale) >>
/// 24`): `2^40 / cap_bytes`. Refuses a link that carries fewer than [`MIN_CAP_BYTES`] in `tau`.
pub fn util_scale(rate_bps: u64, tau_us: u64) -> Result<u64, String> {
    let cap = cap_bytes(rate_bps, tau_us);
    if cap < MIN_CAP_BYTES {
        return Err(format!(
            "a {rate_bps} bit/s link carries {cap} bytes in the estimator's time constant ({tau_us}us); \
             at least {MIN_CAP_BYTES} are needed: raise util_tau"
        ));
    }
    Ok((1u64 << 40) / cap)
}
