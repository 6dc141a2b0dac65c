//! No input makes the loader, the checker, the recommender or the renderer panic: arbitrary
//! text, and mutations of real plans.

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::plan::{self, Date};
use gpuplan::rules::{self, Levels};
use gpuplan::source::SourceFile;
use proptest::prelude::*;

fn run(text: &str, catalog: &Catalog) {
    let file = SourceFile::new("fuzz.toml", text.to_owned());
    if let Ok(p) = plan::Plan::load(file, catalog) {
        for d in rules::check(
            &p,
            catalog,
            Date {
                year: 2026,
                month: 12,
                day: 2,
            },
            &Levels::default(),
        ) {
            // every finding must point inside the file
            assert!(d.span.end <= text.len());
            let _ = gpuplan::report::findings::human(&[d], false);
        }
        let declared = gpuplan::engine::recommend::declared(&p, catalog);
        let recommended = gpuplan::engine::recommend::recommend(&p, catalog);
        for w in p.workloads().iter().filter(|w| w.replicas().max() > 0) {
            let name = w.name.get();
            let holding: Vec<_> = recommended
                .pools
                .iter()
                .filter(|x| x.workloads.contains(name))
                .collect();
            let reported = recommended
                .unsatisfied
                .iter()
                .filter(|u| &u.workload == name)
                .count();
            assert_eq!(
                usize::from(!holding.is_empty()) + reported,
                1,
                "`{name}` is placed or reported"
            );
            // Only AKS MIG replicas split over pools (the single strategy lets any run them).
            assert!(
                holding.len() <= 1
                    || holding
                        .iter()
                        .all(|p| p.sharing == gpuplan::core::Sharing::Mig
                            && p.mig_manager == gpuplan::core::MigManager::Aks),
                "`{name}` is in {} pools",
                holding.len()
            );
        }
        for rec in [declared, recommended] {
            for pool in &rec.pools {
                assert!(pool.nodes.min <= pool.nodes.max, "{}", pool.name);
            }
            let v = gpuplan::render::view::build(
                &p,
                catalog,
                &rec,
                &gpuplan::render::view::Options {
                    capacity_reservations: true,
                    karpenter: true,
                    kueue_api: "kueue.x-k8s.io/v1beta2",
                },
            );
            let files = gpuplan::render::render(&v, None).expect("built-in templates render");
            let tf = &files["terraform/main.tf"];
            assert!(tf.parse::<hcl_edit::structure::Body>().is_ok(), "{tf}");
        }
    }
}

fn catalog() -> &'static Catalog {
    static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    C.get_or_init(|| Catalog::embedded(&Provider::ALL).expect("catalog"))
}

const SEED: &str = include_str!("../../plans/mixed-estate.toml");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,400}") {
        run(&s, catalog());
    }

    #[test]
    fn mutated_plans_never_panic(cut in 0usize..SEED.len(), len in 0usize..40, insert in "[\\[\\]{}=\"'0-9a-z .,#\\n-]{0,12}") {
        let mut s = SEED.to_owned();
        let start = (0..=cut).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
        let end = (start + len).min(s.len());
        let end = (end..=s.len()).find(|i| s.is_char_boundary(*i)).unwrap_or(s.len());
        s.replace_range(start..end, &insert);
        run(&s, catalog());
    }

    #[test]
    fn numbers_anywhere_never_panic(v in prop_oneof![Just("-1".to_owned()), Just("0".to_owned()), Just("1e308".to_owned()), Just("nan".to_owned()), Just("inf".to_owned()), Just("9223372036854775807".to_owned()), any::<i64>().prop_map(|x| x.to_string())]) {
        for key in ["replicas", "nodes", "gpus", "gpu_fraction", "utilization", "checkpoint_minutes", "restart_minutes", "gpu_memory_gib"] {
            let s = format!("version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"training\"\n{key} = {v}\n[[pool]]\nname = \"p\"\nsku = \"p5.48xlarge\"\nregion = \"us-east-1\"\nnodes = {v}\ncapacity = \"spot\"\nworkloads = [\"w\"]\n");
            run(&s, catalog());
        }
    }
}
