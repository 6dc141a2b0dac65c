use super::{Cx, Rule};
use crate::core::num;
use crate::core::rate;
use crate::diag::Severity;
use crate::engine::spot::assess;

declare_rule! {
    /// # GP009 gang-on-spot
    ///
    /// ## What it does
    /// Flags gang-scheduled multi-node training (`nodes > 1`) on a spot pool and states the
    /// arithmetic: the expected restart waste (paid hours per useful hour) from the eviction
    /// band, gang size, checkpoint interval and restart time, against the break-even waste
    /// (on-demand price / spot price). An error when spot is expected to cost more than
    /// on-demand; a warning otherwise. When the band is unknown (Azure offline) the gang is
    /// judged at the worst band, 20%+ = 30% of nodes a month, the one figure `recommend` also
    /// uses, so the two never disagree; a warning either way, since the real band may be lower.
    ///
    /// The model: each node is interrupted at `h = -ln(1 - p) / 730` per hour, where `p` is the
    /// monthly interruption assumed for the band (<5%: 2.5%, 5-10%: 7.5%, 10-15%: 12.5%,
    /// 15-20%: 17.5%, 20%+: 30%); a gang of `n` nodes fails at `n * h`; work since the last
    /// checkpoint is lost and the gang needs `restart_minutes` to be back (default:
    /// `10 * (1 + log2(n)) + 20 + 5` minutes: re-acquire every node, pull the image, load
    /// weights); nodes are paid throughout. Expected wall time per checkpoint interval `C` is
    /// `e^{λR} (e^{λC} - 1) / λ`, and waste = that / C.
    ///
    /// ## Why is this bad?
    /// Losing one node kills the whole job: every GPU-hour since the last checkpoint is lost
    /// across the entire allocation, and re-acquiring a large homogeneous allocation of
    /// scarce SKUs is hardest exactly when spot capacity is short.
    ///
    /// ## Example
    /// ```toml
    /// nodes = 64
    /// checkpoint_minutes = 1440
    /// restart_minutes = 4320
    /// # on a spot pool in the 20%+ band
    /// ```
    /// Use instead: on-demand or reserved capacity for big gangs, or checkpoint far more
    /// often; spot fits single-node jobs with short checkpoints in low bands.
    ///
    /// ## Source
    /// Context article "Queueing, and the spot caveat nobody states"; AWS Spot Instance
    /// Advisor and Azure SpotResources bands.
    pub(crate) struct GangOnSpot { id: GP009, name: "gang-on-spot", severity: Warning }
}

impl Rule for GangOnSpot {
    fn check(&self, cx: &mut Cx<'_>) {
        for pool in cx.plan.pools() {
            if !pool.capacity().is_evictable() {
                continue;
            }
            for w in cx.plan.pool_workloads(pool) {
                let gang = w.gang();
                if gang <= 1 {
                    continue;
                }
                let a = assess(
                    cx.catalog,
                    cx.plan.provider(),
                    w,
                    pool.sku.get(),
                    pool.region.get(),
                );
                let restart = format!(
                    "restart {} min{}",
                    num(a.restart_minutes),
                    if a.restart_is_default {
                        " (default for this gang size)"
                    } else {
                        ""
                    }
                );
                let prices = match (a.on_demand, a.spot, a.break_even) {
                    (Some(o), Some(s), Some(b)) => format!(
                        "on-demand {}/h vs spot {}/h: break-even waste {}x",
                        rate(o),
                        rate(s),
                        num(b)
                    ),
                    _ => "no dated spot price in the catalog (unknown offline; a live refresh fetches it), so the break-even is unknown".to_owned(),
                };
                let (msg, severity) = match (&a.band, a.economics, a.break_even) {
                    (Some(band), Some(e), Some(b)) => {
                        let verdict = if e.waste_factor > b { "spot costs more than on-demand" } else { "spot still wins" };
                        (
                            format!(
                                "gang of {gang} nodes on spot (`{}` in `{}`, band {}): {}, checkpoint every {} min, {restart} -> expected waste {}x; {prices}: {verdict}",
                                pool.sku.get(), pool.region.get(), band.label,
                                format_args!("one interruption every {} h", num(1.0 / e.gang_hazard)),
                                num(a.checkpoint_minutes.unwrap_or(0.0)), num(e.waste_factor)
                            ),
                            if e.waste_factor > b { Severity::Error } else { Severity::Warning },
                        )
                    }
                    // Unknown band: the worst band's figure, as `recommend` judges it, so the
                    // two never disagree about a plan `--write-plan` wrote.
                    (None, _, Some(b)) if a.checkpoint_minutes.is_some() => {
                        let (label, p) = crate::engine::spot::worst_band(cx.catalog, cx.plan.provider())
                            .unwrap_or_else(|| ("20+".to_owned(), 0.30));
                        let e = crate::engine::spot::economics(
                            p,
                            u32::try_from(gang).unwrap_or(u32::MAX),
                            a.checkpoint_minutes.unwrap_or(1.0),
                            a.restart_minutes,
                        );
                        let verdict = if e.waste_factor <= b {
                            "spot wins even at the worst band"
                        } else {
                            "spot loses at the worst band; a live refresh reads the real band"
                        };
                        (
                            format!(
                                "gang of {gang} nodes on spot: the eviction band of `{}` in `{}` is unknown (Azure bands need a live SpotResources query), so it is judged at the worst band ({label}, {}% of nodes a month, the figure `recommend` uses): checkpoint every {} min, {restart} -> expected waste {}x; {prices}: {verdict}",
                                pool.sku.get(), pool.region.get(), num(p * 100.0),
                                num(a.checkpoint_minutes.unwrap_or(0.0)), num(e.waste_factor)
                            ),
                            Severity::Warning,
                        )
                    }
                    (None, _, _) => (
                        format!("gang of {gang} nodes on spot: the eviction band of `{}` in `{}` is unknown (Azure bands need a live SpotResources query), and without {} the restart waste cannot be computed; {prices}", pool.sku.get(), pool.region.get(), if a.break_even.is_none() { "a spot price" } else { "a checkpoint interval" }),
                        Severity::Warning,
                    ),
                    _ => (
                        format!("gang of {gang} nodes on spot with no checkpoint interval: every interruption loses the whole run; {prices}"),
                        Severity::Warning,
                    ),
                };
                let mut d = cx
                    .finding(pool.capacity.as_ref().map_or(pool.name.span(), |c| c.span()), msg)
                    .label("spot capacity")
                    .also(w.nodes.as_ref().map_or(w.name.span(), |n| n.span()), format!("gang of {gang}"))
                    .help("run large gangs on on-demand or reserved capacity, or checkpoint more often; see `gpuplan explain GP009` for the model")
                    .workload(w.name.get())
                    .pool(pool.name.get());
                d.severity = severity;
                cx.push(d);
            }
        }
    }
}
