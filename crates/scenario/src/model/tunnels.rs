//! `[[tunnel]]`: multipath tunnels, their subtunnels and schedulers.

use super::*;

/// `[[tunnel]]`: ends that are no other tunnel's and no split's.
pub(super) fn tunnels_of(
    ctx: &Ctx<'_>,
    raw_tunnels: &[RawTunnel],
    nodes: &[Node],
    paths: &[Path],
    splits: &[Split],
) -> Result<Vec<Tunnel>, ScenarioError> {
    let mut tunnels = Vec::new();
    for (i, t) in raw_tunnels.iter().enumerate() {
        check_name(ctx, format!("tunnel[{i}].name"), &t.name)?;
        if tunnels.iter().any(|x: &Tunnel| x.name == t.name) {
            return Err(ctx.err(
                format!("tunnel[{i}].name"),
                format!("duplicate tunnel name `{}`", t.name),
            ));
        }
        let tun = build_tunnel(ctx, i, t, nodes, paths)?;
        if tunnels
            .iter()
            .any(|x: &Tunnel| [x.entry, x.exit].contains(&tun.entry) || [x.entry, x.exit].contains(&tun.exit))
        {
            return Err(ctx.err(format!("tunnel[{i}]"), "a switch can be the end of one tunnel only"));
        }
        if splits.iter().any(|sp| {
            let p = &paths[sp.paths[0]].nodes;
            [tun.entry, tun.exit].contains(&p[0]) || [tun.entry, tun.exit].contains(p.last().unwrap())
        }) {
            return Err(ctx.err(
                format!("tunnel[{i}]"),
                "a tunnel end cannot also be a split's splitting or confluence point",
            ));
        }
        tunnels.push(tun);
    }
    Ok(tunnels)
}

pub(super) fn build_tunnel(
    ctx: &Ctx<'_>,
    i: usize,
    t: &RawTunnel,
    nodes: &[Node],
    paths: &[Path],
) -> Result<Tunnel, ScenarioError> {
    let at = format!("tunnel[{i}]");
    let node = |k: &str, name: &str| {
        let n = nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| ctx.err(format!("{at}.{k}"), format!("no node named `{name}`")))?;
        if nodes[n].kind != NodeKind::Switch {
            return Err(ctx.err(format!("{at}.{k}"), format!("expected a switch, `{name}` is a host")));
        }
        Ok(n)
    };
    let entry = node("entry", &t.entry)?;
    let exit = node("exit", &t.exit)?;
    if entry == exit {
        return Err(ctx.err(format!("{at}.exit"), "entry and exit are the same switch"));
    }
    if t.subtunnels.is_empty() || t.subtunnels.len() > MAX_PATHS {
        return Err(ctx.err(
            format!("{at}.subtunnels"),
            format!("expected 1 to {MAX_PATHS} paths, got {}", t.subtunnels.len()),
        ));
    }
    let mut subtunnels = Vec::new();
    for (j, name) in t.subtunnels.iter().enumerate() {
        let p = paths
            .iter()
            .position(|p| &p.name == name)
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
                "each subtunnel must leave the entry by a different link",
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
    Ok(Tunnel {
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
