//! The sizes, indices and register values of `p4/include/layout.p4`, generated from it.
//!
//! `build.rs` turns the file's `MPS_*` defines into the constants of [`p4`], as
//! `crates/netns/build.rs` does for `bpf/mpsched.h` ([`mpsched_netns::layout::h`]); the control
//! plane ([`crate::control`]) uses them instead of copies. Where the two files name the same
//! constant they must agree, and the tests below fail when they do not.

/// Constants generated from `p4/include/layout.p4`.
pub mod p4 {
    include!(concat!(env!("OUT_DIR"), "/layout_p4.rs"));
}

/// Paths per group (`MPS_MAX_PATHS`).
pub const MAX_PATHS: usize = p4::MAX_PATHS as usize;
/// Ports with counters, markers and MACs (`MPS_MAX_PORTS`).
pub const MAX_PORTS: usize = p4::MAX_PORTS as usize;
/// Splitting groups and confluence entries (`MPS_MAX_GROUPS`).
pub const MAX_GROUPS: usize = p4::MAX_GROUPS as usize;
/// IPv4 routes (`MPS_MAX_ROUTES`).
pub const MAX_ROUTES: usize = p4::MAX_ROUTES as usize;
/// ECMP groups (`MPS_MAX_ECMP_GROUPS`).
pub const MAX_ECMP_GROUPS: usize = p4::MAX_ECMP_GROUPS as usize;
/// Classifier rules (`MPS_MAX_CLASS_RULES`).
pub const MAX_CLASS_RULES: usize = p4::MAX_CLASS_RULES as usize;
/// Fixed RS draws (`MPS_TEST_DRAWS`).
pub const TEST_DRAWS: usize = p4::TEST_DRAWS as usize;
/// The port the node's own traffic leaves by (`MPS_STACK_PORT`).
pub const STACK_PORT: u16 = p4::STACK_PORT as u16;
/// Mirror session of return port p: p + this (`MPS_SESSION_BASE`).
pub const SESSION_BASE: u16 = p4::SESSION_BASE as u16;
/// The port without an interface where a program's own packets (its rate feedback) are built
/// and recirculated (`MPS_RECIRC_PORT`).
pub const RECIRC_PORT: u16 = p4::RECIRC_PORT as u16;
/// The mirror session whose clones go to [`RECIRC_PORT`] (`MPS_RECIRC_SESSION`).
pub const RECIRC_SESSION: u16 = p4::RECIRC_SESSION as u16;

#[cfg(test)]
mod tests {
    use super::p4;
    use mpsched_netns::layout::{h, COUNTERS};

    fn value(all: &[(&str, u64)], name: &str) -> Option<u64> {
        all.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    /// Every constant both files define (sizes, scheduler kinds, flags, feedback format,
    /// counter indices) has one value in both.
    #[test]
    fn constants_named_in_both_files_are_equal() {
        let shared: Vec<&str> = p4::ALL
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| value(h::ALL, n).is_some())
            .collect();
        for name in &shared {
            assert_eq!(
                value(p4::ALL, name),
                value(h::ALL, name),
                "MPS_{name} differs between p4/include/layout.p4 and bpf/mpsched.h"
            );
        }
        for name in [
            "MAX_PATHS",
            "MAX_PORTS",
            "MAX_GROUPS",
            "MAX_ROUTES",
            "MAX_ECMP_GROUPS",
            "MAX_CLASS_RULES",
            "NETWORK_CONTROL_DSCP",
            "TEST_DRAWS",
            "SCHED_SINGLE",
            "SCHED_RS",
            "SCHED_WRR",
            "SCHED_DWRR",
            "F_TEST_CLOCK",
            "F_TEST_DRAWS",
            "RS_DRAW_MIN",
            "FEEDBACK_MAGIC",
            "FEEDBACK_FRAME_BYTES",
            "RATE_FEEDBACK_MAGIC",
            "SIZEOF_RATE_FEEDBACK",
            "RATE_FEEDBACK_PORT",
            "RATE_FEEDBACK_DSCP",
            "RATE_FEEDBACK_FRAME_BYTES",
            "C_NO_ROUTE",
            "C_MAX",
        ] {
            assert!(shared.contains(&name), "MPS_{name} is no longer in both files");
        }
    }

    /// The constants the P4 side names differently or derives.
    #[test]
    fn derived_p4_constants_follow_the_header() {
        assert_eq!(p4::GROUP_PATHS, h::MAX_GROUPS * h::MAX_PATHS);
        assert_eq!(p4::RS_DRAW_SPAN, h::RS_DRAW_MAX - h::RS_DRAW_MIN + 1);
    }

    /// The counters register's indices are `enum mps_counter`'s, which the kernel backend
    /// names in [`COUNTERS`] (the names the BMv2 snapshot reads them under).
    #[test]
    fn counter_indices_follow_the_enum_and_its_names() {
        assert_eq!(p4::C_MAX as usize, COUNTERS.len());
        for (i, name) in COUNTERS.iter().enumerate() {
            let key = format!("C_{}", name.to_ascii_uppercase());
            assert_eq!(value(p4::ALL, &key), Some(i as u64), "{key}");
            assert_eq!(value(h::ALL, &key), Some(i as u64), "{key}");
        }
    }
}
