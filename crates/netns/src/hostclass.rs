//! iperf3's control traffic in its flow's class: `bpf/host_class.bpf.c` at TC egress of the
//! interfaces of every host that runs an iperf3 client or server of a flow with a DSCP.
//!
//! iperf3 marks only its data with `-S`; its control connection and its UDP streams' opening
//! datagrams leave at DSCP 0 (checked with a capture), the lowest class of a port of several
//! queues. Under strict priority that class is starved while the others are backlogged, so a
//! client whose opening exchange comes late waited until the other classes stopped, and its
//! whole test ran after the run (Table 1's SP, now and then). The program gives those packets
//! their flow's DSCP, as if iperf3 set its control socket's TOS too.

use crate::backend::NetnsError;
use crate::dataplane::{bpf, update_map};
use crate::ns::Netns;
use libbpf_rs::{ObjectBuilder, TcHook, TC_EGRESS};
use std::os::fd::AsFd;

/// The compiled object, built by `build.rs`.
pub static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/host_class.bpf.o"));
/// `HC_MAX_PORTS`: server ports one host's map holds.
pub const MAX_PORTS: usize = 256;

/// `struct hc_key`: a flow's far end as a host sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FarFlow {
    /// The other host's address, network byte order (as the packet holds it).
    pub addr_be: u32,
    /// The flow's server port.
    pub port: u16,
    /// Padding.
    pub pad: u16,
}

const _: () = assert!(std::mem::size_of::<FarFlow>() == 8);
// SAFETY: repr(C), integers only, no implicit padding (8 bytes, pinned above).
unsafe impl crate::layout::Pod for FarFlow {}

/// Load the program for one host, its map holding `flows` (each flow's far end and DSCP, none
/// of DSCP 0), and attach it at TC egress of `ifnames`, in namespace `n`. Nothing to keep:
/// the filters hold the program, and the run removes the namespace with them.
pub fn attach(n: &Netns, ifnames: &[String], ports: &[(FarFlow, u8)]) -> Result<(), NetnsError> {
    if ports.is_empty() || ifnames.is_empty() {
        return Ok(());
    }
    if ports.len() > MAX_PORTS {
        return Err(NetnsError::Unsupported(format!(
            "{} iperf3 flows with a DSCP at host namespace {}: the control-traffic program holds {MAX_PORTS}",
            ports.len(),
            n.name()
        )));
    }
    n.enter(|| -> Result<(), NetnsError> {
        let open = bpf(
            || "open host_class.bpf.o".into(),
            ObjectBuilder::default().open_memory(OBJECT),
        )?;
        let obj = bpf(|| "load host_class.bpf.o (verifier)".into(), open.load())?;
        for (far, dscp) in ports {
            update_map(&obj, "hc_flows", far, dscp)?;
        }
        let prog = obj
            .progs_mut()
            .find(|p| p.name() == "host_class")
            .ok_or_else(|| NetnsError::Unsupported("host_class missing from its object".into()))?;
        for ifname in ifnames {
            let ifindex = n_ifindex(ifname)?;
            let what = || format!("attach host_class to {ifname} in {}", n.name());
            crate::dataplane::ensure_clsact(&prog, ifindex)?;
            let mut hook = TcHook::new(prog.as_fd());
            hook.ifindex(ifindex as i32)
                .replace(true)
                .handle(1)
                .priority(1)
                .attach_point(TC_EGRESS);
            bpf(what, hook.attach())?;
        }
        Ok(())
    })?
}

/// `ifname`'s index in the calling thread's namespace.
fn n_ifindex(ifname: &str) -> Result<u32, NetnsError> {
    let name =
        std::ffi::CString::new(ifname).map_err(|_| NetnsError::Unsupported(format!("interface name {ifname:?}")))?;
    // SAFETY: a NUL-terminated name, only read.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(NetnsError::Unsupported(format!("no interface {ifname}"))),
        i => Ok(i),
    }
}
