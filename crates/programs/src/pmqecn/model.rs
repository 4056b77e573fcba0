//! The M/M/1/N queue of PMQECN's model (paper §"Model establishment", Eqs. 1-12): one class's
//! queue with Poisson arrivals at `lambda`, exponential service at `mu` and room for `n`
//! packets (the one in service included).
//!
//! The stationary distribution is `P_m = P_0 rho^m` for `m` in `0..=n`, `rho = lambda / mu`.
//! From it: the loss probability `P_n`, the effective arrival rate `lambda (1 - P_n)`, the mean
//! number in the system `L_s`, in service `L_c = 1 - P_0` and waiting `L_q = L_s - L_c`, and
//! the sojourn `W_s = L_s / lambda_e` (Little). The paper gives the closed forms for `rho != 1`
//! only; at `rho = 1` every state is equally likely (`P_m = 1 / (n + 1)`, `L_s = n / 2`).
//!
//! Numerically: for `rho > 1` the chain is the mirror image of the one with `1 / rho` (state
//! `m` there is `n - m` here), so the closed forms are only ever evaluated with `rho < 1`,
//! where `rho^(n+1)` cannot overflow; within [`NEAR_ONE`] of 1 they cancel badly, and the
//! distribution is summed instead (O(n), `n` bounded by the scenario's validation).

/// Within this distance of 1, `rho`'s closed forms lose about half their digits to
/// cancellation; the distribution is summed term by term instead.
pub const NEAR_ONE: f64 = 1e-4;

/// The figures of one M/M/1/N queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueFigures {
    /// Probability the queue is empty.
    pub p_empty: f64,
    /// Probability the queue is full (`P_n`): the fraction of arrivals dropped.
    pub p_full: f64,
    /// Mean packets in the system, `L_s`.
    pub mean_in_system: f64,
    /// Mean packets in service, `L_c = 1 - P_0`.
    pub mean_in_service: f64,
    /// Mean packets waiting, `L_q = L_s - L_c`.
    pub mean_waiting: f64,
    /// Arrivals admitted per second, `lambda (1 - P_n)`.
    pub admitted_per_s: f64,
    /// Arrivals dropped per second, `lambda P_n` (the paper's `N_loss`).
    pub lost_per_s: f64,
    /// Mean sojourn of an admitted packet, seconds (`W_s = L_s / lambda_e`).
    pub sojourn_s: f64,
}

/// Why a queue cannot be evaluated.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelError {
    /// A rate that is not finite and positive.
    Rate(&'static str, f64),
    /// A capacity of zero packets.
    Capacity,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::Rate(what, v) => write!(f, "{what} must be finite and positive, got {v}"),
            ModelError::Capacity => write!(f, "a queue needs room for at least one packet"),
        }
    }
}

impl std::error::Error for ModelError {}

/// `(P_0, P_n, L_s)` of a queue with `rho < 1` (or near 1), by the closed forms or the sum.
fn core_figures(rho: f64, n: u32) -> (f64, f64, f64) {
    if (1.0 - rho).abs() < NEAR_ONE {
        return summed(rho, n);
    }
    let n1 = f64::from(n) + 1.0;
    let rho_n1 = rho.powf(n1);
    let p0 = (1.0 - rho) / (1.0 - rho_n1);
    let pn = p0 * rho.powi(n as i32);
    let ls = rho / (1.0 - rho) - n1 * rho_n1 / (1.0 - rho_n1);
    (p0, pn, ls)
}

/// `(P_0, P_n, L_s)` by summing the unnormalised distribution `rho^m`.
fn summed(rho: f64, n: u32) -> (f64, f64, f64) {
    let (mut total, mut weighted, mut term) = (0.0, 0.0, 1.0);
    for m in 0..=n {
        total += term;
        weighted += f64::from(m) * term;
        if m < n {
            term *= rho;
        }
    }
    (1.0 / total, term / total, weighted / total)
}

/// The figures of an M/M/1/N queue with arrivals at `lambda_per_s`, service at `mu_per_s` and
/// room for `capacity` packets.
pub fn mm1n(lambda_per_s: f64, mu_per_s: f64, capacity: u32) -> Result<QueueFigures, ModelError> {
    if !(lambda_per_s.is_finite() && lambda_per_s > 0.0) {
        return Err(ModelError::Rate("the arrival rate", lambda_per_s));
    }
    if !(mu_per_s.is_finite() && mu_per_s > 0.0) {
        return Err(ModelError::Rate("the service rate", mu_per_s));
    }
    if capacity == 0 {
        return Err(ModelError::Capacity);
    }
    let rho = lambda_per_s / mu_per_s;
    let (p_empty, p_full, mean_in_system) = if rho <= 1.0 {
        core_figures(rho, capacity)
    } else {
        // The mirror: P_m(rho) = P_(n-m)(1 / rho).
        let (p0, pn, ls) = core_figures(1.0 / rho, capacity);
        (pn, p0, f64::from(capacity) - ls)
    };
    let admitted_per_s = lambda_per_s * (1.0 - p_full);
    let mean_in_service = 1.0 - p_empty;
    Ok(QueueFigures {
        p_empty,
        p_full,
        mean_in_system,
        mean_in_service,
        mean_waiting: mean_in_system - mean_in_service,
        admitted_per_s,
        lost_per_s: lambda_per_s * p_full,
        sojourn_s: mean_in_system / admitted_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stationary distribution of the birth-death chain found numerically, independently
    /// of the geometric form: the generator's balance equations `pi Q = 0` with `sum pi = 1`
    /// (the last balance equation replaced by the normalisation), by Gaussian elimination
    /// with partial pivoting.
    fn stationary(lambda: f64, mu: f64, n: usize) -> Vec<f64> {
        let size = n + 1;
        // Row j of the system: sum_i pi_i Q[i][j] = 0, i.e. the transpose of Q.
        let mut a = vec![vec![0.0; size + 1]; size];
        for i in 0..size {
            let up = if i < n { lambda } else { 0.0 };
            let down = if i > 0 { mu } else { 0.0 };
            a[i][i] -= up + down;
            if i < n {
                a[i + 1][i] += up;
            }
            if i > 0 {
                a[i - 1][i] += down;
            }
        }
        a[n] = vec![1.0; size + 1];
        for col in 0..size {
            let pivot = (col..size)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap();
            a.swap(col, pivot);
            let pivot_row = a[col].clone();
            for (row, r) in a.iter_mut().enumerate() {
                if row != col {
                    let f = r[col] / pivot_row[col];
                    for (x, p) in r.iter_mut().zip(&pivot_row).skip(col) {
                        *x -= f * p;
                    }
                }
            }
        }
        (0..size).map(|i| a[i][size] / a[i][i]).collect()
    }

    fn close(a: f64, b: f64, what: &str) {
        let tol = 1e-9 * (1.0 + a.abs().max(b.abs()));
        assert!((a - b).abs() <= tol, "{what}: closed form {a}, numeric {b}");
    }

    #[test]
    fn closed_forms_match_the_birth_death_chain_solved_numerically() {
        let mu = 833.0; // 10 Mbit/s of 1 500-byte packets
        for n in [1u32, 2, 5, 11, 64, 200] {
            for rho in [0.01, 0.3, 0.9, 0.99, 0.99995, 1.0, 1.00003, 1.01, 1.5, 3.0, 20.0] {
                let lambda = rho * mu;
                let f = mm1n(lambda, mu, n).unwrap();
                let pi = stationary(lambda, mu, n as usize);
                let ls: f64 = pi.iter().enumerate().map(|(m, p)| m as f64 * p).sum();
                let what = format!("n {n}, rho {rho}");
                close(f.p_empty, pi[0], &format!("{what}: P_0"));
                close(f.p_full, pi[n as usize], &format!("{what}: P_n"));
                close(f.mean_in_system, ls, &format!("{what}: L_s"));
                close(f.mean_in_service, 1.0 - pi[0], &format!("{what}: L_c"));
                close(f.lost_per_s, lambda * pi[n as usize], &format!("{what}: loss"));
                // Little's law on the admitted arrivals.
                close(
                    f.sojourn_s,
                    ls / (lambda * (1.0 - pi[n as usize])),
                    &format!("{what}: W_s"),
                );
            }
        }
    }

    #[test]
    fn rho_one_is_the_uniform_limit_and_continuous_on_both_sides() {
        let (mu, n) = (1000.0, 10);
        let f = mm1n(mu, mu, n).unwrap();
        close(f.p_full, 1.0 / 11.0, "P_n at rho = 1");
        close(f.mean_in_system, 5.0, "L_s at rho = 1");
        close(f.sojourn_s, 11.0 / (2.0 * mu), "W_s at rho = 1: (n + 1) / (2 mu)");
        for eps in [1e-3, 1e-5, 1e-7] {
            for side in [-1.0, 1.0] {
                let g = mm1n(mu * (1.0 + side * eps), mu, n).unwrap();
                assert!(
                    (g.mean_in_system - 5.0).abs() < 10.0 * eps * 10.0,
                    "{eps} {side}: {g:?}"
                );
            }
        }
    }

    #[test]
    fn paper_closed_forms_for_w_s_and_loss_hold_where_they_apply() {
        // W_s = 1 / (mu - lambda) - n lambda^n / (mu (mu^n - lambda^n)), N_loss = lambda^(n+1)
        // (mu - lambda) / (mu^(n+1) - lambda^(n+1)) (paper Eqs. 6 and 7).
        let (lambda, mu, n) = (600.0f64, 833.0f64, 11);
        let f = mm1n(lambda, mu, n).unwrap();
        let nf = f64::from(n);
        let ws = 1.0 / (mu - lambda) - nf * lambda.powf(nf) / (mu * (mu.powf(nf) - lambda.powf(nf)));
        let loss = lambda.powf(nf + 1.0) * (mu - lambda) / (mu.powf(nf + 1.0) - lambda.powf(nf + 1.0));
        close(f.sojourn_s, ws, "W_s");
        close(f.lost_per_s, loss, "N_loss");
    }

    #[test]
    fn huge_capacities_and_loads_stay_finite() {
        for (rho, n) in [(50.0, 100_000u32), (0.5, 100_000), (1.0 + 1e-9, 100_000), (1e6, 3)] {
            let f = mm1n(rho * 10.0, 10.0, n).unwrap();
            for v in [f.p_empty, f.p_full, f.mean_in_system, f.sojourn_s, f.lost_per_s] {
                assert!(v.is_finite() && v >= 0.0, "rho {rho}, n {n}: {f:?}");
            }
            assert!(f.mean_in_system <= f64::from(n));
        }
    }

    #[test]
    fn bad_inputs_are_refused_by_name() {
        assert_eq!(mm1n(0.0, 1.0, 5), Err(ModelError::Rate("the arrival rate", 0.0)));
        assert!(matches!(
            mm1n(1.0, f64::NAN, 5),
            Err(ModelError::Rate("the service rate", _))
        ));
        assert_eq!(mm1n(1.0, 1.0, 0), Err(ModelError::Capacity));
    }
}
