//! The subcommands. Each takes its parsed arguments and returns an exit code.

pub mod catalog;
pub mod check;
pub mod diff;
pub mod explain;
pub mod init;
pub mod recommend;
pub mod render;
pub mod review;
pub mod schema;

use crate::catalog::{Catalog, CatalogError};
use crate::cli::Global;
use crate::output::Out;
use crate::plan::raw::Provider;

/// Load the catalog the flags ask for; on failure print why and return the exit code.
pub fn load_catalog(g: &Global, providers: &[Provider], out: &Out) -> Result<Catalog, u8> {
    let result = match &g.catalog {
        Some(dir) => Catalog::from_dir(dir, providers),
        None => Catalog::embedded(providers),
    };
    result.map_err(|e| {
        match e {
            CatalogError::Invalid(diags) => {
                out.stderr(&crate::diag::output::human(&diags, out.color))
            }
            other => out.stderr(&format!("error: {other}\n")),
        }
        crate::exit::INPUT
    })
}
