use super::{Cx, Rule};
use crate::core::num;
use crate::engine::cost::block_window;

declare_rule! {
    /// # GP036 block-shorter-than-work
    ///
    /// ## What it does
    /// Flags a Capacity Block (`capacity = "capacity-block"`) whose length (`block_hours`)
    /// is shorter than the hours a month of its workloads run (`hours_per_month`, the plan's
    /// month when a workload does not say), naming the hours the work loses and the
    /// shortest block EC2 sells that holds them.
    ///
    /// ## Why is this bad?
    /// A Capacity Block's instances exist only between its start and end dates: the block is
    /// bought for a fixed length (1-day steps up to 14 days, 7-day steps up to 182), and
    /// work still running at its end is stopped. A gang planned for 400 hours in a 336-hour
    /// block loses 64 hours of training, or the month's run does not finish.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// hours_per_month = 400
    ///
    /// [[pool]]
    /// capacity = "capacity-block"
    /// block_hours = 336
    /// ```
    /// Use instead: `block_hours = 504` (the shortest block sold for 400 hours), or plan the
    /// work's hours inside the block.
    ///
    /// ## Source
    /// EC2 DescribeCapacityBlockOfferings (`CapacityDurationHours`); Capacity Blocks for ML:
    /// instances end with the block.
    pub(crate) struct BlockShorterThanWork { id: GP036, name: "block-shorter-than-work", severity: Error }
}

impl Rule for BlockShorterThanWork {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            let Some(span) = pool.block_hours.as_ref().map(|h| h.span()) else {
                continue;
            };
            let Some((block, true)) = block_window(cx.plan, pool) else {
                continue;
            };
            let Some(longest) = cx
                .plan
                .pool_workloads(pool)
                .max_by(|a, b| cx.hours(Some(a)).total_cmp(&cx.hours(Some(b))))
            else {
                continue;
            };
            let work = cx.hours(Some(longest));
            if work <= block + 1e-9 {
                continue;
            }
            let sold = crate::cloud::profile(cx.plan.provider()).sold_block(work);
            let fix = sold.map_or_else(
                || "split the work over more than one block".to_owned(),
                |h| format!("set `block_hours = {}`, the shortest block EC2 sells for {} hours, or plan the work inside the block", num(h), num(work)),
            );
            cx.push(
                cx.finding(
                    span,
                    format!(
                        "pool `{}` is a Capacity Block of {} hours but workload `{}` runs {} hours a month: {} hours of its work fall outside the block",
                        pool.name.get(),
                        num(block),
                        longest.name.get(),
                        num(work),
                        num(work - block)
                    ),
                )
                .label("block length")
                .help(fix)
                .pool(pool.name.get())
                .workload(longest.name.get()),
            );
        }
    }
}
