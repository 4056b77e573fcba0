//! The bounds on what a caller may ask of a run or a sweep, in one place for both doors: the
//! command line (`mpsched run`, `mpsched sweep`) and the Python package (`mpsched._native`
//! exposes them). A request past one is refused with the bound named, before anything is
//! allocated for it: each sizes memory (results kept per repetition, a file per point), so
//! past it the process would abort on an allocation rather than report.

pub use crate::{MAX_REPETITIONS, MAX_SWEEP_POINTS, MAX_TIME_PS};

/// Most seeds a sweep may list (or a range `1-N` give): as many as points, since every seed
/// is at least one point. Checked before the list is made, so that `1-99999999999` costs
/// nothing.
pub const MAX_SWEEP_SEEDS: usize = MAX_SWEEP_POINTS;

/// Highest seed a sweep's point may have: a point writes its seed into its text as
/// `scenario.seed`, and TOML integers are signed 64-bit.
pub const MAX_SWEEP_SEED: u64 = i64::MAX as u64;

/// Deepest nesting of lists and tables in a value set through the Python package
/// (`Scenario.set`): a value is converted and written back as TOML by recursion, and the TOML
/// parser reads no deeper than 80 levels, so a deeper value could not be read back where a
/// point is made again (a Ray worker). No scenario key needs more than a few.
pub const MAX_VALUE_DEPTH: usize = 32;

/// Most items (scalars, lists, tables, each counted once where it appears) in one value set
/// through the Python package: a list shared many times over (`b = [a] * 1000`, `c = [b] *
/// 1000`) is small in Python and a copy of every item in TOML, so that the count, not the
/// size Python holds, is what bounds the copy (about 100 MB at the bound).
pub const MAX_VALUE_ITEMS: usize = 1_000_000;

/// The points of a sweep of `values` values (0: no parameter), `variants` variants (0: the
/// scenario as written) and `seeds` seeds, or None past `usize` (beyond any bound).
pub fn sweep_points(values: usize, variants: usize, seeds: usize) -> Option<usize> {
    values.max(1).checked_mul(variants.max(1))?.checked_mul(seeds)
}

/// Refuse a sweep of more than [`MAX_SWEEP_POINTS`] points, naming its sizes.
pub fn check_sweep_points(values: usize, variants: usize, seeds: usize) -> Result<usize, String> {
    match sweep_points(values, variants, seeds) {
        Some(n) if n <= MAX_SWEEP_POINTS => Ok(n),
        n => Err(format!(
            "{} points ({} values x {} variants x {seeds} seeds); at most {MAX_SWEEP_POINTS}",
            n.map_or("too many".to_string(), |n| n.to_string()),
            values.max(1),
            variants.max(1),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_points_count_no_parameter_and_no_variants_as_one_and_never_overflow() {
        assert_eq!(sweep_points(0, 0, 3), Some(3));
        assert_eq!(sweep_points(10, 2, 5), Some(100));
        assert_eq!(sweep_points(usize::MAX, 2, 1), None);
        assert_eq!(check_sweep_points(1, 1, MAX_SWEEP_POINTS), Ok(MAX_SWEEP_POINTS));
        let e = check_sweep_points(2_000, 1_000, 1).unwrap_err();
        assert!(e.contains("2000000 points") && e.contains("100000"), "{e}");
        assert!(check_sweep_points(usize::MAX, usize::MAX, 2)
            .unwrap_err()
            .contains("too many"));
    }
}
