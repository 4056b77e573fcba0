//! The switch program at the level of whole frames: the reference for `bpf/mpsched.bpf.c`.
//!
//! [`MultipathSwitch`] decides on parsed metadata, as the simulator needs. A kernel data plane
//! sees bytes, so [`FrameSwitch`] adds what the eBPF program does around the same decisions:
//! - it parses each frame with [`parse_frame`]; a frame that is not IPv4 (ARP, IPv6, custom
//!   headers under EtherType 0x88B5, which the multipath switch does not parse) goes to the
//!   node's own stack ([`FrameAction::ToStack`]); a malformed one (runt, truncated IPv4 header,
//!   IHL < 5, version not 4, bad total length) is counted and dropped. IPv4 options are skipped
//!   and fragments are forwarded like any other packet (a non-first fragment has no ports);
//! - a packet addressed to this node that is not feedback goes to the node's stack;
//! - it counts packets received and sent per port;
//! - egress ports with a marker run a [`VirtualQueueMarker`] (the kernel's TC egress hook runs
//!   before the qdisc and cannot read its depth).

use crate::marker::{MarkOutcome, VirtualQueueMarker};
use crate::packet::{Ecn, PortId};
use crate::program::{Ctx, DropReason, Emit, Program, Verdict};
use crate::rng::RandomSource;
use crate::sched::ConfigError;
use crate::switch::{MultipathSwitch, SwitchConfig};
use crate::wire::{parse_frame, ParseError, ETH_HDR_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most ports a node may have (`MPS_MAX_PORTS` in `bpf/mpsched.h`).
pub const MAX_PORTS: usize = 16;

/// An egress marker as the control plane installs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerConfig {
    /// The egress port.
    pub port: PortId,
    /// The link's rate, at which the virtual queue drains.
    pub rate_bps: u64,
    /// Mark at this much backlog.
    pub threshold_bytes: u64,
    /// The queue's capacity.
    pub limit_bytes: u64,
}

/// What happens to a frame at ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameAction {
    /// Sent out of a port (`bpf_redirect`).
    Redirect(PortId),
    /// Dropped and counted.
    Drop(DropReason),
    /// A feedback packet for this node: counted and absorbed.
    Consume,
    /// Handed to the node's own network stack (`TC_ACT_OK`).
    ToStack,
}

/// The outcome of one frame at ingress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameOutcome {
    /// What happens to the frame.
    pub action: FrameAction,
    /// Its TTL after the program (None when it was not parsed as IPv4).
    pub ttl: Option<u8>,
    /// Its ECN field after the program.
    pub ecn: Option<Ecn>,
    /// Its DSCP after the program, when that is not the one it arrived with (the classifier
    /// gave it a class).
    pub remarked_dscp: Option<u8>,
    /// A feedback packet generated alongside.
    pub emit: Option<Emit>,
}

/// The frame-level switch.
pub struct FrameSwitch {
    sw: MultipathSwitch,
    feedback_port: u16,
    markers: Vec<Option<VirtualQueueMarker>>,
    not_ipv4: u64,
    malformed: u64,
    rx_pkts: [u64; MAX_PORTS],
    tx_pkts: [u64; MAX_PORTS],
    n_ports: usize,
}

impl FrameSwitch {
    /// Build from the switch configuration, the egress markers, the number of ports and a
    /// random source for each splitting group.
    pub fn new(
        config: &SwitchConfig,
        markers: &[MarkerConfig],
        n_ports: usize,
        rng_for_group: impl FnMut(u8) -> Box<dyn RandomSource>,
    ) -> Result<Self, ConfigError> {
        if n_ports > MAX_PORTS {
            return Err(ConfigError(format!(
                "a node has at most {MAX_PORTS} ports, got {n_ports}"
            )));
        }
        let mut m = vec![None; MAX_PORTS];
        for mk in markers {
            let slot = m
                .get_mut(usize::from(mk.port))
                .ok_or_else(|| ConfigError(format!("marker on port {} out of range", mk.port)))?;
            *slot = Some(VirtualQueueMarker::new(mk.rate_bps, mk.threshold_bytes, mk.limit_bytes));
        }
        Ok(FrameSwitch {
            sw: MultipathSwitch::new(config, rng_for_group)?,
            feedback_port: config.feedback_port,
            markers: m,
            not_ipv4: 0,
            malformed: 0,
            rx_pkts: [0; MAX_PORTS],
            tx_pkts: [0; MAX_PORTS],
            n_ports,
        })
    }

    /// A frame arrives on `port`.
    pub fn ingress(&mut self, frame: &[u8], port: PortId) -> FrameOutcome {
        if let Some(c) = self.rx_pkts.get_mut(usize::from(port)) {
            *c += 1;
        }
        // The multipath switch's eBPF and P4 twins parse no custom headers: a frame carrying
        // them (EtherType 0x88B5) is not IPv4 to them, and so to this reference.
        let shimmed = frame.get(12..14) == Some(&crate::headers::ETHERTYPE_SHIM.to_be_bytes()[..]);
        let parsed = if shimmed {
            Err(ParseError::NotIpv4)
        } else {
            parse_frame(frame, self.feedback_port)
        };
        let mut meta = match parsed {
            Ok(m) => m,
            Err(ParseError::NotIpv4) => {
                self.not_ipv4 += 1;
                return FrameOutcome {
                    action: FrameAction::ToStack,
                    ttl: None,
                    ecn: None,
                    remarked_dscp: None,
                    emit: None,
                };
            }
            Err(_) => {
                self.malformed += 1;
                return FrameOutcome {
                    action: FrameAction::Drop(DropReason::Malformed),
                    ttl: None,
                    ecn: None,
                    remarked_dscp: None,
                    emit: None,
                };
            }
        };
        meta.ingress_port = port;
        let arrived_dscp = meta.dscp;
        let mut ctx = Ctx::new();
        let verdict = self.sw.ingress(&mut meta, &mut ctx);
        // The switch program generates at most one packet (a feedback packet), as the eBPF
        // program, which turns the frame itself into it, can.
        let emit = ctx.emitted().first().copied();
        let action = match verdict {
            Verdict::Forward(p) => {
                self.count_tx(p);
                FrameAction::Redirect(p)
            }
            Verdict::Drop(r) => FrameAction::Drop(r),
            Verdict::Consume if meta.feedback().is_some() => FrameAction::Consume,
            Verdict::Consume => FrameAction::ToStack,
        };
        if let Some(e) = emit {
            self.count_tx(e.port);
        }
        FrameOutcome {
            action,
            ttl: Some(meta.ttl),
            ecn: Some(meta.ecn),
            remarked_dscp: (meta.dscp != arrived_dscp).then_some(meta.dscp),
            emit,
        }
    }

    fn count_tx(&mut self, port: PortId) {
        if let Some(c) = self.tx_pkts.get_mut(usize::from(port)) {
            *c += 1;
        }
    }

    /// A frame leaves by `port` at `now_ns`: the marker, if the port has one, may set CE in
    /// `frame` (the IPv4 checksum is updated). Returns the outcome.
    pub fn egress(&mut self, frame: &mut [u8], port: PortId, now_ns: u64) -> MarkOutcome {
        let Some(Some(m)) = self.markers.get_mut(usize::from(port)) else {
            return MarkOutcome::Untouched;
        };
        let ecn = ipv4_tos_offset(frame).map(|at| Ecn::from_bits(frame[at]));
        let out = m.on_frame(now_ns, frame.len() as u32, ecn);
        if out == MarkOutcome::Marked {
            if let Some(at) = ipv4_tos_offset(frame) {
                set_ce(frame, at);
            }
        }
        out
    }

    /// Every register and counter by name (see [`MultipathSwitch::snapshot`]), plus
    /// `counter.not_ipv4`, `counter.malformed`, `port<p>.rx_pkts` / `.tx_pkts` and
    /// `marker<p>.*`.
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        self.sw.snapshot(&mut out);
        out.insert("counter.not_ipv4".into(), self.not_ipv4);
        out.insert("counter.malformed".into(), self.malformed);
        for p in 0..self.n_ports {
            out.insert(format!("port{p}.rx_pkts"), self.rx_pkts[p]);
            out.insert(format!("port{p}.tx_pkts"), self.tx_pkts[p]);
        }
        for (p, m) in self.markers.iter().enumerate() {
            if let Some(m) = m {
                for (k, v) in m.registers() {
                    out.insert(format!("marker{p}.{k}"), v);
                }
            }
        }
        out
    }

    /// The switch inside.
    pub fn switch(&self) -> &MultipathSwitch {
        &self.sw
    }
}

/// Where the TOS byte of an IPv4 frame is, if the frame is IPv4 with a full header.
fn ipv4_tos_offset(frame: &[u8]) -> Option<usize> {
    if frame.len() >= ETH_HDR_BYTES + 20 && frame[12..14] == [0x08, 0x00] {
        Some(ETH_HDR_BYTES + 1)
    } else {
        None
    }
}

/// Set CE in the TOS byte at `at`, updating the IPv4 header checksum (RFC 1624).
fn set_ce(frame: &mut [u8], at: usize) {
    let old = u16::from_be_bytes([frame[at - 1], frame[at]]);
    frame[at] |= 0b11;
    let new = u16::from_be_bytes([frame[at - 1], frame[at]]);
    let ck_at = ETH_HDR_BYTES + 10;
    let ck = u16::from_be_bytes([frame[ck_at], frame[ck_at + 1]]);
    let mut sum = u32::from(!ck) + u32::from(!old) + u32::from(new);
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    frame[ck_at..ck_at + 2].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketMeta;
    use crate::rng::SeededRandom;
    use crate::sched::SchedulerConfig;
    use crate::switch::SplitGroupConfig;
    use crate::table::Route;
    use crate::wire::{emit_udp_frame, internet_checksum};

    fn frame(ecn: Ecn) -> Vec<u8> {
        let mut m = PacketMeta::udp(0x0a00_0001, 0x0a00_0003, 5000, 5001, 100);
        m.ecn = ecn;
        let mut out = Vec::new();
        emit_udp_frame(&m, [2; 6], [4; 6], 1, &[0u8; 58], &mut out);
        out
    }

    fn switch() -> FrameSwitch {
        let mut cfg = SwitchConfig::forwarding(
            0x0aff_0001,
            vec![Route {
                prefix: 0,
                len: 0,
                port: 0,
            }],
        );
        cfg.splits.push(SplitGroupConfig {
            group: 0,
            src_ip: 0x0a00_0001,
            dst_ip: 0x0a00_0003,
            ports: vec![1, 2],
            scheduler: SchedulerConfig::Wrr { weights: vec![2, 1] },
            feedback_ports: vec![1, 2],
        });
        let markers = [MarkerConfig {
            port: 1,
            rate_bps: 8_000_000,
            threshold_bytes: 100,
            limit_bytes: 10_000,
        }];
        FrameSwitch::new(&cfg, &markers, 3, |_| Box::new(SeededRandom::new(1))).unwrap()
    }

    #[test]
    fn a_frame_with_custom_headers_goes_to_the_stack_as_its_ebpf_twin_sends_it() {
        use crate::headers::{Header, HeaderStack, RoutingHeader};
        let mut f = frame(Ecn::NotEct);
        let mut stack = HeaderStack::new();
        stack
            .push(Header::Routing(RoutingHeader {
                conn_id: 7,
                path: 1,
                hops: 0,
            }))
            .unwrap();
        crate::wire::insert_shims(&mut f, &stack);
        let mut sw = switch();
        assert_eq!(sw.ingress(&f, 1).action, FrameAction::ToStack);
        assert_eq!(sw.snapshot()["counter.not_ipv4"], 1);
    }
    #[test]
    fn frames_are_split_and_counted_per_port() {
        let mut sw = switch();
        let got: Vec<_> = (0..3).map(|_| sw.ingress(&frame(Ecn::Ect0), 0).action).collect();
        assert_eq!(
            got,
            [
                FrameAction::Redirect(1),
                FrameAction::Redirect(1),
                FrameAction::Redirect(2)
            ]
        );
        let s = sw.snapshot();
        assert_eq!(s["port0.rx_pkts"], 3);
        assert_eq!(s["port1.tx_pkts"], 2);
        assert_eq!(s["split0.path1_pkts"], 1);
    }

    #[test]
    fn non_ipv4_goes_to_the_stack_and_malformed_is_dropped() {
        let mut sw = switch();
        let mut arp = frame(Ecn::NotEct);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(sw.ingress(&arp, 0).action, FrameAction::ToStack);
        let mut bad = frame(Ecn::NotEct);
        bad[14] = 0x44; // IHL 4
        assert_eq!(sw.ingress(&bad, 0).action, FrameAction::Drop(DropReason::Malformed));
        let s = sw.snapshot();
        assert_eq!((s["counter.not_ipv4"], s["counter.malformed"]), (1, 1));
    }

    #[test]
    fn egress_marking_keeps_the_ipv4_checksum_valid() {
        let mut sw = switch();
        let mut f = frame(Ecn::Ect0);
        assert_eq!(sw.egress(&mut f, 1, 0), MarkOutcome::Untouched);
        let mut g = frame(Ecn::Ect0);
        assert_eq!(sw.egress(&mut g, 1, 0), MarkOutcome::Marked);
        assert_eq!(g[15] & 3, 3);
        assert_eq!(internet_checksum(&g[14..34], 0), 0);
    }
}
