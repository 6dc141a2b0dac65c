//! The plan model: loading a plan file (syntax, types, unknown keys) and validating what it
//! means (names, references, ranges, catalog names). Every problem found is reported, with
//! file, line and column, before any rule runs.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::catalog::Catalog;
use crate::diag::Diag;
use crate::source::SourceFile;

pub mod load;
pub mod raw;
mod validate;

use raw::{
    Allow, Capacity, Count, Decision, Kind, MigManager, Pool, Provider, Sharing, Sp, Workload,
};

/// A calendar date (proleptic Gregorian), for decisions, expiries and data ages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    pub year: i32,
    pub month: u8,
    pub day: u8,
}

impl Date {
    pub fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let days = match month {
            1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
            4 | 6 | 9 | 11 => 30,
            2 if leap => 29,
            2 => 28,
            _ => return None,
        };
        (1..=days)
            .contains(&day)
            .then_some(Date { year, month, day })
    }

    /// `YYYY-MM-DD`.
    pub fn parse(s: &str) -> Option<Date> {
        let mut it = s.trim().splitn(3, '-');
        let y = it.next()?.parse().ok()?;
        let m = it.next()?.parse().ok()?;
        let d = it.next()?.parse().ok()?;
        Date::new(y, m, d)
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    pub fn days(self) -> i64 {
        let (m, d) = (i64::from(self.month), i64::from(self.day));
        let y = i64::from(self.year) - i64::from(m <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let mp = (m + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    pub fn from_days(z: i64) -> Date {
        let z = z + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    /// Today in UTC, or `GPUPLAN_TODAY` (YYYY-MM-DD) so runs can be reproduced.
    pub fn today() -> Date {
        if let Some(d) = std::env::var("GPUPLAN_TODAY")
            .ok()
            .and_then(|s| Date::parse(&s))
        {
            return d;
        }
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Date::from_days(i64::try_from(secs / 86_400).unwrap_or(0))
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A plan that parsed and validated: names are unique, references resolve, ranges hold,
/// SKUs, regions and GPU models exist in the catalog.
#[derive(Debug)]
pub struct Plan {
    pub file: Arc<SourceFile>,
    pub raw: raw::RawPlan,
    workloads: IndexMap<String, usize>,
    pools: IndexMap<String, usize>,
    decisions: IndexMap<String, usize>,
}

impl Plan {
    pub fn name(&self) -> &str {
        self.raw.plan.name.get()
    }
    pub fn provider(&self) -> Provider {
        *self.raw.plan.provider.get()
    }
    pub fn regions(&self) -> impl Iterator<Item = &str> {
        self.raw.plan.regions.iter().map(|r| r.get().as_str())
    }
    pub fn hours_per_month(&self) -> f64 {
        self.raw
            .plan
            .hours_per_month
            .as_ref()
            .map_or(730.0, |h| *h.get())
    }
    pub fn monthly_budget(&self) -> Option<&Sp<f64>> {
        self.raw.plan.monthly_budget.as_ref()
    }
    pub fn mig_manager(&self) -> Option<MigManager> {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.mig_manager.as_ref())
            .map(|m| *m.get())
    }
    pub fn daemonset_cpu(&self) -> Option<f64> {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.daemonset_cpu.as_ref())
            .map(|v| *v.get())
    }
    pub fn fail_requests_greater_than_one(&self) -> bool {
        self.raw
            .cluster
            .as_ref()
            .and_then(|c| c.fail_requests_greater_than_one.as_ref())
            .is_some_and(|b| *b.get())
    }
    pub fn workloads(&self) -> &[Sp<Workload>] {
        &self.raw.workload
    }
    pub fn pools(&self) -> &[Sp<Pool>] {
        &self.raw.pool
    }
    pub fn allows(&self) -> &[Sp<Allow>] {
        &self.raw.allow
    }
    pub fn workload(&self, name: &str) -> Option<&Sp<Workload>> {
        self.workloads.get(name).map(|&i| &self.raw.workload[i])
    }
    pub fn pool(&self, name: &str) -> Option<&Sp<Pool>> {
        self.pools.get(name).map(|&i| &self.raw.pool[i])
    }
    pub fn decision(&self, fault_domain: &str) -> Option<&Sp<Decision>> {
        self.decisions
            .get(fault_domain)
            .map(|&i| &self.raw.decision[i])
    }
    /// Workloads a pool names, in the pool's order.
    pub fn pool_workloads<'a>(&'a self, pool: &'a Pool) -> impl Iterator<Item = &'a Sp<Workload>> {
        pool.workloads.iter().filter_map(|w| self.workload(w))
    }
    /// Pools that name a workload.
    pub fn workload_pools<'a>(&'a self, workload: &'a str) -> impl Iterator<Item = &'a Sp<Pool>> {
        self.raw
            .pool
            .iter()
            .filter(move |p| p.workloads.iter().any(|w| w.get() == workload))
    }
}

impl Workload {
    pub fn user_facing(&self) -> bool {
        self.user_facing.as_ref().is_some_and(|b| *b.get())
    }
    pub fn interruptible(&self) -> bool {
        self.interruptible.as_ref().is_some_and(|b| *b.get())
    }
    pub fn scale_to_zero(&self) -> bool {
        self.scale_to_zero.as_ref().is_some_and(|b| *b.get())
    }
    pub fn kind(&self) -> Kind {
        *self.kind.get()
    }
    pub fn sharing(&self) -> Sharing {
        self.sharing
            .as_ref()
            .map_or(Sharing::Dedicated, |s| *s.get())
    }
    pub fn replicas(&self) -> Count {
        self.replicas.as_ref().map_or(Count::Fixed(1), |r| *r.get())
    }
    pub fn gang(&self) -> i64 {
        self.nodes.as_ref().map_or(1, |n| *n.get())
    }
    /// Whole GPUs per replica; 0 when the replica takes a fraction of one.
    pub fn gpus(&self) -> i64 {
        match (&self.gpus, &self.gpu_fraction) {
            (Some(g), _) => *g.get(),
            (None, Some(_)) => 0,
            (None, None) => 1,
        }
    }
    /// GPUs per replica as a real number (a fraction counts as its share).
    pub fn gpu_share(&self) -> f64 {
        match (&self.gpus, &self.gpu_fraction) {
            (Some(g), _) => *g.get() as f64,
            (None, Some(f)) => *f.get(),
            (None, None) => 1.0,
        }
    }
    pub fn utilization(&self) -> Option<f64> {
        self.utilization.as_ref().map(|u| *u.get())
    }
    /// Model weights in GiB, when the model is given.
    pub fn weights_gib(&self) -> Option<f64> {
        self.model.as_ref().map(|m| {
            m.params_billion.get() * 1e9 * m.precision.get().bytes_per_param() / (1u64 << 30) as f64
        })
    }
    pub fn kv_cache_gib(&self) -> Option<f64> {
        self.kv_cache_gib.as_ref().map(|k| *k.get())
    }
    /// Memory a replica needs: the declared figure, else weights plus KV cache need.
    pub fn memory_need_gib(&self) -> Option<f64> {
        self.gpu_memory_gib.as_ref().map(|m| *m.get()).or_else(|| {
            self.weights_gib()
                .map(|w| w + self.kv_cache_gib().unwrap_or(0.0))
        })
    }
}

impl Pool {
    pub fn capacity(&self) -> Capacity {
        self.capacity
            .as_ref()
            .map_or(Capacity::OnDemand, |c| *c.get())
    }
    pub fn sharing(&self) -> Sharing {
        self.sharing
            .as_ref()
            .map_or(Sharing::Dedicated, |s| *s.get())
    }
    pub fn nodes(&self) -> Count {
        *self.nodes.get()
    }
}

/// Load and validate one plan file; all problems at once on failure.
pub fn load_and_validate(file: Arc<SourceFile>, catalog: &Catalog) -> Result<Plan, Vec<Diag>> {
    let raw = load::parse(&file)?;
    validate::validate(file, raw, catalog)
}

/// The date an `[[allow]]` expires (validated to be a plain date).
pub fn validate_allow_expiry(a: &Allow) -> Option<Date> {
    validate::allow_expiry(a)
}

/// Validate an already parsed plan (when the catalog is loaded after parsing).
pub fn validate_raw(
    file: Arc<SourceFile>,
    raw: raw::RawPlan,
    catalog: &Catalog,
) -> Result<Plan, Vec<Diag>> {
    validate::validate(file, raw, catalog)
}
