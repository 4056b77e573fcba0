//! `mpsched run` and `mpsched list`.

use crate::plot::{fct_cdf_line, fct_cdf_png, throughput_png, total_goodput_png, tunnel_paths_png, TunnelPlot};
use crate::UsageError;
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mpsched_netns::backend::{NetnsBackend, NetnsError, NetnsOptions};
use mpsched_run::{run_plan_on, Backend, CaptureRequest, ExperimentError, Plan, VariantResult};
use mpsched_scenario::builtin::{self, BUILTIN};
use mpsched_scenario::completion;
use mpsched_scenario::results::MultiSummary;
use mpsched_scenario::units::parse_time_ps;
use mpsched_scenario::{Scenario, SCHEDULERS};
use mpsched_sim::experiment::{planned_ps, run_plan};
use mpsched_sim::pcap::DEFAULT_SNAPLEN;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod tables;
use tables::{print_completion, print_table, print_tcp_and_tunnels};

/// Arguments of `mpsched run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// A scenario file, or a built-in name (see `mpsched list`). Default: the built-in
    /// scenario 3b of Motohashi et al. with DWRR.
    scenario: Option<String>,
    /// Output directory (default: out/SCENARIO_NAME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Base seed (repetition i uses seed + i).
    #[arg(long)]
    seed: Option<u64>,
    /// Cut the run short at this time (seconds, or a time like 10s): the same experiment
    /// stopped earlier, as ns-3's stop time is. Nothing moves: flows, a workload's arrivals
    /// (at their rate), failures and rate traces keep their times; what would start at or
    /// after the new end does not, what is still running stops there. At most the
    /// scenario's own duration; a longer one is the scenario as if its file said so (flows and
    /// arrivals without a stop of their own go on).
    #[arg(long)]
    duration: Option<String>,
    /// Repetitions (default: the scenario's; 1 to 1000).
    #[arg(long, value_parser = repetitions_arg)]
    repetitions: Option<u32>,
    /// Run only this variant (repeatable; default: all).
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Backend: sim (the simulator), netns (the Linux kernel: namespaces, eBPF, iperf3; root)
    /// or bmv2 (the same with BMv2 simple_switch as every switch; root and the P4 toolchain).
    #[arg(long, default_value = "sim")]
    backend: String,
    /// netns: run links that have propagation delay without it when the kernel lacks netem.
    #[arg(long)]
    ignore_delay: bool,
    /// netns: sample each marking interface's virtual queue and qdisc backlog this often
    /// (milliseconds) into queue_tracking.csv.
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(1..=60_000))]
    track_queues: Option<u64>,
    /// Capture NODE:IFACE (IFACE is ethN or a neighbour's name) to a pcap file (repeatable): the
    /// simulator writes what crosses the interface; netns runs dumpcap on it (interface eN).
    #[arg(long = "pcap", value_name = "NODE:IFACE")]
    pcaps: Vec<String>,
    /// Snap length of pcap captures, bytes (at least an Ethernet and IPv4 header, 34; at most
    /// 262144, libpcap's largest).
    #[arg(long, default_value_t = DEFAULT_SNAPLEN, value_parser = clap::value_parser!(u32).range(34..=262_144))]
    pcap_snaplen: u32,
    /// Do not write the PNG plot.
    #[arg(long)]
    no_plot: bool,
}

/// Say so when earlier kernel runs left namespaces behind (a SIGKILL leaves no chance to
/// clean up): they hold interfaces, programs and iperf3 processes until removed.
fn warn_of_leftovers() {
    if !mpsched_netns::ns::is_root() {
        return;
    }
    let left = mpsched_netns::backend::leftovers();
    if !left.is_empty() {
        errln!(
            "warning: {} network namespaces left by earlier runs that did not finish (killed?): {}; `mpsched clean` removes them",
            left.len(),
            left.join(", ")
        );
    }
}

/// `mpsched clean`: remove what unfinished kernel runs left.
pub fn clean() -> anyhow::Result<()> {
    if !mpsched_netns::ns::is_root() {
        return Err(UsageError("mpsched clean removes network namespaces: run it as root".into()).into());
    }
    let done = mpsched_netns::backend::clean()?;
    if done.namespaces.is_empty() {
        outln!("nothing to clean: no namespace left by an unfinished run");
    } else {
        outln!(
            "removed {} namespaces (with their interfaces, qdiscs and eBPF programs), killed {} processes in them \
             (iperf3, simple_switch) and removed {} files named after them: {}",
            done.namespaces.len(),
            done.processes,
            done.files,
            done.namespaces.join(", ")
        );
    }
    Ok(())
}

/// How a plot's title names the backend a run used.
fn backend_name(backend: &str) -> &str {
    match backend {
        "sim" => "simulator",
        "netns" => "Linux kernel (netns, eBPF)",
        "bmv2" => "BMv2 simple_switch (netns)",
        other => other,
    }
}

/// What runs the switches of a kernel backend: `bmv2` its `simple_switch`, `netns` the eBPF
/// programs (None).
pub fn switch_planes(backend: &str) -> Option<std::sync::Arc<dyn mpsched_netns::switchplane::SwitchPlanes>> {
    (backend == "bmv2").then(|| std::sync::Arc::new(mpsched_bmv2::plane::Bmv2Planes) as _)
}

/// A figure, or `-` where the backend does not measure it.
fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// `--repetitions`, bounded as `scenario.repetitions` is (for `run` and `compare`).
pub fn repetitions_arg(s: &str) -> Result<u32, String> {
    let max = mpsched_scenario::MAX_REPETITIONS;
    match s.parse::<u32>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("expected 1 to {max} (as `scenario.repetitions`), got `{s}`")),
    }
}

/// Say on standard error what in the scenario is legal but probably a mistake.
fn warn_of(sc: &Scenario) {
    for w in sc.warnings() {
        errln!("warning: {}: {w}", sc.origin);
    }
}

/// Arguments of `mpsched check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// A scenario file, or a built-in name.
    scenario: String,
}

/// `mpsched check`: validate and summarise; exit 2 with file and field when invalid.
pub fn check(a: CheckArgs) -> anyhow::Result<()> {
    let (text, origin, _) = source(Some(&a.scenario))?;
    let sc = Scenario::from_toml(&text, &origin)?;
    warn_of(&sc);
    check_sweep_values(&a.scenario, &sc)?;
    outln!(
        "{}: valid: {} nodes, {} links, {} paths, {} splits, {} flows, {} tunnels, {} variants, {} s",
        sc.name,
        sc.nodes.len(),
        sc.links.len(),
        sc.paths.len(),
        sc.splits.len(),
        sc.flows.len(),
        sc.tunnels.len(),
        sc.variants.len(),
        sc.duration_ps as f64 / 1e12
    );
    let (bytes, columns) = sc.route_table_bytes();
    let n = sc.nodes.len() as f64;
    outln!(
        "routes: {bytes} bytes in {columns} destination columns (a table of every pair of nodes: {:.0} bytes)",
        4.0 * n * n
    );
    Ok(())
}

/// Every value of the scenario's `[sweep]` set in turn and validated, so that `check` does not
/// call valid a sweep whose third point cannot run; refused at `sweep.values[i]`.
fn check_sweep_values(arg: &str, sc: &Scenario) -> anyhow::Result<()> {
    let Some(sw) = &sc.sweep else { return Ok(()) };
    let Some(key) = &sw.parameter else { return Ok(()) };
    let text = match builtin::find(arg) {
        Some((_, text)) if !Path::new(arg).exists() => text.to_string(),
        _ => mpsched_scenario::files::read_bounded(Path::new(arg), mpsched_scenario::files::MAX_SCENARIO_FILE_BYTES)
            .map_err(|e| UsageError(format!("{arg}: {e}")))?,
    };
    let mut seen = std::collections::HashSet::new();
    for (i, value) in sw.values.iter().enumerate() {
        if !seen.insert(value.to_string()) {
            continue;
        }
        let o = mpsched_scenario::overrides::Override {
            key: key.clone(),
            value: value.clone(),
        };
        if let Err(e) = Scenario::from_toml_with(&text, &sc.origin, &[o]) {
            // A key the scenario cannot have is the parameter's fault, not the value's.
            let field = match e.message.contains("unknown field") {
                true => "sweep.parameter".to_string(),
                false => format!("sweep.values[{i}]"),
            };
            return Err(mpsched_scenario::ScenarioError {
                file: sc.origin.clone(),
                field,
                message: format!(
                    "`{key} = {value}`: {}",
                    e.to_string().trim_start_matches(&format!("{}: ", sc.origin))
                ),
            }
            .into());
        }
    }
    Ok(())
}

/// Create the output folder, or say why not as an input error (exit 2): the path is the user's.
pub fn create_out_dir(out: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)
        .map_err(|e| UsageError(format!("--out: cannot create `{}`: {e}", out.display())).into())
}

/// The scenario's text and origin (a file, or a built-in; none: the default), and whether it
/// is the default.
fn source(arg: Option<&str>) -> anyhow::Result<(String, String, bool)> {
    let Some(a) = arg else {
        let (path, text) = builtin::find(builtin::DEFAULT).expect("the default scenario is built in");
        return Ok((text.to_string(), format!("<builtin>/{path}"), true));
    };
    let p = Path::new(a);
    if p.exists() {
        let origin = p.display().to_string();
        let text = mpsched_scenario::files::read_bounded(p, mpsched_scenario::files::MAX_SCENARIO_FILE_BYTES).map_err(
            |e| mpsched_scenario::ScenarioError {
                file: origin.clone(),
                field: String::new(),
                message: format!("cannot read: {e}"),
            },
        )?;
        return Ok((text, origin, false));
    }
    match builtin::find(a) {
        Some((path, text)) => Ok((text.to_string(), format!("<builtin>/{path}"), false)),
        None => Err(UsageError(format!(
            "`{a}` is neither a file nor a built-in scenario (see `mpsched list`)"
        ))
        .into()),
    }
}

/// The scenario (file or built-in, default the built-in DWRR), cut short at `duration`, and the
/// variants to run (checked to exist).
pub fn resolve_scenario(
    scenario: Option<&str>,
    duration: Option<&str>,
    variants: &[String],
) -> anyhow::Result<(Scenario, Vec<String>)> {
    let (text, origin, is_default) = source(scenario)?;
    let mut sc = Scenario::from_toml(&text, &origin)?;
    if let Some(d) = duration {
        sc = match duration_ps(d)? {
            // Longer: the scenario as if its file said so.
            ps if ps > sc.duration_ps => lengthened(&text, &origin, &[], ps)?,
            _ => with_duration(&sc, d)?,
        };
    }
    let mut variants = variants.to_vec();
    if is_default && variants.is_empty() {
        variants.push("DWRR".into());
    }
    check_variants(&sc, &variants)?;
    warn_of(&sc);
    Ok((sc, variants))
}

/// Whether a run of `variants` (none: all) of `sc` writes a folder per variant and a
/// multi-variant `summary.json`.
pub fn multi_variant(sc: &Scenario, variants: &[String]) -> bool {
    match variants.is_empty() {
        true => sc.variants.len() > 1,
        false => variants.len() > 1,
    }
}

/// `sc` cut short at `duration` (seconds, `2.5`, or a time, `500ms`): the same experiment
/// stopped earlier ([`Scenario::cut_to`]); above zero, at most the scenario's own duration,
/// within the bounds a file is held to (a [`UsageError`] otherwise).
pub fn with_duration(sc: &Scenario, duration: &str) -> anyhow::Result<Scenario> {
    let ps = duration_ps(duration)?;
    // The same experiment cut short; the cut goes through the bounds a file does.
    sc.cut_to_checked(ps)
        .map_err(|e| UsageError(format!("--duration {duration}: {}", e.message)).into())
}

/// A run longer than the scenario's: its text read with `overrides` and `scenario.duration` set
/// to `ps`, as if the file said so: flows and a workload's arrivals without a `stop` of their
/// own go on to the new end, a rate trace's later points are played; what the file times stays.
pub fn lengthened(
    text: &str,
    origin: &str,
    overrides: &[mpsched_scenario::overrides::Override],
    ps: u64,
) -> anyhow::Result<Scenario> {
    let mut all = overrides.to_vec();
    all.push(mpsched_scenario::overrides::Override {
        key: "scenario.duration".into(),
        value: toml::Value::String(format!("{ps}ps")),
    });
    Scenario::from_toml_with(text, origin, &all).map_err(|e| {
        UsageError(format!(
            "--duration {}: {}",
            mpsched_scenario::units::format_time_ps(ps),
            e.to_string().trim_start_matches(&format!("{origin}: "))
        ))
        .into()
    })
}

/// `--duration`'s value in picoseconds: seconds (`2.5`) or a time (`500ms`), above zero.
pub fn duration_ps(duration: &str) -> anyhow::Result<u64> {
    let d = duration;
    let ps = if d.chars().all(|c| c.is_ascii_digit() || c == '.') {
        parse_time_ps(&format!("{d}s"))
    } else {
        parse_time_ps(d)
    }
    .map_err(|e| {
        UsageError(format!(
            "--duration: expected seconds or a time like `10s`, got `{d}` ({e})"
        ))
    })?;
    if ps == 0 {
        return Err(UsageError("--duration must be above zero".into()).into());
    }
    Ok(ps)
}

/// Every name in `variants` is one of `sc`'s variants (a [`UsageError`] naming them otherwise).
pub fn check_variants(sc: &Scenario, variants: &[String]) -> anyhow::Result<()> {
    for v in variants {
        if !sc.variant_names().contains(v) {
            return Err(UsageError(format!(
                "scenario `{}` has no variant `{v}`; it has: {}",
                sc.name,
                sc.variant_names().join(", ")
            ))
            .into());
        }
    }
    Ok(())
}

pub fn run(a: RunArgs) -> anyhow::Result<()> {
    if !["sim", "netns", "bmv2"].contains(&a.backend.as_str()) {
        return Err(UsageError(format!("unknown backend `{}`: use sim, netns or bmv2", a.backend)).into());
    }
    let (sc, variants) = resolve_scenario(a.scenario.as_deref(), a.duration.as_deref(), &a.variants)?;
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("out").join(&sc.name));
    create_out_dir(&out)?;
    let multi = multi_variant(&sc, &variants);
    let mut captures = Vec::new();
    for spec in &a.pcaps {
        let (node, iface) = spec
            .split_once(':')
            .ok_or_else(|| UsageError(format!("--pcap: expected NODE:IFACE, got `{spec}`")))?;
        let file = if multi {
            format!("{{variant}}-{node}-{iface}.pcap")
        } else {
            format!("{node}-{iface}.pcap")
        };
        captures.push(CaptureRequest {
            node: node.into(),
            iface: iface.into(),
            path: out.join(file),
            snaplen: a.pcap_snaplen,
        });
    }
    let plan = Plan {
        variants,
        seed: a.seed,
        repetitions: a.repetitions,
        captures,
    };

    if a.backend != "sim" {
        let opts = NetnsOptions {
            ignore_delay: a.ignore_delay,
            stop: crate::stop_flag(),
            track_queues: a.track_queues.map(Duration::from_millis),
            captures: plan.captures.clone(),
            switch_planes: switch_planes(&a.backend),
            controller: None,
        };
        check_netns_plan(&sc, &plan, &opts)?;
        let results = run_netns(&sc, &plan, opts)?;
        finish(&sc, &out, multi, &results, !a.no_plot, &a.backend)?;
        outln!("\nResults in {}", out.display());
        return Ok(());
    }
    let total = planned_ps(&sc, &plan);
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {percent:>3}% simulated, eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(sc.name.clone());
    let started = Instant::now();
    let mut shown = false;
    let results = run_plan(&sc, &plan, |done| {
        if !shown && started.elapsed() > Duration::from_secs(1) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            shown = true;
        }
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let results = results.map_err(experiment_error)?;
    finish(&sc, &out, multi, &results, !a.no_plot, "sim")?;
    let wall = started.elapsed();
    let events: u64 = results.iter().map(|r| r.events).sum();
    let engine_s: f64 = results.iter().map(|r| r.engine_s).sum();
    // The rate is the engine's alone: building the network and writing results are apart.
    outln!(
        "\n{} events in {:.2} s of engine time ({:.1} M events/s); {:.2} s wall with setup and output. Results in {}",
        events,
        engine_s,
        events as f64 / engine_s.max(1e-9) / 1e6,
        wall.as_secs_f64(),
        out.display()
    );
    Ok(())
}

/// Write each variant's outputs and the multi-variant summary, and print the table.
pub fn finish(
    sc: &Scenario,
    out: &Path,
    multi: bool,
    results: &[VariantResult],
    plot: bool,
    backend: &str,
) -> anyhow::Result<()> {
    write_results(sc, out, multi, results, plot, backend)?;
    print_table(sc, results)?;
    print_tcp_and_tunnels(results)?;
    print_completion(results)
}

/// What `mpsched run` writes into `out`, printing nothing: each variant's `summary.json`,
/// `timeseries.csv`, `flows.csv` (with transfers), the backend's files and, with `plot`, its
/// PNGs, in a folder per variant when `multi`; then the multi-variant `summary.json` and the
/// plots across variants.
pub fn write_results(
    sc: &Scenario,
    out: &Path,
    multi: bool,
    results: &[VariantResult],
    plot: bool,
    backend: &str,
) -> anyhow::Result<()> {
    for r in results {
        let dir = if multi {
            out.join(r.variant.as_deref().unwrap_or("run"))
        } else {
            out.to_path_buf()
        };
        std::fs::create_dir_all(&dir)?;
        write_outputs(&dir, r, &r.transfers, plot)?;
    }
    if multi {
        write_json(&out.join("summary.json"), &multi_summary(sc, results, backend))?;
    }
    if plot && !sc.tunnels.is_empty() {
        let wiring = sc.wiring().map_err(anyhow::Error::msg)?;
        let tunnelled: Vec<String> = sc
            .tunnelled_flows(&wiring)
            .into_iter()
            .map(|i| sc.flows[i].name.clone())
            .collect();
        let lines: Vec<(String, &mpsched_run::TimeSeries)> = results
            .iter()
            .map(|r| (r.variant.clone().unwrap_or_else(|| sc.name.clone()), &r.series))
            .collect();
        let path = out.join("goodput_total.png");
        total_goodput_png(&sc.name, &lines, &tunnelled, &path)
            .with_context(|| format!("drawing {}", path.display()))?;
        if let Some(tp) = acked_tunnel_plot(sc, &results[0].series) {
            let path = out.join("tunnel_paths.png");
            let title = format!("{}: tunnel `{}` ({backend})", sc.name, tp.prefix);
            tunnel_paths_png(&title, &lines, &tp, &path).with_context(|| format!("drawing {}", path.display()))?;
        }
    }
    if plot && results.iter().any(|r| !r.transfers.is_empty()) {
        let lines: Vec<_> = results
            .iter()
            .map(|r| fct_cdf_line(r.variant.clone().unwrap_or_else(|| sc.name.clone()), &r.transfers))
            .collect();
        let path = out.join("fct_cdf.png");
        let title = format!("{}: completion times ({backend}, first repetition)", sc.name);
        fct_cdf_png(&title, &lines, &path).with_context(|| format!("drawing {}", path.display()))?;
    }
    Ok(())
}

/// The multi-variant `summary.json`'s content: the scenario, the backend, the first variant's
/// seed and duration, and every variant's summary.
pub fn multi_summary(sc: &Scenario, results: &[VariantResult], backend: &str) -> MultiSummary {
    MultiSummary {
        scenario: sc.name.clone(),
        reproduces: sc.reproduces.clone(),
        backend: backend.into(),
        seed: results.first().map_or(sc.seed, |r| r.summary.seed),
        duration_s: results.first().map_or(0.0, |r| r.summary.duration_s),
        variants: results.iter().map(|r| r.summary.clone()).collect(),
    }
}

/// An experiment's failure as the CLI reports it: input problems (a bad variant, a capture
/// that names no interface, a scenario the kernel cannot run) exit 2, the rest 1.
fn experiment_error(e: ExperimentError) -> anyhow::Error {
    match e {
        ExperimentError::Scenario(e) => e.into(),
        ExperimentError::Backend(e) => {
            if let Some(s @ mpsched_sim::SimError::Capture(_)) = e.downcast_ref::<mpsched_sim::SimError>() {
                return UsageError(format!("--pcap: {s}")).into();
            }
            match e.downcast::<NetnsError>() {
                Ok(n) => match *n {
                    n @ (NetnsError::Missing(_) | NetnsError::Unsupported(_)) => UsageError(n.to_string()).into(),
                    n => anyhow::Error::new(n),
                },
                Err(other) => anyhow::anyhow!(other),
            }
        }
    }
}

/// Run a plan on the netns backend through the experiment runner, with a progress bar of the
/// real time it takes.
/// Refuse, before any run, a plan with a variant the kernel cannot run (naming the variant),
/// rather than after the variants before it have taken their time.
pub fn check_netns_plan(sc: &Scenario, plan: &Plan, opts: &NetnsOptions) -> anyhow::Result<()> {
    for name in plan.variant_names(sc) {
        let concrete = match &name {
            Some(v) => sc.with_variant(v)?,
            None => sc.clone(),
        };
        if let Some(e) = kernel_refuses(&concrete) {
            return Err(match &name {
                Some(v) if sc.variants.len() > 1 => UsageError(format!("variant `{v}`: {e}")).into(),
                _ => UsageError(e).into(),
            });
        }
        mpsched_netns::backend::check(&concrete, opts).map_err(|e| match e {
            e @ (NetnsError::Missing(_) | NetnsError::Unsupported(_)) => match &name {
                Some(v) if sc.variants.len() > 1 => UsageError(format!("variant `{v}`: {e}")).into(),
                _ => UsageError(e.to_string()).into(),
            },
            e => anyhow::Error::new(e),
        })?;
    }
    Ok(())
}

/// What a scenario holds that the kernel backends cannot run yet, beyond what
/// `mpsched_netns::backend::check` refuses: rate-controlled UDP transfers (a `size`), which the
/// kernel's paced sender would run as flows until their stop, without go-back-N or an end.
fn kernel_refuses(sc: &Scenario) -> Option<String> {
    let f = sc.flows.iter().find(|f| f.paced_size_bytes().is_some())?;
    Some(format!(
        "flow `{}` is a rate-controlled UDP transfer (`size` with `[flow.rate_control]`); the kernel's paced \
         sender runs unsized flows only, so transfers run in the simulator only for now; use --backend sim",
        f.name
    ))
}

/// Run `plan` on the kernel; the caller has checked it ([`check_netns_plan`]).
pub fn run_netns(sc: &Scenario, plan: &Plan, opts: NetnsOptions) -> anyhow::Result<Vec<VariantResult>> {
    warn_of_leftovers();
    let backend = NetnsBackend { opts };
    let reps = plan.repetitions.unwrap_or(backend.default_repetitions(sc)).max(1);
    if plan.repetitions.is_none() && sc.repetitions > 1 {
        errln!(
            "netns: running 1 repetition (the scenario asks for {}; pass --repetitions {} for all of them)",
            sc.repetitions,
            sc.repetitions
        );
    }
    let runs = plan.variant_names(sc).len() as u64 * u64::from(reps);
    let total = (backend.run_ps(sc) / 1_000_000_000_000) * runs;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} s on the kernel, eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.set_message(sc.name.clone());
    let started = Instant::now();
    let ticker_stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (bar, stop) = (bar.clone(), ticker_stop.clone());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                bar.set_position(started.elapsed().as_secs().min(total));
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let result = run_plan_on(sc, plan, &backend, |_| {});
    ticker_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = ticker.join();
    bar.finish_and_clear();
    result.map_err(experiment_error)
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))
}

fn write_outputs(
    dir: &Path,
    r: &VariantResult,
    completions: &[completion::CompletionRow],
    plot: bool,
) -> anyhow::Result<()> {
    write_json(&dir.join("summary.json"), &r.summary)?;
    let f = std::fs::File::create(dir.join("timeseries.csv"))?;
    r.series.write_csv(std::io::BufWriter::new(f))?;
    if !completions.is_empty() {
        let f = std::fs::File::create(dir.join("flows.csv"))?;
        completion::write_csv(completions, std::io::BufWriter::new(f))?;
    }
    for (name, text) in &r.artifacts {
        std::fs::write(dir.join(name), text).with_context(|| format!("writing {}", dir.join(name).display()))?;
    }
    if plot {
        let title = match &r.variant {
            Some(v) => format!("{} ({v}), {}", r.summary.scenario, backend_name(&r.summary.backend)),
            None => format!("{}, {}", r.summary.scenario, backend_name(&r.summary.backend)),
        };
        let paths: Vec<String> = r.scenario.paths.iter().map(|p| p.name.clone()).collect();
        let flows: Vec<String> = r.scenario.flows.iter().map(|f| f.name.clone()).collect();
        throughput_png(&r.series, &title, &paths, &flows, &dir.join("throughput.png"))
            .with_context(|| format!("drawing {}", dir.join("throughput.png").display()))?;
    }
    Ok(())
}

/// The first tunnel's down direction, when the run has its per-path RTT columns (tunnels
/// whose scheduler asks for acknowledgements, few enough for detailed columns).
fn acked_tunnel_plot(sc: &Scenario, series: &mpsched_run::TimeSeries) -> Option<TunnelPlot> {
    let t = sc.tunnels.first()?;
    let prefix = format!("{}_down", t.name);
    let subtunnels: Vec<String> = t.subtunnels.iter().map(|&p| sc.paths[p].name.clone()).collect();
    series.values(&format!("{prefix}_{}_srtt_ms", subtunnels[0]))?;
    // The preferred path's traced link, if one of its links follows a trace.
    let nodes = &sc.paths[t.subtunnels[0]].nodes;
    let capacity_column = sc.rate_traces.iter().find_map(|tr| {
        let l = &sc.links[tr.link];
        let on_path = nodes
            .windows(2)
            .any(|w| (w[0], w[1]) == (l.a, l.b) || (w[0], w[1]) == (l.b, l.a));
        let name = l
            .name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", sc.nodes[l.a].name, sc.nodes[l.b].name));
        on_path.then(|| format!("{name}_rate_mbps"))
    });
    Some(TunnelPlot {
        prefix,
        subtunnels,
        capacity_column,
    })
}

pub fn list() -> anyhow::Result<()> {
    outln!("Built-in scenarios (mpsched run NAME):");
    for (name, path, text) in BUILTIN {
        match Scenario::from_toml(text, path) {
            Ok(sc) => {
                let v = sc.variant_names();
                outln!("  {name:<38} {}", sc.reproduces);
                outln!("  {:<38} {}", "", sc.title);
                if !v.is_empty() {
                    outln!("  {:<38} variants: {}", "", v.join(", "));
                }
                if let Some(sw) = &sc.sweep {
                    let points = sw.points().len();
                    let key = sw.parameter.as_deref().unwrap_or("variants and seeds");
                    outln!("  {:<38} sweep: {key}, {points} points (mpsched sweep {name})", "");
                }
            }
            Err(e) => outln!("  {name:<38} (invalid: {e})"),
        }
    }
    outln!("  default: {} (variant DWRR)", builtin::DEFAULT);
    outln!("\nSplit schedulers ([[split]] scheduler):");
    for (name, what) in SCHEDULERS {
        outln!("  {name:<8} {what}");
    }
    list_programs()
}

/// The registry: switch programs with their parameters, and tunnel schedulers.
fn list_programs() -> anyhow::Result<()> {
    use mpsched_programs::{Param, ParamKind};
    let show = |p: &Param| -> anyhow::Result<()> {
        let v = match p.kind {
            ParamKind::Time => mpsched_scenario::units::format_time_ps(p.default),
            ParamKind::Rate => mpsched_scenario::units::format_rate_bps(p.default),
            ParamKind::Bytes => format!("{}B", p.default),
            ParamKind::Count => p.default.to_string(),
            ParamKind::Choice(_) => format!("\"{}\"", p.kind.choice_name(p.default).unwrap_or("?")),
        };
        outln!("  {:<10}   {} = {v:<10} {}", "", p.name, p.doc);
        Ok(())
    };
    outln!(
        "\nSwitch programs ([scenario] program, [[node]] program, [topology.programs]; parameters in [programs.NAME]):"
    );
    for prog in mpsched_programs::SWITCH_PROGRAMS {
        let default = if prog.name() == mpsched_programs::DEFAULT_PROGRAM {
            " (default)"
        } else {
            ""
        };
        outln!("  {:<10} {}{default}", prog.name(), prog.summary());
        prog.params().iter().try_for_each(show)?;
    }
    outln!("\nTunnel schedulers ([[tunnel]] scheduler):");
    for t in mpsched_programs::tunnel::TUNNEL_SCHEDULERS {
        outln!("  {:<10} {}", t.name(), t.summary());
        t.params().iter().try_for_each(show)?;
    }
    Ok(())
}
