//! Pure planning arithmetic shared by `check` and `recommend`: what capacity costs, what spot
//! interruptions waste, how much memory a replica has. Data in, numbers out; no I/O.

pub mod cost;
pub mod diff;
pub mod memory;
pub mod recommend;
pub mod spot;
