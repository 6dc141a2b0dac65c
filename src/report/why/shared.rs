//! The words of the engine's shared figures that rules and notes embed: a price's caveat
//! (`engine::cost::Caveat`) and what holds a replica's memory (`engine::memory::Holder`).

use std::fmt;

use crate::core::num;
use crate::engine::cost::{Caveat, StandIn};
use crate::engine::memory::Holder;

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Slice { profile, gib } => write!(f, "a `{profile}` slice ({} GiB)", num(*gib)),
            Holder::Gpus { count, gpu, gib } if *count > 1.0 => {
                write!(f, "{count} x {gpu} ({} GiB)", num(gib * count))
            }
            Holder::Gpus { gpu, gib, .. } => write!(f, "one {gpu} ({} GiB)", num(*gib)),
        }
    }
}

crate::core::serialize_as_text!(Caveat);

impl fmt::Display for Caveat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.stand_in {
            write!(f, "{s}")?;
        }
        if let Some(h) = self.block_hours {
            if self.stand_in.is_some() {
                f.write_str("; ")?;
            }
            write!(
                f,
                "the block's length is not in the plan (`block_hours`): costed for {} hours, its workloads' longest month",
                num(h)
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for StandIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StandIn::CapacityBlock => f.write_str(
                "no Capacity Block price in the catalog (`catalog refresh --provider aws`); on-demand price used",
            ),
            StandIn::Spot => f.write_str(
                "spot price unknown offline (no dated figure; a live refresh fetches it): costed at on-demand, no saving assumed",
            ),
            StandIn::Reserved {
                reservation,
                live_only: true,
            } => write!(
                f,
                "reserved price unknown: {}; costed at on-demand, no saving assumed",
                super::reservations_unknown(reservation, None)
            ),
            StandIn::Reserved {
                reservation,
                live_only: false,
            } => write!(
                f,
                "reserved price unknown (no {reservation} for this type and region in the catalog): costed at on-demand, no saving assumed"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each caveat in the words the cost module wrote before it became data.
    use super::*;

    #[test]
    fn memory_holders_read_as_before() {
        let slice = Holder::Slice {
            profile: "3g.40gb".into(),
            gib: 39.5,
        };
        assert_eq!(slice.to_string(), "a `3g.40gb` slice (39.5 GiB)");
        let gpus = |count| Holder::Gpus {
            count,
            gpu: "A100 80GB".into(),
            gib: 80.0,
        };
        assert_eq!(gpus(2.0).to_string(), "2 x A100 80GB (160 GiB)");
        assert_eq!(gpus(1.0).to_string(), "one A100 80GB (80 GiB)");
    }

    #[test]
    fn caveats_read_as_before() {
        let block = Caveat {
            stand_in: Some(StandIn::CapacityBlock),
            block_hours: Some(336.0),
        };
        assert_eq!(
            block.to_string(),
            "no Capacity Block price in the catalog (`catalog refresh --provider aws`); on-demand price used; the block's length is not in the plan (`block_hours`): costed for 336 hours, its workloads' longest month"
        );
        let length_only = Caveat {
            stand_in: None,
            block_hours: Some(730.0),
        };
        assert!(length_only
            .to_string()
            .starts_with("the block's length is not in the plan"));
        let reserved = |live_only| Caveat {
            stand_in: Some(StandIn::Reserved {
                reservation: "Reserved Instance",
                live_only,
            }),
            block_hours: None,
        };
        assert_eq!(
            reserved(true).to_string(),
            "reserved price unknown: Reserved Instance prices are unknown offline (a live refresh fetches them); costed at on-demand, no saving assumed"
        );
        assert_eq!(
            reserved(false).to_string(),
            "reserved price unknown (no Reserved Instance for this type and region in the catalog): costed at on-demand, no saving assumed"
        );
    }
}
