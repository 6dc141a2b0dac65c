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
    /// The recommended fleet with every pool at its `nodes.max` for its paid hours: the
    /// ceiling the fleet may reach.
    pub total_monthly_cost_at_max_usd: f64,
    /// What the plan's declared `[[pool]]`s cost a month (`engine::cost::declared_pool`), when
    /// it declares any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_monthly_cost_usd: Option<f64>,
    /// The declared pools with every node of `nodes.max` running all month (what GP017 holds
    /// to the budget): a change of `nodes.max` alone moves only this figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_monthly_cost_at_max_usd: Option<f64>,
    /// Declared pools not in the declared figures: their price is unknown (a Capacity Block
    /// before a refresh reads DescribeCapacityBlockOfferings).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared_unpriced: Vec<String>,
    pub unsatisfied: Vec<String>,
    /// The plan's cloud, for what its messages say (not in the JSON: `diff` compares plans
    /// of one cloud).
    #[serde(skip)]
    #[schemars(skip)]
    pub provider: crate::core::Provider,
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
    /// Each changed value, down to the leaf (`nodes.max`), as TOML writes it, old → new.
    pub values: Vec<KeyChange>,
}

/// One value a change touched: `None` on the side that does not have it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub(crate) struct KeyChange {
    pub key: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct CostLine {
    pub name: String,
    pub before_usd: f64,
    pub after_usd: f64,
    pub delta_usd: f64,
    /// The same pool with every node of `nodes.max` for its paid hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_max: Option<Delta>,
    /// What the figures are made of on each side (declared pools): nodes × hours × rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_basis: Option<Basis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_basis: Option<Basis>,
}

/// A figure before and after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
pub(crate) struct Delta {
    pub before_usd: f64,
    pub after_usd: f64,
    pub delta_usd: f64,
}

/// What a declared pool's at-maximum figure is made of: the reserved floor every hour of the
/// month at its rate, the nodes above it for `hours` at `above_floor_usd_per_node_hour`
/// (for an unreserved pool: `nodes_max` × `hours` × `usd_per_node_hour`), times spot's
/// restart waste.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub(crate) struct Basis {
    pub sku: String,
    pub capacity: crate::core::Capacity,
    pub nodes_min: i64,
    pub nodes_max: i64,
    pub usd_per_node_hour: f64,
    pub above_floor_usd_per_node_hour: f64,
    pub hours: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_waste_factor: Option<f64>,
    /// What the price assumes where it is not the catalog's own for the capacity (a
    /// reservation priced at on-demand for want of a reserved price), said as every other
    /// report says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub caveat: Option<crate::engine::cost::Caveat>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Diff {
    pub schema: &'static str,
    pub base: Side,
    pub head: Side,
    pub delta_usd: f64,
    pub delta_pct: Option<f64>,
    /// How the recommended fleet's at-maximum figure moves.
    pub delta_at_max_usd: f64,
    pub delta_at_max_pct: Option<f64>,
    pub settings: Vec<String>,
    /// Each changed setting's value before and after, key by key (`plan.regions`,
    /// `quota[0].limit`), `settings` naming the tables and arrays they are in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setting_changes: Vec<KeyChange>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_at_max_delta_pct: Option<f64>,
    pub teams: Vec<CostLine>,
    pub guardrail: Option<Guardrail>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Guardrail {
    pub limit: String,
    pub exceeded: bool,
    /// Which costs the limit was held to (`recommended`, `recommended at maximum`,
    /// `declared`, `declared at maximum`).
    pub watches: Vec<&'static str>,
    /// Which of them went past it.
    pub exceeded_by: Vec<&'static str>,
    /// Declared pools the head adds or turns into ones whose price is unknown offline (a
    /// Capacity Block without a block price): the limit cannot hold what it cannot price, so
    /// the guardrail fails closed on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

/// Which costs `--fail-on-increase` holds to its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watch {
    Recommended,
    Declared,
    Both,
}

/// A figure `--fail-on-increase` can hold to its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    Recommended,
    RecommendedAtMax,
    Declared,
    DeclaredAtMax,
    /// Declared pools the head adds without a price (the guardrail's `unpriced`).
    DeclaredUnpriced,
}

impl Held {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Held::Recommended => "recommended",
            Held::RecommendedAtMax => "recommended at maximum",
            Held::Declared => "declared",
            Held::DeclaredAtMax => "declared at maximum",
            Held::DeclaredUnpriced => "declared pools without a price",
        }
    }

    /// The figure before and after, when either side has it (declared pools only where a
    /// side declares any; the other side's missing pools count as nothing).
    pub(crate) fn of(self, d: &Diff) -> Option<(f64, f64)> {
        let any = |a: Option<f64>, b: Option<f64>| {
            (a.is_some() || b.is_some()).then(|| (a.unwrap_or(0.0), b.unwrap_or(0.0)))
        };
        match self {
            Held::Recommended => {
                Some((d.base.total_monthly_cost_usd, d.head.total_monthly_cost_usd))
            }
            Held::RecommendedAtMax => Some((
                d.base.total_monthly_cost_at_max_usd,
                d.head.total_monthly_cost_at_max_usd,
            )),
            Held::Declared => any(
                d.base.declared_monthly_cost_usd,
                d.head.declared_monthly_cost_usd,
            ),
            Held::DeclaredAtMax => any(
                d.base.declared_monthly_cost_at_max_usd,
                d.head.declared_monthly_cost_at_max_usd,
            ),
            // No figure: what it holds is a list of pools (the guardrail's `unpriced`).
            Held::DeclaredUnpriced => None,
        }
    }
}

impl Diff {
    /// The guardrail over the costs `watch` names: each fleet's expected and at-maximum
    /// figures are held to `guard` on their own (the declared fleet only when either side
    /// declares pools), so a change of `nodes.max` alone trips it as surely as a new pool.
    /// Returns the figures that went past the limit.
    pub(crate) fn guard(&mut self, limit: &str, guard: Guard, watch: Watch) -> Vec<Held> {
        let fleets: &[Held] = match watch {
            Watch::Recommended => &[Held::Recommended, Held::RecommendedAtMax],
            Watch::Declared => &[Held::Declared, Held::DeclaredAtMax],
            Watch::Both => &[
                Held::Recommended,
                Held::RecommendedAtMax,
                Held::Declared,
                Held::DeclaredAtMax,
            ],
        };
        let held: Vec<(Held, (f64, f64))> = fleets
            .iter()
            .filter_map(|h| h.of(self).map(|v| (*h, v)))
            .collect();
        let mut over: Vec<Held> = held
            .iter()
            .filter(|(_, (b, a))| guard.exceeded(*b, *a))
            .map(|h| h.0)
            .collect();
        let unpriced = if fleets.contains(&Held::Declared) {
            self.newly_unpriced()
        } else {
            Vec::new()
        };
        if !unpriced.is_empty() {
            over.push(Held::DeclaredUnpriced);
        }
        self.guardrail = Some(Guardrail {
            limit: limit.to_owned(),
            exceeded: !over.is_empty(),
            watches: held.iter().map(|h| h.0.label()).collect(),
            exceeded_by: over.iter().map(|h| h.label()).collect(),
            unpriced,
        });
        over
    }

    /// Declared pools the head leaves without a price that the base priced or did not have:
    /// a pull request that adds a Capacity Block, or turns an on-demand pool into one, would
    /// otherwise read as no increase (or a fall) in the declared cost.
    fn newly_unpriced(&self) -> Vec<String> {
        self.head
            .declared_unpriced
            .iter()
            .filter(|p| !self.base.declared_unpriced.contains(p))
            .cloned()
            .collect()
    }
}

/// A pool's (or a team's) monthly figures on one side.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figures {
    pub expected: f64,
    pub at_max: Option<f64>,
    pub basis: Option<Basis>,
}

/// What the declared pools cost a month: each by name, and all of them at their maximum;
/// the pools left out because their price is unknown (a Capacity Block offline).
pub(crate) struct DeclaredCosts {
    pub by_pool: BTreeMap<String, Figures>,
    pub at_max: f64,
    pub unpriced: Vec<String>,
}

/// What each declared pool costs a month, by name, and the pools at maximum, priced once:
/// [`crate::engine::cost::declared_pool`], the one formula `check` (GP013, GP017) and the
/// comparison use, so the guardrail prices what `render --declared` would create.
pub(crate) fn declared_costs(p: &Plan, catalog: &Catalog) -> DeclaredCosts {
    let mut out = DeclaredCosts {
        by_pool: BTreeMap::new(),
        at_max: 0.0,
        unpriced: Vec::new(),
    };
    for pool in p.pools() {
        // A block is bought at its own price: with none known it is said, never costed at
        // the on-demand stand-in (as GP017 leaves it out).
        if crate::engine::cost::block_price_unknown(p, catalog, pool) {
            out.unpriced.push(pool.name.get().clone());
            continue;
        }
        if let Some(c) = crate::engine::cost::declared_pool(p, catalog, pool) {
            let basis = Basis {
                sku: pool.sku.get().clone(),
                capacity: pool.capacity(),
                nodes_min: pool.nodes().min().max(0),
                nodes_max: pool.nodes().max().max(0),
                usd_per_node_hour: c.price.usd,
                above_floor_usd_per_node_hour: c.above_floor_usd,
                hours: c.paid_hours,
                spot_waste_factor: (c.waste != 1.0).then_some(c.waste),
                caveat: c.price.caveat.clone(),
            };
            out.by_pool.insert(
                pool.name.get().clone(),
                Figures {
                    expected: c.expected,
                    at_max: Some(c.at_max),
                    basis: Some(basis),
                },
            );
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
                    let mut values = Vec::new();
                    for k in &changed {
                        leaf_changes(k, bt.get(k), ht.get(k), &mut values);
                    }
                    c.changed.push(Changed {
                        name: name.clone(),
                        keys: changed,
                        values,
                    });
                }
            }
        }
    }
    c.removed = b.keys().filter(|n| !h.contains_key(*n)).cloned().collect();
    c
}

/// The values that differ under `key`, down to the leaves of tables on both sides
/// (`nodes.max`); arrays and values of different kinds are compared whole.
fn leaf_changes(
    key: &str,
    before: Option<&toml::Value>,
    after: Option<&toml::Value>,
    out: &mut Vec<KeyChange>,
) {
    if before == after {
        return;
    }
    if let (Some(toml::Value::Table(b)), Some(toml::Value::Table(a))) = (before, after) {
        let keys: BTreeSet<&String> = b.keys().chain(a.keys()).collect();
        for k in keys {
            leaf_changes(&format!("{key}.{k}"), b.get(k), a.get(k), out);
        }
        return;
    }
    out.push(KeyChange {
        key: key.to_owned(),
        before: before.map(toml::Value::to_string),
        after: after.map(toml::Value::to_string),
    });
}

/// Each changed leaf of the plan's settings with its values: tables key by key, the arrays of
/// tables (`[[quota]]`, `[[decision]]`, `[[allow]]`) entry by entry.
fn setting_changes(base: &toml::Table, head: &toml::Table) -> Vec<KeyChange> {
    let mut out = Vec::new();
    for section in ["plan", "cluster", "rules"] {
        leaf_changes(section, base.get(section), head.get(section), &mut out);
    }
    for array in ["quota", "decision", "allow"] {
        let entries = |t: &toml::Table| {
            t.get(array)
                .and_then(toml::Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let (b, h) = (entries(base), entries(head));
        for i in 0..b.len().max(h.len()) {
            leaf_changes(&format!("{array}[{i}]"), b.get(i), h.get(i), &mut out);
        }
    }
    out
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

fn lines(before: &BTreeMap<String, Figures>, after: &BTreeMap<String, Figures>) -> Vec<CostLine> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .map(|n| {
            let (b, a) = (before.get(n), after.get(n));
            let expected = |f: Option<&Figures>| f.map_or(0.0, |f| f.expected);
            let at_max = |f: Option<&Figures>| f.and_then(|f| f.at_max);
            let (xb, xa) = (expected(b), expected(a));
            CostLine {
                name: n.clone(),
                before_usd: cents(xb),
                after_usd: cents(xa),
                delta_usd: cents(xa - xb),
                at_max: (at_max(b).is_some() || at_max(a).is_some()).then(|| {
                    let (mb, ma) = (at_max(b).unwrap_or(0.0), at_max(a).unwrap_or(0.0));
                    Delta {
                        before_usd: cents(mb),
                        after_usd: cents(ma),
                        delta_usd: cents(ma - mb),
                    }
                }),
                before_basis: b.and_then(|f| f.basis.clone()),
                after_basis: a.and_then(|f| f.basis.clone()),
            }
        })
        .filter(|l| {
            l.delta_usd.abs() >= 0.005
                || l.at_max.is_some_and(|m| m.delta_usd.abs() >= 0.005)
                || l.before_basis != l.after_basis
                || l.before_usd == 0.0
                || l.after_usd == 0.0
        })
        .collect()
}

fn side(p: &Plan, r: &Recommendation, declared: &DeclaredCosts) -> Side {
    let any = !p.pools().is_empty();
    Side {
        plan: p.name().to_owned(),
        source: p.file.name.clone(),
        total_monthly_cost_usd: r.total_monthly_cost_usd,
        total_monthly_cost_at_max_usd: r.total_monthly_cost_at_max_usd,
        declared_monthly_cost_usd: any
            .then(|| cents(declared.by_pool.values().map(|f| f.expected).sum::<f64>())),
        declared_monthly_cost_at_max_usd: any.then(|| cents(declared.at_max)),
        declared_unpriced: declared.unpriced.clone(),
        unsatisfied: r.unsatisfied.iter().map(|u| u.workload.clone()).collect(),
        provider: p.provider(),
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
    let figures = |expected: f64, at_max: Option<f64>| Figures {
        expected,
        at_max,
        basis: None,
    };
    let pools = |r: &Recommendation| -> BTreeMap<String, Figures> {
        r.pools
            .iter()
            .map(|p| {
                let f = figures(p.monthly_cost_usd, Some(p.monthly_cost_at_max_usd));
                (p.name.clone(), f)
            })
            .collect()
    };
    let teams = |r: &Recommendation| -> BTreeMap<String, Figures> {
        r.teams
            .iter()
            .map(|t| (t.team.clone(), figures(t.monthly_cost_usd, None)))
            .collect()
    };
    let pct = |(x, y): (f64, f64)| (x > 0.0).then(|| ((y - x) / x * 10_000.0).round() / 100.0);
    let at_max = (
        rb.total_monthly_cost_at_max_usd,
        rh.total_monthly_cost_at_max_usd,
    );
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
    let declared_at_max = both(
        base_side.declared_monthly_cost_at_max_usd,
        head_side.declared_monthly_cost_at_max_usd,
    );
    Diff {
        schema: SCHEMA,
        declared_delta_usd: declared.map(|(x, y)| cents(y - x)),
        declared_at_max_delta_usd: declared_at_max.map(|(x, y)| cents(y - x)),
        declared_at_max_delta_pct: declared_at_max.and_then(pct),
        declared_delta_pct: declared.and_then(pct),
        declared_pools: lines(&db.by_pool, &dh.by_pool),
        base: base_side,
        head: head_side,
        delta_usd: cents(delta),
        delta_pct: pct((rb.total_monthly_cost_usd, rh.total_monthly_cost_usd)),
        delta_at_max_usd: cents(at_max.1 - at_max.0),
        delta_at_max_pct: pct(at_max),
        settings: settings(&tb, &th),
        setting_changes: setting_changes(&tb, &th),
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
