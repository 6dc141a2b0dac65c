//! One price function: a declared pool is costed the same way by `check` (GP017's budget),
//! recommend's comparison with today's pools and `diff`, including the pools whose price is
//! not an on-demand rate (a Capacity Block, paid for the whole block).

use crate::common;

use std::path::Path;

/// A refresh cache holding one Capacity Block price, as `catalog refresh --provider aws` writes
/// it (`aws/prices-live.csv`, dated in `sources.toml`).
fn cache_with_block_price(dir: &Path, usd_per_instance_hour: f64) {
    common::refresh_cache(
        dir,
        "aws/prices-live.csv",
        "aws",
        "EC2 DescribeCapacityBlockOfferings (test)",
        &format!("armSkuName,armRegionName,kind,retailPrice,unitOfMeasure,captured,source\np5.48xlarge,us-east-1,capacity-block,{usd_per_instance_hour},1 Hour,2026-12-01,test block offering\n"),
    );
}

fn block_plan(block_hours: Option<u32>, budget: f64) -> String {
    let hours = block_hours.map_or(String::new(), |h| format!("block_hours = {h}\n"));
    format!(
        "version = 1\n\n[plan]\nname = \"block\"\nowner = \"research-infra\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\nmonthly_budget = {budget}\n\n\
         [[workload]]\nname = \"pretrain\"\nteam = \"foundation\"\nkind = \"training\"\nnodes = 4\ngpus = 8\nskus = [\"p5.48xlarge\"]\ncheckpoint_minutes = 60\n\n\
         [[pool]]\nname = \"pretrain-block\"\nsku = \"p5.48xlarge\"\nregion = \"us-east-1\"\nnodes = 4\ncapacity = \"capacity-block\"\n{hours}workloads = [\"pretrain\"]\n"
    )
}

fn json(out: &std::process::Output) -> serde_json::Value {
    crate::common::contract(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// What recommend's comparison says the plan's declared pools cost today.
fn today_cost(cache: &Path, plan: &Path) -> f64 {
    let out = common::gpuplan(cache)
        .args(["recommend", "--format", "json"])
        .arg(plan)
        .output()
        .expect("runs");
    let rec = json(&out);
    rec["comparison"]["today_monthly_cost_usd"]
        .as_f64()
        .unwrap_or_else(|| panic!("a comparison: {rec}"))
}

#[test]
fn a_capacity_block_is_costed_at_the_block_price_for_the_blocks_hours_everywhere() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    // $31.464 an instance-hour for 4 instances over a 14-day (336-hour) block.
    cache_with_block_price(&cache, 31.464);
    let expected = 31.464 * 4.0 * 336.0;
    let plan = tmp.path().join("block.toml");
    std::fs::write(&plan, block_plan(Some(336), 1000.0)).expect("plan");

    // check: GP017 adds the declared pools at their maximum size.
    let out = common::gpuplan(&cache)
        .args(["check", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("runs");
    let findings = json(&out);
    let gp017 = findings["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "GP017")
        .unwrap_or_else(|| panic!("GP017 fires: {findings}"));
    let money = "$42,287.62";
    assert!(
        gp017["message"].as_str().unwrap_or("").contains(money),
        "{gp017}"
    );

    // recommend: today's cost in the comparison.
    let today = today_cost(&cache, &plan);
    assert!((today - expected).abs() < 0.01, "{today} vs {expected}");

    // diff: the declared cost of each side.
    let head = tmp.path().join("head.toml");
    std::fs::write(&head, block_plan(Some(168), 1000.0)).expect("plan");
    let out = common::gpuplan(&cache)
        .args(["diff", "--format", "json"])
        .arg(&plan)
        .arg(&head)
        .output()
        .expect("runs");
    let d = json(&out);
    let base = d["base"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("base");
    let after = d["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("head");
    assert!((base - expected).abs() < 0.01, "{d}");
    assert!(
        (after - expected / 2.0).abs() < 0.01,
        "a 7-day block costs half: {d}"
    );
}

#[test]
fn a_length_ec2_does_not_sell_is_refused_and_a_block_without_one_is_costed_for_the_month() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    cache_with_block_price(&cache, 31.464);
    let plan = tmp.path().join("block.toml");
    std::fs::write(&plan, block_plan(Some(100), 1e9)).expect("plan");
    let out = common::gpuplan(&cache)
        .arg("check")
        .arg(&plan)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`block_hours = 100` is not a Capacity Block length"),
        "{err}"
    );
    assert!(err.contains("block.toml:25:15"), "located: {err}");

    std::fs::write(&plan, block_plan(None, 1e9)).expect("plan");
    // Without `block_hours` the block is costed for the plan's month (730 hours).
    let today = today_cost(&cache, &plan);
    assert!((today - 31.464 * 4.0 * 730.0).abs() < 0.01, "{today}");
}

#[test]
fn a_reserved_pool_is_costed_at_its_offline_reserved_rate_and_an_unknown_one_says_so() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    let plan = tmp.path().join("rsv.toml");
    let text = |capacity: &str| {
        format!(
            "version = 1\n\n[plan]\nname = \"rsv\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
             [[workload]]\nname = \"chat\"\nteam = \"apps\"\nkind = \"inference\"\nreplicas = 4\ngpus = 8\nskus = [\"p5.48xlarge\"]\n\n\
             [[pool]]\nname = \"serve\"\nsku = \"p5.48xlarge\"\nregion = \"us-east-1\"\nnodes = 4\ncapacity = \"{capacity}\"\nworkloads = [\"chat\"]\n"
        )
    };
    // 3-year standard no-upfront RI, effective $23.77728 an hour (2025-11-30 snapshot).
    std::fs::write(&plan, text("reserved-3y")).expect("plan");
    let today = today_cost(&cache, &plan);
    let expected = 4.0 * 23.77728 * 730.0;
    assert!((today - expected).abs() < 0.01, "{today} vs {expected}");
    let head = tmp.path().join("head.toml");
    std::fs::write(&head, text("on-demand")).expect("plan");
    let out = common::gpuplan(&cache)
        .args(["diff", "--format", "json"])
        .arg(&plan)
        .arg(&head)
        .output()
        .expect("runs");
    let d = json(&out);
    let base = d["base"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("base");
    let after = d["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("head");
    assert!((base - expected).abs() < 0.01, "{d}");
    assert!((after - 4.0 * 55.04 * 730.0).abs() < 0.01, "{d}");

    // p5en sells no Reserved Instance: the pool is costed at on-demand and the caveat says
    // the reserved price is unknown, never a saving.
    std::fs::write(
        &plan,
        text("reserved-1y").replace("p5.48xlarge", "p5en.48xlarge"),
    )
    .expect("plan");
    let out = common::gpuplan(&cache)
        .args(["recommend", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("runs");
    let rec = json(&out);
    let today = rec["comparison"]["today_monthly_cost_usd"]
        .as_f64()
        .expect("today");
    assert!((today - 4.0 * 63.296 * 730.0).abs() < 0.01, "{rec}");
    assert!(rec.to_string().contains("reserved price unknown"), "{rec}");
}

/// With a block price known (a refresh read an offering), recommend offers a Capacity Block
/// to a gang that runs part of the month, with its arithmetic; without one it never does.
#[test]
fn recommend_offers_a_capacity_block_only_where_its_price_is_known() {
    let tmp = tempfile::tempdir().expect("tmp");
    let plan = tmp.path().join("gang.toml");
    std::fs::write(
        &plan,
        "version = 1\n\n[plan]\nname = \"gang\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
         [[workload]]\nname = \"pretrain\"\nteam = \"f\"\nkind = \"training\"\nnodes = 4\ngpus = 8\nskus = [\"p5.48xlarge\"]\ncheckpoint_minutes = 60\nhours_per_month = 336\n",
    )
    .expect("plan");
    let pool = |cache: &Path| {
        let out = common::gpuplan(cache)
            .args(["recommend", "--format", "json"])
            .arg(&plan)
            .output()
            .expect("runs");
        json(&out)["pools"][0].clone()
    };
    // No block price offline: the gang stays on-demand, and no block is priced.
    let none = pool(&tmp.path().join("no-cache"));
    assert_eq!(none["capacity"], "on-demand", "{none}");
    // $31.464 an instance-hour against $55.04 on-demand: 4 x 336 x 31.464 = $42,287.62.
    let cache = tmp.path().join("cache");
    cache_with_block_price(&cache, 31.464);
    let p = pool(&cache);
    assert_eq!(p["capacity"], "capacity-block", "{p}");
    let cost = p["monthly_cost_usd"].as_f64().expect("cost");
    assert!((cost - 4.0 * 336.0 * 31.464).abs() < 0.01, "{cost}");
    let why = p["why"].as_str().expect("why");
    assert!(
        why.to_string()
            .contains("4 node(s) x 336 h x $31.464/h = $42,287.62"),
        "{why}"
    );
    // A block dearer than on-demand is not taken.
    let dear = tmp.path().join("dear");
    cache_with_block_price(&dear, 60.0);
    assert_eq!(pool(&dear)["capacity"], "on-demand");
}

/// A 16-node p5 gang running `work` hours a month, in a declared block of `block` hours (or
/// left to the recommender when `None`).
fn gang_plan(work: u32, block: Option<u32>) -> String {
    let pool = block.map_or(String::new(), |h| {
        format!("\n[[pool]]\nname = \"pretrain-block\"\nsku = \"p5.48xlarge\"\nregion = \"us-east-1\"\nnodes = 16\ncapacity = \"capacity-block\"\nblock_hours = {h}\nworkloads = [\"pretrain\"]\n")
    });
    format!(
        "version = 1\n\n[plan]\nname = \"gang\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n\
         [[workload]]\nname = \"pretrain\"\nteam = \"f\"\nkind = \"training\"\nnodes = 16\ngpus = 8\nskus = [\"p5.48xlarge\"]\ncheckpoint_minutes = 60\nhours_per_month = {work}\n{pool}"
    )
}

/// Issue 57: EC2 sells Capacity Blocks in 1-day steps up to 14 days and 7-day steps up to
/// 182 days. 300 hours of gang work are priced as the 312-hour block EC2 sells, not a
/// 300-hour one nobody can buy, and `--write-plan` keeps the length.
#[test]
fn a_recommended_block_is_a_length_ec2_sells_and_the_written_plan_keeps_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    cache_with_block_price(&cache, 31.464);
    let plan = tmp.path().join("gang.toml");
    std::fs::write(&plan, gang_plan(300, None)).expect("plan");
    let out = common::gpuplan(&cache)
        .args(["recommend", "--format", "json"])
        .arg(&plan)
        .output()
        .expect("runs");
    let p = json(&out)["pools"][0].clone();
    assert_eq!(p["capacity"], "capacity-block", "{p}");
    assert_eq!(p["block_hours"], 312.0, "{p}");
    // 16 x 312 x $31.464 = $157,068.29
    assert_eq!(p["monthly_cost_usd"], 157_068.29, "{p}");
    assert!(
        p["why"]
            .as_str()
            .expect("why")
            .contains("16 node(s) x 312 h x $31.464/h = $157,068.29 a month (the shortest block EC2 sells for the gang's 300 h"),
        "{p}"
    );
    let written = tmp.path().join("written.toml");
    common::ok(
        common::gpuplan(&cache)
            .args(["recommend", "--write-plan"])
            .arg(&written)
            .arg(&plan)
            .output()
            .expect("runs"),
    );
    let text = std::fs::read_to_string(&written).expect("written");
    assert!(text.contains("block_hours = 312"), "{text}");
    // The written plan checks clean of the block rules and costs the same block.
    let out = common::gpuplan(&cache)
        .args(["check", "--format", "json"])
        .arg(&written)
        .output()
        .expect("runs");
    let v = json(&out);
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(
        !rules.contains(&"GP023") && !rules.contains(&"GP036"),
        "{v}"
    );
    assert!((today_cost(&cache, &written) - 157_068.29).abs() < 0.01);
}

/// Issue 57: GP023 judges a block over the hours its work runs inside it. The 312-hour block
/// is the shortest sold for 300 hours (its 12 idle hours cannot be bought away: silent); a
/// 336-hour one buys 576 idle node-hours; a 336-hour block for 400 hours of work is GP036.
#[test]
fn a_block_is_judged_over_the_hours_its_work_runs_inside_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    cache_with_block_price(&cache, 31.464);
    let findings = |work: u32, block: u32| {
        let plan = tmp.path().join(format!("b{work}-{block}.toml"));
        std::fs::write(&plan, gang_plan(work, Some(block))).expect("plan");
        let out = common::gpuplan(&cache)
            .args(["check", "--format", "json"])
            .arg(&plan)
            .output()
            .expect("runs");
        json(&out)["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| matches!(f["rule"].as_str(), Some("GP023" | "GP036")))
            .map(|f| format!("{}: {}", f["rule"], f["message"]))
            .collect::<Vec<String>>()
    };
    assert_eq!(findings(300, 312), Vec::<String>::new());
    let longer = findings(300, 336);
    assert_eq!(longer.len(), 1, "{longer:?}");
    // 16 x 336 - 16 x 300 = 576 node-hours x $31.464 = $18,123.26
    assert!(
        longer[0].contains("GP023")
            && longer[0].contains("576 node-hours idle, $18,123.26 at $31.464/h"),
        "{longer:?}"
    );
    let shorter = findings(400, 336);
    assert_eq!(shorter.len(), 1, "{shorter:?}");
    assert!(
        shorter[0].contains("GP036")
            && shorter[0].contains("64 hours of its work fall outside the block"),
        "{shorter:?}"
    );
}

/// Issue 57: offline a declared Capacity Block's price is unknown. `diff` does not cost it at
/// the on-demand stand-in: it leaves it out of the declared figures and says so.
#[test]
fn an_offline_block_is_said_to_be_unpriced_in_diff_not_costed_at_on_demand() {
    let tmp = tempfile::tempdir().expect("tmp");
    let offline = tmp.path().join("no-cache");
    let (base, head) = (tmp.path().join("base.toml"), tmp.path().join("head.toml"));
    std::fs::write(&base, block_plan(Some(168), 1e9)).expect("plan");
    std::fs::write(&head, block_plan(Some(336), 1e9)).expect("plan");
    let out = common::gpuplan(&offline)
        .args(["diff", "--format", "json"])
        .arg(&base)
        .arg(&head)
        .output()
        .expect("runs");
    let d = json(&out);
    assert_eq!(d["head"]["declared_unpriced"][0], "pretrain-block", "{d:#}");
    assert_eq!(d["head"]["declared_monthly_cost_usd"], 0.0, "{d:#}");
    let out = common::gpuplan(&offline)
        .arg("diff")
        .arg(&base)
        .arg(&head)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not counted in the declared cost: `pretrain-block`: Capacity Block price unknown offline"),
        "{text}"
    );
}

/// Issue 74 item 5: offline, a declared Capacity Block has no price. `render` printed it at the
/// on-demand stand-in ($34,344.96 for 2 x p5.48xlarge for 312 h) where `check` and `diff`
/// counted it $0 ("price unknown offline"), so a pull request adding it passed
/// `diff --guard declared --fail-on-increase 10%`, and turning an on-demand pool into a block
/// read -100%. Every command now says the price is unknown, and the guardrail fails closed.
#[test]
fn an_unpriced_block_is_said_unknown_everywhere_and_the_guardrail_fails_closed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("no-cache");
    let head = tmp.path().join("head.toml");
    let base = tmp.path().join("base.toml");
    let text = block_plan(Some(312), 1_000_000.0).replace(
        "checkpoint_minutes = 60\n",
        "checkpoint_minutes = 60\nhours_per_month = 312\n",
    );
    std::fs::write(&head, &text).expect("head");
    std::fs::write(
        &base,
        text.replace("capacity = \"capacity-block\"\nblock_hours = 312\n", ""),
    )
    .expect("base");
    // render: no stand-in figure for the block, and the total says what it leaves out.
    let out = tmp.path().join("out");
    common::gpuplan(&cache)
        .args(["render", "--declared", "--out"])
        .arg(&out)
        .arg(&head)
        .assert()
        .success();
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("main.tf");
    let pool_line = tf
        .lines()
        .find(|l| l.starts_with("# pretrain-block:"))
        .expect("pool comment");
    assert!(
        pool_line.contains("Capacity Block price unknown offline") && !pool_line.contains('$'),
        "{pool_line}"
    );
    assert!(
        tf.lines()
            .next()
            .is_some_and(|l| l.contains("not counting `pretrain-block`")),
        "{tf}"
    );
    // diff: the guardrail on the declared pools fails closed, naming the pool.
    let d = common::gpuplan(&cache)
        .args(["diff", "--guard", "declared", "--fail-on-increase", "10%"])
        .arg(&base)
        .arg(&head)
        .output()
        .expect("diff");
    assert!(
        !d.status.success(),
        "{}",
        String::from_utf8_lossy(&d.stdout)
    );
    let err = String::from_utf8_lossy(&d.stderr);
    assert!(
        err.contains("`pretrain-block` with no price to hold to the limit"),
        "{err}"
    );
    // Issue 74 item 4: one wording wherever the price is unknown: render's files, diff and
    // recommend's comparison (and GP017/GP023, through the same function).
    let said = "Capacity Block price unknown offline (`catalog refresh --provider aws` reads DescribeCapacityBlockOfferings)";
    assert!(pool_line.contains(said), "{pool_line}");
    assert!(err.contains(said), "{err}");
    // recommend: the comparison with the declared pools names it the same way.
    let o = common::gpuplan(&cache)
        .arg("recommend")
        .arg(&head)
        .output()
        .expect("recommend");
    let rec = String::from_utf8_lossy(&o.stdout);
    assert!(rec.contains(said), "{rec}");
    let diff_md = common::gpuplan(&cache)
        .args(["diff", "--format", "markdown"])
        .arg(&base)
        .arg(&head)
        .output()
        .expect("diff");
    let diff_md = String::from_utf8_lossy(&diff_md.stdout).into_owned();
    assert!(diff_md.contains(said), "{diff_md}");
    // the same pool unpriced on both sides is no new purchase: nothing to fail on.
    let same = common::gpuplan(&cache)
        .args(["diff", "--guard", "declared", "--fail-on-increase", "10%"])
        .arg(&head)
        .arg(&head)
        .output()
        .expect("diff");
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stderr)
    );
    // with a block price known, the same change is priced and held to the limit as usual.
    let priced = tmp.path().join("cache");
    cache_with_block_price(&priced, 31.464);
    let d = common::gpuplan(&priced)
        .args([
            "diff",
            "--guard",
            "declared",
            "--fail-on-increase",
            "10%",
            "--format",
            "json",
        ])
        .arg(&base)
        .arg(&head)
        .output()
        .expect("diff");
    let v = json(&d);
    assert!(
        v["guardrail"]["unpriced"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{v:#}"
    );
}

/// Issue 74 item 5: an Azure pool moved to `reserved-3y` was priced at the on-demand rate with
/// no note in `diff` and `render`, where a Capacity Block carried one. Both now say the
/// reserved price is unknown offline and what stood in for it.
#[test]
fn a_reservation_priced_at_on_demand_says_so_in_diff_and_render() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("no-cache");
    let base = "version = 1\n[plan]\nname = \"az\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"chat\"\nteam = \"assistants\"\nkind = \"inference\"\nreplicas = 2\ngpus = 1\nskus = [\"Standard_NC24ads_A100_v4\"]\n\n[[pool]]\nname = \"chat\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = { min = 2, max = 2 }\nworkloads = [\"chat\"]\n";
    let head = base.replace(
        "nodes = { min = 2, max = 2 }\n",
        "nodes = { min = 2, max = 2 }\ncapacity = \"reserved-3y\"\n",
    );
    let (b, h) = (tmp.path().join("base.toml"), tmp.path().join("head.toml"));
    std::fs::write(&b, base).expect("base");
    std::fs::write(&h, head).expect("head");
    let d = common::gpuplan(&cache)
        .arg("diff")
        .arg(&b)
        .arg(&h)
        .output()
        .expect("diff");
    let text = String::from_utf8_lossy(&d.stdout);
    let said = "Azure reservation prices are unknown offline";
    assert!(text.contains(said), "{text}");
    let out = tmp.path().join("out");
    common::gpuplan(&cache)
        .args(["render", "--declared", "--out"])
        .arg(&out)
        .arg(&h)
        .assert()
        .success();
    let tf = std::fs::read_to_string(out.join("terraform/main.tf")).expect("main.tf");
    assert!(
        tf.lines()
            .any(|l| l.starts_with("# chat:") && l.contains(said)),
        "{tf}"
    );
}

/// Issue 74 item 3: a gang that runs all month was never offered a Capacity Block (they were
/// for part-month work only), though EC2 sells them in 7-day steps up to 182 days. With a
/// block price known and no reservation allowed, 16 p4d.24xlarge all month on a block
/// ($18.70/h) cost $218,416.00 against $256,465.26 on-demand; the written plan names a block
/// EC2 sells (840 h, a month of it paid) and is priced the same by `check`'s formula in `diff`.
#[test]
fn a_gang_that_runs_all_month_is_offered_a_capacity_block() {
    let tmp = tempfile::tempdir().expect("tmp");
    let cache = tmp.path().join("cache");
    common::refresh_cache(
        &cache,
        "aws/prices-live.csv",
        "aws",
        "EC2 DescribeCapacityBlockOfferings (test)",
        "armSkuName,armRegionName,kind,retailPrice,unitOfMeasure,captured,source\np4d.24xlarge,us-east-1,capacity-block,18.7,1 Hour,2026-12-01,test block offering\n",
    );
    let plan = tmp.path().join("gang.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"gang\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\nreservation_term = \"none\"\n\n[[workload]]\nname = \"pretrain\"\nteam = \"research\"\nkind = \"training\"\nnodes = 16\ngpus = 8\ncheckpoint_minutes = 60\nskus = [\"p4d.24xlarge\"]\n",
    )
    .expect("plan");
    let written = tmp.path().join("written.toml");
    let out = common::gpuplan(&cache)
        .args(["recommend", "--format", "json", "--write-plan"])
        .arg(&written)
        .arg(&plan)
        .output()
        .expect("recommend");
    let rec = json(&out);
    let pool = &rec["pools"][0];
    assert_eq!(pool["capacity"], "capacity-block", "{pool:#}");
    let cost = pool["monthly_cost_usd"].as_f64().expect("cost");
    assert!((cost - 16.0 * 18.7 * 730.0).abs() < 0.01, "{pool:#}");
    let text = std::fs::read_to_string(&written).expect("written");
    assert!(text.contains("block_hours = 840"), "{text}");
    // Issue 74 item 6: the block is a purchase line finance can file: 16 instances for the
    // 840 h sold, paid up front, in one zone, its whole price the commitment.
    let out_dir = tmp.path().join("out");
    common::gpuplan(&cache)
        .args(["--quiet", "render"])
        .arg(&plan)
        .arg("--out")
        .arg(&out_dir)
        .assert()
        .success();
    let list: serde_json::Value =
        crate::common::contract(std::fs::read(out_dir.join("purchases.json")).expect("purchases"))
            .expect("json");
    let line = &list["purchases"][0];
    assert_eq!(line["kind"], "capacity-block", "{list:#}");
    assert_eq!(line["count"], 16);
    assert_eq!(line["term_hours"].as_f64(), Some(840.0));
    assert!(line["payment"]
        .as_str()
        .is_some_and(|p| p.starts_with("all upfront")));
    assert!(line["scope"].as_str().is_some_and(|p| p.contains("zone")));
    assert!(
        (line["total_commitment_usd"].as_f64().expect("total") - 16.0 * 18.7 * 840.0).abs() < 0.01,
        "{line:#}"
    );
    let readme = std::fs::read_to_string(out_dir.join("README.md")).expect("README");
    assert!(readme.contains("Capacity Block, 840 h"), "{readme}");
    common::gpuplan(&cache)
        .arg("check")
        .arg(&written)
        .assert()
        .success();
    let d = common::gpuplan(&cache)
        .args(["diff", "--format", "json"])
        .arg(&plan)
        .arg(&written)
        .output()
        .expect("diff");
    let v = json(&d);
    let declared = v["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("declared");
    assert!((declared - cost).abs() < 0.01, "{v:#}");
}
