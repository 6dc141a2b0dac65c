//! One story per run: the review's next-quarter rows say what the written plan says.

use std::collections::BTreeMap;

use crate::plan::Count;
use crate::plan::Plan;
use crate::review::forecast::{NextQuarter, Proposal, Written};

/// Each workload's proposal as `--write-plan` wrote it: the count without the right-size
/// `check` refused, or its replicas as written where its pools could not take the proposal.
/// The forecast's own proposal is kept beside it (`not_written`).
pub(crate) fn settle(nq: &mut NextQuarter, plan: &Plan, written: &BTreeMap<String, Written>) {
    for f in &mut nq.workloads {
        let Some(w) = written.get(&f.workload) else {
            continue;
        };
        let kept = match w {
            Written::AsProposed => None,
            Written::WithoutRightSize => f.without_right_size.clone(),
            Written::Unchanged => plan.workload(&f.workload).map(|wl| {
                let c = wl.replicas();
                Proposal {
                    min: c.min(),
                    max: c.max(),
                    fixed: matches!(c, Count::Fixed(_)),
                    hours_per_month: None,
                    typical_replicas: None,
                    typical: None,
                    gpu_fraction: None,
                    sharing: None,
                    gpu_models: None,
                    basis: f.proposed.basis,
                }
            }),
        };
        if let Some(k) = kept {
            f.not_written = Some(std::mem::replace(&mut f.proposed, k));
        }
        f.written = Some(*w);
    }
}
