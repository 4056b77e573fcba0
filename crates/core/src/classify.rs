//! The switch's multi-field classifier: rules on a packet's source, destination and DSCP that
//! give it a class, as a DiffServ boundary node's classifier and marker do (RFC 2475 §2.3).
//!
//! A port with several queues serves a packet from the queue of its DSCP class, `dscp >> 3`,
//! on every backend, and a program that places packets by class (vq-wrr, PMQECN) reads the same
//! bits. So a rule picks the queue by rewriting the packet's DSCP to the class selector of that
//! queue (`queue << 3`, CS0 to CS7, RFC 2474 §4.2.2) at the switch's ingress, before anything
//! reads it: every port and program after it, on this switch and the next, sees the new class.
//! The two ECN bits are left as they were. The first rule that matches wins; a packet no rule
//! matches keeps its DSCP.
//!
//! Two kinds of packet are never classified, on every backend: those from the switch's own
//! address (a program's rate feedback routed through it), and those that arrive as CS7
//! ([`NETWORK_CONTROL_DSCP`], network control, RFC 4594), which is what every switch's rate
//! feedback carries, so that no rule at a later switch demotes another's feedback into a data
//! class. A rule may pick queue 7: the packet is then network control everywhere after (P4QCN,
//! for one, never samples it).

use crate::packet::{Ipv4, PacketMeta};
use serde::{Deserialize, Serialize};

/// Rules a switch holds at most (eBPF scans them in a bounded loop, P4 holds them in a table
/// of this size).
pub const MAX_CLASS_RULES: usize = 16;

/// Queues a rule can name: the eight class selectors.
pub const MAX_CLASS_QUEUES: u8 = 8;

/// CS7, network control: the DSCP the classifier leaves alone (and the programs' rate feedback
/// carries: `mpsched_programs::pmqecn::cp::FEEDBACK_DSCP`).
pub const NETWORK_CONTROL_DSCP: u8 = 56;

/// One classifier rule. An unset field matches anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassRule {
    /// Source network (host bits ignored) and prefix length, 0 (any) to 32.
    pub src: Ipv4,
    /// Prefix length of `src`.
    pub src_len: u8,
    /// Destination network and prefix length, as `src`.
    pub dst: Ipv4,
    /// Prefix length of `dst`.
    pub dst_len: u8,
    /// The DSCP the packet arrives with, 0 to 63 (None: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
    /// The queue it picks, 0 to 7: the packet leaves with DSCP `queue << 3`.
    pub queue: u8,
}

/// The mask of a prefix of `len` bits (0 to 32).
pub fn prefix_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

impl ClassRule {
    /// Whether a packet from `src` to `dst` with `dscp` matches.
    pub fn matches(&self, src: Ipv4, dst: Ipv4, dscp: u8) -> bool {
        let (sm, dm) = (prefix_mask(self.src_len), prefix_mask(self.dst_len));
        (src ^ self.src) & sm == 0 && (dst ^ self.dst) & dm == 0 && self.dscp.is_none_or(|d| d == dscp)
    }

    /// The DSCP a matching packet leaves with.
    pub fn dscp_set(&self) -> u8 {
        self.queue << 3
    }

    /// Refuse what no data plane can hold: a prefix longer than 32 bits, a DSCP beyond 6
    /// bits, a queue beyond the eight class selectors.
    pub fn check(&self) -> Result<(), String> {
        if self.src_len > 32 || self.dst_len > 32 {
            return Err(format!("a prefix of {} bits", self.src_len.max(self.dst_len)));
        }
        if self.dscp.is_some_and(|d| d > 63) {
            return Err(format!("DSCP {} is beyond 63", self.dscp.unwrap_or_default()));
        }
        if self.queue >= MAX_CLASS_QUEUES {
            return Err(format!(
                "queue {} is beyond the {MAX_CLASS_QUEUES} class selectors",
                self.queue
            ));
        }
        Ok(())
    }
}

/// Refuse a switch's rules that no data plane can hold: more than [`MAX_CLASS_RULES`], or one
/// that fails [`ClassRule::check`]. Every backend's loader calls this one.
pub fn check_rules(rules: &[ClassRule]) -> Result<(), String> {
    if rules.len() > MAX_CLASS_RULES {
        return Err(format!(
            "{} classifier rules; a switch holds at most {MAX_CLASS_RULES}",
            rules.len()
        ));
    }
    for (i, r) in rules.iter().enumerate() {
        r.check().map_err(|e| format!("classifier rule {i}: {e}"))?;
    }
    Ok(())
}

/// Classify `pkt`, arriving at the switch of address `own_ip`, by the first of `rules` it
/// matches: its new DSCP, or None when no rule matches or the packet is not classified (its own,
/// or network control): the DSCP is left alone.
#[inline]
pub fn classify(rules: &[ClassRule], own_ip: Ipv4, pkt: &mut PacketMeta) -> Option<u8> {
    if pkt.src_ip == own_ip || pkt.dscp == NETWORK_CONTROL_DSCP {
        return None;
    }
    let r = rules.iter().find(|r| r.matches(pkt.src_ip, pkt.dst_ip, pkt.dscp))?;
    pkt.dscp = r.dscp_set();
    Some(pkt.dscp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(src: (Ipv4, u8), dst: (Ipv4, u8), dscp: Option<u8>, queue: u8) -> ClassRule {
        ClassRule {
            src: src.0,
            src_len: src.1,
            dst: dst.0,
            dst_len: dst.1,
            dscp,
            queue,
        }
    }

    #[test]
    fn prefixes_match_by_their_bits() {
        assert_eq!(prefix_mask(0), 0);
        assert_eq!(prefix_mask(8), 0xff00_0000);
        assert_eq!(prefix_mask(32), u32::MAX);
        let r = rule((0x0a00_0100, 24), (0, 0), None, 1);
        assert!(r.matches(0x0a00_01fe, 7, 0));
        assert!(!r.matches(0x0a00_02fe, 7, 0));
    }

    #[test]
    fn the_first_match_wins_and_sets_the_class_selector() {
        let rules = [
            rule((0x0a00_0001, 32), (0, 0), Some(0), 2),
            rule((0x0a00_0001, 32), (0, 0), None, 5),
            rule((0, 0), (0x0a00_0009, 32), None, 1),
        ];
        const OWN: Ipv4 = 0x0aff_0001;
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0002, 1, 2, 100);
        assert_eq!(classify(&rules, OWN, &mut m), Some(16));
        assert_eq!(m.dscp, 16);
        // Now CS2, it no longer matches the first rule's DSCP 0: the second takes it.
        assert_eq!(classify(&rules, OWN, &mut m), Some(40));
        let mut m = PacketMeta::udp(0x0a00_0003, 0x0a00_0004, 1, 2, 100);
        m.dscp = 46;
        assert_eq!(classify(&rules, OWN, &mut m), None);
        assert_eq!(m.dscp, 46, "no rule: the DSCP stays");
        let any = [rule((0, 0), (0, 0), None, 1)];
        let mut m = PacketMeta::udp(0x0a00_0003, 0x0a00_0004, 1, 2, 100);
        m.dscp = NETWORK_CONTROL_DSCP;
        assert_eq!(classify(&any, OWN, &mut m), None, "network control is left alone");
        let mut m = PacketMeta::udp(OWN, 0x0a00_0004, 1, 2, 100);
        assert_eq!(classify(&any, OWN, &mut m), None, "the switch's own packet too");
        assert_eq!(m.dscp, 0);
    }

    #[test]
    fn what_no_plane_holds_is_refused() {
        assert!(rule((0, 33), (0, 0), None, 0).check().is_err());
        assert!(rule((0, 0), (0, 0), Some(64), 0).check().is_err());
        assert!(rule((0, 0), (0, 0), None, 8).check().is_err());
        assert!(rule((0, 0), (0, 0), Some(63), 7).check().is_ok());
        let ok = rule((0, 0), (0, 0), None, 1);
        assert!(check_rules(&[ok; MAX_CLASS_RULES]).is_ok());
        assert!(check_rules(&[ok; MAX_CLASS_RULES + 1])
            .unwrap_err()
            .contains("at most 16"));
        let e = check_rules(&[ok, rule((0, 0), (0, 0), None, 9)]).unwrap_err();
        assert!(e.contains("rule 1") && e.contains("queue 9"), "{e}");
    }
}
