//! Compile the eBPF programs with clang: bpf/mpsched.bpf.c, bpf/host_class.bpf.c and every program's
//! `crates/programs/src/<name>/<stem>.bpf.c` (each to `<stem>.bpf.o` in OUT_DIR, with `bpf/` and
//! the program's folder on the include path), and turn bpf/mpsched.h's size constants (and a
//! program header's own, `<STEM>_*` of `<stem>.h`) into Rust constants so that
//! crates/netns/src/layout.rs (and a program's layout module) can check its structs against
//! them.

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "defines.rs"]
mod defines;

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let bpf_dir = manifest.join("../../bpf").canonicalize().expect("bpf/ next to crates/");
    let programs_dir = manifest
        .join("../programs/src")
        .canonicalize()
        .expect("crates/programs/src next to crates/netns");
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=defines.rs");
    println!("cargo:rerun-if-changed={}", bpf_dir.display());
    println!("cargo:rerun-if-changed={}", programs_dir.display());
    for e in fs::read_dir(&bpf_dir).unwrap().flatten() {
        println!("cargo:rerun-if-changed={}", e.path().display());
    }

    compile(
        &bpf_dir.join("mpsched.bpf.c"),
        &[&bpf_dir],
        "generic",
        &out_dir.join("mpsched.bpf.o"),
    );
    compile(
        &bpf_dir.join("host_class.bpf.c"),
        &[&bpf_dir],
        "generic",
        &out_dir.join("host_class.bpf.o"),
    );
    let mut sources = Vec::new();
    let mut headers = Vec::new();
    for dir in fs::read_dir(&programs_dir).unwrap().flatten().map(|e| e.path()) {
        if !dir.is_dir() {
            continue;
        }
        println!("cargo:rerun-if-changed={}", dir.display());
        for f in fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".c") || name.ends_with(".h") {
                println!("cargo:rerun-if-changed={}", f.display());
            }
            if let Some(stem) = name.strip_suffix(".bpf.c") {
                sources.push((stem.to_string(), f.clone(), dir.clone()));
            }
            if let Some(stem) = name.strip_suffix(".h") {
                headers.push((stem.to_string(), f.clone()));
            }
        }
    }
    sources.sort();
    for (stem, src, dir) in &sources {
        assert_ne!(
            stem,
            "mpsched",
            "{}: the stem `mpsched` is bpf/mpsched.bpf.c's",
            src.display()
        );
        let isa = if ISA_V3.contains(&stem.as_str()) {
            "v3"
        } else {
            "generic"
        };
        compile(src, &[&bpf_dir, dir], isa, &out_dir.join(format!("{stem}.bpf.o")));
    }

    // A program's header `<stem>.h`: its `<STEM>_*` constants as `<stem>_h.rs` (the layouts'
    // sizes and offsets its Rust side checks at compile time; empty for a header that names
    // its constants otherwise).
    headers.sort();
    for (stem, h) in &headers {
        let text = fs::read_to_string(h).unwrap();
        let prefix = format!("{}_", stem.to_uppercase());
        let consts = defines::prefixed_constants(&text, &prefix);
        let source = format!("crates/programs/src/{stem}/{stem}.h");
        fs::write(
            out_dir.join(format!("{stem}_h.rs")),
            defines::rust_source_prefixed(&consts, &source, &prefix),
        )
        .unwrap();
    }

    let header = bpf_dir.join("mpsched.h");
    let text = fs::read_to_string(&header).unwrap();
    let consts = defines::rust_source(&defines::mps_constants(&text), "bpf/mpsched.h");
    fs::write(out_dir.join("mpsched_h.rs"), consts).unwrap();
}

/// The programs compiled for BPF ISA v3 (`-mcpu=v3`, kernel 5.1; its atomic fetch-and-add
/// returns the old value, kernel 5.12): the ATSSS UPF numbers packets without a lock. The others
/// stay on clang's default, so that their instructions (and measured figures) do not move.
const ISA_V3: &[&str] = &["atsss"];

/// `clang -O2 -g -Wall -Werror -target bpf -mcpu=<isa>` of `src` into `obj`.
fn compile(src: &Path, includes: &[&Path], isa: &str, obj: &Path) {
    let clang = env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let multiarch = Command::new("gcc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-linux-gnu", env::var("CARGO_CFG_TARGET_ARCH").unwrap()));
    let mut cmd = Command::new(&clang);
    cmd.args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-mcpu={isa}"))
        .arg(format!("-I/usr/include/{multiarch}"));
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    let status = cmd.arg("-c").arg(src).arg("-o").arg(obj).status().unwrap_or_else(|e| {
        panic!(
            "cannot run `{clang}` to compile {} ({e}); install clang and libbpf-dev (scripts/install-deps.sh)",
            src.display()
        )
    });
    assert!(status.success(), "clang failed to compile {}", src.display());
}
