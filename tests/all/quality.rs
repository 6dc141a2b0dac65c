//! The recommendation for the real openb trace against lower bounds no fleet can beat.
//! Quality, not speed: timing lives in `benches/recommend.rs`.

#[path = "../../benches/openb.rs"]
mod openb;

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::engine::recommend::recommend;
use gpuplan::plan;
use gpuplan::source::SourceFile;

/// How far above its lower bounds a recommendation may come: the targets, 3% of GPUs
/// over the slot bound and 2% of cost over the LP bound (closing notes of issue 3 give the
/// measured figures).
struct Limits {
    gpus: f64,
    cost: f64,
}

fn check(provider: Provider, regions: &[&str], limits: Limits) {
    check_term(provider, regions, None, limits);
}

/// [`check`] with `[plan] reservation_term` set: the bound prices reserved capacity at the
/// same term, since it takes every workload's rates as the recommender sees them.
fn check_term(provider: Provider, regions: &[&str], term: Option<&str>, limits: Limits) {
    let catalog = Catalog::embedded(&[provider]).expect("catalog");
    let mut text = openb::plan_text(provider.as_str(), regions);
    if let Some(term) = term {
        assert!(text.contains("[plan]\n"));
        text = text.replacen(
            "[plan]\n",
            &format!("[plan]\nreservation_term = \"{term}\"\n"),
            1,
        );
    }
    let p = plan::Plan::load(SourceFile::new("openb.toml", text), &catalog)
        .unwrap_or_else(|ds| panic!("openb plan invalid: {:?}", ds.first().map(|d| &d.message)));
    let t = std::time::Instant::now();
    let r = recommend(&p, &catalog);
    eprintln!("recommend took {:?}", t.elapsed());
    // Only pods that no SKU can hold host-wise may be left out, and they are reported.
    for u in &r.unsatisfied {
        assert_eq!(u.constraint, "host cpu", "{u:?}");
    }
    for pool in &r.pools {
        eprintln!(
            "  {:<40} {:<18} {:>4}-{:<4} nodes {:>5} GPUs, {:>5} GPU units idle, {:>12.2}",
            pool.name,
            pool.sku,
            pool.nodes.min,
            pool.nodes.max,
            pool.gpus.max,
            pool.stranded.as_ref().map_or(0, |s| s.gpu_units),
            pool.monthly_cost_usd
        );
    }
    for pool in &r.pools {
        for a in pool
            .considered
            .iter()
            .filter(|a| a.kind.as_str() == "fewer-gpus")
        {
            eprintln!(
                "  {:<40} fewer GPUs: {} {} {:?} GPUs, {:+.2}",
                pool.name,
                a.sku,
                a.region,
                a.gpus,
                a.delta_usd.unwrap_or(f64::NAN)
            );
        }
    }
    let t = std::time::Instant::now();
    let b = openb::bounds(&p, &catalog, false);
    eprintln!("bounds took {:?}", t.elapsed());
    let mut by_segment: std::collections::BTreeMap<
        gpuplan::engine::recommend::demand::Segment,
        f64,
    > = Default::default();
    for pool in &r.pools {
        *by_segment.entry(pool.segment).or_default() += pool.monthly_cost_usd;
    }
    eprintln!("ours by segment {by_segment:?}");
    let gpus: u32 = r.pools.iter().map(|p| p.gpus.max).sum();
    let plain = b.lp_cost.expect("the LP relaxation solves");
    let gpu_bound = b.lp_gpus.expect("the GPU LP solves");
    eprintln!(
        "GPU LP bound {gpu_bound:.1}; within 2% of the cost bound {:.1}",
        b.lp_gpus_within_cost.unwrap_or(f64::NAN)
    );
    assert!(f64::from(gpus) >= gpu_bound - 1e-6);
    assert!(b.lp_cut_cost.is_none(), "cuts are the bench's");
    eprintln!(
        "{provider}: {gpus} GPUs (demand {:.1}, slot bound {:.1}); cost {:.2} vs LP {plain:.2}",
        b.demand_gpus, b.slot_gpus, r.total_monthly_cost_usd
    );
    assert!(f64::from(gpus) >= b.slot_gpus - 1e-6);
    assert!(
        f64::from(gpus) <= b.slot_gpus * limits.gpus,
        "{gpus} GPUs, more than {:.0}% above the slot bound {:.1}",
        (limits.gpus - 1.0) * 100.0,
        b.slot_gpus
    );
    // Against the fewest GPUs a fleet no dearer than ours can have, the 3% holds
    // on both providers: what remains above the plain GPU bound is bought back in dollars.
    let at_cost = openb::gpus_at_cost(&p, &catalog, r.total_monthly_cost_usd)
        .expect("the GPU LP at our cost solves");
    eprintln!("GPU LP bound at our cost {at_cost:.1}");
    assert!(f64::from(gpus) >= at_cost - 1e-6);
    assert!(
        f64::from(gpus) <= at_cost * 1.03,
        "{gpus} GPUs, more than 3% above {at_cost:.1}, the fewest any fleet as cheap can have"
    );
    assert!(
        r.total_monthly_cost_usd >= plain - 0.01,
        "the LP is a lower bound"
    );
    both_bounds_hold(&p, &catalog, &r);
    // Issue 40 measured against a fluid figure where each replica pays only its GPU share of
    // the node size cheapest per GPU that holds it. It ignores vCPUs and RAM, so it is no
    // bound: on AWS the LP, which every fleet satisfies (pools of several node sizes too),
    // is more than 5% above it, and no fleet can come within 1.05x of it.
    let fluid = openb::fluid(&p, &catalog, openb::Share::Gpus, None);
    let node_fluid = openb::fluid(&p, &catalog, openb::Share::Node, None);
    eprintln!(
        "fluid figures: GPU share {fluid:.2} (LP {:.3}x, ours {:.3}x), node share {node_fluid:.2}",
        plain / fluid,
        r.total_monthly_cost_usd / fluid
    );
    assert!(
        fluid <= node_fluid + 0.01,
        "a GPU share is never more than a node share"
    );
    if provider == Provider::Aws {
        assert!(
            plain > fluid * 1.05,
            "the LP bound {plain:.2} is now within 1.05x of the GPU-share fluid figure {fluid:.2}: issue 40's 1.05x target may be reachable, measure again"
        );
    }
    assert!(
        r.total_monthly_cost_usd <= plain * limits.cost,
        "cost {:.2} more than {:.0}% above the LP bound {plain:.2}",
        r.total_monthly_cost_usd,
        (limits.cost - 1.0) * 100.0
    );
}

#[test]
fn openb_on_azure_is_within_targets() {
    // measured: GPUs +2.15% over the slot bound, cost +1.89% over the LP bound (batch on
    // spot judged at the worst band; +1.52% when spot was closed on unknown bands).
    check(
        Provider::Azure,
        &["eastus", "westus3"],
        Limits {
            gpus: 1.03,
            cost: 1.02,
        },
    );
}

#[test]
fn openb_on_aws_is_within_targets() {
    // measured: GPUs +1.94% over the slot bound, cost +1.79% over the LP bound. With the dated
    // 2025-11-30 and 2026-07-20 prices the serving floors are reserved, and the choice of SKU
    // per workload prices a reservation alone; one workload moved at a time between pools,
    // judged by the final packing (`moves`), takes it from +2.14% to +1.79%.
    check(
        Provider::Aws,
        &["us-east-1", "us-west-2"],
        Limits {
            gpus: 1.03,
            cost: 1.02,
        },
    );
}

#[test]
fn openb_on_aws_with_a_three_year_term_is_within_targets() {
    // The default term is one year (the two tests above); a plan that records "3y" may reserve
    // for three years, and the bound then prices its reserved capacity at three. The issue's
    // target is 10% over that bound; the fleet comes far closer.
    check_term(
        Provider::Aws,
        &["us-east-1", "us-west-2"],
        Some("3y"),
        Limits {
            gpus: 1.03,
            cost: 1.02,
        },
    );
}

/// The bound `recommend` prints and the bench's independent one (built from the catalog, not
/// from the recommender's candidates) are both below the fleet's cost, and the printed gap is
/// the one the two figures give.
fn both_bounds_hold(
    p: &gpuplan::plan::Plan,
    catalog: &Catalog,
    r: &gpuplan::engine::recommend::Recommendation,
) {
    let cost = r.total_monthly_cost_usd;
    let own = r.lower_bound.as_ref().expect("recommend bounds its fleet");
    let independent = openb::independent_bound(p, catalog).expect("the independent LP solves");
    eprintln!(
        "cost {cost:.2}: own bound {:.2} ({:.3}x, optimal {}), independent {:.2} ({:.3}x)",
        own.monthly_cost_usd,
        cost / own.monthly_cost_usd,
        own.optimal,
        independent.monthly_usd,
        cost / independent.monthly_usd
    );
    assert!(own.monthly_cost_usd > 0.0 && own.monthly_cost_usd <= cost + 0.01);
    assert!(independent.monthly_usd > 0.0 && independent.monthly_usd <= cost + 0.01);
    assert!((own.gap - (cost / own.monthly_cost_usd - 1.0)).abs() < 1e-3);
}

/// The trace's latency-sensitive fractions on MIG with GPU memory needs (issue 55's second
/// plan generator): every replica placed or reported, and both bounds below the fleet.
#[test]
fn the_mig_reading_is_bounded_from_below() {
    let catalog = Catalog::embedded(&[Provider::Azure]).expect("catalog");
    let text = openb::plan_text_mig("azure", &["eastus"]);
    assert!(text.contains("sharing = \"mig\"") && text.contains("gpu_memory_gib"));
    let p = plan::Plan::load(SourceFile::new("openb-mig.toml", text), &catalog)
        .expect("the MIG reading is a valid plan");
    let r = recommend(&p, &catalog);
    assert!(
        r.pools.iter().any(|q| q.mig_layout.is_some()),
        "LS fractions run on MIG"
    );
    both_bounds_hold(&p, &catalog, &r);
    // Chosen alone or by local search, the A100 sizes strand vCPUs and the fleet came to
    // $6,446,997.80, 2.3% over the bound; the LP's own choice (`guide`) takes it to 1.0%.
    within_two_percent_of_its_bound(&r);
}

fn within_two_percent_of_its_bound(r: &gpuplan::engine::recommend::Recommendation) {
    let own = r.lower_bound.as_ref().expect("bounded");
    assert!(
        r.total_monthly_cost_usd <= own.monthly_cost_usd * 1.02,
        "{:.2} is more than 2% over the bound {:.2}",
        r.total_monthly_cost_usd,
        own.monthly_cost_usd
    );
}

/// The same reading on AWS (us-east-1, GPU Operator, mixed layouts): 516 A100s carry a lone
/// 4g.20gb and 237 a 7g.40gb, so 756 GPUs is the least any packing needs. The bound sees it
/// once it counts the instances of more than half a GPU (one per GPU): before, it let two
/// 4g.20gb share a GPU by their slices and stood 4.0% below the fleet; now within 2%.
#[test]
fn the_aws_mig_reading_is_bounded_where_a_gpu_holds_one_large_instance() {
    let catalog = Catalog::embedded(&[Provider::Aws]).expect("catalog");
    let text = openb::plan_text_mig("aws", &["us-east-1"]);
    let p = plan::Plan::load(SourceFile::new("openb-mig.toml", text), &catalog)
        .expect("the MIG reading is a valid plan");
    let r = recommend(&p, &catalog);
    both_bounds_hold(&p, &catalog, &r);
    within_two_percent_of_its_bound(&r);
}
