//! `hula.h`'s map layouts as `#[repr(C)]` Rust structs, each pinned to the header's
//! `HULA_SIZEOF_*` by a compile-time assertion (the C side asserts the same sizes).

use crate::layout::Pod;

/// `HULA_MAX_K`: most best hops per destination ToR.
pub const MAX_K: usize = 4;
/// `HULA_MAX_SUBFLOWS`: subflows a connection entry tracks.
pub const MAX_SUBFLOWS: usize = 4;
/// `HULA_MAX_TORS`: most ToRs (entries of the `best` map).
pub const MAX_TORS: u16 = 4096;
/// `HULA_NO_PORT`: an empty slot's port.
pub const NO_PORT: u16 = 0xffff;
/// `HULA_PROBE_FRAME_BYTES`.
pub const PROBE_FRAME_BYTES: usize = 64;

/// `HULA_F_TEST_CLOCK`: time is `test_clock_us`.
pub const F_TEST_CLOCK: u32 = 1;
/// `HULA_F_MP`: MP-HULA.
pub const F_MP: u32 = 2;
/// `HULA_F_TOR`: the switch has a ToR id.
pub const F_TOR: u32 = 4;

/// `HULA_DIR_*`, as `mpsched_core::probe::PortDir`.
pub const DIR_HOST: u32 = 0;
/// A port to a lower level.
pub const DIR_DOWN: u32 = 1;
/// A port to a higher level.
pub const DIR_UP: u32 = 2;
/// A port to the same level.
pub const DIR_NONE: u32 = 3;

/// `struct hula_node` (80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct HulaNode {
    pub own_ip: u32,
    pub flags: u32,
    pub hash_seed: u32,
    pub table_mask: u32,
    pub assoc_mask: u32,
    pub conn_mask: u32,
    pub tor_id: u16,
    pub n_tors: u16,
    pub up_mask: u16,
    pub down_mask: u16,
    pub best_k: u32,
    pub log2_tau: u32,
    pub trigger_ifindex: u32,
    pub pad: u32,
    pub tau_us: u64,
    pub gap_us: u64,
    pub ageing_us: u64,
    pub test_clock_us: u64,
}

/// `struct hula_port_cfg` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct PortCfg {
    pub util_scale: u64,
    pub dir: u32,
    pub pad: u32,
}

/// `struct hula_txutil` (24 bytes; the lock is the kernel's).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct TxUtil {
    pub lock: u32,
    pub pad: u32,
    pub bytes: u64,
    pub last_us: u64,
}

/// `struct hula_hop`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Hop {
    pub port: u16,
    pub pad: u16,
    pub util: u32,
    pub time_us: u64,
}

/// `struct hula_best` (72 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Best {
    pub lock: u32,
    pub pad: u32,
    pub hop: [Hop; MAX_K],
}

impl Best {
    /// Every slot empty.
    pub fn empty() -> Best {
        let hop = Hop {
            port: NO_PORT,
            ..Hop::default()
        };
        Best {
            hop: [hop; MAX_K],
            ..Best::default()
        }
    }
}

/// `struct hula_flowlet` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Flowlet {
    pub tag: u32,
    pub port: u16,
    pub valid: u8,
    pub pad: u8,
    pub last_us: u64,
}

/// `struct hula_aux` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Aux {
    pub tag: u32,
    pub flags: u8,
    pub pad: u8,
    pub pad2: u16,
    pub key_a: u64,
    pub key_b: u64,
}

/// `struct hula_assoc` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Assoc {
    pub tag: u32,
    pub subflow: u8,
    pub count: u8,
    pub valid: u8,
    pub pad: u8,
    pub conn_id: u64,
}

/// `struct hula_token` (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Token {
    pub token: u32,
    pub assoc_slot: u32,
    pub valid: u32,
    pub pad: u32,
}

/// `struct hula_conn` (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
#[allow(missing_docs)]
pub struct Conn {
    pub conn_id: u64,
    pub port: [u16; MAX_SUBFLOWS],
    pub last_us: [u64; MAX_SUBFLOWS],
    pub rr: u8,
    pub valid: u8,
    pub pad: [u8; 6],
}

/// `struct hula_probe_tmpl`: the probe frame a ToR originates.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ProbeTmpl(pub [u8; PROBE_FRAME_BYTES]);

impl Default for ProbeTmpl {
    fn default() -> Self {
        ProbeTmpl([0; PROBE_FRAME_BYTES])
    }
}

const _: () = {
    assert!(std::mem::size_of::<HulaNode>() == 80);
    assert!(std::mem::size_of::<PortCfg>() == 16);
    assert!(std::mem::size_of::<TxUtil>() == 24);
    assert!(std::mem::size_of::<Best>() == 72);
    assert!(std::mem::size_of::<Flowlet>() == 16);
    assert!(std::mem::size_of::<Aux>() == 24);
    assert!(std::mem::size_of::<Assoc>() == 16);
    assert!(std::mem::size_of::<Token>() == 16);
    assert!(std::mem::size_of::<Conn>() == 56);
    assert!(std::mem::size_of::<ProbeTmpl>() == PROBE_FRAME_BYTES);
};

// SAFETY: repr(C) structs of integers and integer arrays without implicit padding (the sizes
// above are the sums of their fields, pinned to hula.h).
unsafe impl Pod for HulaNode {}
unsafe impl Pod for PortCfg {}
unsafe impl Pod for TxUtil {}
unsafe impl Pod for Best {}
unsafe impl Pod for Flowlet {}
unsafe impl Pod for Aux {}
unsafe impl Pod for Assoc {}
unsafe impl Pod for Token {}
unsafe impl Pod for Conn {}
unsafe impl Pod for ProbeTmpl {}
