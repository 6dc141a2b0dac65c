use super::{Cx, Rule};
use crate::core::usd;
use crate::engine::cost::{block_price_unknown, declared_pool};

declare_rule! {
    /// # GP017 budget-exceeded
    ///
    /// ## What it does
    /// Adds up the monthly cost of the declared pools at their maximum size (what the plan
    /// can be billed: node price for the pool's capacity type x nodes x hours) and flags a
    /// total above `plan.monthly_budget`. Without declared pools the recommended fleet's cost
    /// is what counts (`gpuplan recommend`). A Capacity Block is paid for its whole length
    /// at the block price; where that price is unknown (offline, before a refresh reads
    /// DescribeCapacityBlockOfferings) the block is not counted at on-demand rates but named
    /// as not counted.
    ///
    /// ## Why is this bad?
    /// GPU spend moves in steps of thousands a month per node; a pull request that raises
    /// `nodes.max` can double the bill without anyone reading a number.
    ///
    /// ## Example
    /// ```toml
    /// [plan]
    /// monthly_budget = 20000
    /// # one pool of 1 x Standard_ND96isr_H100_v5 on-demand: $71,773.60 a month
    /// ```
    /// Use instead: raise the budget deliberately, or lower `nodes.max` / move work to spot.
    ///
    /// ## Source
    /// Catalog prices (providers/); context article (an idle 8-GPU H100 node is ~$72k/month).
    pub(crate) struct BudgetExceeded { id: GP017, name: "budget-exceeded", severity: Error }
}

/// The recommended fleet against the budget: the same finding `check` makes for declared
/// pools, at the budget's line with its help, for `recommend` and `render` to report.
pub(crate) fn recommended(plan: &crate::plan::Plan, at_max: f64) -> Option<crate::diag::Diag> {
    let budget = plan.monthly_budget()?;
    if at_max <= *budget.get() {
        return None;
    }
    Some(
        crate::diag::Diag::new(
            super::RuleMeta::id(&BudgetExceeded),
            crate::diag::Severity::Error,
            &plan.file,
            budget.span(),
            format!(
                "the recommended pools cost {} a month at their maximum size, above the budget of {}",
                usd(at_max),
                usd(*budget.get())
            ),
        )
        .label("monthly budget")
        .help("raise the budget deliberately, or allow less: lower replicas' maximum, let batch run on spot, or cut hours"),
    )
}

impl Rule for BudgetExceeded {
    fn check(&self, cx: &mut Cx<'_>) {
        let Some(budget) = cx.plan.monthly_budget() else {
            return;
        };
        let mut total = 0.0;
        let mut parts = Vec::new();
        // A block with no block price is not costed at on-demand (a block is bought at its
        // own price): left out of the total, and named.
        let mut unpriced = Vec::new();
        for pool in cx.plan.pools() {
            if block_price_unknown(cx.plan, cx.catalog, pool) {
                unpriced.push(format!("`{}`", pool.name.get()));
                continue;
            }
            if let Some(c) = declared_pool(cx.plan, cx.catalog, pool).map(|c| c.at_max) {
                total += c;
                parts.push((pool.name.get().as_str(), c));
            }
        }
        if total <= *budget.get() {
            return;
        }
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top = parts
            .iter()
            .take(3)
            .map(|(n, c)| format!("`{n}` {}", usd(*c)))
            .collect::<Vec<_>>()
            .join(", ");
        let left_out = if unpriced.is_empty() {
            String::new()
        } else {
            format!(
                "; not counted: {}: {}",
                unpriced.join(", "),
                crate::engine::cost::block_price_unknown_said(cx.plan.provider())
            )
        };
        cx.push(
            cx.finding(budget.span(), format!("declared pools can cost {} a month at their maximum size, {} over the budget of {} (largest: {top}){left_out}", usd(total), usd(total - budget.get()), usd(*budget.get())))
                .label("monthly budget")
                .help("lower `nodes.max`, move interruptible work to spot, or raise the budget deliberately"),
        );
    }
}
