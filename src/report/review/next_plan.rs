//! The words of the next plan: its header, the comments on the lines it changed, and the
//! warnings `review --write-plan` prints (`review::next_plan::says` holds them as figures).

use std::fmt;

use crate::core::num;
use crate::review::forecast::{Basis, TypicalOf};
use crate::review::next_plan::says::{Had, Header, LineSays, NextNote, Reported, Resized};

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "next quarter ({}, to {}) from telemetry {} to {}, {} covered day(s).",
            self.quarter, self.horizon, self.from, self.to, self.covered_days
        )?;
        writeln!(
            f,
            "changed lines carry the figures they came from; the method is in `gpuplan explain review`."
        )?;
        if !self.without_data.is_empty() {
            writeln!(f, "{}", without_data(&self.without_data))?;
        }
        Ok(())
    }
}

fn without_data(names: &[String]) -> String {
    format!(
        "left as written, no GPU held in the window: {}",
        names.join(", ")
    )
}

impl fmt::Display for LineSays {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineSays::Count {
                was,
                grounds,
                basis,
                horizon,
            } => write!(
                f,
                "was {was}; {grounds}; {} ({})",
                how(*basis, horizon),
                basis.as_str()
            ),
            LineSays::Hours { held } => write!(
                f,
                "measured: held GPUs {held:.0} h of a {}-h month",
                crate::core::HOURS_PER_MONTH
            ),
            LineSays::Typical {
                typical,
                held_mean,
                hours,
                max,
            } => {
                match typical.of {
                    TypicalOf::Held => write!(
                        f,
                        "measured: {:.2} replicas on average over its {:.0} running hours a month ({:.0} replica-hours)",
                        typical.measured,
                        hours,
                        typical.measured * hours
                    )?,
                    TypicalOf::BusyAtTarget { target } => write!(
                        f,
                        "consolidated: its GPUs busy on average are {:.2} replicas busy at {:.0}% (measured: {held_mean:.2} held on average over its {hours:.0} running hours a month)",
                        typical.measured,
                        target * 100.0
                    )?,
                }
                if (typical.growth - 1.0).abs() > 0.005 {
                    write!(
                        f,
                        ", x {:.2} as the projection that sized `max` grows",
                        typical.growth
                    )?;
                }
                match typical.bounded {
                    Some(b) if b == *max => write!(f, ", held to `max` {b}")?,
                    Some(b) => write!(f, ", held to `min` {b}")?,
                    None => {}
                }
                if (typical.growth - 1.0).abs() > 0.005 || typical.bounded.is_some() {
                    write!(f, " = {}", typical.value)?;
                }
                write!(
                    f,
                    "; the expected cost follows it, `max = {max}` is the ceiling"
                )
            }
            LineSays::Fraction { was, slice } => {
                match was {
                    Had::Fraction(v) => write!(f, "was {v}")?,
                    Had::Gpus(g) => write!(f, "was {g} GPU")?,
                }
                f.write_str(": idle below the threshold; ")?;
                match slice {
                    Some(s) => write!(f, "{s}")?,
                    None => f.write_str("a smaller slice")?,
                }
                f.write_str(" holds the work")
            }
            LineSays::WithFraction => f.write_str("with gpu_fraction"),
            LineSays::MeasuredOn { model } => write!(
                f,
                "serving capacity measured on {model}: the replicas are that GPU's (its KV cache and speed); on another they would differ"
            ),
            LineSays::Nodes(r) => write!(f, "{r}"),
        }
    }
}

/// How a basis turns the figures into `min` and `max`.
fn how(basis: Basis, horizon: &str) -> String {
    match basis {
        Basis::Consolidated => {
            "min and max from the p10 and p95 of GPUs busy at the target share".to_owned()
        }
        Basis::Idle => "min from the p10; max never above today's".to_owned(),
        Basis::Serving => format!(
            "min from the p10 of replicas needed by serving metrics, max from their peak by {horizon} +headroom"
        ),
        Basis::Saturated => "never sized down: serving metrics missed the objective".to_owned(),
        Basis::Trend | Basis::Flat => format!("p10 -> min, peak by {horizon} +headroom -> max"),
    }
}

impl fmt::Display for Resized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The node count the GPUs alone need; where the written count is more, what else
        // holds it up is named, so the comment never equates GPUs to nodes they do not fill.
        let by_gpus = ((self.gpus / self.per_node.max(1e-9)) - 1e-9)
            .ceil()
            .max(1.0) as i64;
        write!(
            f,
            "was {}: its workloads at their new max hold {} GPUs ({}) = {} node(s) of {}",
            crate::review::forecast::count(self.was),
            num(self.gpus),
            self.parts
                .iter()
                .map(|(w, g)| format!("{w} {}", num(*g)))
                .collect::<Vec<_>>()
                .join(", "),
            by_gpus,
            num(self.per_node)
        )?;
        if self.nodes > by_gpus {
            if self.nodes == self.floor {
                write!(
                    f,
                    "; {} to keep the availability floor of its user-facing work",
                    self.nodes
                )?;
            } else {
                write!(
                    f,
                    "; {} as `check` counts them (vCPUs, memory, MIG instances or gangs)",
                    self.nodes
                )?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Reported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reported::Code(c) => write!(f, "{c}"),
            Reported::Unloadable(message) => f.write_str(message),
        }
    }
}

impl fmt::Display for NextNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NextNote::RightSizeRefused { workload, why } => write!(
                f,
                "`{workload}`: the right-size was not taken (check would report {why}); sized by consolidation instead"
            ),
            NextNote::ResizeRefused { pool, why } => write!(
                f,
                "pool `{pool}` was left at its size: resizing it for its workloads' new maxima makes check report {why} (raise the quota or budget, or split the work)"
            ),
            NextNote::HeldForPool { workload, pool, why } => write!(
                f,
                "workload `{workload}` was left at its replicas as written: its pool `{pool}` cannot grow to hold the new ones ({why}); raise the pool's limit (quota, budget, `nodes.max`), then review again"
            ),
            NextNote::Resized { pool, resized } => write!(f, "pool `{pool}`: nodes {resized}"),
            NextNote::NewErrors(added) => write!(
                f,
                "check reports {} error(s) on the written plan that the plan did not have: {}",
                added.len(),
                added
                    .iter()
                    .map(|e| match (&e.1, &e.2) {
                        (Some(w), _) => format!("{} on `{w}`", e.0),
                        (None, Some(p)) => format!("{} on pool `{p}`", e.0),
                        (None, None) => e.0.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            NextNote::Spread {
                workload,
                regions,
                clusters,
            } => write!(
                f,
                "`{workload}` was left as written: its pools are in {}, and the review read only cluster(s) {clusters}, part of its demand; review every cluster the data holds (`--all-clusters`) to propose it",
                regions.join(" and ")
            ),
            NextNote::WithoutData(names) => f.write_str(&without_data(names)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The wordings the written plan used before they became figures (the old format strings
    //! with the figures put in), for the cases the integration tests do not reach.
    use super::*;
    use crate::diag::{Code, RuleId};
    use crate::plan::Count;

    fn code(r: RuleId) -> Reported {
        Reported::Code(Code::Rule(r))
    }

    #[test]
    fn notes_and_comments_read_as_before() {
        assert_eq!(
            NextNote::NewErrors(vec![
                (code(RuleId::GP014), None, None),
                (code(RuleId::GP003), Some("chat".into()), None),
                (code(RuleId::GP013), None, Some("serve".into())),
                (Reported::Unloadable("bad".into()), None, None),
            ])
            .to_string(),
            "check reports 4 error(s) on the written plan that the plan did not have: GP014, GP003 on `chat`, GP013 on pool `serve`, bad"
        );
        assert_eq!(
            LineSays::Fraction {
                was: Had::Fraction("0.5".into()),
                slice: None
            }
            .to_string(),
            "was 0.5: idle below the threshold; a smaller slice holds the work"
        );
        assert_eq!(
            LineSays::Hours { held: 365.4 }.to_string(),
            "measured: held GPUs 365 h of a 730-h month"
        );
        assert_eq!(
            NextNote::Resized {
                pool: "p".into(),
                resized: Resized {
                    was: Count::Fixed(2),
                    gpus: 9.5,
                    parts: vec![("a".into(), 8.0), ("b".into(), 1.5)],
                    nodes: 3,
                    per_node: 4.0,
                    floor: 0,
                },
            }
            .to_string(),
            "pool `p`: nodes was 2: its workloads at their new max hold 9.5 GPUs (a 8, b 1.5) = 3 node(s) of 4"
        );
        // More nodes than the GPUs need say what holds them up (issue 72 item 9).
        let resized = |nodes, floor| {
            Resized {
                was: Count::Fixed(6),
                gpus: 4.0,
                parts: vec![("chat".into(), 4.0)],
                nodes,
                per_node: 4.0,
                floor,
            }
            .to_string()
        };
        assert_eq!(
            resized(2, 2),
            "was 6: its workloads at their new max hold 4 GPUs (chat 4) = 1 node(s) of 4; 2 to keep the availability floor of its user-facing work"
        );
        assert!(resized(3, 2)
            .ends_with("; 3 as `check` counts them (vCPUs, memory, MIG instances or gangs)"));
        let header = Header {
            quarter: "2027-Q1".into(),
            horizon: "2027-03-31".into(),
            from: "a".into(),
            to: "b".into(),
            covered_days: 28.0,
            without_data: vec!["x".into(), "y".into()],
        };
        assert_eq!(
            header.to_string(),
            "next quarter (2027-Q1, to 2027-03-31) from telemetry a to b, 28 covered day(s).\nchanged lines carry the figures they came from; the method is in `gpuplan explain review`.\nleft as written, no GPU held in the window: x, y\n"
        );
    }
}
