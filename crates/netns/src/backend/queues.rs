//! Ports with several output queues on the kernel. Under the link's htb class (`1:1`, at the
//! link's rate), a u32 filter per DSCP class sends a packet to queue `min(dscp >> 3, queues - 1)`
//! (the simulator's default classification; `dscp >> 3` is the TOS byte's top three bits), and
//! each queue has its own leaf (pfifo, or netem where the kernel has it). How the queues share
//! the link depends on the discipline ([`Layout`]):
//!
//! - Weighted sharing (`wrr`, `drr`): one htb class per queue; queue `i` is guaranteed
//!   `rate x w[i] / sum(w)` and may borrow up to the link's rate when others are idle, so
//!   backlogged queues share the link in proportion to their weights, counted in bytes (the
//!   simulator's WRR counts packets: the same with equal frames; its DRR counts bytes too).
//! - Strict priority, the highest queue first as in the simulator and BMv2's priority queues,
//!   realised as the kernel allows ([`StrictPriority`], probed once per process before a run
//!   makes anything):
//!   - with the `prio` qdisc (or else `ets` with every band strict) as the leaf of the link's
//!     class: queue `q` is band `queues - 1 - q`, band 0 served first, so the highest queue is;
//!   - otherwise with htb's class priorities: one htb class per queue, each guaranteed
//!     [`STRICT_GUARANTEE_BPS`] with the link's rate as its ceiling and htb `prio 7 - q`, so the
//!     link's spare rate goes to the highest backlogged queue first. htb serves every class's
//!     guarantee before priorities matter, so each lower queue still gets its guarantee (and,
//!     since htb caps a class's debt at 60 s, at most about one frame a minute). Measured on a
//!     10 Mbit/s port (docs/performance.md): queue 0 sent no frame in 30 s behind two
//!     backlogged queues, the classes' goodput within 0.3 % of the simulator's, a high-class
//!     probe about 1 ms slower than through the idle port.
//!
//! A control plane changes the weights at run time (`tc class change`: the new guarantees apply
//! to the next packet; a strict-priority port has none and refuses them) and a queue's capacity
//! (`tc qdisc change` of its leaf).

use super::NetnsError;
use crate::ns::Netns;
use mpsched_topo::QueueDiscipline;
use std::sync::OnceLock;

/// The guaranteed rate of each queue of a strict-priority port realised with htb's class
/// priorities, in bit/s.
///
/// htb serves each class up to its guarantee before it shares the spare by priority, so the
/// guarantee is what a starved queue still gets: it must be small. htb needs a rate of at least
/// one byte a second, and tc hands the kernel each class's burst as the time to send it at the
/// class's rate, in 32-bit ticks of 64 ns (275 s at most): its default burst of 1 600 bytes fits
/// from 6 bytes a second, and at 1 byte a second wraps (tc shows `burst 225b`). 64 bit/s (8
/// bytes a second) is the smallest round rate whose burst tc keeps whole. htb also caps a
/// class's debt at 60 s, so a class whose frame costs more than a minute of its rate (1 512
/// bytes at 8 bytes a second cost 189 s) sends about one frame a minute: some 200 bit/s.
pub const STRICT_GUARANTEE_BPS: u64 = 64;

/// How the kernel realises a strict-priority port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrictPriority {
    /// The `prio` qdisc under the link's class, one band per queue, the highest queue in band 0.
    Prio,
    /// The `ets` qdisc with every band strict (no `prio` here), the highest queue in band 0.
    Ets,
    /// Neither qdisc: one htb class per queue with htb priority `7 - q` and a guarantee of
    /// [`STRICT_GUARANTEE_BPS`].
    HtbClassPriority,
}

impl StrictPriority {
    /// What this kernel offers, probed once per process on the loopback of a scratch namespace
    /// (`prio` first, then `ets`), and kept.
    pub fn detect() -> StrictPriority {
        static FOUND: OnceLock<StrictPriority> = OnceLock::new();
        *FOUND.get_or_init(|| {
            if super::kernel_accepts_qdisc(&["prio", "bands", "3"]) {
                StrictPriority::Prio
            } else if super::kernel_accepts_qdisc(&["ets", "bands", "3", "strict", "3"]) {
                StrictPriority::Ets
            } else {
                StrictPriority::HtbClassPriority
            }
        })
    }

    /// One line on how strict-priority ports are built, for the run's notes and `link_model`.
    pub fn describe(self) -> String {
        match self {
            StrictPriority::Prio => "strict priority by the prio qdisc (the highest queue in band 0)".into(),
            StrictPriority::Ets => "strict priority by the ets qdisc, every band strict (this kernel has no prio; \
                                    the highest queue in band 0)"
                .into(),
            StrictPriority::HtbClassPriority => format!(
                "strict priority approximated by htb class priorities (this kernel has neither prio nor ets): \
                 each queue guaranteed {STRICT_GUARANTEE_BPS} bit/s, the rest of the link to the highest \
                 backlogged queue first"
            ),
        }
    }

    /// The qdisc under the link's class (`tc` arguments after its handle) with `bands` bands,
    /// where there is one: every band strict, unclassified packets in the last band (queue 0's).
    fn band_qdisc(self, bands: usize) -> Option<Vec<String>> {
        let mut args: Vec<String> = match self {
            StrictPriority::Prio => vec!["prio".into(), "bands".into(), bands.to_string()],
            StrictPriority::Ets => vec![
                "ets".into(),
                "bands".into(),
                bands.to_string(),
                "strict".into(),
                bands.to_string(),
            ],
            StrictPriority::HtbClassPriority => return None,
        };
        args.push("priomap".into());
        args.extend(std::iter::repeat_n((bands - 1).to_string(), 16));
        Some(args)
    }
}

/// How a port's queues are built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `wrr`, `drr`: one htb class per weight, guaranteed its share of the link.
    Weighted(Vec<u32>),
    /// Strict priority over `queues` queues, realised as `how`.
    Strict {
        /// The port's queues.
        queues: usize,
        /// The realisation.
        how: StrictPriority,
    },
}

/// The handle of the band qdisc of a strict-priority port (`prio` / `ets`).
const BAND_QDISC: &str = "2:";

impl Layout {
    /// The layout of a port of `queues` queues served by `discipline`; `strict` is what the
    /// kernel offers for strict priority (None: not probed, refused).
    pub(crate) fn of(
        discipline: &QueueDiscipline,
        queues: usize,
        strict: Option<StrictPriority>,
    ) -> Result<Layout, String> {
        match (discipline, strict) {
            (QueueDiscipline::Wrr(w) | QueueDiscipline::Drr(w), _) => Ok(Layout::Weighted(w.clone())),
            (QueueDiscipline::Fifo, _) => Ok(Layout::Weighted(vec![1; queues])),
            (QueueDiscipline::StrictPriority, Some(how)) => Ok(Layout::Strict { queues, how }),
            (QueueDiscipline::StrictPriority, None) => {
                Err("strict priority: the kernel was not probed for prio / ets before the run".into())
            }
        }
    }

    /// The port's queue count.
    pub(crate) fn queues(&self) -> usize {
        match self {
            Layout::Weighted(w) => w.len(),
            Layout::Strict { queues, .. } => *queues,
        }
    }

    /// The band of queue `q` on a `prio` / `ets` port: the highest queue in band 0, served first.
    pub(crate) fn band(queues: usize, q: usize) -> usize {
        queues - 1 - q.min(queues - 1)
    }

    /// The class that holds queue `q`: htb's `1:1q`, or band `b`'s class `2:b+1` of the band qdisc.
    pub(crate) fn queue_class(&self, q: usize) -> String {
        match self {
            Layout::Strict {
                queues,
                how: StrictPriority::Prio | StrictPriority::Ets,
            } => format!("2:{:x}", Layout::band(*queues, q) + 1),
            _ => class_id(q),
        }
    }

    /// The `skb->priority` that puts a packet in queue `q`: its class's id, `major << 16 |
    /// minor` ([`Layout::queue_class`]), which htb, prio and ets take before their filters.
    pub(crate) fn queue_priority(&self, q: usize) -> u32 {
        let class = self.queue_class(q);
        let (major, minor) = class.split_once(':').expect("a class id is major:minor");
        let hex = |x: &str| u32::from_str_radix(x, 16).expect("class ids are hex");
        hex(major) << 16 | hex(minor)
    }

    /// Each queue's htb class under `1:1` as (guaranteed rate, htb priority), where the queues
    /// are htb classes (none on a band-qdisc port).
    pub(crate) fn htb_classes(&self, rate_bps: u64) -> Vec<(u64, Option<u8>)> {
        match self {
            Layout::Weighted(w) => class_rates(rate_bps, w).into_iter().map(|r| (r, None)).collect(),
            Layout::Strict {
                queues,
                how: StrictPriority::HtbClassPriority,
            } => (0..*queues)
                .map(|q| (STRICT_GUARANTEE_BPS, Some(htb_prio(q))))
                .collect(),
            Layout::Strict { .. } => Vec::new(),
        }
    }
}

/// htb's priority of queue `q` on a strict-priority port: 0 (served first) for queue 7.
pub(crate) fn htb_prio(q: usize) -> u8 {
    7 - q.min(7) as u8
}

/// htb's class id of queue `q`: `1:1q` in hex (`1:10` is queue 0).
pub(crate) fn class_id(q: usize) -> String {
    format!("1:{:x}", 0x10 + q)
}

/// Each queue's guaranteed rate: the link's rate shared by the weights (at least 1 bit/s, as
/// htb needs one).
pub(crate) fn class_rates(rate_bps: u64, weights: &[u32]) -> Vec<u64> {
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum::<u128>().max(1);
    weights
        .iter()
        .map(|&w| ((u128::from(rate_bps) * u128::from(w) / total) as u64).max(1))
        .collect()
}

/// Whether a control plane may set the weights of a port served by `discipline`, or why not.
pub(crate) fn weights_settable(discipline: &QueueDiscipline) -> Result<(), String> {
    match discipline {
        QueueDiscipline::Wrr(_) | QueueDiscipline::Drr(_) => Ok(()),
        QueueDiscipline::StrictPriority => Err(
            "its queues are served by strict priority (the highest non-empty queue first), where weights \
             mean nothing; weights apply to `wrr` and `drr` ports"
                .into(),
        ),
        QueueDiscipline::Fifo => Err("it has one queue, which has no weight".into()),
    }
}

/// Shape `ifname` at `rate_bps` with the queues of `layout`, each over the leaf `leaf` (`tc`
/// arguments after its handle), packets classified by their DSCP class.
pub(super) fn shape_queues(
    n: &Netns,
    ifname: &str,
    rate_bps: u64,
    layout: &Layout,
    leaf: &[String],
) -> Result<(), NetnsError> {
    let band_qdisc = match layout {
        Layout::Strict { queues, how } => how.band_qdisc(*queues),
        Layout::Weighted(_) => None,
    };
    // Unclassified packets go to queue 0: its htb class, or the band qdisc, whose priomap
    // sends them to queue 0's band.
    let default_class = if band_qdisc.is_some() { "1" } else { "10" };
    super::setup::htb_root(n, ifname, rate_bps, default_class)?;
    if let Some(band) = &band_qdisc {
        let mut args = vec!["qdisc", "add", "dev", ifname, "parent", "1:1", "handle", BAND_QDISC];
        args.extend(band.iter().map(String::as_str));
        n.exec("tc", &args)?;
    }
    let rate = format!("{rate_bps}bit");
    for (q, (r, prio)) in layout.htb_classes(rate_bps).into_iter().enumerate() {
        let (class, r, prio) = (class_id(q), format!("{r}bit"), prio.map(|p| p.to_string()));
        let mut args = vec![
            "class", "add", "dev", ifname, "parent", "1:1", "classid", &class, "htb", "rate", &r, "ceil", &rate,
            "quantum", "1514",
        ];
        if let Some(p) = &prio {
            args.extend(["prio", p]);
        }
        n.exec("tc", &args)?;
    }
    for q in 0..layout.queues() {
        let (parent, handle) = (layout.queue_class(q), leaf_handle(q));
        let mut args = vec!["qdisc", "add", "dev", ifname, "parent", &parent, "handle", &handle];
        args.extend(leaf.iter().map(String::as_str));
        n.exec("tc", &args)?;
    }
    // DSCP class c (the TOS byte's top three bits) to queue min(c, queues - 1).
    let filters_at = if band_qdisc.is_some() { BAND_QDISC } else { "1:" };
    for c in 0..8usize {
        let (tos, class) = (
            format!("0x{:02x}", c << 5),
            layout.queue_class(c.min(layout.queues() - 1)),
        );
        n.exec(
            "tc",
            &[
                "filter", "add", "dev", ifname, "parent", filters_at, "protocol", "ip", "prio", "1", "u32", "match",
                "ip", "tos", &tos, "0xe0", "flowid", &class,
            ],
        )
        .map_err(|e| {
            NetnsError::Missing(format!(
                "the u32 classifier is needed for ports with several queues: {e}"
            ))
        })?;
    }
    Ok(())
}

/// The handle of queue `q`'s leaf qdisc: `2q:` in hex.
fn leaf_handle(q: usize) -> String {
    format!("{:x}:", 0x20 + q)
}

/// New weights for the queues of `ifname` (one per queue, as many as it has), a `wrr` or `drr`
/// port ([`weights_settable`]).
pub(crate) fn set_weights(n: &Netns, ifname: &str, rate_bps: u64, weights: &[u32]) -> Result<(), NetnsError> {
    let ceil = format!("{rate_bps}bit");
    for (q, r) in class_rates(rate_bps, weights).into_iter().enumerate() {
        let (class, r) = (class_id(q), format!("{r}bit"));
        n.exec(
            "tc",
            &[
                "class", "change", "dev", ifname, "parent", "1:1", "classid", &class, "htb", "rate", &r, "ceil", &ceil,
                "quantum", "1514",
            ],
        )?;
    }
    Ok(())
}

/// A new capacity (packets) for queue `q` of `ifname`, laid out as `layout`, whose leaf is a
/// pfifo.
pub(crate) fn set_limit(n: &Netns, ifname: &str, layout: &Layout, q: usize, limit_pkts: u32) -> Result<(), NetnsError> {
    let (parent, handle) = (layout.queue_class(q), leaf_handle(q));
    let limit = limit_pkts.max(1).to_string();
    n.exec(
        "tc",
        &[
            "qdisc", "change", "dev", ifname, "parent", &parent, "handle", &handle, "pfifo", "limit", &limit,
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_share_the_rate_and_name_hex_classes() {
        assert_eq!(class_rates(100, &[1, 3]), vec![25, 75]);
        assert_eq!(class_rates(10, &[0, 1]), vec![1, 10], "htb needs a rate above zero");
        assert_eq!(class_id(0), "1:10");
        assert_eq!(class_id(7), "1:17");
        let fifo = Layout::of(&QueueDiscipline::Fifo, 3, None).unwrap();
        assert_eq!(fifo, Layout::Weighted(vec![1, 1, 1]));
        let drr = Layout::of(&QueueDiscipline::Drr(vec![1, 3]), 2, Some(StrictPriority::Prio)).unwrap();
        assert_eq!(
            drr.htb_classes(100),
            vec![(25, None), (75, None)],
            "wrr / drr as before"
        );
        assert_eq!(drr.queue_class(1), "1:11");
        assert_eq!(drr.queue_priority(1), 0x1_0011, "skb->priority names class 1:11");
    }

    /// On a `prio` or `ets` port queue `q` is band `queues - 1 - q` (class `2:band+1`), so band 0,
    /// served first, holds the highest queue, as the simulator serves it; unclassified packets
    /// fall in the last band, queue 0's.
    #[test]
    fn the_highest_queue_is_band_zero_on_prio_and_ets() {
        assert_eq!(Layout::band(3, 2), 0);
        assert_eq!(Layout::band(3, 0), 2);
        assert_eq!(Layout::band(3, 7), 0, "classes above the last queue share it");
        assert_eq!(Layout::band(8, 7), 0);
        for how in [StrictPriority::Prio, StrictPriority::Ets] {
            let l = Layout::of(&QueueDiscipline::StrictPriority, 3, Some(how)).unwrap();
            let classes: Vec<String> = (0..3).map(|q| l.queue_class(q)).collect();
            assert_eq!(classes, ["2:3", "2:2", "2:1"], "{how:?}");
            let prios: Vec<u32> = (0..3).map(|q| l.queue_priority(q)).collect();
            assert_eq!(prios, [0x2_0003, 0x2_0002, 0x2_0001], "{how:?}");
            assert!(
                l.htb_classes(10_000_000).is_empty(),
                "no htb class per queue under {how:?}"
            );
        }
        let prio = StrictPriority::Prio.band_qdisc(3).unwrap().join(" ");
        assert_eq!(prio, "prio bands 3 priomap 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2");
        let ets = StrictPriority::Ets.band_qdisc(2).unwrap().join(" ");
        assert_eq!(ets, "ets bands 2 strict 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1");
        assert_eq!(StrictPriority::HtbClassPriority.band_qdisc(3), None);
    }

    /// Without prio or ets each queue is an htb class with the small guarantee and priority
    /// `7 - q`: htb gives the spare rate to the lowest priority number, the highest queue.
    #[test]
    fn htb_priorities_put_the_highest_queue_first_with_a_small_guarantee() {
        let l = Layout::of(
            &QueueDiscipline::StrictPriority,
            3,
            Some(StrictPriority::HtbClassPriority),
        )
        .unwrap();
        let g = STRICT_GUARANTEE_BPS;
        assert_eq!(
            l.htb_classes(10_000_000),
            vec![(g, Some(7)), (g, Some(6)), (g, Some(5))]
        );
        assert_eq!(l.queue_class(2), "1:12");
        assert_eq!((htb_prio(0), htb_prio(7)), (7, 0));
        // The guarantee a starved queue keeps: a hundred-thousandth of a 10 Mbit/s link, and
        // whole bytes a second (tc's unit), with a burst tc can express (at least 6 B/s).
        assert!(g * 100_000 <= 10_000_000 && g % 8 == 0 && g / 8 >= 6);
        assert!(StrictPriority::HtbClassPriority
            .describe()
            .contains("htb class priorities"));
        assert!(Layout::of(&QueueDiscipline::StrictPriority, 3, None)
            .unwrap_err()
            .contains("not probed"));
    }

    /// A control plane's weights are refused on a strict-priority port, with the reason.
    #[test]
    fn weights_are_refused_on_strict_priority_ports() {
        let why = weights_settable(&QueueDiscipline::StrictPriority).unwrap_err();
        assert!(
            why.contains("strict priority") && why.contains("`wrr` and `drr`"),
            "{why}"
        );
        weights_settable(&QueueDiscipline::Wrr(vec![1, 1])).unwrap();
        weights_settable(&QueueDiscipline::Drr(vec![1, 1])).unwrap();
        assert!(weights_settable(&QueueDiscipline::Fifo).is_err());
    }
}
