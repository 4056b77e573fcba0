//! Packet schedulers across the subflows of one MPTCP connection: which subflow carries the next
//! segment. One trait, so that others (round robin, redundant, BLEST-like) follow Linux's lead of
//! pluggable schedulers; [`LowestRtt`] is the default.

/// What a scheduler sees of one subflow when choosing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowState {
    /// Established and not failed: it may carry data.
    pub active: bool,
    /// Marked backup (MP_JOIN's B flag, or the endpoint's `backup`): used only when no other
    /// subflow is active.
    pub backup: bool,
    /// Smoothed RTT, nanoseconds; 0 before the first sample.
    pub srtt_ns: u64,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Bytes sent and not yet acknowledged.
    pub in_flight_bytes: u64,
    /// The segment it would send next, bytes.
    pub next_segment_bytes: u32,
}

impl SubflowState {
    /// Whether its window has room for its next segment.
    pub fn has_room(&self) -> bool {
        self.in_flight_bytes + u64::from(self.next_segment_bytes) <= self.cwnd_bytes
    }
}

/// Chooses the subflow for the next segment of a connection.
pub trait PacketScheduler: Send + std::fmt::Debug {
    /// Short name, as Linux's `net.mptcp.scheduler` spells it where it has one.
    fn name(&self) -> &'static str;

    /// The index in `subflows` of the subflow to send on now, or None when none may send
    /// (every usable window full): the connection waits for an ACK.
    fn pick(&mut self, subflows: &[SubflowState]) -> Option<usize>;
}

/// The subflow with the lowest smoothed RTT among those with room in their window, as Linux's
/// default scheduler prefers its fastest subflow: backup subflows only when no other subflow is
/// active, subflows without an RTT sample after those with one, the lowest index among equals.
#[derive(Clone, Copy, Debug, Default)]
pub struct LowestRtt;

impl PacketScheduler for LowestRtt {
    fn name(&self) -> &'static str {
        "default"
    }

    fn pick(&mut self, subflows: &[SubflowState]) -> Option<usize> {
        let any_regular = subflows.iter().any(|s| s.active && !s.backup);
        subflows
            .iter()
            .enumerate()
            .filter(|(_, s)| s.active && s.backup != any_regular && s.has_room())
            // Unmeasured subflows sort after measured ones; then the index breaks ties.
            .min_by_key(|&(i, s)| (s.srtt_ns == 0, s.srtt_ns, i))
            .map(|(i, _)| i)
    }
}

/// Each subflow in turn, skipping those without room: spreads segments evenly whatever the
/// paths' delays (a baseline to set against [`LowestRtt`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl PacketScheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn pick(&mut self, subflows: &[SubflowState]) -> Option<usize> {
        let n = subflows.len();
        let any_regular = subflows.iter().any(|s| s.active && !s.backup);
        let i = (0..n).map(|k| (self.next + k) % n).find(|&i| {
            let s = &subflows[i];
            s.active && s.backup != any_regular && s.has_room()
        })?;
        self.next = (i + 1) % n;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(srtt_us: u64, cwnd_segs: u64, in_flight_segs: u64) -> SubflowState {
        SubflowState {
            active: true,
            backup: false,
            srtt_ns: srtt_us * 1_000,
            cwnd_bytes: cwnd_segs * 1448,
            in_flight_bytes: in_flight_segs * 1448,
            next_segment_bytes: 1448,
        }
    }

    #[test]
    fn the_fastest_subflow_with_room_carries_the_segment() {
        let mut s = LowestRtt;
        // Subflow 1 is faster.
        assert_eq!(s.pick(&[sub(20_000, 10, 0), sub(10_000, 10, 0)]), Some(1));
        // Its window is full: the slower one.
        assert_eq!(s.pick(&[sub(20_000, 10, 0), sub(10_000, 10, 10)]), Some(0));
        // Both full: wait.
        assert_eq!(s.pick(&[sub(20_000, 10, 10), sub(10_000, 10, 10)]), None);
        // Equal RTTs: the lowest index.
        assert_eq!(s.pick(&[sub(10_000, 10, 0), sub(10_000, 10, 0)]), Some(0));
        // A subflow without an RTT sample comes after a measured one, but is used.
        assert_eq!(s.pick(&[sub(0, 10, 0), sub(50_000, 10, 0)]), Some(1));
        assert_eq!(s.pick(&[sub(0, 10, 0), sub(50_000, 10, 10)]), Some(0));
        assert_eq!(s.pick(&[]), None);
    }

    #[test]
    fn backups_carry_data_only_when_no_other_subflow_is_active() {
        let mut s = LowestRtt;
        let mut backup = sub(1_000, 10, 0);
        backup.backup = true;
        // A full regular subflow makes the connection wait rather than use the backup.
        assert_eq!(s.pick(&[sub(20_000, 10, 10), backup]), None);
        assert_eq!(s.pick(&[sub(20_000, 10, 0), backup]), Some(0));
        let mut failed = sub(20_000, 10, 0);
        failed.active = false;
        assert_eq!(s.pick(&[failed, backup]), Some(1));
    }

    #[test]
    fn round_robin_takes_turns_and_skips_full_windows() {
        let mut s = RoundRobin::default();
        let subs = [sub(10_000, 10, 0), sub(50_000, 10, 0), sub(30_000, 10, 10)];
        let picks: Vec<_> = (0..4).map(|_| s.pick(&subs).unwrap()).collect();
        assert_eq!(picks, [0, 1, 0, 1]);
        assert_eq!(s.name(), "roundrobin");
        assert_eq!(LowestRtt.name(), "default");
    }
}
