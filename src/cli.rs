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
    /// Refresh cache (`catalog refresh` writes it; commands use its files while they are newer than the embedded ones). Default: $XDG_CACHE_HOME/gpuplan or ~/.cache/gpuplan
    #[arg(
        long,
        global = true,
        value_name = "DIR",
        env = "GPUPLAN_CACHE",
        hide_env_values = true
    )]
    pub cache: Option<PathBuf>,
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
    /// Write Terraform, Helm values, Kueue objects and serving settings for the recommended pools
    Render(RenderArgs),
    /// Review allocated against used GPU-seconds from Prometheus or files: idle, stalled, what to change
    Review(ReviewArgs),
    /// Compare two versions of a plan: what changed and what it does to the recommended cost
    Diff(DiffArgs),
    /// List or show what the catalog knows: GPU models, SKUs, prices with their dates and sources
    Catalog(CatalogArgs),
    /// Print the JSON Schema of the plan format (for editor completion), or of a JSON output
    Schema {
        /// Which schema: the plan file's, or that of a command's JSON output
        #[arg(long, value_enum, default_value_t = crate::report::schemas::Output::Plan)]
        output: crate::report::schemas::Output,
    },
    /// Keep one comment per pull request (GitHub) or merge request (GitLab) up to date
    Comment(CommentArgs),
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// Annotated source snippets
    Human,
    /// `gpuplan.findings/v1`
    Json,
    /// SARIF 2.1.0 for code scanning
    Sarif,
    /// GitHub Actions annotations (`::error file=...`)
    Github,
    /// A pull-request comment
    Markdown,
    /// JUnit XML: a test suite per plan, a test case per rule, failures for error findings
    Junit,
    /// GitLab Code Quality JSON (`artifacts:reports:codequality`)
    Gitlab,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Plan files (`-` reads standard input)
    #[arg(required = true, value_name = "PLAN")]
    pub plans: Vec<PathBuf>,
    /// Refresh the plan's provider data first (`catalog refresh --plan PLAN`: prices, eviction,
    /// and quota and SKUs where credentials allow); a failed refresh stops the command
    #[arg(long)]
    pub live: bool,
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,
    /// Report only findings this baseline does not record (the rest show as suppressed)
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record today's findings as the baseline (written atomically) and exit 0
    #[arg(long, value_name = "FILE", conflicts_with = "baseline")]
    pub write_baseline: Option<PathBuf>,
    /// SARIF: where the rule documentation lives; each rule links to URL#gpNNN
    #[arg(long, value_name = "URL", env = "GPUPLAN_DOCS_URL")]
    pub docs_url: Option<String>,
    /// Markdown: prefix for links to plan lines, e.g. https://github.com/OWNER/REPO/blob/SHA/
    #[arg(long, value_name = "URL")]
    pub link_base: Option<String>,
    /// The plan before the change (a missing file is an empty plan: the plan is new); the
    /// Markdown comment states the cost delta and what changed
    #[arg(long, value_name = "PLAN", conflicts_with = "base_ref")]
    pub base: Option<PathBuf>,
    /// The plan before the change as committed at this git revision (`origin/main`); a
    /// revision without the plan is an empty base
    #[arg(long, value_name = "REF")]
    pub base_ref: Option<String>,
    /// Exit 1 when the cost rises past this limit from the base (`10%`, or USD: `500`); the
    /// Markdown comment's headline names it. Needs `--base` or `--base-ref`
    #[arg(long, value_name = "LIMIT")]
    pub fail_on_increase: Option<String>,
    /// Which cost `--fail-on-increase` holds to its limit
    #[arg(long, value_enum, default_value_t = GuardWhat::Both)]
    pub guard: GuardWhat,
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
    /// Refresh the plan's provider data first (`catalog refresh --plan PLAN`); a failed
    /// refresh stops the command
    #[arg(long)]
    pub live: bool,
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,
    /// Write the plan with its `[[pool]]` tables replaced by the recommended pools (and the
    /// server memory caps they need) to OUT, keeping its comments and order; OUT may be PLAN
    #[arg(long, value_name = "OUT")]
    pub write_plan: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Plan file (`-` reads standard input)
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// Output directory (created if missing; only gpuplan's files in it are replaced)
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Templates overriding the built-in ones (same layout as `templates/render/`)
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Exit 1 when the files on disk differ from what would be rendered; write nothing
    #[arg(long)]
    pub check: bool,
    /// Render the plan's declared `[[pool]]` entries instead of the recommendation
    #[arg(long)]
    pub declared: bool,
    /// With `--declared`: render even when `check` finds errors in the plan
    #[arg(long, requires = "declared")]
    pub force: bool,
    /// Render into a directory holding files gpuplan did not render there (they are replaced)
    #[arg(long)]
    pub overwrite: bool,
    /// Also reserve capacity for user-facing floors (Azure capacity reservation groups, EC2 On-Demand Capacity Reservations)
    #[arg(long)]
    pub capacity_reservations: bool,
    /// Also write `karpenter/karpenter.yaml`: a Karpenter NodePool per pool with its
    /// EC2NodeClass (EKS) or AKSNodeClass (AKS node auto-provisioning); Kueue flavors then
    /// select the labels Karpenter's nodes carry
    #[arg(long)]
    pub karpenter: bool,
    /// Kueue API version of the rendered objects: v1beta2 (Kueue's storage version) or
    /// v1beta1 for clusters that predate it
    #[arg(long, value_enum, default_value_t = KueueApi::V1beta2)]
    pub kueue_api: KueueApi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KueueApi {
    V1beta1,
    V1beta2,
}

impl KueueApi {
    pub(crate) fn api_version(self) -> &'static str {
        match self {
            KueueApi::V1beta1 => "kueue.x-k8s.io/v1beta1",
            KueueApi::V1beta2 => "kueue.x-k8s.io/v1beta2",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReviewFormat {
    Markdown,
    Json,
    /// A self-contained page with charts
    Html,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Plan file (`-` reads standard input)
    #[arg(value_name = "PLAN")]
    pub plan: PathBuf,
    /// Prometheus (or Thanos/Mimir) base URL
    #[arg(long, value_name = "URL", env = "GPUPLAN_PROMETHEUS_URL")]
    pub prometheus: Option<String>,
    /// Bearer token for Prometheus
    #[arg(
        long,
        value_name = "TOKEN",
        env = "GPUPLAN_PROMETHEUS_TOKEN",
        hide_env_values = true
    )]
    pub bearer_token: Option<String>,
    /// Basic auth for Prometheus, USER:PASSWORD
    #[arg(
        long,
        value_name = "USER:PASSWORD",
        env = "GPUPLAN_PROMETHEUS_BASIC_AUTH",
        hide_env_values = true
    )]
    pub basic_auth: Option<String>,
    /// Seconds to wait for Prometheus per request
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout: u64,
    /// Telemetry as CSV: timestamp,namespace,pod,allocated_gpus,used_gpus[,tokens_total][,app]
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Telemetry in the Prometheus text or OpenMetrics format
    #[arg(long, value_name = "FILE")]
    pub metrics: Option<PathBuf>,
    /// Start of the window (RFC 3339 or Unix seconds)
    #[arg(long)]
    pub from: Option<String>,
    /// End of the window (default: now for Prometheus, the data's end for files)
    #[arg(long)]
    pub to: Option<String>,
    /// Length of the window ending at `--to` (default 90d for Prometheus)
    #[arg(long, value_name = "DURATION")]
    pub window: Option<String>,
    /// Aggregation step: each window's samples are summed, so short jobs count exactly
    /// (default: chosen from the window, at least 60s and under 11,000 windows)
    #[arg(long, value_name = "DURATION")]
    pub step: Option<String>,
    /// Review one cluster of a multi-cluster store (Thanos, Mimir, VictoriaMetrics): its
    /// `cluster` label. Repeat it to review several as one fleet
    #[arg(long, value_name = "NAME")]
    pub cluster: Vec<String>,
    /// The purchase list `gpuplan render` wrote (purchases.json): each reservation bought is
    /// measured against what its pool's nodes held
    #[arg(long, value_name = "FILE")]
    pub purchases: Option<std::path::PathBuf>,
    /// Review every cluster the data holds as one fleet (the plan's demand is fleet-wide: next
    /// quarter's plan is proposed from all of them)
    #[arg(long, conflicts_with = "cluster")]
    pub all_clusters: bool,
    /// A pod allocated with near-zero activity this long is stalled
    #[arg(long, default_value = "2h", value_name = "DURATION")]
    pub stalled_after: String,
    #[arg(long, value_enum, default_value_t = ReviewFormat::Markdown)]
    pub format: ReviewFormat,
    /// Write the report here (atomically) instead of standard output
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write next quarter's plan to NEXT: each measured workload's replicas (min from its
    /// p10, max from the peak projected to the end of next quarter plus headroom), measured
    /// hours and right-sizes check accepts, with the figures beside each changed line; the
    /// rest kept as written (NEXT may be PLAN)
    #[arg(long, value_name = "NEXT")]
    pub write_plan: Option<PathBuf>,
    /// Headroom above the projected peak for `replicas.max`, in percent (default: the
    /// catalog's `[review] headroom`, 15%)
    #[arg(long, value_name = "PERCENT")]
    pub headroom: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// BASE and HEAD plan files, or only HEAD with `--base-ref`
    #[arg(required = true, num_args = 1..=2, value_name = "PLAN")]
    pub plans: Vec<PathBuf>,
    /// Read the base version of HEAD from git at this revision (e.g. `origin/main`)
    #[arg(long, value_name = "REF")]
    pub base_ref: Option<String>,
    #[arg(long, value_enum, default_value_t = ReportFormat::Human)]
    pub format: ReportFormat,
    /// Exit 1 when the monthly cost rises by more than this: `10%` or `500` (USD); held to
    /// the recommended fleet and the declared pools each (`--guard`), expected and at
    /// maximum (every node of `nodes.max`) each
    #[arg(long, value_name = "LIMIT")]
    pub fail_on_increase: Option<String>,
    /// Which cost `--fail-on-increase` watches: the declared pools (what render --declared
    /// creates, as Infracost prices it), the recommendation, or both
    #[arg(long, value_enum, default_value_t = GuardWhat::Both)]
    pub guard: GuardWhat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GuardWhat {
    Recommended,
    Declared,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenyWhat {
    Warnings,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Rule id (GP001) or name (timeslice-memory-oversubscribed), `recommend` for the
    /// recommender's model and assumptions, or `review` for how the review measures and how
    /// it forecasts next quarter
    #[arg(required_unless_present = "all")]
    pub rule: Option<String>,
    /// Every rule
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Subcommand)]
pub enum CatalogAction {
    /// Fetch today's provider data into the refresh cache
    Refresh(RefreshArgs),
}

#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Provider to refresh
    #[arg(long, value_enum)]
    pub provider: ProviderArg,
    /// Regions to refresh (repeatable); default: the regions of `--plan`
    #[arg(long = "region", value_name = "REGION")]
    pub regions: Vec<String>,
    /// Take the regions from this plan
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// Refresh only these: prices, eviction, quota, skus (comma-separated; default all four).
    /// Prices need no credentials on Azure
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Azure subscription for quota and SKU availability
    #[arg(
        long,
        env = "AZURE_SUBSCRIPTION_ID",
        value_name = "ID",
        hide_env_values = true
    )]
    pub subscription: Option<String>,
    /// Azure Resource Manager endpoint (sovereign clouds, proxies)
    #[arg(long, env = "GPUPLAN_AZURE_MANAGEMENT_URL", value_name = "URL")]
    pub management_url: Option<String>,
    /// Azure Retail Prices endpoint
    #[arg(long, env = "GPUPLAN_AZURE_PRICES_URL", value_name = "URL")]
    pub prices_url: Option<String>,
    /// AWS Price List Query API endpoint (EC2 and Service Quotas endpoints follow the SDK's
    /// AWS_ENDPOINT_URL_EC2 / AWS_ENDPOINT_URL_SERVICE_QUOTAS)
    #[arg(long, env = "GPUPLAN_AWS_PRICING_URL", value_name = "URL")]
    pub pricing_url: Option<String>,
    /// AWS Spot Instance Advisor data file
    #[arg(long, env = "GPUPLAN_AWS_SPOT_ADVISOR_URL", value_name = "URL")]
    pub spot_advisor_url: Option<String>,
    /// Print the requests it would make, and make none
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds to wait for each request
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub action: Option<CatalogAction>,
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

/// A cloud as the command line names it: the plan's own `provider` values.
pub type ProviderArg = crate::core::Provider;

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

#[derive(Debug, Args)]
pub struct CommentArgs {
    #[command(subcommand)]
    pub forge: Forge,
}

#[derive(Debug, Subcommand)]
pub enum Forge {
    /// A pull request's comment (token: GITHUB_TOKEN, else GH_TOKEN)
    Github(GithubArgs),
    /// A merge request's note (token: GITLAB_TOKEN)
    Gitlab(GitlabArgs),
}

#[derive(Debug, Args)]
pub struct CommentCommon {
    /// The comment's text, Markdown (`-` reads standard input); blank means nothing to say
    #[arg(long, value_name = "FILE")]
    pub body: PathBuf,
    /// Which comment is gpuplan's: the hidden marker's tag, so one thread can hold several
    #[arg(long, default_value = "gpuplan", value_name = "TAG")]
    pub tag: String,
    #[arg(long, value_enum, default_value_t = crate::comment::Behavior::Update)]
    pub behavior: crate::comment::Behavior,
    /// With a blank body, delete gpuplan's comment (else it is edited to say there is nothing
    /// to report, and none is made)
    #[arg(long)]
    pub delete_when_empty: bool,
    /// Say what would be done; change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Seconds each request may take
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    pub timeout: u64,
    /// Whose comments are gpuplan's to edit and delete: the token's own user, asked of the
    /// forge (`GET /user`); name it for a token that cannot ask (a GitHub App's installation
    /// token comments as `APP-SLUG[bot]`; Actions' GITHUB_TOKEN, `github-actions[bot]`, is
    /// known without asking)
    #[arg(long, value_name = "LOGIN")]
    pub author: Option<String>,
}

#[derive(Debug, Args)]
pub struct GithubArgs {
    #[command(flatten)]
    pub common: CommentCommon,
    /// The repository, OWNER/NAME (in Actions: GITHUB_REPOSITORY)
    #[arg(long, env = "GITHUB_REPOSITORY", value_name = "OWNER/NAME")]
    pub repo: String,
    /// The pull request's number (in Actions: read from GITHUB_REF, refs/pull/N/merge)
    #[arg(long, value_name = "N")]
    pub pull_request: Option<u64>,
    /// The REST API's address (GitHub Enterprise Server: https://HOST/api/v3)
    #[arg(
        long,
        env = "GITHUB_API_URL",
        default_value = "https://api.github.com",
        value_name = "URL"
    )]
    pub api_url: String,
}

#[derive(Debug, Args)]
pub struct GitlabArgs {
    #[command(flatten)]
    pub common: CommentCommon,
    /// The project's id or path, group/project (in GitLab CI: CI_PROJECT_ID)
    #[arg(long, env = "CI_PROJECT_ID", value_name = "ID|PATH")]
    pub project: String,
    /// The merge request's IID (in GitLab CI: CI_MERGE_REQUEST_IID)
    #[arg(long, env = "CI_MERGE_REQUEST_IID", value_name = "IID")]
    pub merge_request: u64,
    /// The REST API's address (in GitLab CI: CI_API_V4_URL)
    #[arg(
        long,
        env = "CI_API_V4_URL",
        default_value = "https://gitlab.com/api/v4",
        value_name = "URL"
    )]
    pub api_url: String,
}
