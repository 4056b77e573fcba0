//! What the kernel backend refuses before it makes anything: the tools and kernel features a
//! scenario needs (root, iperf3, tc, netem, MPTCP, congestion controls), what runs only in the
//! simulator, tables beyond the eBPF maps, and the settings a kernel run ignores; and the
//! kernel's features probed before a run (netem, prio / ets for strict priority).

use super::queues::StrictPriority;
use super::{is_transfer, NetnsError, NetnsOptions};
use crate::ns::{self, is_root};
use crate::switchplane::SwitchPlanes;
use crate::trafficgen::TG_PORT;
use mpsched_core::packet::Ecn;
use mpsched_scenario::{Flow, Protocol, Scenario, TcpApp, TcpFlow};

/// Check what a scenario needs: root, iperf3, tc, and netem for propagation delay. Returns
/// whether the kernel has netem (then links get serialisation delay and propagation delay).
pub fn preflight(sc: &Scenario, opts: &NetnsOptions) -> Result<bool, NetnsError> {
    if !is_root() {
        return Err(NetnsError::Missing(
            "the netns backend needs root (network namespaces, tc and eBPF); run as root or use --backend sim".into(),
        ));
    }
    for tool in ["ip", "tc", "iperf3"] {
        if ns::run("sh", &["-c", &format!("command -v {tool}")]).is_err() {
            return Err(NetnsError::Missing(format!(
                "`{tool}` not found; install it (scripts/install-deps.sh installs iproute2 and iperf3)"
            )));
        }
    }
    if !sc.tunnels.is_empty() {
        let w = sc.wiring().map_err(NetnsError::Unsupported)?;
        super::tunnels::ends(sc, &w).map_err(NetnsError::Unsupported)?;
        if !std::path::Path::new("/dev/net/tun").exists() {
            return Err(NetnsError::Missing(
                "the scenario has tunnels, whose daemons need TUN devices, and /dev/net/tun is missing (modprobe tun); \
                 use --backend sim"
                    .into(),
            ));
        }
    }
    if sc.flows.iter().any(|f| f.protocol == Protocol::Mptcp) {
        if ns::run("sh", &["-c", "command -v mptcpize"]).is_err() {
            return Err(NetnsError::Missing(
                "the scenario has MPTCP flows, which run iperf3 under `mptcpize` (Debian's package mptcpize; \
                 scripts/install-deps.sh installs it); install it or use --backend sim"
                    .into(),
            ));
        }
        if std::fs::read_to_string("/proc/sys/net/mptcp/enabled").map_or(true, |v| v.trim() != "1") {
            return Err(NetnsError::Missing(
                "the scenario has MPTCP flows, and this kernel has no MPTCP or has it off (CONFIG_MPTCP, sysctl \
                 net.mptcp.enabled); use --backend sim"
                    .into(),
            ));
        }
    }
    for (i, l) in sc.links.iter().enumerate().filter(|(_, l)| l.queues > 1) {
        if l.ecn_threshold_pkts.is_some() {
            return Err(NetnsError::Unsupported(format!(
                "link[{i}] has {} queues and an ECN threshold; the kernel's marker (eBPF, at TC egress) sees the \
                 port, not its queues, so per-queue marking runs in the simulator only for now; use --backend sim",
                l.queues
            )));
        }
    }
    if let Some(f) = sc.failures.first() {
        return Err(NetnsError::Unsupported(format!(
            "failure[0] takes link[{}] down during the run; link failures run in the simulator only for now \
             (links down from the start, `[topology] down`, run on both); use --backend sim",
            f.link
        )));
    }
    super::rate_traces::check(sc).map_err(NetnsError::Unsupported)?;
    check_flow_ports(sc)?;
    // The traffic generator's servers listen on TG_PORT on every host that receives transfers.
    if let Some(f) = sc
        .flows
        .iter()
        .find(|f| !is_transfer(f) && f.dst_port == TG_PORT && sc.flows.iter().any(|t| is_transfer(t) && t.dst == f.dst))
    {
        return Err(NetnsError::Unsupported(format!(
            "flow `{}` uses port {TG_PORT} on `{}`, where the traffic generator serves the fixed-size transfers; \
             give it another `dst_port`",
            f.name, sc.nodes[f.dst].name
        )));
    }
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap_or_default();
    for t in sc
        .tunnels
        .iter()
        .filter(|t| t.transport == mpsched_scenario::SubtunnelTransport::Tcp)
    {
        let cc = t.tcp.cc.linux_name();
        if !available.split_whitespace().any(|x| x == cc) {
            return Err(NetnsError::Missing(format!(
                "tunnel `{}`'s TCP subtunnels use `{cc}`, which this kernel does not offer \
                 (tcp_available_congestion_control: {}); load its module (modprobe tcp_{cc}) or use --backend sim",
                t.name,
                available.trim()
            )));
        }
    }
    for f in &sc.flows {
        if let Some(t) = &f.tcp {
            if let TcpApp::RequestResponse { .. } = t.app {
                return Err(NetnsError::Unsupported(format!(
                    "flow `{}`: request / response runs in the simulator only (iperf3 has no such mode); use --backend sim",
                    f.name
                )));
            }
            let cc = t.config.cc.linux_name();
            if !available.split_whitespace().any(|x| x == cc) {
                return Err(NetnsError::Missing(format!(
                    "flow `{}` uses TCP `{cc}`, which this kernel does not offer (tcp_available_congestion_control: {}); \
                     load its module (modprobe tcp_{cc}) or use --backend sim",
                    f.name,
                    available.trim()
                )));
            }
        }
        // The paced sender sets the whole TOS byte on its UDP socket, CE included.
        if f.ecn == Ecn::Ce && f.rate_control.is_none() {
            return Err(NetnsError::Unsupported(format!(
                "flow `{}` sends CE; iperf3 cannot",
                f.name
            )));
        }
    }
    let have_netem = kernel_has_qdisc("netem");
    let Some(i) = sc.links.iter().position(|l| l.delay_ps > 0) else {
        return Ok(have_netem);
    };
    if have_netem || opts.ignore_delay {
        return Ok(have_netem);
    }
    let l = &sc.links[i];
    let delayed = sc.links.iter().filter(|l| l.delay_ps > 0).count();
    Err(NetnsError::Missing(format!(
        "the link between `{}` and `{}` has a propagation delay of {}{}, which needs the netem qdisc, and this \
         kernel has no sch_netem; pass --ignore-delay to run without the delay, or use --backend sim",
        sc.nodes[l.a].name,
        sc.nodes[l.b].name,
        mpsched_scenario::units::format_time_ps(l.delay_ps),
        match delayed {
            1 => String::new(),
            n => format!(" (and {} more links have delays)", n - 1),
        }
    )))
}

/// Settings of the scenario that only the simulator models, which a kernel run ignores, and
/// what a kernel run runs without (PMQECN's feedback): one line each, naming the setting and
/// the flows that have it.
pub fn ignored_on_the_kernel(sc: &Scenario) -> Vec<String> {
    let with = |has: fn(&TcpFlow) -> bool| -> Vec<&str> {
        sc.flows
            .iter()
            .filter(|f| f.tcp.as_ref().is_some_and(has))
            .map(|f| f.name.as_str())
            .collect()
    };
    let names = |v: &[&str]| {
        let shown: Vec<String> = v.iter().take(3).map(|n| format!("`{n}`")).collect();
        let more = v.len().saturating_sub(3);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    let mut out = Vec::new();
    let q = with(|t| t.config.host_queue_limit_bytes.is_some());
    if !q.is_empty() {
        out.push(format!(
            "tcp.host_queue_limit (flows {}) is the simulator's model of a host's queue; the kernel ignores it \
             (its hosts queue in their own qdisc, whose limit is the link's queue)",
            names(&q)
        ));
    }
    let pmqecn: Vec<&str> = sc
        .flows
        .iter()
        .filter(|f| matches!(f.rate_control, Some(mpsched_scenario::RateControl::Pmqecn(_))))
        .map(|f| f.name.as_str())
        .collect();
    let fed = (0..sc.nodes.len()).any(|i| {
        sc.program_of(i)
            .is_some_and(|(p, _)| crate::programs::SEND_RATE_FEEDBACK.contains(&p.name()))
    });
    if !pmqecn.is_empty() && !fed {
        out.push(format!(
            "rate_control.cc = \"pmqecn\" (flows {}): only a switch's rate feedback cuts PMQECN's reaction point, \
             and no switch here runs a program that sends it on the kernel ({}): these flows climb to their \
             line rate by active increase",
            names(&pmqecn),
            crate::programs::SEND_RATE_FEEDBACK.join(", ")
        ));
    }
    /// A TCP setting: its key, whether a flow sets it, and what the kernel does instead.
    type Setting = (&'static str, fn(&TcpFlow) -> bool, &'static str);
    let settings: [Setting; 3] = [
        (
            "tcp.min_rto",
            |t| t.config.min_rto_ns != mpsched_transport::tcp::TcpConfig::default().min_rto_ns,
            "the kernel's hosts keep Linux's 200 ms",
        ),
        (
            "tcp.delayed_ack",
            |t| t.config.delayed_ack_ns != mpsched_transport::tcp::TcpConfig::default().delayed_ack_ns,
            "Linux chooses its own delayed-ACK timeout, 40 ms at least",
        ),
        (
            "tcp.receive_window",
            |t| t.config.receive_window_bytes != mpsched_transport::tcp::TcpConfig::default().receive_window_bytes,
            "Linux tunes the receive buffer itself",
        ),
    ];
    for (key, set, why) in settings {
        let v = with(set);
        if !v.is_empty() {
            out.push(format!(
                "{key} (flows {}) applies in the simulator only: {why}",
                names(&v)
            ));
        }
    }
    let a = with(|t| t.config.abc_limit_segments.is_some());
    if !a.is_empty() {
        out.push(format!(
            "tcp.abc_limit (flows {}) is the simulator's slow-start limit per ACK (RFC 3465's L); the kernel \
             ignores it (Linux has no such setting)",
            names(&a)
        ));
    }
    out
}

/// [`ignored_on_the_kernel`] on standard error as warnings, and how strict priority is built
/// as a note, each line once per process (a plan runs [`check`] and then every repetition).
pub(super) fn warn_ignored(
    sc: &Scenario,
    w: &mpsched_topo::Wiring,
    strict: Option<StrictPriority>,
    planes: &dyn SwitchPlanes,
) {
    use std::io::Write as _;
    static SHOWN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Ok(mut shown) = SHOWN.lock() else { return };
    let warnings = ignored_on_the_kernel(sc).into_iter().map(|w| format!("warning: {w}"));
    let note = strict
        .and_then(|how| strict_priority_note_with(sc, &strict_priority_description(sc, w, how, planes)))
        .map(|n| format!("note: {n}"));
    for line in warnings.chain(note) {
        if !shown.contains(&line) {
            // A standard error that cannot take it (a full disk) loses the line, not the run.
            let _ = writeln!(std::io::stderr(), "{line}");
            shown.push(line);
        }
    }
}

/// Refuse, before anything is made, flows whose receivers would clash on a port (each iperf3
/// flow has its own server on its port; paced flows' receivers share one, each connected to
/// its sender) and paced flows whose datagrams cannot hold the paced header.
pub fn check_flow_ports(sc: &Scenario) -> Result<(), NetnsError> {
    if let Some(f) = sc
        .flows
        .iter()
        .find(|f| f.rate_control.is_some() && (f.payload_bytes as usize) < mpsched_core::rate_wire::DATA_HEADER_BYTES)
    {
        return Err(NetnsError::Unsupported(format!(
            "flow `{}` is paced by a rate controller with {}-byte payloads; on the kernel each datagram carries its \
             number and send time in its first {} bytes (crates/core/src/rate_wire.rs), so give it a `payload` of at \
             least that",
            f.name,
            f.payload_bytes,
            mpsched_core::rate_wire::DATA_HEADER_BYTES
        )));
    }
    // Each bulk flow has its own iperf3 server, listening on the flow's port.
    let bulk: Vec<&Flow> = sc.flows.iter().filter(|f| !is_transfer(f)).collect();
    // Paced flows' receivers share a port, each connected to its own sender.
    let both_paced = |f: &Flow, g: &Flow| f.rate_control.is_some() && g.rate_control.is_some();
    for (k, f) in bulk.iter().enumerate() {
        let clash = |g: &&&Flow| g.dst == f.dst && g.dst_port == f.dst_port && !both_paced(f, g);
        if let Some(g) = bulk[..k].iter().find(clash) {
            return Err(NetnsError::Unsupported(format!(
                "flows `{}` and `{}` both go to port {} on `{}`; on the kernel each has its own iperf3 server \
                 there, so give one another `dst_port`",
                g.name, f.name, f.dst_port, sc.nodes[f.dst].name
            )));
        }
    }
    Ok(())
}

/// Whether the kernel offers qdisc `kind` (tried on the loopback of a scratch namespace without
/// a name, so that checking makes no namespace anyone can see or a signal can leave).
pub fn kernel_has_qdisc(kind: &str) -> bool {
    kernel_accepts_qdisc(&[kind])
}

/// Whether the kernel takes the root qdisc `args` (`tc qdisc add ... root` arguments: a kind
/// and its parameters, for kinds that need some, as `ets`), tried as [`kernel_has_qdisc`] does.
pub fn kernel_accepts_qdisc(args: &[&str]) -> bool {
    let Ok(n) = ns::AnonNetns::create() else {
        return false;
    };
    let mut all = vec!["qdisc", "add", "dev", "lo", "root"];
    all.extend_from_slice(args);
    n.enter(|| ns::run("tc", &all).is_ok()).unwrap_or(false)
}

/// How the kernel realises the scenario's strict-priority ports (probed once per process,
/// [`StrictPriority::detect`]), if it has any.
pub fn strict_priority_for(sc: &Scenario) -> Option<StrictPriority> {
    sc.links.iter().any(is_strict_priority).then(StrictPriority::detect)
}

/// Whether `l`'s ports have several queues served by strict priority.
fn is_strict_priority(l: &mpsched_scenario::Link) -> bool {
    l.queues > 1 && l.discipline == mpsched_topo::QueueDiscipline::StrictPriority
}

/// The note a run prints on how its strict-priority ports are built: the first such link and
/// the realisation.
pub fn strict_priority_note(sc: &Scenario, how: StrictPriority) -> Option<String> {
    strict_priority_note_with(sc, &how.describe())
}

/// How the strict-priority ports of `sc` are built with `planes` as the switches: the kernel's
/// realisation `how` where the kernel serves them (hosts' ports, and switch ports on the eBPF
/// data plane), the switch's own queues where it serves them (BMv2).
pub fn strict_priority_description(
    sc: &Scenario,
    w: &mpsched_topo::Wiring,
    how: StrictPriority,
    planes: &dyn SwitchPlanes,
) -> String {
    let by_switch = planes.port_queues(&mpsched_topo::QueueDiscipline::StrictPriority)
        == Ok(crate::switchplane::QueuesServedBy::Switch);
    let own = planes.own_queues_description().filter(|_| by_switch);
    let ends = || {
        sc.links
            .iter()
            .filter(|l| is_strict_priority(l))
            .flat_map(|l| [l.a, l.b])
    };
    let at_hosts = ends().any(|n| w.switches[n].is_none());
    match own {
        Some(own) if at_hosts => format!("at switches, {own}; at hosts, {}", how.describe()),
        Some(own) => own,
        None => how.describe(),
    }
}

/// The note on strict-priority ports with the realisation described as `how`.
fn strict_priority_note_with(sc: &Scenario, how: &str) -> Option<String> {
    let (i, l) = sc.links.iter().enumerate().find(|(_, l)| is_strict_priority(l))?;
    let more = sc.links.iter().filter(|l| is_strict_priority(l)).count() - 1;
    Some(format!(
        "link[{i}] (`{}` - `{}`, {} queues{}): {}",
        sc.nodes[l.a].name,
        sc.nodes[l.b].name,
        l.queues,
        match more {
            0 => String::new(),
            n => format!(", and {n} more strict-priority links"),
        },
        how
    ))
}

/// Refuse, before anything is made, a switch port of several queues that this data plane
/// cannot serve under its link's discipline (BMv2 serves strict priority only); the message
/// names the link, the node and the backend.
pub fn check_port_queues(sc: &Scenario, w: &mpsched_topo::Wiring, planes: &dyn SwitchPlanes) -> Result<(), NetnsError> {
    for (li, l) in sc.links.iter().enumerate().filter(|(_, l)| l.queues > 1) {
        for node in [l.a, l.b].into_iter().filter(|&n| w.switches[n].is_some()) {
            planes.port_queues(&l.discipline).map_err(|why| {
                NetnsError::Unsupported(format!(
                    "link[{li}] (`{}` - `{}`, {} queues): switch `{}`'s port cannot run on the {} backend: {why}",
                    sc.nodes[l.a].name,
                    sc.nodes[l.b].name,
                    l.queues,
                    sc.nodes[node].name,
                    planes.backend_name()
                ))
            })?;
        }
    }
    Ok(())
}

/// Refuse, before anything is made, a switch whose program this data plane cannot run: one
/// with no eBPF object, or whose object the kernel has no loader for
/// ([`crate::programs::KERNEL_PROGRAMS`]); on BMv2, one with no P4 program. The message names
/// the node, the program and the backend.
pub fn check_programs(sc: &Scenario, w: &mpsched_topo::Wiring, planes: &dyn SwitchPlanes) -> Result<(), NetnsError> {
    for (i, cfg) in w.switches.iter().enumerate() {
        if cfg.is_none() {
            continue;
        }
        let Some((program, _)) = sc.program_of(i) else {
            continue;
        };
        planes.supports(program).map_err(|why| {
            NetnsError::Unsupported(format!(
                "switch `{}` runs `{}`, which the {} backend cannot run: {why}; use --backend sim",
                sc.nodes[i].name,
                program.name(),
                planes.backend_name()
            ))
        })?;
    }
    Ok(())
}

/// iperf3 runs a flow for whole seconds (`-t` is an integer), so a flow it runs must last one
/// at least: a shorter one (a sub-second `--duration`) ran about a second and its bytes were
/// divided by the shorter time (760 Mbit/s through a 50 Mbit/s bottleneck).
pub fn check_iperf_durations(sc: &Scenario) -> Result<(), NetnsError> {
    const MIN_IPERF_PS: u64 = 1_000_000_000_000;
    let short = sc
        .flows
        .iter()
        .filter(|f| !super::is_transfer(f) && !super::paced::is_paced(f))
        .find(|f| f.stop_ps.saturating_sub(f.start_ps) < MIN_IPERF_PS);
    match short {
        Some(f) => Err(NetnsError::Unsupported(format!(
            "flow `{}` lasts {} on the kernel, where iperf3 runs whole seconds: at least 1s (a longer --duration), or --backend sim",
            f.name,
            mpsched_scenario::units::format_time_ps(f.stop_ps.saturating_sub(f.start_ps))
        ))),
        None => Ok(()),
    }
}

/// Refuse, before anything is made, a scenario whose switch tables exceed the eBPF program's
/// maps (`bpf/mpsched.h`): ports, splitting and confluence groups, routes, paths per group.
pub fn check_kernel_limits(sc: &Scenario, w: &mpsched_topo::Wiring) -> Result<(), NetnsError> {
    use crate::layout::{MAX_ECMP_GROUPS, MAX_GROUPS, MAX_PATHS, MAX_PORTS, MAX_ROUTES};
    for (i, cfg) in w.switches.iter().enumerate() {
        let Some(cfg) = cfg else { continue };
        let name = &sc.nodes[i].name;
        let over = |what: &str, n: usize, max: usize| {
            NetnsError::Unsupported(format!(
                "switch `{name}` needs {n} {what}; the kernel data plane holds {max} (bpf/mpsched.h); \
                 use --backend sim"
            ))
        };
        let checks = [
            ("ports", w.ports[i].len(), MAX_PORTS),
            ("splitting groups", cfg.splits.len(), MAX_GROUPS),
            ("confluence groups", cfg.confluences.len(), MAX_GROUPS),
            ("routes", cfg.routes.len(), MAX_ROUTES),
            ("ECMP groups", cfg.ecmp_groups.len(), MAX_ECMP_GROUPS),
            (
                "paths in one group",
                cfg.splits.iter().map(|s| s.ports.len()).max().unwrap_or(0),
                MAX_PATHS,
            ),
        ];
        if let Some(&(what, n, max)) = checks.iter().find(|c| c.1 > c.2) {
            return Err(over(what, n, max));
        }
        if let Some(g) = cfg
            .splits
            .iter()
            .find(|g| matches!(g.scheduler, mpsched_core::sched::SchedulerConfig::Ecmp))
        {
            return Err(NetnsError::Unsupported(format!(
                "switch `{name}`, splitting group {}: ECMP is not in the kernel data plane yet (RS, WRR, DWRR and \
                 single are); use --backend sim",
                g.group
            )));
        }
    }
    if sc.sample_interval_ps < MIN_KERNEL_SAMPLE_INTERVAL_PS {
        return Err(NetnsError::Unsupported(format!(
            "scenario.sample_interval is {} µs; on the kernel at least {} ms: iperf3 reports every 0.1 s at \
             the finest and the sampler reads /proc/net/dev every few milliseconds; use --backend sim for finer",
            sc.sample_interval_ps / 1_000_000,
            MIN_KERNEL_SAMPLE_INTERVAL_PS / 1_000_000_000
        )));
    }
    // htb keeps rates in bytes per second: below 8 bit/s tc has no rate to give it.
    if let Some((i, l)) = sc
        .links
        .iter()
        .enumerate()
        .find(|(_, l)| l.rate_bps < MIN_KERNEL_RATE_BPS)
    {
        return Err(NetnsError::Unsupported(format!(
            "link[{i}] runs at {} bit/s; the kernel's htb counts whole bytes per second, so at least {MIN_KERNEL_RATE_BPS} bit/s; \
             use --backend sim",
            l.rate_bps
        )));
    }
    Ok(())
}

/// The finest sample interval the kernel backend resolves (iperf3's finest report interval).
pub const MIN_KERNEL_SAMPLE_INTERVAL_PS: u64 = 100_000_000_000;

/// The slowest link htb can shape: one byte per second.
pub const MIN_KERNEL_RATE_BPS: u64 = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use mpsched_scenario::Scenario;

    /// Issue 45: a flow iperf3 would run for less than a second (a sub-second `--duration`) is
    /// refused before anything is made; it reported 760 Mbit/s through a 50 Mbit/s bottleneck.
    #[test]
    fn a_flow_shorter_than_iperf3s_second_is_refused() {
        let text = include_str!("../../../../scenarios/tcp/two-flows.toml");
        let sc = Scenario::from_toml(text, "two-flows.toml").unwrap();
        assert!(check_iperf_durations(&sc).is_ok());
        let e = check_iperf_durations(&sc.cut_to(500_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("flow `tcp1` lasts 500ms") && e.contains("whole seconds"),
            "{e}"
        );
    }

    /// Issue 27 item 14: the simulator-only TCP settings are named, with their flows, for a
    /// warning; a scenario without them has none.
    #[test]
    fn simulator_only_tcp_settings_are_named_for_the_kernel() {
        let text = |tcp: &str| {
            format!(
                "[scenario]\nname = \"x\"\nduration = \"1s\"\n[tcp]\ncc = \"cubic\"\n{tcp}\n\
                 [[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"b\"\nkind = \"host\"\n\
                 [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\n\
                 [[flow]]\nname = \"t\"\nsrc = \"a\"\ndst = \"b\"\nprotocol = \"tcp\"\n"
            )
        };
        let sc = Scenario::from_toml(&text("host_queue_limit = \"64KB\"\nabc_limit = 2"), "x.toml").unwrap();
        let w = ignored_on_the_kernel(&sc);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("tcp.host_queue_limit (flows `t`)"), "{w:?}");
        assert!(
            w[1].starts_with("tcp.abc_limit (flows `t`)") && w[1].contains("ignores"),
            "{w:?}"
        );
        let sc = Scenario::from_toml(&text(""), "x.toml").unwrap();
        assert!(ignored_on_the_kernel(&sc).is_empty());
        // A PMQECN-paced flow is said to go uncut where no switch runs a program that sends
        // its feedback (here, no switch at all).
        let udp = text("").replace(
            "protocol = \"tcp\"\n",
            "rate = \"5Mbps\"\nrate_control = { cc = \"pmqecn\" }\n",
        );
        let w = ignored_on_the_kernel(&Scenario::from_toml(&udp, "x.toml").unwrap());
        assert!(
            w.len() == 1 && w[0].contains("flows `t`") && w[0].contains("no switch here runs"),
            "{w:?}"
        );
    }

    /// A run with strict-priority ports says how they are built, naming the first such link;
    /// one without says nothing (and probes nothing).
    #[test]
    fn strict_priority_ports_are_named_with_their_realisation() {
        let text = |discipline: &str| {
            format!(
                "[scenario]\nname = \"x\"\nduration = \"1s\"\n\
                 [[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"b\"\nkind = \"host\"\n\
                 [[link]]\na = \"a\"\nb = \"b\"\nrate = \"10Mbps\"\nqueues = 3\ndiscipline = \"{discipline}\"\n\
                 [[flow]]\nname = \"f\"\nsrc = \"a\"\ndst = \"b\"\nrate = \"1Mbps\"\n"
            )
        };
        let sc = Scenario::from_toml(&text("strict-priority"), "x.toml").unwrap();
        let note = strict_priority_note(&sc, StrictPriority::HtbClassPriority).unwrap();
        assert!(
            note.starts_with("link[0] (`a` - `b`, 3 queues): strict priority approximated by htb class priorities"),
            "{note}"
        );
        let note = strict_priority_note(&sc, StrictPriority::Prio).unwrap();
        assert!(
            note.ends_with("strict priority by the prio qdisc (the highest queue in band 0)"),
            "{note}"
        );
        let sc = Scenario::from_toml(&text("wrr"), "x.toml").unwrap();
        assert_eq!(strict_priority_note(&sc, StrictPriority::Prio), None);
        assert_eq!(
            strict_priority_for(&sc),
            None,
            "no probe without a strict-priority port"
        );
    }

    /// Paced flows (`[flow.rate_control]`) run on the kernel: two of them may share a receiving
    /// port, an iperf3 flow may not share one with them; a payload below the paced header is
    /// refused by flow name before anything is made.
    #[test]
    fn paced_flows_share_ports_and_need_room_for_their_header() {
        let text = |a: &str, b: &str| {
            format!(
                "[scenario]\nname = \"x\"\nduration = \"1s\"\n\
                 [[node]]\nname = \"h1\"\nkind = \"host\"\n[[node]]\nname = \"h2\"\nkind = \"host\"\n\
                 [[link]]\na = \"h1\"\nb = \"h2\"\nrate = \"10Mbps\"\n\
                 [[flow]]\nname = \"a\"\nsrc = \"h1\"\ndst = \"h2\"\nrate = \"5Mbps\"\n{a}\n\
                 [[flow]]\nname = \"b\"\nsrc = \"h1\"\ndst = \"h2\"\nrate = \"5Mbps\"\n{b}\n"
            )
        };
        let check = |a: &str, b: &str| {
            let sc = Scenario::from_toml(&text(a, b), "x.toml").unwrap();
            check_flow_ports(&sc).map_err(|e| e.to_string())
        };
        let dcqcn = "rate_control = { cc = \"dcqcn\" }";
        check(dcqcn, dcqcn).unwrap();
        let e = check(dcqcn, "").unwrap_err();
        assert!(e.contains("`a` and `b` both go to port 5201"), "{e}");
        check("", "").unwrap_err();
        let e = check(&format!("payload = \"16B\"\n{dcqcn}"), dcqcn).unwrap_err();
        assert!(
            e.contains("flow `a`") && e.contains("16-byte") && e.contains("24 bytes"),
            "{e}"
        );
    }

    /// A data plane that runs `multipath` only.
    #[derive(Debug)]
    struct MultipathOnly;

    impl SwitchPlanes for MultipathOnly {
        fn backend_name(&self) -> &'static str {
            "narrow"
        }
        fn description(&self) -> &'static str {
            "a test data plane"
        }
        fn switch_name(&self) -> &'static str {
            "narrow"
        }
        fn supports(&self, program: &dyn mpsched_programs::SwitchProgram) -> Result<(), String> {
            match program.name() {
                "multipath" => Ok(()),
                n => Err(format!("program `{n}` has no loader here")),
            }
        }
        fn start(
            &self,
            _: &crate::ns::Netns,
            _: &crate::dataplane::NodeTables,
        ) -> Result<Box<dyn crate::switchplane::SwitchPlane>, NetnsError> {
            unreachable!("never started")
        }
    }

    /// A switch whose program the data plane cannot load is refused before anything is made,
    /// naming the node, the program and the backend; the eBPF planes load every registered one.
    #[test]
    fn a_program_the_data_plane_cannot_load_is_refused_by_node_program_and_backend() {
        let text = "[scenario]\nname = \"x\"\nduration = \"1s\"\nprogram = \"letflow\"\n\
                    [[node]]\nname = \"a\"\nkind = \"host\"\n[[node]]\nname = \"s1\"\nkind = \"switch\"\n\
                    [[node]]\nname = \"b\"\nkind = \"host\"\n\
                    [[link]]\na = \"a\"\nb = \"s1\"\nrate = \"10Mbps\"\n\
                    [[link]]\na = \"s1\"\nb = \"b\"\nrate = \"10Mbps\"\n\
                    [[flow]]\nname = \"f\"\nsrc = \"a\"\ndst = \"b\"\nrate = \"1Mbps\"\n";
        let sc = Scenario::from_toml(text, "x.toml").unwrap();
        let w = sc.wiring().unwrap();
        let err = check_programs(&sc, &w, &MultipathOnly).unwrap_err().to_string();
        assert!(
            err.contains("switch `s1`") && err.contains("`letflow`") && err.contains("narrow backend"),
            "{err}"
        );
        check_programs(&sc, &w, &crate::switchplane::EbpfPlanes).unwrap();
    }

    /// A switch with more ports than the eBPF program holds is refused by name, before anything
    /// is made (it used to fail as a map update after the namespaces existed).
    #[test]
    fn tables_beyond_the_ebpf_maps_are_refused_by_name() {
        let mut text = String::from("[scenario]\nname = \"star\"\nduration = \"1s\"\n");
        text.push_str("[[node]]\nname = \"hub\"\nkind = \"switch\"\n");
        for h in 0..17 {
            text.push_str(&format!("[[node]]\nname = \"h{h}\"\nkind = \"host\"\n"));
            text.push_str(&format!("[[link]]\na = \"h{h}\"\nb = \"hub\"\nrate = \"1Gbps\"\n"));
        }
        text.push_str("[[flow]]\nname = \"f\"\nsrc = \"h0\"\ndst = \"h1\"\nrate = \"1Mbps\"\n");
        let sc = Scenario::from_toml(&text, "star.toml").unwrap();
        let err = check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("`hub`") && err.contains("17 ports") && err.contains("16"),
            "{err}"
        );
        let fits = text.replace("[[node]]\nname = \"h16\"\nkind = \"host\"\n", "");
        let fits = fits.replace("[[link]]\na = \"h16\"\nb = \"hub\"\nrate = \"1Gbps\"\n", "");
        let sc = Scenario::from_toml(&fits, "star.toml").unwrap();
        check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap();
    }

    /// Hardening item 6: what the kernel would refuse only after the namespaces exist (ECMP
    /// in a group, a rate htb cannot hold) is refused here, before anything is made.
    #[test]
    fn ecmp_sub_byte_rates_and_fine_samples_are_refused_before_anything_is_made() {
        let base = "[scenario]\nname = \"x\"\nduration = \"1s\"\n\
            [[node]]\nname = \"h1\"\nkind = \"host\"\n[[node]]\nname = \"s1\"\nkind = \"switch\"\n\
            [[node]]\nname = \"s2\"\nkind = \"switch\"\n[[node]]\nname = \"s3\"\nkind = \"switch\"\n\
            [[node]]\nname = \"s4\"\nkind = \"switch\"\n[[node]]\nname = \"h2\"\nkind = \"host\"\n\
            [[link]]\na = \"h1\"\nb = \"s1\"\nrate = \"RATE\"\n[[link]]\na = \"s1\"\nb = \"s2\"\nrate = \"1Gbps\"\n\
            [[link]]\na = \"s1\"\nb = \"s3\"\nrate = \"1Gbps\"\n[[link]]\na = \"s2\"\nb = \"s4\"\nrate = \"1Gbps\"\n\
            [[link]]\na = \"s3\"\nb = \"s4\"\nrate = \"1Gbps\"\n[[link]]\na = \"s4\"\nb = \"h2\"\nrate = \"1Gbps\"\n\
            [[path]]\nname = \"p1\"\nnodes = [\"s1\", \"s2\", \"s4\"]\n\
            [[path]]\nname = \"p2\"\nnodes = [\"s1\", \"s3\", \"s4\"]\n\
            [[split]]\nname = \"g\"\nsrc = \"h1\"\ndst = \"h2\"\npaths = [\"p1\", \"p2\"]\nSCHED\n\
            [[flow]]\nname = \"f\"\nsrc = \"h1\"\ndst = \"h2\"\nrate = \"1bps\"\n";
        let check = |rate: &str, sched: &str| {
            let sc = Scenario::from_toml(&base.replace("RATE", rate).replace("SCHED", sched), "x.toml").unwrap();
            check_kernel_limits(&sc, &sc.wiring().unwrap()).map_err(|e| e.to_string())
        };
        let (ecmp, wrr) = ("scheduler = \"ecmp\"", "scheduler = \"wrr\"\nweights = [1, 1]");
        let err = check("1Gbps", ecmp).unwrap_err();
        assert!(err.contains("`s1`") && err.contains("ECMP"), "{err}");
        let err = check("1bps", wrr).unwrap_err();
        assert!(err.contains("link[0]") && err.contains("at least 8 bit/s"), "{err}");
        check("8bps", wrr).unwrap();
        // Item 12: a sample interval finer than the sampler resolves (4 362 Mbit/s on a
        // 4 Mbit/s link at 1 µs) is refused too.
        let fine = base
            .replace("RATE", "1Gbps")
            .replace("SCHED", wrr)
            .replace("duration = \"1s\"", "duration = \"1s\"\nsample_interval = \"1ms\"");
        let sc = Scenario::from_toml(&fine, "x.toml").unwrap();
        let err = check_kernel_limits(&sc, &sc.wiring().unwrap()).unwrap_err().to_string();
        assert!(
            err.contains("sample_interval") && err.contains("at least 100 ms"),
            "{err}"
        );
    }
}
