//! The bound's LP solved through its dual, rows added as they are violated, and the dual point
//! priced by hand for estates too large for it.

use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOutcome, Variable};

use super::{node_fraction, Columns, Group, Kind, Quotas, Use};

/// Rounds of adding violated rows before the bound settles for what it has.
const ROUNDS: usize = 60;
/// Rows one workload may gain per round (its most violated ones).
const PER_ROUND: usize = 2;
/// Kinds each workload starts with: its cheapest for its own shape.
const SEED: usize = 3;
/// A violation smaller than this share of the workload's dual price is none.
const TOLERANCE: f64 = 1e-7;

/// Node-months one replica-month of a use takes, priced: its cost alone on the kind.
fn alone(kinds: &[Kind], u: &Use) -> f64 {
    let kind = &kinds[u.kind];
    node_fraction(&u.need, &kind.cap) * kind.usd
}

/// The dual point no LP is solved for: each kind's rate on the dimension its work weighs
/// most on, each workload paying the least any of its kinds then charges, floors left out.
/// A feasible dual point, so a bound, in time linear in the uses: for estates too large for
/// the LP.
pub(super) fn priced_by_hand(kinds: &[Kind], groups: &[Group]) -> f64 {
    let prices: Vec<Vec<f64>> = kinds
        .iter()
        .zip(heaviest(kinds, groups))
        .map(|(k, j)| on_one(k, j, k.usd))
        .collect();
    groups
        .iter()
        .filter(|g| !g.uses.is_empty())
        .map(|g| g.months * least(&prices, g))
        .sum()
}

/// Per kind, the dimension its groups' work weighs most on (a share of the kind's capacity).
fn heaviest(kinds: &[Kind], groups: &[Group]) -> Vec<usize> {
    let mut weight: Vec<Vec<f64>> = kinds.iter().map(|k| vec![0.0; k.cap.len()]).collect();
    for group in groups {
        for u in &group.uses {
            for (j, w) in weight[u.kind].iter_mut().enumerate() {
                *w += group.months * u.need[j] / kinds[u.kind].cap[j].max(1e-9);
            }
        }
    }
    weight
        .iter()
        .map(|w| (0..w.len()).fold(0, |b, j| if w[j] > w[b] { j } else { b }))
        .collect()
}

/// Prices for `kind` that put all of `rate` on dimension `j`: its row holds with equality.
fn on_one(kind: &Kind, j: usize, rate: f64) -> Vec<f64> {
    let mut m = vec![0.0; kind.cap.len()];
    m[j] = rate.max(0.0) / kind.cap[j].max(1e-9);
    m
}

/// The least any of `group`'s uses charges at prices `m`.
fn least(m: &[Vec<f64>], group: &Group) -> f64 {
    least_of(group, |_, u| charge(m, u))
}

/// The least `charge` puts on any of `group`'s uses (each by its index in the group).
fn least_of(group: &Group, charge: impl Fn(usize, &Use) -> f64) -> f64 {
    group
        .uses
        .iter()
        .enumerate()
        .map(|(i, u)| charge(i, u))
        .fold(f64::INFINITY, f64::min)
}

/// The dual: maximise Σ months·π + Σ floor·ν − Σ quota·λ subject to, per kind,
/// Σ_j cap_j·μ_j + Σ ν (of the groups that may use it) − vCPUs·λ (of its quota) ≤ rate, and
/// per use, π − Σ_j need_j·μ_j ≤ 0. Rows enter as they are violated, kinds' rows too: a kind outside
/// the LP is priced by hand (its whole rate on its heaviest dimension), which keeps its row.
struct Dual<'a> {
    kinds: &'a [Kind],
    groups: &'a [Group],
    pi: Vec<Variable>,
    nu: Vec<Option<Variable>>,
    mu: Vec<Vec<Variable>>,
    /// One λ per known quota, and one per (group, quota) for what the group holds at once.
    lambda: Vec<Variable>,
    peak: Vec<Variable>,
    quotas: &'a Quotas,
    /// The ν of the groups that may use each kind.
    floors_of: Vec<Vec<Variable>>,
    /// The dimension a kind outside the LP is priced on: the one its groups weigh most on.
    heaviest: Vec<usize>,
    /// Kinds whose row is in the LP.
    in_lp: Vec<bool>,
    /// Uses whose row is in the LP, per group.
    added: Vec<Vec<bool>>,
}

type Row = (Vec<(Variable, f64)>, f64);

impl<'a> Dual<'a> {
    fn new(
        kinds: &'a [Kind],
        groups: &'a [Group],
        quotas: &'a Quotas,
        p: &mut Problem,
    ) -> Dual<'a> {
        let pi = groups
            .iter()
            .map(|g| p.add_var(g.months, (0.0, f64::INFINITY)))
            .collect();
        let nu: Vec<Option<Variable>> = groups
            .iter()
            .map(|g| (g.floor > 0.0).then(|| p.add_var(g.floor, (0.0, f64::INFINITY))))
            .collect();
        let mu = kinds
            .iter()
            .map(|k| {
                k.cap
                    .iter()
                    .map(|_| p.add_var(0.0, (0.0, f64::INFINITY)))
                    .collect()
            })
            .collect();
        let lambda = quotas
            .limit
            .iter()
            .map(|&l| p.add_var(-l, (0.0, f64::INFINITY)))
            .collect();
        let peak = quotas
            .peak_limit
            .iter()
            .map(|&l| p.add_var(-l, (0.0, f64::INFINITY)))
            .collect();
        let mut floors_of: Vec<Vec<Variable>> = vec![Vec::new(); kinds.len()];
        for (g, group) in groups.iter().enumerate() {
            for u in &group.uses {
                // Once per kind: a group may use a kind several ways (MIG profiles), and a
                // row names each variable once. A group's uses come together, so the last
                // entry tells.
                if let Some(v) = nu[g] {
                    if floors_of[u.kind].last() != Some(&v) {
                        floors_of[u.kind].push(v);
                    }
                }
            }
        }
        let heaviest = heaviest(kinds, groups);
        Dual {
            kinds,
            groups,
            pi,
            nu,
            mu,
            lambda,
            peak,
            quotas,
            floors_of,
            heaviest,
            in_lp: vec![false; kinds.len()],
            added: groups.iter().map(|g| vec![false; g.uses.len()]).collect(),
        }
    }

    fn kind_row(&mut self, k: usize) -> Option<Row> {
        if std::mem::replace(&mut self.in_lp[k], true) {
            return None;
        }
        let kind = &self.kinds[k];
        let mut terms: Vec<(Variable, f64)> = (0..kind.cap.len())
            .map(|j| (self.mu[k][j], kind.cap[j]))
            .collect();
        terms.extend(self.floors_of[k].iter().map(|&v| (v, 1.0)));
        if let Some((b, vcpus)) = self.quotas.of(k) {
            terms.push((self.lambda[b], -vcpus));
        }
        Some((terms, kind.usd))
    }

    /// The rows that put use `i` of group `g` in the LP (its kind's first, if not yet in).
    fn use_rows(&mut self, g: usize, i: usize) -> Vec<Row> {
        self.added[g][i] = true;
        let u = &self.groups[g].uses[i];
        let mut terms = vec![(self.pi[g], 1.0)];
        terms.extend(
            (0..u.need.len())
                .filter(|&j| u.need[j] > 0.0)
                .map(|j| (self.mu[u.kind][j], -u.need[j])),
        );
        if let Some((row, draw)) = self.quotas.of_use(g, i) {
            terms.push((self.peak[row], -draw));
        }
        let k = u.kind;
        let mut rows: Vec<Row> = self.kind_row(k).into_iter().collect();
        rows.push((terms, 0.0));
        rows
    }

    /// Each kind's prices per unit of GPU, vCPU, RAM (and MIG instances) at `sol`.
    fn prices(&self, sol: &microlp::Solution, with_floors: bool) -> Vec<Vec<f64>> {
        (0..self.kinds.len())
            .map(|k| {
                if self.in_lp[k] {
                    return self.mu[k].iter().map(|&v| sol.var_value(v)).collect();
                }
                let floors: f64 = if with_floors {
                    self.floors_of[k].iter().map(|&v| sol.var_value(v)).sum()
                } else {
                    0.0
                };
                let kind = &self.kinds[k];
                on_one(kind, self.heaviest[k], kind.usd - floors)
            })
            .collect()
    }

    /// Kinds outside the LP whose row the floors' ν break.
    fn broken_kinds(&self, sol: &microlp::Solution) -> Vec<usize> {
        (0..self.kinds.len())
            .filter(|&k| {
                !self.in_lp[k]
                    && self.floors_of[k]
                        .iter()
                        .map(|&v| sol.var_value(v))
                        .sum::<f64>()
                        > self.kinds[k].usd * (1.0 + TOLERANCE)
            })
            .collect()
    }

    /// What use `i` of group `g` charges at prices `m`, with its share of the group's quota
    /// rows (λ only loosens a use's row).
    fn charged(&self, sol: &microlp::Solution, m: &[Vec<f64>], g: usize, i: usize, u: &Use) -> f64 {
        charge(m, u)
            + self
                .quotas
                .of_use(g, i)
                .map_or(0.0, |(row, draw)| draw * sol.var_value(self.peak[row]))
    }

    /// The least any use of group `g` charges at prices `m`.
    fn least(&self, sol: &microlp::Solution, m: &[Vec<f64>], g: usize) -> f64 {
        least_of(&self.groups[g], |i, u| self.charged(sol, m, g, i, u))
    }

    /// The most violated uses outside the LP, at most `PER_ROUND` a group.
    fn violated(&self, sol: &microlp::Solution) -> Vec<(usize, usize)> {
        let m = self.prices(sol, true);
        let mut out = Vec::new();
        for (g, group) in self.groups.iter().enumerate() {
            let price = sol.var_value(self.pi[g]);
            let mut worst: Vec<(f64, usize)> = group
                .uses
                .iter()
                .enumerate()
                .filter(|(i, _)| !self.added[g][*i])
                .map(|(i, u)| (price - self.charged(sol, &m, g, i, u), i))
                .filter(|(v, _)| *v > TOLERANCE * price.max(1e-9))
                .collect();
            worst.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            out.extend(worst.into_iter().take(PER_ROUND).map(|(_, i)| (g, i)));
        }
        out
    }
}

/// What a use charges at prices `m`.
fn charge(m: &[Vec<f64>], u: &Use) -> f64 {
    u.need.iter().zip(&m[u.kind]).map(|(n, p)| n * p).sum()
}

/// Returns the bound in dollars per plan hour, whether it is the LP's optimum, and the rows
/// it ended with.
pub(super) fn dual(
    kinds: &[Kind],
    groups: &[Group],
    quotas: &Quotas,
) -> Option<(f64, bool, Columns)> {
    let mut p = Problem::new(OptimizationDirection::Maximize);
    let mut d = Dual::new(kinds, groups, quotas, &mut p);
    // Each group starts with the kinds cheapest for it alone, so every π is bounded, and with
    // its cheapest kind no quota holds (all its kinds where a quota holds each): a quota the
    // seeds exhaust would otherwise leave the first LP without a bound.
    for (g, group) in groups.iter().enumerate() {
        let mut order: Vec<usize> = (0..group.uses.len()).collect();
        order.sort_by(|&a, &b| {
            alone(kinds, &group.uses[a])
                .total_cmp(&alone(kinds, &group.uses[b]))
                .then(a.cmp(&b))
        });
        let free = |&i: &usize| quotas.of(group.uses[i].kind).is_none();
        let seeds: Vec<usize> = match order.iter().position(free) {
            Some(at) if at >= SEED => order[..SEED].iter().chain([&order[at]]).copied().collect(),
            Some(_) => order[..SEED.min(order.len())].to_vec(),
            None => order.clone(),
        };
        for &i in &seeds {
            for (terms, rhs) in d.use_rows(g, i) {
                p.add_constraint(terms, ComparisonOp::Le, rhs);
            }
        }
    }
    let mut sol = match p.solve().ok()? {
        SolveOutcome::Solution(s) => s,
        SolveOutcome::Interrupted(_) => return None,
    };
    for _ in 0..ROUNDS {
        let mut rows: Vec<Row> = Vec::new();
        for k in d.broken_kinds(&sol) {
            rows.extend(d.kind_row(k));
        }
        for (g, i) in d.violated(&sol) {
            rows.extend(d.use_rows(g, i));
        }
        if rows.is_empty() {
            break;
        }
        for (terms, rhs) in rows {
            sol = match sol.add_constraint(terms, ComparisonOp::Le, rhs).ok()? {
                SolveOutcome::Solution(s) => s,
                SolveOutcome::Interrupted(_) => return None,
            };
        }
    }
    let (value, optimal) = feasible_value(&d, &sol);
    Some((value, optimal, (d.added, d.in_lp)))
}

/// The dual objective at a point made feasible whatever the rounds reached: without the
/// floors' ν where they break a kind outside the LP, and each π down to the least any of its
/// uses charges; a kind outside the LP is priced without its λ, which only loosens its row.
/// Whether no row was broken says the LP reached its optimum.
fn feasible_value(d: &Dual<'_>, sol: &microlp::Solution) -> (f64, bool) {
    let with_floors = d.broken_kinds(sol).is_empty();
    let m = d.prices(sol, with_floors);
    let mut solved = with_floors;
    let mut total = 0.0;
    for (g, group) in d.groups.iter().enumerate() {
        let price = sol.var_value(d.pi[g]);
        let least = d.least(sol, &m, g);
        if least + TOLERANCE * price.max(1e-9) < price {
            solved = false;
        }
        total += group.months * price.min(least).max(0.0);
        if let (true, Some(v)) = (with_floors, d.nu[g]) {
            total += group.floor * sol.var_value(v);
        }
    }
    for (&l, &v) in d.quotas.limit.iter().zip(&d.lambda) {
        total -= l * sol.var_value(v);
    }
    for (&l, &v) in d.quotas.peak_limit.iter().zip(&d.peak) {
        total -= l * sol.var_value(v);
    }
    (total, solved)
}
