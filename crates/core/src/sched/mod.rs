//! Path schedulers: given a packet of a split flow, choose one of N paths.
//!
//! Each scheduler is a small register machine; [`Scheduler`] dispatches over them statically (no
//! virtual call on the per-packet path) and is built from a [`SchedulerConfig`], the control
//! plane's description.

mod dwrr;
mod ecmp;
mod rs;
mod wrr;

pub use dwrr::{Dwrr, DwrrParams, DwrrStats};
pub use ecmp::Ecmp;
pub use rs::RandomSplit;
pub use wrr::Wrr;

use crate::packet::PacketMeta;
use crate::rng::RandomSource;
use crate::MAX_PATHS;

/// A 0-based path index within a splitting group.
pub type PathIndex = u8;

/// What a scheduler decided for one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send it on this path.
    Path(PathIndex),
    /// Drop it (DWRR congestion avoidance).
    Drop,
}

/// The control plane's description of a scheduler for one splitting group.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SchedulerConfig {
    /// Everything on one path (the paper's SP1 / SP2).
    Single {
        /// The path used.
        path: PathIndex,
    },
    /// Per-flow hashing of the 5-tuple (ECMP).
    Ecmp,
    /// Random splitting with per-path shares in percent (they are normalised to 100).
    Rs {
        /// Share of each path.
        shares_pct: Vec<u32>,
    },
    /// Weighted round robin with the paper's semantics.
    Wrr {
        /// Weight of each path.
        weights: Vec<u16>,
    },
    /// Dynamic WRR: WRR plus ECN feedback driven weight adjustment.
    Dwrr {
        /// Initial weight of each path.
        weights: Vec<u16>,
        /// DWRR's constants.
        params: DwrrParams,
    },
}

/// The scheduler configurations the benchmarks measure: (name, configuration, paths).
pub fn benchmark_configs() -> Vec<(&'static str, SchedulerConfig, usize)> {
    vec![
        ("wrr (2,1)", SchedulerConfig::Wrr { weights: vec![2, 1] }, 2),
        (
            "wrr 8 paths",
            SchedulerConfig::Wrr {
                weights: vec![8, 7, 6, 5, 4, 3, 2, 1],
            },
            8,
        ),
        (
            "dwrr (2,1)",
            SchedulerConfig::Dwrr {
                weights: vec![2, 1],
                params: DwrrParams::default(),
            },
            2,
        ),
        (
            "rs (67,33)",
            SchedulerConfig::Rs {
                shares_pct: vec![67, 33],
            },
            2,
        ),
        ("ecmp 4 paths", SchedulerConfig::Ecmp, 4),
    ]
}

/// Why a scheduler configuration was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Check a path count against [`MAX_PATHS`].
pub(crate) fn check_paths(n: usize) -> Result<(), ConfigError> {
    if n == 0 || n > MAX_PATHS {
        return Err(ConfigError(format!(
            "a splitting group needs 1 to {MAX_PATHS} paths, got {n}"
        )));
    }
    Ok(())
}

/// A scheduler instance (statically dispatched).
pub enum Scheduler {
    /// See [`SchedulerConfig::Single`].
    Single(PathIndex),
    /// See [`Ecmp`].
    Ecmp(Ecmp),
    /// See [`RandomSplit`].
    Rs(RandomSplit),
    /// See [`Wrr`].
    Wrr(Wrr),
    /// See [`Dwrr`].
    Dwrr(Dwrr),
}

impl Scheduler {
    /// Build a scheduler for `n_paths` paths. `rng` is used by RS only.
    pub fn new(config: &SchedulerConfig, n_paths: usize, rng: Box<dyn RandomSource>) -> Result<Scheduler, ConfigError> {
        check_paths(n_paths)?;
        let want = |len: usize, what: &str| {
            if len == n_paths {
                Ok(())
            } else {
                Err(ConfigError(format!(
                    "{what} has {len} entries but the group has {n_paths} paths"
                )))
            }
        };
        Ok(match config {
            SchedulerConfig::Single { path } => {
                if usize::from(*path) >= n_paths {
                    return Err(ConfigError(format!(
                        "single path {} out of range 1..={n_paths}",
                        path + 1
                    )));
                }
                Scheduler::Single(*path)
            }
            SchedulerConfig::Ecmp => Scheduler::Ecmp(Ecmp::new(n_paths)?),
            SchedulerConfig::Rs { shares_pct } => {
                want(shares_pct.len(), "shares")?;
                Scheduler::Rs(RandomSplit::from_shares(shares_pct, rng)?)
            }
            SchedulerConfig::Wrr { weights } => {
                want(weights.len(), "weights")?;
                Scheduler::Wrr(Wrr::new(weights)?)
            }
            SchedulerConfig::Dwrr { weights, params } => {
                want(weights.len(), "weights")?;
                Scheduler::Dwrr(Dwrr::new(weights, params.clone())?)
            }
        })
    }

    /// Choose a path for `meta` (a packet of the split flow).
    #[inline]
    pub fn select(&mut self, meta: &PacketMeta) -> Decision {
        match self {
            Scheduler::Single(p) => Decision::Path(*p),
            Scheduler::Ecmp(e) => Decision::Path(e.select(meta)),
            Scheduler::Rs(r) => Decision::Path(r.select()),
            Scheduler::Wrr(w) => Decision::Path(w.select().0),
            Scheduler::Dwrr(d) => d.select(),
        }
    }

    /// A feedback packet reported congestion on `path` (DWRR only; ignored by the others).
    pub fn on_feedback(&mut self, path: PathIndex) -> bool {
        match self {
            Scheduler::Dwrr(d) => d.on_feedback(path),
            _ => false,
        }
    }

    /// Short name (`rs`, `wrr`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Scheduler::Single(_) => "single",
            Scheduler::Ecmp(_) => "ecmp",
            Scheduler::Rs(_) => "rs",
            Scheduler::Wrr(_) => "wrr",
            Scheduler::Dwrr(_) => "dwrr",
        }
    }

    /// The DWRR state, when this is DWRR.
    pub fn as_dwrr(&self) -> Option<&Dwrr> {
        match self {
            Scheduler::Dwrr(d) => Some(d),
            _ => None,
        }
    }
}
