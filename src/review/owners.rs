//! Which workload a pod belongs to, and how that was told. A pod's team is its namespace;
//! within it, the workload is read from what a cluster exports, most certain first:
//!
//! 1. a label: render's `gpuplan.io/workload`, else `app.kubernetes.io/name` (only where
//!    kube-state-metrics exports pod labels, `--metric-labels-allowlist`);
//! 2. the controller that made it, which a stock kube-state-metrics exports
//!    (`kube_pod_info`'s `created_by_*`; a ReplicaSet's Deployment from
//!    `kube_replicaset_owner`, a Job's CronJob from `kube_job_owner`);
//! 3. its name prefix (`chat-api-7d9f-x` is `chat-api`'s);
//! 4. the only workload of its team that may run on the pod's GPU model.

use std::collections::BTreeMap;

use serde::Serialize;

use super::query::{Answers, Q};
use super::telemetry::PodSeries;
use crate::catalog::Catalog;
use crate::core::GpuHold;
use crate::plan::Plan;

/// How a pod was matched to its workload, most certain first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Matched {
    /// `gpuplan.io/workload` or `app.kubernetes.io/name` names it.
    Label,
    /// Its controller (Deployment, StatefulSet, Job, CronJob, …) has the workload's name.
    Controller,
    /// Its name starts with the workload's name.
    NamePrefix,
    /// No name told: it is the only workload of the pod's team that may run on its GPU model.
    OnlyWorkloadOnGpu,
}

/// Pods of a workload by how each was matched (a workload row's `matched_pods`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MatchCounts {
    pub label: u32,
    pub controller: u32,
    pub name_prefix: u32,
    pub only_workload_on_gpu: u32,
}

impl MatchCounts {
    pub(crate) fn add(&mut self, m: Matched) {
        let n = match m {
            Matched::Label => &mut self.label,
            Matched::Controller => &mut self.controller,
            Matched::NamePrefix => &mut self.name_prefix,
            Matched::OnlyWorkloadOnGpu => &mut self.only_workload_on_gpu,
        };
        *n += 1;
    }
}

/// The workload a pod belongs to.
pub(crate) fn owner<'p>(plan: &'p Plan, p: &PodSeries) -> Option<&'p str> {
    matched(plan, p).map(|(w, _)| w)
}

/// The workload a pod belongs to and how that was told.
pub(crate) fn matched<'p>(plan: &'p Plan, p: &PodSeries) -> Option<(&'p str, Matched)> {
    let team: Vec<&str> = plan
        .workloads()
        .iter()
        .filter(|w| w.team.get() == &p.namespace)
        .map(|w| w.name.get().as_str())
        .collect();
    if let Some(w) = team.iter().find(|w| p.app.as_deref() == Some(**w)) {
        return Some((w, Matched::Label));
    }
    if let Some(w) = p.controller.as_deref().and_then(|c| named(&team, c)) {
        return Some((w, Matched::Controller));
    }
    if let Some(w) = named(&team, &p.pod) {
        return Some((w, Matched::NamePrefix));
    }
    team.iter()
        .find(|w| p.only_on_gpu.as_deref() == Some(**w))
        .map(|w| (*w, Matched::OnlyWorkloadOnGpu))
}

/// The workload `name` is, or starts with followed by `-` (the longest such).
fn named<'a>(team: &[&'a str], name: &str) -> Option<&'a str> {
    team.iter()
        .copied()
        .filter(|w| {
            name == *w
                || name
                    .strip_prefix(*w)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
        .max_by_key(|w| w.len())
}

/// Each pod's controller by (namespace, pod): the name of what made it, followed one step up
/// where a ReplicaSet has an owner (its Deployment) or a Job has one (its CronJob).
pub(super) fn controllers(a: &Answers) -> BTreeMap<(String, String), String> {
    let col = |q: Q, l: &str| Answers::col(q, l);
    let up = |q: Q, child: &str| -> BTreeMap<(String, String), String> {
        a.get(q)
            .map(|(g, _)| {
                (
                    (g[col(q, "namespace")].clone(), g[col(q, child)].clone()),
                    g[col(q, "owner_name")].clone(),
                )
            })
            .collect()
    };
    let replicasets = up(Q::ReplicaSetOwner, "replicaset");
    let jobs = up(Q::JobOwner, "job_name");
    let q = Q::PodCreator;
    a.get(q)
        .map(|(g, _)| {
            let (ns, pod) = (&g[col(q, "namespace")], &g[col(q, "pod")]);
            let (kind, name) = (&g[col(q, "created_by_kind")], &g[col(q, "created_by_name")]);
            let parent = match kind.as_str() {
                "ReplicaSet" => replicasets.get(&(ns.clone(), name.clone())),
                "Job" => jobs.get(&(ns.clone(), name.clone())),
                _ => None,
            };
            ((ns.clone(), pod.clone()), parent.unwrap_or(name).clone())
        })
        .collect()
}

/// Whether a workload's pods may hold GPUs the way `held` says: its sharing mode where it
/// states one, else whole GPUs unless it asks for a fraction of one.
fn holds_as(w: &crate::plan::Workload, held: GpuHold) -> bool {
    match w.sharing.as_ref().map(|s| *s.get()) {
        Some(s) => held == s.hold(),
        None => (held == GpuHold::Whole) != w.gpu_fraction.is_some(),
    }
}

/// The only workload of `team` whose pods may hold GPU `model` (a catalog name) the way
/// `held` says, if one alone may: on its declared pools' GPUs, else its `skus`' GPUs, else
/// its `gpu_models`; a workload that names none of these may run on any model.
pub(super) fn only_on_gpu(
    plan: &Plan,
    catalog: &Catalog,
    team: &str,
    model: &str,
    held: GpuHold,
) -> Option<String> {
    let model_of_sku = |sku: &str| {
        catalog
            .sku(plan.provider(), sku)
            .and_then(|s| catalog.sku_gpu(s))
            .map(|g| g.name.as_str())
    };
    let may = |w: &crate::plan::Workload| -> bool {
        let pools: Vec<_> = plan.workload_pools(w.name.get()).collect();
        if !pools.is_empty() {
            return pools
                .iter()
                .any(|p| model_of_sku(p.get().sku.get()) == Some(model));
        }
        if let Some(skus) = &w.skus {
            return skus
                .get()
                .iter()
                .any(|s| model_of_sku(s.get()) == Some(model));
        }
        if let Some(models) = &w.gpu_models {
            return models
                .get()
                .iter()
                .any(|m| catalog.gpu(m.get()).is_some_and(|g| g.name == model));
        }
        true
    };
    let mut it = plan
        .workloads()
        .iter()
        .filter(|w| w.team.get() == team && holds_as(w.get(), held) && may(w.get()));
    match (it.next(), it.next()) {
        (Some(w), None) => Some(w.name.get().clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_whole_or_before_a_dash_and_the_longest_wins() {
        let team = ["chat", "chat-api", "embed"];
        assert_eq!(named(&team, "chat-api-7d9f-x"), Some("chat-api"));
        assert_eq!(named(&team, "chat-7d9f"), Some("chat"));
        assert_eq!(named(&team, "chat"), Some("chat"));
        assert_eq!(named(&team, "chatter-1"), None);
        assert_eq!(named(&team, "embeddings-0"), None);
    }
}
