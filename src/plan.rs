//! The plan model: loading a plan file (syntax, types, unknown keys) and validating what it
//! means (names, references, ranges, catalog names). Every problem found is reported, with
//! file, line and column, before any rule runs.

use std::sync::Arc;

use indexmap::IndexMap;

use crate::catalog::Catalog;
use crate::diag::Diag;
use crate::source::SourceFile;

pub mod limits;
pub mod load;
mod raw;
mod rule_ids;
mod validate;

pub use rule_ids::PLAN_WIDE;
// The plan's vocabulary: the tables of a validated plan, reached through `Plan`. The raw
// document's module stays here: outside it, a plan that has not validated is read only for
// the provider whose catalog validates it (`load::Partial::provider`).
pub use raw::{
    Allow, Cluster, Count, Decision, MigLayouts, Model, PlanMeta, Pool, Quota, RawPlan, RuleLevels,
    Server, Workload,
};

pub(crate) use validate::unknown_member;

pub use crate::core::Date;
use crate::core::{Capacity, Kind, MigManager, Provider, Sharing, Sp};
pub use crate::diag::PlanCode;

/// A plan that parsed and validated: names are unique, references resolve, ranges hold,
/// SKUs, regions and GPU models exist in the catalog.
#[derive(Debug)]
pub struct Plan {
    pub file: Arc<SourceFile>,
    raw: raw::RawPlan,
    workloads: IndexMap<String, usize>,
    pools: IndexMap<String, usize>,
    decisions: IndexMap<String, usize>,
}

impl Plan {
    /// The one way to a plan: parse and validate one plan file (what it means, the catalog
    /// names and the rule ids it names), every problem at once on failure.
    pub fn load(file: Arc<SourceFile>, catalog: &Catalog) -> Result<Plan, Vec<Diag>> {
        let parsed = load::parse(&file)?;
        rule_ids::validated(file, parsed, catalog)
    }

    /// [`Plan::load`] in two steps, for a caller that loads the catalog the plan names after
    /// parsing it.
    pub fn from_parsed(
        file: Arc<SourceFile>,
        parsed: load::Partial,
        catalog: &Catalog,
    ) -> Result<Plan, Vec<Diag>> {
        rule_ids::validated(file, parsed, catalog)
    }

    /// The `[plan]` table.
    pub fn meta(&self) -> &PlanMeta {
        &self.raw.plan
    }
    /// The `[cluster]` table, where the plan has one.
    pub fn cluster(&self) -> Option<&Cluster> {
        self.raw.cluster.as_ref().map(Sp::get)
    }
    /// The `[rules]` table, where the plan has one.
    pub fn rule_levels(&self) -> Option<&RuleLevels> {
        self.raw.rules.as_ref().map(Sp::get)
    }

    pub(crate) fn name(&self) -> &str {
        self.raw.plan.name.get()
    }
    pub fn provider(&self) -> Provider {
        *self.raw.plan.provider.get()
    }
    pub fn regions(&self) -> impl Iterator<Item = &str> {
        self.raw.plan.regions.iter().map(|r| r.get().as_str())
    }
    /// The longest reservation the plan allows (`[plan] reservation_term`, default 1 year).
    pub fn reservation_term(&self) -> crate::core::ReservationTerm {
        self.raw
            .plan
            .reservation_term
            .as_ref()
            .map_or_else(Default::default, |t| *t.get())
    }

    /// Hours a month a workload runs: its own `hours_per_month`, else the plan's, never more
    /// than the plan's month.
    pub fn workload_hours(&self, w: &crate::plan::raw::Workload) -> f64 {
        let plan = self.hours_per_month();
        w.hours_per_month
            .as_ref()
            .map_or(plan, |h| *h.get())
            .min(plan)
    }

    pub fn hours_per_month(&self) -> f64 {
        self.raw
            .plan
            .hours_per_month
            .as_ref()
            .map_or(crate::core::HOURS_PER_MONTH, |h| *h.get())
    }
    pub(crate) fn monthly_budget(&self) -> Option<&Sp<f64>> {
        self.raw.plan.monthly_budget.as_ref()
    }
    pub(crate) fn mig_manager(&self) -> Option<MigManager> {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.mig_manager.as_ref())
            .map(|m| *m.get())
    }
    /// The MIG manager of `pool`: its own, else the cluster's, else the provider's (AKS's
    /// managed MIG on Azure, the GPU Operator's mig-manager on AWS, which has no managed MIG).
    pub(crate) fn pool_mig_manager(&self, pool: &raw::Pool) -> MigManager {
        pool.mig_manager
            .as_ref()
            .map(|m| *m.get())
            .unwrap_or_else(|| self.cluster_mig_manager())
    }
    /// The cluster's MIG manager, or the provider's default.
    pub(crate) fn cluster_mig_manager(&self) -> MigManager {
        self.mig_manager()
            .unwrap_or(crate::cloud::profile(self.provider()).default_mig_manager)
    }
    pub(crate) fn daemonset_cpu(&self) -> Option<f64> {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.daemonset_cpu.as_ref())
            .map(|v| *v.get())
    }
    pub(crate) fn fail_requests_greater_than_one(&self) -> bool {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.fail_requests_greater_than_one.as_ref())
            .is_some_and(|b| *b.get())
    }
    pub fn workloads(&self) -> &[Sp<Workload>] {
        &self.raw.workload
    }
    pub(crate) fn pools(&self) -> &[Sp<Pool>] {
        &self.raw.pool
    }
    pub(crate) fn allows(&self) -> &[Sp<Allow>] {
        &self.raw.allow
    }
    pub(crate) fn workload(&self, name: &str) -> Option<&Sp<Workload>> {
        self.workloads.get(name).map(|&i| &self.raw.workload[i])
    }
    pub(crate) fn pool(&self, name: &str) -> Option<&Sp<Pool>> {
        self.pools.get(name).map(|&i| &self.raw.pool[i])
    }
    pub(crate) fn decision(&self, fault_domain: &str) -> Option<&Sp<Decision>> {
        self.decisions
            .get(fault_domain)
            .map(|&i| &self.raw.decision[i])
    }
    /// The sizes of the pool `pool` is one size of: every declared pool whose nodes carry its
    /// `gpuplan.io/pool` label (`pool_label`, else its name), in plan order. A pool of one
    /// size is its own.
    pub(crate) fn sizes_of<'a>(&'a self, pool: &'a Pool) -> Vec<&'a Sp<Pool>> {
        let label = |p: &'a Pool| p.pool_label.as_ref().unwrap_or(&p.name).get().as_str();
        self.pools()
            .iter()
            .filter(|p| label(p) == label(pool))
            .collect()
    }
    /// Workloads a pool names, in the pool's order.
    pub(crate) fn pool_workloads<'a>(
        &'a self,
        pool: &'a Pool,
    ) -> impl Iterator<Item = &'a Sp<Workload>> {
        pool.workloads.iter().filter_map(|w| self.workload(w))
    }
    /// Pools that name a workload.
    pub(crate) fn workload_pools<'a>(
        &'a self,
        workload: &'a str,
    ) -> impl Iterator<Item = &'a Sp<Pool>> {
        self.raw
            .pool
            .iter()
            .filter(move |p| p.workloads.iter().any(|w| w.get() == workload))
    }
}

impl Workload {
    /// Whether its `skus` allow-list, if it has one, names `sku`.
    pub(crate) fn allows_sku(&self, sku: &str) -> bool {
        self.skus
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s.get() == sku))
    }
    /// Whether its `gpu_models` allow-list, if it has one, names GPU model `gpu` (a catalog
    /// name): each entry is read through the catalog, aliases included.
    pub(crate) fn allows_gpu(&self, catalog: &Catalog, gpu: &str) -> bool {
        self.gpu_models.as_ref().is_none_or(|l| {
            l.iter()
                .any(|m| catalog.gpu(m.get()).is_some_and(|g| g.name == gpu))
        })
    }
    pub(crate) fn user_facing(&self) -> bool {
        self.user_facing.as_ref().is_some_and(|b| *b.get())
    }
    pub(crate) fn interruptible(&self) -> bool {
        self.interruptible.as_ref().is_some_and(|b| *b.get())
    }
    pub(crate) fn scale_to_zero(&self) -> bool {
        self.scale_to_zero.as_ref().is_some_and(|b| *b.get())
    }
    /// Replicas it keeps when idle: none when it may scale to zero, else its minimum.
    pub(crate) fn kept_min(&self) -> u32 {
        if self.scale_to_zero() {
            0
        } else {
            u32::try_from(self.replicas().min().max(0)).unwrap_or(0)
        }
    }
    /// Nodes its pools keep at least: for user-facing work the plan's `availability_floor`,
    /// else `default` (providers/assumptions.toml); 0 for work nobody waits on.
    pub(crate) fn availability_nodes(&self, default: u32) -> u32 {
        if !self.user_facing() {
            return 0;
        }
        self.availability_floor
            .as_ref()
            .map_or(default, |a| u32::try_from(*a.get()).unwrap_or(default))
    }
    /// Units (replicas, or gangs) it keeps running at its least: its minimum (none when it
    /// may scale to zero), and for user-facing work at least one and enough to cover its
    /// availability floor of nodes, one per node, so a node's loss or drain never takes the
    /// last warm one. Never more than its peak.
    /// The share of its hours the replicas above what it keeps (`kept_min`) run, on
    /// average: from `typical_replicas` ((typical - kept) / (max - kept)); 1 without it, as
    /// if every replica ran all its hours.
    pub(crate) fn peak_duty(&self) -> f64 {
        let Some(t) = &self.typical_replicas else {
            return 1.0;
        };
        // In the units of the key the count is written in: `replicas`, else `gangs`.
        let r = self
            .replicas
            .as_ref()
            .or(self.gangs.as_ref())
            .map_or(Count::Fixed(1), |r| *r.get());
        let kept = if self.scale_to_zero() {
            0.0
        } else {
            r.min() as f64
        };
        let above = r.max() as f64 - kept;
        if above <= 0.0 {
            return 1.0;
        }
        ((t.get() - kept) / above).clamp(0.0, 1.0)
    }
    pub(crate) fn warm_units(&self, default_floor: u32) -> u32 {
        let peak = u32::try_from(self.replicas().max().max(0)).unwrap_or(u32::MAX);
        let mut warm = self.kept_min();
        if self.user_facing() {
            let gang = u32::try_from(self.gang().max(1)).unwrap_or(1);
            warm = warm
                .max(1)
                .max(self.availability_nodes(default_floor).div_ceil(gang));
        }
        warm.min(peak)
    }
    pub(crate) fn kind(&self) -> Kind {
        *self.kind.get()
    }
    pub(crate) fn sharing(&self) -> Sharing {
        self.sharing
            .as_ref()
            .map_or(Sharing::Dedicated, |s| *s.get())
    }
    /// How its pods claim their GPUs (`dra`), whatever they hold of one.
    pub(crate) fn claim(&self) -> crate::core::GpuClaim {
        crate::core::GpuClaim::from_dra_flag(self.dra.as_ref().is_some_and(|d| *d.get()))
    }
    /// What is scheduled as one unit, counted: the replicas, or for a gang workload
    /// (`nodes` > 1) its gangs, each of `gang()` members that start together. Every cost and
    /// capacity multiplies this by `gang()`, so `replicas = 16, nodes = 8` is two gangs of
    /// eight, sixteen nodes, as the plan format defines `nodes` ("replicas that must start
    /// together"). `validate` holds `replicas` to a multiple of `nodes`.
    pub fn replicas(&self) -> Count {
        let gang = self.gang().max(1);
        if gang == 1 {
            return self.replicas.as_ref().map_or(Count::Fixed(1), |r| *r.get());
        }
        if let Some(g) = &self.gangs {
            return *g.get();
        }
        match self.replicas.as_ref().map(|r| *r.get()) {
            None => Count::Fixed(1),
            Some(Count::Fixed(n)) => Count::Fixed(n / gang),
            Some(Count::Range { min, max }) => Count::Range {
                min: min / gang,
                max: max / gang,
            },
        }
    }
    pub(crate) fn gang(&self) -> i64 {
        self.nodes.as_ref().map_or(1, |n| *n.get())
    }
    /// Whole GPUs per replica; 0 when the replica takes a fraction of one.
    pub(crate) fn gpus(&self) -> i64 {
        match (&self.gpus, &self.gpu_fraction) {
            (Some(g), _) => *g.get(),
            (None, Some(_)) => 0,
            (None, None) => 1,
        }
    }
    /// GPUs per replica as a real number (a fraction counts as its share).
    pub(crate) fn gpu_share(&self) -> f64 {
        match (&self.gpus, &self.gpu_fraction) {
            (Some(g), _) => *g.get() as f64,
            (None, Some(f)) => *f.get(),
            (None, None) => 1.0,
        }
    }
    pub(crate) fn utilization(&self) -> Option<f64> {
        self.utilization.as_ref().map(|u| *u.get())
    }
    /// Model weights in GiB, when the model is given.
    pub(crate) fn weights_gib(&self) -> Option<f64> {
        self.model.as_ref().map(|m| {
            m.params_billion.get() * 1e9 * m.precision.get().bytes_per_param() / (1u64 << 30) as f64
        })
    }
    pub(crate) fn kv_cache_gib(&self) -> Option<f64> {
        self.kv_cache_gib.as_ref().map(|k| *k.get())
    }
    /// Memory a replica needs: the declared figure, else weights plus KV cache need.
    pub(crate) fn memory_need_gib(&self) -> Option<f64> {
        self.gpu_memory_gib.as_ref().map(|m| *m.get()).or_else(|| {
            self.weights_gib()
                .map(|w| w + self.kv_cache_gib().unwrap_or(0.0))
        })
    }
}

/// A per-GPU MIG layout as written: profile -> count.
pub(crate) type Layout = Sp<IndexMap<String, Sp<i64>>>;

impl Pool {
    /// Every per-GPU MIG layout the pool declares (`mig_layout` or each of `mig_layouts`),
    /// with how many GPUs carry it when `mig_layouts` says.
    pub(crate) fn layouts(&self) -> Vec<(&Layout, Option<i64>)> {
        let mut out: Vec<_> = self.mig_layout.iter().map(|l| (l, None)).collect();
        if let Some(ls) = &self.mig_layouts {
            out.extend(ls.get().iter().map(|e| (&e.layout, Some(*e.gpus.get()))));
        }
        out
    }

    /// The span of the pool's MIG geometry setting, whichever it is.
    pub(crate) fn mig_span(&self) -> Option<std::ops::Range<usize>> {
        self.mig_profile
            .as_ref()
            .map(|m| m.span())
            .or_else(|| self.mig_layout.as_ref().map(|m| m.span()))
            .or_else(|| self.mig_layouts.as_ref().map(|m| m.span()))
    }

    pub(crate) fn capacity(&self) -> Capacity {
        self.capacity
            .as_ref()
            .map_or(Capacity::OnDemand, |c| *c.get())
    }
    pub(crate) fn sharing(&self) -> Sharing {
        self.sharing
            .as_ref()
            .map_or(Sharing::Dedicated, |s| *s.get())
    }
    pub(crate) fn nodes(&self) -> Count {
        *self.nodes.get()
    }
}

impl Plan {
    /// The quota known for a bucket: the plan's `[[quota]]` entry when it has one (a stated
    /// limit, e.g. an increase already granted), else the limit a refresh read from the
    /// provider. Returns the limit and where it came from.
    pub(crate) fn known_quota(
        &self,
        catalog: &Catalog,
        region: &str,
        family: &str,
    ) -> Option<(f64, String)> {
        if let Some(q) = self.stated_quota(region, family) {
            return Some((*q.vcpus.get(), "the plan's [[quota]]".to_owned()));
        }
        catalog.provider_quota(self.provider(), region, family)
    }

    /// The plan's `[[quota]]` for a bucket, families compared as the providers compare them.
    pub(crate) fn stated_quota(&self, region: &str, family: &str) -> Option<&Sp<raw::Quota>> {
        let key = crate::catalog::quota_key(family);
        self.raw
            .quota
            .iter()
            .find(|q| q.region.get() == region && crate::catalog::quota_key(q.family.get()) == key)
    }
}

/// The date an `[[allow]]` expires (validated to be a plain date).
pub(crate) fn validate_allow_expiry(a: &Allow) -> Option<Date> {
    validate::allow_expiry(a)
}
