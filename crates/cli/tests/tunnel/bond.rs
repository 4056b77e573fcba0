//! Bonding: one and four TCP flows through the tunnel (the default scheduler, `bond`) over
//! unequal paths with unequal delays, against each path alone through the tunnel.

use crate::net::{Net, Paths};

/// A layout: tbf rate per path (Mbit/s) and one-way delay per path (ms).
pub struct Layout {
    pub rates_mbit: &'static [u32],
    pub delays_ms: &'static [u64],
}

/// The layouts docs/tunnel.md tabulates (#46).
pub const LAYOUTS: &[Layout] = &[
    Layout {
        rates_mbit: &[40, 20],
        delays_ms: &[5, 30],
    },
    Layout {
        rates_mbit: &[40, 10],
        delays_ms: &[5, 30],
    },
    Layout {
        rates_mbit: &[50, 10, 10],
        delays_ms: &[5, 30, 30],
    },
];

/// Seconds each iperf3 run lasts.
const SECS: u32 = 8;

fn rates_text(rates: &[u32]) -> &'static str {
    let s = rates.iter().map(|r| format!("{r}mbit")).collect::<Vec<_>>().join(",");
    Box::leak(s.into_boxed_str())
}

/// One TCP flow through a tunnel of the one path `rate_mbit` / `delay_ms`, bit/s.
fn alone(rate_mbit: u32, delay_ms: u64) -> f64 {
    let mut net = Net::build(
        &format!("one{rate_mbit}"),
        &Paths {
            rate: Some(rates_text(&[rate_mbit])),
            delay_ms: vec![delay_ms],
        },
    );
    net.start_both("bond", "");
    net.iperf(SECS)
}

/// What one layout measured.
pub struct Measured {
    /// Each path alone, bit/s.
    pub alone: Vec<f64>,
    /// One flow and four flows through the bonded tunnel, bit/s.
    pub one: f64,
    pub four: f64,
    /// Inner packets per path (a's), and late deliveries at b, over both runs.
    pub per_path: Vec<f64>,
    pub late: f64,
    pub delivered: f64,
}

/// Run `layout`: each path alone (`cache` holds paths already measured), then the bond.
pub fn measure(layout: &Layout, cache: &mut Vec<((u32, u64), f64)>) -> Measured {
    let mut alone_bps = Vec::new();
    for (&r, &d) in layout.rates_mbit.iter().zip(layout.delays_ms) {
        let known = cache.iter().find(|(k, _)| *k == (r, d)).map(|&(_, v)| v);
        let v = known.unwrap_or_else(|| {
            let v = alone(r, d);
            cache.push(((r, d), v));
            v
        });
        alone_bps.push(v);
    }
    let tag: String = layout
        .rates_mbit
        .iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("-");
    let mut net = Net::build(
        &format!("b{tag}"),
        &Paths {
            rate: Some(rates_text(layout.rates_mbit)),
            delay_ms: layout.delays_ms.to_vec(),
        },
    );
    net.start_both("bond", "");
    let one = net.iperf(SECS);
    let four = net.iperf_flows(SECS, 4);
    let per_path = (1..=layout.rates_mbit.len())
        .map(|n| net.counter('a', &format!("mpsched_tunnel_path_tx_packets_total{{path=\"p{n}\"}}")))
        .collect();
    Measured {
        alone: alone_bps,
        one,
        four,
        per_path,
        late: net.counter('b', "mpsched_tunnel_reorder_late_total"),
        delivered: net.counter('b', "mpsched_tunnel_tun_tx_packets_total"),
    }
}

/// The table row of a layout, in Markdown.
pub fn row(layout: &Layout, m: &Measured) -> String {
    let sum: f64 = m.alone.iter().sum();
    let best = m.alone.iter().copied().fold(0.0, f64::max);
    let paths = layout
        .rates_mbit
        .iter()
        .zip(layout.delays_ms)
        .map(|(r, d)| format!("{r} Mbit/s {d} ms"))
        .collect::<Vec<_>>()
        .join(" + ");
    let total: f64 = m.per_path.iter().sum();
    let shares = m
        .per_path
        .iter()
        .map(|p| format!("{:.0}", p / total * 100.0))
        .collect::<Vec<_>>()
        .join(" / ");
    format!(
        "| {paths} | {:.1} | {:.1} | {:.1} ({:.0} %) | {:.1} ({:.0} %) | {shares} | {:.3} % |",
        best / 1e6,
        sum / 1e6,
        m.one / 1e6,
        m.one / sum * 100.0,
        m.four / 1e6,
        m.four / sum * 100.0,
        m.late / m.delivered.max(1.0) * 100.0
    )
}

/// The table's header.
pub const HEADER: &str = "| paths (tbf rate, one-way delay) | best path alone | sum of the paths alone | one TCP flow, Mbit/s (of the sum) | four flows | packets per path, % | late at the exit |\n|---|---|---|---|---|---|---|";
