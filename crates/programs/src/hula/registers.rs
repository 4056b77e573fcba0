//! The counters and table registers as every backend names them (README.md, "Counters and
//! registers"): conformance vectors compare them after every step.

use super::assoc::AuxSlot;
use super::switch::{Hula, HulaCounters};
use super::{MAX_SUBFLOWS, NO_PORT};

/// The counters as the data planes index them (`enum hula_counter` in hula.h, `HC_*` in
/// hula.p4), named as vectors name them: the twin's counters in README order, then the frame
/// runner's and a failed redirect's.
pub const DATA_PLANE_COUNTERS: [&str; 25] = [
    "counter.hula.probes_sent",
    "counter.hula.probes_in",
    "counter.hula.probe_copies",
    "counter.hula.probes_refused",
    "counter.hula.aged",
    "counter.hula.new_flowlets",
    "counter.hula.continued",
    "counter.hula.collisions",
    "counter.hula.fallback",
    "counter.hula.dead_port",
    "counter.mphula.assoc",
    "counter.mphula.joins",
    "counter.mphula.join_misses",
    "counter.mphula.pushed",
    "counter.mphula.popped",
    "counter.mphula.sibling_skips",
    "counter.mphula.round_robin",
    "counter.mphula.conn_collisions",
    "counter.mphula.subflow_overflow",
    "counter.no_route",
    "counter.ttl_expired",
    "counter.local",
    "counter.not_ipv4",
    "counter.malformed",
    "counter.redirect_failed",
];

/// The counters, `hula.*` and `mphula.*`, in README order.
pub fn counters(c: &HulaCounters) -> Vec<(String, u64)> {
    [
        ("hula.probes_sent", c.probes_sent),
        ("hula.probes_in", c.probes_in),
        ("hula.probe_copies", c.probe_copies),
        ("hula.probes_refused", c.probes_refused),
        ("hula.aged", c.aged),
        ("hula.new_flowlets", c.new_flowlets),
        ("hula.continued", c.continued),
        ("hula.collisions", c.collisions),
        ("hula.fallback", c.fallback),
        ("hula.dead_port", c.dead_port),
        ("mphula.assoc", c.assoc),
        ("mphula.joins", c.joins),
        ("mphula.join_misses", c.join_misses),
        ("mphula.pushed", c.pushed),
        ("mphula.popped", c.popped),
        ("mphula.sibling_skips", c.sibling_skips),
        ("mphula.round_robin", c.round_robin),
        ("mphula.conn_collisions", c.conn_collisions),
        ("mphula.subflow_overflow", c.subflow_overflow),
        ("no_route", c.no_route),
        ("ttl_expired", c.ttl_expired),
        ("local", c.local),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Every table register: best hops and estimators always, the other tables' occupied slots.
pub fn tables(h: &Hula) -> Vec<(String, u64)> {
    let super::switch::Parts {
        tx,
        port_probe_us,
        best,
        flowlets,
        assoc,
        conns,
    } = h.parts();
    let mut out = Vec::new();
    let mut put = |k: String, v: u64| out.push((k, v));
    for t in 0..best.n_tors() {
        for (r, hop) in best.of(t).iter().enumerate() {
            put(format!("best.{t}.{r}.port"), u64::from(hop.port));
            put(format!("best.{t}.{r}.util"), u64::from(hop.util));
            put(format!("best.{t}.{r}.time_us"), hop.time_us);
        }
    }
    for (p, u) in tx.iter().enumerate() {
        put(format!("txutil.{p}.bytes"), u.bytes);
        put(format!("txutil.{p}.last_us"), u.last_us);
        put(format!("probe_in.{p}.last_us"), port_probe_us[p]);
    }
    for (i, s) in flowlets.iter().enumerate().filter(|(_, s)| s.valid) {
        put(format!("flowlet.{i}.tag"), u64::from(s.tag));
        put(format!("flowlet.{i}.port"), u64::from(s.port));
        put(format!("flowlet.{i}.last_us"), s.last_us);
    }
    if let Some(a) = assoc {
        let used = |s: &&AuxSlot| s.flags != 0 || s.tag != 0 || s.key_a != 0 || s.key_b != 0;
        for (i, s) in a.aux.iter().enumerate().filter(|(_, s)| used(s)) {
            put(format!("aux.{i}.tag"), u64::from(s.tag));
            put(format!("aux.{i}.key_a"), s.key_a);
            put(format!("aux.{i}.key_b"), s.key_b);
            put(format!("aux.{i}.flags"), u64::from(s.flags));
        }
        for (i, s) in a.assoc.iter().enumerate().filter(|(_, s)| s.valid) {
            put(format!("assoc.{i}.tag"), u64::from(s.tag));
            put(format!("assoc.{i}.conn_id"), s.conn_id);
            put(format!("assoc.{i}.subflow"), u64::from(s.subflow));
            put(format!("assoc.{i}.count"), u64::from(s.count));
        }
        for (i, s) in a.tokens.iter().enumerate().filter(|(_, s)| s.valid) {
            put(format!("token.{i}.token"), u64::from(s.token));
            put(format!("token.{i}.assoc_slot"), u64::from(s.assoc_slot));
        }
    }
    if let Some(c) = conns {
        for (i, s) in c.slots.iter().enumerate().filter(|(_, s)| s.valid) {
            put(format!("conn.{i}.conn_id"), s.conn_id);
            put(format!("conn.{i}.rr"), u64::from(s.rr));
            for j in 0..MAX_SUBFLOWS {
                let port = if s.port[j] == NO_PORT {
                    u64::from(NO_PORT)
                } else {
                    u64::from(s.port[j])
                };
                put(format!("conn.{i}.port{}", j + 1), port);
                put(format!("conn.{i}.last{}_us", j + 1), s.last_us[j]);
            }
        }
    }
    out
}
