//! How a pod claims its GPU, apart from what it gets ([`super::Sharing`]).

/// The route a pod's GPU request takes. [`Sharing`](super::Sharing) says what the pod holds
/// (a whole GPU, a MIG instance, a time-sliced replica); this says who hands it over. A
/// Dynamic Resource Allocation driver is one more route to the same holds, so DRA is decided
/// here and is never a sharing mode: the plan's `dra = true` is this and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuClaim {
    /// The device plugin's extended resource (`nvidia.com/gpu`, `nvidia.com/mig-…`): what
    /// render writes, for every workload.
    DevicePlugin,
    /// A ResourceClaim served by NVIDIA's DRA driver, whose GPU allocation (dynamic MIG
    /// included) is not yet officially supported: the plan records it and GP020 warns.
    Dra,
}

impl GpuClaim {
    /// The plan's `dra` flag as a route (absent or false: the device plugin).
    pub fn from_dra_flag(dra: bool) -> Self {
        if dra {
            GpuClaim::Dra
        } else {
            GpuClaim::DevicePlugin
        }
    }

    /// Whether the claim rests on a driver whose GPU allocation its vendor does not yet
    /// support in production.
    pub fn is_unsupported_allocation(self) -> bool {
        match self {
            GpuClaim::DevicePlugin => false,
            GpuClaim::Dra => true,
        }
    }
}
