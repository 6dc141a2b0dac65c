//! What changed between two versions of a plan: settings, workloads and pools by name and
//! key, and the recommended monthly cost of each side (`gpuplan.diff/v1`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::catalog::Catalog;
use crate::core::cents;
use crate::engine::recommend::Recommendation;
use crate::plan::Plan;

pub(crate) const SCHEMA: &str = "gpuplan.diff/v1";

/// A cost limit on a change: a share of the base cost or an amount.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Guard {
    Percent(f64),
    Usd(f64),
}

/// A `--fail-on-increase` value that is neither a percentage nor an amount.
#[derive(Debug, Clone, PartialEq, thiserror::Error, miette::Diagnostic)]
#[error("`--fail-on-increase {0}`: expected a percentage such as `10%` or an amount in USD such as `500`")]
#[diagnostic(code(gpuplan::diff::guard))]
pub(crate) struct GuardError(String);

impl Guard {
    pub(crate) fn parse(s: &str) -> Result<Guard, GuardError> {
        let t = s.trim();
        let bad = || GuardError(s.to_owned());
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            return (v.is_finite() && v >= 0.0)
                .then_some(Guard::Percent(v))
                .ok_or_else(bad);
        }
        let v: f64 = t
            .trim_start_matches('$')
            .replace(',', "")
            .parse()
            .map_err(|_| bad())?;
        (v.is_finite() && v >= 0.0)
            .then_some(Guard::Usd(v))
            .ok_or_else(bad)
    }

    /// Whether a change from `before` to `after` goes past the limit.
    pub(crate) fn exceeded(self, before: f64, after: f64) -> bool {
        let delta = after - before;
        match self {
            Guard::Usd(limit) => delta > limit + 0.005,
            Guard::Percent(p) if before > 0.0 => delta / before * 100.0 > p + 1e-9,
            // Anything from nothing is an infinite increase.
            Guard::Percent(_) => delta > 0.005,
        }
    }
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Side {
    pub plan: String,
    pub source: String,
    pub total_monthly_cost_usd: f64,
    /// What the plan's declared `[[pool]]`s cost a month (`engine::cost::declared_pool`), when
    /// it declares any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_monthly_cost_usd: Option<f64>,
    /// The declared pools with every node of `nodes.max` running all month (what GP017 holds
    /// to the budget): a change of `nodes.max` alone moves only this figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_monthly_cost_at_max_usd: Option<f64>,
    pub unsatisfied: Vec<String>,
}

#[derive(Debug, Serialize, Default, schemars::JsonSchema)]
pub(crate) struct Changes {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<Changed>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Changed {
    pub name: String,
    pub keys: Vec<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct CostLine {
    pub name: String,
    pub before_usd: f64,
    pub after_usd: f64,
    pub delta_usd: f64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Diff {
    pub schema: &'static str,
    pub base: Side,
    pub head: Side,
    pub delta_usd: f64,
    pub delta_pct: Option<f64>,
    pub settings: Vec<String>,
    pub workloads: Changes,
    pub pools: Changes,
    pub recommended_pools: Vec<CostLine>,
    /// The declared pools' monthly cost, per pool, on each side.
    pub declared_pools: Vec<CostLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_delta_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_delta_pct: Option<f64>,
    /// How the declared pools' at-maximum figure moves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_at_max_delta_usd: Option<f64>,
    pub teams: Vec<CostLine>,
    pub guardrail: Option<Guardrail>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Guardrail {
    pub limit: String,
    pub exceeded: bool,
    /// Which costs the limit was held to (`recommended`, `declared`).
    pub watches: Vec<&'static str>,
    /// Which of them went past it.
    pub exceeded_by: Vec<&'static str>,
}

/// Which costs `--fail-on-increase` holds to its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watch {
    Recommended,
    Declared,
    Both,
}

impl Diff {
    /// The guardrail over the costs `watch` names: each is held to `guard` on its own (the
    /// declared fleet only when either side declares pools).
    pub(crate) fn guard(&mut self, limit: &str, guard: Guard, watch: Watch) -> bool {
        let mut watches = Vec::new();
        let mut exceeded_by = Vec::new();
        if watch != Watch::Declared {
            watches.push("recommended");
            if guard.exceeded(
                self.base.total_monthly_cost_usd,
                self.head.total_monthly_cost_usd,
            ) {
                exceeded_by.push("recommended");
            }
        }
        let declared = (
            self.base.declared_monthly_cost_usd,
            self.head.declared_monthly_cost_usd,
        );
        if watch != Watch::Recommended && (declared.0.is_some() || declared.1.is_some()) {
            watches.push("declared");
            if guard.exceeded(declared.0.unwrap_or(0.0), declared.1.unwrap_or(0.0)) {
                exceeded_by.push("declared");
            }
        }
        let exceeded = !exceeded_by.is_empty();
        self.guardrail = Some(Guardrail {
            limit: limit.to_owned(),
            exceeded,
            watches,
            exceeded_by,
        });
        exceeded
    }
}

/// What the declared pools cost a month: each by name, and all of them at their maximum.
pub(crate) struct DeclaredCosts {
    pub by_pool: BTreeMap<String, f64>,
    pub at_max: f64,
}

/// What each declared pool costs a month, by name, and the pools at maximum, priced once:
/// [`crate::engine::cost::declared_pool`], the one formula `check` (GP013, GP017) and the
/// comparison use, so the guardrail prices what `render --declared` would create.
pub(crate) fn declared_costs(p: &Plan, catalog: &Catalog) -> DeclaredCosts {
    let mut out = DeclaredCosts {
        by_pool: BTreeMap::new(),
        at_max: 0.0,
    };
    for pool in p.pools() {
        if let Some(c) = crate::engine::cost::declared_pool(p, catalog, pool) {
            out.by_pool.insert(pool.name.get().clone(), c.expected);
            out.at_max += c.at_max;
        }
    }
    out
}

/// Named tables of an array (`[[workload]]`, `[[pool]]`) compared by name and key.
fn compare_tables(base: &toml::Table, head: &toml::Table, key: &str) -> Changes {
    let named = |t: &toml::Table| -> BTreeMap<String, toml::Table> {
        t.get(key)
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_table())
                    .filter_map(|t| {
                        let n = t.get("name")?.as_str()?.to_owned();
                        Some((n, t.clone()))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (b, h) = (named(base), named(head));
    let mut c = Changes::default();
    for (name, ht) in &h {
        match b.get(name) {
            None => c.added.push(name.clone()),
            Some(bt) => {
                let keys: BTreeSet<&String> = bt.keys().chain(ht.keys()).collect();
                let changed: Vec<String> = keys
                    .into_iter()
                    .filter(|k| bt.get(*k) != ht.get(*k))
                    .cloned()
                    .collect();
                if !changed.is_empty() {
                    c.changed.push(Changed {
                        name: name.clone(),
                        keys: changed,
                    });
                }
            }
        }
    }
    c.removed = b.keys().filter(|n| !h.contains_key(*n)).cloned().collect();
    c
}

fn settings(base: &toml::Table, head: &toml::Table) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["plan", "cluster", "rules"] {
        let empty = toml::Table::new();
        let b = base
            .get(section)
            .and_then(|v| v.as_table())
            .unwrap_or(&empty);
        let h = head
            .get(section)
            .and_then(|v| v.as_table())
            .unwrap_or(&empty);
        let keys: BTreeSet<&String> = b.keys().chain(h.keys()).collect();
        for k in keys {
            if b.get(k) != h.get(k) {
                out.push(format!("{section}.{k}"));
            }
        }
    }
    for array in ["quota", "decision", "allow"] {
        if base.get(array) != head.get(array) {
            out.push(format!("[[{array}]]"));
        }
    }
    out
}

fn lines(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> Vec<CostLine> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .map(|n| {
            let b = before.get(n).copied().unwrap_or(0.0);
            let a = after.get(n).copied().unwrap_or(0.0);
            CostLine {
                name: n.clone(),
                before_usd: cents(b),
                after_usd: cents(a),
                delta_usd: cents(a - b),
            }
        })
        .filter(|l| l.delta_usd.abs() >= 0.005 || l.before_usd == 0.0 || l.after_usd == 0.0)
        .collect()
}

fn side(p: &Plan, r: &Recommendation, declared: &DeclaredCosts) -> Side {
    let any = !p.pools().is_empty();
    Side {
        plan: p.name().to_owned(),
        source: p.file.name.clone(),
        total_monthly_cost_usd: r.total_monthly_cost_usd,
        declared_monthly_cost_usd: any.then(|| cents(declared.by_pool.values().sum::<f64>())),
        declared_monthly_cost_at_max_usd: any.then(|| cents(declared.at_max)),
        unsatisfied: r.unsatisfied.iter().map(|u| u.workload.clone()).collect(),
    }
}

/// One side of a diff: the plan, its recommendation and the catalog it was priced on.
pub(crate) struct Version<'a> {
    pub plan: &'a Plan,
    pub rec: &'a Recommendation,
    pub catalog: &'a Catalog,
}

pub(crate) fn compute(b: Version<'_>, h: Version<'_>) -> Diff {
    let (base, head, rb, rh) = (b.plan, h.plan, b.rec, h.rec);
    let (db, dh) = (
        declared_costs(base, b.catalog),
        declared_costs(head, h.catalog),
    );
    let parse = |p: &Plan| toml::from_str::<toml::Table>(&p.file.text).unwrap_or_default();
    let (tb, th) = (parse(base), parse(head));
    let pools = |r: &Recommendation| -> BTreeMap<String, f64> {
        r.pools
            .iter()
            .map(|p| (p.name.clone(), p.monthly_cost_usd))
            .collect()
    };
    let teams = |r: &Recommendation| -> BTreeMap<String, f64> {
        r.teams
            .iter()
            .map(|t| (t.team.clone(), t.monthly_cost_usd))
            .collect()
    };
    let delta = rh.total_monthly_cost_usd - rb.total_monthly_cost_usd;
    let (base_side, head_side) = (side(base, rb, &db), side(head, rh, &dh));
    // A figure on either side, the other's missing one counted as nothing.
    let both = |x: Option<f64>, y: Option<f64>| {
        (x.is_some() || y.is_some()).then(|| (x.unwrap_or(0.0), y.unwrap_or(0.0)))
    };
    let declared = both(
        base_side.declared_monthly_cost_usd,
        head_side.declared_monthly_cost_usd,
    );
    Diff {
        schema: SCHEMA,
        declared_delta_usd: declared.map(|(x, y)| cents(y - x)),
        declared_at_max_delta_usd: both(
            base_side.declared_monthly_cost_at_max_usd,
            head_side.declared_monthly_cost_at_max_usd,
        )
        .map(|(x, y)| cents(y - x)),
        declared_delta_pct: declared
            .filter(|(x, _)| *x > 0.0)
            .map(|(x, y)| ((y - x) / x * 10_000.0).round() / 100.0),
        declared_pools: lines(&db.by_pool, &dh.by_pool),
        base: base_side,
        head: head_side,
        delta_usd: cents(delta),
        delta_pct: (rb.total_monthly_cost_usd > 0.0)
            .then(|| (delta / rb.total_monthly_cost_usd * 10_000.0).round() / 100.0),
        settings: settings(&tb, &th),
        workloads: compare_tables(&tb, &th, "workload"),
        pools: compare_tables(&tb, &th, "pool"),
        recommended_pools: lines(&pools(rb), &pools(rh)),
        teams: lines(&teams(rb), &teams(rh)),
        guardrail: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_parses_percent_and_usd() {
        assert_eq!(Guard::parse("10%"), Ok(Guard::Percent(10.0)));
        assert_eq!(Guard::parse("$1,500"), Ok(Guard::Usd(1500.0)));
        assert!(Guard::parse("ten").is_err());
        assert!(Guard::parse("-5%").is_err());
        assert!(Guard::Percent(10.0).exceeded(100.0, 110.01));
        assert!(!Guard::Percent(10.0).exceeded(100.0, 110.0));
        assert!(Guard::Usd(50.0).exceeded(100.0, 151.0));
        assert!(!Guard::Usd(50.0).exceeded(100.0, 90.0));
        assert!(Guard::Percent(10.0).exceeded(0.0, 1.0));
    }
}
