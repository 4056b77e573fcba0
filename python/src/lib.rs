//! `mpsched._native`: the simulator (and the kernel and BMv2 backends) in-process for Python.
//!
//! The Python package (`python/mpsched/`) wraps these two classes: [`Scenario`], a scenario's
//! text with the keys set on it and the variants chosen, validated as it is made; and
//! [`RunResult`], what a run produced, handed to Python as the `summary.json` text, the time
//! series' columns and the transfers' rows, and written to a folder by the CLI's own code
//! (`mpsched_cli::run::write_results`), so that a run from Python writes what `mpsched run`
//! writes. Every run releases the GIL. Errors are the package's exceptions
//! (`mpsched/errors.py`): `ScenarioError` with the file, the field and the message, `UsageError`
//! for a bad argument, `RunError` for a backend's failure.

use mpsched_cli::run::{check_netns_plan, check_variants, multi_summary, multi_variant, run_netns, switch_planes};
use mpsched_netns::backend::NetnsOptions;
use mpsched_run::{Plan, VariantResult};
use mpsched_scenario::overrides::{display_value, Override};
use mpsched_scenario::{builtin, files, ScenarioError};
use mpsched_sim::experiment::SimBackend;
use mpsched_sim::sweep::{aggregate, columns, run_concrete_point, PointLabel, PointResult};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// An exception class of `mpsched.errors`, made with `args`.
fn error<'py>(py: Python<'py>, class: &str, args: Bound<'py, PyTuple>) -> PyErr {
    let made = py
        .import("mpsched.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

fn scenario_error(py: Python<'_>, e: &ScenarioError) -> PyErr {
    let args = (e.to_string(), e.file.clone(), e.field.clone(), e.message.clone());
    match PyTuple::new(py, [args.0, args.1, args.2, args.3]) {
        Ok(t) => error(py, "ScenarioError", t),
        Err(e) => e,
    }
}

fn usage_error(py: Python<'_>, msg: String) -> PyErr {
    match PyTuple::new(py, [msg]) {
        Ok(t) => error(py, "UsageError", t),
        Err(e) => e,
    }
}

/// An error of the CLI's functions: a scenario's, a usage error, or the backend's.
fn cli_error(py: Python<'_>, e: anyhow::Error) -> PyErr {
    if let Some(s) = e.downcast_ref::<ScenarioError>() {
        return scenario_error(py, s);
    }
    let class = match e.downcast_ref::<mpsched_cli::UsageError>() {
        Some(_) => "UsageError",
        None => "RunError",
    };
    match PyTuple::new(py, [format!("{e:#}")]) {
        Ok(t) => error(py, class, t),
        Err(e) => e,
    }
}

/// A Python value as the TOML value a scenario file would hold: bool, int, float, str, and
/// lists and dicts of them.
fn toml_value(v: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    use toml::Value;
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(Value::Integer(v.extract()?));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Value::String(v.extract()?));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let items: PyResult<Vec<Value>> = v.try_iter()?.map(|x| toml_value(&x?)).collect();
        return Ok(Value::Array(items?));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            t.insert(k.extract::<String>()?, toml_value(&x)?);
        }
        return Ok(Value::Table(t));
    }
    Err(PyTypeError::new_err(format!(
        "a scenario value is a bool, int, float, str, list or dict, not {}",
        v.get_type().name()?
    )))
}

/// A TOML value as Python holds it (a date or time as its text).
fn py_value<'py>(py: Python<'py>, v: &toml::Value) -> PyResult<Bound<'py, PyAny>> {
    use toml::Value;
    Ok(match v {
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        Value::Array(a) => {
            PyList::new(py, a.iter().map(|x| py_value(py, x)).collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, x) in t {
                d.set_item(k, py_value(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// The text of a file, or of a built-in scenario, and where it came from (as `mpsched run`
/// names it).
fn source_of(py: Python<'_>, path_or_name: &str) -> PyResult<(String, String)> {
    let p = Path::new(path_or_name);
    if p.exists() {
        return files::read_bounded(p, files::MAX_SCENARIO_FILE_BYTES)
            .map(|t| (t, path_or_name.to_string()))
            .map_err(|e| {
                scenario_error(
                    py,
                    &ScenarioError {
                        file: path_or_name.into(),
                        field: String::new(),
                        message: format!("cannot read: {e}"),
                    },
                )
            });
    }
    match builtin::find(path_or_name) {
        Some((path, text)) => Ok((text.to_string(), format!("<builtin>/{path}"))),
        None => Err(usage_error(
            py,
            format!("`{path_or_name}` is neither a file nor a built-in scenario (see mpsched.builtins())"),
        )),
    }
}

/// The names of the built-in scenarios, as `mpsched list` gives them.
#[pyfunction]
fn builtins() -> Vec<&'static str> {
    builtin::BUILTIN.iter().map(|(name, _, _)| *name).collect()
}

/// A scenario: its text, the keys set on it, the variants chosen; validated when made.
#[pyclass(module = "mpsched._native", frozen)]
#[derive(Clone)]
struct Scenario {
    text: Arc<str>,
    origin: String,
    overrides: Vec<Override>,
    variants: Vec<String>,
    concrete: mpsched_scenario::Scenario,
}

impl Scenario {
    fn make(
        py: Python<'_>,
        text: Arc<str>,
        origin: String,
        overrides: Vec<Override>,
        variants: Vec<String>,
    ) -> PyResult<Self> {
        let concrete = mpsched_scenario::Scenario::from_toml_with(&text, &origin, &overrides)
            .map_err(|e| scenario_error(py, &e))?;
        check_variants(&concrete, &variants).map_err(|e| cli_error(py, e))?;
        Ok(Scenario {
            text,
            origin,
            overrides,
            variants,
            concrete,
        })
    }

    fn plan(&self, seed: Option<u64>, repetitions: Option<u32>) -> Plan {
        Plan {
            variants: self.variants.clone(),
            seed,
            repetitions,
            captures: Vec::new(),
        }
    }
}

#[pymethods]
impl Scenario {
    /// A scenario file, or a built-in scenario by name, as `mpsched run` takes it.
    #[staticmethod]
    fn load(py: Python<'_>, path_or_name: &str) -> PyResult<Self> {
        let (text, origin) = source_of(py, path_or_name)?;
        Self::make(py, text.into(), origin, Vec::new(), Vec::new())
    }

    /// A scenario from its TOML text; `origin` names it in errors.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<string>"))]
    fn from_toml(py: Python<'_>, text: &str, origin: &str) -> PyResult<Self> {
        Self::make(py, text.into(), origin.into(), Vec::new(), Vec::new())
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> String {
        self.concrete.name.clone()
    }

    /// Where it came from: a file's path, `<builtin>/scenarios/...`, or `from_toml`'s origin.
    #[getter]
    fn origin(&self) -> String {
        self.origin.clone()
    }

    /// What it reproduces (a paper's figure or table).
    #[getter]
    fn reproduces(&self) -> String {
        self.concrete.reproduces.clone()
    }

    /// The names of all its variants.
    #[getter]
    fn variants(&self) -> Vec<String> {
        self.concrete.variant_names()
    }

    /// The variants a run runs (empty: all of them).
    #[getter]
    fn selected_variants(&self) -> Vec<String> {
        self.variants.clone()
    }

    /// Its base seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.concrete.seed
    }

    /// Its duration, seconds.
    #[getter]
    fn duration_s(&self) -> f64 {
        self.concrete.duration_ps as f64 / 1e12
    }

    /// The keys set on the text so far, `(dotted key, value as TOML)`.
    #[getter]
    fn overrides(&self) -> Vec<(String, String)> {
        self.overrides
            .iter()
            .map(|o| (o.key.clone(), o.value.to_string()))
            .collect()
    }

    /// The same scenario running only `names` (one name or several).
    fn with_variants(&self, py: Python<'_>, names: Vec<String>) -> PyResult<Self> {
        Self::make(
            py,
            self.text.clone(),
            self.origin.clone(),
            self.overrides.clone(),
            names,
        )
    }

    /// The scenario with `keys` (dotted key -> value) set in its text before validation.
    fn set(&self, py: Python<'_>, keys: &Bound<'_, PyDict>) -> PyResult<Self> {
        let mut overrides = self.overrides.clone();
        for (k, v) in keys.iter() {
            let key: String = k.extract()?;
            let mut o = Override::parse(&key, "0").map_err(|e| usage_error(py, e))?;
            o.value = toml_value(&v)?;
            overrides.push(o);
        }
        Self::make(
            py,
            self.text.clone(),
            self.origin.clone(),
            overrides,
            self.variants.clone(),
        )
    }

    /// Validate again (made scenarios are valid; this is for symmetry with `mpsched check`).
    fn validate(&self, py: Python<'_>) -> PyResult<()> {
        Self::make(
            py,
            self.text.clone(),
            self.origin.clone(),
            self.overrides.clone(),
            self.variants.clone(),
        )
        .map(|_| ())
    }

    /// Run on `backend` (`sim`, or as root `netns` / `bmv2`) with `seed` (default the
    /// scenario's), `duration` (seconds or a time such as `500ms`; default the scenario's) and
    /// `repetitions`; the GIL is released while it runs.
    #[pyo3(signature = (seed = None, duration = None, backend = "sim", repetitions = None))]
    fn run(
        &self,
        py: Python<'_>,
        seed: Option<u64>,
        duration: Option<&Bound<'_, PyAny>>,
        backend: &str,
        repetitions: Option<u32>,
    ) -> PyResult<RunResult> {
        if !["sim", "netns", "bmv2"].contains(&backend) {
            return Err(usage_error(
                py,
                format!("unknown backend `{backend}`: use sim, netns or bmv2"),
            ));
        }
        let mut sc = self.concrete.clone();
        if let Some(d) = duration {
            let d: String = match d.extract::<f64>() {
                Ok(x) if d.is_instance_of::<PyFloat>() || d.is_instance_of::<PyInt>() => format!("{x}"),
                _ => d.extract()?,
            };
            sc = mpsched_cli::run::with_duration(&sc, &d).map_err(|e| cli_error(py, e))?;
        }
        let plan = self.plan(seed, repetitions);
        let results = match backend {
            "sim" => py
                .detach(|| mpsched_sim::experiment::run_plan(&sc, &plan, |_| {}))
                .map_err(|e| match e {
                    mpsched_run::ExperimentError::Scenario(s) => scenario_error(py, &s),
                    other => cli_error(py, anyhow::Error::msg(other.to_string())),
                })?,
            kernel => run_kernel(py, &sc, &plan, kernel)?,
        };
        Ok(RunResult {
            multi: multi_variant(&sc, &self.variants),
            scenario: sc,
            results,
            backend: backend.into(),
        })
    }

    fn __repr__(&self) -> String {
        format!("Scenario({:?}, origin={:?})", self.concrete.name, self.origin)
    }

    /// What makes it, to make it again elsewhere (a Ray worker): the text, the origin, the
    /// keys set `(key, TOML value)`, the variants chosen.
    #[allow(clippy::type_complexity)]
    fn parts(&self) -> (String, String, Vec<(String, String)>, Vec<String>) {
        (
            self.text.to_string(),
            self.origin.clone(),
            self.overrides(),
            self.variants.clone(),
        )
    }

    /// The scenario [`Scenario::parts`] describes.
    #[staticmethod]
    fn from_parts(
        py: Python<'_>,
        text: &str,
        origin: &str,
        overrides: Vec<(String, String)>,
        variants: Vec<String>,
    ) -> PyResult<Self> {
        let overrides = overrides
            .iter()
            .map(|(k, v)| Override::parse(k, v).map_err(|e| usage_error(py, e)))
            .collect::<PyResult<Vec<_>>>()?;
        Self::make(py, text.into(), origin.into(), overrides, variants)
    }

    /// A digest of what it runs (CRC-32 of the text and the keys set, hex); a sweep's point
    /// files carry it, so that a rerun takes only its own. Without keys set, `mpsched sweep`'s
    /// digest of the same text.
    #[getter]
    fn digest(&self) -> String {
        let mut all = self.text.to_string();
        for o in &self.overrides {
            all += &format!("\n# set {} = {}", o.key, o.value);
        }
        format!("{:08x}", crc32fast::hash(all.as_bytes()))
    }

    /// Raise `UsageError` unless `duration` is one `run` takes for this scenario.
    fn check_duration(&self, py: Python<'_>, duration: &str) -> PyResult<()> {
        mpsched_cli::run::with_duration(&self.concrete, duration)
            .map(|_| ())
            .map_err(|e| cli_error(py, e))
    }

    /// The scenario's `[sweep]`: (key or None, its values, variants, seeds), or None.
    #[allow(clippy::type_complexity)]
    fn sweep_spec<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<(Option<String>, Vec<Bound<'py, PyAny>>, Vec<String>, Vec<u64>)>> {
        let Some(sw) = &self.concrete.sweep else {
            return Ok(None);
        };
        let values = sw
            .values
            .iter()
            .map(|v| py_value(py, v))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(Some((
            sw.parameter.clone(),
            values,
            sw.variants.clone(),
            sw.seeds.clone(),
        )))
    }

    /// `keys`' values as a sweep's table writes them (`0.5`, `cubic`), comma-separated.
    fn value_label(&self, keys: &Bound<'_, PyDict>) -> PyResult<String> {
        let labels = keys
            .values()
            .iter()
            .map(|v| toml_value(&v).map(|t| display_value(&t)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(labels.join(","))
    }

    /// One point of a sweep on the simulator: `keys` set, `variant`, `seed`, one repetition,
    /// scaled to `duration` if given (as `run`); its results as `mpsched sweep` writes a
    /// point's file (`points/NNNNN.json`). The GIL is released while it runs.
    #[pyo3(signature = (keys, variant, seed, index, parameter, value, duration = None))]
    #[allow(clippy::too_many_arguments)]
    fn run_point(
        &self,
        py: Python<'_>,
        keys: &Bound<'_, PyDict>,
        variant: Option<String>,
        seed: u64,
        index: usize,
        parameter: Option<String>,
        value: String,
        duration: Option<String>,
    ) -> PyResult<String> {
        // As `mpsched sweep`'s points: the keys, then the seed set in the text too.
        let with_seed = keys.copy()?;
        with_seed.set_item("scenario.seed", seed)?;
        let point = self.set(py, &with_seed)?;
        let sc = match &variant {
            Some(v) => point.concrete.with_variant(v).map_err(|e| scenario_error(py, &e))?,
            None => point.concrete.clone(),
        };
        let sc = match &duration {
            Some(d) => mpsched_cli::run::with_duration(&sc, d).map_err(|e| cli_error(py, e))?,
            None => sc,
        };
        let label = PointLabel {
            digest: match &duration {
                Some(d) => format!("{}-{d}", self.digest()),
                None => self.digest(),
            },
            index,
            parameter,
            value,
        };
        let r = py
            .detach(|| run_concrete_point(&sc, variant.as_deref(), seed, label, &SimBackend::default()))
            .map_err(|e| match e {
                mpsched_run::ExperimentError::Scenario(s) => scenario_error(py, &s),
                other => cli_error(py, anyhow::Error::msg(other.to_string())),
            })?;
        point_json(&r)
    }
}

fn point_json(r: &PointResult) -> PyResult<String> {
    serde_json::to_string_pretty(r)
        .map(|t| t + "\n")
        .map_err(|e| PyTypeError::new_err(e.to_string()))
}

fn parse_point(text: &str) -> PyResult<PointResult> {
    serde_json::from_str(text).map_err(|e| PyTypeError::new_err(format!("not a sweep point's results: {e}")))
}

/// A TOML value's text (`0.5`, `"cubic"`, `[1, 2]`) as Python holds it; a bare word as a
/// string, as `mpsched sweep --values` takes it.
#[pyfunction]
fn toml_to_python<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py_value(py, &mpsched_scenario::overrides::parse_value(text))
}

/// The figures of a point (its file's text) as `mpsched sweep`'s table has them: (name,
/// value or None where not measured).
#[pyfunction]
fn point_columns(point: &str) -> PyResult<Vec<(&'static str, Option<f64>)>> {
    Ok(columns(&parse_point(point)?))
}

/// Points' results grouped by (value, variant) in sweep order, each figure's (mean, min, max,
/// 95 % confidence interval low and high) over the seeds, as `sweep_summary.csv` has them.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn aggregate_points(
    points: Vec<String>,
) -> PyResult<Vec<(String, Option<String>, usize, Vec<(&'static str, Option<[f64; 5]>)>)>> {
    let results = points.iter().map(|p| parse_point(p)).collect::<PyResult<Vec<_>>>()?;
    Ok(aggregate(&results)
        .into_iter()
        .map(|r| (r.value, r.variant, r.seeds, r.figures))
        .collect())
}

/// A kernel run (`netns`, `bmv2`) on a thread of its own, this one checking for Python's
/// signals every 100 ms: on Ctrl-C the run is told to stop, cleans up what it made, and
/// the KeyboardInterrupt is raised.
fn run_kernel(
    py: Python<'_>,
    sc: &mpsched_scenario::Scenario,
    plan: &Plan,
    backend: &str,
) -> PyResult<Vec<VariantResult>> {
    let stop = Arc::new(AtomicBool::new(false));
    let opts = NetnsOptions {
        ignore_delay: false,
        stop: stop.clone(),
        track_queues: None,
        captures: Vec::new(),
        switch_planes: switch_planes(backend),
        controller: None,
    };
    check_netns_plan(sc, plan, &opts).map_err(|e| cli_error(py, e))?;
    let (sc, plan) = (sc.clone(), plan.clone());
    let worker = std::thread::spawn(move || run_netns(&sc, &plan, opts));
    let mut interrupted = None;
    while !worker.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(100)));
        if let Err(e) = py.check_signals() {
            stop.store(true, Ordering::Relaxed);
            interrupted.get_or_insert(e);
        }
    }
    let outcome = worker.join();
    if let Some(e) = interrupted {
        return Err(e);
    }
    match outcome {
        Ok(r) => r.map_err(|e| cli_error(py, e)),
        Err(_) => Err(cli_error(py, anyhow::anyhow!("the {backend} run panicked"))),
    }
}

/// What a run produced: every variant's summary, time series and transfers.
#[pyclass(module = "mpsched._native", frozen)]
struct RunResult {
    scenario: mpsched_scenario::Scenario,
    results: Vec<VariantResult>,
    multi: bool,
    backend: String,
}

#[pymethods]
impl RunResult {
    /// `summary.json` as `mpsched run` writes it: one variant's summary, or with several the
    /// multi-variant summary.
    fn summary_json(&self) -> PyResult<String> {
        let text = match self.multi {
            true => serde_json::to_string_pretty(&multi_summary(&self.scenario, &self.results, &self.backend)),
            false => serde_json::to_string_pretty(&self.results[0].summary),
        };
        text.map(|t| t + "\n").map_err(|e| PyTypeError::new_err(e.to_string()))
    }

    /// The variants that ran, in order (None for a scenario without variants).
    #[getter]
    fn variants(&self) -> Vec<Option<String>> {
        self.results.iter().map(|r| r.variant.clone()).collect()
    }

    /// Variant `i`'s time series (first repetition): its column names and rows.
    fn timeseries(&self, i: usize) -> PyResult<(Vec<String>, Vec<Vec<f64>>)> {
        let r = self.variant(i)?;
        Ok((r.series.columns.clone(), r.series.rows.clone()))
    }

    /// Variant `i`'s fixed-size transfers (first repetition, `flows.csv`'s rows): id, src,
    /// dst, size_bytes, start_s, fct_s (None when unfinished), ideal_fct_s, slowdown,
    /// retransmissions.
    #[allow(clippy::type_complexity)]
    fn transfers(
        &self,
        i: usize,
    ) -> PyResult<
        Vec<(
            String,
            String,
            String,
            u64,
            f64,
            Option<f64>,
            f64,
            Option<f64>,
            Option<u64>,
        )>,
    > {
        let r = self.variant(i)?;
        Ok(r.transfers
            .iter()
            .map(|t| {
                let (id, src, dst) = (t.id.clone(), t.src.clone(), t.dst.clone());
                (
                    id,
                    src,
                    dst,
                    t.size_bytes,
                    t.start_s,
                    t.fct_s,
                    t.ideal_fct_s,
                    t.slowdown(),
                    t.retransmissions,
                )
            })
            .collect())
    }

    /// Events processed over all variants and repetitions (0 on the kernel).
    #[getter]
    fn events(&self) -> u64 {
        self.results.iter().map(|r| r.events).sum()
    }

    /// Seconds of engine time over all variants and repetitions (building the network and
    /// collecting results apart), as `mpsched run` reports it.
    #[getter]
    fn engine_s(&self) -> f64 {
        self.results.iter().map(|r| r.engine_s).sum()
    }

    /// The backend that ran it.
    #[getter]
    fn backend(&self) -> String {
        self.backend.clone()
    }

    /// Write what `mpsched run --out DIR` writes (`plot`: its PNGs too).
    #[pyo3(signature = (dir, plot = true))]
    fn write(&self, py: Python<'_>, dir: PathBuf, plot: bool) -> PyResult<()> {
        py.detach(|| {
            std::fs::create_dir_all(&dir)
                .map_err(anyhow::Error::from)
                .and_then(|_| {
                    mpsched_cli::run::write_results(
                        &self.scenario,
                        &dir,
                        self.multi,
                        &self.results,
                        plot,
                        &self.backend,
                    )
                })
        })
        .map_err(|e| cli_error(py, e))
    }
}

impl RunResult {
    fn variant(&self, i: usize) -> PyResult<&VariantResult> {
        self.results
            .get(i)
            .ok_or_else(|| PyTypeError::new_err(format!("no variant {i}: {} ran", self.results.len())))
    }
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(builtins, m)?)?;
    m.add_function(wrap_pyfunction!(point_columns, m)?)?;
    m.add_function(wrap_pyfunction!(toml_to_python, m)?)?;
    m.add_function(wrap_pyfunction!(aggregate_points, m)?)?;
    m.add_class::<Scenario>()?;
    m.add_class::<RunResult>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
