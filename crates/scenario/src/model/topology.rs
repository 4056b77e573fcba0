//! `[[node]]` and `[[link]]`: hosts and switches, their addresses, links with rates, delays, queues and interface addresses.

use super::*;

/// `[[node]]`: names, kinds and addresses (hosts 10.0.0.N and switches 10.255.0.N by default).
pub(super) fn nodes_of(ctx: &Ctx<'_>, raw_nodes: &[RawNode]) -> Result<Vec<Node>, ScenarioError> {
    let mut nodes = Vec::new();
    let mut names = HashSet::new();
    let (mut hosts, mut switches) = (0u32, 0u32);
    for (i, n) in raw_nodes.iter().enumerate() {
        check_name(ctx, format!("node[{i}].name"), &n.name)?;
        if !names.insert(n.name.clone()) {
            return Err(ctx.err(format!("node[{i}].name"), format!("duplicate node name `{}`", n.name)));
        }
        let kind = match n.kind.as_str() {
            "host" => NodeKind::Host,
            "switch" | "ap" => NodeKind::Switch,
            k => {
                return Err(ctx.err(
                    format!("node[{i}].kind"),
                    format!("expected `host` or `switch`, got `{k}`"),
                ))
            }
        };
        let ip = match &n.ip {
            Some(s) => unicast_address(ctx, format!("node[{i}].ip"), s)?,
            None => match kind {
                NodeKind::Host => {
                    hosts += 1;
                    0x0a00_0000 + hosts
                }
                NodeKind::Switch => {
                    switches += 1;
                    0x0aff_0000 + switches
                }
            },
        };
        nodes.push(Node {
            name: n.name.clone(),
            kind,
            ip,
        });
    }
    let mut ips = HashSet::new();
    for (i, n) in nodes.iter().enumerate() {
        if !ips.insert(n.ip) {
            return Err(ctx.err(format!("node[{i}].ip"), "duplicate address"));
        }
    }
    Ok(nodes)
}

/// `[[link]]`: ends, rate, delay, queues; every host has a link (several make it multi-homed).
pub(super) fn links_of(
    ctx: &Ctx<'_>,
    raw_links: &[RawLink],
    nodes: &[Node],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    default_queue: u32,
) -> Result<Vec<Link>, ScenarioError> {
    let mut links = Vec::new();
    let mut pairs = HashSet::new();
    let mut link_names = HashSet::new();
    for (i, l) in raw_links.iter().enumerate() {
        let a = node_of(format!("link[{i}].a"), &l.a)?;
        let b = node_of(format!("link[{i}].b"), &l.b)?;
        if a == b {
            return Err(ctx.err(format!("link[{i}].b"), "a link needs two different nodes"));
        }
        if !pairs.insert((a.min(b), a.max(b))) {
            return Err(ctx.err(
                format!("link[{i}]"),
                format!("a second link between `{}` and `{}`", l.a, l.b),
            ));
        }
        let rate_bps = ctx.rate(&format!("link[{i}].rate"), &l.rate)?;
        let delay_ps = match &l.delay {
            Some(d) => ctx.time(&format!("link[{i}].delay"), d)?,
            None => 0,
        };
        let queue_pkts = l.queue_pkts.unwrap_or(default_queue);
        if queue_pkts == 0 {
            return Err(ctx.err(format!("link[{i}].queue_pkts"), "expected at least 1"));
        }
        if let Some(q) = l.host_queue_pkts {
            if q == 0 {
                return Err(ctx.err(format!("link[{i}].host_queue_pkts"), "expected at least 1"));
            }
            if nodes[a].kind != NodeKind::Host && nodes[b].kind != NodeKind::Host {
                return Err(ctx.err(
                    format!("link[{i}].host_queue_pkts"),
                    "applies to a link with a host end (the host's own interface queue)",
                ));
            }
        }
        if let Some(n) = &l.name {
            check_name(ctx, format!("link[{i}].name"), n)?;
            if !link_names.insert(n.as_str()) {
                return Err(ctx.err(format!("link[{i}].name"), format!("duplicate link name `{n}`")));
            }
        }
        if l.ecn_threshold_pkts == Some(0) {
            return Err(ctx.err(format!("link[{i}].ecn_threshold_pkts"), "expected at least 1"));
        }
        let (queues, discipline) = link_queues(ctx, i, l)?;
        let a_ip = interface_ip(ctx, i, "a", l.a_ip.as_deref(), &nodes[a])?;
        let b_ip = interface_ip(ctx, i, "b", l.b_ip.as_deref(), &nodes[b])?;
        links.push(Link {
            a,
            b,
            rate_bps,
            delay_ps,
            queue_pkts,
            host_queue_pkts: l.host_queue_pkts,
            name: l.name.clone(),
            ecn_threshold_pkts: l.ecn_threshold_pkts,
            a_ip,
            b_ip,
            queues,
            discipline,
        });
    }
    let mut linked = vec![false; nodes.len()];
    for l in &links {
        linked[l.a] = true;
        linked[l.b] = true;
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.kind == NodeKind::Host && !linked[i] {
            return Err(ctx.err(format!("node[{i}]"), format!("host `{}` needs a link", n.name)));
        }
    }
    // Every address names one interface: no interface address is another's or a node's.
    let mut seen: HashSet<Ipv4> = nodes.iter().map(|n| n.ip).collect();
    for (i, l) in links.iter().enumerate() {
        for (end, ip, node) in [("a", l.a_ip, l.a), ("b", l.b_ip, l.b)] {
            if let Some(ip) = ip.filter(|&ip| ip != nodes[node].ip) {
                if !seen.insert(ip) {
                    return Err(ctx.err(format!("link[{i}].{end}_ip"), "duplicate address"));
                }
            }
        }
    }
    Ok(links)
}

/// A link's output queues: how many and their discipline.
pub(super) fn link_queues(ctx: &Ctx<'_>, i: usize, l: &RawLink) -> Result<(u8, QueueDiscipline), ScenarioError> {
    let queues = l.queues.unwrap_or(1);
    if !(1..=MAX_QUEUES).contains(&queues) {
        return Err(ctx.err(
            format!("link[{i}].queues"),
            format!("expected 1 to {MAX_QUEUES}, got {queues}"),
        ));
    }
    let weights = || -> Result<Vec<u32>, ScenarioError> {
        let w = l.queue_weights.clone().unwrap_or_else(|| vec![1; usize::from(queues)]);
        if w.len() != usize::from(queues) || w.contains(&0) {
            return Err(ctx.err(
                format!("link[{i}].queue_weights"),
                format!("expected {queues} weights of at least 1"),
            ));
        }
        Ok(w)
    };
    let default = if queues > 1 { "strict-priority" } else { "fifo" };
    let discipline = match l.discipline.as_deref().unwrap_or(default) {
        "fifo" if queues == 1 => QueueDiscipline::Fifo,
        "fifo" => {
            return Err(ctx.err(
                format!("link[{i}].discipline"),
                "`fifo` has one queue; with several choose `strict-priority`, `wrr` or `drr`",
            ))
        }
        "strict-priority" => QueueDiscipline::StrictPriority,
        "wrr" => QueueDiscipline::Wrr(weights()?),
        "drr" => QueueDiscipline::Drr(weights()?),
        d => {
            return Err(ctx.err(
                format!("link[{i}].discipline"),
                format!("expected `fifo`, `strict-priority`, `wrr` or `drr`, got `{d}`"),
            ))
        }
    };
    if l.queue_weights.is_some() && !matches!(discipline, QueueDiscipline::Wrr(_) | QueueDiscipline::Drr(_)) {
        return Err(ctx.err(format!("link[{i}].queue_weights"), "weights need `wrr` or `drr`"));
    }
    Ok((queues, discipline))
}

/// `link[i].a_ip` / `b_ip`: the address of a host's interface on the link.
pub(super) fn interface_ip(
    ctx: &Ctx<'_>,
    i: usize,
    end: &str,
    raw: Option<&str>,
    node: &Node,
) -> Result<Option<Ipv4>, ScenarioError> {
    let Some(s) = raw else { return Ok(None) };
    let field = format!("link[{i}].{end}_ip");
    if node.kind != NodeKind::Host {
        return Err(ctx.err(
            field,
            format!("`{}` is a switch: only hosts take an address per interface", node.name),
        ));
    }
    Ok(Some(unicast_address(ctx, field, s)?))
}

/// An address a host or switch can hold and be reached at: IPv4 unicast, not "this network"
/// (0/8), loopback (127/8), multicast (224/4) or reserved and broadcast (240/4), which a kernel
/// refuses to route between namespaces (found only after they were made).
fn unicast_address(ctx: &Ctx<'_>, field: String, s: &str) -> Result<Ipv4, ScenarioError> {
    let ip = parse_ipv4(s).ok_or_else(|| ctx.err(field.clone(), format!("expected an IPv4 address, got `{s}`")))?;
    let why = match ip >> 24 {
        0 => Some("in 0.0.0.0/8, \"this network\""),
        127 => Some("a loopback address"),
        224..=239 => Some("a multicast address"),
        240..=255 => Some("reserved (240.0.0.0/4, with the broadcast address 255.255.255.255)"),
        _ => None,
    };
    match why {
        Some(why) => Err(ctx.err(
            field,
            format!("`{s}` is {why}: expected a unicast address such as 10.0.0.1"),
        )),
        None => Ok(ip),
    }
}

/// `[scenario] routing`: `shortest` or `ecmp`; by default ECMP for a generated topology (a
/// data centre's switches hash flows over equal-cost paths) and one shortest path otherwise
/// (the papers' small topologies, whose figures depend on it).
pub(super) fn routing_of(ctx: &Ctx<'_>, raw: &RawScenario) -> Result<Routing, ScenarioError> {
    match raw.scenario.routing.as_deref() {
        None if raw.topology.is_some() => Ok(Routing::Ecmp),
        None | Some("shortest") => Ok(Routing::Shortest),
        Some("ecmp") => Ok(Routing::Ecmp),
        Some(r) => Err(ctx.err("scenario.routing", format!("expected `shortest` or `ecmp`, got `{r}`"))),
    }
}

/// The generator `[topology] kind` names, called with its keys (refusing keys of another kind).
fn generator(ctx: &Ctx<'_>, t: &RawTopology) -> Result<mpsched_topo::generate::Generated, ScenarioError> {
    use mpsched_topo::generate::{fat_tree, leaf_spine, three_tier, LayoutSize};
    // Every count of a generated layout is at least one and alone within the bound on nodes,
    // refused under its own key; what their products make is checked before it is generated.
    let need = |key: &str, v: Option<usize>| match v {
        None => Err(ctx.err(format!("topology.{key}"), format!("a {} needs `{key}`", t.kind))),
        Some(0) => Err(ctx.err(format!("topology.{key}"), "expected at least 1")),
        Some(n) if n > MAX_NODES => Err(ctx.err(
            format!("topology.{key}"),
            format!("{n}; a scenario has at most {MAX_NODES} nodes"),
        )),
        Some(n) => Ok(n),
    };
    let unused = |key: &str, v: bool| match v {
        true => Err(ctx.err(format!("topology.{key}"), format!("not a key of a {}", t.kind))),
        false => Ok(()),
    };
    let unused_three_tier = |unused: &dyn Fn(&str, bool) -> Result<(), ScenarioError>| {
        unused("pods", t.pods.is_some())?;
        unused("tors_per_pod", t.tors_per_pod.is_some())?;
        unused("aggs_per_pod", t.aggs_per_pod.is_some())?;
        unused("cores", t.cores.is_some())
    };
    Ok(match t.kind.as_str() {
        "fat-tree" => {
            let k = need("k", t.k)?;
            unused_three_tier(&unused)?;
            unused("leaves", t.leaves.is_some())?;
            unused("spines", t.spines.is_some())?;
            unused("hosts_per_leaf", t.hosts_per_leaf.is_some())?;
            if t.core_links.is_none() {
                return Err(ctx.err("topology.core_links", "a fat-tree needs `[topology.core_links]`"));
            }
            let per_tor = match (t.hosts_per_tor, t.oversubscription) {
                (Some(_), Some(_)) => {
                    return Err(ctx.err(
                        "topology.oversubscription",
                        "give `hosts_per_tor` or `oversubscription`, not both",
                    ))
                }
                (Some(h), None) => need("hosts_per_tor", Some(h))?,
                (None, o) => need("oversubscription", Some(o.unwrap_or(1)))?.saturating_mul(k / 2),
            };
            let what = format!("a fat tree of k = {k} with {per_tor} hosts per rack");
            layout_within_bounds(ctx, "k", &what, &LayoutSize::fat_tree(k, per_tor))?;
            fat_tree(k, per_tor).map_err(|e| ctx.err("topology.k", e))?
        }
        "three-tier" => {
            unused("k", t.k.is_some())?;
            unused("oversubscription", t.oversubscription.is_some())?;
            unused("leaves", t.leaves.is_some())?;
            unused("spines", t.spines.is_some())?;
            unused("hosts_per_leaf", t.hosts_per_leaf.is_some())?;
            if t.core_links.is_none() {
                return Err(ctx.err(
                    "topology.core_links",
                    "a three-tier layout needs `[topology.core_links]`",
                ));
            }
            let sizes = [
                ("pods", need("pods", t.pods)?),
                ("tors_per_pod", need("tors_per_pod", t.tors_per_pod)?),
                ("aggs_per_pod", need("aggs_per_pod", t.aggs_per_pod)?),
                ("cores", need("cores", t.cores)?),
                ("hosts_per_tor", need("hosts_per_tor", t.hosts_per_tor)?),
            ];
            let [p, r, a, c, h] = sizes.map(|s| s.1);
            let what = format!(
                "a three-tier layout of {p} pods of {r} racks and {a} aggregation switches, {c} cores and {h} hosts per rack"
            );
            layout_within_bounds(ctx, largest(&sizes), &what, &LayoutSize::three_tier(p, r, a, c, h))?;
            three_tier(p, r, a, c, h).map_err(|e| ctx.err("topology.pods", e))?
        }
        "leaf-spine" => {
            unused("k", t.k.is_some())?;
            unused_three_tier(&unused)?;
            unused("hosts_per_tor", t.hosts_per_tor.is_some())?;
            unused("oversubscription", t.oversubscription.is_some())?;
            unused("core_links", t.core_links.is_some())?;
            let sizes = [
                ("leaves", need("leaves", t.leaves)?),
                ("spines", need("spines", t.spines)?),
                ("hosts_per_leaf", need("hosts_per_leaf", t.hosts_per_leaf)?),
            ];
            let [l, s, h] = sizes.map(|s| s.1);
            let what = format!("a leaf-spine of {l} leaves, {s} spines and {h} hosts per leaf");
            layout_within_bounds(ctx, largest(&sizes), &what, &LayoutSize::leaf_spine(l, s, h))?;
            leaf_spine(l, s, h).map_err(|e| ctx.err("topology.leaves", e))?
        }
        k => {
            return Err(ctx.err(
                "topology.kind",
                format!("expected `fat-tree`, `three-tier` or `leaf-spine`, got `{k}`"),
            ))
        }
    })
}

/// The largest of a layout's sizes (the first of equals): the key to make smaller when a count
/// they multiply is over its bound.
fn largest<'a>(sizes: &[(&'a str, usize)]) -> &'a str {
    sizes
        .iter()
        .fold(sizes[0], |best, &s| if s.1 > best.1 { s } else { best })
        .0
}

/// Every count a layout derives from its sizes (nodes, links, the control plane's bytes and
/// route steps) within the scenario's bounds, checked before anything is generated and refused
/// at `topology.<key>`; `what` describes the layout.
fn layout_within_bounds(
    ctx: &Ctx<'_>,
    key: &str,
    what: &str,
    size: &mpsched_topo::generate::LayoutSize,
) -> Result<(), ScenarioError> {
    let err = |message: String| ctx.err(format!("topology.{key}"), message);
    if size.nodes() > MAX_NODES {
        return Err(err(format!("{what} has {} nodes; at most {MAX_NODES}", size.nodes())));
    }
    if size.links > MAX_LINKS {
        return Err(err(format!("{what} has {} links; at most {MAX_LINKS}", size.links)));
    }
    ControlPlane::of_layout(size).check(what, 1).map_err(err)
}

/// `[topology]` as `[[node]]` and `[[link]]` entries: the generated nodes (hosts first) and
/// links, each tier's rate, delay, queue and ECN threshold on its links, the `down` links left
/// out. They come before the file's own nodes and links, which may add to them.
pub(super) fn generated(ctx: &Ctx<'_>, t: &RawTopology) -> Result<(Vec<RawNode>, Vec<RawLink>), ScenarioError> {
    use mpsched_topo::generate::Tier;
    let g = generator(ctx, t)?;
    for (key, tier) in [
        ("host_links", Some(&t.host_links)),
        ("edge_links", Some(&t.edge_links)),
        ("core_links", t.core_links.as_ref()),
    ] {
        if let Some(tier) = tier {
            check_tier(ctx, key, tier)?;
        }
    }
    let name = |i: usize| g.nodes[i].0.as_str();
    let mut down: HashSet<(&str, &str)> = HashSet::new();
    for (i, [a, b]) in t.down.iter().enumerate() {
        let known = g
            .links
            .iter()
            .any(|l| (name(l.a), name(l.b)) == (a, b) || (name(l.b), name(l.a)) == (a, b));
        if !known {
            return Err(ctx.err(
                format!("topology.down[{i}]"),
                format!("no generated link between `{a}` and `{b}`"),
            ));
        }
        down.insert((a.as_str(), b.as_str()));
        down.insert((b.as_str(), a.as_str()));
    }
    let roles = tier_roles(&g, t.kind == "leaf-spine");
    for (role, program) in &t.programs {
        super::programs::program_named(ctx, &format!("topology.programs.{role}"), program)?;
        if !roles.contains(&Some(role.as_str())) {
            let known: std::collections::BTreeSet<&str> = roles.iter().flatten().copied().collect();
            return Err(ctx.err(
                format!("topology.programs.{role}"),
                format!("a {} has no tier `{role}`; its tiers are {known:?}", t.kind),
            ));
        }
    }
    let nodes = g
        .nodes
        .iter()
        .zip(&roles)
        .map(|((n, kind), role)| RawNode {
            name: n.clone(),
            kind: if *kind == NodeKind::Host { "host" } else { "switch" }.into(),
            ip: None,
            program: role.and_then(|r| t.programs.get(r).cloned()),
        })
        .collect();
    let links = g
        .links
        .iter()
        .filter(|l| !down.contains(&(name(l.a), name(l.b))))
        .map(|l| {
            let tier = match l.tier {
                Tier::Host => &t.host_links,
                Tier::Edge => &t.edge_links,
                Tier::Core => t.core_links.as_ref().unwrap_or(&t.edge_links),
            };
            RawLink {
                a: name(l.a).to_string(),
                b: name(l.b).to_string(),
                rate: tier.rate.clone(),
                delay: tier.delay.clone(),
                queue_pkts: tier.queue_pkts,
                host_queue_pkts: tier.host_queue_pkts,
                name: None,
                ecn_threshold_pkts: tier.ecn_threshold_pkts,
                queues: None,
                discipline: None,
                queue_weights: None,
                a_ip: None,
                b_ip: None,
            }
        })
        .collect();
    Ok((nodes, links))
}

/// A tier's values, checked once with the tier's own field names.
/// A tier's values at their own keys: every generated link is checked again as a `link[i]`,
/// a name the file does not have.
fn check_tier(ctx: &Ctx<'_>, key: &str, tier: &RawTier) -> Result<(), ScenarioError> {
    ctx.rate(&format!("topology.{key}.rate"), &tier.rate)?;
    if let Some(d) = &tier.delay {
        ctx.time(&format!("topology.{key}.delay"), d)?;
    }
    for (name, v) in [
        ("queue_pkts", tier.queue_pkts),
        ("host_queue_pkts", tier.host_queue_pkts),
        ("ecn_threshold_pkts", tier.ecn_threshold_pkts),
    ] {
        if v == Some(0) {
            return Err(ctx.err(format!("topology.{key}.{name}"), "expected at least 1"));
        }
    }
    if key != "host_links" && tier.host_queue_pkts.is_some() {
        return Err(ctx.err(
            format!("topology.{key}.host_queue_pkts"),
            "applies to host_links only (the host's own interface queue)",
        ));
    }
    Ok(())
}

/// Each generated node's tier, from the links it has: a switch with hosts is a `tor` (`leaf`);
/// one with links to both racks and cores an `agg`; one with only core links a `core`; in a
/// leaf-spine, one with only edge links a `spine`. Hosts have none.
fn tier_roles(g: &mpsched_topo::generate::Generated, leaf_spine: bool) -> Vec<Option<&'static str>> {
    use mpsched_topo::generate::Tier;
    let mut tiers = vec![[false; 3]; g.nodes.len()];
    for l in &g.links {
        let t = match l.tier {
            Tier::Host => 0,
            Tier::Edge => 1,
            Tier::Core => 2,
        };
        tiers[l.a][t] = true;
        tiers[l.b][t] = true;
    }
    g.nodes
        .iter()
        .zip(tiers)
        .map(
            |((_, kind), [host, edge, core])| match (*kind == NodeKind::Host, host, edge, core) {
                (true, ..) => None,
                (false, true, ..) => Some(if leaf_spine { "leaf" } else { "tor" }),
                (false, false, true, true) => Some("agg"),
                (false, false, false, true) => Some("core"),
                (false, false, true, false) => Some(if leaf_spine { "spine" } else { "agg" }),
                _ => None,
            },
        )
        .collect()
}
