//! `mpsched compare`: one scenario on both backends, side by side, with the ratio per flow and
//! per path.

use crate::run::{resolve_scenario, run_netns};
use anyhow::Context;
use mpsched_netns::backend::NetnsOptions;
use mpsched_scenario::results::Summary;
use mpsched_sim::experiment::{run_plan, Plan};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `mpsched compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// A scenario file or built-in name (default: the built-in default scenario, DWRR).
    scenario: Option<String>,
    /// Run for this long instead (seconds), scaling the timeline.
    #[arg(long)]
    duration: Option<String>,
    /// Only this variant (repeatable).
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Run links with propagation delay without it on netns when the kernel lacks netem.
    #[arg(long)]
    ignore_delay: bool,
    /// Also write both summaries and the comparison as JSON into this directory.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn ratio(a: f64, b: f64) -> f64 {
    if b.abs() < 1e-9 {
        if a.abs() < 1e-9 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        a / b
    }
}

pub fn compare(a: CompareArgs) -> anyhow::Result<()> {
    let (sc, variants) = resolve_scenario(a.scenario.as_deref(), a.duration.as_deref(), &a.variants)?;
    if let Some(dir) = &a.out {
        // Before the runs: a bad folder is an input error, not a lost hour.
        crate::run::create_out_dir(dir)?;
    }
    let plan = Plan {
        variants,
        seed: None,
        repetitions: Some(1),
        captures: Vec::new(),
    };
    let sim = run_plan(&sc, &plan, |_| {}).map_err(|e| anyhow::anyhow!("{e}"))?;
    let opts = NetnsOptions {
        ignore_delay: a.ignore_delay,
        stop: crate::stop_flag(),
        track_queues: None::<Duration>,
    };
    let kernel = run_netns(&sc, &plan, opts)?;
    outln!("{} — {}", sc.name, sc.title);
    outln!("delivered goodput per flow and wire rate per path, Mbit/s; ratio = netns / sim\n");
    outln!(
        "{:<10} {:<14} {:>10} {:>10} {:>8}",
        "variant",
        "flow / path",
        "sim",
        "netns",
        "ratio"
    );
    let mut rows = Vec::new();
    for (s, k) in sim.iter().zip(&kernel) {
        let v = s.variant.as_deref().unwrap_or("-");
        let (ss, ks): (&Summary, &Summary) = (&s.summary, &k.summary);
        for (fs, fk) in ss.flows.iter().zip(&ks.flows) {
            let r = ratio(fk.delivered_mbps, fs.delivered_mbps);
            outln!(
                "{v:<10} {:<14} {:>10.3} {:>10.3} {:>8.3}",
                fs.id,
                fs.delivered_mbps,
                fk.delivered_mbps,
                r
            );
            rows.push(serde_json::json!({"variant": v, "flow": fs.id, "sim_mbps": fs.delivered_mbps, "netns_mbps": fk.delivered_mbps, "ratio": r}));
        }
        for (ps, pk) in ss.paths.iter().zip(&ks.paths) {
            let r = ratio(pk.mean_mbps, ps.mean_mbps);
            outln!(
                "{v:<10} {:<14} {:>10.3} {:>10.3} {:>8.3}",
                ps.id,
                ps.mean_mbps,
                pk.mean_mbps,
                r
            );
            rows.push(serde_json::json!({"variant": v, "path": ps.id, "sim_mbps": ps.mean_mbps, "netns_mbps": pk.mean_mbps, "ratio": r}));
        }
    }
    if let Some(dir) = a.out {
        let v = serde_json::json!({
            "scenario": sc.name,
            "rows": rows,
            "sim": sim.iter().map(|r| &r.summary).collect::<Vec<_>>(),
            "netns": kernel.iter().map(|r| &r.summary).collect::<Vec<_>>(),
        });
        let p = dir.join("compare.json");
        std::fs::write(&p, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
