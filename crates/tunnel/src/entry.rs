//! The tunnel's entry: which packets enter, which subtunnel carries each, and their order.

use mpsched_core::packet::{Ipv4, PacketMeta};
use mpsched_core::tunnel::{FlowKey, SubtunnelView, TunnelScheduler};
use mpsched_core::wire::ETH_HDR_BYTES;
use rustc_hash::FxHashSet;
use std::sync::Arc;

/// Counters of one tunnel entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryStats {
    /// Packets handed to the scheduler.
    pub scheduled: u64,
    /// Packets dropped because the chosen subtunnel's send buffer was full.
    pub send_buffer_drops: u64,
    /// Packets scheduled onto each subtunnel.
    pub per_subtunnel: Vec<u64>,
}

/// What the entry decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// Index of the subtunnel that carries it.
    pub subtunnel: usize,
    /// Its place in the order packets entered the tunnel. The exit compares these within a flow
    /// to count reordering; one counter for all flows keeps the entry stateless per flow.
    pub entry_seq: u64,
    /// The inner packet's IP bytes (what the subtunnel carries as payload).
    pub ip_bytes: u32,
}

/// One direction's entry of a multipath tunnel.
#[derive(Debug)]
pub struct TunnelEntry {
    /// Hosts behind the far end: packets to them enter the tunnel. Shared: thousands of
    /// tunnels from user devices to one gateway see the same hosts behind it.
    far_hosts: Arc<FxHashSet<Ipv4>>,
    scheduler: Box<dyn TunnelScheduler>,
    next_entry_seq: u64,
    stats: EntryStats,
}

impl TunnelEntry {
    /// An entry with `subtunnels` subtunnels that carries packets addressed to `far_hosts`,
    /// choosing among subtunnels with `scheduler`.
    pub fn new(
        far_hosts: impl IntoIterator<Item = Ipv4>,
        scheduler: Box<dyn TunnelScheduler>,
        subtunnels: usize,
    ) -> Self {
        Self::sharing(Arc::new(far_hosts.into_iter().collect()), scheduler, subtunnels)
    }

    /// [`TunnelEntry::new`] with a set of far hosts other entries may share.
    pub fn sharing(far_hosts: Arc<FxHashSet<Ipv4>>, scheduler: Box<dyn TunnelScheduler>, subtunnels: usize) -> Self {
        TunnelEntry {
            far_hosts,
            scheduler,
            next_entry_seq: 0,
            stats: EntryStats {
                per_subtunnel: vec![0; subtunnels],
                ..EntryStats::default()
            },
        }
    }

    /// Whether `pkt` enters the tunnel here (it is addressed to a host behind the far end).
    #[inline]
    pub fn carries(&self, pkt: &PacketMeta) -> bool {
        self.far_hosts.contains(&pkt.dst_ip)
    }

    /// The addresses whose packets enter here.
    pub fn far_hosts(&self) -> impl Iterator<Item = &Ipv4> {
        self.far_hosts.iter()
    }

    /// Number of subtunnels.
    pub fn subtunnels(&self) -> usize {
        self.stats.per_subtunnel.len()
    }

    /// Choose the subtunnel for `pkt` at `now_ns`, given what each subtunnel looks like now
    /// (`views`, one per subtunnel), and stamp its entry order.
    pub fn schedule(&mut self, pkt: &PacketMeta, now_ns: u64, views: &[SubtunnelView]) -> Scheduled {
        debug_assert_eq!(views.len(), self.subtunnels(), "one view per subtunnel");
        let ip_bytes = pkt.wire_len_bytes.saturating_sub(ETH_HDR_BYTES as u32);
        let subtunnel = self.scheduler.select(&FlowKey::of(pkt), ip_bytes, now_ns, views);
        let entry_seq = self.next_entry_seq;
        self.next_entry_seq += 1;
        self.stats.scheduled += 1;
        self.stats.per_subtunnel[subtunnel] += 1;
        Scheduled {
            subtunnel,
            entry_seq,
            ip_bytes,
        }
    }

    /// An acknowledgement of subtunnel `subtunnel` arrived at `now_ns`: the scheduler hears.
    pub fn on_ack(&mut self, subtunnel: usize, ack: &mpsched_core::tunnel::AckSample, now_ns: u64) {
        self.scheduler.on_ack(subtunnel, ack, now_ns);
    }

    /// The subtunnel chosen for a packet could not take it (its send buffer is full): the packet
    /// is dropped at the entry.
    pub fn note_send_buffer_drop(&mut self) {
        self.stats.send_buffer_drops += 1;
    }

    /// Counters.
    pub fn stats(&self) -> &EntryStats {
        &self.stats
    }

    /// The scheduler's own counters.
    pub fn scheduler_counters(&self) -> Vec<(String, u64)> {
        self.scheduler.counters()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_core::tunnel::RoundRobin;

    #[test]
    fn only_packets_for_far_hosts_enter_and_each_is_stamped_in_order() {
        let mut e = TunnelEntry::new([10, 11], Box::new(RoundRobin::default()), 3);
        assert!(e.carries(&PacketMeta::udp(1, 10, 5, 6, 100)));
        assert!(!e.carries(&PacketMeta::udp(1, 12, 5, 6, 100)));
        let views = [SubtunnelView::default(); 3];
        let got: Vec<Scheduled> = (0..4)
            .map(|i| e.schedule(&PacketMeta::udp(1, 10 + i % 2, 5, 6, 114), 0, &views))
            .collect();
        assert_eq!(got.iter().map(|s| s.subtunnel).collect::<Vec<_>>(), [0, 1, 2, 0]);
        assert_eq!(got.iter().map(|s| s.entry_seq).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(got[0].ip_bytes, 100, "the Ethernet header does not enter the subtunnel");
        e.note_send_buffer_drop();
        assert_eq!(
            e.stats(),
            &EntryStats {
                scheduled: 4,
                send_buffer_drops: 1,
                per_subtunnel: vec![2, 1, 1]
            }
        );
    }
}
