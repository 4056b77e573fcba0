//! LetFlow's eBPF program against its conformance vectors, with `BPF_PROG_TEST_RUN`.
//!
//! The object is compiled here as `crates/netns/build.rs` compiles `bpf/mpsched.bpf.c`
//! (`clang -O2 -g -Wall -Werror -target bpf`), loaded with libbpf (the verifier passes it, with
//! the flowlet table at its largest, 1 Mi slots, and at each set's size) and run on every step
//! of `tests/vectors/letflow-*.json` in a network namespace of its own with a veth per port.
//! What it did is read as the kernel backend's vector runner reads it: the return code, the
//! frame it left (its destination MAC names the port), and the maps (a drop's reason is the
//! counter that moved). Root only: without it the test says so and passes, as the CLI's
//! kernel tests are ignored; under `CI=true` it fails instead.

use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, ProgramInput};
use mpsched_core::packet::PortId;
use mpsched_core::vectors::{compare, from_hex, Observed, StepResult, VectorSet, OWN_MAC_NODE, PEER_MAC_NODE};
use mpsched_core::wire::{internet_checksum, mac_for, parse_frame};
use mpsched_programs::vectors::program_of;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;
/// `sizeof(struct __sk_buff)`; `ifindex` is at byte 40.
const SKB_CTX_BYTES: usize = 192;
const SKB_IFINDEX_AT: usize = 40;
const LF_F_TEST_CLOCK: u32 = 1;
const LF_F_TEST_DRAWS: u32 = 2;
const LF_TEST_DRAWS: u32 = 64;
/// `enum lf_counter` in letflow.h, named as the Rust runner names the registers.
const COUNTERS: [&str; 9] = [
    "counter.letflow.new_flowlets",
    "counter.letflow.continued",
    "counter.letflow.collisions",
    "counter.no_route",
    "counter.ttl_expired",
    "counter.local",
    "counter.not_ipv4",
    "counter.malformed",
    "counter.redirect_failed",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn skip(why: &str) -> bool {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    true
}

/// Compile letflow.bpf.c as crates/netns/build.rs compiles mpsched.bpf.c.
fn compile(out: &Path) {
    let multiarch = Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-linux-gnu", std::env::consts::ARCH));
    let status = Command::new(std::env::var("CLANG").unwrap_or_else(|_| "clang".into()))
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I/usr/include/{multiarch}"))
        .arg(format!("-I{}", root().join("bpf").display()))
        .arg("-c")
        .arg(root().join("crates/programs/src/letflow/letflow.bpf.c"))
        .arg("-o")
        .arg(out)
        .status()
        .expect("clang");
    assert!(status.success(), "clang failed on letflow.bpf.c");
}

fn load(obj: &Path, table_entries: u32) -> Object {
    let mut open = ObjectBuilder::default().open_file(obj).expect("open letflow.bpf.o");
    for mut m in open.maps_mut() {
        if m.name() == "flowlets" {
            m.set_max_entries(table_entries).unwrap();
        }
    }
    open.load().expect("load letflow.bpf.o (verifier)")
}

fn update(obj: &Object, map: &str, key: &[u8], value: &[u8]) {
    let m = obj.maps().find(|m| m.name() == map).unwrap();
    m.update(key, value, MapFlags::ANY)
        .unwrap_or_else(|e| panic!("update {map}: {e}"));
}

fn percpu_sum(obj: &Object, map: &str, key: u32, words: usize) -> Vec<u64> {
    let m = obj.maps().find(|m| m.name() == map).unwrap();
    let mut total = vec![0u64; words];
    for cpu in m
        .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
        .unwrap()
        .unwrap_or_default()
    {
        for (i, t) in total.iter_mut().enumerate() {
            *t += u64::from_ne_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap());
        }
    }
    total
}

/// `struct lf_node`.
fn node_bytes(own_ip: u32, flags: u32, seed: u32, mask: u32, gap_ns: u64, clock_ns: u64, draws: u32) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [own_ip, flags, seed, mask] {
        v.extend_from_slice(&w.to_ne_bytes());
    }
    v.extend_from_slice(&gap_ns.to_ne_bytes());
    v.extend_from_slice(&clock_ns.to_ne_bytes());
    v.extend_from_slice(&draws.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    assert_eq!(v.len(), 40);
    v
}

/// A network namespace for this thread, with veth ports p0.. (peers q0..).
fn enter_netns(n_ports: usize) -> Vec<u32> {
    // SAFETY: unshare affects only the calling thread's namespaces.
    assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "unshare(CLONE_NEWNET)");
    let ip = |args: &[&str]| {
        let ok = Command::new("ip").args(args).status().expect("ip").success();
        assert!(ok, "ip {args:?}");
    };
    (0..n_ports)
        .map(|p| {
            let (a, b) = (format!("p{p}"), format!("q{p}"));
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b]);
            ip(&["link", "set", &a, "up"]);
            ip(&["link", "set", &b, "up"]);
            let name = std::ffi::CString::new(a).unwrap();
            // SAFETY: a valid C string.
            let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
            assert!(i > 0 && i < 256, "ifindex {i}");
            i
        })
        .collect()
}

fn snapshot(obj: &Object, n_ports: usize) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (i, name) in COUNTERS.iter().enumerate() {
        let v = percpu_sum(obj, "counters", i as u32, 1)[0];
        if *name != "counter.redirect_failed" || v != 0 {
            out.insert(name.to_string(), v);
        }
    }
    for p in 0..n_ports {
        let s = percpu_sum(obj, "port_stats", p as u32, 4);
        out.insert(format!("port{p}.rx_pkts"), s[0]);
        out.insert(format!("port{p}.tx_pkts"), s[2]);
    }
    out
}

fn run_set(obj_path: &Path, set: &VectorSet, ifindexes: &[u32]) -> (BTreeMap<String, u64>, Vec<StepResult>) {
    let (_, params) = program_of(set).unwrap();
    let entries = params.get("table_entries") as u32;
    let gap_ns = params.get("flowlet_gap") / 1000;
    let obj = load(obj_path, entries);
    let cfg = &set.config;
    let mut flags = LF_F_TEST_CLOCK;
    if !set.rs_raw_draws.is_empty() {
        flags |= LF_F_TEST_DRAWS;
    }
    let node = |clock| {
        node_bytes(
            cfg.own_ip,
            flags,
            cfg.hash_seed,
            entries - 1,
            gap_ns,
            clock,
            set.rs_raw_draws.len() as u32,
        )
    };
    update(&obj, "node", &0u32.to_ne_bytes(), &node(0));
    for (i, d) in set.rs_raw_draws.iter().enumerate() {
        update(&obj, "test_draws", &(i as u32).to_ne_bytes(), &d.to_ne_bytes());
    }
    update(&obj, "test_draws", &LF_TEST_DRAWS.to_ne_bytes(), &0u32.to_ne_bytes());
    for (p, &ifindex) in ifindexes.iter().enumerate() {
        let mut v = ifindex.to_ne_bytes().to_vec();
        v.extend_from_slice(&mac_for(OWN_MAC_NODE, p as PortId));
        v.extend_from_slice(&mac_for(PEER_MAC_NODE, p as PortId));
        update(&obj, "ports", &(p as u32).to_ne_bytes(), &v);
        update(
            &obj,
            "ifindex_port",
            &ifindex.to_ne_bytes(),
            &(p as u32 + 1).to_ne_bytes(),
        );
    }
    for r in &cfg.routes {
        let mut k = u32::from(r.len).to_ne_bytes().to_vec();
        k.extend_from_slice(&r.prefix.to_be_bytes());
        update(&obj, "routes", &k, &u32::from(r.port).to_ne_bytes());
    }
    for (g, ports) in cfg.ecmp_groups.iter().enumerate() {
        let mut v = (ports.len() as u32).to_ne_bytes().to_vec();
        for i in 0..16 {
            v.extend_from_slice(&ports.get(i).copied().unwrap_or(0).to_ne_bytes());
        }
        update(&obj, "ecmp", &(g as u32).to_ne_bytes(), &v);
    }
    let prog = obj.progs_mut().find(|p| p.name() == "lf_ingress").unwrap();
    let initial = snapshot(&obj, set.n_ports);
    let mut prev = initial.clone();
    let mut results = Vec::new();
    for (i, st) in set.steps.iter().enumerate() {
        update(&obj, "node", &0u32.to_ne_bytes(), &node(st.time_ns));
        let frame = from_hex(&st.frame).unwrap();
        let mut ctx = vec![0u8; SKB_CTX_BYTES];
        ctx[SKB_IFINDEX_AT..SKB_IFINDEX_AT + 4].copy_from_slice(&ifindexes[usize::from(st.port)].to_ne_bytes());
        let mut out = vec![0u8; 4096];
        let res = prog
            .test_run(ProgramInput {
                context_in: Some(&mut ctx),
                data_in: Some(&frame),
                data_out: Some(&mut out),
                repeat: 1,
                ..Default::default()
            })
            .unwrap_or_else(|e| panic!("{} step {i}: BPF_PROG_TEST_RUN: {e}", set.name));
        let out_frame = res.data.map(|d| d.to_vec()).unwrap_or_default();
        let regs = snapshot(&obj, set.n_ports);
        let delta = |k: &str| regs.get(k).copied().unwrap_or(0) - prev.get(k).copied().unwrap_or(0);
        let mut obs = Observed {
            action: String::new(),
            port: None,
            drop_reason: None,
            path: None,
            ttl: None,
            ecn: None,
            emit: None,
        };
        match res.return_value {
            TC_ACT_REDIRECT => {
                let ihl = usize::from(out_frame[14] & 0x0f) * 4;
                assert_eq!(
                    internet_checksum(&out_frame[14..14 + ihl], 0),
                    0,
                    "{} step {i}: checksum",
                    set.name
                );
                let dst: [u8; 6] = out_frame[..6].try_into().unwrap();
                let p = u16::from_be_bytes([dst[4], dst[5]]);
                assert_eq!(mac_for(PEER_MAC_NODE, p), dst, "{} step {i}: destination MAC", set.name);
                assert_eq!(
                    mac_for(OWN_MAC_NODE, p),
                    out_frame[6..12],
                    "{} step {i}: source MAC",
                    set.name
                );
                let m = parse_frame(&out_frame, cfg.feedback_port).unwrap();
                obs.action = "redirect".into();
                obs.port = Some(p);
                obs.ttl = Some(m.ttl);
                obs.ecn = Some(m.ecn);
            }
            TC_ACT_SHOT => {
                obs.action = "drop".into();
                obs.drop_reason = [
                    ("counter.no_route", "no_route"),
                    ("counter.ttl_expired", "ttl_expired"),
                    ("counter.malformed", "malformed"),
                ]
                .iter()
                .find(|(k, _)| delta(k) > 0)
                .map(|(_, n)| n.to_string());
            }
            TC_ACT_OK => obs.action = "to_stack".into(),
            r => panic!("{} step {i}: return code {r}", set.name),
        }
        prev = regs.clone();
        results.push(StepResult {
            observed: obs,
            registers: regs,
        });
    }
    (initial, results)
}

#[test]
fn letflow_ebpf_agrees_with_its_vectors() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 && skip("BPF_PROG_TEST_RUN needs root") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("mpsched-letflow-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("letflow.bpf.o");
    compile(&obj);
    let mut sets: Vec<VectorSet> = std::fs::read_dir(root().join("tests/vectors"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("letflow-"))
        .map(|p| serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap())
        .collect();
    sets.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(sets.len() >= 3, "the letflow sets: {}", sets.len());
    let obj2 = obj.clone();
    let errs = std::thread::spawn(move || {
        let ifindexes = enter_netns(5);
        // The verifier passes the program with the table at its largest.
        drop(load(&obj2, 1 << 20));
        let mut errs = Vec::new();
        for set in &sets {
            assert!(set.n_ports <= ifindexes.len());
            let (init, res) = run_set(&obj2, set, &ifindexes[..set.n_ports]);
            errs.extend(compare(set, &init, &res));
        }
        errs
    })
    .join()
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}
