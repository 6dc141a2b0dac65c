use super::{Cx, Rule};

declare_rule! {
    /// # GP018 fault-domain-undecided
    ///
    /// ## What it does
    /// Flags workloads that share a fault domain without a `[[decision]]` saying who decided:
    /// a `fault_domain` with no decision; a time-sliced or MPS pool that hosts several
    /// workloads not all in one decided fault domain; a `shared-server` workload with no
    /// decided fault domain.
    ///
    /// ## Why is this bad?
    /// Every sharing mechanism trades isolation for density. The saving is visible and easy
    /// to attribute; the cost is a probability of an incident that will be attributed to
    /// something else when it arrives. Which workloads may share a fault domain, and who
    /// decided, is the document that stops the next cost exercise quietly making the choice.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// fault_domain = "research-notebooks"     # no [[decision]] for it
    /// ```
    /// Use instead:
    /// ```toml
    /// [[decision]]
    /// fault_domain = "research-notebooks"
    /// decided_by = "head-of-research"
    /// date = 2026-11-02
    /// reason = "experimentation; a crash costs somebody an afternoon"
    /// ```
    ///
    /// ## Source
    /// Context article "The trade nobody writes down".
    pub(crate) struct FaultDomainUndecided { id: GP018, name: "fault-domain-undecided", severity: Error }
}

impl Rule for FaultDomainUndecided {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            match &w.fault_domain {
                Some(fd) if cx.plan.decision(fd.get()).is_none() => cx.push(
                    cx.finding(fd.span(), format!("`{}` joins fault domain `{}`, but no `[[decision]]` records who decided it", w.name.get(), fd.get()))
                        .label("no decision")
                        .help(format!("add a `[[decision]]` with `fault_domain = \"{}\"`, `decided_by`, `date` and `reason`", fd.get()))
                        .workload(w.name.get()),
                ),
                None if w.sharing().shares_server_process() => cx.push(
                    cx.finding(w.sharing.as_ref().map_or(w.name.span(), |s| s.span()), format!("`{}` runs in a shared inference server: one crash, bad rollout or OOM takes every tenant, and no `fault_domain` records who decided that", w.name.get()))
                        .label("shared server")
                        .help("set `fault_domain` for the server's tenants and add a `[[decision]]` for it")
                        .workload(w.name.get()),
                ),
                _ => {}
            }
        }
        for pool in cx.plan.pools() {
            if !pool.sharing().is_replicated() {
                continue;
            }
            let members: Vec<_> = cx.plan.pool_workloads(pool).collect();
            if members.len() < 2 {
                continue;
            }
            let first = members[0].fault_domain.as_ref().map(|f| f.get());
            let same = members
                .iter()
                .all(|w| w.fault_domain.as_ref().map(|f| f.get()) == first);
            let decided = first.is_some_and(|f| cx.plan.decision(f).is_some());
            if same && decided {
                continue;
            }
            if same && first.is_some() {
                continue; // the missing decision is reported on the workloads above
            }
            let names: Vec<String> = members
                .iter()
                .map(|w| format!("`{}`", w.name.get()))
                .collect();
            cx.push(
                cx.finding(pool.sharing.as_ref().map_or(pool.name.span(), |s| s.span()), format!("pool `{}` ({}) puts {} in one fault domain without a recorded decision", pool.name.get(), pool.sharing().as_str(), names.join(", ")))
                    .label("shared fault domain")
                    .help("give these workloads one `fault_domain` and add a `[[decision]]` for it, or split the pool")
                    .pool(pool.name.get()),
            );
        }
    }
}
