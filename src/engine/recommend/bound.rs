//! A lower bound on what any fleet for the plan's satisfiable workloads costs, so that the
//! recommendation can say how far it is from the cheapest one: the LP relaxation of the
//! fleet problem over every SKU, region and capacity type each workload may use, not only the
//! ones the stages chose.
//!
//! The relaxation, over every replica-hour of every workload:
//! - a node *kind* is (segment, SKU, sharing setting, capacity type): segments never share a
//!   node, and a node has one sharing setting (one time-slicing replica count, one MIG
//!   manager). Regions fold into the kind at its lowest rate in any of the plan's regions
//!   (spot at list price without restarts), which can only lower the bound;
//! - a kind's node-hours hold the replica-hours placed on it in GPUs, allocatable vCPUs and
//!   allocatable RAM (a gang member takes a whole node); a reserved node is paid all month,
//!   so a replica on it takes the month's hours, not only the hours it runs (all of them for
//!   a floor);
//! - the pool a workload runs in keeps its availability floor of nodes all month;
//! - a GPU under AKS holds one profile, so at most that profile's count of instances;
//! - nodes are fractional; MIG placement rules, quotas and spot restarts are left out.
//!
//! It is solved through its dual, rows added as they are violated (column generation on the
//! primal). Any dual-feasible point bounds the primal from below (weak duality), and the last
//! point is made feasible before it is read, so the figure is a bound even when the rounds run
//! out before the optimum; it is then only looser, and says so.

use std::collections::BTreeMap;
use std::sync::Arc;

use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOutcome, Variable};

use super::candidate::{allocatable, Candidate, Fit};
use super::choice::{fit_key, pool_sharing, Choice, FitKey};
use super::demand::{Demand, Segment};
use crate::catalog::Catalog;
use crate::plan::raw::{Capacity, Sharing};

/// Rounds of adding violated rows before the bound settles for what it has.
const ROUNDS: usize = 60;
/// Rows one workload may gain per round (its most violated ones).
const PER_ROUND: usize = 2;
/// Kinds each workload starts with: its cheapest for its own shape.
const SEED: usize = 3;
/// Workload shapes above which the LP costs more time than a plan's recommendation is worth
/// (openb's 135 shapes solve in a third of a second on AWS; thousands take minutes): beyond
/// it the bound is a dual point priced by hand, still a bound but looser, and says so.
const LP_GROUPS: usize = 400;
/// A violation smaller than this share of the workload's dual price is none.
const TOLERANCE: f64 = 1e-7;

/// The bound and whether the LP reached its optimum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// US dollars a month.
    pub monthly_usd: f64,
    pub solved: bool,
}

pub(super) type KindKey = (Segment, String, Sharing, FitKey, Capacity);

/// A kind of node in the LP: what one costs an hour and what it holds.
#[derive(Debug, Clone)]
pub struct Kind {
    /// Lowest hourly rate a workload of the kind may pay for one node.
    pub usd: f64,
    /// GPUs, allocatable vCPUs and RAM of one node, then, for a GPU the GPU Operator
    /// partitions, the instances of each MIG profile its GPUs hold at most (the profile's
    /// count per GPU times the GPUs): a 4g.20gb has one place on an A100, however few
    /// slices the others take.
    pub cap: Vec<f64>,
}

/// Workloads taken together in the LP (one shape, or one workload).
#[derive(Debug, Clone)]
pub struct Group {
    /// Replica-hours a month (gang members counted each), in plan months.
    pub months: f64,
    /// Nodes the pool that holds it keeps all month (its availability floor).
    pub floor: f64,
    /// Each kind it may use.
    pub uses: Vec<Use>,
}

/// A kind a group may use, and what one of its replicas takes of a node there.
#[derive(Debug, Clone)]
pub struct Use {
    /// An index into the kinds.
    pub kind: usize,
    /// What one replica takes of each of the kind's `cap`.
    pub need: Vec<f64>,
}

/// The fleet LP of a recommendation's workloads, solved: the bound, and what the guided
/// choice (`guide`) reads of it.
pub(super) struct FleetLp {
    pub(super) kinds: Vec<Kind>,
    pub(super) groups: Vec<Group>,
    /// What each kind is.
    pub(super) keys: Vec<KindKey>,
    /// The group of each choice, by the choice's index.
    pub(super) group_of_choice: Vec<usize>,
    pub(super) bound: Option<Bound>,
    /// The uses whose rows the LP holds, per group, and the kinds whose rows it holds.
    pub(super) columns: Option<Columns>,
}

impl FleetLp {
    /// The LP for the workloads of `choices`, solved.
    pub(super) fn new(choices: &[Choice<'_, '_>], catalog: &Catalog, plan_hours: f64) -> Self {
        let (kinds, groups, keys, group_of_choice) = problem(choices, catalog, plan_hours);
        let (bound, columns) = match solved(&kinds, &groups, plan_hours) {
            Some((b, columns)) => (Some(b), Some(columns)),
            None => (None, None),
        };
        FleetLp {
            kinds,
            groups,
            keys,
            group_of_choice,
            bound,
            columns,
        }
    }
}

/// A node of `c`'s SKU: GPUs, allocatable vCPUs and RAM, then the instances of each MIG
/// profile it holds where the GPU Operator lays out mixed profiles.
fn capacity(d: &Demand<'_>, c: &Candidate<'_>, catalog: &Catalog) -> Vec<f64> {
    let (cpu, mem) = allocatable(c.sku, catalog);
    let gpus = f64::from(c.sku.gpu_count);
    let mut cap = vec![gpus, cpu, mem];
    if let (Fit::Mig { .. }, Some(spec)) = (&c.fit, c.gpu.mig.as_ref()) {
        if d.gang <= 1 && !d.mig_manager.one_profile_per_gpu() {
            cap.extend(spec.profiles.iter().map(|p| f64::from(p.max_count) * gpus));
        }
    }
    cap
}

/// What a replica takes of `cap`, a node of `c`'s SKU.
fn need(d: &Demand<'_>, c: &Candidate<'_>, cap: &[f64]) -> Option<Vec<f64>> {
    let mut need = vec![0.0; cap.len()];
    need[0] = match &c.fit {
        _ if d.gang > 1 => return Some(cap.to_vec()),
        Fit::Whole { gpus } => f64::from(*gpus),
        Fit::Shared { replicas, .. } => 1.0 / f64::from((*replicas).max(1)),
        Fit::Server { share } => *share,
        // One profile per GPU: the instances of it a GPU holds, whatever the slices left.
        Fit::Mig { profile } if d.mig_manager.one_profile_per_gpu() => {
            1.0 / f64::from(profile.max_count.max(1))
        }
        Fit::Mig { profile } => {
            let spec = c.gpu.mig.as_ref()?;
            let at = spec.profiles.iter().position(|p| p.name == profile.name)?;
            need[3 + at] = 1.0;
            (f64::from(profile.compute) / f64::from(spec.compute_slices))
                .max(f64::from(profile.memory_slices) / f64::from(spec.memory_slices))
        }
    };
    need[1] = d.cpu;
    need[2] = d.memory_gib;
    Some(need)
}

/// Kinds, groups, each kind's key, and each choice's group.
type LpParts = (Vec<Kind>, Vec<Group>, Vec<KindKey>, Vec<usize>);

fn problem(choices: &[Choice<'_, '_>], catalog: &Catalog, plan_hours: f64) -> LpParts {
    let mut kind_of: BTreeMap<KindKey, usize> = BTreeMap::new();
    let mut kinds: Vec<Kind> = Vec::new();
    let mut group_of: BTreeMap<*const Vec<Candidate<'_>>, usize> = BTreeMap::new();
    let mut group_of_choice = Vec::with_capacity(choices.len());
    let mut groups: Vec<Group> = Vec::new();
    for ch in choices {
        let d = &ch.d;
        let gang = f64::from(d.gang.max(1));
        let months = d.replica_hours(plan_hours) * gang / plan_hours;
        let floor = f64::from(d.availability);
        if let Some(&g) = group_of.get(&Arc::as_ptr(&ch.all)) {
            group_of_choice.push(g);
            groups[g].months += months;
            groups[g].floor = groups[g].floor.max(floor);
            continue;
        }
        let mut uses: BTreeMap<usize, Use> = BTreeMap::new();
        // A reserved node is paid all month: one covers at most the hours its longest-running
        // replica of this workload runs, so what it takes per replica-hour grows by the rest.
        let longest = if d.floor > 0 { plan_hours } else { d.hours };
        for c in ch.all.iter() {
            let cap = capacity(d, c, catalog);
            let Some(need) = need(d, c, &cap) else {
                continue;
            };
            for r in c.rates(d) {
                let reserved = r.capacity.is_reserved();
                if reserved && longest <= 0.0 {
                    continue;
                }
                let key = (
                    d.segment,
                    c.sku.name.clone(),
                    pool_sharing(&c.fit),
                    fit_key(&c.fit, d.mig_manager),
                    r.capacity,
                );
                let k = *kind_of.entry(key).or_insert_with(|| {
                    kinds.push(Kind {
                        usd: r.usd,
                        cap: cap.clone(),
                    });
                    kinds.len() - 1
                });
                kinds[k].usd = kinds[k].usd.min(r.usd);
                let stretch = if reserved { plan_hours / longest } else { 1.0 };
                uses.insert(
                    k,
                    Use {
                        kind: k,
                        need: need.iter().map(|x| x * stretch).collect(),
                    },
                );
            }
        }
        group_of.insert(Arc::as_ptr(&ch.all), groups.len());
        group_of_choice.push(groups.len());
        groups.push(Group {
            months,
            floor,
            uses: uses.into_values().collect(),
        });
    }
    // Each kind's key, by its index: the map read the other way.
    let mut keys: Vec<Option<KindKey>> = vec![None; kinds.len()];
    for (key, k) in kind_of {
        keys[k] = Some(key);
    }
    let keys = keys.into_iter().flatten().collect();
    (kinds, groups, keys, group_of_choice)
}

/// Node-months one replica-month of a use takes, priced: its cost alone on the kind.
fn alone(kinds: &[Kind], u: &Use) -> f64 {
    let kind = &kinds[u.kind];
    let share = (0..kind.cap.len())
        .map(|j| u.need[j] / kind.cap[j].max(1e-9))
        .fold(0.0, f64::max);
    share * kind.usd
}

/// The LP bound of `groups` on `kinds` in dollars a month of `plan_hours`, or `None` when
/// there is nothing to bound or the solver fails. The bench builds its own kinds and groups
/// from the catalog, not from the recommender's candidates, and bounds with this.
pub fn solve(kinds: &[Kind], groups: &[Group], plan_hours: f64) -> Option<Bound> {
    solved(kinds, groups, plan_hours).map(|s| s.0)
}

/// Columns of the LP's rows: uses per group, and kinds.
pub(super) type Columns = (Vec<Vec<bool>>, Vec<bool>);

/// [`solve`], with the rows the LP ended with. A group no kind can hold is left out.
fn solved(kinds: &[Kind], groups: &[Group], plan_hours: f64) -> Option<(Bound, Columns)> {
    if groups.iter().all(|g| g.months <= 0.0 || g.uses.is_empty()) {
        return None;
    }
    // A group no kind can hold stays out of the LP (its π would have no row).
    let held: Vec<usize> = (0..groups.len())
        .filter(|&g| !groups[g].uses.is_empty())
        .collect();
    if held.len() > LP_GROUPS {
        let months = priced_by_hand(kinds, groups);
        return (months > 0.0).then_some((
            Bound {
                monthly_usd: months * plan_hours,
                solved: false,
            },
            (vec![Vec::new(); groups.len()], vec![false; kinds.len()]),
        ));
    }
    let kept: Vec<Group> = held.iter().map(|&g| groups[g].clone()).collect();
    let (months, solved, (kept_added, in_lp)) = dual(kinds, &kept)?;
    let mut added: Vec<Vec<bool>> = vec![Vec::new(); groups.len()];
    for (a, &g) in kept_added.into_iter().zip(&held) {
        added[g] = a;
    }
    let columns = (added, in_lp);
    (months > 0.0).then_some((
        Bound {
            monthly_usd: months * plan_hours,
            solved,
        },
        columns,
    ))
}

/// The dual point no LP is solved for: each kind's rate on the dimension its work weighs
/// most on, each workload paying the least any of its kinds then charges, floors left out.
/// A feasible dual point, so a bound, in time linear in the uses: for estates too large for
/// the LP.
fn priced_by_hand(kinds: &[Kind], groups: &[Group]) -> f64 {
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
    group
        .uses
        .iter()
        .map(|u| charge(m, u))
        .fold(f64::INFINITY, f64::min)
}

/// The dual: maximise Σ months·π + Σ floor·ν subject to, per kind,
/// Σ_j cap_j·μ_j + Σ ν (of the groups that may use it) ≤ rate, and per use,
/// π − Σ_j need_j·μ_j ≤ 0. Rows enter as they are violated, kinds' rows too: a kind outside
/// the LP is priced by hand (its whole rate on its heaviest dimension), which keeps its row.
struct Dual<'a> {
    kinds: &'a [Kind],
    groups: &'a [Group],
    pi: Vec<Variable>,
    nu: Vec<Option<Variable>>,
    mu: Vec<Vec<Variable>>,
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
    fn new(kinds: &'a [Kind], groups: &'a [Group], p: &mut Problem) -> Dual<'a> {
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
                .map(|(i, u)| (price - charge(&m, u), i))
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
fn dual(kinds: &[Kind], groups: &[Group]) -> Option<(f64, bool, Columns)> {
    let mut p = Problem::new(OptimizationDirection::Maximize);
    let mut d = Dual::new(kinds, groups, &mut p);
    // Each group starts with the kinds cheapest for it alone, so every π is bounded.
    for (g, group) in groups.iter().enumerate() {
        let mut order: Vec<usize> = (0..group.uses.len()).collect();
        order.sort_by(|&a, &b| {
            alone(kinds, &group.uses[a])
                .total_cmp(&alone(kinds, &group.uses[b]))
                .then(a.cmp(&b))
        });
        for &i in order.iter().take(SEED) {
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
/// uses charges. Whether no row was broken says the LP reached its optimum.
fn feasible_value(d: &Dual<'_>, sol: &microlp::Solution) -> (f64, bool) {
    let with_floors = d.broken_kinds(sol).is_empty();
    let m = d.prices(sol, with_floors);
    let mut solved = with_floors;
    let mut total = 0.0;
    for (g, group) in d.groups.iter().enumerate() {
        let price = sol.var_value(d.pi[g]);
        let least = least(&m, group);
        if least + TOLERANCE * price.max(1e-9) < price {
            solved = false;
        }
        total += group.months * price.min(least).max(0.0);
        if let (true, Some(v)) = (with_floors, d.nu[g]) {
            total += group.floor * sol.var_value(v);
        }
    }
    (total, solved)
}

#[cfg(test)]
mod tests;
