//! `[[tunnel]]`: multipath tunnels, their subtunnels and schedulers.

use super::*;

/// Most entries all tunnels' AFMT flow tables may have together, both ends of each counted
/// (about 90 bytes each, allocated when the run starts; 384 MB at the bound): 10 000 tunnels
/// need a small `flow_table_entries` each.
pub const MAX_TOTAL_FLOW_TABLE_ENTRIES: u64 = 1 << 22;

/// `[[tunnel]]`: tunnels between switches and hosts, checked against each other.
///
/// A node may end several tunnels only when every one of them ends at a host on the other side
/// (a UPF ending one tunnel per user device, say): a packet then enters the tunnel whose far
/// end is its destination, found by address. Two tunnels between the same two nodes, or a
/// node ending several tunnels one of which leads to a switch (which hosts would enter which?),
/// are refused. A tunnel end cannot also be a split's splitting or confluence point.
pub(super) fn tunnels_of(
    ctx: &Ctx<'_>,
    raw_tunnels: &[RawTunnel],
    nodes: &[Node],
    links: &[Link],
    paths: &[Path],
    splits: &[Split],
) -> Result<Vec<Tunnel>, ScenarioError> {
    if raw_tunnels.len() > mpsched_topo::addressing::MAX_TUNNELS {
        return Err(ctx.err(
            "tunnel",
            format!(
                "{} tunnels; at most {} (each has 16 subtunnel addresses in 100.64.0.0/10)",
                raw_tunnels.len(),
                mpsched_topo::addressing::MAX_TUNNELS
            ),
        ));
    }
    if !raw_tunnels.is_empty() {
        subtunnel_block_is_free(ctx, nodes, links)?;
    }
    let index = TunnelIndex::new(nodes, paths);
    let split_ends: HashSet<usize> = splits
        .iter()
        .flat_map(|sp| {
            let p = &paths[sp.paths[0]].nodes;
            [p[0], *p.last().unwrap()]
        })
        .collect();
    let mut tunnels = Vec::new();
    let mut names = HashSet::new();
    // Per node: the far ends of the tunnels it ends; and every pair of ends (lower node first).
    let mut far_ends: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut pairs: HashSet<(usize, usize)> = HashSet::new();
    let mut flow_table_entries = 0u64;
    let mut reorder_pkts = 0u64;
    for (i, t) in raw_tunnels.iter().enumerate() {
        check_name(ctx, format!("tunnel[{i}].name"), &t.name)?;
        if !names.insert(t.name.as_str()) {
            return Err(ctx.err(
                format!("tunnel[{i}].name"),
                format!("duplicate tunnel name `{}`", t.name),
            ));
        }
        let tun = build_tunnel_indexed(ctx, i, t, paths, &index)?;
        if !pairs.insert((tun.entry.min(tun.exit), tun.entry.max(tun.exit))) {
            return Err(ctx.err(
                format!("tunnel[{i}]"),
                format!(
                    "a second tunnel between `{}` and `{}`",
                    nodes[tun.entry].name, nodes[tun.exit].name
                ),
            ));
        }
        for (here, there) in [(tun.entry, tun.exit), (tun.exit, tun.entry)] {
            let fars = far_ends.entry(here).or_default();
            fars.push(there);
            // The earlier far ends were checked as they came (all hosts once there were two).
            let switch_far = |f: usize| nodes[f].kind != NodeKind::Host;
            if fars.len() > 1 && (switch_far(there) || (fars.len() == 2 && switch_far(fars[0]))) {
                return Err(ctx.err(
                    format!("tunnel[{i}]"),
                    format!(
                        "`{}` ends several tunnels; it may only when each ends at a host on the other side \
                         (a packet enters the tunnel whose far end is its destination)",
                        nodes[here].name
                    ),
                ));
            }
        }
        if split_ends.contains(&tun.entry) || split_ends.contains(&tun.exit) {
            return Err(ctx.err(
                format!("tunnel[{i}]"),
                "a tunnel end cannot also be a split's splitting or confluence point",
            ));
        }
        // Both ends build the scheduler; a variant may switch any tunnel to AFMT.
        let entries = t
            .flow_table_entries
            .map_or(u64::from(mpsched_core::tunnel::DEFAULT_FLOW_TABLE_ENTRIES), u64::from);
        flow_table_entries = flow_table_entries.saturating_add(2 * entries);
        if flow_table_entries > MAX_TOTAL_FLOW_TABLE_ENTRIES {
            return Err(ctx.err(
                format!("tunnel[{i}].flow_table_entries"),
                format!(
                    "the tunnels' flow tables would hold {flow_table_entries} entries at both ends so far; at most \
                     {MAX_TOTAL_FLOW_TABLE_ENTRIES} in all (about 90 bytes each): give each tunnel fewer"
                ),
            ));
        }
        // Each direction's exit may hold a buffer (allocated when a packet first waits).
        reorder_pkts = reorder_pkts.saturating_add(2 * u64::from(tun.reorder_capacity));
        if reorder_pkts > MAX_TOTAL_REORDER_PKTS {
            return Err(ctx.err(
                format!("tunnel[{i}].reorder_capacity"),
                format!(
                    "the tunnels' reordering buffers would hold {reorder_pkts} packets in both directions so far; \
                     at most {MAX_TOTAL_REORDER_PKTS} in all (24 bytes each in the simulator): give each tunnel fewer"
                ),
            ));
        }
        tunnels.push(tun);
    }
    Ok(tunnels)
}

/// Most packets all tunnels' reordering buffers may hold together, both directions counted
/// (402 MB of slots in the simulator at most).
pub const MAX_TOTAL_REORDER_PKTS: u64 = 1 << 24;

/// With tunnels, no node or interface may have an address in the subtunnels' block (it would be
/// taken for a subtunnel's).
fn subtunnel_block_is_free(ctx: &Ctx<'_>, nodes: &[Node], links: &[Link]) -> Result<(), ScenarioError> {
    use mpsched_topo::addressing::is_subtunnel_addr;
    if let Some(i) = nodes.iter().position(|n| is_subtunnel_addr(n.ip)) {
        return Err(ctx.err(
            format!("node[{i}].ip"),
            "an address in 100.64.0.0/10, which the scenario's tunnels use for their subtunnels",
        ));
    }
    if let Some(i) = links
        .iter()
        .position(|l| l.a_ip.is_some_and(is_subtunnel_addr) || l.b_ip.is_some_and(is_subtunnel_addr))
    {
        return Err(ctx.err(
            format!("link[{i}]"),
            "an interface address in 100.64.0.0/10, which the scenario's tunnels use for their subtunnels",
        ));
    }
    Ok(())
}

/// Nodes and paths by name, for scenarios with thousands of tunnels.
pub(super) struct TunnelIndex<'a> {
    nodes: HashMap<&'a str, usize>,
    paths: HashMap<&'a str, usize>,
}

impl<'a> TunnelIndex<'a> {
    /// Every node's and path's index by its name (built once per scenario or variant, not once
    /// per tunnel: that would be quadratic in 10 000 tunnels).
    pub(super) fn new(nodes: &'a [Node], paths: &'a [Path]) -> Self {
        TunnelIndex {
            nodes: nodes.iter().enumerate().map(|(i, n)| (n.name.as_str(), i)).collect(),
            paths: paths.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect(),
        }
    }
}

/// A tunnel's `params` into its scheduler's: each key declared by some registered tunnel
/// scheduler, taken where this one declares it.
fn tunnel_params(
    ctx: &Ctx<'_>,
    at: &str,
    spec: &dyn mpsched_programs::tunnel::TunnelSchedulerProgram,
    table: &toml::Table,
    params: &mut mpsched_programs::Params,
) -> Result<(), ScenarioError> {
    for (key, value) in table {
        let field = format!("{at}.params.{key}");
        let Some(p) = spec.params().iter().find(|p| p.name == key) else {
            let known = mpsched_programs::tunnel::TUNNEL_SCHEDULERS
                .iter()
                .any(|s| s.params().iter().any(|p| p.name == key));
            if known {
                continue;
            }
            return Err(ctx.err(field, format!("no tunnel scheduler has a parameter `{key}`")));
        };
        let v = super::programs::param_value(ctx, &field, p, value)?;
        if p.check(v).is_err() {
            return Err(ctx.err(field, super::programs::bounds_message(p, v)));
        }
        params.set(spec.params(), key, v).map_err(|e| ctx.err(&field, e))?;
    }
    Ok(())
}

/// One `[[tunnel]]` on its own (a variant rebuilds it with another scheduler or transport).
pub(super) fn build_tunnel(
    ctx: &Ctx<'_>,
    i: usize,
    t: &RawTunnel,
    paths: &[Path],
    index: &TunnelIndex<'_>,
) -> Result<Tunnel, ScenarioError> {
    build_tunnel_indexed(ctx, i, t, paths, index)
}

/// One `[[tunnel]]`: its ends (switches or hosts), subtunnel paths from end to end, each
/// leaving the entry by a link of its own, scheduler, transport and buffers.
fn build_tunnel_indexed(
    ctx: &Ctx<'_>,
    i: usize,
    t: &RawTunnel,
    paths: &[Path],
    index: &TunnelIndex<'_>,
) -> Result<Tunnel, ScenarioError> {
    let at = format!("tunnel[{i}]");
    let node = |k: &str, name: &str| {
        index
            .nodes
            .get(name)
            .copied()
            .ok_or_else(|| ctx.err(format!("{at}.{k}"), format!("no node named `{name}`")))
    };
    let entry = node("entry", &t.entry)?;
    let exit = node("exit", &t.exit)?;
    if entry == exit {
        return Err(ctx.err(format!("{at}.exit"), "entry and exit are the same node"));
    }
    if t.subtunnels.is_empty() || t.subtunnels.len() > MAX_PATHS {
        return Err(ctx.err(
            format!("{at}.subtunnels"),
            format!("expected 1 to {MAX_PATHS} paths, got {}", t.subtunnels.len()),
        ));
    }
    let mut subtunnels = Vec::new();
    for (j, name) in t.subtunnels.iter().enumerate() {
        let p = index
            .paths
            .get(name.as_str())
            .copied()
            .ok_or_else(|| ctx.err(format!("{at}.subtunnels[{j}]"), format!("no path named `{name}`")))?;
        let pn = &paths[p].nodes;
        if pn[0] != entry || *pn.last().unwrap() != exit {
            return Err(ctx.err(
                format!("{at}.subtunnels[{j}]"),
                format!("path `{name}` must run from `{}` to `{}`", t.entry, t.exit),
            ));
        }
        if subtunnels.iter().any(|&q: &usize| paths[q].nodes[1] == pn[1]) {
            return Err(ctx.err(
                format!("{at}.subtunnels[{j}]"),
                "each subtunnel must leave the entry by a different link (a host end with one link has one subtunnel)",
            ));
        }
        subtunnels.push(p);
    }
    let transport = match t.transport.as_str() {
        "tcp" => SubtunnelTransport::Tcp,
        "udp" => SubtunnelTransport::Udp,
        x => return Err(ctx.err(format!("{at}.transport"), format!("expected `tcp` or `udp`, got `{x}`"))),
    };
    let spec = mpsched_programs::tunnel::tunnel_scheduler(&t.scheduler).ok_or_else(|| {
        ctx.err(
            format!("{at}.scheduler"),
            format!(
                "no tunnel scheduler `{}`; registered: {}",
                t.scheduler,
                mpsched_programs::tunnel::tunnel_scheduler_names()
            ),
        )
    })?;
    if spec.needs_tcp_subtunnels() && transport != SubtunnelTransport::Tcp {
        return Err(ctx.err(
            format!("{at}.transport"),
            format!(
                "`{}` reads each subtunnel's cwnd and SRTT, so it needs `transport = \"tcp\"`",
                spec.name()
            ),
        ));
    }
    let mut scheduler_params = mpsched_programs::Params::defaults(spec.params());
    // The one parameter a tunnel scheduler has today is AFMT's, a key of the tunnel itself;
    // a scheduler that does not declare it ignores it (variants switch schedulers).
    if let Some(n) = t.flow_table_entries {
        if spec.params().iter().any(|p| p.name == "flow_table_entries") {
            scheduler_params
                .set(spec.params(), "flow_table_entries", u64::from(n))
                .map_err(|_| {
                    ctx.err(
                        format!("{at}.flow_table_entries"),
                        format!("expected 1 to {MAX_FLOW_TABLE_ENTRIES} entries (about 90 bytes each), got {n}"),
                    )
                })?;
        }
    }
    if let Some(table) = &t.params {
        tunnel_params(ctx, &at, spec, table, &mut scheduler_params)?;
    }
    let send_buffer_bytes = match &t.send_buffer {
        Some(b) => ctx.size(&format!("{at}.send_buffer"), b)?,
        None => DEFAULT_TUNNEL_SEND_BUFFER_BYTES,
    };
    if send_buffer_bytes < 2048 {
        return Err(ctx.err(format!("{at}.send_buffer"), "expected at least 2KiB"));
    }
    let tcp = tcp_config(
        ctx,
        &format!("{at}.tcp"),
        tunnel_tcp_defaults(),
        &t.tcp.clone().unwrap_or_default(),
    )?;
    let reorder_capacity = t.reorder_capacity.unwrap_or(0);
    if reorder_capacity > MAX_REORDER_CAPACITY {
        return Err(ctx.err(
            format!("{at}.reorder_capacity"),
            format!("expected at most {MAX_REORDER_CAPACITY} packets, got {reorder_capacity}"),
        ));
    }
    if reorder_capacity > 0 && transport != SubtunnelTransport::Udp {
        return Err(ctx.err(
            format!("{at}.reorder_capacity"),
            "a reordering buffer needs `transport = \"udp\"` (each TCP subtunnel delivers its own stream in order; the simulator does not reorder across them)",
        ));
    }
    let reorder_timeout_ps = match &t.reorder_timeout {
        Some(v) => ctx.time(&format!("{at}.reorder_timeout"), v)?,
        None => DEFAULT_REORDER_TIMEOUT_PS,
    };
    if reorder_timeout_ps == 0 {
        return Err(ctx.err(format!("{at}.reorder_timeout"), "expected a time above zero"));
    }
    Ok(Tunnel {
        reorder_capacity,
        reorder_timeout_ps,
        name: t.name.clone(),
        entry,
        exit,
        subtunnels,
        scheduler: spec.name(),
        scheduler_params,
        transport,
        send_buffer_bytes,
        tcp,
    })
}

/// The subtunnels' TCP defaults from the AFMT paper: delayed-ACK timeout 40 ms, no Nagle.
pub fn tunnel_tcp_defaults() -> TcpConfig {
    TcpConfig {
        nodelay: true,
        delayed_ack_ns: 40_000_000,
        ..TcpConfig::default()
    }
}
