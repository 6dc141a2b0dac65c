//! What kube-state-metrics says of each pod besides its requests: its phases and waiting
//! reasons per window, its native sidecars, the labels that name its workload and the
//! controller that made it.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::col;
use crate::review::query::{Answers, Row, Q};

/// Each pod's phases and waiting reasons per window, by (namespace, pod).
pub(super) struct PodStates<'a> {
    pub(super) running: BTreeMap<(String, String), &'a Row>,
    pub(super) pending: BTreeMap<(String, String), &'a Row>,
    pub(super) crashloop: BTreeMap<(String, String), Row>,
    pub(super) image_pull: BTreeMap<(String, String), Row>,
    pub(super) scheduled_known: BTreeSet<(String, String)>,
    pub(super) unscheduled: BTreeMap<(String, String), &'a Row>,
    pub(super) sidecars: BTreeSet<(String, String, String)>,
}

pub(super) fn pod_states(a: &Answers) -> PodStates<'_> {
    let per_pod = |q: Q| -> BTreeMap<(String, String), &Row> {
        a.get(q)
            .map(|(g, r)| {
                (
                    (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone()),
                    r,
                )
            })
            .collect()
    };
    let running = per_pod(Q::Running);
    let pending = per_pod(Q::Pending);
    // Windows' samples of a pod's containers waiting for a reason, by (pod, reason).
    let waiting = |reasons: &[&str]| -> BTreeMap<(String, String), Row> {
        let mut out: BTreeMap<(String, String), Row> = BTreeMap::new();
        for (g, r) in a.get(Q::Waiting) {
            if !reasons.contains(&g[col(Q::Waiting, "reason")].as_str()) {
                continue;
            }
            let e = out
                .entry((
                    g[col(Q::Waiting, "namespace")].clone(),
                    g[col(Q::Waiting, "pod")].clone(),
                ))
                .or_default();
            for (k, v) in r {
                e.update(k, |x| x.unwrap_or_default().max(*v));
            }
        }
        out
    };
    let crashloop = waiting(&["CrashLoopBackOff"]);
    let image_pull = waiting(&["ErrImagePull", "ImagePullBackOff"]);
    let scheduled_known: BTreeSet<(String, String)> = a
        .get(Q::Scheduled)
        .map(|(g, _)| {
            (
                g[col(Q::Scheduled, "namespace")].clone(),
                g[col(Q::Scheduled, "pod")].clone(),
            )
        })
        .collect();
    let unscheduled: BTreeMap<(String, String), &Row> = a
        .get(Q::Scheduled)
        .filter(|(g, _)| g[col(Q::Scheduled, "condition")] == "false")
        .map(|(g, r)| {
            (
                (
                    g[col(Q::Scheduled, "namespace")].clone(),
                    g[col(Q::Scheduled, "pod")].clone(),
                ),
                r,
            )
        })
        .collect();
    let sidecars: BTreeSet<(String, String, String)> = a
        .get(Q::Sidecars)
        .filter(|(_, r)| r.values().any(|v| *v > 0.0))
        .map(|(g, _)| {
            (
                g[col(Q::Sidecars, "namespace")].clone(),
                g[col(Q::Sidecars, "pod")].clone(),
                g[col(Q::Sidecars, "container")].clone(),
            )
        })
        .collect();
    PodStates {
        running,
        pending,
        crashloop,
        image_pull,
        scheduled_known,
        unscheduled,
        sidecars,
    }
}

/// Pod labels that name a workload, and the controller that made each pod.
pub(super) type Named = (
    BTreeMap<(String, String), String>,
    BTreeMap<(String, String), String>,
);

/// A pod's workload labels: render's `gpuplan.io/workload` first, else
/// `app.kubernetes.io/name`; and its controllers.
pub(super) fn named_by(a: &Answers) -> Named {
    let label_of = |q: Q, label: &'static str| {
        a.get(q).map(move |(g, _)| {
            (
                (g[col(q, "namespace")].clone(), g[col(q, "pod")].clone()),
                g[col(q, label)].clone(),
            )
        })
    };
    let mut apps: BTreeMap<(String, String), String> =
        label_of(Q::PodLabels, "label_app_kubernetes_io_name").collect();
    apps.extend(label_of(Q::WorkloadLabels, "label_gpuplan_io_workload"));
    (apps, crate::review::owners::controllers(a))
}
