//! The words of what reading the data noticed (`review::noticed` holds them as figures;
//! `review` prints them as warnings).

use std::fmt;

use crate::review::noticed::Noticed;
use crate::review::telemetry::format_time;

impl fmt::Display for Noticed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Noticed::Duplicates { file, samples } => write!(
                f,
                "{file}: {samples} duplicate sample(s) of the same series and time counted once"
            ),
            Noticed::Conflicts { file, samples } => write!(
                f,
                "{file}: {samples} sample(s) contradict an earlier one of the same series and time; the first was kept"
            ),
            Noticed::NoPhase => f.write_str("no kube_pod_status_phase series: every pod with GPU requests is counted as running (finished and Pending pods included); export it with kube-state-metrics"),
            Noticed::Unlabelled(n) => write!(
                f,
                "{n} GPU(s) report usage with no pod: no pod held them, or dcgm-exporter runs without --kubernetes"
            ),
            Noticed::ReplicasFromCards(n) => write!(
                f,
                "{n} node(s) carry no nvidia.com/gpu.count or replicas label: their time-slicing replicas per card are allocatable nvidia.com/gpu over the distinct cards (UUIDs) dcgm-exporter reports for them"
            ),
            Noticed::Fallbacks(n) => write!(
                f,
                "{n} GPU(s) have no usable DCGM_FI_PROF_GR_ENGINE_ACTIVE (absent, or flat at 0 while utilisation moves): read from DCGM_FI_DEV_GPU_UTIL / 100 instead"
            ),
            Noticed::UnknownMig(profiles) => write!(
                f,
                "MIG profile(s) not in the catalog skipped: {}",
                profiles.join(", ")
            ),
            Noticed::PendingShared(n) => write!(
                f,
                "{n} Pending pod(s) with no node yet counted at their workload's share of a GPU (a time-slicing replica's or a MIG single-strategy profile's, from its running pods, else its declared pool)"
            ),
            Noticed::DcgmGaps { hours, gaps } => write!(
                f,
                "dcgm-exporter reported nothing for {hours:.1} node-hour(s) in {gaps} gap(s) (coverage lists them): pods there have no usage data for those hours, which count neither as used nor as idle"
            ),
            Noticed::Coverage {
                covered,
                window,
                first,
                last,
            } => {
                let covered = *covered as f64 / 3600.0;
                write!(
                    f,
                    "the data covers {covered:.1} h of the {:.1} h window ({} to {}): costs, idle floors and advice are over the {covered:.1} h covered, never over hours without data",
                    *window as f64 / 3600.0,
                    format_time(*first),
                    format_time(*last),
                )
            }
            Noticed::TailNotRead { seconds, step, to } => write!(
                f,
                "the last {seconds} s of the window asked for are less than one {step} s step and were not read: the review ends at {}; give `--to` a whole number of steps after `--from`, or a `--step` that divides the window",
                crate::review::telemetry::format_time(*to)
            ),
            Noticed::InCluster { cluster, noticed } => write!(f, "cluster `{cluster}`: {noticed}"),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The words the review printed before what it noticed became figures (the old format
    //! strings with the figures put in), for the notes the integration tests do not reach.
    use super::*;

    #[test]
    fn what_reading_noticed_reads_as_before() {
        let said = |n: Noticed| n.to_string();
        assert_eq!(
            said(Noticed::InCluster {
                cluster: "east".into(),
                noticed: Box::new(Noticed::UnknownMig(vec!["9g.1gb".into(), "1g.5gb".into()])),
            }),
            "cluster `east`: MIG profile(s) not in the catalog skipped: 9g.1gb, 1g.5gb"
        );
        assert_eq!(
            said(Noticed::Coverage {
                covered: 36 * 3600,
                window: 48 * 3600,
                first: 86_400,
                last: 86_400 + 36 * 3600,
            }),
            "the data covers 36.0 h of the 48.0 h window (1970-01-02T00:00:00Z to 1970-01-03T12:00:00Z): costs, idle floors and advice are over the 36.0 h covered, never over hours without data"
        );
        assert!(said(Noticed::PendingShared(3)).starts_with("3 Pending pod(s) with no node yet"));
        assert_eq!(
            said(Noticed::DcgmGaps { hours: 12.0, gaps: 2 }),
            "dcgm-exporter reported nothing for 12.0 node-hour(s) in 2 gap(s) (coverage lists them): pods there have no usage data for those hours, which count neither as used nor as idle"
        );
    }
}
