//! `catalog refresh` and `--live` in a build without the `live` feature: the provider clients
//! are not compiled in, so say so instead of pretending the data was fetched.

use crate::cli::{Global, RefreshArgs};
use crate::output::Out;

use super::{CmdError, CmdResult};

pub(crate) fn live(_g: &Global, _plan: &std::path::Path, _out: &Out) -> CmdResult<()> {
    Err(CmdError::NoLive)
}

pub(crate) fn run(_g: &Global, _args: &RefreshArgs, _out: &Out) -> CmdResult {
    Err(CmdError::NoLive)
}
