//! Command-line arguments (clap derive). Parsing only; `crate::run` does the work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "gpuplan", version, about = "GPU capacity planning: checked, costed node pools from a declarative plan", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: Global,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Read provider data from this directory (laid out like `providers/`) instead of the embedded catalog
    #[arg(long, global = true, value_name = "DIR", env = "GPUPLAN_CATALOG")]
    pub catalog: Option<PathBuf>,
    /// Print only errors (and the requested output)
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print what data was used and where it came from
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// Colour: auto follows the terminal and NO_COLOR
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check plan files against the rule catalog (exit 1 on error findings, 2 on unreadable plans)
    Check(CheckArgs),
    /// Print a rule's documentation
    Explain(ExplainArgs),
    /// Recommend node pools, SKUs, MIG geometry and capacity types, with costs (exit 1 when the plan cannot be met)
    Recommend(RecommendArgs),
    /// List or show what the catalog knows: GPU models, SKUs, prices with their dates and sources
    Catalog(CatalogArgs),
    /// Print the JSON Schema of the plan format (for editor completion)
    Schema,
    /// Write a commented starter plan
    Init(InitArgs),
    /// Print shell completions
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Human,
    Json,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Plan files (`-` reads standard input)
    #[arg(required = true, value_name = "PLAN")]
    pub plans: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Treat a class of findings as errors (`--deny warnings`)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub deny: Vec<DenyWhat>,
    /// Turn a rule off
    #[arg(short = 'A', long = "allow-rule", value_name = "RULE")]
    pub allow_rule: Vec<String>,
    /// Report a rule as a warning
    #[arg(short = 'W', long = "warn-rule", value_name = "RULE")]
    pub warn_rule: Vec<String>,
    /// Report a rule as an error
    #[arg(short = 'D', long = "deny-rule", value_name = "RULE")]
    pub deny_rule: Vec<String>,
    /// Evaluate dates (allow expiry, data age) as of this day, YYYY-MM-DD (default: today, or GPUPLAN_TODAY)
    #[arg(long, value_name = "DATE")]
    pub today: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Human,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// Plan file (`-` reads standard input)
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenyWhat {
    Warnings,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Rule id (GP001) or name (timeslice-memory-oversubscribed), or `recommend` for the
    /// recommender's model and assumptions
    #[arg(required_unless_present = "all")]
    pub rule: Option<String>,
    /// Every rule
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    /// Only this provider
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Show one GPU model with its MIG profiles and placements
    #[arg(long, value_name = "MODEL", conflicts_with = "sku")]
    pub gpu: Option<String>,
    /// Show one SKU with its prices per region
    #[arg(long, value_name = "SKU")]
    pub sku: Option<String>,
    /// Only SKUs sold in this region
    #[arg(long)]
    pub region: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Azure,
    Aws,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the plan (`-` for standard output)
    #[arg(default_value = "gpuplan.toml")]
    pub path: PathBuf,
    #[arg(long, value_enum, default_value_t = ProviderArg::Azure)]
    pub provider: ProviderArg,
    /// Overwrite an existing file
    #[arg(long)]
    pub force: bool,
}
