//! The rule ids a plan names (`[[allow]]`, `[rules] deny`), checked against every id `check`
//! has, and the one route from a parsed plan to a validated one.

use std::sync::Arc;

use super::raw::RawPlan;
use super::Plan;
use crate::catalog::Catalog;
use crate::diag::{Diag, PlanCode, RuleId};
use crate::source::SourceFile;

/// Rules whose findings are about the plan as a whole (its budget, its data), so an
/// `[[allow]]` for them names neither a workload nor a pool.
pub const PLAN_WIDE: [RuleId; 2] = [RuleId::GP017, RuleId::GP022];

/// The rule ids a plan's `[[allow]]` entries and `[rules] deny` name, checked against the
/// registry: an unknown id is an error at its span, with the closest id suggested.
fn validate_entries(file: &Arc<SourceFile>, raw: &RawPlan) -> Vec<Diag> {
    let ids: Vec<String> = RuleId::ALL.iter().map(|r| r.as_str().to_owned()).collect();
    let named = raw
        .allow
        .iter()
        .map(|a| &a.rule)
        .chain(raw.rules.iter().flat_map(|r| r.deny.iter()));
    let mut out: Vec<Diag> = named
        .filter_map(|id| {
            super::unknown_member(
                file,
                PlanCode::UnknownRule,
                id,
                &ids,
                format!("`{}` is not a gpuplan rule", id.get()),
                "unknown rule id",
                "rules",
            )
        })
        .collect();
    for a in &raw.allow {
        let narrow = RuleId::parse(a.rule.get()).is_some_and(|r| !PLAN_WIDE.contains(&r));
        if a.workload.is_none() && a.pool.is_none() && narrow {
            out.push(
                Diag::error(
                    PlanCode::MissingKey,
                    file,
                    a.rule.span(),
                    "an allow must name the `workload` or `pool` it applies to",
                )
                .label("applies to nothing")
                .help(format!(
                    "add `workload = \"...\"` or `pool = \"...\"`; only the plan-wide rules ({}) take an allow for the whole plan",
                    PLAN_WIDE.map(RuleId::as_str).join(", ")
                )),
            );
        }
    }
    out
}

/// Validate a parsed plan: what it means and the rule ids it names, with the
/// problems reading it found, every problem at once (in file order, at most
/// [`super::load::MAX_LOAD_ERRORS`]). What was set aside to read past a problem raises
/// no second one.
pub(super) fn validated(
    file: Arc<SourceFile>,
    parsed: super::load::Partial,
    catalog: &Catalog,
) -> Result<Plan, Vec<Diag>> {
    let super::load::Partial {
        raw,
        mut errors,
        patched,
    } = parsed;
    let echo = |d: &Diag| {
        patched
            .iter()
            .any(|p| d.span.start < p.end && p.start < d.span.end.max(d.span.start + 1))
    };
    let unknown = validate_entries(&file, &raw);
    let meaning = super::validate::validate(file, raw, catalog);
    let clean = errors.is_empty() && unknown.is_empty();
    let more = match meaning {
        Ok(plan) if clean => return Ok(plan),
        Ok(_) => Vec::new(),
        Err(ds) => ds,
    };
    errors.extend(more.into_iter().chain(unknown).filter(|d| !echo(d)));
    errors.sort_by_key(|d| d.span.start);
    errors.truncate(super::load::MAX_LOAD_ERRORS);
    Err(errors)
}
