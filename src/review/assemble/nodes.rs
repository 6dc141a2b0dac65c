//! Nodes: their labels, allocatable resources and pools, the unit their GPUs are counted in
//! (whole, time-sliced replica or MIG profile), and their capacity and paid cards per window.

use std::collections::{BTreeMap, BTreeSet};

use super::columns::col;
use super::intervals::{seconds_of, Intervals};
use super::pool_names::POOL_LABELS;
use crate::catalog::Catalog;
use crate::plan::Plan;
use crate::review::query::{Answers, Grid, Row, Q};
use crate::review::telemetry::{NodeSeries, Windows};
use crate::review::timeline::Timeline;

pub(super) struct Node {
    pub(super) labels: BTreeMap<String, String>,
    /// resource -> window -> (avg, count)
    pub(super) alloc: BTreeMap<String, Timeline<u32, (f64, f64)>>,
}

impl Node {
    /// The node pool its labels name (only non-empty labels are kept).
    pub(super) fn pool_label(&self) -> Option<&str> {
        POOL_LABELS
            .iter()
            .find_map(|k| self.labels.get(*k).map(String::as_str))
    }
}

/// How the node's `nvidia.com/gpu` counts: 1, a time-sliced replica's share, or a single
/// strategy MIG profile's share.
pub(super) struct Unit {
    pub(super) replicas: u32,
    pub(super) share: f64,
    /// The GPUs of the node were counted from the distinct cards dcgm-exporter reported
    /// (no label or known instance type said so).
    pub(super) from_cards: bool,
    /// Its `nvidia.com/gpu` are MIG instances (single strategy).
    pub(super) mig: bool,
}

pub(super) fn unit_of(
    plan: &Plan,
    catalog: &Catalog,
    labels: &BTreeMap<String, String>,
    allocatable_gpus: Option<f64>,
    pool: Option<&crate::plan::Pool>,
    cards: Option<u32>,
) -> Unit {
    let label = |k: &str| labels.get(k).map(String::as_str).filter(|v| !v.is_empty());
    // MIG single strategy: GPU feature discovery names the profile in the product or the
    // mig-parted config; an AKS MIG pool's comes from the plan.
    let mig = label("label_nvidia_com_gpu_product")
        .and_then(|p| p.rsplit_once("-MIG-").map(|(_, m)| m.to_owned()))
        .or_else(|| {
            (label("label_nvidia_com_mig_strategy") == Some("single"))
                .then(|| label("label_nvidia_com_mig_config"))
                .flatten()
                .and_then(|c| c.strip_prefix("all-"))
                .map(str::to_owned)
        })
        .or_else(|| {
            pool.and_then(|p| p.mig_profile.as_ref())
                .map(|m| m.get().clone())
        })
        .and_then(|m| crate::review::telemetry::mig_share(catalog, &m));
    if let Some(share) = mig {
        return Unit {
            replicas: 1,
            share,
            from_cards: false,
            mig: true,
        };
    }
    let labelled = label("label_nvidia_com_gpu_count").and_then(|c| c.parse::<u32>().ok());
    // Where no label says how many cards a node has, the distinct physical GPUs (UUIDs)
    // dcgm-exporter reports for it do: it reports each card once, however many replicas
    // time-slicing makes of it.
    let from_cards = labelled.is_none() && cards.is_some_and(|c| c > 0);
    let physical = labelled
        .or(cards.filter(|c| *c > 0))
        .or_else(|| {
            let it = label("label_node_kubernetes_io_instance_type")?;
            catalog.sku(plan.provider(), it).map(|s| s.gpu_count)
        })
        .or_else(|| {
            pool.and_then(|p| catalog.sku(plan.provider(), p.sku.get()))
                .map(|s| s.gpu_count)
        })
        .filter(|c| *c > 0);
    // What the node advertises against its physical GPUs beats what the plan says.
    let measured = allocatable_gpus.zip(physical).and_then(|(a, p)| {
        let r = a / f64::from(p);
        (r >= 1.0 && (r - r.round()).abs() < 1e-9).then_some(r.round() as u32)
    });
    let replicas = label("label_nvidia_com_gpu_replicas")
        .and_then(|r| r.parse::<u32>().ok())
        .or(measured)
        .or_else(|| {
            pool.filter(|p| p.sharing().is_replicated())
                .and_then(|p| p.time_slicing_replicas.as_ref())
                .and_then(|r| u32::try_from(*r.get()).ok())
        })
        .filter(|r| *r >= 1)
        .unwrap_or(1);
    Unit {
        replicas,
        from_cards: from_cards && replicas > 1,
        share: 1.0 / f64::from(replicas),
        mig: false,
    }
}

/// The whole cards of a MIG node, whose slices no instance holds are paid for all the same:
/// the distinct parent cards dcgm-exporter reports, else its instance type's or plan pool's
/// GPU count, else the least whole number of cards its instances fill. GPU feature
/// discovery's `nvidia.com/gpu.count` is not read here: under the single strategy it counts
/// MIG instances.
pub(super) fn whole_cards(
    plan: &Plan,
    catalog: &Catalog,
    labels: &BTreeMap<String, String>,
    pool: Option<&crate::plan::Pool>,
    cards: Option<u32>,
    offered: f64,
) -> f64 {
    let sku_gpus = |sku: &str| catalog.sku(plan.provider(), sku).map(|s| s.gpu_count);
    let counted = cards
        .filter(|c| *c > 0)
        .or_else(|| {
            labels
                .get("label_node_kubernetes_io_instance_type")
                .and_then(|it| sku_gpus(it))
        })
        .or_else(|| pool.and_then(|p| sku_gpus(p.sku.get())))
        .map(f64::from);
    // Never fewer cards than the instances offered fill (a share sum rounded for float noise).
    let least = (offered - 1e-9).ceil().max(0.0);
    counted.map_or(least, |c| c.max(least))
}

/// A node's GPU-seconds per window counted as whole cards: each window's offered
/// GPU-seconds scaled from the instances' share to the cards they sit on.
pub(super) fn paid_for(
    capacity: &Windows,
    physical: &Row,
    cards: f64,
    start: impl Fn(u32) -> i64,
) -> Windows {
    physical
        .iter()
        .filter_map(|(k, offered)| {
            let ts = start(k);
            let secs = capacity.get(&ts)?;
            let scale = if *offered > 1e-9 && cards > *offered {
                cards / offered
            } else {
                1.0
            };
            Some((ts, secs * scale))
        })
        .collect()
}

/// Each node's labels and allocatable resources per window, with the samples behind them.
pub(super) fn nodes_of(a: &Answers, ksm_at: &Intervals, stepf: f64) -> BTreeMap<String, Node> {
    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    for (g, w) in a.get(Q::NodeLabels) {
        let name = &g[col(Q::NodeLabels, "node")];
        if name.is_empty() || w.is_empty() {
            continue;
        }
        let n = nodes.entry(name.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
        for (i, l) in crate::review::query::NODE_LABELS.iter().enumerate() {
            if !g[i].is_empty() {
                n.labels.insert((*l).to_owned(), g[i].clone());
            }
        }
    }
    let counts: BTreeMap<(&str, &str), &Row> = a
        .get(Q::NodeScraped)
        .map(|(g, r)| {
            (
                (
                    g[col(Q::NodeScraped, "node")].as_str(),
                    g[col(Q::NodeScraped, "resource")].as_str(),
                ),
                r,
            )
        })
        .collect();
    for (g, w) in a.get(Q::NodeAllocatable) {
        let (name, res) = (
            &g[col(Q::NodeAllocatable, "node")],
            &g[col(Q::NodeAllocatable, "resource")],
        );
        if name.is_empty() {
            continue;
        }
        let c = counts.get(&(name.as_str(), res.as_str()));
        let n = nodes.entry(name.clone()).or_insert_with(|| Node {
            labels: BTreeMap::new(),
            alloc: BTreeMap::new(),
        });
        let e = n.alloc.entry(res.clone()).or_default();
        for (k, v) in w {
            let count = c
                .and_then(|c| c.get(&k))
                .copied()
                .unwrap_or(stepf / ksm_at.at(k).unwrap_or(stepf));
            e.insert(k, (*v, count));
        }
    }
    nodes
}

/// Per host, what dcgm-exporter says of its cards: the physical cards (UUIDs, not MIG
/// instances), the parent cards MIG instances name, and the GPU model (`modelName`).
pub(super) type CardMaps<'a> = (
    BTreeMap<&'a str, BTreeSet<&'a str>>,
    BTreeMap<&'a str, BTreeSet<&'a str>>,
    BTreeMap<&'a str, &'a str>,
);

pub(super) fn card_maps<'a>(a: &'a Answers, cards: &'a BTreeMap<Vec<String>, Row>) -> CardMaps<'a> {
    // The distinct physical cards (UUIDs, not MIG instances) dcgm-exporter reports per node.
    let mut physical_cards: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    // A MIG instance's row carries its parent card's UUID: the cards a MIG node has.
    let mut parent_cards: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for card in cards.keys() {
        let (host, uuid, instance) = (&card[1], &card[3], &card[4]);
        if !host.is_empty() && !uuid.is_empty() {
            parent_cards.entry(host).or_default().insert(uuid);
            if instance.is_empty() {
                physical_cards.entry(host).or_default().insert(uuid);
            }
        }
    }
    // What dcgm-exporter calls each node's GPUs (`modelName`, exported on a stock install):
    // a node's model where no plan pool or GPU feature discovery label says.
    let mut dcgm_models: BTreeMap<&str, &str> = BTreeMap::new();
    for q in [Q::Active, Q::Util] {
        for (g, _) in a.get(q) {
            let (host, model) = (&g[col(q, "Hostname")], &g[col(q, "modelName")]);
            if !host.is_empty() && !model.is_empty() {
                dcgm_models.entry(host).or_insert(model);
            }
        }
    }
    (physical_cards, parent_cards, dcgm_models)
}

/// Each node's series and the unit its GPUs are counted in, with what was learnt on the way.
pub(super) struct NodeStage {
    pub(super) units: BTreeMap<String, Unit>,
    pub(super) out_nodes: BTreeMap<String, NodeSeries>,
    /// Nodes whose time-slicing replicas came from counting their cards.
    pub(super) replicas_from_cards: usize,
    /// Resources no catalog MIG profile names.
    pub(super) unknown_mig: BTreeSet<String>,
}

/// Each node's capacity per window in its unit, the whole cards paid for where MIG leaves
/// slices unconfigured, and its pool and GPU model.
#[allow(clippy::too_many_arguments)]
pub(super) fn node_series(
    plan: &Plan,
    catalog: &Catalog,
    a: &Answers,
    grid: Grid,
    nodes: &BTreeMap<String, Node>,
    node_pool: &BTreeMap<String, &crate::plan::Pool>,
    cards: &BTreeMap<Vec<String>, Row>,
    ksm_at: &Intervals,
) -> NodeStage {
    let stepf = grid.step as f64;
    let secs = seconds_of(stepf);
    let mut units: BTreeMap<String, Unit> = BTreeMap::new();
    let (physical_cards, parent_cards, dcgm_models) = card_maps(a, cards);
    let mut replicas_from_cards = 0usize;
    let mut out_nodes: BTreeMap<String, NodeSeries> = BTreeMap::new();
    let mut unknown_mig = BTreeSet::new();
    for (name, n) in nodes {
        let gpus = n
            .alloc
            .get("nvidia_com_gpu")
            .and_then(|w| w.values().map(|x| x.0).reduce(f64::max));
        let u = unit_of(
            plan,
            catalog,
            &n.labels,
            gpus,
            node_pool.get(name).copied(),
            physical_cards.get(name.as_str()).map(|s| s.len() as u32),
        );
        replicas_from_cards += usize::from(u.from_cards);
        let mut capacity = Windows::new();
        let mut physical = Row::new();
        let mut mig = u.mig;
        for (res, w) in &n.alloc {
            let share = if res == "nvidia_com_gpu" {
                u.share
            } else if let Some(s) = crate::review::telemetry::resource_share(catalog, res) {
                mig = true;
                s
            } else {
                unknown_mig.insert(res.clone());
                continue;
            };
            for (k, (avg, count)) in w {
                capacity.add(grid.start(k), avg * share * secs(*count, ksm_at.at(k)));
                physical.add(k, avg * share);
            }
        }
        let offered = physical.values().copied().fold(0.0, f64::max);
        let cards = if mig {
            whole_cards(
                plan,
                catalog,
                &n.labels,
                node_pool.get(name).copied(),
                parent_cards.get(name.as_str()).map(|s| s.len() as u32),
                offered,
            )
        } else {
            offered
        };
        // Only a MIG node's differs from what it offers: the others leave it empty (read as
        // `capacity`), so no node holds a second copy of its windows.
        let paid = if cards > offered + 1e-9 {
            paid_for(&capacity, &physical, cards, |k| grid.start(k))
        } else {
            Windows::new()
        };
        let label = |k: &str| n.labels.get(k).cloned();
        let pool = n.pool_label().map(str::to_owned);
        let reported = label("label_nvidia_com_gpu_product")
            .or_else(|| dcgm_models.get(name.as_str()).map(|m| (*m).to_owned()));
        let model = node_pool
            .get(name)
            .copied()
            .and_then(|p| catalog.sku(plan.provider(), p.sku.get()))
            .map(|s| s.gpu_model.clone())
            .or_else(|| reported.clone());
        out_nodes.insert(
            name.clone(),
            NodeSeries {
                pool,
                plan_pool: node_pool.get(name).map(|p| p.name.get().clone()),
                model,
                reported_model: reported,
                replicas: u.replicas,
                gpus: offered,
                cards,
                capacity,
                paid,
                allocated: Windows::new(),
                signal: None,
            },
        );
        units.insert(name.clone(), u);
    }
    NodeStage {
        units,
        out_nodes,
        replicas_from_cards,
        unknown_mig,
    }
}
