//! `catalog refresh --provider azure` against one local server that speaks the Azure wire
//! formats: the Entra ID token endpoint (client-secret credential through azure_identity's
//! chain), Retail Prices, compute usages and resource SKUs (azure_mgmt_compute), and Resource
//! Graph `SpotResources` (`$skipToken` paging). Faults leave the cache as it was; the secret
//! and the token never reach output or cache; a refreshed cache changes `check` and
//! `recommend`.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use assert_cmd::Command;
use common::mock::{Mock, Req, Resp};

const SUB: &str = "00000000-0000-0000-0000-0000000000aa";
const SECRET: &str = "client-secret-must-not-leak";
const TOKEN: &str = "eyJ0eXAi.access-token-must-not-leak";

fn gpuplan(cache: &Path, mock: &str) -> Command {
    let mut c = common::gpuplan(cache);
    c.env(
        "GPUPLAN_AZURE_PRICES_URL",
        format!("{mock}/api/retail/prices"),
    )
    .env("GPUPLAN_AZURE_MANAGEMENT_URL", mock)
    .env("AZURE_AUTHORITY_HOST", mock)
    .env("AZURE_TENANT_ID", "tenant-1")
    .env("AZURE_CLIENT_ID", "client-1")
    .env("AZURE_CLIENT_SECRET", SECRET)
    .env("AZURE_SUBSCRIPTION_ID", SUB)
    .env("NO_PROXY", "127.0.0.1")
    .env_remove("HTTP_PROXY")
    .env_remove("HTTPS_PROXY")
    .env_remove("MSI_ENDPOINT")
    .env_remove("IDENTITY_ENDPOINT")
    .env_remove("AZURE_FEDERATED_TOKEN_FILE");
    c
}

fn token() -> Resp {
    Resp::json(format!(
        "{{\"token_type\":\"Bearer\",\"expires_in\":3599,\"ext_expires_in\":3599,\"access_token\":\"{TOKEN}\"}}"
    ))
}

fn price_page() -> String {
    let item = |sku: &str, meter: &str, price: f64| {
        format!("{{\"currencyCode\":\"USD\",\"retailPrice\":{price},\"armRegionName\":\"eastus\",\"meterName\":\"{meter}\",\"skuName\":\"{meter}\",\"productName\":\"Virtual Machines N Series\",\"serviceName\":\"Virtual Machines\",\"unitOfMeasure\":\"1 Hour\",\"type\":\"Consumption\",\"armSkuName\":\"{sku}\"}}")
    };
    format!(
        "{{\"Items\":[{},{}],\"NextPageLink\":null}}",
        item("Standard_NC4as_T4_v3", "NC4as T4 v3", 0.526),
        item("Standard_NC8as_T4_v3", "NC8as T4 v3", 0.752)
    )
}

fn usage(family: &str, used: i32, limit: i64) -> String {
    format!("{{\"unit\":\"Count\",\"currentValue\":{used},\"limit\":{limit},\"name\":{{\"value\":\"{family}\",\"localizedValue\":\"{family} vCPUs\"}}}}")
}

fn usages_page(first: bool) -> String {
    if first {
        format!(
            "{{\"value\":[{},{}],\"nextLink\":\"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/usages?api-version=2024-07-01&$skiptoken=p2\"}}",
            usage("cores", 10, 350),
            usage("standardNCASv3_T4Family", 4, 8)
        )
    } else {
        format!(
            "{{\"value\":[{},{}]}}",
            usage("lowPriorityCores", 0, 24),
            usage("standardNCADSA100v4Family", 0, 192)
        )
    }
}

fn skus_page() -> String {
    // NC4as_T4_v3 is closed to this subscription; ND96isr has zone 3 closed; a disk SKU and
    // an unknown field are ignored.
    r#"{"value":[
      {"resourceType":"disks","name":"Premium_LRS","locations":["eastus"]},
      {"resourceType":"virtualMachines","name":"Standard_NC4as_T4_v3","tier":"Standard","size":"NC4as_T4_v3","family":"standardNCASv3_T4Family","locations":["eastus"],"locationInfo":[{"location":"eastus","zones":["1","2","3"]}],
       "capabilities":[{"name":"GPUs","value":"1"}],"futureField":{"x":1},
       "restrictions":[{"type":"Location","values":["eastus"],"restrictionInfo":{"locations":["eastus"]},"reasonCode":"NotAvailableForSubscription"}]},
      {"resourceType":"virtualMachines","name":"Standard_NC8as_T4_v3","locations":["eastus"],"locationInfo":[{"location":"eastus","zones":["2","1"]}],"restrictions":[]},
      {"resourceType":"virtualMachines","name":"Standard_ND96isr_H100_v5","locations":["eastus"],"locationInfo":[{"location":"eastus","zones":["1","2","3"]}],
       "restrictions":[{"type":"Zone","values":["eastus"],"restrictionInfo":{"locations":["eastus"],"zones":["3"]},"reasonCode":"NotAvailableForSubscription"}]}
    ],"nextLink":null}"#
        .to_owned()
}

fn graph(body: &str, earlier: &[Req]) -> Resp {
    let v: serde_json::Value = serde_json::from_str(body).expect("graph body is JSON");
    let q = v["query"].as_str().unwrap_or("");
    let skip = v["options"]["$skipToken"].as_str();
    assert_eq!(v["options"]["resultFormat"], "objectArray");
    assert_eq!(v["subscriptions"][0], SUB);
    let _ = earlier;
    if q.contains("skuspotevictionrate") {
        match skip {
            None => Resp::json(
                r#"{"totalRecords":2,"count":1,"resultTruncated":"false","facets":[],"$skipToken":"page-2",
                    "data":[{"skuName":"standard_nd96isr_h100_v5","location":"eastus","spotEvictionRate":"20+"}]}"#,
            ),
            Some("page-2") => Resp::json(
                r#"{"totalRecords":2,"count":1,"resultTruncated":"false",
                    "data":[{"skuName":"standard_nc24ads_a100_v4","location":"eastus","spotEvictionRate":"0-5%"}]}"#,
            ),
            Some(other) => panic!("unexpected skip token {other}"),
        }
    } else {
        assert!(q.contains("skuspotpricehistory"), "{q}");
        Resp::json(
            r#"{"totalRecords":1,"count":1,"resultTruncated":"false",
                "data":[{"skuName":"standard_nd96isr_h100_v5","osType":"linux","location":"eastus","latestSpotPriceUSD":17.5}]}"#,
        )
    }
}

/// The healthy server: every endpoint answers.
fn healthy(r: &Req, earlier: &[Req]) -> Resp {
    let t = r.target.as_str();
    if t.contains("/oauth2/v2.0/token") {
        assert!(r.body.contains("grant_type=client_credentials"));
        return token();
    }
    if t.starts_with("/api/retail/prices") {
        return Resp::json(price_page());
    }
    // Management calls carry the bearer token.
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str()),
        "{t}"
    );
    if t.contains("/usages?") {
        return Resp::json(usages_page(!t.contains("skiptoken=p2")));
    }
    if t.contains("/Microsoft.Compute/skus?") {
        return Resp::json(skus_page());
    }
    if t.starts_with("/providers/Microsoft.ResourceGraph/resources") {
        return graph(&r.body, earlier);
    }
    Resp::new(404, "application/json", "{}")
}

fn refresh(cache: &Path, mock: &Mock) -> assert_cmd::assert::Assert {
    gpuplan(cache, &mock.url)
        .args([
            "catalog",
            "refresh",
            "--provider",
            "azure",
            "--region",
            "eastus",
            "--timeout",
            "3",
        ])
        .assert()
}

#[test]
fn a_full_refresh_counts_its_requests_writes_every_file_and_changes_the_answers() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(healthy);
    // Before: the minimal plan runs on NC4as_T4_v3, and the inference plan passes check.
    let sku = |cache: &Path| {
        let out = gpuplan(cache, &mock.url)
            .args(["recommend", "--format", "json", "plans/minimal.toml"])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        v["pools"][0]["sku"].as_str().expect("sku").to_owned()
    };
    assert_eq!(sku(&cache), "Standard_NC4as_T4_v3");
    gpuplan(&cache, &mock.url)
        .args(["check", "plans/azure-inference.toml"])
        .assert()
        .code(0);

    let out = refresh(&cache, &mock).code(0).get_output().clone();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Requests: one token (cached for every call after), one price query, two usage pages,
    // one SKU listing, two eviction pages and one spot price query. No crawl.
    let reqs = mock.requests();
    let n = |f: &dyn Fn(&Req) -> bool| reqs.iter().filter(|r| f(r)).count();
    assert_eq!(
        n(&|r| r.target.contains("/oauth2/v2.0/token")),
        1,
        "{reqs:#?}"
    );
    assert_eq!(n(&|r| r.target.starts_with("/api/retail/prices")), 1);
    assert_eq!(n(&|r| r.target.contains("/usages?")), 2);
    assert_eq!(n(&|r| r.target.contains("/Microsoft.Compute/skus?")), 1);
    assert_eq!(n(&|r| r.target.contains("Microsoft.ResourceGraph")), 3);
    assert_eq!(reqs.len(), 8);
    // The SKU listing is filtered in the service to the region.
    let skus = reqs
        .iter()
        .find(|r| r.target.contains("/Microsoft.Compute/skus?"))
        .expect("skus request");
    assert!(
        skus.target.contains("filter=location%20eq%20%27eastus%27")
            || skus.target.contains("filter=location+eq+%27eastus%27"),
        "{}",
        skus.target
    );

    let cached = common::tree(&cache);
    let get = |name: &str| {
        cached
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("{name} not in the cache: {cached:#?}"))
    };
    let quota = get("azure/quota.csv");
    assert!(
        quota.contains("eastus,standardNCASv3_T4Family,8,4,2026-12-02"),
        "{quota}"
    );
    assert!(quota.contains("eastus,lowPriorityCores,24,0,"), "{quota}");
    let avail = get("azure/availability.csv");
    assert!(
        avail.contains("Standard_NC4as_T4_v3,eastus,1 2 3,NotAvailableForSubscription,"),
        "{avail}"
    );
    assert!(
        avail.contains("Standard_NC8as_T4_v3,eastus,1 2,,"),
        "{avail}"
    );
    // Zone 3 is closed to the subscription; the SKU stays deployable in 1 and 2.
    assert!(
        avail.contains("Standard_ND96isr_H100_v5,eastus,1 2,,"),
        "{avail}"
    );
    // Catalog SKUs the region does not list are not offered there.
    assert!(
        avail.contains("Standard_NC40ads_H100_v5,eastus,,not offered,"),
        "{avail}"
    );
    let ev = get("azure/spot-eviction.csv");
    assert!(
        ev.contains("Standard_ND96isr_H100_v5,eastus,20+,17.5,"),
        "{ev}"
    );
    assert!(ev.contains("Standard_NC24ads_A100_v4,eastus,0-5,,"), "{ev}");
    let sources = get("sources.toml");
    for f in [
        "azure/quota.csv",
        "azure/availability.csv",
        "azure/spot-eviction.csv",
        "azure/prices-retail.csv",
    ] {
        assert!(sources.contains(&format!("path = \"{f}\"")), "{sources}");
    }
    // Neither the client secret nor the token is in the output or the cache.
    for (p, t) in cached.iter().chain([(String::from("output"), text)].iter()) {
        assert!(
            !t.contains(SECRET) && !t.contains(TOKEN),
            "{p} leaks a credential"
        );
    }

    // After: NC4as_T4_v3 is not deployable, so the recommendation moves; the quota read from
    // the provider makes `check` flag the T4 and spot pools (GP014).
    assert_eq!(sku(&cache), "Standard_NC8as_T4_v3");
    let check = gpuplan(&cache, &mock.url)
        .args(["check", "--format", "json", "plans/azure-inference.toml"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&check).expect("json");
    let gp014: Vec<&str> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "GP014")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(gp014.len(), 2, "{gp014:#?}");
    assert!(gp014.iter().any(|m| m.contains("`standardNCASv3_T4Family`")
        && m.contains("above the quota of 8 read from the provider")
        && m.contains("4 in use then")));
    assert!(gp014
        .iter()
        .any(|m| m.contains("`lowPriorityCores`") && m.contains("quota of 24")));
    // The plan's own [[quota]] for the A100 family (192) still wins over the provider's.

    // The catalog shows the band, the zones and the restriction.
    let show = gpuplan(&cache, &mock.url)
        .args([
            "catalog",
            "--sku",
            "Standard_ND96isr_H100_v5",
            "--format",
            "json",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&show).expect("json");
    let east = v["regions"]
        .as_array()
        .expect("regions")
        .iter()
        .find(|r| r["region"] == "eastus")
        .expect("eastus")
        .clone();
    assert_eq!(east["spot_band"], "20+");
    assert_eq!(east["spot_usd_per_hour"], 17.5);
    assert_eq!(east["zones"], serde_json::json!(["1", "2"]));
}

/// Run a refresh against `handler` over a cache that already holds a healthy refresh; the
/// refresh must fail with `expect` in its message and leave every cached file as it was.
fn fails_and_keeps(handler: impl Fn(&Req, &[Req]) -> Resp + Send + Sync + 'static, expect: &str) {
    common::fails_and_keeps(
        refresh,
        Mock::start(healthy),
        Mock::start(handler),
        expect,
        &[SECRET, TOKEN],
    );
}

#[test]
fn a_429_with_retry_after_is_waited_out() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(|r, earlier| {
        let first_usage =
            r.target.contains("/usages?") && !earlier.iter().any(|e| e.target.contains("/usages?"));
        if first_usage {
            return Resp::new(
                429,
                "application/json",
                "{\"error\":{\"code\":\"TooManyRequests\"}}",
            )
            .header("Retry-After", "1");
        }
        healthy(r, earlier)
    });
    let t = std::time::Instant::now();
    refresh(&cache, &mock).code(0);
    assert!(
        t.elapsed() >= Duration::from_secs(1),
        "Retry-After not honoured"
    );
    assert_eq!(mock.count(|r| r.target.contains("/usages?")), 3);
}

#[test]
fn server_errors_are_retried_then_reported() {
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let h = Arc::clone(&hits);
    fails_and_keeps(
        move |r, earlier| {
            if r.target.contains("/Microsoft.Compute/skus?") {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return Resp::new(
                    503,
                    "application/json",
                    "{\"error\":{\"code\":\"ServerBusy\"}}",
                );
            }
            healthy(r, earlier)
        },
        "resource SKUs for eastus: HTTP 503 (ServerBusy)",
    );
    // One try and two retries.
    assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 3);
}

#[test]
fn endless_paging_is_stopped() {
    fails_and_keeps(
        |r, earlier| {
            if r.target.contains("/usages?") {
                let n = earlier.len();
                return Resp::json(format!(
                    "{{\"value\":[],\"nextLink\":\"/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/usages?api-version=2024-07-01&$skiptoken=n{n}\"}}"
                ));
            }
            healthy(r, earlier)
        },
        "compute usages for eastus: more than 50 pages",
    );
    fails_and_keeps(
        |r, earlier| {
            if r.target.starts_with("/providers/Microsoft.ResourceGraph") {
                return Resp::json(
                    r#"{"totalRecords":9,"count":0,"resultTruncated":"false","$skipToken":"again","data":[]}"#,
                );
            }
            healthy(r, earlier)
        },
        "the same $skipToken came back twice",
    );
}

#[test]
fn bad_bodies_are_clear_errors() {
    fails_and_keeps(
        |r, earlier| {
            if r.target.contains("/usages?") {
                let mut x = Resp::json(usages_page(true));
                x.truncate = true;
                return x;
            }
            healthy(r, earlier)
        },
        "compute usages for eastus",
    );
    // The table result format is not what was asked for.
    fails_and_keeps(
        |r, earlier| {
            if r.target.starts_with("/providers/Microsoft.ResourceGraph") {
                return Resp::json(
                    r#"{"totalRecords":1,"count":1,"resultTruncated":"false","data":{"columns":[],"rows":[]}}"#,
                );
            }
            healthy(r, earlier)
        },
        "`data` is an object (a table?), expected an array of objects",
    );
    // A page without the fields the API requires.
    fails_and_keeps(
        |r, earlier| {
            if r.target.starts_with("/providers/Microsoft.ResourceGraph") {
                return Resp::json(r#"{"data":[]}"#);
            }
            healthy(r, earlier)
        },
        "missing field `totalRecords`",
    );
    fails_and_keeps(
        |r, earlier| {
            if r.target.starts_with("/providers/Microsoft.ResourceGraph") {
                return Resp::json(
                    r#"{"totalRecords":1,"count":1,"resultTruncated":"false","data":[{"skuName":"standard_nd96isr_h100_v5","location":"eastus","spotEvictionRate":"very high"}]}"#,
                );
            }
            healthy(r, earlier)
        },
        "`very high`, expected 0-5, 5-10, 10-15, 15-20 or 20+",
    );
}

#[test]
fn refused_credentials_and_a_slow_server_are_clear_errors() {
    fails_and_keeps(
        |r, earlier| {
            if r.target.contains("/oauth2/v2.0/token") {
                return Resp::new(
                    401,
                    "application/json",
                    "{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: Invalid client secret provided.\"}",
                );
            }
            healthy(r, earlier)
        },
        "AZURE_CLIENT_SECRET",
    );
    fails_and_keeps(
        |r, earlier| {
            if r.target.contains("/Microsoft.Compute/skus?") {
                let mut x = Resp::json(skus_page());
                x.delay = Some(Duration::from_secs(6));
                return x;
            }
            healthy(r, earlier)
        },
        "resource SKUs for eastus: no answer within 3 s",
    );
}

#[test]
fn quota_without_a_subscription_is_refused_before_any_request() {
    let dir = tempfile::tempdir().expect("tmp");
    let mock = Mock::start(healthy);
    let out = gpuplan(&dir.path().join("cache"), &mock.url)
        .env_remove("AZURE_SUBSCRIPTION_ID")
        .args([
            "catalog",
            "refresh",
            "--provider",
            "azure",
            "--region",
            "eastus",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--subscription"));
    assert!(mock.requests().is_empty());
    // Prices alone need neither credentials nor a subscription.
    gpuplan(&dir.path().join("cache"), &mock.url)
        .env_remove("AZURE_SUBSCRIPTION_ID")
        .env_remove("AZURE_CLIENT_SECRET")
        .args([
            "catalog",
            "refresh",
            "--provider",
            "azure",
            "--region",
            "eastus",
            "--only",
            "prices",
        ])
        .assert()
        .code(0);
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn the_plan_names_the_subscription_when_no_flag_or_variable_does() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("plan")
            .replace(
                "regions = [\"eastus\"]",
                &format!("regions = [\"eastus\"]\nsubscription = \"{SUB}\""),
            );
    std::fs::write(&plan, text).expect("write");
    let mock = Mock::start(healthy);
    gpuplan(&dir.path().join("cache"), &mock.url)
        .env_remove("AZURE_SUBSCRIPTION_ID")
        .args([
            "catalog",
            "refresh",
            "--provider",
            "azure",
            "--only",
            "quota",
            "--plan",
        ])
        .arg(&plan)
        .assert()
        .code(0);
    assert_eq!(
        mock.count(|r| r.target.starts_with(&format!(
            "/subscriptions/{SUB}/providers/Microsoft.Compute/locations/eastus/usages"
        ))),
        2
    );
}
