//! What render writes differently per cloud comes from the cloud's profile
//! (`crate::cloud`): render asks for facts, never which cloud it is.

use crate::core::{Capacity, Provider};

/// One cloud's rendering facts.
pub(crate) type Profile = crate::cloud::Render;

/// The rendering facts of `provider`.
pub(crate) fn of(provider: Provider) -> &'static Profile {
    &crate::cloud::profile(provider).render
}

/// Karpenter's `karpenter.sh/capacity-type` for a capacity: reserved for capacity held for
/// the pool (an ODCR or a Capacity Block), on-demand for the billing-only reservations.
pub(crate) fn karpenter_capacity(c: Capacity) -> &'static str {
    if c.is_evictable() {
        "spot"
    } else if c.is_held_capacity() {
        "reserved"
    } else {
        "on-demand"
    }
}
