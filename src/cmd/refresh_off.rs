//! `catalog refresh` and `--live` in a build without the `live` feature: the provider clients
//! are not compiled in, so say so instead of pretending the data was fetched.

use crate::cli::{Global, RefreshArgs};
use crate::core::exit;
use crate::output::Out;

const MISSING: &str = "error: this gpuplan was built without the `live` feature, so it has no provider clients; \
rebuild with default features (`cargo install gpuplan`) to refresh, or run without `--live` on the embedded catalog \
and any existing refresh cache\n";

pub(crate) fn live(_g: &Global, _plan: &std::path::Path, out: &Out) -> Result<(), u8> {
    out.stderr(MISSING);
    Err(exit::INPUT)
}

pub(crate) fn run(_g: &Global, _args: &RefreshArgs, out: &Out) -> u8 {
    out.stderr(MISSING);
    exit::INPUT
}
