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

/// What the time-bounded fuzz tests share: their budget and seed from the environment
/// (`FUZZ_SECONDS`, `FUZZ_SEED`, for a long run or a replay) and a small deterministic source.
pub mod fuzz {
    use std::time::{Duration, Instant};

    /// A fuzz run: how long, from which seed, and the source drawing from it.
    pub struct Fuzz {
        /// Seconds it runs (`FUZZ_SECONDS`, else the test's default).
        pub seconds: u64,
        /// The seed (`FUZZ_SEED`, else the test's default): a failure replays from it.
        pub seed: u64,
        deadline: Instant,
        state: u64,
    }

    impl Fuzz {
        /// A run of `FUZZ_SECONDS` (default `seconds`) from `FUZZ_SEED` (default `seed`).
        pub fn from_env(seconds: u64, seed: u64) -> Fuzz {
            let env = |k: &str, d: u64| std::env::var(k).ok().and_then(|s| s.parse().ok()).unwrap_or(d);
            let (seconds, seed) = (env("FUZZ_SECONDS", seconds), env("FUZZ_SEED", seed));
            Fuzz {
                seconds,
                seed,
                deadline: Instant::now() + Duration::from_secs(seconds),
                state: seed | 1,
            }
        }

        /// Whether the run has time left.
        pub fn going(&self) -> bool {
            Instant::now() < self.deadline
        }

        /// The next draw (xorshift64*: small, and the same on every machine).
        pub fn draw(&mut self) -> u64 {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        /// A draw below `n` (0 when `n` is 0).
        pub fn below(&mut self, n: usize) -> usize {
            (self.draw() % n.max(1) as u64) as usize
        }

        /// A fair coin.
        pub fn flip(&mut self) -> bool {
            self.draw() & 1 == 1
        }

        /// `make`'s value half of the time.
        pub fn maybe<T>(&mut self, make: impl FnOnce(&mut Fuzz) -> T) -> Option<T> {
            match self.flip() {
                true => Some(make(self)),
                false => None,
            }
        }
    }
}
