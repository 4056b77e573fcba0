//! The bounds on what a scenario sizes allocations with (times, repetitions, nodes, samples,
//! flow tables), and [`Scenario::check_bounds`], which holds a scenario to them.

use super::{Ctx, Scenario, ScenarioError};

/// Longest time any key may give (a million seconds, 11.6 days): simulated times are
/// picoseconds in 64 bits, and the engine adds a few of them (now, a serialisation, a delay)
/// without overflow only while each stays well below 2^64 ps (213 days).
pub const MAX_TIME_PS: u64 = 1_000_000 * 1_000_000_000_000;

/// Most repetitions of a run: each keeps its figures and series in memory (about 56 KB for a
/// small scenario, far more for a large one) until the summary over them is written.
pub const MAX_REPETITIONS: u32 = 1_000;

/// Most nodes a scenario may have (names, addresses, per-node state: linear). What the routes
/// and switch tables take grows with the switches and the hosts' attachments as well, and is
/// bounded by [`MAX_CONTROL_PLANE_BYTES`].
pub const MAX_NODES: usize = 65_536;

/// Most links a scenario may have, generated or written (about 600 bytes each when
/// validated): a layout's links grow with the product of its sizes (a leaf-spine of 4 000 x
/// 4 000, 12 000 nodes, would have 16 million), so they are bounded before it is generated.
/// A k = 34 fat tree has 29 478, a 10 000-UE ATSSS scenario 21 051.
pub const MAX_LINKS: usize = mpsched_topo::generate::MAX_GENERATED_LINKS;

/// Most bytes the control plane's routes and switch tables may take: per switch and per set of
/// neighbours hosts share, a column of 4 bytes a node (`mpsched_topo::Routes::estimated_bytes`),
/// and per switch a route of 8 bytes to every node, once for the network and once more for
/// each `[[failure]]` (a run keeps every switch's tables for after each). A k = 28 fat tree
/// (6 468 nodes) takes 86 MB; 10 000 hosts behind two access switches 1 MB; 8 193 lone
/// switches would take 800 MB.
pub const MAX_CONTROL_PLANE_BYTES: usize = 256 << 20;

/// Most steps the control plane's route searches may take, once for the network and once more
/// for each `[[failure]]`: a breadth-first search per destination column over every node and
/// port (`mpsched_topo::Routes::search_steps_of`), 4 to 8 ns a step, so 2 to 4 s at the bound.
/// A k = 34 fat tree takes 142 million, the 10 000-UE ATSSS scenario 109 million.
pub const MAX_ROUTE_STEPS: usize = 500_000_000;

/// What the control plane of a network is sized by: its nodes, switches, routes' destination
/// columns and ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlPlane {
    /// Nodes.
    pub nodes: usize,
    /// Switches, each with a route to every node.
    pub switches: usize,
    /// Destination columns of the routes (`mpsched_topo::routing::columns`).
    pub columns: usize,
    /// Ports: both ends of every link.
    pub ports: usize,
}

impl ControlPlane {
    /// The counts of `nodes` and `links`.
    pub fn of(nodes: &[mpsched_topo::Node], links: &[mpsched_topo::Link]) -> ControlPlane {
        let g = mpsched_topo::Graph::new(nodes, links);
        ControlPlane {
            nodes: nodes.len(),
            switches: nodes
                .iter()
                .filter(|n| n.kind == mpsched_topo::NodeKind::Switch)
                .count(),
            columns: mpsched_topo::routing::columns(&g),
            ports: mpsched_topo::routing::ports(&g),
        }
    }

    /// The counts of a generated layout, before it is generated.
    pub fn of_layout(size: &mpsched_topo::generate::LayoutSize) -> ControlPlane {
        ControlPlane {
            nodes: size.nodes(),
            switches: size.switches,
            columns: size.columns(),
            ports: size.ports(),
        }
    }

    /// Bytes of the routes and of `tables` sets of switch tables (see
    /// [`MAX_CONTROL_PLANE_BYTES`]).
    pub fn bytes(&self, tables: usize) -> usize {
        let routes = mpsched_topo::Routes::estimated_bytes_of(self.nodes, self.columns, self.ports);
        let one = self
            .switches
            .saturating_mul(self.nodes)
            .saturating_mul(std::mem::size_of::<mpsched_core::table::Route>());
        routes.saturating_add(one.saturating_mul(tables))
    }

    /// Steps of `builds` route computations (see [`MAX_ROUTE_STEPS`]).
    pub fn route_steps(&self, builds: usize) -> usize {
        mpsched_topo::Routes::search_steps_of(self.nodes, self.columns, self.ports).saturating_mul(builds)
    }

    /// Within [`MAX_CONTROL_PLANE_BYTES`] and [`MAX_ROUTE_STEPS`] with `builds` sets of routes
    /// and tables (1 and one per failure), or why not; `what` names the network.
    pub fn check(&self, what: &str, builds: usize) -> Result<(), String> {
        let bytes = self.bytes(builds);
        if bytes > MAX_CONTROL_PLANE_BYTES {
            return Err(format!(
                "{what}: the control plane's routes and switch tables would take {} MiB; at most {} MiB (4 bytes a \
                 node per switch and per set of neighbours hosts share, and 8 bytes a node per switch{})",
                bytes >> 20,
                MAX_CONTROL_PLANE_BYTES >> 20,
                if builds > 1 { ", again for each failure" } else { "" }
            ));
        }
        let steps = self.route_steps(builds);
        if steps > MAX_ROUTE_STEPS {
            return Err(format!(
                "{what}: computing its routes would take {steps} steps (a search per destination column over every \
                 node and port{}); at most {MAX_ROUTE_STEPS}",
                if builds > 1 { ", again for each failure" } else { "" }
            ));
        }
        Ok(())
    }
}

/// The control plane's bytes for `nodes` and `links` (see [`MAX_CONTROL_PLANE_BYTES`]).
pub fn control_plane_bytes(nodes: &[mpsched_topo::Node], links: &[mpsched_topo::Link]) -> usize {
    ControlPlane::of(nodes, links).bytes(1)
}

impl Scenario {
    /// The bytes the simulator's shortest-path routes take for this network (before pins;
    /// `mpsched_topo::Routes::table_bytes`) and their destination columns: what `mpsched check`
    /// reports beside the 4 n² bytes a table of every pair of nodes would take. Builds them.
    pub fn route_table_bytes(&self) -> (usize, usize) {
        let g = mpsched_topo::Graph::new(&self.nodes, &self.links);
        let routes = mpsched_topo::Routes::shortest(&g);
        (routes.table_bytes(), mpsched_topo::routing::columns(&g))
    }
}

/// Most sample intervals a run may have: each adds a row to every time series.
pub const MAX_SAMPLES: u64 = 1_000_000;
/// Most (interval, series) cells a run may keep: per flow and path, a few counters per
/// interval (about 40 bytes a cell, so 1 GB at the bound).
pub const MAX_SAMPLE_CELLS: u64 = 25_000_000;
/// Most entries of a tunnel entry's flow table (AFMT), about 90 bytes each.
pub const MAX_FLOW_TABLE_ENTRIES: u64 = mpsched_programs::tunnel::MAX_AFMT_FLOW_TABLE_ENTRIES;

impl Scenario {
    /// The bounds on what a scenario sizes allocations with, and a timeline in which every
    /// flow lasts, checked at validation and again after a command-line flag changes the
    /// scenario (`--duration`), so that no value can ask for more memory than the machine has
    /// (the process would abort, not report) and no flag can make a flow last no time (its
    /// rate would be 0 / 0).
    pub fn check_bounds(&self) -> Result<(), ScenarioError> {
        let ctx = Ctx { file: &self.origin };
        if self.duration_ps > MAX_TIME_PS {
            return Err(ctx.err(
                "scenario.duration",
                format!("at most {}", crate::units::format_time_ps(MAX_TIME_PS)),
            ));
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.stop_ps <= f.start_ps {
                return Err(ctx.err(
                    format!("flow[{i}].stop"),
                    format!(
                        "flow `{}` would last no time ({} ps to {} ps): the run is too short for it",
                        f.name, f.start_ps, f.stop_ps
                    ),
                ));
            }
        }
        for (key, jitter_ps) in [
            ("start_jitter", self.start_jitter_ps),
            ("send_jitter", self.send_jitter_ps),
        ] {
            if jitter_ps >= self.duration_ps {
                return Err(ctx.err(
                    format!("scenario.{key}"),
                    format!(
                        "{} is not shorter than the run ({}): traffic would be delayed past its end",
                        crate::units::format_time_ps(jitter_ps),
                        crate::units::format_time_ps(self.duration_ps)
                    ),
                ));
            }
        }
        let intervals = self.duration_ps.div_ceil(self.sample_interval_ps);
        let series = (self.flows.len() + self.paths.len() + 1) as u64;
        let cells = intervals.saturating_mul(series);
        if intervals > MAX_SAMPLES || cells > MAX_SAMPLE_CELLS {
            let need = (self.duration_ps / MAX_SAMPLES).max(self.duration_ps.saturating_mul(series) / MAX_SAMPLE_CELLS);
            return Err(ctx.err(
                "scenario.sample_interval",
                format!(
                    "{intervals} samples of {series} series over the run; at most {MAX_SAMPLES} samples and {MAX_SAMPLE_CELLS} cells: use an interval of at least {} ns",
                    need / 1000 + 1
                ),
            ));
        }
        Ok(())
    }
}
