//! `[[path]]` and `[[split]]`: named paths and the splitting groups over them, with their schedulers.

use super::*;

/// `[[path]]`: switches, each linked to the next; the first and the last may be hosts.
pub(super) fn paths_of(
    ctx: &Ctx<'_>,
    raw_paths: &[RawPath],
    nodes: &[Node],
    links: &[Link],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<Path>, ScenarioError> {
    let pairs: HashSet<(usize, usize)> = links.iter().map(|l| (l.a.min(l.b), l.a.max(l.b))).collect();
    let linked = |x: usize, y: usize| pairs.contains(&(x.min(y), x.max(y)));
    let mut paths = Vec::new();
    let mut names = HashSet::new();
    for (i, p) in raw_paths.iter().enumerate() {
        check_name(ctx, format!("path[{i}].name"), &p.name)?;
        if !names.insert(p.name.as_str()) {
            return Err(ctx.err(format!("path[{i}].name"), format!("duplicate path name `{}`", p.name)));
        }
        if p.nodes.len() < 2 {
            return Err(ctx.err(format!("path[{i}].nodes"), "expected at least two nodes"));
        }
        let mut idx = Vec::new();
        for (j, n) in p.nodes.iter().enumerate() {
            let k = node_of(format!("path[{i}].nodes[{j}]"), n)?;
            // A host forwards nothing: it may only start or end a path (a tunnel's host end).
            if nodes[k].kind != NodeKind::Switch && j != 0 && j + 1 != p.nodes.len() {
                return Err(ctx.err(
                    format!("path[{i}].nodes[{j}]"),
                    format!("expected a switch, `{n}` is a host (hosts may only start or end a path)"),
                ));
            }
            if idx.contains(&k) {
                return Err(ctx.err(format!("path[{i}].nodes[{j}]"), format!("`{n}` appears twice")));
            }
            if let Some(&prev) = idx.last() {
                if !linked(prev, k) {
                    return Err(ctx.err(
                        format!("path[{i}].nodes[{j}]"),
                        format!("no link between `{}` and `{n}`", nodes[prev].name),
                    ));
                }
            }
            idx.push(k);
        }
        paths.push(Path {
            name: p.name.clone(),
            nodes: idx,
        });
    }
    Ok(paths)
}

/// `[[split]]`: paths from one splitting point to one confluence point, and a scheduler.
pub(super) fn splits_of(
    ctx: &Ctx<'_>,
    raw_splits_in: &[RawSplit],
    paths: &[Path],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
    path_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<(Vec<Split>, Vec<RawSplitKeep>), ScenarioError> {
    let mut splits = Vec::new();
    let mut raw_splits = Vec::new();
    for (i, s) in raw_splits_in.iter().enumerate() {
        let at = format!("split[{i}]");
        let src = node_of(format!("{at}.src"), &s.src)?;
        let dst = node_of(format!("{at}.dst"), &s.dst)?;
        if s.paths.len() < 2 || s.paths.len() > MAX_PATHS {
            return Err(ctx.err(
                format!("{at}.paths"),
                format!("expected 2 to {MAX_PATHS} paths, got {}", s.paths.len()),
            ));
        }
        let mut pidx = Vec::new();
        for (j, p) in s.paths.iter().enumerate() {
            pidx.push(path_of(format!("{at}.paths[{j}]"), p)?);
        }
        let first = paths[pidx[0]].nodes[0];
        let last = *paths[pidx[0]].nodes.last().unwrap();
        for (j, &p) in pidx.iter().enumerate() {
            if paths[p].nodes[0] != first || *paths[p].nodes.last().unwrap() != last {
                return Err(ctx.err(
                    format!("{at}.paths[{j}]"),
                    "all paths of a split must start at the same splitting point and end at the same confluence point",
                ));
            }
            if pidx[..j].contains(&p) {
                return Err(ctx.err(format!("{at}.paths[{j}]"), "path listed twice"));
            }
        }
        let second_hops: HashSet<usize> = pidx.iter().map(|&p| paths[p].nodes[1]).collect();
        if second_hops.len() != pidx.len() {
            return Err(ctx.err(
                format!("{at}.paths"),
                "each path must leave the splitting point by a different link",
            ));
        }
        let keep = RawSplitKeep {
            scheduler: s.scheduler.clone(),
            weights: s.weights.clone(),
            shares: s.shares.clone(),
            path: s.path.clone(),
            dwrr: s.dwrr.clone().unwrap_or_default(),
        };
        let names: Vec<String> = pidx.iter().map(|&p| paths[p].name.clone()).collect();
        let scheduler = scheduler_config(ctx, &at, &keep, &names)?;
        let ecn_threshold_pkts = s.ecn_threshold_pkts.or(if s.scheduler == "dwrr" {
            Some(mpsched_core::marker::DEFAULT_ECN_THRESHOLD_PKTS)
        } else {
            None
        });
        splits.push(Split {
            name: s.name.clone().unwrap_or_else(|| format!("split{i}")),
            src,
            dst,
            paths: pidx,
            scheduler,
            ecn_threshold_pkts,
            feedback_every: match s.feedback_every {
                Some(0) => return Err(ctx.err(format!("{at}.feedback_every"), "expected at least 1 (packets)")),
                n => n.unwrap_or(mpsched_core::feedback::DEFAULT_FEEDBACK_EVERY),
            },
        });
        raw_splits.push(keep);
    }
    if splits.len() > 255 {
        return Err(ctx.err("split", "at most 255 splits"));
    }
    Ok((splits, raw_splits))
}

/// A split matches its traffic on the hosts' own addresses: refuse ends with an address per
/// interface (whose traffic would carry another).
pub(super) fn splits_use_node_addresses(
    ctx: &Ctx<'_>,
    splits: &[Split],
    nodes: &[Node],
    links: &[Link],
) -> Result<(), ScenarioError> {
    for (i, s) in splits.iter().enumerate() {
        for (end, host) in [("src", s.src), ("dst", s.dst)] {
            let own = |ip: Option<Ipv4>| ip.is_some_and(|ip| ip != nodes[host].ip);
            if links
                .iter()
                .any(|l| (l.a == host && own(l.a_ip)) || (l.b == host && own(l.b_ip)))
            {
                return Err(ctx.err(
                    format!("split[{i}].{end}"),
                    format!(
                        "`{}` has an address per interface; splits match the hosts' own addresses",
                        nodes[host].name
                    ),
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn scheduler_config(
    ctx: &Ctx<'_>,
    at: &str,
    s: &RawSplitKeep,
    path_names: &[String],
) -> Result<SchedulerConfig, ScenarioError> {
    let n = path_names.len();
    let need_len = |field: &str, len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(ctx.err(
                format!("{at}.{field}"),
                format!("expected {n} entries, one per path, got {len}"),
            ))
        }
    };
    Ok(match s.scheduler.as_str() {
        "rs" => {
            let shares = s
                .shares
                .clone()
                .ok_or_else(|| ctx.err(format!("{at}.shares"), "scheduler `rs` needs `shares`, e.g. [67, 33]"))?;
            need_len("shares", shares.len())?;
            if shares.iter().all(|&x| x == 0) {
                return Err(ctx.err(format!("{at}.shares"), "expected at least one non-zero share"));
            }
            SchedulerConfig::Rs { shares_pct: shares }
        }
        "wrr" | "dwrr" => {
            let weights = s.weights.clone().ok_or_else(|| {
                ctx.err(
                    format!("{at}.weights"),
                    format!("scheduler `{}` needs `weights`, e.g. [2, 1]", s.scheduler),
                )
            })?;
            need_len("weights", weights.len())?;
            if weights.iter().all(|&x| x == 0) {
                return Err(ctx.err(format!("{at}.weights"), "expected at least one non-zero weight"));
            }
            if s.scheduler == "wrr" {
                SchedulerConfig::Wrr { weights }
            } else {
                let d = DwrrParams::default();
                let r = &s.dwrr;
                let params = DwrrParams {
                    groups: r.groups.unwrap_or(d.groups),
                    avoidance_drop_pkts: r.avoidance_drop_pkts.unwrap_or(d.avoidance_drop_pkts),
                    weight_scale: r.weight_scale.unwrap_or_else(|| DwrrParams::scale_for(&weights)),
                    min_weight: r.min_weight.unwrap_or(d.min_weight),
                    max_step: r.max_step.unwrap_or(d.max_step),
                };
                if params.groups == 0 {
                    return Err(ctx.err(format!("{at}.dwrr.groups"), "expected at least 1"));
                }
                if params.weight_scale == 0 {
                    return Err(ctx.err(format!("{at}.dwrr.weight_scale"), "expected at least 1"));
                }
                if weights
                    .iter()
                    .any(|&w| u32::from(w) * u32::from(params.weight_scale) > u32::from(u16::MAX))
                {
                    return Err(ctx.err(
                        format!("{at}.dwrr.weight_scale"),
                        "weights times weight_scale must fit in 16 bits",
                    ));
                }
                SchedulerConfig::Dwrr { weights, params }
            }
        }
        "ecmp" => SchedulerConfig::Ecmp,
        "single" => {
            let p = s.path.clone().ok_or_else(|| {
                ctx.err(
                    format!("{at}.path"),
                    "scheduler `single` needs `path`, one of the split's paths",
                )
            })?;
            let i = path_names.iter().position(|x| *x == p).ok_or_else(|| {
                ctx.err(
                    format!("{at}.path"),
                    format!(
                        "expected one of the split's paths ({}), got `{p}`",
                        path_names.join(", ")
                    ),
                )
            })?;
            SchedulerConfig::Single { path: i as u8 }
        }
        other => {
            let names: Vec<&str> = SCHEDULERS.iter().map(|(n, _)| *n).collect();
            return Err(ctx.err(
                format!("{at}.scheduler"),
                format!("expected one of {}, got `{other}`", names.join(", ")),
            ));
        }
    })
}
