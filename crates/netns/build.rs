//! Compile bpf/mpsched.bpf.c with clang, and turn the header's size constants into Rust
//! constants so that crates/netns/src/layout.rs can check its structs against them.

use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

#[path = "defines.rs"]
mod defines;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let bpf_dir = manifest.join("../../bpf").canonicalize().expect("bpf/ next to crates/");
    let src = bpf_dir.join("mpsched.bpf.c");
    let header = bpf_dir.join("mpsched.h");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed={}", header.display());
    println!("cargo:rerun-if-changed=defines.rs");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let obj = out_dir.join("mpsched.bpf.o");

    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let multiarch = Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-linux-gnu", env::var("CARGO_CFG_TARGET_ARCH").unwrap()));
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I/usr/include/{multiarch}"))
        .arg(format!("-I{}", bpf_dir.display()))
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run `{clang}` to compile bpf/mpsched.bpf.c ({e}); install clang and libbpf-dev (scripts/install-deps.sh)")
        });
    assert!(status.success(), "clang failed to compile bpf/mpsched.bpf.c");

    let text = fs::read_to_string(&header).unwrap();
    let consts = defines::rust_source(&defines::mps_constants(&text), "bpf/mpsched.h");
    fs::write(out_dir.join("mpsched_h.rs"), consts).unwrap();
}
