//! `gpuplan explain review`: what the review measures and how it forecasts next quarter, in
//! prose, with today's figures.

/// `gpuplan explain review`: what the review measures and how next quarter is forecast,
/// with the figures from the catalog.
pub(crate) fn method_text(c: &crate::catalog::Catalog) -> String {
    let a = &c.assumptions;
    format!(
        "gpuplan review: how it measures, and how it forecasts next quarter

Measured (per team, workload, GPU model and pool):
  - Allocated: GPU-seconds requested by running pods (kube-state-metrics
    kube_pod_container_resource_requests), at the share of a physical GPU each unit is (a
    MIG profile's compute slices, a time-sliced replica's share).
  - Used: DCGM_FI_PROF_GR_ENGINE_ACTIVE summed over the pod's GPUs (DCGM_FI_DEV_GPU_UTIL / 100
    where the profiling metric is absent). Efficiency is used over allocated for the time
    usage was observed; a span without DCGM data is \"no data\", never idle.
  - Each sample stands for the gap to its neighbours in its own series (the scrape interval
    may differ per target and change in time); costs are over the covered hours only.

Next quarter (the report's \"Next quarter\" section, and `--write-plan NEXT.toml`):
  - Minimum data: {min_days} covered days, else nothing is proposed; a trend needs
    {min_trend} covered days.
  - Per workload, from hourly means over the covered window (hours covered whole, not at
    either end of the data, whose samples stand for time outside them): replicas held (pods,
    a gang counting once) and GPUs held, as p10, p50, p95 and max over the hours it held GPUs.
  - Daily peaks (the highest hourly mean of each day with at least half its hours), from the
    first day the workload ran (the days before a launch are not a trend), are fitted by
    least squares: slope per day and R-squared. The slope is the forecast only when it
    is significant at 95% (|slope / its standard error| >= Student's t with n - 2 degrees of
    freedom); otherwise the level is flat (the mean of the daily peaks).
  - Horizon: the end of the calendar quarter after the one the data ends in (a window that
    ends on 1 January reviewed the fourth quarter and plans the first). The projection
    is the line (or the level) there, with a 95% prediction band
    (t * s * sqrt(1 + 1/n + (x - mean x)^2 / Sxx)). A declining line is not extrapolated (it
    would reach zero for a service that runs): the projection and band are the line today.
  - replicas.max = ceil(peak x (1 + headroom)), headroom {headroom:.0}% (`--headroom`), where
    the peak is the higher of the line today and at the horizon (a trend), or the highest daily
    peak seen (flat). replicas.min = the p10 of replicas held, never above the lowest hour of
    its last day running (at least 1 for a user-facing workload or one that may not scale to
    zero). A fixed count stays fixed: at the peak seen when flat, at the projected peak plus
    headroom when it grows; an autoscaled range stays a range.
  - Consolidation: a workload busy below its planned `utilization` (else {target:.0}%) with
    no significant growth gets fewer replicas, each busy at that share: the p95 of GPUs busy
    over (GPUs per replica x the share), plus headroom, never above what it held; min from the
    p10 the same way. Gangs are left to their model.
  - An idle workload (busy below {low:.0}% of held time, GP025's threshold) is never grown.
    Where memory and the GPU allow, it gets the smaller slice the review's right-size advice
    names (a MIG profile, or time-slicing on a GPU without MIG) at the replicas it held; where
    `check` would refuse that slice, it is consolidated instead. A workload whose pods waited
    in CrashLoopBackOff for 10% or more of their held time is idle because it crashes: no
    right-size and no consolidation.
  - An inference workload whose pods export vLLM's serving metrics is sized by them, not by
    GPU activity (a busy GPU may serve without a queue, an idle-looking one keep requests
    waiting): per hour its replicas, requests in flight (running + waiting), KV-cache use and
    time-to-first-token p95. The hours that met its `ttft_p95_seconds` (without one: no queue
    and the KV cache under {kv_full:.0}%) give the requests in flight one replica carries; each
    hour needs its load over that. replicas.min = the p10 of those, replicas.max their daily
    peaks projected as above, plus headroom. Where no hour met the objective, it is never
    sized down.
  - Where its servers export the requests that finished (`vllm:request_success_total`, or
    else the TTFT histogram's count), the replicas come from what arrived, by Erlang C: each
    replica is an M/M/c queue of c batch slots (what it typically ran while requests waited,
    the median: a KV-bound batch's most is a lucky mix of short prompts; else
    the plan's max_num_seqs or what the KV cache holds, else vLLM's default 256), a request
    holds one for its service time S (requests running over requests served, Little's law),
    and λ requests a second over n replicas offer a = λ·S/n Erlangs each. Erlang C gives the
    chance a request waits, C(c, a), and the wait's tail C(c, a)·e^(-(c-a)·t/S); the objective
    holds when waits longer than it less the first token's own time (TTFT p95 in hours
    without a queue) are at most 5% (without an objective: a mean queue under {queue_free}
    a replica). Each hour needs the fewest n that hold. λ is read in the hour's busiest block
    of {block_minutes} minutes (requests finished plus the growth of those in flight); an hour
    that missed its objective is read in its busiest single scrape window instead (a burst
    inside the block is what the replicas did not absorb), and never needs fewer replicas
    than ran in it. Arrivals count abandoned requests only where the servers export a
    `finished_reason=\"abort\"` series (vLLM V1); a vLLM V0 server counts only requests that
    were scheduled, so there the arrivals are a lower bound and are said to be. Pods that held
    the workload's GPUs without exporting its series are counted, each carrying what the
    exporting ones did on average. TTFT quantiles are read as PromQL's histogram_quantile
    reads them (every bucket bound, `+Inf` the highest finite bound, none without `+Inf`).
  - hours_per_month: the share of windows with samples in which it held GPUs, times the plan's
    month, written where it differs from the plan by more than 5% (and 10 h).
  - Declared pools follow their workloads: a pool whose workloads at their new max
    (x GPUs per replica x gang) no longer fit is raised; one whose workloads were all measured
    and need fewer nodes is lowered, unless its capacity is a commitment (reserved, capacity
    reservation or block). A workload split over several pools leaves them as written.
  - Workloads that held no GPU in the window are left as written and listed.
  - NEXT keeps every other key, comment and the order of the plan (toml_edit); each changed
    line carries the figures it came from. It is held to `check`: no error the plan did not
    have (a right-size or a pool raise that would add one is not written, and the warning
    says which rule). `gpuplan diff PLAN NEXT.toml` prices the change.
  - An autoscaler at its replicas.max hides demand above it: the figures say so where the p95
    reached the max.

Figures: providers/assumptions.toml [review] (as of {as_of}).
",
        min_days = a.review_min_days,
        min_trend = a.review_min_trend_days,
        headroom = a.review_headroom * 100.0,
        low = a.low_utilization * 100.0,
        target = a.review_consolidation_target * 100.0,
        kv_full = crate::review::serving::KV_FULL * 100.0,
        queue_free = crate::review::serving::QUEUE_FREE,
        block_minutes = crate::review::serving::BLOCK / 60,
        as_of = c
            .sources
            .iter()
            .find(|s| s.file.contains("assumptions"))
            .map_or("-".to_owned(), |s| s.as_of.to_string()),
    )
}
