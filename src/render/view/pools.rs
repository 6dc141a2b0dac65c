//! The pool stage of the view: each recommended pool as the node pools rendered for it, with
//! the sharing config, MIG geometry, reservation, Kueue flavor and Karpenter NodePool each
//! one implies.

use indexmap::IndexMap;

use super::{alias, KeyValue, MigConfigView, Options, PoolView, ReservationView};
use super::{SharingView, TaintView};
use crate::catalog::{Catalog, Sku};
use crate::engine::names::NodePoolName;
use crate::engine::recommend::{RecPool, Recommendation};
use crate::plan::Plan;
use crate::plan::Workload;
use crate::render::karpenter::{KarpenterView, SkippedView};
use crate::render::kueue::FlavorView;
use crate::render::model::taint;
use crate::render::provider::Profile;
use crate::render::request::aks_mig;

/// What the pools give the rest of the view.
#[derive(Default)]
pub(super) struct Pools {
    pub pools: Vec<PoolView>,
    pub reservations: Vec<ReservationView>,
    pub mig_configs: Vec<MigConfigView>,
    pub sharing_configs: Vec<SharingView>,
    pub flavors: Vec<FlavorView>,
    pub karpenter: Vec<KarpenterView>,
    pub karpenter_skipped: Vec<SkippedView>,
    pub any_operator_mig: bool,
    pub any_aks_mig: bool,
    /// The device-plugin config AKS-managed MIG pools take in a mixed-strategy cluster.
    pub single_mig_config: Option<String>,
    /// The rendered node pools of each recommended pool (one, or one per MIG node filling).
    pub rendered: IndexMap<String, Vec<String>>,
    /// MIG instances one node of each GPU Operator MIG node pool carries, by profile.
    pub view_layouts: IndexMap<String, IndexMap<String, u32>>,
}

/// What every pool is rendered against.
struct Cx<'a> {
    plan: &'a Plan,
    catalog: &'a Catalog,
    rec: &'a Recommendation,
    opts: &'a Options,
    profile: &'a Profile,
    /// The device plugin's MIG strategy is the cluster's (the chart's `mig.strategy`), mixed
    /// where the GPU Operator partitions any pool; AKS-managed MIG pools in such a cluster run
    /// the single strategy through a device-plugin config of their own, so each of their MIG
    /// instances is still one `nvidia.com/gpu`.
    mixed_cluster: bool,
}

/// One recommended pool as the stage sees it.
struct Pool<'a> {
    rec: &'a RecPool,
    sku: Option<&'a Sku>,
    members: Vec<&'a Workload>,
    /// AKS partitions its GPUs itself (`gpu_instance`).
    aks_managed: bool,
    /// The GPU Operator's mig-manager applies a mig-parted config chosen by node label.
    operator_mig: bool,
}

pub(super) fn pools(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    opts: &Options,
    profile: &Profile,
) -> Pools {
    let cx = Cx {
        plan,
        catalog,
        rec,
        opts,
        profile,
        mixed_cluster: rec.pools.iter().any(RecPool::operator_mig),
    };
    let (names, _) = crate::engine::names::node_pools(&rec.pools);
    let mut out = Pools::default();
    for (p, names) in rec.pools.iter().zip(&names) {
        let pool = Pool {
            rec: p,
            sku: catalog.sku(plan.provider(), &p.sku),
            members: p
                .workloads
                .iter()
                .filter_map(|w| plan.workload(w))
                .map(|w| w.get())
                .collect(),
            aks_managed: aks_mig(rec, p),
            operator_mig: p.operator_mig(),
        };
        out.add(&cx, &pool, names);
    }
    out
}

impl Pools {
    fn add(&mut self, cx: &Cx, pool: &Pool, names: &[NodePoolName]) {
        let p = pool.rec;
        let mut base = base_view(cx, pool, &names[0]);
        let host_mig = pool.sku.is_some_and(|s| cx.catalog.host_mig(s));
        let sharing = sharing_view(cx.plan, p, host_mig);
        if host_mig {
            self.host_mig(&mut base, sharing.is_none());
        }
        if let Some(sharing) = sharing {
            plugin_config(&mut base, &sharing.name);
            self.sharing_configs.push(sharing);
        }
        let views = if pool.operator_mig {
            self.any_operator_mig = true;
            self.operator_fillings(p, names, &base)
        } else if pool.aks_managed {
            self.aks_mig(cx, p, &mut base);
            vec![base]
        } else {
            vec![base]
        };
        self.rendered.insert(
            p.name.clone(),
            views.iter().map(|v| v.name.clone()).collect(),
        );
        for v in views {
            self.place(cx, pool, v);
        }
    }

    /// One node pool per distinct MIG node filling, each with its mig-parted config.
    fn operator_fillings(
        &mut self,
        p: &RecPool,
        names: &[NodePoolName],
        base: &PoolView,
    ) -> Vec<PoolView> {
        let mut views = Vec::new();
        for (v, per_node, config) in super::super::mig::node_fillings(p, names, base) {
            self.view_layouts.insert(v.name.clone(), per_node);
            self.mig_configs.push(config);
            views.push(v);
        }
        views
    }

    /// An AKS-managed MIG pool: its `gpu_instance`, and in a mixed cluster the labels that
    /// keep the operator's MIG manager and device plugin out of its way.
    fn aks_mig(&mut self, cx: &Cx, p: &RecPool, base: &mut PoolView) {
        let profile = p
            .mig_layout
            .as_ref()
            .and_then(|l| l.keys().next().cloned())
            .unwrap_or_default();
        let slices: String = profile.chars().take_while(char::is_ascii_digit).collect();
        base.gpu_instance = Some(format!("MIG{slices}g"));
        self.any_aks_mig = true;
        if !cx.mixed_cluster {
            return;
        }
        // The operator's MIG manager runs for the other pools: hand it this pool's own AKS
        // geometry, so applying the label's config changes nothing.
        let count = p
            .mig_layout
            .as_ref()
            .and_then(|l| l.get(&profile).copied())
            .unwrap_or(1);
        let geometry = super::super::operator::aks_geometry(&profile, count);
        base.labels.push(KeyValue {
            key: "nvidia.com/mig.config".into(),
            value: geometry.name.clone(),
        });
        if !self.mig_configs.iter().any(|c| c.name == geometry.name) {
            self.mig_configs.push(geometry);
        }
        self.single_strategy(base);
    }

    /// The device-plugin config that runs the single MIG strategy on this pool's nodes, so
    /// each MIG instance is one `nvidia.com/gpu` whatever the cluster's strategy.
    fn single_strategy(&mut self, base: &mut PoolView) {
        let name = "gpuplan-mig-single".to_owned();
        plugin_config(base, &name);
        self.single_mig_config = Some(name);
    }

    /// A pool on a size whose host sets MIG (Azure NCv6 over SR-IOV vGPU): the MIG manager
    /// stays off its nodes (the guest may not touch the host's instances, and the manager
    /// would reset a MIG node it has no config for), and its device plugin runs the single
    /// strategy, since CUDA reaches a MIG-mode GPU only by its MIG device (a GPU-UUID
    /// allocation fails `cuInit` with CUDA_ERROR_NO_DEVICE). A time-sliced pool carries the
    /// strategy in its own sharing config instead.
    fn host_mig(&mut self, base: &mut PoolView, own_config: bool) {
        base.labels.push(KeyValue {
            key: "nvidia.com/gpu.deploy.mig-manager".into(),
            value: "false".into(),
        });
        if own_config {
            self.single_strategy(base);
        }
    }

    /// A rendered node pool with what it brings: its reservation, Kueue flavor and Karpenter
    /// NodePool.
    fn place(&mut self, cx: &Cx, pool: &Pool, mut v: PoolView) {
        let p = pool.rec;
        // A pool on `capacity-reservation` is priced as its reservation, billed whether
        // used or not: its floor is reserved whatever the flag (issue 74: a declared one got
        // the node pool and no reservation). `--capacity-reservations` adds them for the
        // floors of the recommendation's pools that offer one.
        let reserved_here = p.capacity.reserves_floor();
        let asked = cx.opts.capacity_reservations && !p.capacity_options.is_empty();
        if (reserved_here || asked) && v.min > 0 {
            let ident = format!("{}_reservation", v.ident);
            v.reservation = Some(ident.clone());
            self.reservations.push(ReservationView {
                ident,
                name: format!("gpuplan-{}", v.name),
                region: v.region.clone(),
                region_alias: v.region_alias.clone(),
                sku: v.sku.clone(),
                count: v.min,
                pool_ident: v.ident.clone(),
                pool: v.name.clone(),
                efa: v.efa,
            });
        }
        let labels = flavor_labels(cx, p, &v);
        if cx.opts.karpenter {
            let mig = if pool.aks_managed {
                Some(true)
            } else if pool.operator_mig {
                Some(false)
            } else {
                None
            };
            let on_demand = cx
                .catalog
                .listed(
                    p.provider,
                    &p.sku,
                    &p.region,
                    crate::core::Capacity::OnDemand,
                )
                .map(|x| x.usd_per_hour);
            match super::super::karpenter::node_pool(
                cx.rec,
                p,
                &mut v,
                pool.sku,
                &pool.members,
                mig,
                on_demand,
            ) {
                Ok(k) => self.karpenter.push(k),
                Err(skipped) => self.karpenter_skipped.push(skipped),
            }
        }
        self.flavors.push(FlavorView {
            region: v.region.clone(),
            from_zero: v.min == 0 && v.autoscaled && !v.capacity_block,
            name: v.name.clone(),
            labels,
            taints: v.taints.clone(),
        });
        self.pools.push(v);
    }
}

/// A pool's cost a month as its files say it, or that its price is unknown offline (a
/// Capacity Block the catalog has no block price for), as `check` and `diff` say it.
fn monthly_cost(catalog: &Catalog, p: &crate::engine::recommend::RecPool) -> String {
    if crate::engine::cost::price_unknown(catalog, p.provider, &p.sku, &p.region, p.capacity) {
        unknown_price(p.provider)
    } else {
        let cost = format!("{} a month", crate::core::usd(p.monthly_cost_usd));
        // A declared pool priced at an on-demand stand-in says so, as `diff` and `check` do.
        match crate::engine::cost::node_hour(catalog, p.provider, &p.sku, &p.region, p.capacity)
            .and_then(|h| h.caveat)
        {
            Some(c) => format!("{cost} ({c})"),
            None => cost,
        }
    }
}

/// What a pool whose price is unknown offline says instead of a figure.
fn unknown_price(provider: crate::core::Provider) -> String {
    format!(
        "{}: not counted",
        crate::engine::cost::block_price_unknown_said(provider)
    )
}

/// The node pool a recommended pool renders as before any sharing or MIG is applied.
fn base_view(cx: &Cx, pool: &Pool, name: &NodePoolName) -> PoolView {
    let (p, profile) = (pool.rec, cx.profile);
    let mut labels: Vec<KeyValue> = p
        .labels
        .iter()
        .map(|(k, v)| KeyValue {
            key: k.clone(),
            value: v.clone(),
        })
        .collect();
    labels.push(KeyValue {
        key: "gpuplan.io/pool".into(),
        value: p.pool_label.clone(),
    });
    // AKS's own spot taint is declared too: azurerm expects it in `node_taints`, and the
    // flavor and serving values must tolerate it.
    let taints: Vec<TaintView> = p.taints.iter().map(|t| taint(t)).collect();
    let weights: Vec<f64> = pool
        .members
        .iter()
        .filter_map(|w| w.weights_gib())
        .collect();
    let disk_gib = cx
        .catalog
        .assumptions
        .node_disk_gib(&weights, profile.os_disk_floor_gib);
    let gang = pool.members.iter().any(|w| w.gang() > 1);
    let inter_node = pool.sku.map(|s| s.inter_node);
    let efa = profile.efa && gang && inter_node == Some(crate::catalog::InterNode::Efa);
    let infiniband = gang && inter_node == Some(crate::catalog::InterNode::Infiniband);
    PoolView {
        name: p.name.clone(),
        ident: crate::render::escape::hcl_ident(&p.name),
        aks_name: name.aks.clone(),
        rotation_name: name.rotation.clone(),
        region: p.region.clone(),
        region_alias: alias(&p.region),
        sku: p.sku.clone(),
        gpu_model: p.gpu_model.clone(),
        gpus_per_node: p.gpus_per_node,
        min: p.nodes.min,
        max: p.nodes.max,
        // A spot gang at a fixed size would never reassemble where evicted nodes are deleted
        // (`Profile::spot_autoscaled`).
        autoscaled: p.nodes.min != p.nodes.max
            || (profile.spot_autoscaled && p.capacity.is_evictable()),
        spot: p.capacity.is_evictable(),
        capacity_block: p.capacity.is_block(),
        capacity: p.capacity.as_str().to_owned(),
        gpu_instance: None,
        labels,
        taints,
        reservation: None,
        workloads: p.workloads.join(", "),
        monthly_cost: monthly_cost(cx.catalog, p),
        disk_gib,
        efa,
        placement_group: efa && !p.capacity.is_block(),
        launch_template: efa || p.capacity.is_block(),
        infiniband,
        vgpu: pool.sku.is_some_and(|s| s.vgpu),
        gang,
        terraform: true,
        karpenter_nodes: 0,
    }
}

/// The label that picks a node's device-plugin config (`devicePlugin.config` in the values).
fn plugin_config(base: &mut PoolView, name: &str) {
    base.labels.push(KeyValue {
        key: "nvidia.com/device-plugin.config".into(),
        value: name.to_owned(),
    });
}

/// The device-plugin config of a pool whose GPUs are shared by time-slicing or MPS; on a
/// size whose host sets MIG it runs the single MIG strategy too.
fn sharing_view(plan: &Plan, p: &RecPool, host_mig: bool) -> Option<SharingView> {
    let replicas = p.time_slicing_replicas?;
    // Neither the engine nor a declared pool sets replicas of a card for other modes.
    let kind = p.sharing.device_plugin_key()?;
    Some(SharingView {
        name: format!("gpuplan-{}", p.name),
        kind,
        replicas,
        rename_by_default: false,
        // The plan's setting where it states one (the device plugin as deployed); else on, so
        // a pod asking for two shares of one card fails at once instead of getting one card
        // twice (GP003).
        fail_requests_greater_than_one: plan
            .cluster()
            .and_then(|c| c.fail_requests_greater_than_one.as_ref())
            .is_none_or(|b| *b.get()),
        mig_strategy: if host_mig { "single" } else { "none" },
    })
}

/// The labels a Kueue flavor selects a rendered node pool by.
fn flavor_labels(cx: &Cx, p: &RecPool, v: &PoolView) -> Vec<KeyValue> {
    let mut labels = vec![KeyValue {
        key: "gpuplan.io/pool".into(),
        value: p.pool_label.clone(),
    }];
    // A node size of a pool of several is its own flavor, told apart by the instance type
    // every node carries (Terraform's and Karpenter's alike), so Kueue counts each size's quota
    // and puts the size it admits a pod to into its nodeSelector.
    if p.one_of_several_sizes(&cx.rec.pools) {
        labels.push(KeyValue {
            key: "node.kubernetes.io/instance-type".into(),
            value: p.sku.clone(),
        });
    }
    // A MIG node filling of its own is told apart by its mig-parted config label.
    labels.extend(
        v.labels
            .iter()
            .filter(|l| l.key == "nvidia.com/mig.config")
            .cloned(),
    );
    // EKS labels every managed node with its capacity type; under `--karpenter` a pool's nodes
    // may come from a Terraform floor and from Karpenter, which label it differently, so the
    // flavor selects only `gpuplan.io/pool`, which both carry.
    if let (Some(label), false) = (cx.profile.capacity_label, cx.opts.karpenter) {
        let (key, value) = label(p.capacity);
        labels.push(KeyValue {
            key: key.into(),
            value: value.into(),
        });
    }
    labels
}
