//! A pool's workloads on another SKU, region or capacity type, as one valid pool: what the
//! alternatives a pool lists are priced as.

use super::candidate::{self, Candidate, Fit, Rate};
use super::{fit_key, pool_sharing, Choice, PoolKey};
use crate::catalog::Catalog;
use crate::plan::raw::{Capacity, MigManager};

/// Each moved workload's index, new candidate and rate.
pub(super) type Moved<'c> = Vec<(usize, Candidate<'c>, Rate)>;

/// The members of a pool on another SKU, region and capacity type, as one pool: each on its
/// own candidate there, time-sliced replicas all at the fewest shares per GPU any of them
/// needs (fewer, larger shares are always allowed, and sharing is node-wide). None when a
/// member cannot go there or the members would need different sharing settings.
pub(super) fn rehomed<'c>(
    choices: &[Choice<'_, 'c>],
    members: &[usize],
    sku: &str,
    region: &str,
    capacity: Capacity,
    catalog: &Catalog,
    mm: MigManager,
) -> Option<(PoolKey, Moved<'c>)> {
    let mut moved: Moved<'c> = Vec::new();
    for &i in members {
        let ch = &choices[i];
        let c = ch
            .all
            .iter()
            .find(|c| c.sku.name == sku && c.region == region)?;
        let rate = c
            .rates(&ch.d)
            .into_iter()
            .find(|r| r.capacity == capacity)?;
        moved.push((i, c.clone(), rate));
    }
    let shares = moved
        .iter()
        .filter_map(|(_, c, _)| match c.fit {
            Fit::Shared { replicas } if replicas > 1 => Some(replicas),
            _ => None,
        })
        .min();
    if let Some(n) = shares {
        for (i, c, _) in &mut moved {
            if let Fit::Shared { replicas } = &mut c.fit {
                if *replicas > n {
                    *replicas = n;
                    let d = &choices[*i].d;
                    let (ca, ma) = candidate::allocatable(c.sku, catalog);
                    c.node_share = candidate::node_share(&c.fit, c.sku, c.gpu, d, ca, ma);
                }
            }
        }
    }
    let key_of = |i: usize, c: &Candidate<'_>, r: &Rate| -> PoolKey {
        (
            choices[i].d.segment,
            c.sku.name.clone(),
            c.region.clone(),
            r.capacity,
            pool_sharing(&c.fit),
            fit_key(&c.fit, mm),
        )
    };
    let (i0, c0, r0) = moved.first()?;
    let to = key_of(*i0, c0, r0);
    if moved.iter().any(|(i, c, r)| key_of(*i, c, r) != to) {
        return None;
    }
    Some((to, moved))
}
