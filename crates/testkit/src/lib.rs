//! # mpsched-testkit: tests that need what a machine may lack
//!
//! The standard test harness cannot skip a test at run time: a test that returns early because
//! tshark, root or kernel MPTCP is missing counts as passed, and says nothing. Test binaries
//! whose tests need such a thing use [`run_or_skip`] as their `main` (`harness = false`): where
//! the machine lacks it, the tests are reported as ignored with the reason, and under `CI=true`
//! each of them fails instead, since CI installs everything the suite needs.

#![warn(missing_docs)]

use libtest_mimic::{Arguments, Conclusion, Failed, Trial};
use std::process::Command;

/// Whether this run is CI's (`CI=true`), where nothing may be skipped.
pub fn under_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Run `tests`, or report them ignored because of `missing` (what this machine lacks), unless
/// `CI=true`, where a missing requirement fails each of them. `what` names them ("kernel").
pub fn run_or_skip(tests: &[(&'static str, fn())], missing: Option<String>, what: &str) -> Conclusion {
    let args = Arguments::from_args();
    let ci = under_ci();
    if let (Some(why), false) = (&missing, ci) {
        eprintln!("{} {what} tests skipped (reported as ignored): {why}", tests.len());
    }
    let trials = tests
        .iter()
        .map(|&(name, f)| {
            let ignored = missing.is_some() && !ci;
            let missing = missing.clone();
            let what = what.to_string();
            Trial::test(name, move || {
                if let Some(why) = missing {
                    return Err(Failed::from(format!(
                        "CI=true: this {what} test must run, not skip: {why}"
                    )));
                }
                f();
                Ok(())
            })
            .with_ignored_flag(ignored)
        })
        .collect();
    libtest_mimic::run(&args, trials)
}

/// Why `tool` cannot be used here (it is not on `PATH`, or `tool ARGS` fails), if it cannot.
pub fn missing_tool(tool: &str, args: &[&str]) -> Option<String> {
    let ran = Command::new(tool).args(args).output();
    match ran {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!("`{tool} {}` failed ({})", args.join(" "), o.status)),
        Err(e) => Some(format!("{tool} not found ({e}); scripts/install-deps.sh installs it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_that_runs_is_not_missing_and_one_that_does_not_exist_is() {
        assert_eq!(missing_tool("true", &[]), None);
        assert!(missing_tool("false", &[]).unwrap().contains("failed"));
        assert!(missing_tool("mpsched-no-such-tool", &["--version"])
            .unwrap()
            .contains("not found"));
    }
}
