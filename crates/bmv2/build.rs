//! Turn the `MPS_*` constants of p4/include/layout.p4 into Rust constants in OUT_DIR (for
//! crates/bmv2/src/layout.rs, as crates/netns/build.rs does for bpf/mpsched.h), and compile
//! p4/mpsched.p4 with p4c-bm2-ss when the P4 toolchain is present (on PATH, in
//! `$MPSCHED_P4_PREFIX/bin` or in /opt/p4/bin). Without the toolchain the crate still builds:
//! the program is left out, and every BMv2 entry point says how to install the toolchain.

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
    let out = out_dir.join("mpsched.json");
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
    let Some(p4c) = find("p4c-bm2-ss") else {
        println!("cargo:warning=p4c-bm2-ss not found: the BMv2 program is left out (scripts/install-deps.sh installs the P4 toolchain)");
        std::fs::write(&out, "").unwrap();
        return;
    };
    compile(&p4c, &p4_dir.join("mpsched.p4"), &out);
}

fn compile(p4c: &Path, src: &Path, out: &Path) {
    let mut cmd = Command::new(p4c);
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
