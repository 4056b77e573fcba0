//! `[[failure]]`: links that fail during a run (MP-HULA's failure experiments). At `at` both
//! directions of the link stop carrying packets (what is queued or on the wire is lost); after
//! `reroute_after` the control plane installs routes that avoid it (ECMP groups shrink; splits
//! and pinned paths are intents and keep their ports).

use super::*;

/// Most failures a scenario may have (each means one more set of routing tables at run time).
pub const MAX_FAILURES: usize = 64;

/// A link failure.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkFailure {
    /// Index into the scenario's links.
    pub link: usize,
    /// When it fails.
    pub at_ps: u64,
    /// How long until routes avoid it.
    pub reroute_after_ps: u64,
}

pub(super) fn failures_of(
    ctx: &Ctx<'_>,
    raw: &[RawFailure],
    links: &[Link],
    duration_ps: u64,
    node_of: &dyn Fn(String, &str) -> Result<usize, ScenarioError>,
) -> Result<Vec<LinkFailure>, ScenarioError> {
    if raw.len() > MAX_FAILURES {
        return Err(ctx.err("failure", format!("{} failures; at most {MAX_FAILURES}", raw.len())));
    }
    let mut out = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let at = |k: &str| format!("failure[{i}].{k}");
        let link = match (&f.link, &f.a, &f.b) {
            (Some(name), None, None) => links
                .iter()
                .position(|l| l.name.as_deref() == Some(name))
                .ok_or_else(|| ctx.err(at("link"), format!("no link named `{name}`")))?,
            (None, Some(a), Some(b)) => {
                let (a, b) = (node_of(at("a"), a)?, node_of(at("b"), b)?);
                links
                    .iter()
                    .position(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a))
                    .ok_or_else(|| ctx.err(at("b"), "no link joins these nodes"))?
            }
            _ => return Err(ctx.err(at("link"), "name the link (`link`) or its two ends (`a` and `b`)")),
        };
        let at_ps = ctx.time(&at("at"), &f.at)?;
        if at_ps >= duration_ps {
            return Err(ctx.err(at("at"), "a failure must happen before the end of the run"));
        }
        let reroute_after_ps = f
            .reroute_after
            .as_deref()
            .map_or(Ok(0), |r| ctx.time(&at("reroute_after"), r))?;
        out.push(LinkFailure {
            link,
            at_ps,
            reroute_after_ps,
        });
    }
    Ok(out)
}
