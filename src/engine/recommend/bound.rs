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
//! - a GPU under AKS holds one profile, so at most that profile's count of instances; under
//!   the GPU Operator, its compute and its memory slices each hold what is placed on it, each
//!   profile at most its count, and at most one instance of more than half the GPU;
//! - a known quota holds the kinds that draw on it (in its region, the region is then part of
//!   the kind): their vCPUs, averaged over the month, stay within it; the peak, which the
//!   quota really holds, is at least that average; and each workload's replicas on them at
//!   once, at least its replica-hours there over the hours it runs, stay within it too;
//! - nodes are fractional; MIG placement rules beyond those and spot restarts are left out.
//!
//! It is solved through its dual, rows added as they are violated (column generation on the
//! primal). Any dual-feasible point bounds the primal from below (weak duality), and the last
//! point is made feasible before it is read, so the figure is a bound even when the rounds run
//! out before the optimum; it is then only looser, and says so.

mod dual;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::candidate::{allocatable, Candidate, Fit};
use super::choice::{fit_key, pool_sharing, Choice, FitKey};
use super::demand::{Demand, Segment};
use crate::catalog::Catalog;
use crate::core::{Capacity, Sharing};
use crate::plan::Plan;
use dual::{dual, priced_by_hand};

/// Workload shapes above which the LP costs more time than a plan's recommendation is worth
/// (openb's 135 shapes solve in a third of a second on AWS; thousands take minutes): beyond
/// it the bound is a dual point priced by hand, still a bound but looser, and says so.
const LP_GROUPS: usize = 400;

/// The bound and whether the LP reached its optimum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// US dollars a month.
    pub monthly_usd: f64,
    pub solved: bool,
}

/// Segment, SKU, sharing, fit and capacity type; and the region, where a known quota holds
/// the kind there (kinds in regions without one fold together).
pub(super) type KindKey = (Segment, String, Sharing, FitKey, Capacity, Option<String>);

/// Known quotas over the kinds: each bucket's vCPUs, and per kind the bucket it draws on and
/// the vCPUs one node takes of it.
#[derive(Debug, Clone, Default)]
pub(super) struct Quotas {
    pub(super) limit: Vec<f64>,
    of_kind: Vec<Option<(usize, f64)>>,
    /// Per (group, bucket) its workloads draw on: the bucket's vCPUs, a limit on what the
    /// group alone holds at once.
    peak_limit: Vec<f64>,
    /// Per group, per use: its (group, bucket) row and the vCPUs of nodes one replica-month
    /// of it holds at once at least.
    per_use: Vec<Vec<Option<(usize, f64)>>>,
}

impl Quotas {
    /// The quota kind `k` draws on, and the vCPUs one of its nodes takes of it.
    pub(super) fn of(&self, k: usize) -> Option<(usize, f64)> {
        self.of_kind.get(k).copied().flatten()
    }
    fn of_use(&self, g: usize, i: usize) -> Option<(usize, f64)> {
        self.per_use
            .get(g)
            .and_then(|u| u.get(i))
            .copied()
            .flatten()
    }
    /// The same quotas over the groups `held`, in that order.
    fn over(&self, held: &[usize]) -> Quotas {
        Quotas {
            per_use: held
                .iter()
                .map(|&g| self.per_use.get(g).cloned().unwrap_or_default())
                .collect(),
            ..self.clone()
        }
    }
}

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
    pub(super) quotas: Quotas,
    pub(super) bound: Option<Bound>,
    /// The uses whose rows the LP holds, per group, and the kinds whose rows it holds.
    pub(super) columns: Option<Columns>,
}

impl FleetLp {
    /// The LP for the workloads of `choices`, solved.
    pub(super) fn new(
        choices: &[Choice<'_, '_>],
        plan: &Plan,
        catalog: &Catalog,
        plan_hours: f64,
    ) -> Self {
        let (kinds, groups, keys, group_of_choice, draws) =
            problem(choices, plan, catalog, plan_hours);
        let quotas = quotas(&keys, &groups, &draws, plan, catalog);
        // A quota no kind of some workload fits leaves the LP without a solution (that
        // workload is GP014's); the bound is then the one without quotas.
        let with_quotas = solved(&kinds, &groups, &quotas, plan_hours)
            .or_else(|| solved(&kinds, &groups, &Quotas::default(), plan_hours));
        let (bound, columns) = match with_quotas {
            Some((b, columns)) => (Some(b), Some(columns)),
            None => (None, None),
        };
        FleetLp {
            kinds,
            groups,
            keys,
            group_of_choice,
            quotas,
            bound,
            columns,
        }
    }
}

/// The known quota each kind draws on, by its key's region, and each group's own rows.
fn quotas(
    keys: &[KindKey],
    groups: &[Group],
    draws: &[Vec<f64>],
    plan: &Plan,
    catalog: &Catalog,
) -> Quotas {
    let mut q = Quotas::default();
    let mut bucket_of: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (_, sku, _, _, capacity, region) in keys {
        let quota = region.as_ref().and_then(|region| {
            let sku = catalog.sku(plan.provider(), sku)?;
            let (region, family) = crate::engine::quota::bucket_of(sku, region, *capacity);
            let (limit, _) = plan.known_quota(catalog, &region, &family)?;
            let key = (region, crate::catalog::quota_key(&family));
            let b = *bucket_of.entry(key).or_insert_with(|| {
                q.limit.push(limit);
                q.limit.len() - 1
            });
            Some((b, f64::from(sku.vcpus)))
        });
        q.of_kind.push(quota);
    }
    for (group, draws) in groups.iter().zip(draws) {
        let mut rows: BTreeMap<usize, usize> = BTreeMap::new();
        let per_use = group
            .uses
            .iter()
            .zip(draws)
            .map(|(u, &draw)| {
                let (b, _) = q.of(u.kind)?;
                let row = *rows.entry(b).or_insert_with(|| {
                    q.peak_limit.push(q.limit[b]);
                    q.peak_limit.len() - 1
                });
                Some((row, draw))
            })
            .collect();
        q.per_use.push(per_use);
    }
    q
}

/// A node of `c`'s SKU: GPUs, allocatable vCPUs and RAM, then the instances of each MIG
/// profile it holds where the GPU Operator lays out mixed profiles, then its GPUs again for
/// their memory slices (the first dimension counts compute slices there): a 4g.20gb and a
/// 3g.20gb share an A100 40GB, 7 compute slices and 8 memory slices, though the larger of
/// each one's shares (4/7 and 4/8) would add up to more than the GPU. Last, its GPUs once
/// more for the instances that take more than half of either: no two fit one GPU, so a
/// 4g.20gb and a 7g.40gb each take a GPU of their own, though their slices alone would let
/// two 4g.20gb share one.
fn capacity(d: &Demand<'_>, c: &Candidate<'_>, catalog: &Catalog) -> Vec<f64> {
    let (cpu, mem) = allocatable(c.sku, catalog);
    let gpus = f64::from(c.sku.gpu_count);
    let mut cap = vec![gpus, cpu, mem];
    if let (Fit::Mig { .. }, Some(spec)) = (&c.fit, c.gpu.mig.as_ref()) {
        if d.gang <= 1 && !d.mig_manager.one_profile_per_gpu() {
            cap.extend(spec.profiles.iter().map(|p| f64::from(p.max_count) * gpus));
            cap.extend([gpus, gpus]);
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
            need[3 + spec.profiles.len()] =
                f64::from(profile.memory_slices) / f64::from(spec.memory_slices);
            if crate::mig::more_than_half(spec, profile) {
                need[4 + spec.profiles.len()] = 1.0;
            }
            f64::from(profile.compute) / f64::from(spec.compute_slices)
        }
    };
    need[1] = d.cpu;
    need[2] = d.memory_gib;
    Some(need)
}

/// The share of a node `need` takes of `cap`: the most of any of its dimensions.
fn node_fraction(need: &[f64], cap: &[f64]) -> f64 {
    need.iter()
        .zip(cap)
        .map(|(n, c)| n / c.max(1e-9))
        .fold(0.0, f64::max)
}

/// Kinds, groups, each kind's key, each choice's group, and per group and use the vCPUs one
/// replica-month there holds at once at least.
type LpParts = (
    Vec<Kind>,
    Vec<Group>,
    Vec<KindKey>,
    Vec<usize>,
    Vec<Vec<f64>>,
);

fn problem(choices: &[Choice<'_, '_>], plan: &Plan, catalog: &Catalog, plan_hours: f64) -> LpParts {
    let mut kind_of: BTreeMap<KindKey, usize> = BTreeMap::new();
    let mut kinds: Vec<Kind> = Vec::new();
    let mut group_of: BTreeMap<*const Vec<Candidate<'_>>, usize> = BTreeMap::new();
    let mut group_of_choice = Vec::with_capacity(choices.len());
    let mut groups: Vec<Group> = Vec::new();
    // Per group, the hours its replicas may run in (the sum of its workloads', at most the
    // month), and per use the vCPUs of nodes a replica running all of them holds.
    let mut span: Vec<f64> = Vec::new();
    let mut per_replica: Vec<Vec<f64>> = Vec::new();
    // The known quota each (size, region, capacity type) draws on, looked up once.
    let mut quota_of: BTreeMap<(&str, &str, Capacity), Option<f64>> = BTreeMap::new();
    for ch in choices {
        let d = &ch.d;
        let gang = f64::from(d.gang.max(1));
        let months = d.replica_hours(plan_hours) * gang / plan_hours;
        let floor = f64::from(d.availability);
        // A reserved node is paid all month: one covers at most the hours its longest-running
        // replica of this workload runs, so what it takes per replica-hour grows by the rest.
        let longest = if d.floor > 0 { plan_hours } else { d.hours };
        if let Some(&g) = group_of.get(&Arc::as_ptr(&ch.all)) {
            group_of_choice.push(g);
            groups[g].months += months;
            groups[g].floor = groups[g].floor.max(floor);
            span[g] = (span[g] + longest).min(plan_hours);
            continue;
        }
        let mut uses: BTreeMap<usize, (Use, f64)> = BTreeMap::new();
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
                let quota = *quota_of
                    .entry((c.sku.name.as_str(), c.region.as_str(), r.capacity))
                    .or_insert_with(|| {
                        let (region, family) =
                            crate::engine::quota::bucket_of(c.sku, &c.region, r.capacity);
                        plan.known_quota(catalog, &region, &family).map(|q| q.0)
                    });
                // One node, or a gang's nodes together, beyond the quota: no such fleet.
                let at_once = f64::from(c.sku.vcpus) * if d.gang > 1 { gang } else { 1.0 };
                if quota.is_some_and(|q| at_once > q + 1e-9) {
                    continue;
                }
                let key = (
                    d.segment,
                    c.sku.name.clone(),
                    pool_sharing(&c.fit),
                    fit_key(&c.fit, d.mig_manager),
                    r.capacity,
                    quota.is_some().then(|| c.region.clone()),
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
                let share = node_fraction(&need, &cap);
                uses.insert(
                    k,
                    (
                        Use {
                            kind: k,
                            need: need.iter().map(|x| x * stretch).collect(),
                        },
                        share * f64::from(c.sku.vcpus),
                    ),
                );
            }
        }
        group_of.insert(Arc::as_ptr(&ch.all), groups.len());
        group_of_choice.push(groups.len());
        let (uses, draws): (Vec<Use>, Vec<f64>) = uses.into_values().unzip();
        groups.push(Group {
            months,
            floor,
            uses,
        });
        span.push(longest.min(plan_hours));
        per_replica.push(draws);
    }
    // A replica-month spread over the hours the group runs is that many replicas at once.
    let draws = per_replica
        .into_iter()
        .zip(&span)
        .map(|(d, &h)| {
            let at_once = if h > 0.0 { plan_hours / h } else { 0.0 };
            d.into_iter().map(|x| x * at_once).collect()
        })
        .collect();
    // Each kind's key, by its index: the map read the other way.
    let mut keys: Vec<Option<KindKey>> = vec![None; kinds.len()];
    for (key, k) in kind_of {
        keys[k] = Some(key);
    }
    let keys = keys.into_iter().flatten().collect();
    (kinds, groups, keys, group_of_choice, draws)
}

/// The LP bound of `groups` on `kinds` in dollars a month of `plan_hours`, or `None` when
/// there is nothing to bound or the solver fails. The bench builds its own kinds and groups
/// from the catalog, not from the recommender's candidates, and bounds with this.
pub fn solve(kinds: &[Kind], groups: &[Group], plan_hours: f64) -> Option<Bound> {
    solved(kinds, groups, &Quotas::default(), plan_hours).map(|s| s.0)
}

/// Columns of the LP's rows: uses per group, and kinds.
pub(super) type Columns = (Vec<Vec<bool>>, Vec<bool>);

/// [`solve`], with the rows the LP ended with. A group no kind can hold is left out.
fn solved(
    kinds: &[Kind],
    groups: &[Group],
    quotas: &Quotas,
    plan_hours: f64,
) -> Option<(Bound, Columns)> {
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
    let (months, solved, (kept_added, in_lp)) = dual(kinds, &kept, &quotas.over(&held))?;
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

#[cfg(test)]
mod tests;
