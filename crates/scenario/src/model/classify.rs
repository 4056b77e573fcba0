//! `[[classify]]`: rules of a switch's classifier, which picks a packet's queue by its
//! source, destination and DSCP (`mpsched_core::classify`).

use super::*;
use mpsched_core::classify::MAX_CLASS_QUEUES;
pub use mpsched_topo::{ClassMatch, ClassifyIntent};

pub(super) fn classifiers_of(
    ctx: &Ctx<'_>,
    raw: &[RawClassify],
    nodes: &[Node],
    links: &[Link],
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<ClassifyIntent>, ScenarioError> {
    let mut out = Vec::new();
    for (i, c) in raw.iter().enumerate() {
        let at_field = |k: &str| format!("classify[{i}].{k}");
        let at = node_of(at_field("at"), &c.at)?;
        if nodes[at].kind != NodeKind::Switch {
            return Err(ctx.err(at_field("at"), format!("`{}` is a host: switches classify", c.at)));
        }
        let end = |k: &str, s: &Option<String>| {
            s.as_deref()
                .map(|s| class_match(ctx, at_field(k), s, node_of))
                .transpose()
        };
        let (src, dst) = (end("src", &c.src)?, end("dst", &c.dst)?);
        if let Some(d) = c.dscp.filter(|&d| d > 63) {
            return Err(ctx.err(at_field("dscp"), format!("expected 0 to 63, got {d}")));
        }
        if c.queue >= MAX_CLASS_QUEUES {
            return Err(ctx.err(
                at_field("queue"),
                format!("expected 0 to {}, got {}", MAX_CLASS_QUEUES - 1, c.queue),
            ));
        }
        out.push(ClassifyIntent {
            at,
            src,
            dst,
            dscp: c.dscp,
            queue: c.queue,
        });
    }
    // Counted as the control plane will write them: a host of several addresses is a rule each.
    mpsched_topo::classify::rules_by_switch(nodes, links, &out).map_err(|e| ctx.err("classify", e))?;
    Ok(out)
}

/// A rule's `src` or `dst`: `a.b.c.d/len`, an address (a /32) or a node's name.
fn class_match(
    ctx: &Ctx<'_>,
    field: String,
    s: &str,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<ClassMatch, ScenarioError> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => {
            let len = l
                .parse::<u8>()
                .ok()
                .filter(|&l| l <= 32)
                .ok_or_else(|| ctx.err(field.clone(), format!("expected a prefix length of 0 to 32, got `{l}`")))?;
            (a, len)
        }
        None => (s, 32),
    };
    match parse_ipv4(addr) {
        Some(ip) => Ok(ClassMatch::Prefix(ip & mpsched_core::classify::prefix_mask(len), len)),
        None if s.contains('/') => Err(ctx.err(field, format!("expected an IPv4 prefix, got `{s}`"))),
        None => Ok(ClassMatch::Node(node_of(field, s)?)),
    }
}

/// Every classifying switch runs a program over the multipath switch, which holds the
/// classifier on every backend.
pub(super) fn classifiers_run_where_supported(
    ctx: &Ctx<'_>,
    field: &str,
    classify: &[ClassifyIntent],
    nodes: &[Node],
    programs: &[Option<&'static str>],
) -> Result<(), ScenarioError> {
    for c in classify {
        let Some(name) = programs[c.at] else { continue };
        if !mpsched_programs::switch_program(name).expect("registered").classifies() {
            return Err(ctx.err(
                field,
                format!(
                    "`{}` classifies, but its program `{name}` has no classifier; run one that has there ({})",
                    nodes[c.at].name,
                    classifying_programs()
                ),
            ));
        }
    }
    Ok(())
}

/// The programs with a classifier, for messages.
fn classifying_programs() -> String {
    let names: Vec<&str> = mpsched_programs::SWITCH_PROGRAMS
        .iter()
        .filter(|p| p.classifies())
        .map(|p| p.name())
        .collect();
    names.join(", ")
}
