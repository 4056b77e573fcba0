//! The confluence point's ECN handling (Motohashi et al. 2022, Sec. III-C-2, Fig. 7) and the
//! feedback packet format.
//!
//! The confluence point counts CE-marked arrivals of a split flow per path (known by the ingress
//! port). After every `every`-th (16 by default) on a path it sends one feedback packet to the
//! splitting point, naming that path, over another path: the one with the fewest CE arrivals
//! counted towards its own next feedback (ties to the lowest index), so the report avoids the
//! congested path.
//!
//! Feedback packet: IPv4 / UDP from the confluence point to the splitting point, both ports
//! [`DEFAULT_FEEDBACK_PORT`], payload [`FEEDBACK_PAYLOAD_BYTES`] bytes:
//! `magic (4, "MPFB") | group (1) | path (1, 0-based) | reserved (2)`.

use crate::packet::{Ecn, Ipv4, PacketMeta, PortId};
use crate::program::Emit;
use crate::sched::PathIndex;
use crate::MAX_PATHS;

/// UDP port feedback packets are sent to and from.
pub const DEFAULT_FEEDBACK_PORT: u16 = 50_000;
/// `"MPFB"`.
pub const FEEDBACK_MAGIC: u32 = u32::from_be_bytes(*b"MPFB");
/// Feedback payload length.
pub const FEEDBACK_PAYLOAD_BYTES: usize = 8;
/// Feedback frame length on the wire: Ethernet's 60-byte minimum (payload padded).
pub const FEEDBACK_WIRE_BYTES: u32 = 60;
/// The paper's trigger count: one feedback per 16 CE-marked arrivals.
pub const DEFAULT_FEEDBACK_EVERY: u32 = 16;

/// The feedback payload for `group` and `path`.
pub fn feedback_payload(group: u8, path: u8) -> [u8; FEEDBACK_PAYLOAD_BYTES] {
    let m = FEEDBACK_MAGIC.to_be_bytes();
    [m[0], m[1], m[2], m[3], group, path, 0, 0]
}

/// Confluence registers and table entries for one splitting group.
#[derive(Clone, Debug)]
pub struct Confluence {
    n_paths: u8,
    group: u8,
    /// Ingress port of each path (table: port -> path).
    path_ingress_port: [PortId; MAX_PATHS],
    /// Port to send feedback out of, per path it travels on.
    return_port: [PortId; MAX_PATHS],
    /// CE arrivals towards the next feedback, per path.
    ce_pending: [u32; MAX_PATHS],
    every: u32,
    own_ip: Ipv4,
    splitter_ip: Ipv4,
    feedback_port: u16,
    /// CE-marked arrivals counted, all paths.
    pub ce_arrivals: u64,
    /// Feedback packets sent.
    pub feedback_sent: u64,
}

impl Confluence {
    /// A confluence entry. `path_ingress_port[i]` is where path `i` arrives; `return_port[i]` is
    /// where a feedback packet travelling back over path `i` leaves.
    pub fn new(
        group: u8,
        path_ingress_port: &[PortId],
        return_port: &[PortId],
        every: u32,
        own_ip: Ipv4,
        splitter_ip: Ipv4,
        feedback_port: u16,
    ) -> Self {
        assert!(path_ingress_port.len() == return_port.len() && path_ingress_port.len() <= MAX_PATHS);
        let mut pi = [0; MAX_PATHS];
        pi[..path_ingress_port.len()].copy_from_slice(path_ingress_port);
        let mut rp = [0; MAX_PATHS];
        rp[..return_port.len()].copy_from_slice(return_port);
        Confluence {
            n_paths: path_ingress_port.len() as u8,
            group,
            path_ingress_port: pi,
            return_port: rp,
            ce_pending: [0; MAX_PATHS],
            every: every.max(1),
            own_ip,
            splitter_ip,
            feedback_port,
            ce_arrivals: 0,
            feedback_sent: 0,
        }
    }

    /// The path a packet arrived on, from its ingress port.
    pub fn path_of(&self, ingress_port: PortId) -> Option<PathIndex> {
        self.path_ingress_port[..usize::from(self.n_paths)]
            .iter()
            .position(|&p| p == ingress_port)
            .map(|i| i as PathIndex)
    }

    /// Count an arrival of the split flow; returns the feedback packet to send, if one is due.
    #[inline]
    pub fn on_arrival(&mut self, pkt: &PacketMeta) -> Option<Emit> {
        if pkt.ecn != Ecn::Ce {
            return None;
        }
        let path = self.path_of(pkt.ingress_port)?;
        self.ce_arrivals += 1;
        let p = usize::from(path);
        self.ce_pending[p] += 1;
        if self.ce_pending[p] < self.every {
            return None;
        }
        self.ce_pending[p] = 0;
        let via = self.return_path(path)?;
        self.feedback_sent += 1;
        let mut meta = PacketMeta::udp(
            self.own_ip,
            self.splitter_ip,
            self.feedback_port,
            self.feedback_port,
            FEEDBACK_WIRE_BYTES,
        );
        meta.ext = crate::packet::HeaderExt::Feedback(crate::packet::FeedbackInfo {
            group: self.group,
            path,
        });
        Some(Emit::new(self.return_port[usize::from(via)], meta))
    }

    /// The path to send feedback about `congested` over: another path, the one with the fewest
    /// pending CE arrivals, ties to the lowest index. None with a single path.
    pub fn return_path(&self, congested: PathIndex) -> Option<PathIndex> {
        let n = usize::from(self.n_paths);
        (0..n)
            .filter(|&i| i != usize::from(congested))
            .min_by_key(|&i| (self.ce_pending[i], i))
            .map(|i| i as PathIndex)
    }

    /// CE arrivals counted per path towards its next feedback packet.
    pub fn ce_pending(&self) -> &[u32] {
        &self.ce_pending[..usize::from(self.n_paths)]
    }

    /// The group this entry reports for.
    pub fn group(&self) -> u8 {
        self.group
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ce_on(port: PortId) -> PacketMeta {
        let mut p = PacketMeta::udp(1, 3, 5, 6, 1512);
        p.ecn = Ecn::Ce;
        p.ingress_port = port;
        p
    }

    #[test]
    fn one_feedback_per_16_ce_arrivals_on_a_path_sent_over_another() {
        let mut c = Confluence::new(0, &[1, 2], &[1, 2], 16, 100, 200, DEFAULT_FEEDBACK_PORT);
        let mut sent = Vec::new();
        for _ in 0..40 {
            if let Some(e) = c.on_arrival(&ce_on(2)) {
                sent.push(e);
            }
        }
        assert_eq!(sent.len(), 2);
        let e = sent[0];
        assert_eq!(e.port, 1, "feedback about path 2 travels back over path 1");
        assert_eq!(e.meta.dst_ip, 200);
        assert_eq!(e.meta.feedback().unwrap().path, 1);
        assert_eq!(c.ce_arrivals, 40);
    }

    #[test]
    fn unmarked_and_unknown_port_arrivals_are_not_counted() {
        let mut c = Confluence::new(0, &[1, 2], &[1, 2], 1, 100, 200, DEFAULT_FEEDBACK_PORT);
        let mut p = ce_on(1);
        p.ecn = Ecn::Ect0;
        assert!(c.on_arrival(&p).is_none());
        assert!(c.on_arrival(&ce_on(7)).is_none());
        assert_eq!(c.ce_arrivals, 0);
    }

    #[test]
    fn return_path_avoids_paths_with_pending_marks() {
        let mut c = Confluence::new(0, &[1, 2, 3], &[1, 2, 3], 16, 100, 200, DEFAULT_FEEDBACK_PORT);
        for _ in 0..5 {
            c.on_arrival(&ce_on(1));
        }
        assert_eq!(
            c.return_path(1),
            Some(2),
            "path 1 (index 0) has pending marks; path 3 has none"
        );
    }
}
