//! The review as Markdown: one writer per section, in the order the report reads.

use std::fmt::Write as _;

use super::cells::{card, hours, pct, unrequested, SHARED_CARD};
use crate::core::format::md_code;
use crate::core::usd;
use crate::report::markdown::md;
use crate::review::Review;

/// Inference judged by serving metrics, and the vLLM workloads that exported none.
fn serving(o: &mut String, r: &Review) {
    use crate::review::serving::ServingSignal;
    if !r.serving.is_empty() {
        let _ = writeln!(
            o,
            "\n## Serving (vLLM)\n\nReplicas are judged by what the servers say, not by GPU activity: a busy GPU may serve without a queue, an idle-looking one may keep requests waiting.\n\n| workload | hours | replicas p95 | in flight p95 | waiting p95 | KV cache p95 | TTFT p95 / objective | per replica within it | replicas needed p95 / max | decided by |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        );
        for s in &r.serving {
            let num = crate::core::num;
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                md_code(&s.workload),
                s.hours,
                num(s.replicas.p95),
                num(s.concurrency.p95),
                num(s.waiting.p95),
                s.kv_cache
                    .map_or("-".to_owned(), |k| format!("{:.0}%", k.p95 * 100.0)),
                match (s.ttft_p95_seconds, s.ttft_objective_seconds) {
                    (Some(v), Some(obj)) => format!(
                        "{v:.2} s / {} s ({} of {} h over)",
                        num(obj),
                        s.hours_over_objective.unwrap_or(0),
                        s.hours_with_ttft
                    ),
                    (Some(v), None) => format!("{v:.2} s / none stated"),
                    (None, _) => "not exported".to_owned(),
                },
                s.concurrency_per_replica
                    .map_or("unknown: never within".to_owned(), num),
                s.needed_replicas.map_or("-".to_owned(), |n| format!(
                    "{} / {}",
                    num(n.p95),
                    num(n.max)
                )),
                match s.decided_by {
                    ServingSignal::TimeToFirstToken => "time to first token",
                    ServingSignal::QueueAndKvCache => "queue and KV cache",
                }
            );
        }
    }
    if !r.serving_missing.is_empty() {
        let _ = writeln!(
            o,
            "\nNo serving metrics (`vllm:num_requests_waiting`, `vllm:gpu_cache_usage_perc` or `vllm:kv_cache_usage_perc`, `vllm:time_to_first_token_seconds`) from {}, though the plan says vLLM serves them: their replicas are judged by GPU activity. Scrape vLLM's `/metrics` (a PodMonitor) to judge them by saturation.",
            r.serving_missing
                .iter()
                .map(|w| md_code(w))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// How pods were matched to workloads, where any was matched by other than a label.
fn matched_by(o: &mut String, r: &Review) {
    let lines: Vec<String> = r
        .workloads
        .iter()
        .filter_map(|w| {
            let m = &w.matched_pods;
            let parts: Vec<String> = [
                (m.label, "by label"),
                (
                    m.controller,
                    "by controller (Deployment, StatefulSet, Job, CronJob)",
                ),
                (m.name_prefix, "by name prefix"),
                (
                    m.only_workload_on_gpu,
                    "as the team's only workload on the pod's GPU model",
                ),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, how)| format!("{n} {how}"))
            .collect();
            (m.label < w.pods as u32 && !parts.is_empty())
                .then(|| format!("- {}: {}", md_code(&w.workload), parts.join(", ")))
        })
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(
            o,
            "\nPods matched to workloads without a `gpuplan.io/workload` or `app.kubernetes.io/name` label (kube-state-metrics exports pod labels only with `--metric-labels-allowlist`):\n\n{}",
            lines.join("\n")
        );
    }
}

pub(crate) fn markdown(r: &Review) -> String {
    let mut o = String::new();
    md_headline(&mut o, r);
    md_teams(&mut o, r);
    md_pools(&mut o, r);
    md_workloads(&mut o, r);
    matched_by(&mut o, r);
    serving(&mut o, r);
    md_changes(&mut o, r);
    crate::report::forecast::next_quarter(&mut o, r);
    md_stalled(&mut o, r);
    md_pending(&mut o, r);
    md_gaps(&mut o, r);
    md_reservation_advice(&mut o, r);
    md_idle_pools(&mut o, r);
    md_idle_nodes(&mut o, r);
    md_purchase_fill(&mut o, r);
    md_reservation_fill(&mut o, r);
    md_unmatched(&mut o, r);
    o
}

/// The title, the window's totals and what the data covers.
fn md_headline(o: &mut String, r: &Review) {
    let (a, u, none): (f64, f64, f64) = r.teams.iter().fold((0.0, 0.0, 0.0), |(a, u, n), t| {
        (
            a + t.figures.allocated_gpu_seconds,
            u + t.figures.used_gpu_seconds,
            n + t.figures.no_data_gpu_seconds,
        )
    });
    let idle: f64 = r.teams.iter().map(|t| t.figures.idle_cost_usd).sum();
    let _ = writeln!(o, "# GPU capacity review: `{}`", r.plan);
    let _ = writeln!(o);
    // Used is a share of the hours a usage series covered: hours without one are no data,
    // never 0% used.
    let measured = a - none;
    let used = if measured > 1e-9 {
        let gap = if none > 1e-9 {
            format!(" of the {} with usage data", hours(measured))
        } else {
            String::new()
        };
        format!("{} used{gap} ({})", hours(u), pct(Some(u / measured)))
    } else if a > 0.0 {
        "no usage data".to_owned()
    } else {
        format!("{} used (-)", hours(u))
    };
    let _ = writeln!(
        o,
        "{} to {} ({}). **{} GPU-hours allocated, {used}; the idle part cost {}.**",
        r.window.from,
        r.window.to,
        md(&r.source),
        hours(a),
        usd(idle)
    );
    let _ = writeln!(o);
    let c = &r.coverage;
    // A CSV was never scraped: naming exporters and their intervals would describe a
    // collection that did not happen (issue 75).
    let sampled = match c.rows_every_seconds {
        Some(e) => format!("one row per pod every {} s", crate::core::num(e)),
        None => format!(
            "kube-state-metrics every {}, DCGM every {}",
            every(
                &c.kube_state_metrics_intervals_seconds,
                c.kube_state_metrics_interval_seconds
            ),
            every(&c.dcgm_intervals_seconds, c.dcgm_interval_seconds),
        ),
    };
    let _ = writeln!(
        o,
        "Coverage: the data covers {} h of the {} h asked for ({} to {}); {sampled}. Costs and advice are over the covered hours.",
        hours(c.covered_seconds as f64),
        hours(c.requested_seconds as f64),
        c.data_from.as_deref().unwrap_or("-"),
        c.data_to.as_deref().unwrap_or("-"),
    );
    let _ = writeln!(o);
}

/// An exporter's scrape intervals: each one it used (by target, or as it changed), else the
/// one read overall.
fn every(each: &[f64], overall: Option<f64>) -> String {
    match each {
        few @ ([_, _] | [_, _, _]) => format!(
            "{} s (by target or over time)",
            few.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        [lo, .., hi] => format!("{lo} to {hi} s (by target or over time)"),
        _ => overall.map_or("-".to_owned(), |i| format!("{i} s")),
    }
}

/// Per team: allocated, used, efficiency, no data, Pending and idle cost.
fn md_teams(o: &mut String, r: &Review) {
    let _ = writeln!(o, "## Teams\n\n| team | GPU-h allocated | GPU-h used | efficiency | no data (GPU-h) | Pending (GPU-h) | idle cost |\n|---|---:|---:|---:|---:|---:|---:|");
    for t in &r.teams {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            md(&t.team),
            hours(t.figures.allocated_gpu_seconds),
            hours(t.figures.used_gpu_seconds),
            card(
                pct(t.figures.efficiency),
                t.figures.efficiency_of_shared_cards
            ),
            hours(t.figures.no_data_gpu_seconds),
            hours(t.figures.pending_gpu_seconds),
            usd(t.figures.idle_cost_usd)
        );
    }
    if r.teams.iter().any(|t| t.figures.efficiency_of_shared_cards) {
        let _ = writeln!(o, "\n{SHARED_CARD}");
    }
}

/// Per pool and per GPU model.
fn md_pools(o: &mut String, r: &Review) {
    if !r.pools.is_empty() {
        let _ = writeln!(o, "\n## Pools and GPU models\n\n| pool | GPU | signal | GPU-h allocated | GPU-h used | efficiency | peak GPUs | p95 GPUs | cost | idle cost |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
        for p in &r.pools {
            let _ = writeln!(
                o,
                "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                md_code(&p.pool),
                if p.in_plan { "" } else { " (not in the plan)" },
                md(p.model.as_deref().unwrap_or("-")),
                p.signal.as_deref().unwrap_or("no usage data"),
                hours(p.allocated_gpu_seconds),
                hours(p.used_gpu_seconds),
                card(pct(p.efficiency), p.efficiency_of_shared_cards),
                p.peak_gpus,
                p.p95_gpus,
                p.allocated_cost_usd.map_or("-".to_owned(), usd),
                p.idle_cost_usd.map_or("-".to_owned(), usd),
            );
        }
        let _ = writeln!(o, "\n| GPU model | GPU-h allocated | GPU-h used | efficiency | cost | idle cost |\n|---|---:|---:|---:|---:|---:|");
        for m in &r.models {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                md(&m.model),
                hours(m.allocated_gpu_seconds),
                hours(m.used_gpu_seconds),
                pct(m.efficiency),
                m.allocated_cost_usd.map_or("-".to_owned(), usd),
                m.idle_cost_usd.map_or("-".to_owned(), usd),
            );
        }
    }
}

/// Per workload, with its planned utilization and cost per million tokens.
fn md_workloads(o: &mut String, r: &Review) {
    let _ = writeln!(o, "\n## Workloads\n\n| workload | team | GPU-h allocated | GPU-h used | efficiency | planned | idle cost | $/1M tokens |\n|---|---|---:|---:|---:|---:|---:|---:|");
    for w in &r.workloads {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            md_code(&w.workload),
            md(&w.team),
            hours(w.figures.allocated_gpu_seconds),
            hours(w.figures.used_gpu_seconds),
            card(
                pct(w.figures.efficiency),
                w.figures.efficiency_of_shared_cards
            ),
            pct(w.planned_utilization),
            usd(w.figures.idle_cost_usd),
            w.usd_per_million_tokens
                .map_or("-".to_owned(), crate::core::rate)
        );
    }
    if r.workloads
        .iter()
        .any(|w| w.figures.efficiency_of_shared_cards)
    {
        let _ = writeln!(o, "\n{SHARED_CARD}");
    }
}

/// The review's advice, each with its saving and the change to make.
fn md_changes(o: &mut String, r: &Review) {
    if !r.recommendations.is_empty() {
        let _ = writeln!(o, "\n## What to change\n");
        for a in &r.recommendations {
            let _ = writeln!(
                o,
                "- **{}** ({}): {}. Change: {}",
                a.kind,
                match a.saving_usd {
                    Some(s) => format!("saves {} over the window", usd(s)),
                    None if a.kind == crate::review::rows::AdviceKind::UnmetDemand =>
                        "buys capacity, saves nothing".to_owned(),
                    None => "saving unknown: no price for its pool".to_owned(),
                },
                md(&a.message.to_string()),
                md_code(&a.change.to_string())
            );
        }
    }
}

/// Pods that held GPUs with near-zero activity for longer than the threshold.
fn md_stalled(o: &mut String, r: &Review) {
    if !r.stalled.is_empty() {
        let _ = writeln!(o, "\n## Stalled pods\n\n| pod | workload | longest since | hours | GPUs | stretches | hours in all |\n|---|---|---|---:|---:|---:|---:|");
        for s in &r.stalled {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {:.1} | {} | {} | {:.1} |",
                md_code(&format!("{}/{}", s.team, s.pod)),
                md(s.workload.as_deref().unwrap_or("-")),
                s.since,
                s.seconds as f64 / 3600.0,
                crate::core::num(s.allocated_gpus),
                s.stretches,
                s.all_seconds as f64 / 3600.0
            );
        }
    }
}

/// Pods that waited for GPUs: unscheduled, starting, image pulls failing.
fn md_pending(o: &mut String, r: &Review) {
    if !r.pending.is_empty() {
        let _ = writeln!(
            o,
            "\n## Unmet demand (Pending)\n\n| pod | workload | GPU-h requested | unscheduled | starting | of it, image pull failing |\n|---|---|---:|---:|---:|---:|"
        );
        for p in &r.pending {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} |",
                md_code(&format!("{}/{}", p.team, p.pod)),
                md(p.workload.as_deref().unwrap_or("-")),
                hours(p.gpu_seconds),
                p.unscheduled_gpu_seconds.map_or("-".to_owned(), hours),
                p.unscheduled_gpu_seconds
                    .map_or("-".to_owned(), |u| hours((p.gpu_seconds - u).max(0.0))),
                hours(p.image_pull_gpu_seconds)
            );
        }
    }
}

/// Where the data has holes: exporter gaps, pods without usage, usage without pods.
fn md_gaps(o: &mut String, r: &Review) {
    let c = &r.coverage;
    if !c.pods_without_usage.is_empty()
        || !c.usage_without_pod.is_empty()
        || !c.dcgm_gaps.is_empty()
    {
        let _ = writeln!(o, "\n## Gaps in the data\n");
        for g in &c.dcgm_gaps {
            let _ = writeln!(
                o,
                "- {}: dcgm-exporter reported nothing from {} to {} ({:.1} h): usage there is no data, neither used nor idle",
                md_code(&g.node),
                md(&g.from),
                md(&g.to),
                g.seconds as f64 / 3600.0
            );
        }
        for p in &c.pods_without_usage {
            let _ = writeln!(
                o,
                "- {} held {} GPU-h with no usage series: no data, not 0%",
                md_code(&format!("{}/{}", p.namespace, p.pod)),
                hours(p.allocated_gpu_seconds)
            );
        }
        for p in &c.usage_without_pod {
            let _ = writeln!(
                o,
                "- node {} GPU {}: {} GPU-h of usage no GPU-requesting pod held (dcgm-exporter named {})",
                md_code(p.node.as_deref().unwrap_or("?")),
                md_code(p.gpu.as_deref().unwrap_or("?")),
                hours(p.used_gpu_seconds),
                md_code(&format!("{}/{}", p.namespace, p.pod))
            );
        }
    }
}

/// Reservations the measured floors would pay for.
fn md_reservation_advice(o: &mut String, r: &Review) {
    if !r.reservation_advice.is_empty() {
        let _ = writeln!(o, "\n## Reservations from measured floors\n\n| pool | SKU | region | floor GPUs (p10) | p50 | nodes | on-demand / month | best reservation | saving / month | break-even |\n|---|---|---|---:|---:|---:|---:|---|---:|---:|");
        for a in &r.reservation_advice {
            let best = a
                .options
                .iter()
                .max_by(|x, y| x.saving_usd_per_month.total_cmp(&y.saving_usd_per_month));
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                md_code(&a.pool),
                md(&a.sku),
                md(&a.region),
                a.floor_gpus,
                a.p50_gpus,
                a.nodes,
                usd(a.on_demand_usd_per_month),
                best.map_or_else(
                    || a.note.as_ref().map(ToString::to_string).unwrap_or_default(),
                    |b| b.term.to_owned()
                ),
                best.map_or("-".to_owned(), |b| usd(b.saving_usd_per_month)),
                best.map_or("-".to_owned(), |b| format!(
                    "{:.0}%",
                    b.break_even_utilization * 100.0
                )),
            );
        }
    }
}

/// Pool floors (minimum nodes) nobody requested.
fn md_idle_pools(o: &mut String, r: &Review) {
    if !r.idle_pools.is_empty() {
        let _ = writeln!(
            o,
            "\n## Pool floors nobody requested\n\n| pool | floor GPU-h unrequested | cost |\n|---|---:|---:|"
        );
        for p in &r.idle_pools {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                md_code(&p.pool),
                hours(p.idle_gpu_seconds),
                usd(p.idle_cost_usd)
            );
        }
    }
}

/// Nodes whose GPUs went unrequested.
fn md_idle_nodes(o: &mut String, r: &Review) {
    if !r.idle_nodes.is_empty() {
        let _ = writeln!(
            o,
            "\n## Nodes with unrequested GPUs\n\n| node | pool | empty (h) | unrequested GPU-h | cost |\n|---|---|---:|---:|---:|"
        );
        for n in &r.idle_nodes {
            let _ = writeln!(
                o,
                "| {} | {} | {:.1} | {} | {} |",
                md_code(&n.node),
                match (&n.pool, &n.pool_label) {
                    (Some(p), _) => md_code(p),
                    (None, Some(l)) => format!("{} (not in the plan)", md_code(l)),
                    (None, None) => "unlabelled".to_owned(),
                },
                n.empty_seconds as f64 / 3600.0,
                unrequested(n.idle_gpu_seconds, n.stranded_gpu_seconds),
                n.idle_cost_usd.map_or("price unknown".to_owned(), usd)
            );
        }
    }
}

/// The reservations render's purchase list bought, against what their pools held.
fn md_purchase_fill(o: &mut String, r: &Review) {
    if !r.purchase_fill.is_empty() {
        let _ = writeln!(
            o,
            "\n## Reservations bought (purchases.json)\n\n| pool | region | SKU | nodes | term | reserved GPU-h | held | fill | break-even | unfilled cost |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
        );
        for f in &r.purchase_fill {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} (seen {}) | {} y | {} | {} | {} | {} | {} |",
                md_code(&f.pool),
                md(&f.region),
                md(&f.sku),
                f.count,
                f.nodes_seen,
                f.term_years,
                hours(f.reserved_gpu_seconds),
                hours(f.held_gpu_seconds),
                pct(Some(f.fill)),
                pct(f.break_even_fill),
                usd(f.unfilled_usd)
            );
        }
        if r.purchase_fill
            .iter()
            .any(|f| f.break_even_fill.is_some_and(|b| f.fill < b))
        {
            let _ = writeln!(
                o,
                "\nA reservation filled below its break-even cost more than the same GPU-hours on demand: move work onto it, or buy fewer at renewal."
            );
        }
    }
}

/// Declared reservations against the workloads' use.
fn md_reservation_fill(o: &mut String, r: &Review) {
    if !r.reservations.is_empty() {
        let _ = writeln!(o, "\n## Reservation fill\n\n| pool | reserved GPU-h | used by workloads | fill |\n|---|---:|---:|---:|");
        for f in &r.reservations {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                md_code(&f.pool),
                hours(f.reserved_gpu_seconds),
                hours(f.allocated_gpu_seconds),
                pct(Some(f.fill))
            );
        }
    }
}

/// Usage no workload of the plan claims.
fn md_unmatched(o: &mut String, r: &Review) {
    if !r.unmatched.is_empty() {
        let _ = writeln!(o, "\n## Usage no workload of the plan claims\n\n| pod | GPU-h allocated | GPU-h used |\n|---|---:|---:|");
        for m in &r.unmatched {
            let _ = writeln!(
                o,
                "| {} | {} | {} |",
                md_code(&format!("{}/{}", m.namespace, m.pod)),
                hours(m.allocated_gpu_seconds),
                hours(m.used_gpu_seconds)
            );
        }
    }
}
