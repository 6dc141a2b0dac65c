//! What a price assumes, as data (`report::why` words it; GP023 and a declared pool's change
//! note embed those words).

/// Why a price is not the catalog's own figure for its capacity type, or what it assumes.
/// At least one of the two is set.
#[derive(Debug, Clone, PartialEq)]
pub struct Caveat {
    /// The on-demand price stands in for a capacity type the catalog has no figure for.
    pub stand_in: Option<StandIn>,
    /// A Capacity Block with no stated length, costed for these hours (its workloads'
    /// longest month).
    pub block_hours: Option<f64>,
}

/// The capacity type on-demand stands in for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StandIn {
    /// Capacity Blocks are priced per block; only a refresh knows them.
    CapacityBlock,
    /// No dated spot figure offline.
    Spot,
    /// No reservation price: `reservation` names the product; `live_only` when the cloud's
    /// reservation prices come only from a live refresh.
    Reserved {
        reservation: &'static str,
        live_only: bool,
    },
}
