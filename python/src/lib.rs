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
use mpsched_scenario::{builtin, files, limits, ScenarioError};
use mpsched_sim::experiment::SimBackend;
use mpsched_sim::sweep::{aggregate, columns, run_concrete_point, PointLabel, PointResult};
use pyo3::exceptions::{PyOSError, PyTypeError};
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

/// One step down into a value: a table's key or a list's index.
enum Step {
    Key(String),
    Index(usize),
}

/// A value set by `Scenario.set` being converted: the scenario and the key set (for errors),
/// the items so far, the containers on the way down (to find one that contains itself) and
/// the steps to the current item, made into a field's name (`workload.x[2].rate`) only for an
/// error.
struct Conversion<'a> {
    origin: &'a str,
    key: &'a str,
    items: usize,
    open: Vec<usize>,
    path: Vec<Step>,
}

impl<'a> Conversion<'a> {
    fn new(origin: &'a str, key: &'a str) -> Self {
        Conversion {
            origin,
            key,
            items: 0,
            open: Vec::new(),
            path: Vec::new(),
        }
    }

    /// The field the current item is: the key set, then the steps into its value.
    fn field(&self) -> String {
        let mut f = self.key.to_string();
        for s in &self.path {
            match s {
                Step::Key(k) => f += &format!(".{k}"),
                Step::Index(i) => f += &format!("[{i}]"),
            }
        }
        f
    }

    /// The `ScenarioError` of the current item.
    fn error(&self, py: Python<'_>, message: String) -> PyErr {
        scenario_error(
            py,
            &ScenarioError {
                file: self.origin.into(),
                field: self.field(),
                message,
            },
        )
    }

    /// The `TypeError` of the current item.
    fn type_error(&self, message: String) -> PyErr {
        PyTypeError::new_err(format!("`{}`: {message}", self.field()))
    }

    /// Convert `x` one step down.
    fn child(&mut self, step: Step, x: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
        self.path.push(step);
        let v = toml_value(x, self)?;
        self.path.pop();
        Ok(v)
    }
}

/// `v` shown in an error: its text, or `what` when that is long (a 10 000-digit int) or
/// cannot be had.
fn shown(v: &Bound<'_, PyAny>, what: &str) -> String {
    match v.str() {
        Ok(s) if s.len().is_ok_and(|n| n <= 40) => s.to_string(),
        _ => what.into(),
    }
}

/// A Python value as the TOML value a scenario file would hold: bool, int, float, str, and
/// lists, tuples and dicts of them. A `TypeError` for a type TOML has no value of, a
/// `ScenarioError` for a value too deep, too large, containing itself or out of TOML's range;
/// both name the field (`workload.x[2].rate`). Bounded before it recurses or copies, so that
/// no value can overflow the stack or ask for more memory than the bound's.
fn toml_value(v: &Bound<'_, PyAny>, c: &mut Conversion<'_>) -> PyResult<toml::Value> {
    use toml::Value;
    let py = v.py();
    c.items += 1;
    if c.items > limits::MAX_VALUE_ITEMS {
        return Err(c.error(py, format!("more than {} items in one value", limits::MAX_VALUE_ITEMS)));
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract().map(Value::Integer).map_err(|_| {
            c.error(
                py,
                format!("{} is outside TOML's integers (signed 64-bit)", shown(v, "an int")),
            )
        });
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(v.extract()?));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return s
            .to_cow()
            .map(|s| Value::String(s.into_owned()))
            .map_err(|e| c.error(py, format!("not UTF-8 text ({e})")));
    }
    let (list, tuple, dict) = (v.cast::<PyList>(), v.cast::<PyTuple>(), v.cast::<PyDict>());
    if list.is_err() && tuple.is_err() && dict.is_err() {
        return Err(c.type_error(format!(
            "a scenario value is a bool, int, float, str, list or dict, not {}",
            v.get_type().name()?
        )));
    }
    let id = v.as_ptr() as usize;
    if c.open.contains(&id) {
        return Err(c.error(py, "the value contains itself (a list or dict inside itself)".into()));
    }
    if c.open.len() >= limits::MAX_VALUE_DEPTH {
        return Err(c.error(
            py,
            format!("lists and dicts nested deeper than {} levels", limits::MAX_VALUE_DEPTH),
        ));
    }
    c.open.push(id);
    // Walked with the types' own iterators, not `__iter__`: no Python code runs meanwhile, so
    // nothing can change a dict or list while it is walked.
    let out = if let Ok(d) = dict {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let Ok(k) = k.cast::<PyString>() else {
                return Err(c.type_error(format!("a table's keys are strings, not {}", k.get_type().name()?)));
            };
            let k = k
                .to_cow()
                .map_err(|e| c.error(py, format!("a key that is not UTF-8 text ({e})")))?
                .into_owned();
            let x = c.child(Step::Key(k.clone()), &x)?;
            t.insert(k, x);
        }
        Value::Table(t)
    } else {
        let mut a = Vec::new();
        if let Ok(l) = list {
            for (i, x) in l.iter().enumerate() {
                a.push(c.child(Step::Index(i), &x)?);
            }
        } else if let Ok(t) = tuple {
            for (i, x) in t.iter().enumerate() {
                a.push(c.child(Step::Index(i), &x)?);
            }
        }
        Value::Array(a)
    };
    c.open.pop();
    Ok(out)
}

/// A TOML value as Python holds it (a date or time as its text); no deeper than a value
/// `Scenario.set` takes (the TOML parser reads none deeper, and this recurses).
fn py_value<'py>(py: Python<'py>, v: &toml::Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    use toml::Value;
    if depth >= limits::MAX_VALUE_DEPTH && matches!(v, Value::Array(_) | Value::Table(_)) {
        return Err(usage_error(
            py,
            format!(
                "a TOML value with lists and tables nested deeper than {} levels",
                limits::MAX_VALUE_DEPTH
            ),
        ));
    }
    Ok(match v {
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Integer(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => f.into_pyobject(py)?.into_any(),
        Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any(),
        Value::Array(a) => PyList::new(
            py,
            a.iter()
                .map(|x| py_value(py, x, depth + 1))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
        Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, x) in t {
                d.set_item(k, py_value(py, x, depth + 1)?)?;
            }
            d.into_any()
        }
    })
}

/// A key `Scenario.set` sets: a dotted key, a str (a `TypeError` otherwise).
fn key_arg(k: &Bound<'_, PyAny>) -> PyResult<String> {
    match k.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "a key to set is a dotted key (a str, such as \"workload.load\"), not {}",
            k.get_type().name()?
        ))),
    }
}

/// An integer argument `name` of a call, within `lo..=hi`: an int or what converts to one
/// losslessly (`__index__`, as numpy's integers do); a `TypeError` for anything else (a bool,
/// a float, a str: the command line takes none of them for a number), a `UsageError` naming
/// the bound otherwise (Python's own `OverflowError` is neither).
fn int_arg(py: Python<'_>, v: &Bound<'_, PyAny>, name: &str, lo: u64, hi: u64) -> PyResult<u64> {
    let index = if v.is_instance_of::<PyBool>() {
        None
    } else if v.is_instance_of::<PyInt>() {
        Some(v.clone())
    } else {
        py.import("operator")
            .and_then(|m| m.getattr("index"))
            .and_then(|f| f.call1((v,)))
            .ok()
    };
    let Some(n) = index else {
        return Err(PyTypeError::new_err(format!(
            "{name}: expected an int, got {}",
            v.get_type().name()?
        )));
    };
    match n.extract::<u64>() {
        Ok(x) if (lo..=hi).contains(&x) => Ok(x),
        _ => Err(usage_error(
            py,
            format!(
                "{name}: expected {lo} to {hi}, got {}",
                shown(&n, "an int past 64 bits")
            ),
        )),
    }
}

/// A run's `duration` as the text `mpsched run --duration` takes: seconds (an int or a
/// float, written without an exponent, which the command line does not read) or a time
/// (`"500ms"`). A `TypeError` for another type, a `UsageError` for a number that is no time.
#[pyfunction]
fn duration_text(py: Python<'_>, duration: &Bound<'_, PyAny>) -> PyResult<String> {
    let max_s = limits::MAX_TIME_PS / 1_000_000_000_000;
    let bad = |shown: String| {
        usage_error(
            py,
            format!("duration: expected seconds above zero and at most {max_s}, got {shown}"),
        )
    };
    if duration.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "duration: expected seconds (an int or a float) or a time such as \"500ms\", got bool",
        ));
    }
    if duration.is_instance_of::<PyInt>() {
        return match duration.extract::<u64>() {
            Ok(s) if (1..=max_s).contains(&s) => Ok(s.to_string()),
            _ => Err(bad(shown(duration, "an int past 64 bits"))),
        };
    }
    if duration.is_instance_of::<PyFloat>() {
        let s: f64 = duration.extract()?;
        // NaN fails both comparisons.
        if !(s > 0.0 && s <= max_s as f64) {
            return Err(bad(format!("{s}")));
        }
        return Ok(format!("{s}"));
    }
    match duration.cast::<PyString>() {
        Ok(s) => Ok(s.to_cow()?.into_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "duration: expected seconds (an int or a float) or a time such as \"500ms\", got {}",
            duration.get_type().name()?
        ))),
    }
}

/// Refuse a scenario's text past the bound a file is held to (`files::MAX_SCENARIO_FILE_BYTES`,
/// as `mpsched run FILE` reads it), before it is parsed.
fn check_text_size(py: Python<'_>, text: &str, origin: &str) -> PyResult<()> {
    let max = files::MAX_SCENARIO_FILE_BYTES;
    if text.len() as u64 > max {
        return Err(scenario_error(
            py,
            &ScenarioError {
                file: origin.into(),
                field: String::new(),
                message: format!("{} bytes of text; at most {max}, as a file", text.len()),
            },
        ));
    }
    Ok(())
}

/// Refuse a sweep of `values` x `variants` x `seeds` points past `MAX_SWEEP_POINTS` (and
/// more seeds than `MAX_SWEEP_SEEDS`), as `mpsched sweep` does: from the sizes, before any
/// point is made. Returns the point count.
#[pyfunction]
fn check_sweep_size(py: Python<'_>, values: usize, variants: usize, seeds: usize) -> PyResult<usize> {
    if seeds > limits::MAX_SWEEP_SEEDS {
        return Err(usage_error(
            py,
            format!("{seeds} seeds; at most {}", limits::MAX_SWEEP_SEEDS),
        ));
    }
    limits::check_sweep_points(values, variants, seeds).map_err(|e| usage_error(py, format!("sweep: {e}")))
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
        check_text_size(py, text, origin)?;
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
            let key = key_arg(&k)?;
            let mut o = Override::parse(&key, "0").map_err(|e| usage_error(py, e))?;
            o.value = toml_value(&v, &mut Conversion::new(&self.origin, &key))?;
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
    /// `repetitions` (1 to `MAX_REPETITIONS`, as `mpsched run`); the GIL is released while it
    /// runs. Every argument is checked before anything runs.
    #[pyo3(signature = (seed = None, duration = None, backend = "sim", repetitions = None))]
    fn run(
        &self,
        py: Python<'_>,
        seed: Option<&Bound<'_, PyAny>>,
        duration: Option<&Bound<'_, PyAny>>,
        backend: &str,
        repetitions: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<RunResult> {
        let max = u64::from(limits::MAX_REPETITIONS);
        let repetitions = match repetitions {
            // Within 1..=MAX_REPETITIONS, so within u32.
            Some(r) => Some(int_arg(py, r, "repetitions", 1, max)? as u32),
            None => None,
        };
        let seed = seed.map(|s| int_arg(py, s, "seed", 0, u64::MAX)).transpose()?;
        if !["sim", "netns", "bmv2"].contains(&backend) {
            return Err(usage_error(
                py,
                format!("unknown backend `{backend}`: use sim, netns or bmv2"),
            ));
        }
        // Repetition i runs with seed + i: the last must not wrap (the kernel's default is one).
        let reps = repetitions.unwrap_or(if backend == "sim" { self.concrete.repetitions } else { 1 });
        if let Some(s) = seed.filter(|s| s.checked_add(u64::from(reps) - 1).is_none()) {
            return Err(usage_error(
                py,
                format!("seed: {s} with {reps} repetitions runs seeds past 64 bits (repetition i has seed + i)"),
            ));
        }
        let mut sc = self.concrete.clone();
        if let Some(d) = duration {
            let d = duration_text(py, d)?;
            let ps = mpsched_cli::run::duration_ps(&d).map_err(|e| cli_error(py, e))?;
            sc = match ps > sc.duration_ps {
                // Longer: as if the text said so, with the keys this scenario set.
                true => mpsched_cli::run::lengthened(&self.text, &self.origin, &self.overrides, ps),
                false => mpsched_cli::run::with_duration(&sc, &d),
            }
            .map_err(|e| cli_error(py, e))?;
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
        check_text_size(py, text, origin)?;
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
            .map(|v| py_value(py, v, 0))
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
        let mut labels = Vec::new();
        for (k, v) in keys.iter() {
            let t = toml_value(&v, &mut Conversion::new(&self.origin, &key_arg(&k)?))?;
            labels.push(display_value(&t));
        }
        Ok(labels.join(","))
    }

    /// One point of a sweep on the simulator: `keys` set, `variant`, `seed`, one repetition,
    /// cut short at `duration` if given (as `run`); its results as `mpsched sweep` writes a
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
    check_text_size(py, text, "<value>")?;
    py_value(py, &mpsched_scenario::overrides::parse_value(text), 0)
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
    let held = HeldSignals::hold(py, &stop)?;
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
    // The run has removed what it made: a signal held meanwhile now does what it would have.
    held.release();
    if let Some(e) = interrupted {
        return Err(e);
    }
    match outcome {
        Ok(r) => r.map_err(|e| cli_error(py, e)),
        Err(_) => Err(cli_error(py, anyhow::anyhow!("the {backend} run panicked"))),
    }
}

/// The signals that end the interpreter by default (a closed terminal or SSH session, `kill`,
/// Ctrl-\\) held while a kernel run owns namespaces, programs and processes: the run is
/// told to stop, removes what it made, and then the signal does what it would have done (the
/// process ends by it). SIGINT is Python's own (KeyboardInterrupt, checked every 100 ms); a
/// signal the program has a handler for, or ignores, is left to it.
struct HeldSignals {
    ids: Vec<signal_hook::SigId>,
    received: Arc<std::sync::atomic::AtomicUsize>,
}

impl HeldSignals {
    const SIGNALS: [i32; 3] = [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGQUIT,
    ];

    /// Hold each of [`Self::SIGNALS`] whose Python disposition is the default: set `stop`
    /// and remember it.
    fn hold(py: Python<'_>, stop: &Arc<AtomicBool>) -> PyResult<Self> {
        let signal = py.import("signal")?;
        let default = signal.getattr("SIG_DFL")?;
        let received = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut ids = Vec::new();
        for sig in Self::SIGNALS {
            if !signal.call_method1("getsignal", (sig,))?.eq(&default)? {
                continue;
            }
            let registered = signal_hook::flag::register_usize(sig, received.clone(), sig as usize)
                .and_then(|a| signal_hook::flag::register(sig, stop.clone()).map(|b| [a, b]));
            match registered {
                Ok(both) => ids.extend(both),
                Err(e) => {
                    for id in ids {
                        signal_hook::low_level::unregister(id);
                    }
                    return Err(PyOSError::new_err(format!("cannot handle signal {sig}: {e}")));
                }
            }
        }
        Ok(Self { ids, received })
    }

    /// Stop holding; if one came, end the process by it as its default action does.
    fn release(self) {
        for id in self.ids {
            signal_hook::low_level::unregister(id);
        }
        let sig = self.received.load(Ordering::Relaxed);
        if sig != 0 {
            let _ = signal_hook::low_level::emulate_default_handler(sig as i32);
        }
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
    m.add_function(wrap_pyfunction!(duration_text, m)?)?;
    m.add_function(wrap_pyfunction!(check_sweep_size, m)?)?;
    // The bounds of mpsched_scenario::limits, which `mpsched run` and `mpsched sweep` apply.
    m.add("MAX_REPETITIONS", limits::MAX_REPETITIONS)?;
    m.add("MAX_SWEEP_POINTS", limits::MAX_SWEEP_POINTS)?;
    m.add("MAX_SWEEP_SEEDS", limits::MAX_SWEEP_SEEDS)?;
    m.add("MAX_SWEEP_SEED", limits::MAX_SWEEP_SEED)?;
    m.add("MAX_VALUE_DEPTH", limits::MAX_VALUE_DEPTH)?;
    m.add("MAX_VALUE_ITEMS", limits::MAX_VALUE_ITEMS)?;
    m.add_class::<Scenario>()?;
    m.add_class::<RunResult>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
