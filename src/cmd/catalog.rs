//! `gpuplan catalog`: what the catalog knows, with the date and source of every figure.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::catalog::{Catalog, GpuModel, Price, ProviderCatalog, RegionPrices, Sku};
use crate::cli::{CatalogArgs, Format, Global};
use crate::core::exit;
use crate::core::rate;
use crate::output::Out;
use crate::plan::raw::Provider;

pub(crate) fn run(g: &Global, args: &CatalogArgs, out: &Out) -> super::CmdResult {
    if let Some(crate::cli::CatalogAction::Refresh(r)) = &args.action {
        return super::refresh::run(g, r, out);
    }
    let providers: Vec<Provider> = args.provider.map_or(Provider::ALL.to_vec(), |p| vec![p]);
    let catalog = super::load_catalog(g, &providers, out)?;
    if let Some(region) = &args.region {
        // A region no provider in view has is a typo, not an empty listing.
        let known: Vec<String> = catalog
            .providers
            .values()
            .flat_map(|pc| pc.regions.iter().cloned())
            .collect();
        if !known.contains(region) {
            let hint = crate::plan::load::did_you_mean(region, &known)
                .map(|b| format!("; did you mean `{b}`?"))
                .unwrap_or_default();
            return Err(super::CmdError::Usage(format!(
                "unknown region `{}`{hint} (`gpuplan catalog` lists each provider's regions)",
                crate::core::printable(region)
            )));
        }
    }
    if let Some(name) = &args.gpu {
        let Some(gpu) = catalog.gpu(name) else {
            let names: Vec<String> = catalog.gpus.keys().cloned().collect();
            let hint = crate::plan::load::did_you_mean(name, &names)
                .map(|b| format!("; did you mean `{b}`?"))
                .unwrap_or_default();
            return Err(super::CmdError::Usage(format!(
                "unknown GPU model `{name}`{hint}"
            )));
        };
        match args.format {
            Format::Json => {
                out.stdout(&pretty(&versioned("gpuplan.catalog-gpu/v1", gpu_json(gpu))))
            }
            Format::Human => out.stdout(&gpu_text(gpu)),
        }
        return Ok(exit::OK);
    }
    if let Some(name) = &args.sku {
        let found = catalog
            .providers
            .iter()
            .find_map(|(p, pc)| pc.skus.get(name).map(|s| (*p, pc, s)));
        let Some((_, pc, sku)) = found else {
            let names: Vec<String> = catalog
                .providers
                .values()
                .flat_map(|pc| pc.skus.keys().cloned())
                .collect();
            let hint = crate::plan::load::did_you_mean(name, &names)
                .map(|b| format!("; did you mean `{b}`?"))
                .unwrap_or_default();
            return Err(super::CmdError::Usage(format!(
                "unknown SKU `{name}`{hint}"
            )));
        };
        match args.format {
            Format::Json => out.stdout(&pretty(&versioned(
                "gpuplan.catalog-sku/v1",
                sku_json(&catalog, pc, sku),
            ))),
            Format::Human => out.stdout(&sku_text(&catalog, pc, sku, g.verbose)),
        }
        return Ok(exit::OK);
    }
    match args.format {
        Format::Json => out.stdout(&pretty(&overview_json(&catalog, args.region.as_deref()))),
        Format::Human => out.stdout(&overview_text(&catalog, args.region.as_deref())),
    }
    Ok(exit::OK)
}

/// One GPU model or SKU as its own document: the same object the overview lists, with the
/// `schema` key every JSON output of gpuplan starts with.
fn versioned(schema: &str, v: Value) -> Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), json!(schema));
    if let Value::Object(m) = v {
        doc.extend(m);
    }
    Value::Object(doc)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn gpu_json(g: &GpuModel) -> Value {
    json!({
        "name": g.name, "vendor": g.vendor, "memory_gib": g.memory_gib,
        "nominal_memory_gib": g.nominal_memory_gib, "usable_memory_source": g.usable_memory_source,
        "architecture": g.architecture,
        "compute_capability": g.compute_capability, "aliases": g.aliases,
        "mig": g.mig.as_ref().map(|m| json!({
            "compute_slices": m.compute_slices, "memory_slices": m.memory_slices,
            "pci_device_ids": m.pci_device_ids, "placement_source": m.placement_source,
            "driver_memory_source": m.driver_memory_source,
            "profiles": m.profiles.iter().map(|p| json!({
                "name": p.name, "compute": p.compute, "memory_slices": p.memory_slices,
                "memory_gib": p.memory_gib, "starts": p.starts, "max_count": p.max_count,
            })).collect::<Vec<_>>(),
        })),
    })
}

fn gpu_text(g: &GpuModel) -> String {
    let mut s = format!(
        "{} ({}, {}, {} GiB nominal, {} GiB usable",
        g.name,
        g.vendor,
        g.architecture,
        g.nominal_memory_gib,
        crate::core::num(g.memory_gib)
    );
    if let Some(cc) = &g.compute_capability {
        let _ = write!(s, ", compute capability {cc}");
    }
    s.push_str(")\n");
    let _ = writeln!(s, "  usable memory: {}", g.usable_memory_source);
    match &g.mig {
        None => s.push_str("MIG: not supported\n"),
        Some(m) => {
            let _ = writeln!(
                s,
                "MIG: {} compute slices, {} memory slices; placements: {}",
                m.compute_slices, m.memory_slices, m.placement_source
            );
            let _ = writeln!(
                s,
                "  GiB is what the driver gives an instance: {}",
                m.driver_memory_source
            );
            let _ = writeln!(
                s,
                "  {:<14} {:>7} {:>9} {:>8} {:>4}  starts",
                "profile", "compute", "mem.slc", "GiB", "max"
            );
            for p in &m.profiles {
                let starts: Vec<String> = p.starts.iter().map(u8::to_string).collect();
                let _ = writeln!(
                    s,
                    "  {:<14} {:>7} {:>9} {:>8} {:>4}  {{{}}}",
                    p.name,
                    p.compute,
                    p.memory_slices,
                    p.memory_gib,
                    p.max_count,
                    starts.join(",")
                );
            }
        }
    }
    s
}

/// Every dated figure of a (SKU, region), by kind.
fn figures(p: &RegionPrices) -> [(&'static str, Option<&Price>); 5] {
    [
        ("on_demand", p.on_demand.as_ref()),
        ("spot", p.spot.as_ref()),
        ("reserved_1y", p.reserved_1y.as_ref()),
        ("reserved_3y", p.reserved_3y.as_ref()),
        ("capacity_block", p.capacity_block.as_ref()),
    ]
}

fn figure_json(p: Option<&Price>) -> Value {
    p.map_or(Value::Null, |x| {
        json!({
            "usd_per_hour": x.usd_per_hour,
            "as_of": x.as_of.map(|d| d.to_string()),
            "source": x.source.to_string(),
        })
    })
}

fn sku_json(c: &Catalog, pc: &ProviderCatalog, s: &Sku) -> Value {
    let regions: Vec<Value> = pc
        .prices
        .iter()
        .filter(|((n, _), _)| n == &s.name)
        .map(|((_, r), p)| {
            let band = pc.band(&s.name, r);
            let mut o = json!({
                "region": r,
                "on_demand_usd_per_hour": p.on_demand.as_ref().map(|x| x.usd_per_hour),
                "on_demand_source": p.on_demand.as_ref().map(|x| x.source.to_string()),
                "spot_usd_per_hour": p.spot.as_ref().map(|x| x.usd_per_hour),
                "spot_source": p.spot.as_ref().map(|x| x.source.to_string()),
                "reserved_1y_usd_per_hour": p.reserved_1y.as_ref().map(|x| x.usd_per_hour),
                "reserved_3y_usd_per_hour": p.reserved_3y.as_ref().map(|x| x.usd_per_hour),
                "capacity_block_usd_per_hour": p.capacity_block.as_ref().map(|x| x.usd_per_hour),
                "spot_band": band.map(|b| b.label.clone()),
                "spot_band_source": band.map(|b| b.source.to_string()),
                "spot_band_as_of": band.and_then(|b| b.as_of.map(|d| d.to_string())),
                // Per-account data, present after `catalog refresh`.
                "zones": pc.availability.get(&(s.name.clone(), r.clone())).map(|a| a.zones.clone()),
                "restriction": pc.restriction(&s.name, r),
                "quota_vcpus": pc.quota(r, &s.quota_family).map(|q| q.limit),
                "spot_quota_vcpus": pc.quota(r, s.spot_quota()).map(|q| q.limit),
                "spot_placement_score": pc.spot_placement.get(&(s.gpu_model.clone(), r.clone())).map(|x| x.0),
            });
            // Each figure with its own date and source (`as_of` null: the source is undated).
            o["figures"] = figures(p)
                .into_iter()
                .map(|(k, f)| (k.to_owned(), figure_json(f)))
                .collect::<serde_json::Map<_, _>>()
                .into();
            o
        })
        .collect();
    json!({
        "provider": s.provider.as_str(), "name": s.name, "gpu_model": s.gpu_model, "gpu_count": s.gpu_count,
        "gpu_partition": s.gpu_partition, "gpu_memory_gib": c.sku_gpu(s).map(|g| g.memory_gib),
        "vcpus": s.vcpus, "memory_gib": s.memory_gib, "quota_family": s.quota_family,
        "spot_quota_family": s.spot_quota(), "quota_family_verified": s.quota_family_verified,
        "nvlink": s.nvlink, "inter_node": s.inter_node.as_str(), "efa_interfaces": s.efa_interfaces,
        "cpu_architecture": s.cpu_architecture(),
        "retired": s.retired,
        "unpriced": s.unpriced, "note": s.note,
        "regions": regions,
    })
}

fn sku_text(c: &Catalog, pc: &ProviderCatalog, s: &Sku, verbose: bool) -> String {
    let mut t = sku_head(c, s);
    let origin = price_table(&mut t, pc, s);
    sku_sources(&mut t, c, pc, s, &origin, verbose);
    t
}

/// Which file and date each figure came from, grouped: (kind, source, date) -> regions.
type Origins<'a> = indexmap::IndexMap<(&'static str, String, String), Vec<&'a str>>;

/// The SKU's shape, interconnect, quota and state.
fn sku_head(c: &Catalog, s: &Sku) -> String {
    let gpu = c.sku_gpu(s);
    let mut t = format!(
        "{} ({}): {} x {}{} ({} GiB usable each), {} vCPUs, {} GiB RAM\n",
        s.name,
        s.provider,
        s.gpu_count,
        s.gpu_model,
        if s.gpu_partition < 1.0 {
            format!(" (a {} share)", s.gpu_partition)
        } else {
            String::new()
        },
        crate::core::num(gpu.map_or(0.0, |g| g.memory_gib)),
        s.vcpus,
        s.memory_gib
    );
    let _ = writeln!(
        t,
        "interconnect: NVLink {}, between nodes {}{}",
        if s.nvlink { "yes" } else { "no" },
        s.inter_node.as_str(),
        s.efa_interfaces
            .filter(|n| *n > 0)
            .map(|n| format!(" ({n} EFA interface(s))"))
            .unwrap_or_default()
    );
    let _ = writeln!(
        t,
        "host CPU: {}{}",
        s.cpu_architecture(),
        if s.arm64 {
            " (Arm: arm64 images only; recommended only where a workload names the size)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        t,
        "quota: {} (spot: {}){}",
        s.quota_family,
        s.spot_quota(),
        if s.quota_family_verified {
            ""
        } else {
            " - name not verified against a live response"
        }
    );
    if s.retired {
        t.push_str("retired by the provider\n");
    }
    if let Some(n) = &s.note {
        let _ = writeln!(t, "note: {n}");
    }
    if let Some(why) = &s.unpriced {
        let _ = writeln!(t, "not priced: {why}");
    }
    t
}

/// One row of prices per region, and where each figure came from.
fn price_table<'a>(t: &mut String, pc: &'a ProviderCatalog, s: &Sku) -> Origins<'a> {
    let _ = writeln!(
        t,
        "  {:<20} {:>12} {:>12} {:>8} {:>12} {:>12}",
        "region", "on-demand/h", "spot/h", "band", "1y RI/h", "3y RI/h"
    );
    let none =
        |p: Option<&Price>, missing: &str| p.map_or(missing.to_owned(), |x| rate(x.usd_per_hour));
    let mut origin: Origins<'a> = indexmap::IndexMap::new();
    for ((n, r), p) in &pc.prices {
        if n != &s.name {
            continue;
        }
        let band = pc.band(&s.name, r);
        // Missing data a live refresh would fetch is unknown; data the catalog has in full
        // and lacks here is not sold.
        let cloud = crate::cloud::profile(s.provider);
        let missing = |live_only: bool| if live_only { "unknown" } else { "-" };
        let band_label = band.map_or(missing(cloud.bands_live_only).to_owned(), |b| {
            b.label.clone()
        });
        let reserved_missing = missing(cloud.reservations_live_only);
        let _ = writeln!(
            t,
            "  {r:<20} {:>12} {:>12} {band_label:>8} {:>12} {:>12}{}",
            none(p.on_demand.as_ref(), "-"),
            none(p.spot.as_ref(), "unknown"),
            none(p.reserved_1y.as_ref(), reserved_missing),
            none(p.reserved_3y.as_ref(), reserved_missing),
            pc.restriction(&s.name, r)
                .map(|why| format!("  not deployable here: {why}"))
                .unwrap_or_default()
        );
        let labels = [
            "on-demand",
            "spot",
            "1y reserved",
            "3y reserved",
            "Capacity Block",
        ];
        for ((_, f), label) in figures(p).into_iter().zip(labels) {
            if let Some(f) = f {
                origin
                    .entry((label, f.source.to_string(), f.dated()))
                    .or_default()
                    .push(r);
            }
        }
        if let Some(b) = band {
            origin
                .entry(("band", b.source.to_string(), crate::catalog::dated(b.as_of)))
                .or_default()
                .push(r);
        }
    }
    origin
}

/// The figures' sources, the catalog's files, and what is unknown offline.
fn sku_sources(
    t: &mut String,
    c: &Catalog,
    pc: &ProviderCatalog,
    s: &Sku,
    origin: &Origins<'_>,
    verbose: bool,
) {
    let cloud = crate::cloud::profile(s.provider);
    if cloud.reservations_live_only {
        let _ = writeln!(
            t,
            "{}s: unknown offline (a live refresh fetches them from {})",
            cloud.reservation, cloud.prices_api
        );
    }
    t.push_str("figures:\n");
    for ((label, source, date), regions) in origin {
        let wher = if verbose {
            regions.join(", ")
        } else {
            format!("{} region(s)", regions.len())
        };
        let _ = writeln!(t, "  {label}, {date}: {source} [{wher}]");
    }
    t.push_str("sources:\n");
    for src in c
        .sources_for(s.provider)
        .filter(|x| x.provider == Some(s.provider))
    {
        let _ = writeln!(
            t,
            "  {} ({}, {}): {}",
            src.file,
            src.kind,
            if src.undated {
                format!("undated, taken {}", src.as_of)
            } else {
                format!("as of {}", src.as_of)
            },
            src.source
        );
    }
    if cloud.bands_live_only && pc.spot_bands.is_empty() {
        let _ = writeln!(
            t,
            "{} spot eviction bands need a live {} query (`gpuplan catalog refresh --provider {} --only eviction`).",
            cloud.name, cloud.bands_api, s.provider
        );
    }
}

fn skus_in<'a>(pc: &'a ProviderCatalog, region: Option<&'a str>) -> impl Iterator<Item = &'a Sku> {
    pc.skus
        .values()
        .filter(move |s| region.is_none_or(|r| pc.offered(&s.name, r)))
}

fn overview_json(c: &Catalog, region: Option<&str>) -> Value {
    json!({
        "schema": "gpuplan.catalog/v1",
        "sources": c.sources.iter().map(|s| json!({"file": s.file, "kind": s.kind, "provider": s.provider.map(Provider::as_str), "as_of": s.as_of.to_string(), "undated": s.undated, "source": s.source})).collect::<Vec<_>>(),
        "gpus": c.gpus.values().map(gpu_json).collect::<Vec<_>>(),
        "providers": c.providers.iter().map(|(p, pc)| json!({
            "provider": p.as_str(),
            "regions": pc.regions,
            "skus": skus_in(pc, region).map(|s| sku_json(c, pc, s)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn overview_text(c: &Catalog, region: Option<&str>) -> String {
    let mut t = String::from("GPU models:\n");
    for g in c.gpus.values() {
        let mig = g.mig.as_ref().map_or("no MIG".to_owned(), |m| {
            format!("MIG {} profiles", m.profiles.len())
        });
        let _ = writeln!(
            t,
            "  {:<18} {:<9} {:>6} GiB  {}",
            g.name,
            g.vendor,
            crate::core::num(g.memory_gib),
            mig
        );
    }
    for (p, pc) in &c.providers {
        let _ = writeln!(
            t,
            "\n{p} ({} regions: {}):",
            pc.regions.len(),
            pc.regions.join(", ")
        );
        let _ = writeln!(
            t,
            "  {:<28} {:>4} {:<16} {:>5} {:>8}  {:>12} {:>12}",
            "sku", "gpus", "model", "vcpus", "ram GiB", "cheapest/h", "spot from/h"
        );
        for s in skus_in(pc, region) {
            let prices = pc
                .prices
                .iter()
                .filter(|((n, r), _)| n == &s.name && region.is_none_or(|x| x == r))
                .map(|(_, p)| p);
            let od = prices
                .clone()
                .filter_map(|p| p.on_demand.as_ref().map(|x| x.usd_per_hour))
                .fold(f64::INFINITY, f64::min);
            let sp = prices
                .filter_map(|p| p.spot.as_ref().map(|x| x.usd_per_hour))
                .fold(f64::INFINITY, f64::min);
            let f = |x: f64| if x.is_finite() { rate(x) } else { "-".into() };
            let _ = writeln!(
                t,
                "  {:<28} {:>4} {:<16} {:>5} {:>8}  {:>12} {:>12}{}",
                s.name,
                s.gpu_count,
                s.gpu_model,
                s.vcpus,
                s.memory_gib,
                f(od),
                f(sp),
                if s.retired { "  (retired)" } else { "" }
            );
        }
    }
    t.push_str("\nsources:\n");
    for s in &c.sources {
        let _ = writeln!(
            t,
            "  {} ({}, as of {}): {}",
            s.file, s.kind, s.as_of, s.source
        );
    }
    t
}
