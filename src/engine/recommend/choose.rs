//! Choosing: each workload on its cheapest candidate and capacity type alone, and the
//! grouping of choices into pools by segment, SKU, region, capacity and sharing settings.

use super::*;

/// A workload's choice: where, and on what capacity.
pub(super) struct Choice<'p, 'c> {
    pub(super) d: Demand<'p>,
    pub(super) c: Candidate<'c>,
    pub(super) rate: Rate,
    /// Every candidate the workload had (for alternatives), shared by every workload of the
    /// same shape ([`demand::Demand::shape`]): an estate of thousands of identical jobs holds
    /// one list, not thousands.
    pub(super) all: std::sync::Arc<Vec<Candidate<'c>>>,
}

impl<'p, 'c> Choice<'p, 'c> {
    /// The same workload on another candidate and rate, as a trial member of a pool (without
    /// its other candidates, which only the first choice needs).
    pub(super) fn with(&self, c: Candidate<'c>, rate: Rate) -> Choice<'p, 'c> {
        Choice {
            d: self.d.clone(),
            c,
            rate,
            all: std::sync::Arc::default(),
        }
    }
}

/// Expected monthly cost of one workload on a candidate at a rate, from its node share (a
/// perfect packing); used to choose, not to report.
pub(super) fn estimate(d: &Demand<'_>, c: &Candidate<'_>, r: &Rate, plan_hours: f64) -> f64 {
    let share = c.node_share * f64::from(d.gang.max(1));
    let floor = f64::from(d.floor);
    let burst = f64::from(d.peak - d.floor);
    match r.capacity {
        // The floor reserved; each steady replica above it reserved too when its hours beat
        // the break-even (as `build` reserves the k-th node), else on-demand for its hours;
        // the peak on-demand.
        Capacity::Reserved1y | Capacity::Reserved3y => {
            let steady = f64::from(d.steady() - d.floor);
            let peak = f64::from(d.peak - d.steady());
            share
                * (floor * r.usd * HOURS_PER_MONTH
                    + steady * (c.on_demand * d.hours).min(r.usd * HOURS_PER_MONTH)
                    + peak * c.on_demand * d.peak_hours())
        }
        // A block is paid for the whole length sold, not the gang's hours alone.
        Capacity::CapacityBlock => {
            let h = crate::engine::cost::block_paid_hours(c.sku.provider, d.hours);
            share * r.usd * (floor * plan_hours + burst * h)
        }
        Capacity::OnDemand | Capacity::Spot | Capacity::CapacityReservation => {
            share * r.usd * r.waste * d.replica_hours(plan_hours)
        }
    }
}

pub(super) fn best_choice<'c>(
    d: &Demand<'_>,
    all: &[Candidate<'c>],
    plan_hours: f64,
) -> Option<(usize, Rate)> {
    let mut best: Option<(f64, usize, usize, Rate)> = None;
    for (i, c) in all.iter().enumerate() {
        for r in c.rates(d) {
            let cost = estimate(d, c, &r, plan_hours);
            let better = match &best {
                None => true,
                // Cheaper by more than a cent; on a tie the preferred region, then the
                // simpler commitment (on-demand before spot before reservations).
                Some((bc, _, rank, br)) => {
                    cost < bc - 0.005
                        || ((cost - bc).abs() <= 0.005
                            && (c.region_rank, cap_order(r.capacity))
                                < (*rank, cap_order(br.capacity)))
                }
            };
            if better {
                best = Some((cost, i, c.region_rank, r));
            }
        }
    }
    best.map(|(_, i, _, r)| (i, r))
}

/// Each workload with demand on its cheapest candidate and capacity type alone, and the
/// workloads no candidate can run, with why.
pub(super) fn first_choices<'p, 'c>(
    plan: &'p Plan,
    catalog: &'c Catalog,
    plan_hours: f64,
) -> (Vec<Choice<'p, 'c>>, Vec<Unsatisfied>) {
    let mut unsatisfied = Vec::new();
    let mut choices = Vec::new();
    // Candidates and the first choice depend on a demand's shape alone, never its name:
    // worked out once per shape.
    type Found<'c> = Result<
        (std::sync::Arc<Vec<Candidate<'c>>>, Option<(usize, Rate)>),
        Vec<candidate::Rejection>,
    >;
    let mut by_shape: std::collections::HashMap<String, Found<'c>> =
        std::collections::HashMap::new();
    for d in demand::demands(plan, catalog) {
        if d.peak == 0 {
            continue;
        }
        let found = by_shape.entry(d.shape()).or_insert_with(|| {
            candidate::candidates(plan, catalog, &d).map(|all| {
                let best = best_choice(&d, &all, plan_hours);
                (std::sync::Arc::new(all), best)
            })
        });
        match found {
            Err(rejections) => unsatisfied.push(explain_rejections(plan, &d, rejections)),
            Ok((all, best)) => {
                if let Some((i, rate)) = best.clone() {
                    let c = all[i].clone();
                    let all = std::sync::Arc::clone(all);
                    choices.push(Choice { d, c, rate, all });
                }
            }
        }
    }
    (choices, unsatisfied)
}

pub(super) fn cap_order(c: Capacity) -> u8 {
    match c {
        Capacity::OnDemand => 0,
        Capacity::Spot => 1,
        Capacity::Reserved1y => 2,
        Capacity::Reserved3y => 3,
        Capacity::CapacityReservation => 4,
        Capacity::CapacityBlock => 5,
    }
}

/// The (candidate, rate) a choice holds, as an index into its candidates.
pub(super) fn pick_of(ch: &Choice<'_, '_>) -> (usize, Rate) {
    let i = ch
        .all
        .iter()
        .position(|c| c.sku.name == ch.c.sku.name && c.region == ch.c.region)
        .unwrap_or(0);
    (i, ch.rate.clone())
}

pub(super) fn apply(choices: &mut [Choice<'_, '_>], picks: &[(usize, Rate)]) {
    for (ch, (i, rate)) in choices.iter_mut().zip(picks) {
        ch.c = ch.all[*i].clone();
        ch.rate = rate.clone();
    }
}

/// Workloads that chose the same SKU, region, capacity and sharing settings, and may share
/// nodes, form one pool.
pub(super) fn group(choices: &[Choice<'_, '_>]) -> BTreeMap<PoolKey, Vec<usize>> {
    let mut groups: BTreeMap<PoolKey, Vec<usize>> = BTreeMap::new();
    for (i, ch) in choices.iter().enumerate() {
        let key = (
            ch.d.segment,
            ch.c.sku.name.clone(),
            ch.c.region.clone(),
            ch.rate.capacity,
            pool_sharing(&ch.c.fit),
            fit_key(&ch.c.fit, ch.d.mig_manager),
        );
        groups.entry(key).or_default().push(i);
    }
    groups
}

/// The sharing settings that split pools: the fit without the replica-specific parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum FitKey {
    Whole,
    Mig(Option<String>),
    /// Replicas per GPU, and whether they are MPS clients.
    Shared(u32, bool),
    Server,
}

impl Fit {
    /// Time-sliced (or MPS) replicas per GPU, where the fit shares a GPU among several.
    pub(super) fn shared_replicas(&self) -> Option<u32> {
        match self {
            Fit::Shared { replicas, .. } => (*replicas > 1).then_some(*replicas),
            Fit::Whole { .. } | Fit::Mig { .. } | Fit::Server { .. } => None,
        }
    }
    /// The MIG profile, where the fit is a MIG instance.
    pub(super) fn mig_profile(&self) -> Option<&crate::catalog::MigProfile> {
        match self {
            Fit::Mig { profile } => Some(profile),
            Fit::Whole { .. } | Fit::Shared { .. } | Fit::Server { .. } => None,
        }
    }
}

impl FitKey {
    /// Replicas per GPU of a shared pool's key.
    pub(super) fn shares(&self) -> Option<u32> {
        match self {
            FitKey::Shared(n, _) => Some(*n),
            FitKey::Whole | FitKey::Mig(_) | FitKey::Server => None,
        }
    }
}

pub(super) fn fit_key(fit: &Fit, mig_manager: MigManager) -> FitKey {
    match fit {
        Fit::Whole { .. } => FitKey::Whole,
        Fit::Mig { profile } => FitKey::Mig(match mig_manager {
            MigManager::Aks => Some(profile.name.clone()),
            MigManager::GpuOperator => None,
        }),
        Fit::Shared { replicas, .. } if *replicas <= 1 => FitKey::Whole,
        Fit::Shared { replicas, mps } => FitKey::Shared(*replicas, *mps),
        Fit::Server { .. } => FitKey::Server,
    }
}

pub(super) type PoolKey = (Segment, String, String, Capacity, Sharing, FitKey);

pub(super) fn pool_sharing(fit: &Fit) -> Sharing {
    match fit {
        Fit::Whole { .. } | Fit::Server { .. } => Sharing::Dedicated,
        Fit::Shared { replicas, .. } if *replicas <= 1 => Sharing::Dedicated,
        Fit::Mig { .. } => Sharing::Mig,
        Fit::Shared { mps: true, .. } => Sharing::Mps,
        Fit::Shared { mps: false, .. } => Sharing::TimeSlicing,
    }
}

/// Three ways to choose, each packed for real; the cheapest fleet wins. Choosing alone is
/// exact for plans whose workloads never share a pool; the local searches let workloads move
/// to where they complement each other (see `improve`).
pub(super) fn cheapest_strategy(cx: &Cx<'_, '_>, choices: &mut Vec<Choice<'_, '_>>) {
    let (catalog, plan_hours, cache) = (cx.catalog, cx.plan_hours, &cx.cache);
    let greedy: Vec<(usize, Rate)> = choices.iter().map(|ch| pick_of(ch)).collect();
    let mut best: Option<(f64, Vec<(usize, Rate)>)> = None;
    for strategy in [
        None,
        Some(improve::Objective::Fluid),
        Some(improve::Objective::Whole),
    ] {
        let picks = match strategy {
            None => greedy.clone(),
            Some(objective) => {
                let mut opts: Vec<improve::Options<'_, '_>> = choices
                    .iter()
                    .zip(&greedy)
                    .map(|(ch, g)| improve::Options::new(&ch.d, &ch.all, g))
                    .collect();
                improve::improve(&mut opts, catalog, plan_hours, objective);
                opts.iter().map(|o| o.options[o.pick].clone()).collect()
            }
        };
        apply(choices, &picks);
        let mut groups = group(choices);
        // Only AKS-managed MIG pools (one profile each) form families to merge. Costed
        // without splitting workloads: a split adds choices, and these picks are trials.
        merge_aks_profiles(&mut groups, choices, catalog, plan_hours, false);
        let cost: f64 = groups
            .iter()
            .map(|(key, members)| {
                let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
                build_cached(cache, &ms, key.3, catalog, plan_hours, false).cost
            })
            .sum();
        if best.as_ref().is_none_or(|(b, _)| cost < b - 0.005) {
            best = Some((cost, picks));
        }
    }
    if let Some((_, picks)) = best {
        apply(choices, &picks);
    }
}

/// The pools the choices form; under AKS, profiles merged upwards where that saves nodes.
pub(super) fn pools_of(cx: &Cx<'_, '_>, choices: &mut Vec<Choice<'_, '_>>) -> Groups {
    let mut groups = group(choices);
    merge_aks_profiles(&mut groups, choices, cx.catalog, cx.plan_hours, true);
    groups
}
