//! Finding BMv2 and the compiled program.
//!
//! The tools are looked for in `$MPSCHED_P4_PREFIX/bin`, then on `PATH`, then in `/opt/p4/bin`
//! (where `../shared/p4/build-toolchain.sh` and `scripts/install-deps.sh` put them); the build
//! script compiles `p4/mpsched.p4` and every program's P4 program with the tools it finds
//! in the same places.

use crate::Bmv2Error;
use std::path::PathBuf;

mod compiled {
    include!(concat!(env!("OUT_DIR"), "/p4_programs.rs"));
}

/// How to get the toolchain, for error messages.
pub const INSTALL_HINT: &str = "install BMv2 and p4c: `sudo scripts/install-deps.sh` builds them into /opt/p4 \
     from ../shared/p4 when that folder is present; otherwise use p4lang's packages or a source build \
     (https://github.com/p4lang/behavioral-model, https://github.com/p4lang/p4c), then rebuild mpsched";

/// The BMv2 executables.
#[derive(Clone, Debug)]
pub struct Toolchain {
    /// `simple_switch`.
    pub simple_switch: PathBuf,
    /// `simple_switch_CLI`.
    pub cli: PathBuf,
}

/// The first `tool` in the search order.
pub fn find_tool(tool: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(prefix) = std::env::var_os("MPSCHED_P4_PREFIX") {
        dirs.push(PathBuf::from(prefix).join("bin"));
    }
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.push(PathBuf::from("/opt/p4/bin"));
    dirs.into_iter().map(|d| d.join(tool)).find(|p| p.is_file())
}

/// BMv2's executables, or an error that says how to install them.
pub fn find() -> Result<Toolchain, Bmv2Error> {
    let missing = |t: &str| Bmv2Error::Missing(format!("{t} not found; {INSTALL_HINT}"));
    Ok(Toolchain {
        simple_switch: find_tool("simple_switch").ok_or_else(|| missing("simple_switch"))?,
        cli: find_tool("simple_switch_CLI").ok_or_else(|| missing("simple_switch_CLI"))?,
    })
}

/// The compiled `p4/mpsched.p4` (BMv2 JSON), or an error if this build has none.
pub fn program_json() -> Result<&'static str, Bmv2Error> {
    program_json_of("mpsched")
}

/// The compiled P4 program of stem `stem` (`mpsched`, `letflow`: `p4/mpsched.p4` or
/// `crates/programs/src/<name>/<stem>.p4`), or an error if this build has none.
pub fn program_json_of(stem: &str) -> Result<&'static str, Bmv2Error> {
    let Some(&(_, json)) = compiled::P4_PROGRAMS.iter().find(|(s, _)| *s == stem) else {
        return Err(Bmv2Error::Missing(format!("no P4 program `{stem}.p4` in this build")));
    };
    if json.is_empty() {
        return Err(Bmv2Error::Missing(format!(
            "this mpsched was built without p4c-bm2-ss, so it has no BMv2 program; {INSTALL_HINT}"
        )));
    }
    Ok(json)
}

/// Whether both the toolchain and the compiled program are here.
pub fn available() -> bool {
    find().is_ok() && program_json().is_ok()
}
