//! The words of the review's advice: what it says and the change it proposes
//! (`review::says` holds them as figures; the JSON's `message` and `change` are these).

use std::fmt;

use crate::core::{num, usd};
use crate::review::says::{AdviceChange, AdviceSays, NotReserved, Slice, Wait};

impl fmt::Display for AdviceSays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdviceSays::RightSize {
                workload,
                busy,
                slice,
                fraction,
                need,
            } => write!(
                f,
                "`{workload}` kept what it held busy {:.0}% of the time; {slice} ({fraction} of a GPU{}) would have held the same work",
                busy * 100.0,
                need.map(|n| format!(", {n:.1} GiB needed"))
                    .unwrap_or_else(|| ", memory need unknown: declare gpu_memory_gib".into())
            ),
            AdviceSays::Pending {
                total,
                unscheduled,
                unknown,
                pulling,
            } => pending(f, *total, *unscheduled, *unknown, *pulling),
            AdviceSays::EmptyNode {
                node,
                label,
                days,
                longest_seconds,
            } => write!(
                f,
                "node `{node}`{} sat empty for {days:.1} day(s) in stretches of an hour or more (the longest {:.1} h) with no GPU requested",
                label.as_deref().map(|l| format!(" (pool `{l}`)")).unwrap_or_default(),
                *longest_seconds as f64 / 3600.0
            ),
            AdviceSays::CrashLoop { workload, share } => write!(
                f,
                "`{workload}`'s pods waited in CrashLoopBackOff {:.0}% of the time they held GPUs: the GPUs sat idle while the container restarted",
                share * 100.0
            ),
            AdviceSays::Stalled {
                team,
                pod,
                gpus,
                seconds,
                since,
                stretches,
                all_seconds,
            } => {
                write!(
                    f,
                    "pod `{team}/{pod}` held {gpus} GPU(s) with no activity for {:.1} h from {since}",
                    *seconds as f64 / 3600.0
                )?;
                if *stretches > 1 {
                    write!(
                        f,
                        ", the longest of {stretches} such stretches, {:.1} h in all",
                        *all_seconds as f64 / 3600.0
                    )?;
                }
                Ok(())
            }
            AdviceSays::IdleFloor {
                pool,
                nodes,
                seconds,
            } => write!(
                f,
                "pool `{pool}` kept {nodes} node(s) of its floor idle on average over the {:.1} h the data covers",
                *seconds as f64 / 3600.0
            ),
            AdviceSays::Reserve {
                pool,
                floor_gpus,
                nodes,
                sku,
                term,
                saving,
                break_even,
            } => write!(
                f,
                "pool `{pool}` held at least {floor_gpus} GPU(s) 90% of the time: {nodes} node(s) of {sku} on a {term} reservation save {} a month (break-even at {:.0}% of hours held)",
                usd(*saving),
                break_even * 100.0
            ),
        }
    }
}

/// GPU-hours requested while Pending, split by what kube-state-metrics told of each pod.
fn pending(
    f: &mut fmt::Formatter<'_>,
    total: f64,
    unscheduled: f64,
    unknown: f64,
    pulling: Option<f64>,
) -> fmt::Result {
    if unknown >= total {
        return write!(
            f,
            "{:.1} GPU-hours were requested by pods while Pending (unscheduled, or starting: pulling images, waiting for a node; kube_pod_status_scheduled, not exported, would tell them apart)",
            total / 3600.0
        );
    }
    write!(
        f,
        "{:.1} GPU-hours were requested by pods while Pending: {:.1} unscheduled (no node would take them), {:.1} scheduled and starting (image pulls, init containers){}{}",
        total / 3600.0,
        unscheduled / 3600.0,
        (total - unscheduled - unknown).max(0.0) / 3600.0,
        pulling
            .map(|p| format!(
                " ({:.1} of it failing to pull images: ErrImagePull, ImagePullBackOff)",
                p / 3600.0
            ))
            .unwrap_or_default(),
        if unknown > 0.0 {
            format!(
                ", {:.1} not told apart (no kube_pod_status_scheduled)",
                unknown / 3600.0
            )
        } else {
            String::new()
        }
    )
}

/// A slice as the advice, the forecast table and the next plan's comments name it.
impl fmt::Display for Slice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slice::Mig { profile, .. } => write!(f, "a {profile} MIG instance"),
            Slice::TimeSliced { replicas, gpu } => {
                write!(f, "a {replicas}-way time-sliced {gpu} ({gpu} has no MIG)")
            }
        }
    }
}

impl fmt::Display for AdviceChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdviceChange::RightSize {
                workload,
                fraction,
                slice: Slice::Mig { profile, gpu },
            } => write!(
                f,
                "[[workload]] name = \"{workload}\": gpu_fraction = {fraction}, sharing = \"mig\" ({profile} on {gpu})"
            ),
            AdviceChange::RightSize {
                workload,
                fraction,
                slice: Slice::TimeSliced { replicas, gpu },
            } => write!(
                f,
                "[[workload]] name = \"{workload}\": gpu_fraction = {fraction}, sharing = \"time-slicing\" ({replicas} replicas per {gpu}; needs a recorded [[decision]])"
            ),
            AdviceChange::Pending { wait, pulls_failed } => {
                f.write_str(&waited(wait))?;
                if *pulls_failed {
                    f.write_str("; fix the image pulls first (the image name, the registry's credentials or reach)")?;
                }
                Ok(())
            }
            AdviceChange::LowerMin { pool, min } => write!(
                f,
                "[[pool]] name = \"{pool}\": lower nodes.min (now {min}) or let the autoscaler remove empty nodes"
            ),
            AdviceChange::ScaleDown => f.write_str(
                "check the cluster autoscaler's scale-down (scale-down-unneeded-time, pods that block eviction)",
            ),
            AdviceChange::FixCrash => f.write_str(
                "fix the crash (kubectl describe / logs of the pod) before sizing it: no right-size is advised from these figures",
            ),
            AdviceChange::Reap => f.write_str(
                "stop pods idle longer than the threshold (an idle-job reaper), or set scale_to_zero = true",
            ),
            AdviceChange::NodesMin { pool, min } => {
                write!(f, "[[pool]] name = \"{pool}\": nodes.min = {min}")
            }
            AdviceChange::SplitReserved { pool, nodes, term } => write!(
                f,
                "split [[pool]] name = \"{pool}\": {nodes} node(s) with capacity = \"{term}\", the rest on-demand"
            ),
        }
    }
}

impl fmt::Display for NotReserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotReserved::TooFewDays { days, needed } => write!(
                f,
                "not advised: the window covers {} day(s) of data; a reservation commits for a year or more, so at least {needed} covered days are needed",
                num(*days)
            ),
            NotReserved::TermNone => f.write_str("not advised: the plan's reservation_term = \"none\""),
            NotReserved::NoPrice {
                sku,
                region,
                provider,
            } => {
                write!(f, "no reserved price for {sku} in {region} in the catalog")?;
                let cloud = crate::cloud::profile(*provider);
                if cloud.reservations_live_only() {
                    write!(
                        f,
                        ": {}",
                        crate::report::why::reservations_unknown(cloud.reservation, None)
                    )?;
                }
                Ok(())
            }
        }
    }
}

crate::core::serialize_as_text!(AdviceSays, AdviceChange, NotReserved);

/// What to do about demand that waited.
fn waited(w: &Wait) -> String {
    let named = |pools: &[(String, i64)]| {
        pools
            .iter()
            .map(|(p, max)| format!("`{p}` ({max} nodes)"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match w {
        Wait::StartUp => "every Pending pod had a node: the wait was start-up, not capacity; pre-pull large images (a DaemonSet or the node image) and check init containers".into(),
        Wait::Booting(pools) => format!(
            "{} grew while the pods waited and never reached nodes.max then: they waited for a node to start, which a higher nodes.max would not shorten; keep a warm node (`nodes.min`) or pre-pull large images if the start-up matters",
            named(pools)
        ),
        Wait::NotFull(pools) => format!(
            "{} reached nodes.max but always had a GPU free then, so capacity was not the wait: look at what kept the pods off the free GPUs (a request larger than one node's free GPUs, the MIG profile or time-slicing share asked for, taints and selectors) before raising it",
            named(pools)
        ),
        Wait::NoPoolAtMax => "no pool reached its nodes.max while they waited: look at scheduling and start-up (quota, taints and selectors, image pulls) before adding capacity, or queue them (Kueue) so the wait is visible".into(),
        Wait::Full(pools) => format!(
            "{} reached nodes.max: raise it or the quota for those workloads, or queue them (Kueue) so the wait is visible",
            named(pools)
        ),
    }
}

#[cfg(test)]
mod tests {
    //! Each advice in the words the review wrote before its advice became figures (the old
    //! format strings with the figures put in).
    use super::*;

    #[test]
    fn what_advice_says_reads_as_before() {
        let says = |a: AdviceSays| a.to_string();
        assert_eq!(
            says(AdviceSays::RightSize {
                workload: "w".into(),
                busy: 0.1,
                slice: Slice::Mig {
                    profile: "2g.20gb".into(),
                    gpu: "A100 80GB".into(),
                },
                fraction: 0.2857,
                need: Some(12.0),
            }),
            "`w` kept what it held busy 10% of the time; a 2g.20gb MIG instance (0.2857 of a GPU, 12.0 GiB needed) would have held the same work"
        );
        assert!(says(AdviceSays::RightSize {
            workload: "w".into(),
            busy: 0.1,
            slice: Slice::TimeSliced {
                replicas: 2,
                gpu: "L4".into(),
            },
            fraction: 0.5,
            need: None,
        })
        .ends_with("; a 2-way time-sliced L4 (L4 has no MIG) (0.5 of a GPU, memory need unknown: declare gpu_memory_gib) would have held the same work"));
        assert_eq!(
            says(AdviceSays::Pending {
                total: 7200.0,
                unscheduled: 3600.0,
                unknown: 720.0,
                pulling: Some(360.0),
            }),
            "2.0 GPU-hours were requested by pods while Pending: 1.0 unscheduled (no node would take them), 0.8 scheduled and starting (image pulls, init containers) (0.1 of it failing to pull images: ErrImagePull, ImagePullBackOff), 0.2 not told apart (no kube_pod_status_scheduled)"
        );
        assert_eq!(
            says(AdviceSays::Pending {
                total: 7200.0,
                unscheduled: 0.0,
                unknown: 7200.0,
                pulling: None,
            }),
            "2.0 GPU-hours were requested by pods while Pending (unscheduled, or starting: pulling images, waiting for a node; kube_pod_status_scheduled, not exported, would tell them apart)"
        );
        assert_eq!(
            says(AdviceSays::EmptyNode {
                node: "n1".into(),
                label: Some("batch".into()),
                days: 2.0,
                longest_seconds: 48 * 3600,
            }),
            "node `n1` (pool `batch`) sat empty for 2.0 day(s) in stretches of an hour or more (the longest 48.0 h) with no GPU requested"
        );
        assert_eq!(
            says(AdviceSays::CrashLoop {
                workload: "w".into(),
                share: 0.5,
            }),
            "`w`'s pods waited in CrashLoopBackOff 50% of the time they held GPUs: the GPUs sat idle while the container restarted"
        );
        assert_eq!(
            says(AdviceSays::Stalled {
                team: "t".into(),
                pod: "p".into(),
                gpus: 2.0,
                seconds: 5400,
                since: "2026-01-01T00:00:00Z".into(),
                stretches: 1,
                all_seconds: 5400,
            }),
            "pod `t/p` held 2 GPU(s) with no activity for 1.5 h from 2026-01-01T00:00:00Z"
        );
        assert_eq!(
            says(AdviceSays::Stalled {
                team: "t".into(),
                pod: "p".into(),
                gpus: 1.0,
                seconds: 42_840,
                since: "2026-01-01T20:00:00Z".into(),
                stretches: 8,
                all_seconds: 345_600,
            }),
            "pod `t/p` held 1 GPU(s) with no activity for 11.9 h from 2026-01-01T20:00:00Z, the longest of 8 such stretches, 96.0 h in all"
        );
        assert_eq!(
            says(AdviceSays::IdleFloor {
                pool: "p".into(),
                nodes: 2.0,
                seconds: 7200,
            }),
            "pool `p` kept 2 node(s) of its floor idle on average over the 2.0 h the data covers"
        );
        assert_eq!(
            says(AdviceSays::Reserve {
                pool: "p".into(),
                floor_gpus: 8.0,
                nodes: 1,
                sku: "p5.48xlarge".into(),
                term: "reserved-1y",
                saving: 1234.5,
                break_even: 0.79,
            }),
            "pool `p` held at least 8 GPU(s) 90% of the time: 1 node(s) of p5.48xlarge on a reserved-1y reservation save $1,234.50 a month (break-even at 79% of hours held)"
        );
    }

    #[test]
    fn the_changes_advice_proposes_read_as_before() {
        let change = |c: AdviceChange| c.to_string();
        assert_eq!(
            change(AdviceChange::RightSize {
                workload: "w".into(),
                fraction: 0.2857,
                slice: Slice::Mig {
                    profile: "2g.20gb".into(),
                    gpu: "A100-80GB".into(),
                },
            }),
            "[[workload]] name = \"w\": gpu_fraction = 0.2857, sharing = \"mig\" (2g.20gb on A100-80GB)"
        );
        assert_eq!(
            change(AdviceChange::RightSize {
                workload: "w".into(),
                fraction: 0.5,
                slice: Slice::TimeSliced {
                    replicas: 2,
                    gpu: "L4".into(),
                },
            }),
            "[[workload]] name = \"w\": gpu_fraction = 0.5, sharing = \"time-slicing\" (2 replicas per L4; needs a recorded [[decision]])"
        );
        assert_eq!(
            change(AdviceChange::Pending {
                wait: Wait::Full(vec![("batch".into(), 1)]),
                pulls_failed: true,
            }),
            "`batch` (1 nodes) reached nodes.max: raise it or the quota for those workloads, or queue them (Kueue) so the wait is visible; fix the image pulls first (the image name, the registry's credentials or reach)"
        );
        assert!(change(AdviceChange::Pending {
            wait: Wait::NotFull(vec![("a".into(), 2), ("b".into(), 3)]),
            pulls_failed: false,
        })
        .starts_with(
            "`a` (2 nodes), `b` (3 nodes) reached nodes.max but always had a GPU free then"
        ));
        assert!(change(AdviceChange::Pending {
            wait: Wait::StartUp,
            pulls_failed: false,
        })
        .starts_with("every Pending pod had a node: the wait was start-up"));
        assert!(change(AdviceChange::Pending {
            wait: Wait::NoPoolAtMax,
            pulls_failed: false,
        })
        .starts_with("no pool reached its nodes.max while they waited"));
        assert_eq!(
            change(AdviceChange::LowerMin {
                pool: "p".into(),
                min: 2,
            }),
            "[[pool]] name = \"p\": lower nodes.min (now 2) or let the autoscaler remove empty nodes"
        );
        assert_eq!(
            change(AdviceChange::NodesMin {
                pool: "p".into(),
                min: 0,
            }),
            "[[pool]] name = \"p\": nodes.min = 0"
        );
        assert_eq!(
            change(AdviceChange::SplitReserved {
                pool: "p".into(),
                nodes: 1,
                term: "reserved-3y",
            }),
            "split [[pool]] name = \"p\": 1 node(s) with capacity = \"reserved-3y\", the rest on-demand"
        );
        assert!(change(AdviceChange::ScaleDown)
            .starts_with("check the cluster autoscaler's scale-down"));
        assert!(change(AdviceChange::FixCrash).starts_with("fix the crash"));
        assert!(change(AdviceChange::Reap).starts_with("stop pods idle longer than the threshold"));
    }
}

#[cfg(test)]
mod not_reserved_tests {
    use super::*;

    #[test]
    fn why_no_reservation_is_advised_reads_as_before() {
        assert_eq!(
            NotReserved::TooFewDays {
                days: 12.5,
                needed: 30
            }
            .to_string(),
            "not advised: the window covers 12.5 day(s) of data; a reservation commits for a year or more, so at least 30 covered days are needed"
        );
        assert_eq!(
            NotReserved::TermNone.to_string(),
            "not advised: the plan's reservation_term = \"none\""
        );
        let no_price = |provider| {
            NotReserved::NoPrice {
                sku: "s".into(),
                region: "r".into(),
                provider,
            }
            .to_string()
        };
        assert_eq!(
            no_price(crate::core::Provider::Azure),
            "no reserved price for s in r in the catalog: Azure reservation prices are unknown offline (a live refresh fetches them)"
        );
        assert_eq!(
            no_price(crate::core::Provider::Aws),
            "no reserved price for s in r in the catalog"
        );
    }
}
