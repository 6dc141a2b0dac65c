//! What render writes differently per cloud comes from the cloud's profile
//! (`crate::cloud`): render asks for facts, never which cloud it is.

use crate::cloud::FloorArgument;
use crate::core::{Capacity, Provider};

/// One cloud's rendering facts.
pub(crate) type Profile = crate::cloud::Render;

/// The rendering facts of `provider`.
pub(crate) fn of(provider: Provider) -> &'static Profile {
    &crate::cloud::profile(provider).render
}

/// The oldest Terraform provider release the rendered file works with: raised by
/// `gpu_driver` where an AKS pool sets it, by `efa_maximum_interfaces` where an EKS pool
/// attaches EFA.
pub(crate) fn terraform_floor(profile: &Profile, pools: &[super::model::PoolView]) -> String {
    let (name, used) = match profile.floor_argument {
        FloorArgument::GpuDriver => ("gpu_driver", pools.iter().any(|p| p.gpu_instance.is_none())),
        FloorArgument::EfaInterfaces => ("efa_maximum_interfaces", pools.iter().any(|p| p.efa)),
    };
    super::floors::floor(profile.terraform_provider, |arg| used && arg == name)
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
