//! What reading the data noticed that the review's figures rest on, as figures and names
//! (`report::review::noticed` words them; `review` prints them as warnings).

/// One thing noticed.
#[derive(Debug, Clone, PartialEq)]
pub enum Noticed {
    /// A file held `samples` duplicate samples of one series and time, counted once.
    Duplicates { file: String, samples: u64 },
    /// A file held `samples` samples contradicting an earlier one; the first was kept.
    Conflicts { file: String, samples: u64 },
    /// Pods request GPUs and no `kube_pod_status_phase` series says which ran.
    NoPhase,
    /// GPUs report usage with no pod.
    Unlabelled(usize),
    /// Nodes without a `nvidia.com/gpu.count` or replicas label: replicas per card read from
    /// the cards dcgm-exporter reports.
    ReplicasFromCards(usize),
    /// GPUs read from `DCGM_FI_DEV_GPU_UTIL` for want of a usable engine-active series.
    Fallbacks(usize),
    /// MIG profiles the catalog does not list, skipped.
    UnknownMig(Vec<String>),
    /// Pending pods with no node, counted at their workload's share of a GPU.
    PendingShared(usize),
    /// dcgm-exporter reported nothing for `hours` node-hours in `gaps` gaps.
    DcgmGaps { hours: f64, gaps: usize },
    /// The data covers `covered` seconds of a `window` of seconds, from `first` to `last`
    /// (seconds since 1970).
    Coverage {
        covered: i64,
        window: i64,
        first: i64,
        last: i64,
    },
    /// The last `seconds` of the window asked for, less than one `step`, were not read: the
    /// review ends at `to` (seconds since 1970).
    TailNotRead { seconds: i64, step: i64, to: i64 },
    /// Something noticed in one cluster of a fleet.
    InCluster {
        cluster: String,
        noticed: Box<Noticed>,
    },
}

impl Noticed {
    /// What [`crate::review::query::Grid::within`] left unread of the window asked for:
    /// `None` where it read it all.
    pub(crate) fn tail_not_read(
        grid: &crate::review::query::Grid,
        seconds: i64,
    ) -> Option<Noticed> {
        (seconds > 0).then(|| Noticed::TailNotRead {
            seconds,
            step: grid.step,
            to: grid.to(),
        })
    }
}
