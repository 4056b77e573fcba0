//! The hostile-input corpus (`tests/hostile/`, issue 27): malformed scenarios generated over
//! every key of a set of valid bases that together hold every section of the schema, and hand
//! written cases for what a generator cannot express (special files, path tricks, flags). Each
//! case runs the binary under a memory cap and a time cap, and must end as expected: refused
//! with exit 2 at the key that was broken, or accepted; never a panic, an abort, a signal, a
//! hang, more than the memory cap, or a file written outside the case's folder.
//!
//! `HOSTILE_KEEP=DIR` keeps the scenario of every failing case in DIR.

use mpsched_scenario::overrides::{self, Override};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use toml::{Table, Value};

/// The memory a case may take (address space, KiB): 1 GiB.
const MEMORY_CAP_KIB: u64 = 1 << 20;
/// The time a case may take.
const TIME_CAP: Duration = Duration::from_secs(30);

/// The bases: built-in scenarios by name, or files under tests/hostile/bases/.
const BASES: &[&str] = &[
    "motohashi2022/s3b-dwrr-two-flows",
    "tcp/ecn",
    "afmt/three-subtunnels",
    "dc/websearch-k4-load",
    "mphula2018/fig5-websearch-tcp-ecmp",
    "mptcp/two-paths",
    "pmqecn2024/s1-performance",
    "atsss/one-ue",
    "bases/leaf-spine-failures.toml",
    "bases/paced-transfers.toml",
];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/hostile")
}

/// A base's text and a short name for case ids.
fn base_text(base: &str) -> (String, String) {
    if let Some(file) = base.strip_prefix("bases/") {
        let text = std::fs::read_to_string(corpus_dir().join(base)).unwrap();
        return (text, file.trim_end_matches(".toml").to_string());
    }
    let (_, text) = mpsched_scenario::builtin::find(base).unwrap_or_else(|| panic!("no built-in {base}"));
    (text.to_string(), base.replace('/', "-"))
}

/// Generated cases refused at another field than the one broken, and why that is right.
const REFUSED_ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "paced-transfers:flow[0].size:missing",
        "flow[0].rate_control.retransmit_timeout",
        "without a size the paced flow is no transfer: the timeout it still gives, which only a transfer \
         has, is the key that no longer makes sense",
    ),
    (
        "tcp-ecn:tcp.ecn:missing",
        "variant[2].cc",
        "ECN off by default: the variant that asks for DCTCP, which needs it, is the one refused",
    ),
    (
        "pmqecn2024-s1-performance:scenario.queue_pkts:missing",
        "programs.pmqecn.vq_capacity",
        "the default 64-packet queues are fine alone; what they cannot hold is 8 x vq_capacity for the \
         PMQECN variant's program, whose bound is the one refused, naming the link",
    ),
    (
        "atsss-one-ue:variant[0].tunnel_scheduler:missing",
        "variant[0].tunnel_params.weight",
        "without its own scheduler the variant's parameters go to the tunnel's (RTTMon), whose weight \
         stops at 62: the 191 meant for WRR is the key refused",
    ),
];

/// What a mutation must do to the run.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// Refused (exit 2) at this field, or one below it.
    Refused(String),
    /// Accepted (exit 0), or refused at this field or below it; or, for a value others name
    /// (a node's name), refused where it is named.
    Either(String),
}

/// One generated case: where it came from, the scenario, what it must do.
struct Case {
    id: String,
    text: String,
    expect: Expect,
}

/// `path` as the validator names fields: `link[2].rate`, `topology.host_links.rate`.
fn field_of(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

#[derive(Clone, Debug)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Every leaf of `t` (a value that is not a table or an array of tables), with its path.
fn leaves(t: &Table, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, Value)>) {
    for (k, v) in t {
        path.push(Seg::Key(k.clone()));
        match v {
            Value::Table(inner) => leaves(inner, path, out),
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_table) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    leaves(item.as_table().unwrap(), path, out);
                    path.pop();
                }
            }
            leaf => out.push((path.clone(), leaf.clone())),
        }
        path.pop();
    }
}

/// Every table of `t` (the root, sub-tables, entries of arrays of tables), with its path.
fn tables(t: &Table, path: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
    out.push(path.clone());
    for (k, v) in t {
        path.push(Seg::Key(k.clone()));
        match v {
            Value::Table(inner) => tables(inner, path, out),
            Value::Array(items) if items.iter().all(Value::is_table) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    tables(item.as_table().unwrap(), path, out);
                    path.pop();
                }
            }
            _ => {}
        }
        path.pop();
    }
}

/// `doc` with the leaf at `path` replaced (`Some`) or removed (`None`).
fn mutated(doc: &Table, path: &[Seg], value: Option<Value>) -> Table {
    let mut doc = doc.clone();
    let (last, parents) = path.split_last().unwrap();
    let Seg::Key(last) = last else {
        unreachable!("leaves end in a key")
    };
    let mut t: &mut Table = &mut doc;
    let mut i = 0;
    while i < parents.len() {
        let Seg::Key(k) = &parents[i] else { unreachable!() };
        let v = t.get_mut(k).unwrap();
        t = match (v, parents.get(i + 1)) {
            (Value::Array(items), Some(Seg::Index(n))) => {
                i += 1;
                items[*n].as_table_mut().unwrap()
            }
            (Value::Table(inner), _) => inner,
            _ => unreachable!("paths come from `leaves`"),
        };
        i += 1;
    }
    match value {
        Some(v) => t.insert(last.clone(), v),
        None => t.remove(last),
    };
    doc
}

/// A string that is a quantity: its number and its unit (`54Mbps` -> ("54", "Mbps")).
fn quantity(s: &str) -> Option<(&str, &str)> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let unit = unit.trim();
    (!num.is_empty() && !unit.is_empty() && unit.chars().all(|c| c.is_alphabetic() || c == '/')).then_some((num, unit))
}

/// The mutations of one leaf: a value and whether it must be refused.
fn mutations_of(v: &Value) -> Vec<(&'static str, Option<Value>, bool)> {
    let s = |x: &str| Some(Value::String(x.into()));
    let mut out: Vec<(&'static str, Option<Value>, bool)> = vec![("missing", None, false)];
    match v {
        Value::String(text) => {
            out.push(("integer", Some(Value::Integer(7)), true));
            out.push(("array", Some(Value::Array(vec![])), true));
            out.push(("empty", s(""), false));
            if let Some((_, unit)) = quantity(text) {
                out.push(("zero", s(&format!("0{unit}")), false));
                out.push(("negative", s(&format!("-1{unit}")), true));
                out.push(("huge", s(&format!("99999999999999999999999{unit}")), true));
                out.push(("nan", s(&format!("NaN{unit}")), true));
                out.push(("unit", s("3 parsecs"), true));
                out.push(("max", s(&format!("18446744073709551{unit}")), false));
            } else {
                out.push(("path", s("../../../../tmp/hostile/../x"), false));
                out.push(("long", s(&"x".repeat(100_000)), false));
                out.push(("control", s("a\nb\u{0}c"), false));
            }
        }
        Value::Integer(_) => {
            out.push(("zero", Some(Value::Integer(0)), false));
            out.push(("negative", Some(Value::Integer(-1)), true));
            out.push(("huge", Some(Value::Integer(i64::MAX)), false));
            out.push(("u32max", Some(Value::Integer(u32::MAX as i64)), false));
            out.push(("string", s("x"), true));
            out.push(("nan", Some(Value::Float(f64::NAN)), true));
            out.push(("bool", Some(Value::Boolean(true)), true));
        }
        Value::Float(_) => {
            out.push(("zero", Some(Value::Float(0.0)), false));
            out.push(("negative", Some(Value::Float(-1.0)), false));
            out.push(("nan", Some(Value::Float(f64::NAN)), false));
            out.push(("inf", Some(Value::Float(f64::INFINITY)), false));
            out.push(("huge", Some(Value::Float(1e308)), false));
            out.push(("string", s("x"), true));
        }
        Value::Boolean(_) => {
            out.push(("string", s("yes"), true));
            out.push(("integer", Some(Value::Integer(1)), true));
        }
        Value::Array(items) => {
            out.push(("empty", Some(Value::Array(vec![])), false));
            out.push(("string", s("x"), true));
            if let Some(first) = items.first() {
                let mut bad = items.clone();
                bad[0] = match first {
                    Value::String(_) => Value::Integer(-1),
                    _ => Value::String("x".into()),
                };
                out.push(("element", Some(Value::Array(bad)), true));
                let mut many = items.clone();
                while many.len() < 10_000 {
                    many.push(first.clone());
                }
                out.push(("many", Some(Value::Array(many)), false));
            }
        }
        Value::Datetime(_) | Value::Table(_) => {}
    }
    out
}

/// Every generated case of one base.
fn generated(base: &str) -> Vec<Case> {
    let (text, short) = base_text(base);
    let doc: Table = text.parse().unwrap();
    let mut out = Vec::new();
    let mut all = Vec::new();
    leaves(&doc, &mut Vec::new(), &mut all);
    for (path, v) in &all {
        let field = field_of(path);
        for (what, value, must_refuse) in mutations_of(v) {
            let doc = mutated(&doc, path, value);
            let expect = match must_refuse {
                true => Expect::Refused(field.clone()),
                false => Expect::Either(field.clone()),
            };
            out.push(Case {
                id: format!("{short}:{field}:{what}"),
                text: toml::to_string(&doc).unwrap(),
                expect,
            });
        }
    }
    let mut ts = Vec::new();
    tables(&doc, &mut Vec::new(), &mut ts);
    for path in ts {
        let mut doc = doc.clone();
        let mut key = path.clone();
        key.push(Seg::Key("hostile_unknown".into()));
        let field = field_of(&key);
        if path.is_empty() {
            doc.insert("hostile_unknown".into(), Value::Integer(1));
        } else {
            doc = mutated(&doc, &key, Some(Value::Integer(1)));
        }
        out.push(Case {
            id: format!("{short}:{field}:unknown"),
            text: toml::to_string(&doc).unwrap(),
            expect: Expect::Refused(field),
        });
    }
    out
}

/// Whether `field` is `want` or a field inside it.
fn within(field: &str, want: &str) -> bool {
    field == want || field.starts_with(&format!("{want}.")) || field.starts_with(&format!("{want}["))
}

/// The field an error names (`error: FILE: field `F`: ...`), or "" for a whole-file error.
fn named_field(stderr: &str) -> String {
    let Some(rest) = stderr.split_once(": field `").map(|x| x.1) else {
        return String::new();
    };
    rest.split_once('`').map_or(String::new(), |x| x.0.to_string())
}

/// Run `mpsched ARGS` in `dir` under the memory and time caps; standard error to `/dev/full`
/// where asked. Its output goes to files beside `dir` (a pipe nobody reads while it runs would
/// stop a process that prints more than the pipe holds). None when it ran past the time cap
/// (it is killed).
fn capped(dir: &Path, args: &[String], stderr_full: bool) -> Option<(Output, Duration)> {
    let (out_path, err_path) = (dir.with_extension("stdout"), dir.with_extension("stderr"));
    let file = |p: &Path| Stdio::from(std::fs::File::create(p).unwrap());
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_CAP_KIB}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_mpsched"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(file(&out_path))
        .stderr(match stderr_full {
            true => Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap()),
            false => file(&err_path),
        });
    let t0 = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > TIME_CAP {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = t0.elapsed();
    let read = |p: &Path| std::fs::read(p).unwrap_or_default();
    let output = Output {
        status,
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    let _ = (std::fs::remove_file(out_path), std::fs::remove_file(err_path));
    Some((output, took))
}

/// What is wrong with how a case ended, if anything: the exit code, the field, a crash, a hang,
/// or a file written outside `out/` of its folder.
fn judge(dir: &Path, file: &str, id: &str, ran: Option<(Output, Duration)>, expect: &Expect) -> Option<String> {
    let Some((o, _)) = ran else {
        return Some(format!("ran past the time cap of {TIME_CAP:?}"));
    };
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if err.contains("internal error") || err.contains("panicked") || err.contains("memory allocation") {
        return Some(format!("crashed: {err}"));
    }
    let stray: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != file && n != "out")
        .collect();
    if !stray.is_empty() {
        return Some(format!("wrote outside out/: {stray:?}"));
    }
    let code = o.status.code();
    let field = named_field(&err);
    let ok = match (expect, code) {
        (Expect::Refused(want), Some(2)) | (Expect::Either(want), Some(2)) => {
            within(&field, want)
                || is_reference_error(&err, expect)
                || missing_key_named(&err, &field, want)
                || sibling_of_removed(id, &field, want)
                || bound_of_the_whole(expect, &field)
                || REFUSED_ELSEWHERE.iter().any(|&(i, f, _)| i == id && f == field)
        }
        (Expect::Either(_), Some(0)) => true,
        _ => false,
    };
    // A refusal names the file it refuses.
    let names_file = code != Some(2) || err.contains(file);
    match ok && names_file {
        true => None,
        false => Some(format!(
            "expected {expect:?}, got exit {code:?} at field `{field}`: {}",
            err.trim()
        )),
    }
}

/// A renamed node, path, flow or link breaks the entries that name it: refused where it is
/// named, which is right.
fn is_reference_error(err: &str, expect: &Expect) -> bool {
    let Expect::Either(want) = expect else { return false };
    want.ends_with(".name")
        && [
            "no node named",
            "no path named",
            "no flow named",
            "no link named",
            "no split named",
            "no variant named",
        ]
        .iter()
        .any(|s| err.contains(s))
}

/// A key removed makes its table's other keys wrong (no `protocol`: a UDP flow, which needs a
/// `rate`): refused at a key of the same table, which is right.
fn sibling_of_removed(id: &str, field: &str, want: &str) -> bool {
    let parent = |f: &str| f.rsplit_once('.').map_or(String::new(), |x| x.0.to_string());
    id.ends_with(":missing") && !field.is_empty() && parent(field) == parent(want)
}

/// A value legal on its own that takes a bound on the whole past its limit (10 000 seeds: too
/// many sweep points) is refused at the table that holds the bound.
fn bound_of_the_whole(expect: &Expect, field: &str) -> bool {
    let Expect::Either(want) = expect else { return false };
    !field.is_empty() && want.starts_with(&format!("{field}."))
}

/// A required key removed: serde names the table that lacks it, and the key in its message.
fn missing_key_named(err: &str, field: &str, want: &str) -> bool {
    let key = want.rsplit(['.', ']']).next().unwrap_or(want);
    want.starts_with(field) && err.contains(&format!("missing field `{key}`"))
}

/// Run `cases` (two at a time: the machine has two cores) and return the failures.
fn run_cases(what: &str, cases: Vec<Case>, args_of: impl Fn(&str) -> Vec<String> + Sync) -> (usize, Vec<String>) {
    let root = std::env::temp_dir().join(format!("mpsched-hostile-{what}-{}", std::process::id()));
    let n = cases.len();
    let failures = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(c) = cases.get(i) else { break };
                let dir = root.join(format!("{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("case.toml"), &c.text).unwrap();
                let ran = capped(&dir, &args_of("case.toml"), false);
                if let Some(why) = judge(&dir, "case.toml", &c.id, ran, &c.expect) {
                    keep(&c.id, &c.text);
                    failures.lock().unwrap().push(format!("{}: {why}", c.id));
                }
                std::fs::remove_dir_all(&dir).ok();
            });
        }
    });
    std::fs::remove_dir_all(&root).ok();
    (n, failures.into_inner().unwrap())
}

/// Keep a failing case's scenario where `HOSTILE_KEEP` says.
fn keep(id: &str, text: &str) {
    if let Ok(dir) = std::env::var("HOSTILE_KEEP") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            Path::new(&dir).join(format!("{}.toml", id.replace(['/', ':'], "_"))),
            text,
        );
    }
}

fn report(what: &str, n: usize, failures: &[String], t0: Instant) {
    eprintln!(
        "{what}: {n} cases in {:.1} s, {} failed",
        t0.elapsed().as_secs_f64(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {n} {what} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every key of every base, broken every way its type allows, validated with `mpsched check`.
#[test]
fn every_key_broken_every_way_is_refused_at_its_field() {
    let t0 = Instant::now();
    let cases: Vec<Case> = BASES.iter().flat_map(|b| generated(b)).collect();
    let (n, failures) = run_cases("check", cases, |f| vec!["check".into(), f.into()]);
    report("generated", n, &failures, t0);
}

/// The mutations `check` accepts, run for a short while on the simulator: a value the
/// validator lets through must not crash, hang or take the memory cap at run time.
#[test]
fn accepted_mutations_run_without_crashing() {
    let t0 = Instant::now();
    let cases: Vec<Case> = BASES
        .iter()
        .flat_map(|b| generated(b))
        .filter(|c| matches!(c.expect, Expect::Either(_)) && !c.id.ends_with(":missing"))
        .filter(|c| mpsched_scenario::Scenario::from_toml(&c.text, "case.toml").is_ok())
        .collect();
    let (n, failures) = run_cases("run", cases, |f| {
        [
            "run",
            f,
            "--duration",
            "0.02",
            "--repetitions",
            "1",
            "--no-plot",
            "--out",
            "out",
        ]
        .map(String::from)
        .to_vec()
    });
    report("accepted, run", n, &failures, t0);
}

/// The hand-written cases of tests/hostile/cases.toml.
#[test]
fn the_hand_written_cases_end_as_they_say() {
    let t0 = Instant::now();
    let text = std::fs::read_to_string(corpus_dir().join("cases.toml")).unwrap();
    let doc: Table = text.parse().unwrap();
    let cases = doc["case"].as_array().unwrap();
    let mut failures = Vec::new();
    let root = std::env::temp_dir().join(format!("mpsched-hostile-cases-{}", std::process::id()));
    for (i, c) in cases.iter().enumerate() {
        let c = c.as_table().unwrap();
        let name = c["name"].as_str().unwrap();
        let dir = root.join(format!("{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(why) = hand_written(&dir, c) {
            failures.push(format!("{name}: {why}"));
        }
        std::fs::remove_dir_all(&dir).ok();
    }
    std::fs::remove_dir_all(&root).ok();
    report("hand-written", cases.len(), &failures, t0);
}

/// A scenario too large to write out in `cases.toml` (issue 45: 63 MiB of `[],`), made from
/// the case's `generate` table: the output of `script` (a command run in the repository's
/// root), or `text` followed by `head`, `repeat` (with `{i}` its index) as many times as
/// `count` says or as fill `bytes` in all, and `tail`.
fn generated_text(text: String, g: &Table) -> String {
    let str_of = |k: &str| g.get(k).and_then(Value::as_str).unwrap_or("");
    if let Some(script) = g.get("script").and_then(Value::as_array) {
        let args: Vec<&str> = script.iter().map(|a| a.as_str().unwrap()).collect();
        let out = Command::new(args[0])
            .args(&args[1..])
            .current_dir(corpus_dir().join("../.."))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{script:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return String::from_utf8(out.stdout).unwrap();
    }
    let (repeat, tail) = (str_of("repeat"), str_of("tail"));
    let mut out = text + str_of("head");
    let count = g.get("count").and_then(Value::as_integer).map(|n| n as usize);
    let bytes = g.get("bytes").and_then(Value::as_integer).map_or(0, |n| n as usize);
    let numbered = repeat.contains("{i}");
    for i in 0..count.unwrap_or(usize::MAX) {
        let unit = match numbered {
            true => std::borrow::Cow::Owned(repeat.replace("{i}", &i.to_string())),
            false => std::borrow::Cow::Borrowed(repeat),
        };
        if count.is_none() && out.len() + unit.len() + tail.len() > bytes {
            break;
        }
        out.push_str(&unit);
    }
    out + tail
}

/// One hand-written case: its scenario (a base with keys set, or text), its files, its
/// command, and what must come of it.
fn hand_written(dir: &Path, c: &Table) -> Option<String> {
    let str_of = |k: &str| c.get(k).and_then(Value::as_str);
    let mut text = match (str_of("base"), str_of("scenario")) {
        (Some(base), _) => base_text(base).0,
        (None, Some(t)) => t.to_string(),
        (None, None) => String::new(),
    };
    if let Some(set) = c.get("set").and_then(Value::as_table) {
        let mut doc: Table = text.parse().unwrap();
        for (k, v) in set {
            let o = Override::parse(k, &v.to_string()).unwrap();
            overrides::apply(&mut doc, &o).unwrap();
        }
        text = toml::to_string(&doc).unwrap();
    }
    if let Some(g) = c.get("generate").and_then(Value::as_table) {
        text = generated_text(text, g);
    }
    if !text.is_empty() {
        std::fs::write(dir.join("case.toml"), &text).unwrap();
    }
    for (name, content) in c.get("files").and_then(Value::as_table).into_iter().flatten() {
        std::fs::write(dir.join(name), content.as_str().unwrap()).unwrap();
    }
    if let Some(fifo) = str_of("fifo") {
        Command::new("mkfifo").arg(dir.join(fifo)).status().unwrap();
    }
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().replace("{dir}", dir.to_str().unwrap()))
        .collect();
    let stderr_full = c.get("stderr_full").and_then(Value::as_bool).unwrap_or(false);
    let ran = capped(dir, &args, stderr_full);
    let Some((o, took)) = &ran else {
        return Some(format!("ran past the time cap of {TIME_CAP:?}"));
    };
    let err = String::from_utf8_lossy(&o.stderr);
    let want_exit = c["exit"].as_integer().unwrap() as i32;
    if o.status.code() != Some(want_exit) {
        return Some(format!(
            "exit {:?}, expected {want_exit}: {}",
            o.status.code(),
            err.trim()
        ));
    }
    if let Some(f) = str_of("field") {
        if named_field(&err) != f {
            return Some(format!("field `{}`, expected `{f}`: {}", named_field(&err), err.trim()));
        }
    }
    if let Some(says) = str_of("says") {
        let all = format!("{}{err}", String::from_utf8_lossy(&o.stdout));
        if !all.contains(says) {
            return Some(format!("does not say `{says}`: {}", all.trim()));
        }
    }
    if let Some(max) = c.get("within_s").and_then(Value::as_float) {
        if took.as_secs_f64() > max {
            return Some(format!("took {took:?}, at most {max} s"));
        }
    }
    None
}
