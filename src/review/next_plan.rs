//! `review --write-plan NEXT`: the plan with each measured workload's `replicas`,
//! `hours_per_month` and (for an idle one, where memory and the GPU allow) its slice as next
//! quarter needs them. Each changed line carries the figures it came from; everything else
//! (comments, order, formatting, other keys) is kept as written. The result is held to
//! `check`: a right-size that would add an error is not taken, and the workload is sized by
//! consolidation instead. Declared pools follow their workloads' new maxima, where check
//! allows.

pub(crate) mod says;

use std::collections::{BTreeMap, BTreeSet};

use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use super::forecast::{NextQuarter, Proposal, Typical, WorkloadForecast, Written};
use crate::catalog::Catalog;
use crate::core::Date;
use crate::diag::Severity;
use crate::plan::Count;
use crate::plan::Plan;
use crate::render::write_plan::WritePlanError;
use says::{Found, Had, Header, LineSays, NextNote, Reported, Resized};

mod settle;
pub(crate) use settle::settle;

/// Every header line starts so: a plan written from an earlier NEXT loses the old header.
const HEADER: &str = "# gpuplan review: ";
/// Every comment on a changed line starts so: a rewrite replaces it, never stacks it.
const MARK: &str = "# gpuplan review";

/// What was written, and what the user should know of it.
pub(crate) struct NextPlan {
    pub text: String,
    /// Workloads whose lines changed.
    pub changed: Vec<String>,
    pub notes: Vec<NextNote>,
    /// What was written of each proposal (see [`settle`]).
    pub written: BTreeMap<String, Written>,
}

/// The regions of the pools each workload is placed on, sorted.
fn regions_by_workload(plan: &Plan) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pool in plan.pools() {
        for w in &pool.workloads {
            let r = out.entry(w.get().clone()).or_default();
            if !r.contains(pool.region.get()) {
                r.push(pool.region.get().clone());
                r.sort();
            }
        }
    }
    out
}

/// A value with a comment after it, keeping the comment the line had (less an earlier
/// review's).
fn commented(mut v: Value, old: Option<&Item>, comment: &LineSays) -> Item {
    let kept = old
        .and_then(Item::as_value)
        .and_then(|v| v.decor().suffix())
        .and_then(|s| s.as_str())
        .map(|s| s.split(MARK).next().unwrap_or("").trim_end().to_owned())
        .unwrap_or_default();
    v.decor_mut().set_suffix(format!(
        "{kept}  {MARK}: {}",
        crate::core::printable(&comment.to_string())
    ));
    Item::Value(v)
}

/// A count as a TOML value: an integer, or an inline `{ min, max }`.
fn count_value(c: Count) -> Value {
    match c {
        Count::Fixed(n) => Value::from(n),
        Count::Range { min, max } => {
            let mut t = InlineTable::new();
            t.insert("min", Value::from(min));
            t.insert("max", Value::from(max));
            Value::InlineTable(t)
        }
    }
}

/// Apply one workload's proposal to its table; true when a line changed.
/// The key a workload's count is written to, and the factor from the proposal's units: a gang
/// workload's count is of gangs (`gangs`), or of their members where the plan writes
/// `replicas` (a multiple of `nodes`).
fn count_key(t: &Table, gang: i64) -> (&'static str, i64) {
    match (
        gang > 1,
        t.contains_key("replicas"),
        t.contains_key("gangs"),
    ) {
        (true, true, false) => ("replicas", gang),
        (true, _, _) => ("gangs", 1),
        (false, _, _) => ("replicas", 1),
    }
}

fn apply(t: &mut Table, f: &WorkloadForecast, p: &Proposal, horizon: &str, gang: i64) -> bool {
    let mut changed = false;
    let (key, factor) = count_key(t, gang);
    let wanted = p.count().times(factor);
    let current = t.get(key).and_then(Item::as_value).map(|v| {
        v.as_integer().map(Count::Fixed).or_else(|| {
            let it = v.as_inline_table()?;
            let get = |k| it.get(k).and_then(Value::as_integer);
            Some(Count::Range {
                min: get("min")?,
                max: get("max")?,
            })
        })
    });
    let same = match current {
        Some(Some(c)) => c == wanted,
        // Absent means one fixed replica, or one gang.
        None => p.count() == Count::Fixed(1),
        Some(None) => false,
    };
    if !same {
        let note = LineSays::Count {
            was: f.current.clone(),
            grounds: Box::new(f.figures.clone()),
            basis: p.basis,
            horizon: horizon.to_owned(),
        };
        let item = commented(count_value(wanted), t.get(key), &note);
        t.insert(key, item);
        changed = true;
    }
    match p.typical {
        Some(typ) => {
            let k = factor as f64;
            let scaled = |x: f64| (x * k * 100.0).round() / 100.0;
            let v = scaled(typ.value);
            // In the units the count is written in, as the value is.
            let note = LineSays::Typical {
                typical: Typical {
                    value: v,
                    measured: scaled(typ.measured),
                    bounded: typ.bounded.map(|b| b * factor),
                    ..typ
                },
                held_mean: scaled(f.replicas_mean),
                hours: f.hours_per_month,
                max: p.max * factor,
            };
            let item = commented(Value::from(v), t.get("typical_replicas"), &note);
            t.insert("typical_replicas", item);
            changed = true;
        }
        // A profile the new bounds may no longer hold goes with the old count.
        None => changed |= t.remove("typical_replicas").is_some(),
    }
    if let Some(model) = &p.gpu_models {
        let mut v = toml_edit::Array::new();
        v.push(model.as_str());
        let note = LineSays::MeasuredOn {
            model: model.clone(),
        };
        let item = commented(Value::Array(v), t.get("gpu_models"), &note);
        t.insert("gpu_models", item);
        changed = true;
    }
    if let Some(h) = p.hours_per_month {
        let note = LineSays::Hours {
            held: f.hours_per_month,
        };
        let item = commented(Value::from(h), t.get("hours_per_month"), &note);
        t.insert("hours_per_month", item);
        changed = true;
    }
    if let (Some(fraction), Some(sharing)) = (p.gpu_fraction, p.sharing) {
        let was = t
            .get("gpu_fraction")
            .and_then(Item::as_value)
            .map(|v| Had::Fraction(v.to_string().trim().to_owned()))
            .unwrap_or_else(|| Had::Gpus(t.get("gpus").and_then(Item::as_integer).unwrap_or(1)));
        let note = LineSays::Fraction {
            was,
            slice: f.right_size.clone(),
        };
        let item = commented(Value::from(fraction), t.get("gpu_fraction"), &note);
        t.insert("gpu_fraction", item);
        // A fraction replaces whole GPUs.
        t.remove("gpus");
        let item = commented(
            Value::from(sharing.as_str()),
            t.get("sharing"),
            &LineSays::WithFraction,
        );
        t.insert("sharing", item);
        changed = true;
    }
    changed
}

/// Errors `check` reports for a plan text, by rule and what they are on.
fn errors(
    name: &str,
    text: &str,
    catalog: &Catalog,
    today: Date,
) -> Result<BTreeSet<Found>, Vec<String>> {
    let file = crate::source::SourceFile::new(name, text);
    let p = crate::plan::Plan::load(file, catalog)
        .map_err(|ds| ds.into_iter().map(|d| d.message).collect::<Vec<_>>())?;
    Ok(
        crate::rules::check(&p, catalog, today, &crate::rules::Levels::default())
            .into_iter()
            .filter(|d| d.severity == Severity::Error && d.suppressed.is_none())
            .map(|d| (Reported::Code(d.code), d.workload, d.pool))
            .collect(),
    )
}

/// A declared pool too small (or, on-demand and spot, too large) for its workloads' new
/// maxima: its nodes as NEXT writes them, and why.
struct Resize {
    pool: String,
    nodes: Count,
    /// Raised (a plan-wide error such as quota or budget is blamed on raises only).
    grew: bool,
    resized: Resized,
}

/// Each declared pool against what its workloads need at their new `replicas.max`, by the
/// one count `check` holds pools to (`engine::holds::peak_nodes` on the plan with the
/// proposals applied: GPUs, MIG instances, time-sliced replicas, vCPUs, memory, gangs): raised
/// where they no longer fit; lowered where every workload on it was measured and the capacity
/// is not a commitment, never below the availability floor of user-facing work on it.
fn resizes(
    plan: &Plan,
    proposed: Option<&Plan>,
    catalog: &Catalog,
    proposals: &BTreeMap<String, Proposal>,
    refused: &BTreeSet<String>,
) -> Vec<Resize> {
    let mut out = Vec::new();
    for pool in plan.pools() {
        let name = pool.name.get();
        if refused.contains(name.as_str()) {
            continue;
        }
        let Some(sku) = catalog.sku(plan.provider(), pool.sku.get()) else {
            continue;
        };
        let per_node = crate::engine::cost::gpus_per_node(sku);
        let members: Vec<&crate::plan::Workload> = pool
            .workloads
            .iter()
            .filter_map(|w| plan.workload(w.get()))
            .map(|w| w.get())
            .collect();
        if per_node <= 0.0 || members.is_empty() {
            continue;
        }
        let mut gpus = 0.0;
        let mut parts: Vec<(String, f64)> = Vec::new();
        for w in &members {
            let (max, share) = match proposals.get(w.name.get().as_str()) {
                Some(p) => (p.max, p.gpu_fraction.unwrap_or_else(|| w.gpu_share())),
                None => (w.replicas().max(), w.gpu_share()),
            };
            // A workload several pools serve: each holds an even share (`holds::peak_nodes`).
            let pools = plan.workload_pools(w.name.get()).count().max(1) as f64;
            let g = max.max(0) as f64 * share * w.gang().max(1) as f64 / pools;
            gpus += g;
            parts.push((w.name.get().clone(), g));
        }
        let by_gpus = ((gpus / per_node) - 1e-9).ceil().max(1.0) as i64;
        let peak = proposed
            .and_then(|p| p.pool(name).map(|sp| (p, sp)))
            .and_then(|(p, sp)| crate::engine::holds::peak_nodes(catalog, p, sp.get()))
            .map_or(0, |n| i64::from(n.nodes));
        // The availability floor of what the workloads will run: a service proposed to grow
        // from 1 replica to 4 keeps two nodes, though its old maximum of 1 could not.
        let floor = members
            .iter()
            .map(|w| {
                let max = proposals
                    .get(w.name.get().as_str())
                    .map_or(w.replicas().max(), |p| p.max);
                let pods = max.max(0) * w.gang().max(1);
                i64::from(w.availability_nodes(catalog.assumptions.user_facing_min_nodes)).min(pods)
            })
            .max()
            .unwrap_or(0);
        let needed = by_gpus.max(peak).max(floor);
        let nodes = pool.nodes();
        let all_measured = members
            .iter()
            .all(|w| proposals.contains_key(w.name.get().as_str()));
        let max = if needed > nodes.max() {
            needed
        } else if needed < nodes.max() && all_measured && !pool.capacity().is_committed() {
            needed.max(nodes.min())
        } else {
            continue;
        };
        if max == nodes.max() {
            continue;
        }
        out.push(Resize {
            pool: name.clone(),
            nodes: match nodes {
                Count::Fixed(_) => Count::Fixed(max),
                Count::Range { min, .. } => Count::Range {
                    min: min.min(max),
                    max,
                },
            },
            grew: max > nodes.max(),
            resized: Resized {
                was: nodes,
                gpus,
                parts,
                nodes: max,
                per_node,
                floor,
            },
        });
    }
    out
}

/// NEXT's text: the plan with the forecast's proposals, held to `check`.
pub(crate) fn next_plan(
    plan: &Plan,
    catalog: &Catalog,
    nq: &NextQuarter,
    window: (&str, &str),
    today: Date,
    cluster: Option<&str>,
) -> Result<NextPlan, WritePlanError> {
    let before = errors(&plan.file.name, &plan.file.text, catalog, today).unwrap_or_default();
    // A workload whose pools are in several regions is one demand served by several
    // clusters: one cluster's pods are part of it, so it is not rewritten from them.
    let spread: BTreeMap<String, Vec<String>> = match cluster {
        Some(_) => regions_by_workload(plan)
            .into_iter()
            .filter(|(_, r)| r.len() > 1)
            .collect(),
        None => BTreeMap::new(),
    };
    let mut refused = Refused::default();
    loop {
        let a = attempt(plan, catalog, nq, window, &spread, &refused)?;
        let checked = errors(&plan.file.name, &a.text, catalog, today);
        let added: Vec<Found> = match &checked {
            Ok(after) => after.difference(&before).cloned().collect(),
            Err(msgs) => msgs
                .iter()
                .map(|m| (Reported::Unloadable(m.clone()), None, None))
                .collect(),
        };
        if refused.blame(plan, &added, &a) {
            continue;
        }
        if let Err(msgs) = checked {
            return Err(WritePlanError::Invalid(msgs.join("; ")));
        }
        let notes = notes(nq, &refused, &a, &added, &spread, cluster);
        return Ok(NextPlan {
            text: a.text,
            changed: a.changed,
            notes,
            written: a.written,
        });
    }
}

/// Right-sizes (by workload) and pool resizes check refuses, and why.
#[derive(Default)]
struct Refused {
    workloads: BTreeMap<String, Reported>,
    pools: BTreeMap<String, Reported>,
    /// Workloads left at their replicas as written: the pool they are on cannot grow to hold
    /// the new ones (its resize refused, or none would do), by the pool and why.
    held: BTreeMap<String, (String, Reported)>,
}

impl Refused {
    /// What an added error is blamed on: the right-sized workload it names, else the resized
    /// pool it names; an error on the plan as a whole (quota, budget) on every resized pool,
    /// else every right-size. Whether any refusal is new, so the next attempt differs.
    fn blame(&mut self, plan: &Plan, added: &[Found], a: &Attempt) -> bool {
        let mut blamed = false;
        // A pool that cannot hold its workloads' new peak, and will not be resized: their
        // proposals are held back, so capacity and demand stay together.
        for e in added {
            let (None, Some(p)) = (&e.1, &e.2) else {
                continue;
            };
            if a.resized.iter().any(|r| &r.pool == p) {
                continue;
            }
            let Some(pool) = plan.pool(p) else { continue };
            for w in &pool.workloads {
                let w = w.get();
                if a.changed.contains(w) && !self.held.contains_key(w) {
                    self.held.insert(w.clone(), (p.clone(), e.0.clone()));
                    blamed = true;
                }
            }
        }
        for e in added {
            let mut hit = |w: Option<&String>, p: Option<&String>| {
                // Only a new refusal changes the next attempt.
                if let Some(w) = w.filter(|w| !self.workloads.contains_key(*w)) {
                    self.workloads.insert(w.clone(), e.0.clone());
                    blamed = true;
                }
                if let Some(p) = p.filter(|p| !self.pools.contains_key(*p)) {
                    self.pools.insert(p.clone(), e.0.clone());
                    blamed = true;
                }
            };
            match (&e.1, &e.2) {
                (Some(w), _) if a.right_sized.contains(w) => hit(Some(w), None),
                (_, Some(p)) if a.resized.iter().any(|r| &r.pool == p) => hit(None, Some(p)),
                (None, None) if a.resized.iter().any(|r| r.grew) => {
                    for r in a.resized.iter().filter(|r| r.grew) {
                        hit(None, Some(&r.pool));
                    }
                }
                (None, _) => {
                    for w in &a.right_sized {
                        hit(Some(w), None);
                    }
                }
                _ => {}
            }
        }
        blamed
    }
}

/// One attempt at the next plan: its text, and what it changed.
struct Attempt {
    text: String,
    changed: Vec<String>,
    written: BTreeMap<String, Written>,
    right_sized: Vec<String>,
    resized: Vec<Resize>,
}

/// The plan with every proposal applied that check has not refused.
fn attempt(
    plan: &Plan,
    catalog: &Catalog,
    nq: &NextQuarter,
    window: (&str, &str),
    spread: &BTreeMap<String, Vec<String>>,
    refused: &Refused,
) -> Result<Attempt, WritePlanError> {
    let mut doc: DocumentMut = plan.file.text.parse()?;
    let mut changed = Vec::new();
    let mut right_sized = Vec::new();
    let mut written = BTreeMap::new();
    let mut proposals: BTreeMap<String, Proposal> = BTreeMap::new();
    if let Some(Item::ArrayOfTables(ws)) = doc.get_mut("workload") {
        for t in ws.iter_mut() {
            let Some(name) = t.get("name").and_then(Item::as_str).map(str::to_owned) else {
                continue;
            };
            let Some(f) = nq.workloads.iter().find(|f| f.workload == name) else {
                continue;
            };
            if spread.contains_key(&name) || refused.held.contains_key(&name) {
                written.insert(name, Written::Unchanged);
                continue;
            }
            let p = match &f.without_right_size {
                Some(alt) if refused.workloads.contains_key(&name) => {
                    written.insert(name.clone(), Written::WithoutRightSize);
                    alt
                }
                _ => {
                    written.insert(name.clone(), Written::AsProposed);
                    &f.proposed
                }
            };
            if p.gpu_fraction.is_some() {
                right_sized.push(name.clone());
            }
            proposals.insert(name.clone(), p.clone());
            let gang = plan.workload(&name).map_or(1, |w| w.gang().max(1));
            if apply(t, f, p, &nq.quarter, gang) {
                changed.push(name);
            }
        }
    }
    let skip: BTreeSet<String> = refused.pools.keys().cloned().collect();
    let proposed_text = doc.to_string();
    let proposed = crate::plan::Plan::load(
        crate::source::SourceFile::new(&plan.file.name, &proposed_text),
        catalog,
    )
    .ok();
    let resized = resizes(plan, proposed.as_ref(), catalog, &proposals, &skip);
    if let Some(Item::ArrayOfTables(ps)) = doc.get_mut("pool") {
        for t in ps.iter_mut() {
            let Some(name) = t.get("name").and_then(Item::as_str) else {
                continue;
            };
            let Some(r) = resized.iter().find(|r| r.pool == name) else {
                continue;
            };
            let item = commented(
                count_value(r.nodes),
                t.get("nodes"),
                &LineSays::Nodes(r.resized.clone()),
            );
            t.insert("nodes", item);
        }
    }
    let body = doc.to_string();
    let body = body
        .lines()
        .skip_while(|l| l.starts_with(HEADER))
        .collect::<Vec<_>>()
        .join("\n");
    let header = Header {
        quarter: nq.quarter.clone(),
        horizon: nq.horizon.clone(),
        from: window.0.to_owned(),
        to: window.1.to_owned(),
        covered_days: nq.covered_days,
        without_data: nq.without_data.clone(),
    };
    let mut text: String = header
        .to_string()
        .lines()
        .map(|l| format!("{HEADER}{l}\n"))
        .collect();
    text.push_str(&body);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Attempt {
        text,
        changed,
        written,
        right_sized,
        resized,
    })
}

/// What the written plan says it did not do, and why.
fn notes(
    nq: &NextQuarter,
    refused: &Refused,
    a: &Attempt,
    added: &[Found],
    spread: &BTreeMap<String, Vec<String>>,
    cluster: Option<&str>,
) -> Vec<NextNote> {
    let mut notes: Vec<NextNote> = refused
        .workloads
        .iter()
        .map(|(w, why)| NextNote::RightSizeRefused {
            workload: w.clone(),
            why: why.clone(),
        })
        .collect();
    notes.extend(
        refused
            .pools
            .iter()
            .map(|(p, why)| NextNote::ResizeRefused {
                pool: p.clone(),
                why: why.clone(),
            }),
    );
    notes.extend(
        refused
            .held
            .iter()
            .map(|(w, (pool, why))| NextNote::HeldForPool {
                workload: w.clone(),
                pool: pool.clone(),
                why: why.clone(),
            }),
    );
    notes.extend(a.resized.iter().map(|r| NextNote::Resized {
        pool: r.pool.clone(),
        resized: r.resized.clone(),
    }));
    if !added.is_empty() {
        notes.push(NextNote::NewErrors(added.to_vec()));
    }
    notes.extend(spread.iter().map(|(w, regions)| NextNote::Spread {
        workload: w.clone(),
        regions: regions.clone(),
        clusters: cluster.unwrap_or_default().to_owned(),
    }));
    if !nq.without_data.is_empty() {
        notes.push(NextNote::WithoutData(nq.without_data.clone()));
    }
    notes
}
