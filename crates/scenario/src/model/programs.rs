//! Which program each switch runs, and each program's parameters: `[scenario] program`,
//! `[[node]] program`, `[topology.programs]` by tier and `[programs.<name>]`, checked against
//! the registry (`mpsched-programs`).

use super::*;
use mpsched_programs::{
    switch_program, switch_program_names, Param, ParamKind, Params, SwitchProgram, DEFAULT_PROGRAM,
};

/// The program called `name`, or an error at `field` listing the registered ones.
pub(super) fn program_named(
    ctx: &Ctx<'_>,
    field: &str,
    name: &str,
) -> Result<&'static dyn SwitchProgram, ScenarioError> {
    switch_program(name).ok_or_else(|| {
        ctx.err(
            field,
            format!("no program `{name}`; registered: {}", switch_program_names()),
        )
    })
}

/// Per node, the program it runs (None for hosts): its `[[node]] program` (or its tier's),
/// else `[scenario] program`, else the default.
pub(super) fn node_programs(
    ctx: &Ctx<'_>,
    raw: &RawScenario,
    nodes: &[Node],
) -> Result<Vec<Option<&'static str>>, ScenarioError> {
    let default = match &raw.scenario.program {
        Some(p) => program_named(ctx, "scenario.program", p)?.name(),
        None => DEFAULT_PROGRAM,
    };
    let mut out = Vec::with_capacity(nodes.len());
    for (i, (n, rn)) in nodes.iter().zip(&raw.node).enumerate() {
        let field = format!("node[{i}].program");
        out.push(match (&rn.program, n.kind) {
            (Some(_), NodeKind::Host) => {
                return Err(ctx.err(field, format!("`{}` is a host; programs run on switches", n.name)))
            }
            (Some(p), NodeKind::Switch) => Some(program_named(ctx, &field, p)?.name()),
            (None, NodeKind::Switch) => Some(default),
            (None, NodeKind::Host) => None,
        });
    }
    Ok(out)
}

/// Every `[programs.<name>]` table read against its program's declared parameters; every
/// program a switch runs gets its defaults where the file gives none.
pub(super) fn program_params(
    ctx: &Ctx<'_>,
    tables: &BTreeMap<String, toml::Table>,
    running: &[Option<&'static str>],
) -> Result<BTreeMap<&'static str, Params>, ScenarioError> {
    let mut out = BTreeMap::new();
    for (name, table) in tables {
        let prog = program_named(ctx, &format!("programs.{name}"), name)?;
        out.insert(prog.name(), params_of(ctx, prog, table)?);
    }
    for name in running.iter().flatten() {
        if !out.contains_key(name) {
            let prog = switch_program(name).expect("checked when the node was read");
            out.insert(prog.name(), Params::defaults(prog.params()));
        }
    }
    Ok(out)
}

fn params_of(ctx: &Ctx<'_>, prog: &dyn SwitchProgram, table: &toml::Table) -> Result<Params, ScenarioError> {
    let declared = prog.params();
    let mut params = Params::defaults(declared);
    for (key, value) in table {
        let field = format!("programs.{}.{key}", prog.name());
        let Some(p) = declared.iter().find(|p| p.name == key) else {
            return Err(ctx.err(
                field,
                format!(
                    "`{}` has no parameter `{key}`; it has {}",
                    prog.name(),
                    mpsched_programs::params::names(declared)
                ),
            ));
        };
        let v = param_value(ctx, &field, p, value)?;
        if p.check(v).is_err() {
            return Err(ctx.err(field, bounds_message(p, v)));
        }
        params.set(declared, key, v).map_err(|e| ctx.err(&field, e))?;
    }
    prog.check_params(&params)
        .map_err(|(key, e)| ctx.err(format!("programs.{}.{key}", prog.name()), e))?;
    Ok(params)
}

/// A value in the parameter's unit, in base units.
pub(super) fn param_value(ctx: &Ctx<'_>, field: &str, p: &Param, value: &toml::Value) -> Result<u64, ScenarioError> {
    match (p.kind, value) {
        (ParamKind::Count, toml::Value::Integer(n)) => {
            u64::try_from(*n).map_err(|_| ctx.err(field, format!("expected a count of at least 0, got {n}")))
        }
        (ParamKind::Time, toml::Value::String(s)) => ctx.time(field, s),
        (ParamKind::Rate, toml::Value::String(s)) => ctx.rate(field, s),
        (ParamKind::Bytes, toml::Value::String(s)) => ctx.size(field, s),
        (ParamKind::Choice(names), toml::Value::String(s)) => match names.iter().position(|n| n == s) {
            Some(i) => Ok(i as u64),
            None => Err(ctx.err(field, format!("expected one of {}, got `{s}`", quoted(names)))),
        },
        (kind, v) => Err(ctx.err(
            field,
            format!("expected {} ({}), got `{v}`", kind.describe(), example(kind)),
        )),
    }
}

fn example(kind: ParamKind) -> &'static str {
    match kind {
        ParamKind::Time => "a string like `100us`",
        ParamKind::Rate => "a string like `10Gbps`",
        ParamKind::Bytes => "a string like `64KiB`",
        ParamKind::Count => "an integer",
        ParamKind::Choice(_) => "a quoted name",
    }
}

/// `a`, `b` or `c`.
fn quoted(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => q.join(""),
    }
}

/// "must be ... from X to Y", in the scenario's units.
pub(super) fn bounds_message(p: &Param, v: u64) -> String {
    let show = |x: u64| match p.kind {
        ParamKind::Time => crate::units::format_time_ps(x),
        ParamKind::Rate => crate::units::format_rate_bps(x),
        ParamKind::Bytes => format!("{x} B"),
        ParamKind::Count => x.to_string(),
        ParamKind::Choice(_) => p.kind.choice_name(x).map_or_else(|| x.to_string(), str::to_string),
    };
    if v < p.min || v > p.max {
        format!(
            "expected {} from {} to {}, got {}",
            p.kind.describe(),
            show(p.min),
            show(p.max),
            show(v)
        )
    } else if p.power_of_two && !v.is_power_of_two() {
        format!("expected a power of two, got {v}")
    } else {
        format!("expected a multiple of {}, got {}", show(p.multiple_of), show(v))
    }
}

/// Every node of a split's paths must run a program that carries splits (the splitting and
/// confluence points hold the groups; the nodes between hold the paths' ECN markers).
/// Every link end at a switch suits its program (HULA's estimator needs a port to carry enough
/// bytes in its time constant), refused at the program's parameter with the link named.
pub(super) fn ports_suit_programs(
    ctx: &Ctx<'_>,
    nodes: &[Node],
    links: &[Link],
    programs: &[Option<&'static str>],
    params: &BTreeMap<&'static str, Params>,
) -> Result<(), ScenarioError> {
    for l in links {
        for n in [l.a, l.b] {
            let Some(name) = programs.get(n).copied().flatten() else {
                continue;
            };
            let (Some(prog), Some(p)) = (switch_program(name), params.get(name)) else {
                continue;
            };
            let strict = l.discipline == QueueDiscipline::StrictPriority;
            // A switch's end of the link (hosts run no program).
            prog.check_port_rate(p, l.rate_bps)
                .and_then(|()| prog.check_port_queues(p, l.queues, l.queue_pkts, strict))
                .map_err(|(key, e)| {
                    ctx.err(
                        format!("programs.{name}.{key}"),
                        format!("the link {} - {}: {e}", nodes[l.a].name, nodes[l.b].name),
                    )
                })?;
        }
    }
    Ok(())
}

/// Where node `i`'s program was set: its own `[[node]]`, else its tier's, else the scenario's.
pub(super) fn program_field(raw: &RawScenario, i: usize) -> String {
    match (raw.node.get(i).and_then(|n| n.program.as_ref()), &raw.topology) {
        (Some(_), None) => format!("node[{i}].program"),
        (_, Some(_)) if raw.scenario.program.is_none() => "topology.programs".to_string(),
        _ => "scenario.program".to_string(),
    }
}

/// Every switch has no more ports (links) than its program can route to, refused at
/// `field_of(node)` (where that node's program was set).
pub(super) fn port_counts_suit_programs(
    ctx: &Ctx<'_>,
    field_of: &dyn Fn(usize) -> String,
    nodes: &[Node],
    links: &[Link],
    programs: &[Option<&'static str>],
) -> Result<(), ScenarioError> {
    let mut ports = vec![0usize; nodes.len()];
    for l in links {
        ports[l.a] += 1;
        ports[l.b] += 1;
    }
    for (n, count) in ports.iter().enumerate() {
        let Some(name) = programs.get(n).copied().flatten() else {
            continue;
        };
        let Some(max) = switch_program(name).and_then(|p| p.max_ports()) else {
            continue;
        };
        if *count > max {
            return Err(ctx.err(
                field_of(n),
                format!(
                    "`{}` has {count} ports; the program `{name}` routes to at most {max}",
                    nodes[n].name
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn splits_run_where_supported(
    ctx: &Ctx<'_>,
    field: &str,
    splits: &[Split],
    paths: &[Path],
    nodes: &[Node],
    programs: &[Option<&'static str>],
) -> Result<(), ScenarioError> {
    for s in splits {
        for &p in &s.paths {
            for &n in &paths[p].nodes {
                let Some(name) = programs[n] else { continue };
                let prog = switch_program(name).expect("registered");
                if !prog.runs_splits() {
                    return Err(ctx.err(
                        field,
                        format!(
                            "split `{}` runs through `{}`, whose program `{name}` does not carry splits; \
                             run `multipath` there",
                            s.name, nodes[n].name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

impl Scenario {
    /// The routing the control plane computes for node `n`'s tables: its program's need, or
    /// the scenario's `routing`.
    pub fn node_routing(&self, n: usize) -> Option<Routing> {
        let prog = switch_program(self.programs.get(n).copied().flatten()?)?;
        Some(match prog.tables_need() {
            mpsched_programs::TablesNeed::ScenarioRouting => self.routing,
            mpsched_programs::TablesNeed::EqualCostGroups => Routing::Ecmp,
            mpsched_programs::TablesNeed::ShortestPath => Routing::Shortest,
        })
    }

    /// The program switch `n` runs, with its parameters (None for hosts).
    pub fn program_of(&self, n: usize) -> Option<(&'static dyn SwitchProgram, &Params)> {
        let name = self.programs.get(n).copied().flatten()?;
        Some((switch_program(name)?, self.program_params.get(name)?))
    }
}
