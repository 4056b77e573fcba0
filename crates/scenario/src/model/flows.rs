//! `[[flow]]` and `[tcp]`: UDP and TCP flows, their applications and TCP settings.

use super::*;
use std::collections::HashMap;

/// Every flow's hosts are connected: linked directly, or through switches (hosts do not
/// forward, so a path through another host does not count). Otherwise the simulator would
/// report 100 % loss without a word and the kernel backend fail after the whole run.
/// Linear: switches joined into components by one union-find pass over the links.
pub(super) fn flows_are_routable(
    ctx: &Ctx<'_>,
    flows: &[Flow],
    nodes: &[Node],
    links: &[Link],
) -> Result<(), ScenarioError> {
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    fn root(parent: &mut [usize], mut x: usize) -> usize {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    }
    let is_switch = |i: usize| nodes[i].kind == NodeKind::Switch;
    let mut direct = HashSet::new();
    for l in links {
        if is_switch(l.a) && is_switch(l.b) {
            let (ra, rb) = (root(&mut parent, l.a), root(&mut parent, l.b));
            parent[ra] = rb;
        } else if !is_switch(l.a) && !is_switch(l.b) {
            direct.insert((l.a.min(l.b), l.a.max(l.b)));
        }
    }
    // Per host: the components of the switches it is linked to.
    let mut reach: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for l in links {
        for (host, switch) in [(l.a, l.b), (l.b, l.a)] {
            if !is_switch(host) && is_switch(switch) {
                let r = root(&mut parent, switch);
                if !reach[host].contains(&r) {
                    reach[host].push(r);
                }
            }
        }
    }
    for (i, f) in flows.iter().enumerate() {
        let (a, b) = (f.src, f.dst);
        let connected = direct.contains(&(a.min(b), a.max(b))) || reach[a].iter().any(|r| reach[b].contains(r));
        if !connected {
            return Err(ctx.err(
                format!("flow[{i}]"),
                format!(
                    "no route from `{}` to `{}`: no chain of switches links them (hosts do not forward)",
                    nodes[a].name, nodes[b].name
                ),
            ));
        }
    }
    Ok(())
}

/// `[[flow]]` entries: at least one, names unique.
pub(super) fn flows_of(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    nodes: &[Node],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<Flow>, ScenarioError> {
    let mut flows: Vec<Flow> = Vec::new();
    let mut names = HashSet::new();
    for (i, f) in raw.flow.iter().enumerate() {
        let at = format!("flow[{i}]");
        check_name(ctx, format!("{at}.name"), &f.name)?;
        if !names.insert(f.name.as_str()) {
            return Err(ctx.err(format!("{at}.name"), format!("duplicate flow name `{}`", f.name)));
        }
        flows.push(flow_of(ctx, i, f, &raw.tcp, nodes, duration_ps, node_of, path_of)?);
    }
    if flows.is_empty() {
        return Err(ctx.err("flow", "expected at least one [[flow]]"));
    }
    senders_are_distinct(ctx, &flows)?;
    Ok(flows)
}

/// Switches' feedback and receivers' CNPs find a rate-controlled sender by its source address
/// and port: two such flows from one host and port would take each other's.
fn senders_are_distinct(ctx: &Ctx<'_>, flows: &[Flow]) -> Result<(), ScenarioError> {
    let mut seen = HashMap::new();
    for (i, f) in flows.iter().enumerate().filter(|(_, f)| f.rate_control.is_some()) {
        if let Some(&j) = seen.get(&(f.src, f.src_port)) {
            let other: &Flow = &flows[j];
            return Err(ctx.err(
                format!("flow[{i}].src_port"),
                format!(
                    "rate-controlled flow `{}` sends from the same host and port ({}) as `{}`: congestion notifications address a sender by them; give one a `src_port` of its own",
                    f.name, f.src_port, other.name
                ),
            ));
        }
        seen.insert((f.src, f.src_port), i);
    }
    Ok(())
}

/// One `[[flow]]`: ends, protocol, rate or TCP application, times, ECN, DSCP, pinned path.
#[allow(clippy::too_many_arguments)]
pub(super) fn flow_of(
    ctx: &Ctx<'_>,
    i: usize,
    f: &RawFlow,
    raw_tcp: &Option<RawTcp>,
    nodes: &[Node],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Flow, ScenarioError> {
    let at = format!("flow[{i}]");
    let src = node_of(format!("{at}.src"), &f.src)?;
    let dst = node_of(format!("{at}.dst"), &f.dst)?;
    for (k, n) in [("src", src), ("dst", dst)] {
        if nodes[n].kind != NodeKind::Host {
            return Err(ctx.err(
                format!("{at}.{k}"),
                format!("expected a host, `{}` is a switch", nodes[n].name),
            ));
        }
    }
    if src == dst {
        return Err(ctx.err(format!("{at}.dst"), "source and destination are the same host"));
    }
    let (protocol, rate_bps, tcp) = flow_transport(ctx, &at, f, raw_tcp)?;
    let payload = match &f.payload {
        Some(p) => ctx.size(&format!("{at}.payload"), p)?,
        None => u64::from(DEFAULT_PAYLOAD_BYTES),
    };
    if !(16..=65_507).contains(&payload) {
        return Err(ctx.err(
            format!("{at}.payload"),
            format!("expected 16B to 65507B (iperf needs 16 bytes for its header), got {payload}B"),
        ));
    }
    let start_ps = match &f.start {
        Some(s) => ctx.time(&format!("{at}.start"), s)?,
        None => 0,
    };
    let stop_ps = match &f.stop {
        Some(s) => ctx.time(&format!("{at}.stop"), s)?,
        None => duration_ps,
    };
    if stop_ps <= start_ps {
        return Err(ctx.err(format!("{at}.stop"), "expected a stop time after the start time"));
    }
    if stop_ps > duration_ps {
        return Err(ctx.err(
            format!("{at}.stop"),
            "expected a stop time within the scenario's duration",
        ));
    }
    let ecn = match f.ecn.as_deref().unwrap_or("not-ect") {
        "not-ect" | "none" => Ecn::NotEct,
        "ect0" | "ect(0)" => Ecn::Ect0,
        "ect1" | "ect(1)" => Ecn::Ect1,
        e => {
            return Err(ctx.err(
                format!("{at}.ecn"),
                format!("expected `not-ect`, `ect0` or `ect1`, got `{e}`"),
            ))
        }
    };
    let path = match &f.path {
        Some(p) => Some(path_of(format!("{at}.path"), p)?),
        None => None,
    };
    for (key, port) in [("src_port", f.src_port), ("dst_port", f.dst_port)] {
        if port == Some(0) {
            return Err(ctx.err(format!("{at}.{key}"), "expected a port from 1 to 65535 (0 is no port)"));
        }
    }
    let (rate_control, paced) = match (&f.rate_control, protocol) {
        (None, _) => (None, None),
        (Some(r), Protocol::Udp) => {
            let rc_at = format!("{at}.rate_control");
            let size = match &f.size {
                Some(sz) => {
                    let bytes = ctx.size(&format!("{at}.size"), sz)?;
                    if bytes == 0 {
                        return Err(ctx.err(format!("{at}.size"), "expected at least 1B"));
                    }
                    Some(bytes)
                }
                None => None,
            };
            (
                Some(rate_control_of(ctx, &rc_at, r, rate_bps)?),
                Some(paced_transport_of(ctx, &rc_at, r, size)?),
            )
        }
        (Some(_), _) => {
            return Err(ctx.err(
                format!("{at}.rate_control"),
                "applies to UDP flows only (TCP's rate is its congestion control's: `tcp.cc`)",
            ))
        }
    };
    let dscp = f.dscp.unwrap_or(0);
    if dscp > 63 {
        return Err(ctx.err(format!("{at}.dscp"), format!("expected 0 to 63, got {dscp}")));
    }
    Ok(Flow {
        name: f.name.clone(),
        src,
        dst,
        protocol,
        tcp,
        rate_bps,
        payload_bytes: payload as u32,
        start_ps,
        stop_ps,
        ecn,
        dscp,
        path,
        // Flow i's default source port: 40 000 + i, wrapping within 40 000-65 535 past
        // 25 536 flows (it overflowed there before, a panic in debug builds).
        src_port: f.src_port.unwrap_or(40_000 + (i % 25_536) as u16),
        dst_port: f.dst_port.unwrap_or(5201),
        rate_control,
        paced,
    })
}

/// A flow's protocol, and its offered rate (UDP) or TCP configuration and application.
pub(super) fn flow_transport(
    ctx: &Ctx<'_>,
    at: &str,
    f: &RawFlow,
    raw_tcp: &Option<RawTcp>,
) -> Result<(Protocol, u64, Option<TcpFlow>), ScenarioError> {
    let tcp_defaults = tcp_config(ctx, "tcp", TcpConfig::default(), &raw_tcp.clone().unwrap_or_default())?;
    let protocol = match f.protocol.as_deref().unwrap_or("udp") {
        "udp" => Protocol::Udp,
        "tcp" => Protocol::Tcp,
        "mptcp" => Protocol::Mptcp,
        p => {
            return Err(ctx.err(
                format!("{at}.protocol"),
                format!("expected `udp`, `tcp` or `mptcp`, got `{p}`"),
            ))
        }
    };
    if f.mptcp.is_some() && protocol != Protocol::Mptcp {
        return Err(ctx.err(
            format!("{at}.mptcp"),
            "applies to MPTCP flows only (`protocol = \"mptcp\"`)",
        ));
    }
    let (rate_bps, tcp) = match protocol {
        Protocol::Udp => {
            if f.size.is_some() && f.rate_control.is_none() {
                return Err(ctx.err(
                    format!("{at}.size"),
                    "a constant-rate UDP flow has no size: a UDP transfer is paced by a rate controller \
                     (`[flow.rate_control]`), or make it `protocol = \"tcp\"`",
                ));
            }
            for (k, v) in [
                ("request", f.request.is_some()),
                ("response", f.response.is_some()),
                ("requests", f.requests.is_some()),
                ("tcp", f.tcp.is_some()),
            ] {
                if v {
                    return Err(ctx.err(
                        format!("{at}.{k}"),
                        "applies to TCP and MPTCP flows only (`protocol = \"tcp\"`)",
                    ));
                }
            }
            let r = f
                .rate
                .as_deref()
                .ok_or_else(|| ctx.err(format!("{at}.rate"), "a UDP flow needs `rate`, e.g. \"4Mbps\""))?;
            (ctx.rate(&format!("{at}.rate"), r)?, None)
        }
        Protocol::Tcp | Protocol::Mptcp => {
            if f.rate.is_some() {
                return Err(ctx.err(
                    format!("{at}.rate"),
                    "a TCP flow's rate is what its congestion control finds; remove `rate`",
                ));
            }
            if f.ecn.is_some() {
                return Err(ctx.err(format!("{at}.ecn"), "for TCP, negotiate ECN with `tcp.ecn = true`"));
            }
            let config = tcp_config(
                ctx,
                &format!("{at}.tcp"),
                tcp_defaults.clone(),
                &f.tcp.clone().unwrap_or_default(),
            )?;
            let app = match (&f.size, &f.request, &f.response) {
                (None, None, None) => {
                    if f.requests.is_some() {
                        return Err(ctx.err(format!("{at}.requests"), "needs `request` and `response`"));
                    }
                    TcpApp::Bulk
                }
                (Some(sz), None, None) => {
                    let size_bytes = ctx.size(&format!("{at}.size"), sz)?;
                    if size_bytes == 0 {
                        return Err(ctx.err(format!("{at}.size"), "expected at least 1B"));
                    }
                    TcpApp::Transfer { size_bytes }
                }
                (None, Some(q), Some(r)) => {
                    let request_bytes = ctx.size(&format!("{at}.request"), q)?;
                    let response_bytes = ctx.size(&format!("{at}.response"), r)?;
                    if request_bytes == 0 || response_bytes == 0 {
                        return Err(ctx.err(format!("{at}.request"), "requests and responses need at least 1B"));
                    }
                    TcpApp::RequestResponse {
                        request_bytes,
                        response_bytes,
                        count: f.requests.unwrap_or(0),
                    }
                }
                _ => {
                    return Err(ctx.err(
                        at.to_string(),
                        "a TCP flow is bulk (no `size`), a transfer (`size`) or request / response (`request` and `response`)",
                    ))
                }
            };
            let mptcp = match protocol {
                Protocol::Mptcp => Some(mptcp_settings(ctx, at, &f.mptcp.clone().unwrap_or_default(), app)?),
                _ => None,
            };
            if config.cc.is_coupled() && mptcp.is_none() {
                return Err(ctx.err(
                    format!("{at}.tcp.cc"),
                    format!(
                        "`{}` couples the subflows of an MPTCP connection: use it with `protocol = \"mptcp\"`, or `reno` or `cubic` for TCP",
                        config.cc.linux_name()
                    ),
                ));
            }
            (0, Some(TcpFlow { config, app, mptcp }))
        }
    };
    Ok((protocol, rate_bps, tcp))
}

/// An MPTCP flow's settings: subflows, scheduler, version; request / response is refused.
fn mptcp_settings(ctx: &Ctx<'_>, at: &str, raw: &RawMptcp, app: TcpApp) -> Result<MptcpSettings, ScenarioError> {
    if let TcpApp::RequestResponse { .. } = app {
        return Err(ctx.err(
            format!("{at}.request"),
            "request / response over MPTCP is not modelled: an MPTCP flow is bulk or a transfer (`size`)",
        ));
    }
    let subflows = subflow_count(ctx, &format!("{at}.mptcp.subflows"), raw.subflows.unwrap_or(2))?;
    let scheduler = match raw.scheduler.as_deref().unwrap_or("default") {
        "default" | "lowest-rtt" => MptcpScheduler::LowestRtt,
        "roundrobin" | "round-robin" => MptcpScheduler::RoundRobin,
        x => {
            return Err(ctx.err(
                format!("{at}.mptcp.scheduler"),
                format!("expected `default` (lowest RTT with room) or `roundrobin`, got `{x}`"),
            ))
        }
    };
    let version = match raw.version.unwrap_or(1) {
        0 => mpsched_core::mptcp::MptcpVersion::V0,
        1 => mpsched_core::mptcp::MptcpVersion::V1,
        v => {
            return Err(ctx.err(
                format!("{at}.mptcp.version"),
                format!("expected 1 (RFC 8684) or 0 (RFC 6824), got {v}"),
            ))
        }
    };
    Ok(MptcpSettings {
        subflows,
        scheduler,
        version,
    })
}

/// A variant's `subflows`: every MPTCP flow gets `n`; refused where there is none.
pub(super) fn set_subflows(ctx: &Ctx<'_>, at: &str, n: u8, flows: &mut [Flow]) -> Result<(), ScenarioError> {
    let n = subflow_count(ctx, at, n)?;
    let mut any = false;
    for m in flows.iter_mut().filter_map(|x| x.tcp.as_mut()?.mptcp.as_mut()) {
        m.subflows = n;
        any = true;
    }
    if !any {
        return Err(ctx.err(
            at.to_string(),
            "the scenario has no MPTCP flow (`protocol = \"mptcp\"`)",
        ));
    }
    Ok(())
}

/// A variant's `protocol = "tcp"`: every MPTCP flow becomes a single-path TCP flow (a coupled
/// congestion control becomes Reno, its one-path form), and every rate-controlled UDP flow a
/// TCP flow with `tcp`'s settings: a transfer of its size, or bulk until its stop. Constant-rate
/// UDP flows stay as they are. Only `tcp` is accepted: a TCP flow has no MPTCP settings to
/// become MPTCP with, nor a rate controller to become paced UDP with.
pub(super) fn set_single_path(
    ctx: &Ctx<'_>,
    at: &str,
    protocol: &str,
    tcp: &TcpConfig,
    flows: &mut [Flow],
) -> Result<(), ScenarioError> {
    if protocol != "tcp" {
        return Err(ctx.err(
            at.to_string(),
            format!("expected `tcp` (MPTCP and rate-controlled UDP flows run as single-path TCP), got `{protocol}`"),
        ));
    }
    let mut any = false;
    for fl in flows.iter_mut().filter(|x| x.rate_control.is_some()) {
        let app = match fl.paced_size_bytes() {
            Some(size_bytes) => TcpApp::Transfer { size_bytes },
            None => TcpApp::Bulk,
        };
        fl.protocol = Protocol::Tcp;
        fl.tcp = Some(TcpFlow {
            config: tcp.clone(),
            app,
            mptcp: None,
        });
        fl.rate_bps = 0;
        fl.ecn = Ecn::NotEct;
        fl.rate_control = None;
        fl.paced = None;
        any = true;
    }
    for fl in flows.iter_mut().filter(|x| x.protocol == Protocol::Mptcp) {
        fl.protocol = Protocol::Tcp;
        if let Some(t) = fl.tcp.as_mut() {
            t.mptcp = None;
            if t.config.cc.is_coupled() {
                t.config.cc = mpsched_transport::cc::CcKind::Reno;
            }
        }
        any = true;
    }
    if !any {
        return Err(ctx.err(
            at.to_string(),
            "the scenario has no MPTCP flow (`protocol = \"mptcp\"`) and no rate-controlled UDP flow \
             (`[flow.rate_control]`) to run as TCP",
        ));
    }
    Ok(())
}

/// A subflow count, 1 to [`MAX_SUBFLOWS`].
pub(super) fn subflow_count(ctx: &Ctx<'_>, at: &str, n: u8) -> Result<u8, ScenarioError> {
    if !(1..=MAX_SUBFLOWS).contains(&n) {
        return Err(ctx.err(
            at.to_string(),
            format!("expected 1 to {MAX_SUBFLOWS} subflows, got {n}"),
        ));
    }
    Ok(n)
}

/// Largest `host_queue_limit`: a host's queue holds up to this much while its senders wait.
const MAX_HOST_QUEUE_LIMIT_BYTES: u64 = 1 << 30;

pub(super) fn tcp_config(ctx: &Ctx<'_>, at: &str, base: TcpConfig, raw: &RawTcp) -> Result<TcpConfig, ScenarioError> {
    let mut c = base;
    if let Some(cc) = &raw.cc {
        c.cc = CcKind::parse(cc).ok_or_else(|| {
            ctx.err(
                format!("{at}.cc"),
                format!("expected `reno`, `cubic`, `dctcp`, `lia` or `olia`, got `{cc}`"),
            )
        })?;
    }
    if let Some(m) = &raw.mss {
        let v = ctx.size(&format!("{at}.mss"), m)?;
        if !(64..=65_000).contains(&v) {
            return Err(ctx.err(format!("{at}.mss"), format!("expected 64B to 65000B, got {v}B")));
        }
        c.mss_bytes = v as u32;
    }
    if let Some(w) = raw.initial_window {
        if w == 0 {
            return Err(ctx.err(format!("{at}.initial_window"), "expected at least 1 segment"));
        }
        c.initial_window_segments = w;
    }
    if let Some(t) = &raw.min_rto {
        c.min_rto_ns = ctx.time(&format!("{at}.min_rto"), t)? / 1000;
    }
    if let Some(t) = &raw.delayed_ack {
        c.delayed_ack_ns = ctx.time(&format!("{at}.delayed_ack"), t)? / 1000;
    }
    if let Some(n) = raw.delayed_ack_segments {
        if n == 0 {
            return Err(ctx.err(format!("{at}.delayed_ack_segments"), "expected at least 1"));
        }
        c.delayed_ack_segments = n;
    }
    if let Some(b) = raw.nodelay {
        c.nodelay = b;
    }
    if let Some(w) = &raw.receive_window {
        let v = ctx.size(&format!("{at}.receive_window"), w)?;
        if v < u64::from(c.mss_bytes) {
            return Err(ctx.err(format!("{at}.receive_window"), "expected at least one segment"));
        }
        c.receive_window_bytes = v;
    }
    if let Some(e) = raw.ecn {
        c.ecn = e;
    }
    if let Some(q) = &raw.host_queue_limit {
        let v = ctx.size(&format!("{at}.host_queue_limit"), q)?;
        if !(u64::from(c.mss_bytes)..=MAX_HOST_QUEUE_LIMIT_BYTES).contains(&v) {
            return Err(ctx.err(
                format!("{at}.host_queue_limit"),
                format!("expected one segment ({}B) to 1GiB, got {v}B", c.mss_bytes),
            ));
        }
        c.host_queue_limit_bytes = Some(v);
    }
    if let Some(l) = raw.abc_limit {
        if l == 0 {
            return Err(ctx.err(format!("{at}.abc_limit"), "expected at least 1 segment"));
        }
        c.abc_limit_segments = Some(l);
    }
    if c.cc == CcKind::Dctcp && !c.ecn {
        return Err(ctx.err(format!("{at}.ecn"), "DCTCP needs ECN: set `ecn = true`"));
    }
    Ok(c)
}

/// How far above its host's links a UDP flow's offered rate may go before it is refused: the
/// simulator makes every offered packet, so a typo (`100Tbps` for `100Mbps`) would run for
/// hours; moderate overload of a host's own queue is legal and only warned of
/// ([`Scenario::warnings`]).
pub const MAX_UDP_OVERLOAD: u64 = 100;

/// The rate a host's links carry out of it together, bit/s.
pub(super) fn host_capacity_bps(links: &[Link], host: usize) -> u64 {
    links
        .iter()
        .filter(|l| l.a == host || l.b == host)
        .fold(0u64, |sum, l| sum.saturating_add(l.rate_bps))
}

/// Every node's [`host_capacity_bps`] at once, in one pass over the links (per flow, a pass
/// each would be quadratic with a flow per host).
pub(super) fn host_capacities_bps(links: &[Link], n_nodes: usize) -> Vec<u64> {
    let mut out = vec![0u64; n_nodes];
    for l in links {
        out[l.a] = out[l.a].saturating_add(l.rate_bps);
        out[l.b] = out[l.b].saturating_add(l.rate_bps);
    }
    out
}

/// Refuse a UDP flow offered at more than [`MAX_UDP_OVERLOAD`] times what its source's links
/// carry; `field` names the rate's key for flow `i`.
pub(super) fn udp_rates_are_sendable(
    ctx: &Ctx<'_>,
    flows: &[Flow],
    nodes: &[Node],
    links: &[Link],
    field: &dyn Fn(usize) -> String,
) -> Result<(), ScenarioError> {
    let capacities = host_capacities_bps(links, nodes.len());
    for (i, f) in flows.iter().enumerate().filter(|(_, f)| f.protocol == Protocol::Udp) {
        let capacity = capacities[f.src];
        if f.rate_bps > capacity.saturating_mul(MAX_UDP_OVERLOAD) {
            return Err(ctx.err(
                field(i),
                format!(
                    "{} is over {MAX_UDP_OVERLOAD} times what `{}`'s links carry ({}): a typo for a smaller unit?",
                    crate::units::format_rate_bps(f.rate_bps),
                    nodes[f.src].name,
                    crate::units::format_rate_bps(capacity)
                ),
            ));
        }
    }
    Ok(())
}
