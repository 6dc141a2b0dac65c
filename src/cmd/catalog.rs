//! `gpuplan catalog`: what the catalog knows, with the date and source of every figure.

use std::fmt::Write as _;

use crate::catalog::{Catalog, GpuModel, Price, ProviderCatalog, RegionPrices, Sku};
use crate::cli::{CatalogArgs, Format, Global};
use crate::core::exit;
use crate::core::rate;
use crate::core::Provider;
use crate::output::Out;
use crate::report::catalog as doc;
use crate::report::catalog::skus_in;

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
            Format::Json => out.stdout(&pretty(&doc::versioned(doc::GPU_SCHEMA, gpu))),
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
            Format::Json => out.stdout(&pretty(&doc::versioned(
                doc::SKU_SCHEMA,
                doc::sku(&catalog, pc, sku),
            ))),
            Format::Human => out.stdout(&sku_text(&catalog, pc, sku, g.verbose)),
        }
        return Ok(exit::OK);
    }
    match args.format {
        Format::Json => out.stdout(&pretty(&doc::overview(&catalog, args.region.as_deref()))),
        Format::Human => out.stdout(&overview_text(&catalog, args.region.as_deref())),
    }
    Ok(exit::OK)
}

fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
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
    if s.vgpu {
        let _ = writeln!(
            t,
            "GPU access: SR-IOV vGPU (AKS installs the GRID guest driver){}",
            if c.host_mig(s) {
                "; MIG is set by the host: the VM's GPU is one MIG instance and the guest cannot create others"
            } else {
                ""
            }
        );
    }
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
        let reserved_missing = missing(cloud.reservations_live_only());
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
    if cloud.reservations_live_only() {
        let _ = writeln!(
            t,
            "{}",
            crate::report::why::reservations_unknown(cloud.reservation, Some(cloud.prices_api))
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
            crate::catalog::source_dated(src.as_of, src.undated),
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
            "  {} ({}, {}): {}",
            s.file,
            s.kind,
            crate::catalog::source_dated(s.as_of, s.undated),
            s.source
        );
    }
    t
}
