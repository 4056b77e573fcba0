//! `[[workload]]`: TCP transfers (or rate-controlled UDP transfers) drawn from a flow-size CDF,
//! Poisson arrivals per client at a target load, expanded into `[[flow]]` entries before the
//! flows are validated.

use super::*;
use crate::workload::{exponential, EmpiricalCdf};
use mpsched_core::rng::SeededRandom;

/// Most flows a scenario may have, its own and those its workloads draw, checked from a
/// workload's expected count before any is drawn: validating a scenario holds about 2 KB a
/// flow (281 138 web-search flows took 547 MB, with a variant's copy), so about 500 MB at the
/// bound (a million took 2.3 GB and 28 s). A 10 000-UE ATSSS scenario has 21 832 flows.
pub const MAX_FLOWS: u64 = 250_000;

/// The flows of every `[[workload]]`, as `[[flow]]` entries.
pub(super) fn workload_flows(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    nodes: &[Node],
    links: &[Link],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<RawFlow>, ScenarioError> {
    let mut out = Vec::new();
    let own = raw.flow.len() as u64;
    if own > MAX_FLOWS {
        return Err(ctx.err("flow", format!("{own} flows; at most {MAX_FLOWS}")));
    }
    // Each client's next source port for paced flows, after the file's own flows' defaults
    // (40 000 + their index), counted across workloads.
    let mut ports = vec![raw.flow.len() as u64; nodes.len()];
    for (i, w) in raw.workload.iter().enumerate() {
        let at = |k: &str| format!("workload[{i}].{k}");
        check_name(ctx, at("name"), &w.name)?;
        let (clients, servers) = workload_hosts(ctx, w, &at, nodes, node_of)?;
        let start_ps = w.start.as_deref().map_or(Ok(0), |s| ctx.time(&at("start"), s))?;
        let stop_ps = w
            .stop
            .as_deref()
            .map_or(Ok(duration_ps), |s| ctx.time(&at("stop"), s))?;
        // Before a flow is drawn: a stop past the run's end would draw flows until the bound on
        // their number, each of them then refused for stopping after the run.
        if stop_ps > duration_ps {
            return Err(ctx.err(
                at("stop"),
                format!(
                    "{} is after the run's end (scenario.duration = {})",
                    crate::units::format_time_ps(stop_ps),
                    crate::units::format_time_ps(duration_ps)
                ),
            ));
        }
        if stop_ps <= start_ps {
            return Err(ctx.err(at("stop"), "arrivals need stop after start"));
        }
        // The workload's own seed, else the scenario's: a sweep over seeds draws new flows.
        let seed = w.seed.or(raw.scenario.seed).unwrap_or(1);
        let dst_of = destinations(ctx, &at("pattern"), w.pattern.as_deref(), &clients, &servers, seed)?;
        let mut rng = SeededRandom::new(seed);
        let cdf = w.cdf.as_deref().map(|c| cdf_of(ctx, &at("cdf"), c)).transpose()?;
        let protocol = match w.protocol.as_deref().unwrap_or("tcp") {
            p @ ("tcp" | "mptcp" | "udp") => p,
            p => return Err(ctx.err(at("protocol"), format!("expected `tcp`, `mptcp` or `udp`, got `{p}`"))),
        };
        if w.mptcp.is_some() && protocol != "mptcp" {
            return Err(ctx.err(at("mptcp"), "applies to MPTCP workloads only (`protocol = \"mptcp\"`)"));
        }
        // Poisson arrivals draw sizes (their missing `cdf` is refused below, at its key).
        let sized = cdf.is_some() || w.arrivals.as_deref().is_none_or(|a| a == "poisson");
        let paced = paced_rates(ctx, &at, w, protocol, (&clients, nodes), links, sized)?;
        let drawn = Drawn {
            own,
            name: &w.name,
            protocol,
            mptcp: w.mptcp.as_ref(),
            paced: paced.as_ref(),
            clients: &clients,
            nodes,
            dst_of: &dst_of,
            start_ps,
            stop_ps,
        };
        match w.arrivals.as_deref().unwrap_or("poisson") {
            "poisson" => {
                let cdf = cdf.ok_or_else(|| ctx.err(at("cdf"), "Poisson arrivals need a flow-size `cdf`"))?;
                let load = w
                    .load
                    .ok_or_else(|| ctx.err(at("load"), "Poisson arrivals need a `load`"))?;
                if !(load > 0.0 && load <= 1.0) {
                    return Err(ctx.err(
                        at("load"),
                        format!("expected a fraction of the link rate in (0, 1], got {load}"),
                    ));
                }
                let rates: Vec<u64> = match &w.capacity {
                    Some(c) => {
                        let total = ctx.rate(&at("capacity"), c)?;
                        vec![total / clients.len().max(1) as u64; clients.len()]
                    }
                    None => clients.iter().map(|&c| host_rate(links, c)).collect(),
                };
                drawn
                    .poisson(&cdf, load, &rates, &mut rng, (&mut out, &mut ports))
                    .map_err(|e| ctx.err(at("load"), e))?;
            }
            "once" => {
                if w.load.is_some() {
                    return Err(ctx.err(
                        at("load"),
                        "`load` sets Poisson arrivals; `once` starts one flow per client",
                    ));
                }
                drawn.once(cdf.as_ref(), &mut rng, (&mut out, &mut ports));
            }
            a => return Err(ctx.err(at("arrivals"), format!("expected `poisson` or `once`, got `{a}`"))),
        }
        if own + out.len() as u64 > MAX_FLOWS {
            return Err(ctx.err(at("clients"), format!("more than {MAX_FLOWS} flows")));
        }
    }
    Ok(out)
}

/// A workload's clients and servers: the lists given, else every host; all must be hosts.
fn workload_hosts(
    ctx: &Ctx<'_>,
    w: &RawWorkload,
    at: &dyn Fn(&str) -> String,
    nodes: &[Node],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<(Vec<usize>, Vec<usize>), ScenarioError> {
    let hosts = |key: &str, list: &Option<Vec<String>>| -> Result<Vec<usize>, ScenarioError> {
        match list {
            Some(l) => l.iter().map(|n| node_of(at(key), n)).collect(),
            None => Ok((0..nodes.len()).filter(|&n| nodes[n].kind == NodeKind::Host).collect()),
        }
    };
    let (clients, servers) = (hosts("clients", &w.clients)?, hosts("servers", &w.servers)?);
    for (key, list) in [("clients", &clients), ("servers", &servers)] {
        if list.is_empty() {
            return Err(ctx.err(at(key), "expected at least one host"));
        }
    }
    if let Some(&h) = clients
        .iter()
        .chain(&servers)
        .find(|&&h| nodes[h].kind != NodeKind::Host)
    {
        return Err(ctx.err(at("clients"), format!("`{}` is not a host", nodes[h].name)));
    }
    Ok((clients, servers))
}

/// A UDP workload's rate control and each client's flow rate (bit/s of payload, by client),
/// checked once here so that an error names the workload's key, not a drawn flow's; None for
/// TCP and MPTCP workloads, whose `rate` and `[workload.rate_control]` are refused.
fn paced_rates(
    ctx: &Ctx<'_>,
    at: &dyn Fn(&str) -> String,
    w: &RawWorkload,
    protocol: &str,
    (clients, nodes): (&[usize], &[Node]),
    links: &[Link],
    sized: bool,
) -> Result<Option<(RawRateControl, Vec<u64>)>, ScenarioError> {
    if protocol != "udp" {
        for (key, set) in [("rate_control", w.rate_control.is_some()), ("rate", w.rate.is_some())] {
            if set {
                return Err(ctx.err(
                    at(key),
                    "applies to UDP workloads only (`protocol = \"udp\"`: flows paced by a rate controller)",
                ));
            }
        }
        return Ok(None);
    }
    let rc = w.rate_control.clone().ok_or_else(|| {
        ctx.err(
            at("rate_control"),
            "a UDP workload's flows are paced by a rate controller: give `[workload.rate_control]` with `cc`",
        )
    })?;
    let fixed = w.rate.as_deref().map(|r| ctx.rate(&at("rate"), r)).transpose()?;
    let rates: Vec<u64> = clients
        .iter()
        .map(|&c| {
            fixed.unwrap_or_else(|| {
                let link = u128::from(host_rate(links, c));
                let payload = u128::from(DEFAULT_PAYLOAD_BYTES);
                let wire = payload + u128::from(mpsched_core::packet::UDP_OVERHEAD_BYTES);
                (link * payload / wire) as u64
            })
        })
        .collect();
    if let Some(i) = rates.iter().position(|&r| r == 0) {
        return Err(ctx.err(
            at("clients"),
            format!("`{}` has no link to send on", nodes[clients[i]].name),
        ));
    }
    // As a flow's own rate is checked, here so that the error names the workload's key.
    let overloaded =
        |c: &&usize| fixed.is_some_and(|r| r > host_capacity_bps(links, **c).saturating_mul(MAX_UDP_OVERLOAD));
    if let (Some(r), Some(&c)) = (fixed, clients.iter().find(overloaded)) {
        return Err(ctx.err(
            at("rate"),
            format!(
                "{} is over {MAX_UDP_OVERLOAD} times what `{}`'s links carry ({}): a typo for a smaller unit?",
                crate::units::format_rate_bps(r),
                nodes[c].name,
                crate::units::format_rate_bps(host_capacity_bps(links, c))
            ),
        ));
    }
    // Each distinct rate once: an error here is the workload's, whichever flow would carry it.
    let mut seen = HashSet::new();
    let rc_at = at("rate_control");
    for &r in rates.iter().filter(|&&r| seen.insert(r)) {
        rate_control_of(ctx, &rc_at, &rc, r)?;
        paced_transport_of(ctx, &rc_at, &rc, sized.then_some(1))?;
    }
    Ok(Some((rc, rates)))
}

/// A host's link rate (the fastest of its links), bit/s.
fn host_rate(links: &[Link], h: usize) -> u64 {
    links
        .iter()
        .filter(|l| l.a == h || l.b == h)
        .map(|l| l.rate_bps)
        .max()
        .unwrap_or(0)
}

/// What drawing one workload's flows needs.
struct Drawn<'a> {
    /// The file's own flows, which count against [`MAX_FLOWS`] too.
    own: u64,
    name: &'a str,
    protocol: &'a str,
    mptcp: Option<&'a RawMptcp>,
    /// UDP: the rate control of every flow and each client's rate (by client).
    paced: Option<&'a (RawRateControl, Vec<u64>)>,
    clients: &'a [usize],
    nodes: &'a [Node],
    dst_of: &'a PickServer,
    start_ps: u64,
    stop_ps: u64,
}

impl Drawn<'_> {
    /// Client `k` (node `c`) starts a flow to `dst` at `start_ps`; a paced one takes the
    /// client's next port from `ports` (by node).
    fn flow(&self, (out, ports): (&[RawFlow], &mut [u64]), k: usize, c: usize, dst: usize, start_ps: u64) -> RawFlow {
        let mut f = RawFlow {
            name: format!("{}-{}", self.name, out.len()),
            src: self.nodes[c].name.clone(),
            dst: self.nodes[dst].name.clone(),
            protocol: Some(self.protocol.into()),
            mptcp: self.mptcp.cloned(),
            start: Some(format!("{start_ps}ps")),
            ..RawFlow::default()
        };
        if let Some((rc, rates)) = self.paced {
            f.rate = Some(format!("{}bps", rates[k]));
            f.rate_control = Some(rc.clone());
            // DCQCN's switches mark, and only an ECN-capable packet can be marked.
            f.ecn = Some("ect0".into());
            // Notifications find a paced sender by its host and port: each of a client's flows
            // its own port (40 000 up, after the file's flows' defaults, wrapping after 25 536
            // of them, which validation then refuses if two are of one client).
            f.src_port = Some(40_000 + (ports[c] % 25_536) as u16);
            ports[c] += 1;
        }
        f
    }

    /// Poisson arrivals at each client at `load` of its link rate (`rates`, by client).
    fn poisson(
        &self,
        cdf: &EmpiricalCdf,
        load: f64,
        rates: &[u64],
        rng: &mut SeededRandom,
        (out, ports): (&mut Vec<RawFlow>, &mut [u64]),
    ) -> Result<(), String> {
        // The expected count first, so that nothing is drawn for a workload too large to run.
        let secs = (self.stop_ps - self.start_ps) as f64 / PS_PER_S;
        let expected: f64 = rates
            .iter()
            .map(|&r| load * r as f64 / (8.0 * cdf.mean_bytes()) * secs)
            .sum();
        let before = self.own + out.len() as u64;
        if expected + before as f64 > MAX_FLOWS as f64 {
            let others = match before {
                0 => String::new(),
                n => format!(", with {n} before them"),
            };
            return Err(format!(
                "about {expected:.0} flows expected{others}; at most {MAX_FLOWS} in a scenario"
            ));
        }
        for (k, &c) in self.clients.iter().enumerate() {
            let mean_gap_s = 8.0 * cdf.mean_bytes() / (load * rates[k] as f64);
            let mut t = self.start_ps as f64 / PS_PER_S;
            loop {
                t += exponential(rng, mean_gap_s);
                if t * PS_PER_S >= self.stop_ps as f64 || self.own + out.len() as u64 >= MAX_FLOWS {
                    break;
                }
                let size = cdf.sample(rng);
                // None: this client has no server (it is the only one).
                let Some(dst) = (self.dst_of)(k, rng) else { break };
                let mut f = self.flow((out, ports), k, c, dst, (t * PS_PER_S) as u64);
                f.size = Some(format!("{size}B"));
                out.push(f);
            }
        }
        Ok(())
    }

    /// One flow per client at `start`: of a size drawn from `cdf`, else a long flow until
    /// `stop` (a permutation of long flows; every client at one server is an incast).
    fn once(&self, cdf: Option<&EmpiricalCdf>, rng: &mut SeededRandom, (out, ports): (&mut Vec<RawFlow>, &mut [u64])) {
        for (k, &c) in self.clients.iter().enumerate() {
            let Some(dst) = (self.dst_of)(k, rng) else { continue };
            let mut f = self.flow((out, ports), k, c, dst, self.start_ps);
            match cdf {
                Some(cdf) => f.size = Some(format!("{}B", cdf.sample(rng))),
                None => f.stop = Some(format!("{}ps", self.stop_ps)),
            }
            out.push(f);
        }
    }
}

const PS_PER_S: f64 = 1e12;

/// A built-in CDF by name, or a file beside the scenario.
fn cdf_of(ctx: &Ctx<'_>, field: &str, name: &str) -> Result<EmpiricalCdf, ScenarioError> {
    if let Some(c) = EmpiricalCdf::builtin(name) {
        return Ok(c);
    }
    let dir = std::path::Path::new(ctx.file)
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let path = dir.join(name);
    let unreadable = |why: String| {
        ctx.err(
            field,
            format!(
                "`{name}` is neither `websearch`, `datamining` nor a readable CDF file ({}: {why})",
                path.display()
            ),
        )
    };
    let text = crate::files::read_bounded(&path, crate::files::MAX_CDF_FILE_BYTES).map_err(unreadable)?;
    EmpiricalCdf::parse(&text).map_err(|e| ctx.err(field, format!("{}: {e}", path.display())))
}

type PickServer = Box<dyn Fn(usize, &mut SeededRandom) -> Option<usize>>;

/// How client `k` picks a flow's server: uniformly among the servers other than itself, or its
/// fixed partner in a random derangement of the clients (which must then be the servers).
fn destinations(
    ctx: &Ctx<'_>,
    field: &str,
    pattern: Option<&str>,
    clients: &[usize],
    servers: &[usize],
    seed: u64,
) -> Result<PickServer, ScenarioError> {
    match pattern.unwrap_or("random") {
        "random" => {
            // A client that is the only server sends nothing (an incast's server among the
            // hosts); a workload where no client has a server is an error.
            if servers.is_empty() || (servers.len() == 1 && clients.iter().all(|&c| c == servers[0])) {
                return Err(ctx.err(field, "no server a client could send to"));
            }
            let (clients, servers) = (clients.to_vec(), servers.to_vec());
            Ok(Box::new(move |k, rng| loop {
                if servers.len() == 1 && servers[0] == clients[k] {
                    return None;
                }
                let s = servers[(rng.next_u64() % servers.len() as u64) as usize];
                if s != clients[k] {
                    return Some(s);
                }
            }))
        }
        "permutation" => {
            let mut a = clients.to_vec();
            let mut b = servers.to_vec();
            a.sort_unstable();
            b.sort_unstable();
            if a != b || a.len() < 2 {
                return Err(ctx.err(
                    field,
                    "a permutation needs the same two or more hosts as clients and servers",
                ));
            }
            // Sattolo's shuffle: a single cycle, so no host is its own partner.
            let mut rng = SeededRandom::new(seed ^ 0x5eed);
            let mut perm: Vec<usize> = clients.to_vec();
            for i in (1..perm.len()).rev() {
                let j = (rng.next_u64() % i as u64) as usize;
                perm.swap(i, j);
            }
            let partner: HashMap<usize, usize> = clients.iter().copied().zip(perm).collect();
            let clients = clients.to_vec();
            Ok(Box::new(move |k, _| partner.get(&clients[k]).copied()))
        }
        p => Err(ctx.err(field, format!("expected `random` or `permutation`, got `{p}`"))),
    }
}
