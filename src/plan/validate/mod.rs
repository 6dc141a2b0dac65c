//! Second pass: what the plan means. Collects every problem instead of stopping at the first:
//! the header, each workload, each pool, then the entries that refer to them.

mod entries;
mod header;
mod pools;
mod workloads;

use std::ops::Range;
use std::sync::Arc;

use indexmap::IndexMap;

use super::limits;
use super::load::did_you_mean;
use super::raw::{Count, RawPlan, Sp};
use super::{Date, Plan, PlanCode};
use crate::catalog::Catalog;
use crate::diag::Diag;
use crate::source::SourceFile;

struct Ctx<'a> {
    file: &'a Arc<SourceFile>,
    diags: Vec<Diag>,
}

impl Ctx<'_> {
    fn err(&mut self, code: PlanCode, span: Range<usize>, msg: String, label: &str, help: String) {
        self.diags.push(
            Diag::error(code, self.file, span, msg)
                .label(label)
                .help(help),
        );
    }

    /// An error at `key` when its text is blank (a decision's or a suppression's who and why).
    fn non_empty(&mut self, key: &str, v: &Sp<String>, help: String) {
        if v.trim().is_empty() {
            self.err(
                PlanCode::EmptyValue,
                v.span(),
                format!("`{key}` is empty"),
                "empty",
                help,
            );
        }
    }

    /// Report `v` unless it is one of `known`, suggesting the closest; true when it is known.
    fn member(
        &mut self,
        code: PlanCode,
        v: &Sp<String>,
        known: &[String],
        msg: String,
        label: &str,
        what: &str,
    ) -> bool {
        match unknown_member(self.file, code, v, known, msg, label, what) {
            Some(d) => {
                self.diags.push(d);
                false
            }
            None => true,
        }
    }

    fn dns_label(&mut self, what: &str, v: &Sp<String>) {
        if let Some(why) = dns1123_problem(v.get()) {
            self.err(
                PlanCode::InvalidName,
                v.span(),
                format!(
                    "{what} `{}` is not a DNS-1123 label: {why}",
                    crate::core::excerpt(v.get(), 80)
                ),
                "not a DNS-1123 label",
                "use lowercase letters, digits and `-`, start and end with a letter or digit, at most 63 characters".into(),
            );
        }
    }

    fn range_f(&mut self, key: &str, v: &Sp<f64>, r: limits::Real) {
        let limits::Real {
            lo,
            lo_incl,
            hi,
            hi_incl,
        } = r;
        let x = *v.get();
        let ok = x.is_finite()
            && (if lo_incl { x >= lo } else { x > lo })
            && (if hi_incl { x <= hi } else { x < hi });
        if !ok {
            let lo_s = if lo_incl { "[" } else { "(" };
            let hi_s = if hi_incl { "]" } else { ")" };
            let hi_txt = if hi.is_infinite() {
                "∞".to_owned()
            } else {
                fmt_num(hi)
            };
            self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {}` is out of range", fmt_num(x)),
                "out of range",
                format!("`{key}` must be in {lo_s}{}, {hi_txt}{hi_s}", fmt_num(lo)),
            );
        }
    }

    fn range_i(&mut self, key: &str, v: &Sp<i64>, r: limits::Int) {
        let limits::Int { lo, hi } = r;
        let x = *v.get();
        if !(lo..=hi).contains(&x) {
            self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {x}` is out of range"),
                "out of range",
                format!("`{key}` must be an integer from {lo} to {hi}"),
            );
        }
    }

    /// `fixed_min` bounds a plain integer; `min_floor` the `min` of a range.
    fn count(&mut self, key: &str, v: &Sp<Count>, c: limits::Count) {
        let limits::Count {
            fixed_min,
            min_floor,
            max_cap,
        } = c;
        match *v.get() {
            Count::Fixed(n) if n < fixed_min || n > max_cap => self.err(
                PlanCode::OutOfRange,
                v.span(),
                format!("`{key} = {n}` is out of range"),
                "out of range",
                format!(
                    "`{key}` must be from {fixed_min} to {max_cap}, or `{{ min = .., max = .. }}`"
                ),
            ),
            Count::Range { min, max }
                if min < min_floor || max < 1 || max > max_cap || min > max =>
            {
                self.err(
                    PlanCode::OutOfRange,
                    v.span(),
                    format!("`{key} = {{ min = {min}, max = {max} }}` is not a valid range"),
                    "invalid range",
                    format!("need {min_floor} <= min <= max, 1 <= max <= {max_cap}"),
                )
            }
            _ => {}
        }
    }
}

/// Why a name is not a DNS-1123 label, if it is not one.
pub(super) fn dns1123_problem(s: &str) -> Option<&'static str> {
    if s.is_empty() {
        return Some("it is empty");
    }
    if s.len() > 63 {
        return Some("it is longer than 63 characters");
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Some("only lowercase letters, digits and `-` are allowed");
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Some("it must start and end with a letter or digit");
    }
    None
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

fn date_of(ctx: &mut Ctx<'_>, key: &str, v: &Sp<super::raw::PlanDate>) -> Option<Date> {
    let dt = &v.get().0;
    match (&dt.date, &dt.time) {
        (Some(d), None) => Date::new(i32::from(d.year), d.month, d.day),
        _ => {
            ctx.err(
                PlanCode::InvalidValue,
                v.span(),
                format!("`{key}` must be a date like 2026-11-02, not `{dt}`"),
                "not a plain date",
                "write the date without a time, e.g. `2027-03-31`".into(),
            );
            None
        }
    }
}

fn unique<'a>(
    ctx: &mut Ctx<'_>,
    what: &str,
    names: impl Iterator<Item = &'a Sp<String>>,
) -> IndexMap<String, usize> {
    let mut seen: IndexMap<String, (usize, Range<usize>)> = IndexMap::new();
    for (i, n) in names.enumerate() {
        if let Some((_, first)) = seen.get(n.get()) {
            let first = first.clone();
            ctx.diags.push(
                Diag::error(
                    PlanCode::DuplicateName,
                    ctx.file,
                    n.span(),
                    format!("{what} `{}` is defined twice", n.get()),
                )
                .label("second definition")
                .also(first, "first defined here")
                .help(format!(
                    "{what} names must be unique; rename or merge one of them"
                )),
            );
        } else {
            seen.insert(n.get().clone(), (i, n.span()));
        }
    }
    seen.into_iter().map(|(k, (i, _))| (k, i)).collect()
}

/// An error at `v` unless it is one of `known`, suggesting the closest of them.
pub(crate) fn unknown_member(
    file: &Arc<SourceFile>,
    code: PlanCode,
    v: &Sp<String>,
    known: &[String],
    msg: String,
    label: &str,
    what: &str,
) -> Option<Diag> {
    if known.iter().any(|k| k == v.get()) {
        return None;
    }
    Some(
        Diag::error(code, file, v.span(), msg)
            .label(label)
            .help(suggest(v.get(), known, what)),
    )
}

fn suggest(word: &str, known: &[String], what: &str) -> String {
    match did_you_mean(word, known) {
        Some(b) => format!("did you mean `{b}`?"),
        // A plan that defines none: say so, rather than list nothing.
        None if known.is_empty() => format!("the plan defines no {what}"),
        None if known.len() <= 12 => format!(
            "known {what}: {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => format!("run `gpuplan catalog` to list the known {what}"),
    }
}

/// What the catalog knows that every section checks names against.
struct Known<'c> {
    catalog: &'c Catalog,
    provider: crate::plan::raw::Provider,
    pc: Option<&'c crate::catalog::ProviderCatalog>,
    known_regions: Vec<String>,
    plan_regions: Vec<String>,
    sku_names: Vec<String>,
    gpu_names: Vec<String>,
}

impl<'c> Known<'c> {
    fn new(raw: &RawPlan, catalog: &'c Catalog) -> Known<'c> {
        let meta = raw.plan.get();
        let provider = *meta.provider.get();
        let pc = catalog.provider(provider);
        Known {
            catalog,
            provider,
            pc,
            known_regions: pc.map(|p| p.regions.clone()).unwrap_or_default(),
            plan_regions: meta.regions.iter().map(|r| r.get().clone()).collect(),
            sku_names: pc
                .map(|p| p.skus.keys().cloned().collect())
                .unwrap_or_default(),
            gpu_names: catalog.gpus.keys().cloned().collect(),
        }
    }

    fn check_sku(&self, ctx: &mut Ctx<'_>, s: &Sp<String>) {
        if self.catalog.sku(self.provider, s.get()).is_none() {
            ctx.err(
                PlanCode::UnknownSku,
                s.span(),
                format!("SKU `{}` is not in the {} catalog", s.get(), self.provider),
                "unknown SKU",
                suggest(s.get(), &self.sku_names, "SKUs"),
            );
        }
    }
}

pub(super) fn validate(
    file: Arc<SourceFile>,
    raw: RawPlan,
    catalog: &Catalog,
) -> Result<Plan, Vec<Diag>> {
    let mut ctx = Ctx {
        file: &file,
        diags: Vec::new(),
    };
    let k = Known::new(&raw, catalog);
    header::header(&mut ctx, &raw, &k);
    let workloads = unique(&mut ctx, "workload", raw.workload.iter().map(|w| &w.name));
    for w in &raw.workload {
        workloads::workload(&mut ctx, w, &k);
        workloads::within_the_month(&mut ctx, w, &raw);
    }
    let pools = unique(&mut ctx, "pool", raw.pool.iter().map(|p| &p.name));
    let workload_names: Vec<String> = workloads.keys().cloned().collect();
    for p in &raw.pool {
        pools::pool(&mut ctx, p, &k, &workloads, &workload_names);
    }
    let pool_list: Vec<&crate::plan::raw::Pool> = raw.pool.iter().map(|p| p.get()).collect();
    pools::pool_labels(&mut ctx, &pool_list, k.pc);
    entries::quotas(&mut ctx, &raw, &k);
    let decisions = entries::decisions(&mut ctx, &raw);
    entries::allows(&mut ctx, &raw, &workloads, &workload_names, &pools);
    if ctx.diags.is_empty() {
        Ok(Plan {
            file,
            raw,
            workloads,
            pools,
            decisions,
        })
    } else {
        Err(ctx.diags)
    }
}

/// The date an allow expires, if it has a valid one (validated above).
pub(super) fn allow_expiry(a: &super::raw::Allow) -> Option<Date> {
    let dt = &a.expires.as_ref()?.get().0;
    let d = dt.date.as_ref()?;
    Date::new(i32::from(d.year), d.month, d.day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns1123_labels() {
        assert_eq!(dns1123_problem("chat-api"), None);
        assert!(dns1123_problem("Chat").is_some());
        assert!(dns1123_problem("-a").is_some());
        assert!(dns1123_problem(&"a".repeat(64)).is_some());
        assert!(dns1123_problem("").is_some());
        assert!(dns1123_problem("a\"b").is_some());
    }
}
