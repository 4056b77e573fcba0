//! Turn the `MPS_*` constants of p4/include/layout.p4 into Rust constants in OUT_DIR (for
//! crates/bmv2/src/layout.rs, as crates/netns/build.rs does for bpf/mpsched.h), and compile
//! p4/mpsched.p4 and every program's `crates/programs/src/<name>/<stem>.p4` (each to
//! `<stem>.json` in OUT_DIR, with `p4/` on the include path) with p4c-bm2-ss when the P4
//! toolchain is present (on PATH, in `$MPSCHED_P4_PREFIX/bin` or in /opt/p4/bin); `p4_programs.rs`
//! lists them by stem for crates/bmv2/src/toolchain.rs. Without the toolchain the crate still
//! builds: the programs are left out, and every BMv2 entry point says how to install it.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../netns/defines.rs"]
mod defines;

/// Where the toolchain is looked for, in order (crates/bmv2/src/toolchain.rs searches the same).
fn find(tool: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(prefix) = env::var_os("MPSCHED_P4_PREFIX") {
        dirs.push(PathBuf::from(prefix).join("bin"));
    }
    if let Some(path) = env::var_os("PATH") {
        dirs.extend(env::split_paths(&path));
    }
    dirs.push(PathBuf::from("/opt/p4/bin"));
    dirs.into_iter().map(|d| d.join(tool)).find(|p| p.is_file())
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let p4_dir = manifest.join("../../p4").canonicalize().expect("p4/ next to crates/");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let layout = p4_dir.join("include/layout.p4");
    let text = std::fs::read_to_string(&layout).expect("p4/include/layout.p4");
    let consts = defines::rust_source(&defines::mps_constants(&text), "p4/include/layout.p4");
    std::fs::write(out_dir.join("layout_p4.rs"), consts).unwrap();
    println!("cargo:rerun-if-changed=../netns/defines.rs");
    println!("cargo:rerun-if-changed={}", p4_dir.display());
    for f in ["mpsched.p4", "include"] {
        println!("cargo:rerun-if-changed={}", p4_dir.join(f).display());
    }
    if let Ok(entries) = std::fs::read_dir(p4_dir.join("include")) {
        for e in entries.flatten() {
            println!("cargo:rerun-if-changed={}", e.path().display());
        }
    }
    println!("cargo:rerun-if-env-changed=MPSCHED_P4_PREFIX");
    println!("cargo:rerun-if-changed=/opt/p4/bin/p4c-bm2-ss");

    // Every program's own P4 program, by stem.
    let programs_dir = manifest
        .join("../programs/src")
        .canonicalize()
        .expect("crates/programs/src next to crates/bmv2");
    println!("cargo:rerun-if-changed={}", programs_dir.display());
    let mut sources = vec![("mpsched".to_string(), p4_dir.join("mpsched.p4"))];
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&programs_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            if f.extension().is_some_and(|x| x == "p4") {
                println!("cargo:rerun-if-changed={}", f.display());
                let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
                assert_ne!(
                    stem,
                    "mpsched",
                    "{}: the stem `mpsched` is p4/mpsched.p4's",
                    f.display()
                );
                sources.push((stem, f));
            }
        }
    }
    let mut list = String::from(
        "/// Every compiled P4 program, by stem: its BMv2 JSON (empty without the toolchain).\n\
         pub static P4_PROGRAMS: &[(&str, &str)] = &[\n",
    );
    for (stem, _) in &sources {
        let json = out_dir.join(format!("{stem}.json"));
        list.push_str(&format!(
            "    ({stem:?}, include_str!({:?})),\n",
            json.display().to_string()
        ));
    }
    list.push_str("];\n");
    std::fs::write(out_dir.join("p4_programs.rs"), list).unwrap();

    let Some(p4c) = find("p4c-bm2-ss") else {
        println!("cargo:warning=p4c-bm2-ss not found: the BMv2 programs are left out (scripts/install-deps.sh installs the P4 toolchain)");
        for (stem, _) in &sources {
            std::fs::write(out_dir.join(format!("{stem}.json")), "").unwrap();
        }
        return;
    };
    for (stem, src) in &sources {
        compile(&p4c, src, &p4_dir, &out_dir.join(format!("{stem}.json")));
    }
}

fn compile(p4c: &Path, src: &Path, p4_dir: &Path, out: &Path) {
    let mut cmd = Command::new(p4c);
    cmd.arg("-I").arg(p4_dir);
    // p4c finds core.p4 and v1model.p4 beside itself or in its install tree.
    if let Some(prefix) = p4c.parent().and_then(Path::parent) {
        let include = prefix.join("share/p4c/p4include");
        if include.is_dir() {
            cmd.arg("-I").arg(include);
        }
    }
    let output = cmd
        .arg("-o")
        .arg(out)
        .arg(src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} ({e})", p4c.display()));
    if !output.status.success() {
        panic!(
            "p4c-bm2-ss failed to compile {}:\n{}",
            src.display(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
