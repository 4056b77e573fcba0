//! `[[variant]]`: named changes to a scenario.

use super::*;

/// `[[variant]]`: names unique; each is applied when asked for.
pub(super) fn variants_of(ctx: &Ctx<'_>, raw_variants: &[RawVariant]) -> Result<Vec<Variant>, ScenarioError> {
    let mut variants = Vec::new();
    let mut seen = BTreeMap::new();
    for (i, v) in raw_variants.iter().enumerate() {
        check_name(ctx, format!("variant[{i}].name"), &v.name)?;
        if seen.insert(v.name.clone(), i).is_some() {
            return Err(ctx.err(
                format!("variant[{i}].name"),
                format!("duplicate variant name `{}`", v.name),
            ));
        }
        variants.push(Variant {
            name: v.name.clone(),
            raw: v.clone(),
        });
    }
    Ok(variants)
}

impl Scenario {
    /// The scenario with variant `name` applied (its split and rates), validated.
    pub fn with_variant(&self, name: &str) -> Result<Scenario, ScenarioError> {
        let ctx = Ctx { file: &self.origin };
        let (vi, v) = self
            .variants
            .iter()
            .enumerate()
            .find(|(_, v)| v.name == name)
            .ok_or_else(|| ctx.err("variant", format!("no variant named `{name}`")))?;
        let f = |k: &str| format!("variant[{vi}].{k}");
        let raw = &v.raw;
        let mut out = self.clone();
        out.variants.clear();
        if !self.splits.is_empty() || raw.scheduler.is_some() {
            let si = match &raw.split {
                Some(s) => self
                    .splits
                    .iter()
                    .position(|x| &x.name == s)
                    .ok_or_else(|| ctx.err(f("split"), format!("no split named `{s}`")))?,
                None => 0,
            };
            if si >= self.splits.len() {
                return Err(ctx.err(f("split"), "the scenario has no [[split]] to override"));
            }
            let base = &self.raw_splits[si];
            let keep = RawSplitKeep {
                scheduler: raw.scheduler.clone().unwrap_or_else(|| base.scheduler.clone()),
                weights: raw.weights.clone().or_else(|| base.weights.clone()),
                shares: raw.shares.clone().or_else(|| base.shares.clone()),
                path: raw.path.clone().or_else(|| base.path.clone()),
                dwrr: raw.dwrr.clone().unwrap_or_else(|| base.dwrr.clone()),
            };
            let split_paths: Vec<String> = self.splits[si]
                .paths
                .iter()
                .map(|&p| self.paths[p].name.clone())
                .collect();
            let sched = scheduler_config(&ctx, &format!("variant[{vi}]"), &keep, &split_paths)?;
            let s = &mut out.splits[si];
            s.scheduler = sched;
            if keep.scheduler == "dwrr" && s.ecn_threshold_pkts.is_none() {
                s.ecn_threshold_pkts = Some(mpsched_core::marker::DEFAULT_ECN_THRESHOLD_PKTS);
            }
            out.raw_splits[si] = keep;
        }
        for (flow, rate) in &raw.rates {
            let fi = out
                .flows
                .iter()
                .position(|x| &x.name == flow)
                .ok_or_else(|| ctx.err(format!("variant[{vi}].rates.{flow}"), format!("no flow named `{flow}`")))?;
            if out.flows[fi].protocol != Protocol::Udp {
                return Err(ctx.err(format!("variant[{vi}].rates.{flow}"), "rates apply to UDP flows"));
            }
            out.flows[fi].rate_bps = ctx.rate(&format!("variant[{vi}].rates.{flow}"), rate)?;
        }
        for (link, rate) in &raw.link_rates {
            let li = out
                .links
                .iter()
                .position(|x| x.name.as_deref() == Some(link))
                .ok_or_else(|| {
                    ctx.err(
                        format!("variant[{vi}].link_rates.{link}"),
                        format!("no link named `{link}`"),
                    )
                })?;
            out.links[li].rate_bps = ctx.rate(&format!("variant[{vi}].link_rates.{link}"), rate)?;
        }
        udp_rates_are_sendable(&ctx, &out.flows, &out.nodes, &out.links, &|i| match raw
            .rates
            .contains_key(&out.flows[i].name)
        {
            true => format!("variant[{vi}].rates.{}", out.flows[i].name),
            false => format!("variant[{vi}].link_rates"),
        })?;
        // The protocol first, so that `cc` reaches the flows it made TCP.
        if let Some(p) = &raw.protocol {
            flows::set_single_path(&ctx, &f("protocol"), p, &self.tcp_defaults, &mut out.flows)?;
        }
        if let Some(cc) = &raw.cc {
            set_cc(&ctx, &f("cc"), cc, &mut out.flows)?;
        }
        if let Some(n) = raw.subflows {
            flows::set_subflows(&ctx, &f("subflows"), n, &mut out.flows)?;
        }
        if let Some(p) = &raw.program {
            set_program(&ctx, &f("program"), p, &mut out)?;
        }
        if let Some(r) = &raw.routing {
            out.routing = match r.as_str() {
                "ecmp" => Routing::Ecmp,
                "shortest" => Routing::Shortest,
                _ => return Err(ctx.err(f("routing"), format!("expected `shortest` or `ecmp`, got `{r}`"))),
            };
        }
        if raw.tunnel_scheduler.is_some() || raw.tunnel_transport.is_some() || raw.tunnel_params.is_some() {
            if self.tunnels.is_empty() {
                return Err(ctx.err(f("tunnel_scheduler"), "the scenario has no [[tunnel]]"));
            }
            let index = TunnelIndex::new(&self.nodes, &self.paths);
            for (ti, rt) in self.raw_tunnels.iter().enumerate() {
                let mut rt = rt.clone();
                if let Some(x) = &raw.tunnel_scheduler {
                    rt.scheduler = x.clone();
                }
                if let Some(x) = &raw.tunnel_transport {
                    rt.transport = x.clone();
                }
                if let Some(x) = &raw.tunnel_params {
                    let mut merged = rt.params.take().unwrap_or_default();
                    merged.extend(x.clone());
                    rt.params = Some(merged);
                }
                // Refused at the variant's key that set it, saying which tunnel it breaks.
                out.tunnels[ti] = build_tunnel(&ctx, ti, &rt, &self.paths, &index).map_err(|mut e| {
                    let from_variant = |k: &str| raw.tunnel_params.as_ref().is_some_and(|t| t.contains_key(k));
                    let key = if let Some((_, k)) = e.field.split_once(".params.").filter(|(_, k)| from_variant(k)) {
                        // The key of the variant's own table that broke it.
                        return ScenarioError {
                            field: f(&format!("tunnel_params.{k}")),
                            message: format!("in tunnel[{ti}] (`{}`): {}", e.field, e.message),
                            ..e
                        };
                    } else if e.field.ends_with(".transport") && raw.tunnel_transport.is_some() {
                        "tunnel_transport"
                    } else if raw.tunnel_scheduler.is_some() {
                        "tunnel_scheduler"
                    } else {
                        "tunnel_transport"
                    };
                    e.message = format!("in tunnel[{ti}] (`{}`): {}", e.field, e.message);
                    e.field = f(key);
                    e
                })?;
            }
        }
        Ok(out)
    }
}

/// A variant's `cc`: every TCP flow's congestion control (a coupled one: every MPTCP flow's).
fn set_cc(ctx: &Ctx<'_>, at: &str, cc: &str, flows: &mut [Flow]) -> Result<(), ScenarioError> {
    if matches!(cc, "dcqcn" | "pmqecn") {
        return set_rate_cc(ctx, at, cc, flows);
    }
    let kind = CcKind::parse(cc).ok_or_else(|| {
        ctx.err(
            at,
            format!("expected `reno`, `cubic`, `dctcp`, `lia`, `olia`, `dcqcn` or `pmqecn`, got `{cc}`"),
        )
    })?;
    if kind.is_coupled() && !flows.iter().any(|x| x.protocol == Protocol::Mptcp) {
        return Err(ctx.err(
            at,
            format!("`{cc}` couples MPTCP subflows, and the scenario has no MPTCP flow"),
        ));
    }
    for fl in flows.iter_mut() {
        if let Some(t) = &mut fl.tcp {
            // A coupled controller is for MPTCP connections; single-path TCP keeps its own.
            if kind.is_coupled() && t.mptcp.is_none() {
                continue;
            }
            t.config.cc = kind;
            if kind == CcKind::Dctcp && !t.config.ecn {
                return Err(ctx.err(at, format!("DCTCP needs ECN, and flow `{}` has it off", fl.name)));
            }
        }
    }
    Ok(())
}

/// `cc = "dcqcn" | "pmqecn"`: every rate-controlled UDP flow's controller. A flow whose file
/// already gives that controller keeps its keys; one switched to the other gets the new
/// controller's defaults.
fn set_rate_cc(ctx: &Ctx<'_>, at: &str, cc: &str, flows: &mut [Flow]) -> Result<(), ScenarioError> {
    let raw = crate::schema::RawRateControl {
        cc: cc.to_string(),
        ..Default::default()
    };
    let mut any = false;
    for fl in flows.iter_mut().filter(|f| f.rate_control.is_some()) {
        any = true;
        let same = matches!(
            (fl.rate_control, cc),
            (Some(RateControl::Dcqcn { .. }), "dcqcn") | (Some(RateControl::Pmqecn(_)), "pmqecn")
        );
        if same {
            continue;
        }
        fl.rate_control = Some(rate_control_of(ctx, at, &raw, fl.rate_bps)?);
    }
    if !any {
        return Err(ctx.err(
            at,
            format!("`{cc}` paces UDP flows with `[flow.rate_control]`, and the scenario has none"),
        ));
    }
    Ok(())
}

/// A variant's `program`: every switch's, with its default parameters unless the file gave
/// some, checked as the file's would be.
fn set_program(ctx: &Ctx<'_>, at: &str, p: &str, out: &mut Scenario) -> Result<(), ScenarioError> {
    let prog = program_named(ctx, at, p)?;
    for slot in out.programs.iter_mut().flatten() {
        *slot = prog.name();
    }
    out.program_params
        .entry(prog.name())
        .or_insert_with(|| mpsched_programs::Params::defaults(prog.params()));
    splits_run_where_supported(ctx, at, &out.splits, &out.paths, &out.nodes, &out.programs)?;
    classifiers_run_where_supported(ctx, at, &out.classify, &out.nodes, &out.programs)?;
    ports_suit_programs(ctx, &out.nodes, &out.links, &out.programs, &out.program_params)?;
    port_counts_suit_programs(ctx, &|_| at.to_string(), &out.nodes, &out.links, &out.programs)?;
    Ok(())
}
