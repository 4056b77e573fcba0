//! PMQECN's control plane optimiser (paper Algorithm 2): from the measured arrival rate of
//! each class, the service rates `mu*` that minimise the weighted QoS objective (layer 1),
//! then the target arrival rates `lambda*` under those service rates (layer 2); the queue
//! weights `omega_i = mu*_i / sum mu*` and ECN thresholds `K_i = ceil(N mu*_i / sum mu*)`
//! follow. Both layers are solved by differential evolution, DE/best/1/bin, seeded, so a
//! controller computes the same answer from the same measurements on every backend.
//!
//! What the paper leaves open or gets wrong, and what is done here (README "Control plane"):
//! - Objectives of different units are summed. [`Objective`] names three readings: the
//!   paper's sums in its own units (the default), its text's `C_rest` read literally, and every
//!   term made dimensionless (which starves delay-sensitive classes: README).
//! - The residual bandwidth `C_rest = n C - sum L_s` subtracts packets from a rate; except in
//!   the literal reading it is `n C - sum lambda_e` (both packets per second): the capacity the
//!   admitted traffic leaves, which is what the paper's prose says it is.
//! - Constraints are kept by Deb's feasibility rules in the selection (a feasible candidate
//!   beats an infeasible one, two infeasible ones compare their total violation), so an
//!   overloaded port (no feasible point) still gets the least violating answer.
//! - No published optimisation crate fits (DE/best/1 with constraint rules and a seed), so the
//!   forty lines of DE are here.

use super::model::{mm1n, QueueFigures};
use mpsched_core::rng::SeededRandom;

/// Most classes (virtual queues) a port has.
pub const MAX_CLASSES: usize = 8;
/// Arrival rates below this (packets/s) are taken as this: the model needs `lambda > 0`.
pub const MIN_RATE_PER_S: f64 = 1e-6;
/// Layer 2 keeps `lambda*_i` within `[EDGE, 1 - EDGE]` of `mu*_i` (`0 < lambda < mu`).
const EDGE: f64 = 1e-3;

/// What a class asks of the network (paper's three categories).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Goal {
    /// Class A (voice, games): low delay and little bandwidth left unused.
    DelayAndBandwidth,
    /// Class B (video): low delay and low jitter.
    DelayAndJitter,
    /// Class C (file transfer): low delay and low loss.
    DelayAndLoss,
}

/// One class's measurements over the last control period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassInput {
    /// Arrival rate, packets/s (`lambda_i`).
    pub arrival_per_s: f64,
    /// Measured mean sojourn in the switch, s (`W_i`, for the jitter objective).
    pub measured_sojourn_s: f64,
    /// Its objective.
    pub goal: Goal,
}

/// How the classes' objectives are put in one sum (the paper adds seconds, packets and packets
/// per second; README "Control plane" measures what each reading does).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Objective {
    /// The paper's terms in its own units, summed as it sums them: sojourn and jitter in
    /// seconds, loss as `N_loss` in packets/s, residual bandwidth as `n C - sum lambda_e` in
    /// packets/s. The bandwidth and loss terms outweigh the delays by orders of magnitude, so
    /// the answer fills the port up to the occupancy limit C1 (`sum L_s <= N`).
    Paper,
    /// As [`Objective::Paper`] but with the text's `C_rest = n C - sum L_s`, `C` the link's
    /// rate in Mbit/s as the paper's parameters are written: C4 (`C_rest >= 0`) then caps the
    /// total occupancy at `n C` packets, and class A's term pushes it there.
    Literal {
        /// One link's rate, Mbit/s (the paper's `C`, 10 in its testbed).
        link_mbps: f64,
    },
    /// Every term dimensionless: sojourn and jitter over `N / Gamma`, residual bandwidth over
    /// `n C`, loss as the probability `P_N`. The delay terms then win, and layer 2 drives the
    /// targets of delay-sensitive classes to the floor.
    Normalised,
}

/// The port and switch the classes share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortModel {
    /// Packets the switch holds (`N`); each class is modelled as M/M/1/N.
    pub capacity_pkts: u32,
    /// The port's service rate, packets/s (`Gamma`, split among the classes).
    pub service_per_s: f64,
    /// Total arrival rate layer 2 may hand out, packets/s (`Lambda`).
    pub arrival_budget_per_s: f64,
    /// One link's rate, packets/s (`C`).
    pub link_per_s: f64,
    /// Links of the switch (`n`).
    pub links: u32,
    /// How the objectives are summed.
    pub objective: Objective,
}

/// Differential evolution's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeConfig {
    /// Candidates per generation (at least 4).
    pub population: usize,
    /// Generations per layer.
    pub generations: usize,
    /// Differential weight `F`.
    pub f: f64,
    /// Crossover probability `CR`.
    pub cr: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for DeConfig {
    fn default() -> Self {
        DeConfig {
            population: 30,
            generations: 150,
            f: 0.6,
            cr: 0.9,
            seed: 1,
        }
    }
}

/// The optimiser's answer for one control period.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// Service rates, packets/s (`mu*`, summing to `Gamma`).
    pub service_per_s: Vec<f64>,
    /// Target arrival rates, packets/s (`lambda*`).
    pub target_arrival_per_s: Vec<f64>,
    /// Queue weights `mu*_i / sum mu*`.
    pub weights: Vec<f64>,
    /// ECN thresholds, packets: `ceil(N mu*_i / sum mu*)`.
    pub thresholds_pkts: Vec<u32>,
    /// Layer 1's and layer 2's objective at the answer.
    pub objective: [f64; 2],
    /// Constraint violation left at each layer's answer (0 when feasible).
    pub violation: [f64; 2],
}

/// Why the optimiser refuses its input.
#[derive(Clone, Debug, PartialEq)]
pub enum OptimiseError {
    /// No class, or more than [`MAX_CLASSES`].
    Classes(usize),
    /// A figure that must be finite and positive (or non-negative) is not.
    Value(&'static str, f64),
    /// DE's settings are out of range.
    Settings(String),
}

impl std::fmt::Display for OptimiseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptimiseError::Classes(n) => write!(f, "{n} classes; 1 to {MAX_CLASSES}"),
            OptimiseError::Value(what, v) => write!(f, "{what} must be finite and positive, got {v}"),
            OptimiseError::Settings(m) => write!(f, "differential evolution: {m}"),
        }
    }
}

impl std::error::Error for OptimiseError {}

/// A candidate's objective and total constraint violation.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Score {
    objective: f64,
    violation: f64,
}

impl Score {
    /// Deb's rules: feasible first, then the smaller violation, then the smaller objective.
    fn better_or_equal(&self, other: &Score) -> bool {
        match (self.violation > 0.0, other.violation > 0.0) {
            (false, false) => self.objective <= other.objective,
            (false, true) => true,
            (true, false) => false,
            (true, true) => self.violation <= other.violation,
        }
    }
}

/// The classes' figures under rates `lambda` and `mu`, scored (paper Eq. 13 and Algorithm 2's
/// constraints C1 and C4; the caller adds its layer's own).
fn score(port: &PortModel, classes: &[ClassInput], lambda: &[f64], mu: &[f64]) -> Score {
    let n = f64::from(port.capacity_pkts);
    let figures: Vec<QueueFigures> = lambda
        .iter()
        .zip(mu)
        .map(|(&l, &m)| mm1n(l, m, port.capacity_pkts).expect("rates are checked positive"))
        .collect();
    let in_system: f64 = figures.iter().map(|f| f.mean_in_system).sum();
    let admitted: f64 = figures.iter().map(|f| f.admitted_per_s).sum();
    let capacity_per_s = port.link_per_s * f64::from(port.links);
    // C_rest and the scale its violation of C4 is measured against.
    let (rest, rest_scale) = match port.objective {
        Objective::Literal { link_mbps } => {
            let n_c = link_mbps * f64::from(port.links);
            (n_c - in_system, n_c)
        }
        Objective::Paper | Objective::Normalised => (capacity_per_s - admitted, capacity_per_s),
    };
    // Scales of the delay and of C_rest: 1 (the paper's own units) or the normalising ones.
    let (w_ref, rest_ref) = match port.objective {
        Objective::Normalised => (n / port.service_per_s, rest_scale),
        Objective::Paper | Objective::Literal { .. } => (1.0, 1.0),
    };
    let mut objective = 0.0;
    for ((c, f), &m) in classes.iter().zip(&figures).zip(mu) {
        let second = match c.goal {
            Goal::DelayAndBandwidth => rest.max(0.0) / rest_ref,
            Goal::DelayAndJitter => (c.measured_sojourn_s - f.sojourn_s).abs() / w_ref,
            Goal::DelayAndLoss => match port.objective {
                Objective::Normalised => f.p_full,
                Objective::Paper | Objective::Literal { .. } => f.lost_per_s,
            },
        };
        objective += m / port.service_per_s * (f.sojourn_s / w_ref + second);
    }
    let violation = (in_system - n).max(0.0) / n + (-rest).max(0.0) / rest_scale;
    Score { objective, violation }
}

/// A uniform draw in [0, 1).
fn unit(rng: &mut SeededRandom) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform index in `0..n`, different from every one of `not`.
fn index_except(rng: &mut SeededRandom, n: usize, not: &[usize]) -> usize {
    loop {
        let i = (unit(rng) * n as f64) as usize;
        if !not.contains(&i) {
            return i;
        }
    }
}

/// DE/best/1/bin over the unit cube of `dim` dimensions: the best candidate by Deb's rules.
fn evolve(dim: usize, de: &DeConfig, rng: &mut SeededRandom, eval: impl Fn(&[f64]) -> Score) -> (Vec<f64>, Score) {
    let mut pop: Vec<Vec<f64>> = (0..de.population)
        .map(|_| (0..dim).map(|_| unit(rng)).collect())
        .collect();
    let mut scores: Vec<Score> = pop.iter().map(|x| eval(x)).collect();
    let best_of = |s: &[Score]| (0..s.len()).fold(0, |b, i| if s[b].better_or_equal(&s[i]) { b } else { i });
    let mut best = best_of(&scores);
    for _ in 0..de.generations {
        for i in 0..de.population {
            let r1 = index_except(rng, de.population, &[i, best]);
            let r2 = index_except(rng, de.population, &[i, best, r1]);
            let forced = index_except(rng, dim, &[]);
            let trial: Vec<f64> = (0..dim)
                .map(|d| {
                    if d == forced || unit(rng) < de.cr {
                        (pop[best][d] + de.f * (pop[r1][d] - pop[r2][d])).clamp(0.0, 1.0)
                    } else {
                        pop[i][d]
                    }
                })
                .collect();
            let s = eval(&trial);
            if s.better_or_equal(&scores[i]) {
                pop[i] = trial;
                scores[i] = s;
                if s.better_or_equal(&scores[best]) {
                    best = i;
                }
            }
        }
    }
    (pop[best].clone(), scores[best])
}

/// Service rates from a point of the unit cube: shares of `Gamma` (equal when all are 0).
fn services(port: &PortModel, x: &[f64]) -> Vec<f64> {
    let total: f64 = x.iter().sum();
    let k = x.len() as f64;
    x.iter()
        .map(|&v| {
            let share = if total > 0.0 { v / total } else { 1.0 / k };
            (share * port.service_per_s).max(MIN_RATE_PER_S)
        })
        .collect()
}

fn check(port: &PortModel, classes: &[ClassInput], de: &DeConfig) -> Result<(), OptimiseError> {
    if classes.is_empty() || classes.len() > MAX_CLASSES {
        return Err(OptimiseError::Classes(classes.len()));
    }
    let positive = |what, v: f64| {
        if v.is_finite() && v > 0.0 {
            Ok(())
        } else {
            Err(OptimiseError::Value(what, v))
        }
    };
    positive("the service rate", port.service_per_s)?;
    positive("the arrival budget", port.arrival_budget_per_s)?;
    positive("the link rate", port.link_per_s)?;
    positive("the capacity", f64::from(port.capacity_pkts))?;
    positive("the number of links", f64::from(port.links))?;
    if let Objective::Literal { link_mbps } = port.objective {
        positive("the literal objective's link rate", link_mbps)?;
    }
    for c in classes {
        if !(c.arrival_per_s.is_finite() && c.arrival_per_s >= 0.0) {
            return Err(OptimiseError::Value("an arrival rate", c.arrival_per_s));
        }
        if !(c.measured_sojourn_s.is_finite() && c.measured_sojourn_s >= 0.0) {
            return Err(OptimiseError::Value("a measured sojourn", c.measured_sojourn_s));
        }
    }
    if de.population < 4 || de.generations == 0 || !(0.0..=2.0).contains(&de.f) || !(0.0..=1.0).contains(&de.cr) {
        return Err(OptimiseError::Settings(format!(
            "population {} (at least 4), generations {} (at least 1), F {} (0 to 2), CR {} (0 to 1)",
            de.population, de.generations, de.f, de.cr
        )));
    }
    Ok(())
}

/// Algorithm 2: layer 1 (`mu*` for the measured `lambda`), layer 2 (`lambda*` under `mu*`).
pub fn optimise(port: &PortModel, classes: &[ClassInput], de: &DeConfig) -> Result<Solution, OptimiseError> {
    check(port, classes, de)?;
    let mut rng = SeededRandom::new(de.seed);
    let lambda: Vec<f64> = classes.iter().map(|c| c.arrival_per_s.max(MIN_RATE_PER_S)).collect();
    let k = classes.len();
    // Layer 1: C2 (lambda_i < mu_i) beside the shared constraints; C3 holds by construction.
    let (x, s1) = evolve(k, de, &mut rng, |x| {
        let mu = services(port, x);
        let mut s = score(port, classes, &lambda, &mu);
        // Strictly below, by the margin layer 2 keeps: at rho = 1 a class's queue never drains.
        let over = |(l, m): (&f64, &f64)| (l - m * (1.0 - EDGE)).max(0.0) / m;
        s.violation += lambda.iter().zip(&mu).map(over).sum::<f64>();
        s
    });
    let mu = services(port, &x);
    // Layer 2: lambda_i in (0, mu*_i) by construction; C2 (sum lambda <= Lambda).
    let targets = |y: &[f64]| -> Vec<f64> {
        y.iter()
            .zip(&mu)
            .map(|(&v, &m)| m * (EDGE + (1.0 - 2.0 * EDGE) * v))
            .collect()
    };
    let (y, s2) = evolve(k, de, &mut rng, |y| {
        let l = targets(y);
        let mut s = score(port, classes, &l, &mu);
        s.violation += (l.iter().sum::<f64>() - port.arrival_budget_per_s).max(0.0) / port.arrival_budget_per_s;
        s
    });
    let total: f64 = mu.iter().sum();
    let n = f64::from(port.capacity_pkts);
    Ok(Solution {
        weights: mu.iter().map(|m| m / total).collect(),
        thresholds_pkts: mu.iter().map(|m| ((n * m / total).ceil() as u32).max(1)).collect(),
        target_arrival_per_s: targets(&y),
        service_per_s: mu,
        objective: [s1.objective, s2.objective],
        violation: [s1.violation, s2.violation],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fig. 6's bottleneck: 10 Mbit/s of 1 500-byte packets (833 /s), three links (a switch
    /// of three ports; Fig. 6's S1 has four, which the scenarios' control loop counts), a
    /// 64-packet buffer, the three classes of scenario 1 offering `offered` packets/s each.
    fn setting(offered: [f64; 3]) -> (PortModel, Vec<ClassInput>) {
        setting_with(offered, Objective::Paper)
    }

    /// The three readings of the objective, Fig. 6's links in the literal one.
    const READINGS: [Objective; 3] = [
        Objective::Paper,
        Objective::Literal { link_mbps: 10.0 },
        Objective::Normalised,
    ];

    fn setting_with(offered: [f64; 3], objective: Objective) -> (PortModel, Vec<ClassInput>) {
        let port = PortModel {
            capacity_pkts: 64,
            service_per_s: 833.0,
            arrival_budget_per_s: offered.iter().sum(),
            link_per_s: 833.0,
            links: 3,
            objective,
        };
        let goals = [Goal::DelayAndBandwidth, Goal::DelayAndJitter, Goal::DelayAndLoss];
        let classes = offered
            .iter()
            .zip(goals)
            .map(|(&a, goal)| ClassInput {
                arrival_per_s: a,
                measured_sojourn_s: 0.01,
                goal,
            })
            .collect();
        (port, classes)
    }

    /// Every constraint of Algorithm 2, at both layers, within `tol`.
    fn assert_feasible(port: &PortModel, classes: &[ClassInput], s: &Solution) {
        let tol = 1e-9;
        let total_mu: f64 = s.service_per_s.iter().sum();
        assert!((total_mu - port.service_per_s).abs() < 1e-6, "C3: sum mu* = {total_mu}");
        for (i, c) in classes.iter().enumerate() {
            assert!(c.arrival_per_s < s.service_per_s[i], "layer 1 C2, class {i}: {s:?}");
            let l = s.target_arrival_per_s[i];
            assert!(l > 0.0 && l < s.service_per_s[i], "layer 2 C3, class {i}: {s:?}");
        }
        assert!(s.target_arrival_per_s.iter().sum::<f64>() <= port.arrival_budget_per_s + tol);
        for (lambda, what) in [
            (
                classes
                    .iter()
                    .map(|c| c.arrival_per_s.max(MIN_RATE_PER_S))
                    .collect::<Vec<_>>(),
                "layer 1",
            ),
            (s.target_arrival_per_s.clone(), "layer 2"),
        ] {
            let figs: Vec<_> = lambda
                .iter()
                .zip(&s.service_per_s)
                .map(|(&l, &m)| mm1n(l, m, port.capacity_pkts).unwrap())
                .collect();
            let ls: f64 = figs.iter().map(|f| f.mean_in_system).sum();
            assert!(ls <= f64::from(port.capacity_pkts) + tol, "{what} C1: sum L_s = {ls}");
            let admitted: f64 = figs.iter().map(|f| f.admitted_per_s).sum();
            match port.objective {
                Objective::Literal { link_mbps } => {
                    assert!(
                        ls <= link_mbps * f64::from(port.links) + tol,
                        "{what} C4: sum L_s = {ls}"
                    )
                }
                _ => assert!(admitted <= port.link_per_s * f64::from(port.links) + tol, "{what} C4"),
            }
        }
        assert_eq!(s.violation, [0.0, 0.0]);
        let k: u32 = s.thresholds_pkts.iter().sum();
        assert!(
            k >= port.capacity_pkts && k <= port.capacity_pkts + classes.len() as u32,
            "{s:?}"
        );
        assert!((s.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_answer_satisfies_every_constraint_of_the_model() {
        for objective in READINGS {
            for offered in [
                [200.0, 200.0, 200.0],
                [500.0, 100.0, 50.0],
                [10.0, 300.0, 400.0],
                [0.0, 400.0, 400.0],
            ] {
                // Two classes of 400/s on 833/s hold about 40 packets however the port is
                // split: over the literal reading's cap of n C = 30, so infeasible there.
                if offered[1] == 400.0 && matches!(objective, Objective::Literal { .. }) {
                    continue;
                }
                let (port, classes) = setting_with(offered, objective);
                let s = optimise(&port, &classes, &DeConfig::default()).unwrap();
                assert_feasible(&port, &classes, &s);
            }
        }
    }

    #[test]
    fn in_the_papers_units_the_targets_fill_the_port_and_other_readings_starve_a_class() {
        // Scenario 1's setting: three classes offering 200 packets/s each into 833/s.
        let offered = [200.0, 200.0, 200.0];
        let solve = |objective| {
            let (port, classes) = setting_with(offered, objective);
            optimise(&port, &classes, &DeConfig::default()).unwrap()
        };
        // The paper's sums: residual bandwidth and loss (packets/s) outweigh the delays
        // (seconds), so the targets hand out the whole budget the classes offered.
        let s = solve(Objective::Paper);
        assert!(s.target_arrival_per_s.iter().sum::<f64>() > 0.99 * 600.0, "{s:?}");
        assert!(s.target_arrival_per_s.iter().all(|&l| l > 0.5 * 200.0), "{s:?}");
        // Literally, C_rest >= 0 caps the occupancy at n C = 30 packets, and class A's term
        // pushes it there; the delays then decide who holds those packets.
        let s = solve(Objective::Literal { link_mbps: 10.0 });
        let occupancy: f64 = (0..3)
            .map(|i| {
                mm1n(s.target_arrival_per_s[i], s.service_per_s[i], 64)
                    .unwrap()
                    .mean_in_system
            })
            .sum();
        assert!((occupancy - 30.0).abs() < 0.5, "{occupancy} packets: {s:?}");
        // Dimensionless terms let the delays win: some class is cut far below its offer.
        let s = solve(Objective::Normalised);
        assert!(s.target_arrival_per_s.iter().any(|&l| l < 100.0), "{s:?}");
    }

    #[test]
    fn the_same_seed_gives_the_same_answer_and_another_seed_a_close_one() {
        let (port, classes) = setting([300.0, 250.0, 200.0]);
        let a = optimise(&port, &classes, &DeConfig::default()).unwrap();
        let b = optimise(&port, &classes, &DeConfig::default()).unwrap();
        assert_eq!(a, b);
        let c = optimise(
            &port,
            &classes,
            &DeConfig {
                seed: 7,
                ..DeConfig::default()
            },
        )
        .unwrap();
        // Converged: another seed finds (nearly) the same optimum.
        for l in 0..2 {
            assert!(
                (a.objective[l] - c.objective[l]).abs() <= 1e-3 * a.objective[l].abs().max(1e-9),
                "{a:?} {c:?}"
            );
        }
    }

    #[test]
    fn de_beats_every_point_of_a_grid_on_layer_one() {
        // The answer is at least as good as the best of a 1 % grid of the simplex (feasible points).
        for objective in READINGS {
            let (port, classes) = setting_with([300.0, 250.0, 200.0], objective);
            let s = optimise(&port, &classes, &DeConfig::default()).unwrap();
            let lambda: Vec<f64> = classes.iter().map(|c| c.arrival_per_s).collect();
            let mut best = f64::INFINITY;
            for a in 1..100 {
                for b in 1..(100 - a) {
                    let x = [a as f64, b as f64, (100 - a - b) as f64];
                    let mu = services(&port, &x);
                    let sc = score(&port, &classes, &lambda, &mu);
                    if sc.violation == 0.0 && lambda.iter().zip(&mu).all(|(l, m)| *l <= m * (1.0 - EDGE)) {
                        best = best.min(sc.objective);
                    }
                }
            }
            let slack = 1e-9 * best.abs().max(1.0);
            assert!(
                s.objective[0] <= best + slack,
                "{objective:?}: DE {} against the grid's {best}",
                s.objective[0]
            );
        }
    }

    #[test]
    fn an_overloaded_port_gets_the_least_violating_answer_not_an_error() {
        for objective in READINGS {
            let (port, classes) = setting_with([600.0, 600.0, 600.0], objective);
            let s = optimise(&port, &classes, &DeConfig::default()).unwrap();
            assert!(s.violation[0] > 0.0, "three classes of 600/s cannot fit 833/s");
            // Equal loads: the least violating split is close to equal.
            for m in &s.service_per_s {
                assert!((m - 833.0 / 3.0).abs() < 833.0 * 0.05, "{objective:?}: {s:?}");
            }
            assert!(s.target_arrival_per_s.iter().sum::<f64>() < 833.0);
        }
    }

    #[test]
    fn bad_input_is_refused_by_name() {
        let (port, classes) = setting([1.0, 1.0, 1.0]);
        assert_eq!(
            optimise(&port, &[], &DeConfig::default()),
            Err(OptimiseError::Classes(0))
        );
        let nine = vec![classes[0]; 9];
        assert_eq!(
            optimise(&port, &nine, &DeConfig::default()),
            Err(OptimiseError::Classes(9))
        );
        let bad = PortModel {
            service_per_s: f64::INFINITY,
            ..port
        };
        assert!(matches!(
            optimise(&bad, &classes, &DeConfig::default()),
            Err(OptimiseError::Value(..))
        ));
        let mut c = classes.clone();
        c[1].arrival_per_s = -1.0;
        assert!(matches!(
            optimise(&port, &c, &DeConfig::default()),
            Err(OptimiseError::Value(..))
        ));
        let de = DeConfig {
            population: 3,
            ..DeConfig::default()
        };
        assert!(matches!(
            optimise(&port, &classes, &de),
            Err(OptimiseError::Settings(_))
        ));
    }

    #[test]
    fn it_runs_well_inside_a_control_period() {
        let (port, classes) = setting([300.0, 250.0, 200.0]);
        let runs = 20;
        let t = std::time::Instant::now();
        for seed in 0..runs {
            optimise(
                &port,
                &classes,
                &DeConfig {
                    seed,
                    ..DeConfig::default()
                },
            )
            .unwrap();
        }
        let each = t.elapsed() / runs as u32;
        eprintln!("PMQECN optimiser, three classes, default DE: {each:?} per control period");
        // A debug build on a shared two-core machine; the default period is 100 ms.
        assert!(each < std::time::Duration::from_millis(100), "{each:?}");
    }
}
