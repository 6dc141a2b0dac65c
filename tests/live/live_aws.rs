//! `catalog refresh --provider aws` against one local server speaking the AWS wire formats
//! the SDK uses: EC2 Query (form body, XML answers, `nextToken` paging), Service Quotas and
//! the Price List Query API (awsJson 1.1, `X-Amz-Target`), and the public Spot Instance
//! Advisor file. Static test credentials through the SDK's default chain; endpoints through
//! `AWS_ENDPOINT_URL` and `GPUPLAN_AWS_PRICING_URL`.

use crate::common;

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use common::mock::{Mock, Req, Resp};

const KEY: &str = "AKIDTESTKEY0000000";
const SECRET: &str = "aws-secret-must-not-leak";

fn gpuplan(cache: &Path, mock: &str) -> Command {
    let mut c = common::gpuplan(cache);
    c.env("AWS_ACCESS_KEY_ID", KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/aws-credentials",
        )
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ENDPOINT_URL", mock)
        .env("GPUPLAN_AWS_PRICING_URL", mock)
        .env(
            "GPUPLAN_AWS_SPOT_ADVISOR_URL",
            format!("{mock}/spot-advisor-data.json"),
        )
        .env("NO_PROXY", "127.0.0.1")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY");
    c
}

/// The region a request was signed for (SigV4 credential scope).
fn region(r: &Req) -> String {
    r.header("authorization")
        .and_then(|a| a.split("Credential=").nth(1))
        .and_then(|c| c.split('/').nth(2))
        .unwrap_or("")
        .to_owned()
}

/// Form values `prefix.1`, `prefix.2`, … of a Query request.
fn list(r: &Req, prefix: &str) -> Vec<String> {
    (1..)
        .map_while(|i| r.form(&format!("{prefix}.{i}")))
        .collect()
}

const NS: &str = "http://ec2.amazonaws.com/doc/2016-11-15/";

fn ec2_error(code: &str) -> Resp {
    Resp::new(
        503,
        "text/xml;charset=UTF-8",
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error><Code>{code}</Code><Message>Request limit exceeded.</Message></Error></Errors><RequestID>r-1</RequestID></Response>"),
    )
}

fn spot_history(r: &Req) -> Resp {
    let reg = region(r);
    assert_eq!(
        r.form("ProductDescription.1").as_deref(),
        Some("Linux/UNIX")
    );
    assert!(
        r.form("StartTime").is_some(),
        "asks for the price in force now"
    );
    let item = |ty: &str, zone: &str, price: &str| {
        format!("<item><instanceType>{ty}</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>{price}</spotPrice><timestamp>2026-12-02T08:00:00.000Z</timestamp><availabilityZone>{reg}{zone}</availabilityZone></item>")
    };
    let (items, next) = if r.form("NextToken").is_none() {
        (
            item("g6e.xlarge", "a", "0.401000") + &item("g6e.xlarge", "b", "0.380000"),
            "<nextToken>page-2</nextToken>",
        )
    } else {
        // An older price for zone a comes after the newest one and is ignored.
        (
            item("g6e.xlarge", "a", "0.100000") + &item("p5.48xlarge", "c", "21.5"),
            "<nextToken/>",
        )
    };
    Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeSpotPriceHistoryResponse xmlns=\"{NS}\"><requestId>r-2</requestId><spotPriceHistorySet>{items}</spotPriceHistorySet>{next}</DescribeSpotPriceHistoryResponse>"))
}

fn offerings(r: &Req) -> Resp {
    let reg = region(r);
    assert_eq!(r.form("LocationType").as_deref(), Some("availability-zone"));
    assert_eq!(r.form("Filter.1.Name").as_deref(), Some("instance-type"));
    let items: String = list(r, "Filter.1.Value")
        .iter()
        // g4dn.xlarge is not offered in us-east-1 (for this test's account).
        .filter(|t| !(reg == "us-east-1" && *t == "g4dn.xlarge"))
        .flat_map(|t| {
            ["a", "b"].map(|z| format!("<item><instanceType>{t}</instanceType><locationType>availability-zone</locationType><location>{reg}{z}</location></item>"))
        })
        .collect();
    Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeInstanceTypeOfferingsResponse xmlns=\"{NS}\"><requestId>r-3</requestId><instanceTypeOfferingSet>{items}</instanceTypeOfferingSet><nextToken/></DescribeInstanceTypeOfferingsResponse>"))
}

fn instance_types(r: &Req) -> Resp {
    let asked = list(r, "InstanceType");
    assert!(asked.len() <= 100);
    let mut items = String::new();
    if asked.iter().any(|t| t == "p5.48xlarge") {
        items.push_str("<item><instanceType>p5.48xlarge</instanceType><currentGeneration>true</currentGeneration><vCpuInfo><defaultVCpus>192</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>2097152</sizeInMiB></memoryInfo><networkInfo><efaSupported>true</efaSupported><maximumNetworkCards>32</maximumNetworkCards></networkInfo><gpuInfo><gpus><item><name>H100</name><manufacturer>NVIDIA</manufacturer><count>8</count><memoryInfo><sizeInMiB>81920</sizeInMiB></memoryInfo></item></gpus><totalGpuMemoryInMiB>655360</totalGpuMemoryInMiB></gpuInfo><someFutureField>x</someFutureField></item>");
    }
    if asked.iter().any(|t| t == "g6e.xlarge") {
        items.push_str("<item><instanceType>g6e.xlarge</instanceType><vCpuInfo><defaultVCpus>4</defaultVCpus></vCpuInfo><memoryInfo><sizeInMiB>32768</sizeInMiB></memoryInfo><networkInfo><efaSupported>false</efaSupported></networkInfo><gpuInfo><gpus><item><name>L40S</name><manufacturer>NVIDIA</manufacturer><count>1</count><memoryInfo><sizeInMiB>45776</sizeInMiB></memoryInfo></item></gpus></gpuInfo></item>");
    }
    Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeInstanceTypesResponse xmlns=\"{NS}\"><requestId>r-4</requestId><instanceTypeSet>{items}</instanceTypeSet></DescribeInstanceTypesResponse>"))
}

fn capacity_blocks(r: &Req) -> Resp {
    assert_eq!(r.form("InstanceCount").as_deref(), Some("1"));
    assert_eq!(r.form("CapacityDurationHours").as_deref(), Some("24"));
    let reg = region(r);
    let offer = |fee: &str, zone: &str| {
        format!("<item><capacityBlockOfferingId>cbr-{zone}</capacityBlockOfferingId><instanceType>p5.48xlarge</instanceType><availabilityZone>{reg}{zone}</availabilityZone><instanceCount>1</instanceCount><startDate>2026-12-09T11:30:00.000Z</startDate><endDate>2026-12-10T11:30:00.000Z</endDate><capacityBlockDurationHours>24</capacityBlockDurationHours><upfrontFee>{fee}</upfrontFee><currencyCode>USD</currencyCode><tenancy>default</tenancy></item>")
    };
    let items = if r.form("InstanceType").as_deref() == Some("p5.48xlarge") && reg == "us-east-1" {
        offer("900.00", "a") + &offer("755.1360", "b")
    } else {
        String::new()
    };
    Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeCapacityBlockOfferingsResponse xmlns=\"{NS}\"><requestId>r-5</requestId><capacityBlockOfferingSet>{items}</capacityBlockOfferingSet></DescribeCapacityBlockOfferingsResponse>"))
}

fn placement(r: &Req) -> Resp {
    let types = list(r, "InstanceType");
    assert!(types.len() >= 3, "{types:?}");
    assert_eq!(r.form("TargetCapacity").as_deref(), Some("1"));
    let items: String = list(r, "RegionName")
        .iter()
        .map(|reg| {
            let score = if reg == "us-west-2" { 9 } else { 3 };
            format!("<item><region>{reg}</region><score>{score}</score></item>")
        })
        .collect();
    Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><GetSpotPlacementScoresResponse xmlns=\"{NS}\"><requestId>r-6</requestId><spotPlacementScoreSet>{items}</spotPlacementScoreSet></GetSpotPlacementScoresResponse>"))
}

fn quota(r: &Req) -> Resp {
    let v: serde_json::Value = serde_json::from_str(&r.body).expect("json body");
    assert_eq!(v["ServiceCode"], "ec2");
    let code = v["QuotaCode"].as_str().expect("QuotaCode").to_owned();
    // The G and VT spot quota in us-west-2 is 8 vCPUs; everything else is generous.
    let value = if code == "L-3819A6DF" && region(r) == "us-west-2" {
        8.0
    } else {
        2000.0
    };
    Resp::new(
        200,
        "application/x-amz-json-1.1",
        format!("{{\"Quota\":{{\"ServiceCode\":\"ec2\",\"ServiceName\":\"Amazon Elastic Compute Cloud (Amazon EC2)\",\"QuotaArn\":\"arn:aws:servicequotas:{}::ec2/{code}\",\"QuotaCode\":\"{code}\",\"QuotaName\":\"quota {code}\",\"Value\":{value},\"Unit\":\"None\",\"Adjustable\":true,\"GlobalQuota\":false}}}}", region(r)),
    )
}

fn product(ty: &str, region: &str, on_demand: &str) -> String {
    let doc = serde_json::json!({
        "product": {"productFamily": "Compute instance", "attributes": {
            "instanceType": ty, "regionCode": region, "operatingSystem": "Linux",
            "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}, "sku": "SKU1"},
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {"SKU1.JRTCKXETXF": {"priceDimensions": {"SKU1.JRTCKXETXF.6YS6EN2CT7": {
                "unit": "Hrs", "pricePerUnit": {"USD": on_demand}, "description": "on demand"}},
                "termAttributes": {}}},
            "Reserved": {
                "SKU1.A": {"priceDimensions": {
                    "SKU1.A.1": {"unit": "Quantity", "pricePerUnit": {"USD": "2628"}},
                    "SKU1.A.2": {"unit": "Hrs", "pricePerUnit": {"USD": "0.0000000000"}}},
                    "termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "All Upfront"}},
                "SKU1.B": {"priceDimensions": {
                    "SKU1.B.1": {"unit": "Hrs", "pricePerUnit": {"USD": "0.35"}}},
                    "termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "No Upfront"}},
                "SKU1.C": {"priceDimensions": {
                    "SKU1.C.1": {"unit": "Hrs", "pricePerUnit": {"USD": "0.20"}}},
                    "termAttributes": {"LeaseContractLength": "1yr", "OfferingClass": "convertible", "PurchaseOption": "No Upfront"}}
            }
        },
        "version": "20261201", "publicationDate": "2026-12-01T00:00:00Z"
    });
    doc.to_string()
}

fn pricing(r: &Req) -> Resp {
    let v: serde_json::Value = serde_json::from_str(&r.body).expect("json body");
    assert_eq!(v["ServiceCode"], "AmazonEC2");
    let filters = v["Filters"].as_array().expect("filters");
    let value = |field: &str| {
        filters
            .iter()
            .find(|f| f["Field"] == field)
            .map(|f| {
                (
                    f["Type"].clone(),
                    f["Value"].as_str().unwrap_or("").to_owned(),
                )
            })
            .expect("filter")
    };
    let (_, region) = value("regionCode");
    let (ty, types) = value("instanceType");
    assert_eq!(ty, "ANY_OF");
    assert!(types.split(',').any(|t| t == "g4dn.xlarge"));
    // g6e.xlarge too: the figures plans/aws-training.toml's pools rely on all get today's
    // date, so GP022 (which dates each figure) has nothing left to flag.
    let list = [
        product("g4dn.xlarge", &region, "0.9000000000"),
        product("g6e.xlarge", &region, "1.8610000000"),
    ];
    Resp::new(
        200,
        "application/x-amz-json-1.1",
        serde_json::json!({"FormatVersion": "aws_v1", "PriceList": list}).to_string(),
    )
}

fn advisor() -> Resp {
    Resp::json(
        r#"{"global_rate":"<10%","ranges":[{"index":0,"label":"<5%","dots":0,"max":5},{"index":1,"label":"5-10%","dots":1,"max":11},{"index":2,"label":"10-15%","dots":2,"max":16},{"index":3,"label":"15-20%","dots":3,"max":22},{"index":4,"label":">20%","dots":4,"max":100}],
        "instance_types":{"g6e.xlarge":{"emr":false,"cores":4,"ram_gb":32.0},"m5.large":{"emr":true,"cores":2,"ram_gb":8.0}},
        "spot_advisor":{"us-west-2":{"Linux":{"g6e.xlarge":{"s":61,"r":0},"m5.large":{"s":70,"r":0}},"Windows":{"g6e.xlarge":{"s":40,"r":3}}},
                        "us-east-1":{"Linux":{"p5.48xlarge":{"s":80,"r":1}}}}}"#,
    )
}

fn healthy(r: &Req, _: &[Req]) -> Resp {
    if r.method == "GET" && r.target == "/spot-advisor-data.json" {
        return advisor();
    }
    assert!(
        r.header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTESTKEY0000000/")),
        "SigV4 with the static test key: {:?}",
        r.header("authorization")
    );
    match r.header("x-amz-target") {
        Some("ServiceQuotasV20190624.GetServiceQuota") => return quota(r),
        Some("AWSPriceListService.GetProducts") => return pricing(r),
        _ => {}
    }
    assert_eq!(r.form("Version").as_deref(), Some("2016-11-15"));
    match r.form("Action").as_deref() {
        Some("DescribeSpotPriceHistory") => spot_history(r),
        Some("DescribeInstanceTypeOfferings") => offerings(r),
        Some("DescribeInstanceTypes") => instance_types(r),
        Some("DescribeCapacityBlockOfferings") => capacity_blocks(r),
        Some("GetSpotPlacementScores") => placement(r),
        other => panic!("unexpected request {other:?}: {}", r.body),
    }
}

fn refresh(cache: &Path, mock: &Mock) -> assert_cmd::assert::Assert {
    gpuplan(cache, &mock.url)
        .args([
            "catalog",
            "refresh",
            "--provider",
            "aws",
            "--plan",
            "plans/aws-training.toml",
            "--timeout",
            "2",
        ])
        .assert()
}

fn findings(cache: &Path, mock: &Mock, plan: &str) -> Vec<(String, String)> {
    let out = gpuplan(cache, &mock.url)
        .args(["check", "--format", "json", plan])
        .assert()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or("").to_owned(),
                f["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_full_refresh_counts_its_requests_writes_every_file_and_changes_the_answers() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(healthy);
    let sku = |cache: &Path| {
        let out = gpuplan(cache, &mock.url)
            .args([
                "recommend",
                "--format",
                "json",
                "tests/fixtures/live/aws-minimal.toml",
            ])
            .assert()
            .code(0)
            .get_output()
            .stdout
            .clone();
        let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
        v["pools"][0]["sku"].as_str().expect("sku").to_owned()
    };
    assert_eq!(sku(&cache), "g4dn.xlarge");
    let before = findings(&cache, &mock, "plans/aws-training.toml");
    let rules = |f: &[(String, String)]| f.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    assert_eq!(rules(&before), ["GP022", "GP022", "GP022", "GP024"]);
    let n0 = mock.requests().len();

    let out = refresh(&cache, &mock).code(0).get_output().clone();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs: Vec<Req> = mock.requests().into_iter().skip(n0).collect();
    let n = |f: &dyn Fn(&Req) -> bool| reqs.iter().filter(|r| f(r)).count();
    let action = |a: &'static str| move |r: &Req| r.form("Action").as_deref() == Some(a);
    // Per region: one Price List query, two spot history pages, one offerings call, one
    // DescribeInstanceTypes call, one GetServiceQuota per quota code; one advisor file.
    assert_eq!(
        n(&|r| r.header("x-amz-target") == Some("AWSPriceListService.GetProducts")),
        2
    );
    assert_eq!(n(&action("DescribeSpotPriceHistory")), 4);
    assert_eq!(n(&action("DescribeInstanceTypeOfferings")), 2);
    assert_eq!(n(&action("DescribeInstanceTypes")), 2);
    let quota_calls =
        n(&|r| r.header("x-amz-target") == Some("ServiceQuotasV20190624.GetServiceQuota"));
    assert_eq!(quota_calls % 2, 0);
    assert!((8..=30).contains(&(quota_calls / 2)), "{quota_calls}");
    assert_eq!(n(&|r| r.target == "/spot-advisor-data.json"), 1);
    // One Capacity Block query per block-capable type (8-GPU P sizes, Trainium) and region.
    let blocks = n(&action("DescribeCapacityBlockOfferings"));
    assert!(blocks >= 2 && blocks % 2 == 0, "{blocks}");
    assert!(reqs
        .iter()
        .any(|r| r.form("InstanceType").as_deref() == Some("p5.48xlarge")));
    // One placement-score query per GPU model with three or more types, both regions at once.
    let scores = n(&action("GetSpotPlacementScores"));
    assert!(scores >= 3, "{scores}");
    assert_eq!(
        reqs.len(),
        2 + 4 + 2 + 2 + quota_calls + 1 + blocks + scores
    );

    let cached = common::tree(&cache);
    let get = |name: &str| {
        cached
            .iter()
            .find(|(p, _)| p.ends_with(name))
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("{name} not in the cache"))
    };
    let prices = get("aws/prices-live.csv");
    assert!(
        prices.contains("g4dn.xlarge,us-east-1,consumption,0.9,1 Hour,2026-12-02,"),
        "{prices}"
    );
    // 1-year standard: All Upfront $2,628 beats No Upfront 0.35 x 8,760 = $3,066; the
    // convertible offering is not a standard reservation.
    assert!(
        prices.contains("g4dn.xlarge,us-east-1,reservation-1y,2628,term,"),
        "{prices}"
    );
    // Spot: the newest price per zone, lowest zone wins.
    assert!(
        prices.contains("g6e.xlarge,us-west-2,spot,0.38,1 Hour,"),
        "{prices}"
    );
    assert!(
        prices.contains("p5.48xlarge,us-east-1,spot,21.5,"),
        "{prices}"
    );
    let avail = get("aws/availability.csv");
    assert!(
        avail.contains("g4dn.xlarge,us-east-1,,not offered,"),
        "{avail}"
    );
    assert!(
        avail.contains("g4dn.xlarge,us-west-2,us-west-2a us-west-2b,,"),
        "{avail}"
    );
    let shapes = get("aws/instance-types.csv");
    assert!(
        shapes.contains("p5.48xlarge,8,192,2097152,true,"),
        "{shapes}"
    );
    let quota = get("aws/quota.csv");
    assert!(
        quota.contains("us-west-2,L-3819A6DF,8,,2026-12-02,"),
        "{quota}"
    );
    let placement = get("aws/spot-placement.csv");
    assert!(
        placement.contains("L40S,us-west-2,9,2026-12-02,"),
        "{placement}"
    );
    assert!(
        placement.contains("L40S,us-east-1,3,2026-12-02,"),
        "{placement}"
    );
    let advisor = get("aws/spot-advisor.json");
    assert!(advisor.contains("g6e.xlarge") && !advisor.contains("m5.large"));
    assert!(!advisor.contains("Windows"));
    for (p, t) in cached.iter().chain([(String::from("output"), text)].iter()) {
        assert!(!t.contains(SECRET), "{p} leaks the secret key");
    }

    // After: g4dn.xlarge is not offered in us-east-1, so the minimal plan moves; the fresh
    // advisor puts g6e.xlarge in us-west-2 in the lowest band (GP024 goes), the data is new
    // (GP022 goes), and the G spot quota read from the provider is too small (GP014).
    assert_ne!(sku(&cache), "g4dn.xlarge");
    let after = findings(&cache, &mock, "plans/aws-training.toml");
    assert!(!rules(&after).contains(&"GP024".to_owned()), "{after:#?}");
    assert!(!rules(&after).contains(&"GP022".to_owned()), "{after:#?}");
    let gp014: Vec<&String> = after
        .iter()
        .filter(|f| f.0 == "GP014")
        .map(|f| &f.1)
        .collect();
    assert_eq!(gp014.len(), 1, "{after:#?}");
    assert!(gp014[0]
        .contains("`L-3819A6DF` in `us-west-2`, above the quota of 8 read from the provider"));
}

fn fails_and_keeps(handler: impl Fn(&Req, &[Req]) -> Resp + Send + Sync + 'static, expect: &str) {
    common::fails_and_keeps(
        refresh,
        Mock::start(healthy),
        Mock::start(handler),
        expect,
        &[SECRET],
    );
}

#[test]
fn throttling_is_retried() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(|r, earlier| {
        let first = r.form("Action").as_deref() == Some("DescribeInstanceTypeOfferings")
            && !earlier
                .iter()
                .any(|e| e.form("Action").as_deref() == Some("DescribeInstanceTypeOfferings"));
        if first {
            return ec2_error("RequestLimitExceeded");
        }
        healthy(r, earlier)
    });
    refresh(&cache, &mock).code(0);
    assert_eq!(
        mock.count(|r| r.form("Action").as_deref() == Some("DescribeInstanceTypeOfferings")),
        3
    );
}

#[test]
fn server_errors_are_retried_then_reported() {
    fails_and_keeps(
        |r, earlier| {
            if r.header("x-amz-target") == Some("ServiceQuotasV20190624.GetServiceQuota") {
                return Resp::new(
                    500,
                    "application/x-amz-json-1.1",
                    "{\"__type\":\"ServiceException\",\"message\":\"internal\"}",
                );
            }
            healthy(r, earlier)
        },
        "Service Quotas GetServiceQuota ec2/",
    );
}

#[test]
fn endless_paging_is_stopped() {
    fails_and_keeps(
        |r, earlier| {
            if r.form("Action").as_deref() == Some("DescribeInstanceTypeOfferings") {
                return Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeInstanceTypeOfferingsResponse xmlns=\"{NS}\"><instanceTypeOfferingSet/><nextToken>t{}</nextToken></DescribeInstanceTypeOfferingsResponse>", earlier.len()));
            }
            healthy(r, earlier)
        },
        "more than 50 pages; the NextToken chain does not end",
    );
}

#[test]
fn bad_bodies_are_clear_errors() {
    fails_and_keeps(
        |r, earlier| {
            if r.form("Action").as_deref() == Some("DescribeSpotPriceHistory") {
                let mut x = spot_history(r);
                x.truncate = true;
                return x;
            }
            healthy(r, earlier)
        },
        "EC2 DescribeSpotPriceHistory in us-",
    );
    fails_and_keeps(
        |r, earlier| {
            if r.header("x-amz-target") == Some("AWSPriceListService.GetProducts") {
                return Resp::new(
                    200,
                    "application/x-amz-json-1.1",
                    r#"{"FormatVersion":"aws_v1","PriceList":["{\"product\":{\"attributes\":{}}}"]}"#,
                );
            }
            healthy(r, earlier)
        },
        "a PriceList entry without product.attributes.instanceType",
    );
    fails_and_keeps(
        |r, earlier| {
            if r.target == "/spot-advisor-data.json" {
                return Resp::new(200, "text/html", "<html>moved</html>");
            }
            healthy(r, earlier)
        },
        "Spot Instance Advisor at",
    );
}

#[test]
fn a_slow_server_times_out() {
    fails_and_keeps(
        |r, earlier| {
            if r.form("Action").as_deref() == Some("DescribeInstanceTypes") {
                let mut x = instance_types(r);
                x.delay = Some(Duration::from_secs(4));
                return x;
            }
            healthy(r, earlier)
        },
        "EC2 DescribeInstanceTypes in us-",
    );
}

#[test]
fn the_dry_run_lists_requests_and_makes_none() {
    let dir = tempfile::tempdir().expect("tmp");
    let mock = Mock::start(healthy);
    let out = gpuplan(&dir.path().join("cache"), &mock.url)
        .args([
            "catalog",
            "refresh",
            "--provider",
            "aws",
            "--region",
            "us-east-1",
            "--dry-run",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("GetServiceQuota ec2/L-417A185B"));
    assert!(text.contains("DescribeSpotPriceHistory"));
    assert!(text.contains(&format!("GET {}/spot-advisor-data.json", mock.url)));
    assert!(mock.requests().is_empty());
    assert!(!dir.path().join("cache").exists());
}

#[test]
fn live_refreshes_before_recommending_and_a_failed_refresh_stops_the_command() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(healthy);
    let out = gpuplan(&cache, &mock.url)
        .args([
            "recommend",
            "--live",
            "--format",
            "json",
            "tests/fixtures/live/aws-minimal.toml",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).expect("json");
    // Offline the answer is g4dn.xlarge; the live data says it is not offered in us-east-1.
    assert_ne!(v["pools"][0]["sku"], "g4dn.xlarge");
    assert!(
        mock.count(|r| r.form("Action").as_deref() == Some("DescribeInstanceTypeOfferings")) == 1
    );
    assert!(cache.join("aws/availability.csv").is_file());

    let broken = Mock::start(|_, _| Resp::new(500, "text/plain", "down"));
    let out = gpuplan(&dir.path().join("other"), &broken.url)
        .args(["check", "--live", "tests/fixtures/live/aws-minimal.toml"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(
        out.stdout.is_empty(),
        "no check output after a failed refresh"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("the cache is unchanged"));
    assert!(!dir.path().join("other").exists());
}

/// The healthy server, except that p5.48xlarge's spot price is `price`.
fn with_spot_price(price: &'static str) -> impl Fn(&Req, &[Req]) -> Resp + Send + Sync + 'static {
    move |r: &Req, seen: &[Req]| {
        if r.form("Action").as_deref() == Some("DescribeSpotPriceHistory")
            && r.form("NextToken").is_some()
        {
            let reg = region(r);
            return Resp::xml(format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><DescribeSpotPriceHistoryResponse xmlns=\"{NS}\"><requestId>r-2</requestId><spotPriceHistorySet><item><instanceType>p5.48xlarge</instanceType><productDescription>Linux/UNIX</productDescription><spotPrice>{price}</spotPrice><timestamp>2026-12-02T08:00:00.000Z</timestamp><availabilityZone>{reg}c</availabilityZone></item></spotPriceHistorySet><nextToken/></DescribeSpotPriceHistoryResponse>"));
        }
        healthy(r, seen)
    }
}

#[test]
fn a_refresh_owns_only_its_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(healthy);
    refresh(&cache, &mock).code(0);
    std::fs::write(cache.join("notes.txt"), "mine").expect("notes");
    std::fs::create_dir_all(cache.join("sub")).expect("sub");
    std::fs::write(cache.join("sub/keep.dat"), "keep").expect("keep");
    refresh(&cache, &mock).code(0);
    assert_eq!(
        std::fs::read_to_string(cache.join("notes.txt")).expect("kept"),
        "mine"
    );
    assert_eq!(
        std::fs::read_to_string(cache.join("sub/keep.dat")).expect("kept"),
        "keep"
    );
    // Nothing of the refresh's own is left behind: no staging directory, no temporary file.
    let leftovers: Vec<String> = common::tree(&cache)
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.contains(".gpuplan-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_directory_that_is_not_a_cache_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tmp");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("projects")).expect("dir");
    std::fs::write(home.join("notes.txt"), "mine").expect("notes");
    let before = common::tree(&home);
    let mock = Mock::start(healthy);
    let out = refresh(&home, &mock).code(2).get_output().clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a gpuplan cache"), "{err}");
    assert!(err.contains("the cache is unchanged"), "{err}");
    assert_eq!(common::tree(&home), before);
    assert!(home.join("projects").is_dir());
}

#[test]
fn a_tampered_sources_list_reaches_nothing_outside_the_cache() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "precious").expect("outside");
    let mock = Mock::start(healthy);
    refresh(&cache, &mock).code(0);
    let mut list = std::fs::read_to_string(cache.join("sources.toml")).expect("list");
    for p in ["../outside.txt".to_owned(), outside.display().to_string()] {
        list.push_str(&format!(
            "\n[[file]]\npath = \"{p}\"\nkind = \"prices\"\nprovider = \"aws\"\nas_of = \"2026-12-01\"\nsource = \"x\"\nlicence = \"x\"\n"
        ));
    }
    std::fs::write(cache.join("sources.toml"), list).expect("tamper");
    refresh(&cache, &mock).code(0);
    assert_eq!(
        std::fs::read_to_string(&outside).expect("outside"),
        "precious"
    );
    let list = std::fs::read_to_string(cache.join("sources.toml")).expect("list");
    assert!(
        !list.contains("outside.txt"),
        "the unsafe entries are dropped: {list}"
    );
}

#[test]
fn invalid_prices_are_refused_and_a_broken_cache_can_be_replaced() {
    for bad in ["NaN", "inf", "-1", "1e400"] {
        fails_and_keeps(with_spot_price(bad), "the refreshed data does not load");
    }
    // A cache that no longer loads (a price edited to NaN by hand) is replaced by the next
    // good refresh, which reads its plan against the embedded catalog.
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let mock = Mock::start(healthy);
    refresh(&cache, &mock).code(0);
    let prices = cache.join("aws/prices-live.csv");
    let text = std::fs::read_to_string(&prices).expect("prices");
    let broken = text.replacen(",spot,21.5,", ",spot,NaN,", 1);
    assert_ne!(broken, text, "the fixture has the p5 spot row");
    std::fs::write(&prices, broken).expect("break");
    gpuplan(&cache, &mock.url)
        .args(["check", "plans/aws-training.toml"])
        .assert()
        .code(2);
    refresh(&cache, &mock).code(0);
    // The cache loads again: findings (the mock's small quota) but no load error.
    let code = gpuplan(&cache, &mock.url)
        .args(["check", "plans/aws-training.toml"])
        .output()
        .expect("runs")
        .status
        .code();
    assert_eq!(code, Some(1));
}
