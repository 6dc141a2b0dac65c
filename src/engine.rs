//! Pure planning arithmetic shared by `check` and `recommend`: what capacity costs, what spot
//! interruptions waste, how much memory a replica has. Data in, numbers out; no I/O.

pub(crate) mod cost;
pub(crate) mod diff;
pub(crate) mod holds;
pub(crate) mod memory;
pub(crate) mod names;
pub mod purchases;
pub(crate) mod quota;
pub mod recommend;
pub(crate) mod spot;
