//! Workloads on another SKU, region or capacity type: a whole pool as one valid pool (what
//! the alternatives a pool lists are priced as), or one workload joining a pool (merges).

use std::borrow::Cow;

use super::candidate::{self, Candidate, Fit, Rate};
use super::choice::{fit_key, pool_key, Choice};
use super::PoolKey;
use crate::catalog::Catalog;
use crate::core::Capacity;

/// Each moved workload's index, new candidate and rate. The candidate is borrowed from the
/// workload's own list unless its shares were cut: the alternatives re-home every pool on
/// every SKU, region and capacity type, and cloning each member's candidate for each was
/// most of their cost.
pub(super) type Moved<'a, 'c> = Vec<(usize, Cow<'a, Candidate<'c>>, Rate)>;

/// The members of a pool on another SKU, region and capacity type, as one pool: each on its
/// own candidate there, time-sliced replicas all at the fewest shares per GPU any of them
/// needs (fewer, larger shares are always allowed, and sharing is node-wide). None when a
/// member cannot go there or the members would need different sharing settings.
pub(super) fn rehomed<'a, 'c>(
    choices: &'a [Choice<'_, 'c>],
    members: &[usize],
    sku: &str,
    region: &str,
    capacity: Capacity,
    catalog: &Catalog,
) -> Option<(PoolKey, Moved<'a, 'c>)> {
    let shares = members
        .iter()
        .filter_map(|&i| {
            let c = choices[i]
                .all
                .iter()
                .find(|c| c.sku.name == sku && c.region == region)?;
            c.fit.shared_replicas()
        })
        .min();
    // Members that share a candidate list (one shape) move alike: worked out once for them.
    let mut memo: std::collections::HashMap<
        *const Vec<Candidate<'c>>,
        (Cow<'a, Candidate<'c>>, Rate),
    > = std::collections::HashMap::new();
    let mut moved: Moved<'a, 'c> = Vec::with_capacity(members.len());
    for &i in members {
        let at = std::sync::Arc::as_ptr(&choices[i].all);
        let found = match memo.get(&at) {
            Some(hit) => hit.clone(),
            None => {
                let hit = moved_to(&choices[i], sku, region, capacity, shares, catalog)?;
                memo.insert(at, hit.clone());
                hit
            }
        };
        moved.push((i, found.0, found.1));
    }
    let key_of = |i: usize, c: &Candidate<'_>, r: &Rate| -> PoolKey {
        pool_key(&choices[i].d, c, r.capacity)
    };
    let (i0, c0, r0) = moved.first()?;
    let to = key_of(*i0, c0, r0);
    if moved.iter().any(|(i, c, r)| key_of(*i, c, r) != to) {
        return None;
    }
    Some((to, moved))
}

/// One workload joining the pool `to`: its candidate on that pool's SKU, region and capacity
/// type, with the pool's time-slicing shares, if it has one there and takes the pool's fit.
pub(super) fn joining<'a, 'c>(
    ch: &'a Choice<'_, 'c>,
    to: &PoolKey,
    catalog: &Catalog,
) -> Option<(Cow<'a, Candidate<'c>>, Rate)> {
    let shares = to.5.shares();
    let (c, rate) = moved_to(ch, &to.1, &to.2, to.3, shares, catalog)?;
    (fit_key(&c.fit, ch.d.mig_manager) == to.5).then_some((c, rate))
}

/// One workload on a SKU, region and capacity type: its candidate there, with time-sliced
/// replicas cut to `shares` per GPU where it would take more (fewer, larger shares are
/// always allowed), and the rate. None when it has no candidate or rate there.
pub(super) fn moved_to<'a, 'c>(
    ch: &'a Choice<'_, 'c>,
    sku: &str,
    region: &str,
    capacity: Capacity,
    shares: Option<u32>,
    catalog: &Catalog,
) -> Option<(Cow<'a, Candidate<'c>>, Rate)> {
    let mut c = Cow::Borrowed(
        ch.all
            .iter()
            .find(|c| c.sku.name == sku && c.region == region)?,
    );
    if let (&Fit::Shared { replicas, mps }, Some(n)) = (&c.fit, shares) {
        if replicas > n {
            let c = c.to_mut();
            c.fit = Fit::Shared { replicas: n, mps };
            let (ca, ma) = candidate::allocatable(c.sku, catalog);
            c.node_share = candidate::node_share(&c.fit, c.sku, c.gpu, &ch.d, ca, ma);
        }
    }
    let rate = c
        .rates(&ch.d)
        .into_iter()
        .find(|r| r.capacity == capacity)?;
    Some((c, rate))
}
