//! `[flow.rate_control]`: a UDP flow paced by a rate controller (DCQCN's or PMQECN's reaction
//! point) instead of sending at a constant rate; the flow's `rate` is the most it sends.

use super::*;
use crate::schema::RawRateControl;
use mpsched_transport::cc::{CongestionControl, Dcqcn, DcqcnParams, PmqecnRp, PmqecnRpParams};
use mpsched_transport::rate::RateSender;

/// The receiver's CNPs, at most one per flow per this by default (DCQCN's notification point).
pub const DEFAULT_CNP_INTERVAL_PS: u64 = 50_000_000;

/// How long by default a sized rate-controlled flow's sender, having sent its last packet,
/// waits for the receiver's completion before it sends that packet again: 1 ms (ours; RDMA
/// NICs set theirs as 4.096 us x 2^n, about 1 ms at n = 8).
pub const DEFAULT_RETRANSMIT_TIMEOUT_PS: u64 = 1_000_000_000;

/// Largest `host_queue_limit` of a rate-controlled flow, as of a TCP flow's.
const MAX_PACED_HOST_QUEUE_LIMIT_BYTES: u64 = 1 << 30;

/// What a rate-controlled UDP flow's transport does beside its controller (the simulator's;
/// the kernel's paced sender runs unsized flows only).
///
/// A sized flow is a transfer: the sender numbers its packets, the receiver takes them in
/// order and drops what arrives beyond a gap, answering with a NAK that sends the sender back
/// to the first missing packet (go-back-N, as RDMA's reliable connections recover), and with
/// an ACK once it holds every byte, which ends the flow at both ends. A sender that has sent
/// its last packet and heard nothing for `retransmit_timeout_ps` sends it again, which the
/// receiver answers with a NAK or, if it is done, the ACK again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacedTransport {
    /// Payload bytes to deliver (None: send until the flow's `stop`).
    pub size_bytes: Option<u64>,
    /// The sender's wait after its last packet, ps (sized flows).
    pub retransmit_timeout_ps: u64,
    /// Bytes the sending host's interface queue may hold before the sender waits for room
    /// (None: it never waits, and the queue drops what overflows), as a TCP flow's
    /// `host_queue_limit`: an RDMA NIC serves its queue pairs in turn rather than queueing
    /// what their rate limiters let through.
    pub host_queue_limit_bytes: Option<u64>,
}

/// The transport keys of `[flow.rate_control]` for a flow of `size_bytes` (None: unsized).
pub(super) fn paced_transport_of(
    ctx: &Ctx<'_>,
    at: &str,
    r: &RawRateControl,
    size_bytes: Option<u64>,
) -> Result<PacedTransport, ScenarioError> {
    let retransmit_timeout_ps = match (&r.retransmit_timeout, size_bytes) {
        (None, _) => DEFAULT_RETRANSMIT_TIMEOUT_PS,
        (Some(_), None) => {
            return Err(ctx.err(
                format!("{at}.retransmit_timeout"),
                "applies to a flow with a `size` (a transfer); an unsized flow sends until its `stop`",
            ))
        }
        (Some(t), Some(_)) => {
            let field = format!("{at}.retransmit_timeout");
            let ps = ctx.time(&field, t)?;
            if ps < 1000 {
                return Err(ctx.err(field, "expected at least 1ns"));
            }
            ps
        }
    };
    let host_queue_limit_bytes = match &r.host_queue_limit {
        None => None,
        Some(q) => {
            let field = format!("{at}.host_queue_limit");
            let v = ctx.size(&field, q)?;
            if !(1..=MAX_PACED_HOST_QUEUE_LIMIT_BYTES).contains(&v) {
                return Err(ctx.err(field, format!("expected 1B to 1GiB, got {v}B")));
            }
            Some(v)
        }
    };
    Ok(PacedTransport {
        size_bytes,
        retransmit_timeout_ps,
        host_queue_limit_bytes,
    })
}

/// How a UDP flow's rate is controlled. Serialised (JSON) as `{"cc": "dcqcn", ...}` or
/// `{"cc": "pmqecn", ...}`: how the kernel backend hands it to its paced sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "cc", rename_all = "lowercase")]
pub enum RateControl {
    /// DCQCN's reaction point; the receiver returns a CNP for a CE-marked packet, at most one
    /// per `cnp_interval_ps`.
    Dcqcn {
        /// The controller's parameters.
        params: DcqcnParams,
        /// The receiver's CNP spacing, ps.
        cnp_interval_ps: u64,
    },
    /// PMQECN's reaction point (Algorithm 3), cut by switches' feedback.
    Pmqecn(PmqecnRpParams),
}

impl RateControl {
    /// The sender of a flow paced by this controller: `payload_bytes` datagrams (what the rate
    /// counts), the first due at `start_ns`, the controller's clock starting there. The
    /// simulator and the kernel's paced sender both build theirs here.
    pub fn sender(&self, payload_bytes: u32, start_ns: u64) -> Result<RateSender, String> {
        let cc: Box<dyn CongestionControl> = match *self {
            RateControl::Dcqcn { params, .. } => Box::new(Dcqcn::new(params)),
            RateControl::Pmqecn(p) => Box::new(PmqecnRp::new(p, start_ns)),
        };
        RateSender::new(cc, payload_bytes, start_ns)
    }

    /// The receiver's CNP spacing, ps: DCQCN's notification point; None where the receiver
    /// sends no CNPs (PMQECN: switches notify).
    pub fn cnp_interval_ps(&self) -> Option<u64> {
        match *self {
            RateControl::Dcqcn { cnp_interval_ps, .. } => Some(cnp_interval_ps),
            RateControl::Pmqecn(_) => None,
        }
    }
}

/// Parse `[flow.rate_control]` for a flow of at most `rate_bps`.
pub(super) fn rate_control_of(
    ctx: &Ctx<'_>,
    at: &str,
    r: &RawRateControl,
    rate_bps: u64,
) -> Result<RateControl, ScenarioError> {
    let rate = |key: &str, v: &Option<String>| -> Result<Option<u64>, ScenarioError> {
        v.as_deref().map(|s| ctx.rate(&format!("{at}.{key}"), s)).transpose()
    };
    let time = |key: &str, v: &Option<String>| -> Result<Option<u64>, ScenarioError> {
        v.as_deref().map(|s| ctx.time(&format!("{at}.{key}"), s)).transpose()
    };
    let only = |keys: &[(&str, bool)], cc: &str| -> Result<(), ScenarioError> {
        match keys.iter().find(|(_, set)| *set) {
            Some((k, _)) => Err(ctx.err(format!("{at}.{k}"), format!("does not apply to `{cc}`"))),
            None => Ok(()),
        }
    };
    let min_rate = rate("min_rate", &r.min_rate)?.unwrap_or((rate_bps / 1000).max(1));
    if min_rate == 0 || min_rate > rate_bps {
        return Err(ctx.err(
            format!("{at}.min_rate"),
            "expected above 0 and at most the flow's `rate`",
        ));
    }
    // Increases are at most the flow's rate (the controllers add them to rates).
    for (key, v) in [
        ("active_increase", &r.active_increase),
        ("additive_increase", &r.additive_increase),
        ("hyper_increase", &r.hyper_increase),
    ] {
        if rate(key, v)?.is_some_and(|x| x == 0 || x > rate_bps) {
            return Err(ctx.err(format!("{at}.{key}"), "expected above 0 and at most the flow's `rate`"));
        }
    }
    let positive_time = |key: &str, v: Option<u64>| -> Result<(), ScenarioError> {
        match v {
            Some(0) => Err(ctx.err(format!("{at}.{key}"), "expected a time above 0")),
            _ => Ok(()),
        }
    };
    match r.cc.as_str() {
        "dcqcn" => {
            only(
                &[
                    ("initial_rate", r.initial_rate.is_some()),
                    ("cycle", r.cycle.is_some()),
                    ("active_increase", r.active_increase.is_some()),
                ],
                "dcqcn",
            )?;
            let d = DcqcnParams::for_line_rate(rate_bps);
            let (increase, alpha, cnp) = (
                time("increase_period", &r.increase_period)?,
                time("alpha_period", &r.alpha_period)?,
                time("cnp_interval", &r.cnp_interval)?,
            );
            positive_time("increase_period", increase)?;
            positive_time("alpha_period", alpha)?;
            let g_shift = r.g_shift.unwrap_or(d.g_shift);
            if !(1..=20).contains(&g_shift) {
                return Err(ctx.err(format!("{at}.g_shift"), "expected 1 to 20 (alpha's gain 1/2 to 1/2^20)"));
            }
            let byte_counter = match &r.byte_counter {
                Some(s) => ctx.size(&format!("{at}.byte_counter"), s)?,
                None => d.byte_counter_bytes,
            };
            if byte_counter == 0 {
                return Err(ctx.err(format!("{at}.byte_counter"), "expected at least 1B"));
            }
            let params = DcqcnParams {
                line_rate_bps: rate_bps,
                min_rate_bps: min_rate,
                g_shift,
                alpha_period_ns: alpha.map_or(d.alpha_period_ns, |p| p / 1000),
                increase_period_ns: increase.map_or(d.increase_period_ns, |p| p / 1000),
                byte_counter_bytes: byte_counter,
                fast_recovery_steps: r.fast_recovery.unwrap_or(d.fast_recovery_steps),
                additive_increase_bps: rate("additive_increase", &r.additive_increase)?
                    .unwrap_or(d.additive_increase_bps),
                hyper_increase_bps: rate("hyper_increase", &r.hyper_increase)?.unwrap_or(d.hyper_increase_bps),
            };
            if params.alpha_period_ns == 0 || params.increase_period_ns == 0 {
                return Err(ctx.err(at.to_string(), "DCQCN's periods must be at least 1ns"));
            }
            Ok(RateControl::Dcqcn {
                params,
                cnp_interval_ps: cnp.unwrap_or(DEFAULT_CNP_INTERVAL_PS),
            })
        }
        "pmqecn" => {
            only(
                &[
                    ("increase_period", r.increase_period.is_some()),
                    ("alpha_period", r.alpha_period.is_some()),
                    ("g_shift", r.g_shift.is_some()),
                    ("byte_counter", r.byte_counter.is_some()),
                    ("additive_increase", r.additive_increase.is_some()),
                    ("hyper_increase", r.hyper_increase.is_some()),
                    ("cnp_interval", r.cnp_interval.is_some()),
                ],
                "pmqecn",
            )?;
            let d = PmqecnRpParams::paper(rate_bps);
            let cycle = time("cycle", &r.cycle)?;
            positive_time("cycle", cycle)?;
            let cycle_ns = cycle.map_or(d.cycle_ns, |c| c / 1000);
            if cycle_ns == 0 {
                return Err(ctx.err(format!("{at}.cycle"), "expected at least 1ns"));
            }
            let initial = rate("initial_rate", &r.initial_rate)?.unwrap_or(d.initial_rate_bps.max(min_rate));
            if initial < min_rate || initial > rate_bps {
                return Err(ctx.err(
                    format!("{at}.initial_rate"),
                    "expected from `min_rate` to the flow's `rate`",
                ));
            }
            Ok(RateControl::Pmqecn(PmqecnRpParams {
                initial_rate_bps: initial,
                line_rate_bps: rate_bps,
                min_rate_bps: min_rate,
                cycle_ns,
                fast_recovery_cycles: r.fast_recovery.unwrap_or(d.fast_recovery_cycles),
                active_increase_bps: rate("active_increase", &r.active_increase)?.unwrap_or(d.active_increase_bps),
            }))
        }
        cc => Err(ctx.err(format!("{at}.cc"), format!("expected `dcqcn` or `pmqecn`, got `{cc}`"))),
    }
}
