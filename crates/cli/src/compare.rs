//! `mpsched compare`: one scenario in the simulator and on the kernel (and, with `--bmv2`, on
//! the kernel with BMv2 as the switches), side by side, with the ratio per flow and per path.

use crate::run::{resolve_scenario, run_netns};
use anyhow::Context;
use mpsched_netns::backend::NetnsOptions;
use mpsched_run::{Plan, VariantResult};
use mpsched_scenario::results::Summary;
use mpsched_sim::experiment::run_plan;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `mpsched compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// A scenario file or built-in name (default: the built-in default scenario, DWRR).
    scenario: Option<String>,
    /// Cut the run short at this time (seconds, or a time like 10s): the same experiment
    /// stopped earlier, on both backends (see `mpsched run --help`).
    #[arg(long)]
    duration: Option<String>,
    /// Only this variant (repeatable).
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Repetitions on each backend (default 1: kernel runs take real time); the figures
    /// compared are the means over them, as in `mpsched run` (1 to 1000).
    #[arg(long, value_parser = crate::run::repetitions_arg)]
    repetitions: Option<u32>,
    /// Run every link without its propagation delay on both backends (the kernel needs netem
    /// for delay; without it, this compares like with like).
    #[arg(long)]
    ignore_delay: bool,
    /// Also write both summaries and the comparison into this directory: compare.json,
    /// compare.csv and compare.png (the backends' bars side by side).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also run it with BMv2's simple_switch as every switch (`--backend bmv2`), a third column
    /// (root and the P4 toolchain).
    #[arg(long)]
    bmv2: bool,
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
    let sc = if a.ignore_delay && sc.links.iter().any(|l| l.delay_ps > 0) {
        errln!("--ignore-delay: both backends run every link without its propagation delay");
        sc.without_propagation_delay()
    } else {
        sc
    };
    if let Some(dir) = &a.out {
        // Before the runs: a bad folder is an input error, not a lost hour.
        crate::run::create_out_dir(dir)?;
    }
    let plan = Plan {
        variants,
        seed: None,
        repetitions: Some(a.repetitions.unwrap_or(1)),
        captures: Vec::new(),
    };
    let opts = NetnsOptions {
        ignore_delay: a.ignore_delay,
        stop: crate::stop_flag(),
        track_queues: None::<Duration>,
        captures: Vec::new(),
        switch_planes: None,
        controller: None,
    };
    let bmv2_opts = a.bmv2.then(|| NetnsOptions {
        switch_planes: crate::run::switch_planes("bmv2"),
        ..opts.clone()
    });
    // What the kernel cannot run is refused before the simulator spends its time.
    crate::run::check_netns_plan(&sc, &plan, &opts)?;
    if let Some(o) = &bmv2_opts {
        crate::run::check_netns_plan(&sc, &plan, o)?;
    }
    let sim = simulate_unless_stopped(&sc, &plan, &opts.stop)?;
    let kernel = run_netns(&sc, &plan, opts)?;
    let bmv2 = match bmv2_opts {
        Some(o) => Some(run_netns(&sc, &plan, o)?),
        None => None,
    };
    let rows = rows_of(&sim, &kernel, bmv2.as_deref());
    let transfers = transfer_rows(&sim, &kernel, bmv2.as_deref());
    outln!("{} — {}", sc.name, sc.title);
    if !rows.is_empty() {
        outln!("delivered goodput per flow and wire rate per path, Mbit/s; ratio = netns (or bmv2) / sim; loss %, - where not measured\n");
        print_rows(&rows, bmv2.is_some())?;
    }
    print_transfers(&transfers, bmv2.is_some())?;
    let mut backends: Vec<(&'static str, &[VariantResult])> = vec![("simulator", &sim), ("kernel (netns)", &kernel)];
    if let Some(b) = &bmv2 {
        backends.push(("BMv2 (netns)", b));
    }
    print_completion(&backends)?;
    if let Some(dir) = a.out {
        let v = serde_json::json!({
            "scenario": sc.name,
            "rows": rows,
            "transfers": transfers,
            "sim": sim.iter().map(|r| &r.summary).collect::<Vec<_>>(),
            "netns": kernel.iter().map(|r| &r.summary).collect::<Vec<_>>(),
            "bmv2": bmv2.as_ref().map(|b| b.iter().map(|r| &r.summary).collect::<Vec<_>>()),
        });
        let p = dir.join("compare.json");
        std::fs::write(&p, serde_json::to_string_pretty(&v)? + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
        let p = dir.join("compare.csv");
        std::fs::write(&p, csv(&rows)).with_context(|| format!("writing {}", p.display()))?;
        let mut written = vec!["compare.json", "compare.csv"];
        if !transfers.is_empty() {
            let p = dir.join("compare_transfers.csv");
            std::fs::write(&p, transfers_csv(&transfers)).with_context(|| format!("writing {}", p.display()))?;
            written.push("compare_transfers.csv");
        }
        let p = dir.join("compare.png");
        let title = if bmv2.is_some() {
            "simulator, kernel and BMv2"
        } else {
            "simulator and kernel"
        };
        crate::plot::compare_png(&format!("{}: {title}", sc.name), &rows, &p)
            .with_context(|| format!("drawing {}", p.display()))?;
        written.push("compare.png");
        if let Some(path) = completion_cdf(&sc, &backends, &dir)? {
            outln!("Completion times of every backend: {}", path.display());
        }
        outln!("\nWrote {} in {}", written.join(", "), dir.display());
    }
    Ok(())
}

/// The goodput and path-rate table.
fn print_rows(rows: &[CompareRow], with_bmv2: bool) -> anyhow::Result<()> {
    let pct = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let third = |r: &CompareRow| match (r.bmv2_mbps, r.bmv2_ratio) {
        (Some(m), Some(x)) => format!(" {m:>10.3} {x:>8.3} {:>10}", pct(r.bmv2_loss_pct)),
        _ => String::new(),
    };
    outln!(
        "{:<10} {:<14} {:>10} {:>10} {:>8} {:>10} {:>10}{}",
        "variant",
        "flow / path",
        "sim",
        "netns",
        "ratio",
        "sim loss",
        "netns loss",
        if with_bmv2 {
            format!(" {:>10} {:>8} {:>10}", "bmv2", "ratio", "bmv2 loss")
        } else {
            String::new()
        }
    );
    // A workload has hundreds of flows: the first rows here, all of them in compare.csv.
    const SHOWN: usize = 32;
    if rows.len() > SHOWN {
        outln!(
            "(the first {SHOWN} of {} rows; all in compare.csv with --out)",
            rows.len()
        );
    }
    for r in rows.iter().take(SHOWN) {
        outln!(
            "{:<10} {:<14} {:>10.3} {:>10.3} {:>8.3} {:>10} {:>10}{}",
            r.variant,
            r.id,
            r.sim_mbps,
            r.netns_mbps,
            r.ratio,
            pct(r.sim_loss_pct),
            pct(r.netns_loss_pct),
            third(r)
        );
    }
    Ok(())
}

/// Each transfer's completion time and bytes by the end on every backend, and what cannot be
/// compared for transfers.
fn print_transfers(rows: &[TransferRow], with_bmv2: bool) -> anyhow::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let ms = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    let ratio = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.3}"));
    outln!(
        "\nfixed-size transfers: completion time, ms (- not finished by the end and the drain), its ratio \
         netns (or bmv2) / sim, and MiB delivered by then"
    );
    let mut header = format!(
        "{:<10} {:<14} {:>11} {:>10} {:>10} {:>8} {:>9} {:>9}",
        "variant", "transfer", "size B", "sim ms", "netns ms", "ratio", "sim MiB", "netns MiB"
    );
    if with_bmv2 {
        header += &format!(" {:>10} {:>8} {:>9}", "bmv2 ms", "ratio", "bmv2 MiB");
    }
    outln!("{header}");
    const SHOWN: usize = 32;
    if rows.len() > SHOWN {
        outln!(
            "(the first {SHOWN} of {} transfers; all in compare_transfers.csv with --out)",
            rows.len()
        );
    }
    for r in rows.iter().take(SHOWN) {
        let mut line = format!(
            "{:<10} {:<14} {:>11} {:>10} {:>10} {:>8} {:>9.3} {:>9.3}",
            r.variant,
            r.id,
            r.size_bytes,
            ms(r.sim_fct_ms),
            ms(r.netns_fct_ms),
            ratio(r.netns_fct_ratio),
            r.sim_delivered_mib,
            r.netns_delivered_mib
        );
        if with_bmv2 {
            line += &format!(
                " {:>10} {:>8} {:>9.3}",
                ms(r.bmv2_fct_ms),
                ratio(r.bmv2_fct_ratio),
                r.bmv2_delivered_mib.unwrap_or(0.0)
            );
        }
        outln!("{line}");
    }
    let unfinished = |f: fn(&TransferRow) -> Option<f64>| rows.iter().filter(|r| f(r).is_none()).count();
    outln!(
        "finished: sim {} of {n}, netns {} of {n}",
        rows.len() - unfinished(|r| r.sim_fct_ms),
        rows.len() - unfinished(|r| r.netns_fct_ms),
        n = rows.len()
    );
    outln!(
        "not compared for transfers: goodput (each backend's is the size over the time from the start to the \
         run's end, equal by construction whenever both finish); loss, one-way delay and reordering (the \
         kernel's generator measures none). The kernel's completion time runs from connect to the server's \
         one-byte answer: a handshake and half a round trip more than the simulator's first byte to last."
    );
    Ok(())
}

/// The simulator's part of a comparison, on a thread of its own, so that SIGINT or SIGTERM
/// (`stop`) ends the command at once instead of after the whole simulation (nothing of the
/// kernel exists yet; the thread ends with the process).
fn simulate_unless_stopped(
    sc: &mpsched_scenario::Scenario,
    plan: &Plan,
    stop: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<Vec<VariantResult>> {
    let (sc, plan) = (sc.clone(), plan.clone());
    let sim = std::thread::spawn(move || run_plan(&sc, &plan, |_| {}).map_err(|e| e.to_string()));
    while !sim.is_finished() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(mpsched_netns::backend::NetnsError::Interrupted(
                "(none made yet: the simulation was running)".into(),
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    match sim.join() {
        Ok(r) => r.map_err(anyhow::Error::msg),
        Err(_) => Err(anyhow::anyhow!("the simulation panicked")),
    }
}

/// The backends a comparison ran, by the name its tables and plots give them.
type Backends<'a> = [(&'static str, &'a [VariantResult])];

/// Completion times of fixed-size transfers on every backend, per variant and class; the ratio
/// is each kernel backend's median over the simulator's.
fn print_completion(backends: &Backends) -> anyhow::Result<()> {
    let three = |x: Option<[f64; 3]>| x.map_or("-".to_string(), |[a, b, c]| format!("{a:.2} / {b:.2} / {c:.2}"));
    let Some(((_, sim), others)) = backends.split_first() else {
        return Ok(());
    };
    let mut header = false;
    for (i, s) in sim.iter().enumerate() {
        for (c, cs) in s.summary.completion.iter().enumerate() {
            let theirs: Vec<_> = others
                .iter()
                .filter_map(|(_, b)| b.get(i).and_then(|r| r.summary.completion.get(c)))
                .collect();
            if theirs.len() != others.len() {
                continue;
            }
            if !header {
                outln!(
                    "\ncompletion times, ms: mean / median / p99 (kernel backends from connect to the server's answer)"
                );
                let mut line = format!("{:<10} {:<20} {:>28}", "variant", "flows", "sim");
                for (name, _) in others {
                    line += &format!(" {name:>28} {:>9}", "median ×");
                }
                outln!("{line}");
                header = true;
            }
            let mut line = format!(
                "{:<10} {:<20} {:>28}",
                s.variant.as_deref().unwrap_or("-"),
                cs.class,
                three(cs.fct_ms)
            );
            for ck in theirs {
                let ratio = match (cs.fct_ms, ck.fct_ms) {
                    (Some(a), Some(b)) if a[1] > 0.0 => format!("{:.2}", b[1] / a[1]),
                    _ => "-".into(),
                };
                line += &format!(" {:>28} {ratio:>9}", three(ck.fct_ms));
            }
            outln!("{line}");
        }
    }
    Ok(())
}

/// `compare_fct_cdf.png`: the completion-time distributions of every backend (first variant).
fn completion_cdf(
    sc: &mpsched_scenario::Scenario,
    backends: &Backends,
    dir: &std::path::Path,
) -> anyhow::Result<Option<std::path::PathBuf>> {
    let mut lines = Vec::new();
    for (name, results) in backends {
        match results.first() {
            Some(r) if !r.transfers.is_empty() => {
                lines.push(crate::plot::fct_cdf_line(name.to_string(), &r.transfers));
            }
            _ => return Ok(None),
        }
    }
    let names: Vec<&str> = backends.iter().map(|(n, _)| *n).collect();
    let path = dir.join("compare_fct_cdf.png");
    crate::plot::fct_cdf_png(
        &format!("{}: completion times, {}", sc.name, names.join(", ")),
        &lines,
        &path,
    )
    .with_context(|| format!("drawing {}", path.display()))?;
    Ok(Some(path))
}

/// One line of the comparison: a flow's goodput or a path's wire rate on both backends.
#[derive(serde::Serialize)]
pub struct CompareRow {
    /// The variant, or `-`.
    pub variant: String,
    /// `flow` or `path`.
    pub kind: &'static str,
    /// The flow's or path's name.
    pub id: String,
    /// Mbit/s in the simulator and on the kernel.
    pub sim_mbps: f64,
    pub netns_mbps: f64,
    /// netns / sim.
    pub ratio: f64,
    /// A flow's loss, percent; None for a path, or where the backend does not measure it.
    pub sim_loss_pct: Option<f64>,
    pub netns_loss_pct: Option<f64>,
    /// With `--bmv2`: Mbit/s with BMv2 as the switches, bmv2 / sim, and loss.
    pub bmv2_mbps: Option<f64>,
    pub bmv2_ratio: Option<f64>,
    pub bmv2_loss_pct: Option<f64>,
}

/// Whether flow `j` of a result is a fixed-size transfer.
fn is_transfer(r: &VariantResult, j: usize) -> bool {
    r.scenario.flows.get(j).is_some_and(|f| {
        matches!(
            f.tcp.as_ref().map(|t| &t.app),
            Some(mpsched_scenario::TcpApp::Transfer { .. })
        )
    })
}

/// One fixed-size transfer on every backend: what each measured of it.
#[derive(serde::Serialize)]
pub struct TransferRow {
    /// The variant, or `-`.
    pub variant: String,
    /// The flow's name.
    pub id: String,
    /// Its size.
    pub size_bytes: u64,
    /// Mean completion time over the repetitions it finished in, ms (None: it finished in none,
    /// by the end of the run and its drain).
    pub sim_fct_ms: Option<f64>,
    pub netns_fct_ms: Option<f64>,
    /// Repetitions it finished in, of the backend's.
    pub sim_finished: usize,
    pub netns_finished: usize,
    /// netns / sim completion time, where both finished.
    pub netns_fct_ratio: Option<f64>,
    /// MiB delivered by the end of the run and its drain (mean over repetitions).
    pub sim_delivered_mib: f64,
    pub netns_delivered_mib: f64,
    /// With `--bmv2`: the same on BMv2.
    pub bmv2_fct_ms: Option<f64>,
    pub bmv2_fct_ratio: Option<f64>,
    pub bmv2_delivered_mib: Option<f64>,
}

/// A transfer's mean completion time (ms) over the repetitions it finished in, and their
/// number.
fn fct_ms(r: &VariantResult, j: usize) -> (Option<f64>, usize) {
    let done: Vec<f64> = r
        .summary
        .repetitions
        .iter()
        .filter_map(|rep| rep.flows.get(j)?.tcp.as_ref()?.completion_s)
        .collect();
    let mean = (!done.is_empty())
        .then(|| mpsched_scenario::results::round(done.iter().sum::<f64>() / done.len() as f64 * 1e3, 3));
    (mean, done.len())
}

fn transfer_rows(sim: &[VariantResult], kernel: &[VariantResult], bmv2: Option<&[VariantResult]>) -> Vec<TransferRow> {
    let mut rows = Vec::new();
    for (i, (s, k)) in sim.iter().zip(kernel).enumerate() {
        let b = bmv2.and_then(|b| b.get(i));
        for (j, fs) in s.summary.flows.iter().enumerate() {
            if !is_transfer(s, j) {
                continue;
            }
            let size_bytes = match s.scenario.flows[j].tcp.as_ref().map(|t| &t.app) {
                Some(mpsched_scenario::TcpApp::Transfer { size_bytes }) => *size_bytes,
                _ => 0,
            };
            let (sim_fct_ms, sim_finished) = fct_ms(s, j);
            let (netns_fct_ms, netns_finished) = fct_ms(k, j);
            let (bmv2_fct_ms, _) = b.map_or((None, 0), |b| fct_ms(b, j));
            let over = |x: Option<f64>| match (x, sim_fct_ms) {
                (Some(x), Some(s)) if s > 0.0 => Some(mpsched_scenario::results::round(x / s, 4)),
                _ => None,
            };
            rows.push(TransferRow {
                variant: s.variant.as_deref().unwrap_or("-").to_string(),
                id: fs.id.clone(),
                size_bytes,
                sim_fct_ms,
                netns_fct_ms,
                sim_finished,
                netns_finished,
                netns_fct_ratio: over(netns_fct_ms),
                sim_delivered_mib: fs.delivered_mib,
                netns_delivered_mib: k.summary.flows.get(j).map_or(0.0, |f| f.delivered_mib),
                bmv2_fct_ms,
                bmv2_fct_ratio: over(bmv2_fct_ms),
                bmv2_delivered_mib: b.and_then(|b| b.summary.flows.get(j)).map(|f| f.delivered_mib),
            });
        }
    }
    rows
}

/// The transfers as CSV (an absent figure is an empty field).
fn transfers_csv(rows: &[TransferRow]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let with_bmv2 = rows.iter().any(|r| r.bmv2_delivered_mib.is_some());
    let mut out = String::from(
        "variant,id,size_bytes,sim_fct_ms,netns_fct_ms,netns_fct_ratio,sim_finished,netns_finished,\
         sim_delivered_mib,netns_delivered_mib",
    );
    out.push_str(if with_bmv2 {
        ",bmv2_fct_ms,bmv2_fct_ratio,bmv2_delivered_mib\n"
    } else {
        "\n"
    });
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}",
            r.variant,
            r.id,
            r.size_bytes,
            opt(r.sim_fct_ms),
            opt(r.netns_fct_ms),
            opt(r.netns_fct_ratio),
            r.sim_finished,
            r.netns_finished,
            r.sim_delivered_mib,
            r.netns_delivered_mib
        ));
        if with_bmv2 {
            out.push_str(&format!(
                ",{},{},{}",
                opt(r.bmv2_fct_ms),
                opt(r.bmv2_fct_ratio),
                opt(r.bmv2_delivered_mib)
            ));
        }
        out.push('\n');
    }
    out
}

/// Bulk flows' goodput and paths' wire rates on both backends. Fixed-size transfers are not
/// among them: their goodput is the size over the run's remaining time on both backends, equal
/// by construction ([`transfer_rows`] compares what was measured of them).
fn rows_of(sim: &[VariantResult], kernel: &[VariantResult], bmv2: Option<&[VariantResult]>) -> Vec<CompareRow> {
    let mut rows = Vec::new();
    for (i, (s, k)) in sim.iter().zip(kernel).enumerate() {
        let v = s.variant.as_deref().unwrap_or("-").to_string();
        let (ss, ks): (&Summary, &Summary) = (&s.summary, &k.summary);
        let bs: Option<&Summary> = bmv2.and_then(|b| b.get(i)).map(|r| &r.summary);
        for (j, (fs, fk)) in ss.flows.iter().zip(&ks.flows).enumerate() {
            if is_transfer(s, j) {
                continue;
            }
            let fb = bs.and_then(|b| b.flows.get(j));
            rows.push(CompareRow {
                variant: v.clone(),
                kind: "flow",
                id: fs.id.clone(),
                sim_mbps: fs.delivered_mbps,
                netns_mbps: fk.delivered_mbps,
                ratio: ratio(fk.delivered_mbps, fs.delivered_mbps),
                sim_loss_pct: fs.loss_pct,
                netns_loss_pct: fk.loss_pct,
                bmv2_mbps: fb.map(|f| f.delivered_mbps),
                bmv2_ratio: fb.map(|f| ratio(f.delivered_mbps, fs.delivered_mbps)),
                bmv2_loss_pct: fb.and_then(|f| f.loss_pct),
            });
        }
        for (j, (ps, pk)) in ss.paths.iter().zip(&ks.paths).enumerate() {
            let pb = bs.and_then(|b| b.paths.get(j));
            rows.push(CompareRow {
                variant: v.clone(),
                kind: "path",
                id: ps.id.clone(),
                sim_mbps: ps.mean_mbps,
                netns_mbps: pk.mean_mbps,
                ratio: ratio(pk.mean_mbps, ps.mean_mbps),
                sim_loss_pct: None,
                netns_loss_pct: None,
                bmv2_mbps: pb.map(|p| p.mean_mbps),
                bmv2_ratio: pb.map(|p| ratio(p.mean_mbps, ps.mean_mbps)),
                bmv2_loss_pct: None,
            });
        }
    }
    rows
}

/// The rows as CSV (names are of the scenario's safe character set; an absent figure is an
/// empty field).
fn csv(rows: &[CompareRow]) -> String {
    let opt = |x: Option<f64>| x.map_or(String::new(), |x| x.to_string());
    let with_bmv2 = rows.iter().any(|r| r.bmv2_mbps.is_some());
    let mut out = String::from("variant,kind,id,sim_mbps,netns_mbps,ratio,sim_loss_pct,netns_loss_pct");
    out.push_str(if with_bmv2 {
        ",bmv2_mbps,bmv2_ratio,bmv2_loss_pct\n"
    } else {
        "\n"
    });
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{}",
            r.variant,
            r.kind,
            r.id,
            r.sim_mbps,
            r.netns_mbps,
            r.ratio,
            opt(r.sim_loss_pct),
            opt(r.netns_loss_pct)
        ));
        if with_bmv2 {
            out.push_str(&format!(
                ",{},{},{}",
                opt(r.bmv2_mbps),
                opt(r.bmv2_ratio),
                opt(r.bmv2_loss_pct)
            ));
        }
        out.push('\n');
    }
    out
}
