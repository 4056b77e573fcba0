//! `mpsched sweep`: a scenario's `[sweep]` (or one given on the command line) on every core,
//! with one table, one CSV and one plot across it.
//!
//! Each point's result is written to `OUT/points/NNNNN.json` as it finishes. `--shard i/n`
//! runs every n-th point only (one job of a cluster's array); `--collect` runs nothing and
//! builds the table and plot from the point files that belong to this sweep.

use crate::run::create_out_dir;
use crate::UsageError;
use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mpsched_scenario::overrides::{self, Override};
use mpsched_scenario::{builtin, files, limits};
use mpsched_scenario::{Scenario, Sweep, SweepPoint};
use mpsched_sim::experiment::SimBackend;
use mpsched_sim::sweep::{aggregate, columns, run_points, PointResult, SweepRow, SweepSource};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The built-in scenario `mpsched sweep` runs when given none.
pub const DEFAULT_SWEEP: &str = "dc/websearch-k4-load";

/// Arguments of `mpsched sweep`.
#[derive(clap::Args)]
pub struct SweepArgs {
    /// A scenario file or built-in name (default: dc/websearch-k4-load, web-search flows on a
    /// k = 4 fat tree at loads 10 % to 90 %, ECMP against single-path routing, three seeds).
    scenario: Option<String>,
    /// The key to sweep (a dotted key of the scenario, such as `workload.load`), instead of the
    /// file's `[sweep] parameter`.
    #[arg(long)]
    param: Option<String>,
    /// Its values, comma-separated (`0.1,0.5,0.9`), instead of the file's.
    #[arg(long, value_delimiter = ',')]
    values: Vec<String>,
    /// Seeds, comma-separated, or a range `1-5`, instead of the file's.
    #[arg(long)]
    seeds: Option<String>,
    /// Run this variant (repeatable; default: the file's `[sweep] variants`, else all).
    #[arg(long = "variant")]
    variants: Vec<String>,
    /// Set KEY=VALUE in the scenario before anything else (repeatable), e.g.
    /// `--set scenario.duration=0.5s`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Points run at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run only the points whose index is I modulo N (one job of N on a cluster), as `I/N`.
    #[arg(long, value_name = "I/N")]
    shard: Option<String>,
    /// Run nothing: build the table and plot from `OUT/points/` (after the shards ran).
    #[arg(long)]
    collect: bool,
    /// List the points and exit.
    #[arg(long)]
    list: bool,
    /// Output directory (default: out/SCENARIO_NAME-sweep).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Do not write the PNG plot.
    #[arg(long)]
    no_plot: bool,
    /// Run the points as Ray tasks through the Python package (`mpsched.sweep`): on a local
    /// Ray runtime, or on the cluster at ADDRESS (`auto`, `ray://HOST:10001`). The Python that
    /// has it: $MPSCHED_PYTHON, else .venv/bin/python, else python3 (docs/python.md).
    #[arg(long, value_name = "ADDRESS", num_args = 0..=1, default_missing_value = "local")]
    ray: Option<String>,
}

/// The scenario text, where it came from, and whether it is built in.
fn source_of(arg: Option<&str>, sets: &[String]) -> anyhow::Result<SweepSource> {
    let name = arg.unwrap_or(DEFAULT_SWEEP);
    let (text, origin) = if Path::new(name).exists() {
        let text = files::read_bounded(Path::new(name), files::MAX_SCENARIO_FILE_BYTES)
            .map_err(|e| UsageError(format!("cannot read `{name}`: {e}")))?;
        (text, name.to_string())
    } else {
        match builtin::find(name) {
            Some((path, text)) => (text.to_string(), format!("<builtin>/{path}")),
            None => {
                return Err(UsageError(format!(
                    "`{name}` is neither a file nor a built-in scenario (see `mpsched list`)"
                ))
                .into())
            }
        }
    };
    if sets.is_empty() {
        return Ok(SweepSource { text, origin });
    }
    // Fixed settings become part of the text, so that they are part of every point (and of
    // the digest that ties point files to their sweep).
    // Bounded as every other door's parse is (a 63 MiB `x = [[],...]` cost 4 GB here).
    let mut doc = mpsched_scenario::Scenario::parse_table(&text, &origin)?;
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| UsageError(format!("--set: expected KEY=VALUE, got `{s}`")))?;
        let o = Override::parse(k.trim(), v.trim()).map_err(|e| UsageError(format!("--set: {e}")))?;
        overrides::apply(&mut doc, &o).map_err(|e| UsageError(format!("--set: {e}")))?;
    }
    let text = toml::to_string(&doc).context("writing the scenario with --set applied")?;
    Ok(SweepSource { text, origin })
}

/// `--seeds`, as many as `limits::MAX_SWEEP_SEEDS` (counted before a range is made, so that
/// `1-99999999999` costs nothing).
fn parse_seeds(s: &str) -> Result<Vec<u64>, UsageError> {
    let bad = || UsageError(format!("--seeds: expected `1,2,3` or `1-3`, got `{s}`"));
    let max = limits::MAX_SWEEP_SEEDS;
    let too_many = |n: u128| UsageError(format!("--seeds: {n} seeds; at most {max}"));
    if let Some((a, b)) = s.split_once('-') {
        let (a, b): (u64, u64) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if b < a {
            return Err(bad());
        }
        let n = u128::from(b - a) + 1;
        if n > max as u128 {
            return Err(too_many(n));
        }
        return Ok((a..=b).collect());
    }
    let n = s.split(',').count();
    if n > max {
        return Err(too_many(n as u128));
    }
    s.split(',').map(|x| x.trim().parse().map_err(|_| bad())).collect()
}

/// The sweep: the file's `[sweep]` with the command line's choices over it.
fn sweep_of(sc: &Scenario, a: &SweepArgs) -> anyhow::Result<Sweep> {
    // Without a [sweep]: the scenario as written, every variant, its seed.
    let mut sw = sc.sweep.clone().unwrap_or_else(|| Sweep {
        parameter: None,
        values: Vec::new(),
        variants: sc.variant_names(),
        seeds: vec![sc.seed],
    });
    if let Some(p) = &a.param {
        sw.parameter = Some(p.clone());
        sw.values.clear();
    }
    if !a.values.is_empty() {
        sw.values = a.values.iter().map(|v| overrides::parse_value(v)).collect();
    }
    if let Some(s) = &a.seeds {
        sw.seeds = parse_seeds(s)?;
    }
    if !a.variants.is_empty() {
        sw.variants = a.variants.clone();
    }
    sw.check(&sc.origin, &sc.variant_names())
        .map_err(|e| UsageError(e.to_string()))?;
    Ok(sw)
}

fn parse_shard(s: &str) -> Result<(usize, usize), UsageError> {
    let bad = || UsageError(format!("--shard: expected I/N with I < N, got `{s}`"));
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// `mpsched sweep`.
pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let src = source_of(a.scenario.as_deref(), &a.sets)?;
    let sc = Scenario::from_toml(&src.text, &src.origin)?;
    let sw = sweep_of(&sc, &a)?;
    let all = sw.points();
    let points: Vec<SweepPoint> = match a.shard.as_deref().map(parse_shard).transpose()? {
        Some((i, n)) => all.iter().filter(|p| p.index % n == i).cloned().collect(),
        None => all.clone(),
    };
    if a.list {
        return list_points(&sw, &points);
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(format!("{}-sweep", sc.name)));
    let dir = out.join("points");
    create_out_dir(&dir)?;
    let results = if a.collect {
        collect(&dir, &src, all.len())?
    } else if let Some(address) = &a.ray {
        if a.shard.is_some() {
            return Err(UsageError("--ray runs every point on the cluster: it takes no --shard".into()).into());
        }
        check_points(&src, &sw, &points)?;
        run_on_ray(&src, &sw, &out, address)?;
        collect(&dir, &src, all.len())?
    } else {
        check_points(&src, &sw, &points)?;
        let results = run_all(&src, &sw, &points, &dir, a.jobs)?;
        if a.shard.is_some() {
            outln!(
                "{} points written to {}; `mpsched sweep --collect --out {}` when every shard is done",
                results.len(),
                dir.display(),
                out.display()
            );
            return Ok(());
        }
        results
    };
    report(&sc, &sw, &results, &out, !a.no_plot)
}

/// What `python -m mpsched._ray_sweep` runs: the scenario text (every `--set` in it, so that
/// the points' digest is this sweep's), the sweep, where to write the points.
#[derive(serde::Serialize)]
struct RayPlan<'a> {
    text: &'a str,
    origin: &'a str,
    parameter: Option<&'a str>,
    /// The values as TOML.
    values: Vec<String>,
    variants: &'a [String],
    seeds: &'a [u64],
    out: &'a Path,
    address: &'a str,
}

/// The Python that has the `mpsched` package: $MPSCHED_PYTHON, .venv/bin/python (from the
/// current folder up), or python3.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("MPSCHED_PYTHON") {
        return PathBuf::from(p);
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    cwd.ancestors()
        .map(|d| d.join(".venv/bin/python"))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// Run every point of `sw` as a Ray task (`mpsched.sweep(backend="ray")`), each written to
/// `out/points/` as it finishes; the table and plot are then made from those files.
fn run_on_ray(src: &SweepSource, sw: &Sweep, out: &Path, address: &str) -> anyhow::Result<()> {
    let plan = RayPlan {
        text: &src.text,
        origin: &src.origin,
        parameter: sw.parameter.as_deref(),
        values: sw.values.iter().map(|v| v.to_string()).collect(),
        variants: &sw.variants,
        seeds: &sw.seeds,
        out,
        address,
    };
    let plan_path = out.join("ray-plan.json");
    std::fs::write(&plan_path, serde_json::to_string_pretty(&plan)? + "\n")
        .with_context(|| format!("writing {}", plan_path.display()))?;
    let py = python();
    let status = std::process::Command::new(&py)
        .args(["-m", "mpsched._ray_sweep"])
        .arg(&plan_path)
        .status()
        .map_err(|e| {
            UsageError(format!(
                "--ray: cannot run `{}` ({e}); scripts/install-deps.sh makes .venv with the Python package, \
                 or set MPSCHED_PYTHON",
                py.display()
            ))
        })?;
    match status.code() {
        Some(0) => Ok(()),
        Some(3) => Err(UsageError(format!(
            "--ray: `{}` has no `mpsched` package or no Ray (pip install ./python 'ray[default]'; docs/python.md)",
            py.display()
        ))
        .into()),
        _ => anyhow::bail!(
            "--ray: the sweep on Ray ended with {status} (points it finished are in {})",
            out.join("points").display()
        ),
    }
}

fn list_points(sw: &Sweep, points: &[SweepPoint]) -> anyhow::Result<()> {
    outln!(
        "{:>6}  {:<14} {:<16} {:>6}",
        "point",
        sw.parameter.as_deref().unwrap_or("value"),
        "variant",
        "seed"
    );
    for p in points {
        outln!(
            "{:>6}  {:<14} {:<16} {:>6}",
            p.index,
            p.value_label(),
            p.variant.as_deref().unwrap_or("-"),
            p.seed
        );
    }
    Ok(())
}

/// Build every (value, variant) once before running anything, so that a bad value is an error
/// now and not after an hour of other points.
fn check_points(src: &SweepSource, sw: &Sweep, points: &[SweepPoint]) -> anyhow::Result<()> {
    let mut seen = std::collections::HashSet::new();
    for p in points {
        if seen.insert((p.value_label(), p.variant.clone())) {
            src.scenario_of(sw, p).map_err(|e| {
                UsageError(format!(
                    "point {} ({} = {}, variant {}): {e}",
                    p.index,
                    sw.parameter.as_deref().unwrap_or("-"),
                    p.value_label(),
                    p.variant.as_deref().unwrap_or("-")
                ))
            })?;
        }
    }
    Ok(())
}

fn run_all(
    src: &SweepSource,
    sw: &Sweep,
    points: &[SweepPoint],
    dir: &Path,
    jobs: Option<usize>,
) -> anyhow::Result<Vec<PointResult>> {
    let jobs = workers(jobs, points.len())?;
    let bar = ProgressBar::with_draw_target(Some(points.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} sweep [{bar:40}] {pos}/{len} points, {elapsed} elapsed, eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    let started = Instant::now();
    let write_failures = std::sync::Mutex::new(Vec::new());
    let results = run_points(src, sw, points, &SimBackend::default(), jobs, |p, r| {
        if let Ok(r) = r {
            let path = dir.join(format!("{:05}.json", p.index));
            let written = serde_json::to_string_pretty(r)
                .map_err(std::io::Error::other)
                .and_then(|json| std::fs::write(&path, json + "\n"));
            if let Err(e) = written {
                write_failures
                    .lock()
                    .expect("no panics hold it")
                    .push(format!("{}: {e}", path.display()));
            }
        }
        bar.inc(1);
    })
    .context("starting the thread pool")?;
    bar.finish_and_clear();
    if let Some(e) = write_failures.into_inner().expect("no panics hold it").first() {
        anyhow::bail!("cannot write a point's results: {e}");
    }
    let mut ok = Vec::with_capacity(results.len());
    for (p, r) in points.iter().zip(results) {
        ok.push(r.map_err(|e| {
            anyhow::anyhow!(
                "point {} (value {}, variant {}, seed {}): {e}",
                p.index,
                p.value_label(),
                p.variant.as_deref().unwrap_or("-"),
                p.seed
            )
        })?);
    }
    let events: u64 = ok.iter().map(|r| r.events).sum();
    let engine_s: f64 = ok.iter().map(|r| r.engine_s).sum();
    outln!(
        "{} points on {} threads in {:.1} s wall ({} events, {:.1} s of engine time: {:.1} M events/s per thread)",
        ok.len(),
        jobs,
        started.elapsed().as_secs_f64(),
        events,
        engine_s,
        events as f64 / engine_s.max(1e-9) / 1e6
    );
    Ok(ok)
}

/// How many points run at once: as asked (default one per core), but never more than there are
/// points to run or cores to run them on, since a point is one thread busy from start to end.
fn workers(asked: Option<usize>, points: usize) -> Result<usize, UsageError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if asked == Some(0) {
        return Err(UsageError("--jobs: expected at least 1".into()));
    }
    let jobs = asked.unwrap_or(cores).min(cores).min(points.max(1));
    if let Some(n) = asked.filter(|&n| n > jobs) {
        errln!("note: --jobs {n}: running {jobs} at once ({points} points, {cores} cores)");
    }
    Ok(jobs)
}

/// The point files in `dir` that belong to this sweep (same text digest).
fn collect(dir: &Path, src: &SweepSource, expected: usize) -> anyhow::Result<Vec<PointResult>> {
    let digest = src.digest();
    let mut out = Vec::new();
    let mut foreign = 0;
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in entries {
        let path = e?.path();
        if path.extension().and_then(|x| x.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let r: PointResult = serde_json::from_str(&text)
            .map_err(|e| UsageError(format!("{}: not a point's results ({e})", path.display())))?;
        if r.digest == digest {
            out.push(r);
        } else {
            foreign += 1;
        }
    }
    if foreign > 0 {
        errln!(
            "note: {foreign} point files in {} are of another scenario text; left out",
            dir.display()
        );
    }
    if out.len() < expected {
        errln!("note: {} of {expected} points found; the table shows those", out.len());
    }
    if out.is_empty() {
        return Err(UsageError(format!("no points of this sweep in {}", dir.display())).into());
    }
    out.sort_by_key(|r| r.index);
    Ok(out)
}

fn report(sc: &Scenario, sw: &Sweep, results: &[PointResult], out: &Path, plot: bool) -> anyhow::Result<()> {
    let rows = aggregate(results);
    write_points_csv(&out.join("sweep.csv"), results)?;
    write_rows_csv(&out.join("sweep_summary.csv"), sw, &rows)?;
    print_rows(sw, &rows)?;
    if plot {
        let path = out.join("sweep.png");
        let title = format!("{}: {}", sc.name, sw.parameter.as_deref().unwrap_or("variants"));
        crate::plot::sweep_png(&title, sw.parameter.as_deref().unwrap_or("value"), &rows, &path)
            .with_context(|| format!("drawing {}", path.display()))?;
    }
    outln!(
        "\nResults in {} (sweep.csv per point, sweep_summary.csv over seeds, points/)",
        out.display()
    );
    Ok(())
}

fn cell(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

fn write_points_csv(path: &Path, results: &[PointResult]) -> anyhow::Result<()> {
    let mut s = String::from("point,value,variant,seed");
    let names: Vec<&str> = results
        .first()
        .map_or(Vec::new(), |r| columns(r).iter().map(|c| c.0).collect());
    for n in &names {
        s += &format!(",{n}");
    }
    s += ",events\n";
    for r in results {
        s += &format!(
            "{},{},{},{}",
            r.index,
            r.value,
            r.variant.as_deref().unwrap_or(""),
            r.seed
        );
        for (_, v) in columns(r) {
            s += &format!(",{}", cell(v));
        }
        s += &format!(",{}\n", r.events);
    }
    std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))
}

fn write_rows_csv(path: &Path, sw: &Sweep, rows: &[SweepRow]) -> anyhow::Result<()> {
    let mut s = format!("{},variant,seeds", sw.parameter.as_deref().unwrap_or("value"));
    if let Some(r) = rows.first() {
        for (n, _) in &r.figures {
            s += &format!(",{n}_mean,{n}_min,{n}_max,{n}_ci95_lo,{n}_ci95_hi");
        }
    }
    s.push('\n');
    for r in rows {
        s += &format!("{},{},{}", r.value, r.variant.as_deref().unwrap_or(""), r.seeds);
        for (_, f) in &r.figures {
            match f {
                Some([m, lo, hi, clo, chi]) => s += &format!(",{m},{lo},{hi},{clo},{chi}"),
                None => s += ",,,,,",
            }
        }
        s.push('\n');
    }
    std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))
}

/// The table: one line per (value, variant), the figures a reader compares, means over seeds.
fn print_rows(sw: &Sweep, rows: &[SweepRow]) -> anyhow::Result<()> {
    let has_fct = rows
        .iter()
        .any(|r| r.figures.iter().any(|(n, f)| *n == "fct_mean_ms" && f.is_some()));
    let shown: &[&str] = if has_fct {
        &[
            "fct_mean_ms",
            "fct_p99_ms",
            "mice_fct_mean_ms",
            "mice_fct_p99_ms",
            "elephants_fct_mean_ms",
            "finished_pct",
        ]
    } else {
        &["delivered_mbps"]
    };
    let heads: Vec<&str> = shown
        .iter()
        .map(|n| match *n {
            "fct_mean_ms" => "FCT mean ms",
            "fct_p99_ms" => "FCT p99 ms",
            "mice_fct_mean_ms" => "mice mean ms",
            "mice_fct_p99_ms" => "mice p99 ms",
            "elephants_fct_mean_ms" => "eleph. mean ms",
            "finished_pct" => "finished %",
            _ => "delivered Mbit/s",
        })
        .collect();
    outln!();
    out!(
        "{:<14} {:<14} {:>5}",
        sw.parameter.as_deref().unwrap_or("value"),
        "variant",
        "seeds"
    );
    for h in &heads {
        out!(" {h:>16}");
    }
    outln!();
    for r in rows {
        out!(
            "{:<14} {:<14} {:>5}",
            r.value,
            r.variant.as_deref().unwrap_or("-"),
            r.seeds
        );
        for n in shown {
            let f = r.figures.iter().find(|(k, _)| k == n).and_then(|(_, f)| *f);
            out!(" {:>16}", f.map_or("-".into(), |[m, ..]| format!("{m:.2}")));
        }
        outln!();
    }
    outln!("(means over seeds; min, max and the 95 % confidence interval in sweep_summary.csv)");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::workers;

    #[test]
    fn workers_are_capped_at_the_points_and_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(workers(Some(100_000), 2).unwrap(), cores.min(2));
        assert_eq!(workers(Some(100_000), 1_000).unwrap(), cores);
        assert_eq!(workers(None, 1).unwrap(), 1);
        assert_eq!(workers(Some(1), 50).unwrap(), 1);
        assert!(workers(Some(0), 5).is_err());
    }
}
