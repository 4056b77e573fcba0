//! Ports with several output queues on the kernel: one htb class per queue under the link's
//! class, a u32 filter per DSCP class sending a packet to queue `min(dscp >> 3, queues - 1)`
//! (the simulator's default classification), each queue its own leaf (pfifo, or netem where
//! the kernel has it).
//!
//! Weighted sharing (`wrr`, `drr`): queue `i` is guaranteed `rate x w[i] / sum(w)` and may borrow
//! up to the link's rate when others are idle, so backlogged queues share the link in proportion
//! to their weights, counted in bytes (the simulator's WRR counts packets: the same with equal
//! frames; its DRR counts bytes too). Strict priority needs `prio` or `ets`; htb's class
//! priority only approximates it, so it is refused here until it is measured (issue 30).
//!
//! A control plane changes the weights at run time (`tc class change`: the new guarantees apply
//! to the next packet) and a queue's capacity (`tc qdisc change` of its leaf).

use super::NetnsError;
use crate::ns::Netns;
use mpsched_topo::QueueDiscipline;

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

/// The weights of a discipline the kernel can realise, or why not.
pub(crate) fn weights_of(discipline: &QueueDiscipline, queues: usize) -> Result<Vec<u32>, String> {
    match discipline {
        QueueDiscipline::Wrr(w) | QueueDiscipline::Drr(w) => Ok(w.clone()),
        QueueDiscipline::Fifo => Ok(vec![1; queues]),
        QueueDiscipline::StrictPriority => Err(
            "strict priority needs the prio or ets qdisc (this backend does not yet approximate it with htb's class \
             priorities); use `discipline = \"wrr\"` or --backend sim"
                .into(),
        ),
    }
}

/// Shape `ifname` at `rate_bps` with one class per weight, each over the leaf `leaf` (`tc`
/// arguments after its handle), packets classified by their DSCP class.
pub(super) fn shape_queues(
    n: &Netns,
    ifname: &str,
    rate_bps: u64,
    weights: &[u32],
    leaf: &[String],
) -> Result<(), NetnsError> {
    super::setup::htb_root(n, ifname, rate_bps, "10")?;
    let rate = format!("{rate_bps}bit");
    for (q, r) in class_rates(rate_bps, weights).into_iter().enumerate() {
        let (class, r) = (class_id(q), format!("{r}bit"));
        n.exec(
            "tc",
            &[
                "class", "add", "dev", ifname, "parent", "1:1", "classid", &class, "htb", "rate", &r, "ceil", &rate,
                "quantum", "1514",
            ],
        )?;
        let handle = format!("{:x}:", 0x20 + q);
        let mut args = vec!["qdisc", "add", "dev", ifname, "parent", &class, "handle", &handle];
        args.extend(leaf.iter().map(String::as_str));
        n.exec("tc", &args)?;
    }
    // DSCP class c (the TOS byte's top three bits) to queue min(c, queues - 1).
    for c in 0..8usize {
        let (tos, class) = (format!("0x{:02x}", c << 5), class_id(c.min(weights.len() - 1)));
        n.exec(
            "tc",
            &[
                "filter", "add", "dev", ifname, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip",
                "tos", &tos, "0xe0", "flowid", &class,
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

/// New weights for the queues of `ifname` (one per queue, as many as it has).
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

/// A new capacity (packets) for queue `q` of `ifname`, whose leaf is a pfifo.
pub(crate) fn set_limit(n: &Netns, ifname: &str, q: usize, limit_pkts: u32) -> Result<(), NetnsError> {
    let handle = format!("{:x}:", 0x20 + q);
    let limit = limit_pkts.max(1).to_string();
    n.exec(
        "tc",
        &[
            "qdisc",
            "change",
            "dev",
            ifname,
            "parent",
            &class_id(q),
            "handle",
            &handle,
            "pfifo",
            "limit",
            &limit,
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
        assert_eq!(weights_of(&QueueDiscipline::Fifo, 3).unwrap(), vec![1, 1, 1]);
        assert!(weights_of(&QueueDiscipline::StrictPriority, 2)
            .unwrap_err()
            .contains("prio or ets"));
    }
}
