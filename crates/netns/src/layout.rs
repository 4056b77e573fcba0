//! The map layouts of `bpf/mpsched.h`, as `#[repr(C)]` Rust structs.
//!
//! The header is the one place that fixes them; its `MPS_SIZEOF_*` constants are read by
//! `build.rs`, and the assertions below fail the build if a struct here drifts from it (the C
//! side asserts the same constants with `_Static_assert`).

#![allow(missing_docs)]

/// Constants generated from `bpf/mpsched.h`.
pub mod h {
    include!(concat!(env!("OUT_DIR"), "/mpsched_h.rs"));
}

pub const MAX_PATHS: usize = h::MAX_PATHS as usize;
pub const MAX_PORTS: usize = h::MAX_PORTS as usize;
pub const MAX_GROUPS: usize = h::MAX_GROUPS as usize;
/// Entries of the LPM routes map.
pub const MAX_ROUTES: usize = h::MAX_ROUTES as usize;
/// Entries of the ECMP groups map.
pub const MAX_ECMP_GROUPS: usize = h::MAX_ECMP_GROUPS as usize;

/// `struct mps_node`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Node {
    pub own_ip: u32,
    pub feedback_port: u16,
    pub n_splits: u8,
    pub n_confluences: u8,
    pub flags: u32,
    pub test_draws_n: u32,
    pub test_clock_ns: u64,
    pub hash_seed: u32,
    pub n_class_rules: u8,
    pub pad: [u8; 3],
}

/// `struct mps_class_rule`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ClassRule {
    pub src: u32,
    pub src_mask: u32,
    pub dst: u32,
    pub dst_mask: u32,
    pub dscp: u8,
    pub dscp_any: u8,
    pub dscp_set: u8,
    pub pad: u8,
}

impl From<&mpsched_core::classify::ClassRule> for ClassRule {
    fn from(r: &mpsched_core::classify::ClassRule) -> Self {
        use mpsched_core::classify::prefix_mask;
        let (src_mask, dst_mask) = (prefix_mask(r.src_len), prefix_mask(r.dst_len));
        ClassRule {
            src: r.src & src_mask,
            src_mask,
            dst: r.dst & dst_mask,
            dst_mask,
            dscp: r.dscp.unwrap_or(0),
            dscp_any: u8::from(r.dscp.is_none()),
            dscp_set: r.dscp_set(),
            pad: 0,
        }
    }
}

/// `struct mps_ecmp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecmp {
    pub n_ports: u32,
    pub ports: [u16; MAX_PORTS],
}

/// `struct mps_port`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Port {
    pub ifindex: u32,
    pub own_mac: [u8; 6],
    pub peer_mac: [u8; 6],
}

/// `struct mps_split`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Split {
    pub lock: u32,
    pub src_ip: u32,
    pub dst_ip: u32,
    pub group: u8,
    pub n_paths: u8,
    pub sched: u8,
    pub cursor: u8,
    pub ports: [u16; MAX_PATHS],
    pub rs_lo: [u8; MAX_PATHS],
    pub rs_hi: [u8; MAX_PATHS],
    pub weights: [u16; MAX_PATHS],
    pub remaining: [u16; MAX_PATHS],
    pub adjust: [u32; MAX_PATHS],
    pub groups: u16,
    pub groups_left: u16,
    pub min_weight: u16,
    pub max_step: u16,
    pub feedback_ports: u16,
    pub pad: u16,
    pub drop_left: u32,
    pub avoidance_drop_pkts: u32,
    pub path_pkts: [u64; MAX_PATHS],
    pub feedback_rx: u64,
    pub windows: u64,
    pub adjustments: u64,
    pub avoidance_events: u64,
    pub avoidance_drops: u64,
}

/// `struct mps_confluence`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Confluence {
    pub lock: u32,
    pub src_ip: u32,
    pub dst_ip: u32,
    pub splitter_ip: u32,
    pub group: u8,
    pub n_paths: u8,
    pub pad: u16,
    pub every: u32,
    pub ingress_port: [u16; MAX_PATHS],
    pub return_port: [u16; MAX_PATHS],
    pub ce_pending: [u32; MAX_PATHS],
    pub ce_arrivals: u64,
    pub feedback_sent: u64,
}

/// `struct mps_marker`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Marker {
    pub lock: u32,
    pub pad: u32,
    pub rate_bps: u64,
    pub max_elapsed_ns: u64,
    pub threshold_scaled: u64,
    pub limit_scaled: u64,
    pub backlog_scaled: u64,
    pub last_ns: u64,
    pub marked: u64,
    pub not_ect_over_threshold: u64,
    pub overflow: u64,
}

/// `struct mps_port_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PortStats {
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
}

/// `struct mps_route_key`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteKey {
    pub prefixlen: u32,
    /// Network byte order.
    pub addr: [u8; 4],
}

/// `enum mps_counter`, in order, with the names the Rust programs give them.
pub const COUNTERS: [&str; 10] = [
    "no_route",
    "ttl_expired",
    "avoidance",
    "feedback_rx",
    "feedback_unknown_group",
    "local",
    "not_ipv4",
    "malformed",
    "redirect_failed",
    "feedback_untrusted_port",
];

const _: () = {
    assert!(COUNTERS.len() as u64 == h::C_MAX);
    assert!(std::mem::size_of::<Node>() as u64 == h::SIZEOF_NODE);
    assert!(std::mem::size_of::<Port>() as u64 == h::SIZEOF_PORT);
    assert!(std::mem::size_of::<Split>() as u64 == h::SIZEOF_SPLIT);
    assert!(std::mem::size_of::<Confluence>() as u64 == h::SIZEOF_CONFLUENCE);
    assert!(std::mem::size_of::<Marker>() as u64 == h::SIZEOF_MARKER);
    assert!(std::mem::size_of::<PortStats>() as u64 == h::SIZEOF_PORT_STATS);
    assert!(std::mem::size_of::<RouteKey>() == 8);
    assert!(std::mem::size_of::<Ecmp>() as u64 == h::SIZEOF_ECMP);
    assert!(std::mem::size_of::<ClassRule>() as u64 == h::SIZEOF_CLASS_RULE);
    assert!(h::MAX_CLASS_RULES as usize == mpsched_core::classify::MAX_CLASS_RULES);
    assert!(h::NETWORK_CONTROL_DSCP == mpsched_core::classify::NETWORK_CONTROL_DSCP as u64);
    assert!(h::NETWORK_CONTROL_DSCP == h::RATE_FEEDBACK_DSCP);
    // The paced flows' payloads (crates/core/src/rate_wire.rs).
    use mpsched_core::rate_wire as rw;
    assert!(h::RATE_DATA_MAGIC == rw::DATA_MAGIC as u64);
    assert!(h::RATE_CNP_MAGIC == rw::CNP_MAGIC as u64);
    assert!(h::RATE_FEEDBACK_MAGIC == rw::FEEDBACK_MAGIC as u64);
    assert!(h::RATE_DATA_HEADER_BYTES == rw::DATA_HEADER_BYTES as u64);
    assert!(h::RATE_CNP_BYTES == rw::CNP_BYTES as u64);
    assert!(h::SIZEOF_RATE_FEEDBACK == rw::FEEDBACK_BYTES as u64);
    use mpsched_programs::pmqecn::cp;
    assert!(h::RATE_FEEDBACK_PORT == cp::FEEDBACK_PORT as u64);
    assert!(h::RATE_FEEDBACK_DSCP == cp::FEEDBACK_DSCP as u64);
};

/// Plain-old-data map values: viewed as bytes to write a map, read back from bytes.
///
/// # Safety
/// Implementors are `#[repr(C)]`, `Copy`, have no padding the kernel would not accept, and
/// every bit pattern is a valid value.
pub unsafe trait Pod: Copy + Default {
    /// The value's bytes.
    fn as_bytes(&self) -> &[u8] {
        // SAFETY: Pod types are repr(C) plain data.
        unsafe { std::slice::from_raw_parts((self as *const Self).cast::<u8>(), std::mem::size_of::<Self>()) }
    }

    /// A value from bytes (at least `size_of::<Self>()` of them).
    fn from_bytes(b: &[u8]) -> Self {
        let mut v = Self::default();
        let n = std::mem::size_of::<Self>().min(b.len());
        // SAFETY: any bit pattern is a valid Pod value; n is within both buffers.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), (&mut v as *mut Self).cast::<u8>(), n) };
        v
    }
}

// SAFETY: all are repr(C) structs of integers and integer arrays, laid out without implicit
// padding (the size assertions above pin them to the header).
unsafe impl Pod for Node {}
unsafe impl Pod for Port {}
unsafe impl Pod for Split {}
unsafe impl Pod for Confluence {}
unsafe impl Pod for Marker {}
unsafe impl Pod for PortStats {}
unsafe impl Pod for RouteKey {}
unsafe impl Pod for Ecmp {}
unsafe impl Pod for ClassRule {}
unsafe impl Pod for u32 {}
// SAFETY: as u32.
unsafe impl Pod for u16 {}
// SAFETY: as u32.
unsafe impl Pod for u8 {}
unsafe impl Pod for u64 {}
