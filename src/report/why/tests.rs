//! The wordings no example plan prints, each as the engine wrote it before its reasons
//! became data (the texts are the old format strings with the figures put in).
use super::spot::spot_no;
use super::*;
use crate::core::Sharing;
use crate::engine::recommend::candidate::Constraint;
use crate::engine::recommend::candidate::{Detail, SpotNo};
use crate::engine::recommend::reason::{
    AksMember, AltNote, AltWhat, BandSeen, CapacityNote, ChangeNote, NotShared, NotTaken, Reason,
    Said, SpotJudgement, Unmet, Why,
};

fn why(r: Vec<Reason>) -> String {
    Why(r).to_string()
}

#[test]
fn a_capacity_block_and_a_shared_server_read_as_before() {
    assert_eq!(
        why(vec![
            Reason::SharedServer,
            Reason::CapacityBlock {
                nodes: 2,
                hours: 96.0,
                work_hours: 96.0,
                usd_per_hour: 31.464,
                on_demand: 55.04,
            },
        ]),
        "one server process hosts the shares of a GPU; the device plugin sees whole GPUs; \
         EC2 Capacity Block for the gang: 2 node(s) x 96 h x $31.464/h = $6,041.09 a month \
         against $10,567.68 on-demand for its 96 h ($55.04/h), paid whether used or not; the \
         gang must run inside the block's dates (`block_hours` on the written pool)"
    );
    // 300 h of work buy the 13-day block: 16 x 312 x $31.464 = $157,068.29.
    assert_eq!(
        why(vec![Reason::CapacityBlock {
            nodes: 16,
            hours: 312.0,
            work_hours: 300.0,
            usd_per_hour: 31.464,
            on_demand: 55.04,
        }]),
        "EC2 Capacity Block for the gang: 16 node(s) x 312 h x $31.464/h = $157,068.29 a month \
         (the shortest block EC2 sells for the gang's 300 h: 1-day steps to 14 days, 7-day \
         steps to 182) against $264,192.00 on-demand for its 300 h ($55.04/h), paid whether \
         used or not; the gang must run inside the block's dates (`block_hours` on the written \
         pool)"
    );
    assert_eq!(why(vec![Reason::Declared]), "declared in the plan");
}

#[test]
fn spot_judgements_read_as_before() {
    let stateless = SpotJudgement::Stateless {
        effective: 1.25,
        on_demand: 3.673,
        break_even: 2.5,
        band: BandSeen::Unknown,
    };
    assert_eq!(
        why(vec![Reason::OnDemand(stateless)]),
        "on-demand; spot $1.25/useful hour vs on-demand $3.673 (break-even 2.50x; band unknown; stateless: only the restart is lost)"
    );
    let band = SpotNo::BandUnknown {
        sku: "p5.48xlarge".into(),
        region: "us-east-1".into(),
        wins_up_to: Some(("15-20".into(), 0.175)),
    };
    assert_eq!(
        why(vec![Reason::SpotWeighed(SpotJudgement::Shut {
            workload: "train".into(),
            why: band,
        })]),
        "spot not open: the eviction band of `p5.48xlarge` in us-east-1 is unknown (refresh live data); spot would win up to band 15-20 (17.5% of nodes a month), not at the worst"
    );
    let loses = SpotNo::BandUnknown {
        sku: "p5.48xlarge".into(),
        region: "us-east-1".into(),
        wins_up_to: None,
    };
    assert_eq!(
        spot_no(&loses, "train"),
        "the eviction band of `p5.48xlarge` in us-east-1 is unknown (refresh live data), and spot loses even at the lowest band"
    );
    assert_eq!(
        why(vec![
            Reason::Spot(SpotJudgement::NoPrice),
            Reason::OnDemand(SpotJudgement::NotAssessed)
        ]),
        "spot: no spot price; on-demand; spot not assessed"
    );
}

#[test]
fn aks_members_and_dedicated_sharing_read_as_before() {
    assert_eq!(
        why(vec![Reason::AksMig {
            profile: "3g.40gb".into(),
            gpu_instance: "MIG3g".into(),
            members: vec![
                AksMember::Instead {
                    workload: "mid".into(),
                    own: "2g.20gb".into(),
                },
                AksMember::Split {
                    workload: "embed".into(),
                    peak: 1,
                    planned: 8,
                },
            ],
        }]),
        "MIG `3g.40gb` on every GPU (mig_manager = aks: one profile per pool, AKS `gpu_instance` MIG3g); \
         `mid` takes `3g.40gb` instead of its own `2g.20gb`: sharing these nodes costs less than a pool of its own; \
         `embed` is split over this family's profiles: 1 of its 8 replicas at peak run here (its pods ask for \
         `nvidia.com/gpu` under AKS's single strategy, so any of these pools can run them)"
    );
    assert_eq!(
        why(vec![Reason::Dedicated {
            workload: "big".into(),
            sharing: Sharing::Mps,
            cause: NotShared::ManyGpus(2),
        }]),
        "`big` declares `sharing = \"mps\"` but runs on dedicated GPUs: a replica asks for 2 GPUs, which a time-sliced GPU cannot give (GP003)"
    );
}

#[test]
fn why_an_alternative_was_not_taken_reads_as_before() {
    let note = |n| {
        AltNote {
            what: AltWhat::Packed { nodes: 3, gpus: 24 },
            not_taken: Some(n),
        }
        .to_string()
    };
    assert_eq!(
        note(NotTaken::Quota {
            family: "standardNCADSA100v4Family".into(),
            region: "eastus".into(),
            quota: 48.0,
            fleet: 48.0,
            need: 24.0,
        }),
        "3 node(s), 24 GPU(s) at peak; not taken: quota, the standardNCADSA100v4Family quota in eastus is 48 vCPUs and the rest of the fleet uses 48, so its 24 more do not fit"
    );
    assert_eq!(
        note(NotTaken::NotTried {
            members: 16,
            replicas: 600,
        }),
        "3 node(s), 24 GPU(s) at peak; not taken: not tried, only pools of up to 16 workloads and 600 replicas, none split over AKS profiles, are moved to their listed options (packing each for real costs more time than the rest of the recommendation)"
    );
    assert!(note(NotTaken::Repaired).ends_with("; not taken: quota repair moved a workload here off a pool over its quota after the pool stage, which does not revisit this pool's options"));
    assert!(note(NotTaken::FleetCheaper).ends_with("; not taken: priced as this pool alone it is cheaper, but the fleet as a whole costs less as chosen (its workloads share nodes, merges or reservations with other pools)"));
}

#[test]
fn unmet_work_changes_and_findings_read_as_before() {
    let unmet = Unmet::Rejected {
        regions: vec!["eastus".into()],
        workload: "w".into(),
        constraint: Constraint::GpuMemory,
        // Two figures that print alike are shown once; four distinct show three.
        examples: vec![
            Detail::SharedMemory {
                need: 90.001,
                gpu: "A10".into(),
                has: 24.0,
            },
            Detail::SharedMemory {
                need: 90.002,
                gpu: "A10".into(),
                has: 24.0,
            },
            Detail::NoMigProfile {
                gpu: "A100-80GB".into(),
                need: 90.0,
            },
            Detail::NoMig { gpu: "T4".into() },
            Detail::AksNoMig { gpu: "H100".into() },
        ],
    };
    assert_eq!(
        unmet.to_string(),
        "no SKU in eastus can run `w`: gpu memory (a replica needs 90 GiB and one A10 has 24 GiB; no MIG profile of A100-80GB holds 90 GiB; T4 has no MIG)"
    );
    assert_eq!(
        ChangeNote::Keep {
            blocked: vec![(
                "w".into(),
                Unmet::NoSku {
                    provider: Provider::Aws,
                    workload: "w".into(),
                },
            )],
        }
        .to_string(),
        "keep it: its workloads cannot be placed elsewhere (`w`: no SKU of aws in the catalog can be considered for `w`); not compared, no saving claimed"
    );
    assert_eq!(
        ChangeNote::Delete {
            caveat: Some(crate::engine::cost::Caveat {
                stand_in: Some(crate::engine::cost::StandIn::Spot),
                block_hours: None,
            })
        }
        .to_string(),
        "no workload needs it: delete the pool (spot price unknown offline (no dated figure; a live refresh fetches it): costed at on-demand, no saving assumed)"
    );
    assert_eq!(
        Said::AllowExpired(
            Box::new(Said::PackingNotProven {
                pool: "p".into(),
                gpus: 9,
                lower_bound: 8,
            }),
            crate::core::Date::parse("2026-01-31").expect("a date"),
        )
        .to_string(),
        "the MIG packing of `p` was not proven optimal within the search budget: 9 GPUs, lower bound 8 (the allow for this finding expired on 2026-01-31)"
    );
    assert_eq!(
        CapacityNote::FloorReserved {
            nodes: 2,
            provider: Provider::Aws
        }
        .to_string(),
        "reserve the floor of 2 node(s) so a scale-up or node repair cannot stock out (EC2 On-Demand Capacity Reservation); billed at the on-demand rate for every hour of the month whether used or not"
    );
}
