use super::{Cx, Rule};
use crate::plan::Count;

declare_rule! {
    /// # GP032 gang-arithmetic
    ///
    /// ## What it does
    /// States, for a gang workload (`nodes` > 1) that also gives `replicas` or `gangs`, what
    /// the plan asks for in numbers: how many gangs, how many nodes each that start together,
    /// and the nodes and GPUs at peak. `nodes` is the gang size, "replicas that must start
    /// together"; `replicas` counts every member of every gang (a multiple of `nodes`), and
    /// `gangs` counts the gangs. `replicas = 16, nodes = 8` is two gangs of eight: 16 nodes,
    /// not 128.
    ///
    /// ## Why is this bad?
    /// It is not bad, it is the arithmetic made visible. Read the other way (`replicas`
    /// gangs of `nodes` each), the same two lines ask for `replicas x nodes` nodes, and a
    /// reviewer approving the plan should see which one is planned and priced.
    ///
    /// ## Example
    /// ```toml
    /// [[workload]]
    /// name = "pretrain"
    /// kind = "training"
    /// replicas = 16
    /// nodes = 8
    /// gpus = 8
    /// ```
    /// Reported: 2 gangs of 8 nodes that each start together: 16 nodes, 128 GPUs at peak.
    ///
    /// Use instead, for 16 gangs of 8: `gangs = 16` (or `replicas = 128`).
    ///
    /// ## Source
    /// The plan format (`nodes`: "gang size: replicas that must start together across
    /// nodes"); Kueue admits a gang all or nothing (kueue.sigs.k8s.io, all-or-nothing).
    pub(crate) struct GangArithmetic { id: GP032, name: "gang-arithmetic", severity: Note }
}

fn span_of(c: Count) -> String {
    match c {
        Count::Fixed(n) => n.to_string(),
        Count::Range { min, max } if min == max => min.to_string(),
        Count::Range { min, max } => format!("{min}-{max}"),
    }
}

impl Rule for GangArithmetic {
    fn check(&self, cx: &mut Cx<'_>) {
        for w in cx.plan.workloads() {
            let gang = w.gang();
            let Some(at) = w
                .gangs
                .as_ref()
                .map(|g| g.span())
                .or(w.replicas.as_ref().map(|r| r.span()))
            else {
                continue;
            };
            if gang <= 1 {
                continue;
            }
            let gangs = w.replicas();
            let nodes = gangs.times(gang);
            let gpus = nodes.times(w.gpus().max(1));
            let help = match (&w.gangs, &w.replicas) {
                (None, Some(_)) => format!(
                    "`replicas` counts the members of every gang; for {} gangs of {gang} write `gangs = {}`",
                    span_of(nodes),
                    span_of(nodes)
                ),
                _ => format!(
                    "`gangs` counts gangs; `replicas`, when given, counts their members ({})",
                    span_of(nodes)
                ),
            };
            cx.push(
                cx.finding(
                    at,
                    format!(
                        "`{}`: {} gang(s) of {gang} nodes that each start together: {} nodes, {} GPUs at peak",
                        w.name.get(),
                        span_of(gangs),
                        span_of(nodes),
                        span_of(gpus),
                    ),
                )
                .label(format!("{} gang(s) of {gang}", span_of(gangs)))
                .help(help)
                .workload(w.name.get()),
            );
        }
    }
}
