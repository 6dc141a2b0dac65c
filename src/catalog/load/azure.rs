//! Azure's own files: the on-demand table, the retail price overrides (the only dated offline
//! source of Azure spot) and the spot eviction rates a refresh reads.

use super::prices::{figure_date, load_ondemand_table, AZURE_RETAIL_EU, AZURE_TABLE};
use super::refreshed::{load_eviction, load_retail_overrides};
use super::{CatalogError, Files};
use crate::catalog::{Catalog, ProviderCatalog};

/// Azure's price tables, retail overrides and spot eviction, oldest first.
pub(super) fn load(
    files: &Files,
    pc: &mut ProviderCatalog,
    catalog: &Catalog,
) -> Result<(), CatalogError> {
    let dated = |path: &str| figure_date(&catalog.sources, path);
    if let Some(f) = files.optional(AZURE_TABLE)? {
        load_ondemand_table(&f, pc, dated(AZURE_TABLE), true)?;
    }
    let retail = files.read("azure/prices-retail.csv")?;
    load_retail_overrides(&retail, pc)?;
    // The only dated offline source of Azure spot (Linux meters of four EU regions).
    if let Some(f) = files.optional(AZURE_RETAIL_EU)? {
        load_retail_overrides(&f, pc)?;
    }
    if let Some(f) = files.optional("azure/spot-eviction.csv")? {
        load_eviction(&f, pc, catalog)?;
    }
    Ok(())
}
