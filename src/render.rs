//! `gpuplan render`: the recommended pools as files for the real tools: a Terraform root
//! module (azurerm 4.x node pools or aws_eks_node_group), Helm values for the NVIDIA GPU
//! Operator (mig-parted and device-plugin sharing configs), Kueue objects, serving settings
//! and a README. Templates are handlebars files (`templates/render/`, overridable with
//! `--templates DIR`) fed a typed view model; strings reach them through escaping helpers,
//! never the default HTML escaping.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use handlebars::{
    Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderErrorReason,
};

mod directory;
pub(crate) mod escape;
pub mod floors;
pub mod karpenter;
pub mod kueue;
mod mig;
mod model;
mod operator;
mod provider;
mod request;
pub mod view;
mod workloads;
pub mod write_plan;

use directory::MAX_RENDERED_BYTES;
pub(crate) use directory::{drift, write};

/// Library failures of rendering: templates and files.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RenderError {
    #[error("template `{name}`: {message}")]
    #[diagnostic(code(gpuplan::render::template))]
    Template { name: String, message: String },
    #[error("cannot read template `{}`: {source}", path.display())]
    #[diagnostic(code(gpuplan::render::read))]
    ReadTemplate {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write `{}`: {source}", path.display())]
    #[diagnostic(code(gpuplan::render::write))]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `--check` only reads: what stopped it is said as a read.
    #[error("cannot read `{}`: {source}", path.display())]
    #[diagnostic(code(gpuplan::render::read))]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The language of an output: how a value a template writes bare (`{{x}}`) is escaped, and how
/// the file is finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Hcl,
    Yaml,
    Markdown,
}

/// One output: its path under the output directory, its template, and its language.
#[derive(Debug)]
pub(crate) struct Output_ {
    path: &'static str,
    template: &'static str,
    embedded: &'static str,
    format: Format,
}

/// An output whose template the cloud's profile names: `(name under templates/render/,
/// embedded text)`.
struct CloudOutput {
    path: &'static str,
    format: Format,
    template: fn(&crate::cloud::Render) -> (&'static str, &'static str),
}

impl CloudOutput {
    fn of(&self, provider: crate::core::Provider) -> Output_ {
        let (template, embedded) = (self.template)(&crate::cloud::profile(provider).render);
        Output_ {
            path: self.path,
            template,
            embedded,
            format: self.format,
        }
    }
}

const TERRAFORM: CloudOutput = CloudOutput {
    path: "terraform/main.tf",
    format: Format::Hcl,
    template: |r| (r.terraform_template, r.terraform_embedded),
};
/// Karpenter's NodePools with the cloud's node classes.
const KARPENTER: CloudOutput = CloudOutput {
    path: "karpenter/karpenter.yaml",
    format: Format::Yaml,
    template: |r| (r.karpenter_template, r.karpenter_embedded),
};
/// Kueue's objects, rendered once per cluster (`kueue/<region>.yaml`).
const KUEUE: Output_ = Output_ {
    path: "kueue/<region>.yaml",
    template: "kueue/kueue.yaml.hbs",
    embedded: include_str!("../templates/render/kueue/kueue.yaml.hbs"),
    format: Format::Yaml,
};
/// Kueue's manager configuration, for a plan with gangs (`waitForPodsReady`).
const KUEUE_VALUES: Output_ = Output_ {
    path: "kueue/values.yaml",
    template: "kueue/values.yaml.hbs",
    embedded: include_str!("../templates/render/kueue/values.yaml.hbs"),
    format: Format::Yaml,
};
const COMMON: [Output_; 5] = [
    Output_ {
        path: "helm/gpu-operator-values.yaml",
        template: "helm/gpu-operator-values.yaml.hbs",
        embedded: include_str!("../templates/render/helm/gpu-operator-values.yaml.hbs"),
        format: Format::Yaml,
    },
    Output_ {
        path: "workloads/values.yaml",
        template: "workloads/values.yaml.hbs",
        embedded: include_str!("../templates/render/workloads/values.yaml.hbs"),
        format: Format::Yaml,
    },
    Output_ {
        path: "serving/values.yaml",
        template: "serving/values.yaml.hbs",
        embedded: include_str!("../templates/render/serving/values.yaml.hbs"),
        format: Format::Yaml,
    },
    Output_ {
        path: "monitoring/values.yaml",
        template: "monitoring/values.yaml.hbs",
        embedded: include_str!("../templates/render/monitoring/values.yaml.hbs"),
        format: Format::Yaml,
    },
    Output_ {
        path: "README.md",
        template: "README.md.hbs",
        embedded: include_str!("../templates/render/README.md.hbs"),
        format: Format::Markdown,
    },
];

/// A helper that writes its one parameter quoted by `quote`.
fn quoting(
    name: &'static str,
    quote: fn(&str) -> String,
) -> impl Fn(
    &Helper<'_>,
    &Handlebars<'_>,
    &Context,
    &mut RenderContext<'_, '_>,
    &mut dyn Output,
) -> HelperResult
       + Send
       + Sync {
    move |h, _, _, _, out| {
        let v = h
            .param(0)
            .ok_or(RenderErrorReason::ParamNotFoundForIndex(name, 0))?
            .value();
        let text = match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.write(&quote(&text))?;
        Ok(())
    }
}

/// The registry: strict (a missing field is an error), the helpers `hcl` and `yaml` that
/// quote a value for the target language, and (set per output, [`Format`]) the escaping of
/// every value a template writes bare: the target language's, never HTML's.
fn registry() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_helper("hcl", Box::new(quoting("hcl", escape::hcl_string)));
    hb.register_helper("yaml", Box::new(quoting("yaml", escape::yaml_string)));
    hb.register_helper(
        "usd",
        Box::new(quoting("usd", |s| number(s, crate::core::usd))),
    );
    hb.register_helper(
        "rate",
        Box::new(quoting("rate", |s| number(s, crate::core::rate))),
    );
    hb.register_helper(
        "num",
        Box::new(quoting("num", |s| number(s, crate::core::num))),
    );
    hb
}

/// A number as a figure (`usd`: $1,234.56 a month, `rate`: an hourly price, `num`: a count
/// as reports write one); anything else
/// as written.
fn number(text: &str, as_figure: fn(f64) -> String) -> String {
    text.parse::<f64>()
        .map_or_else(|_| text.to_owned(), as_figure)
}

/// Blocks (`{{#if}}`, `{{#each}}`) a template may nest: the built-in ones nest four deep.
/// Deeper nesting, like a partial that includes itself, would exhaust the stack of the
/// template engine instead of failing cleanly.
const MAX_TEMPLATE_DEPTH: usize = 64;

/// A custom template gpuplan will compile: at most 1 MiB, blocks nested at most
/// [`MAX_TEMPLATE_DEPTH`] deep, and no partials (`{{> p}}`, `{{#*inline}}`), which the
/// built-in templates do not use and which can recurse without end.
fn check_template(name: &str, text: &str) -> Result<(), RenderError> {
    let refuse = |message: String| RenderError::Template {
        name: name.to_owned(),
        message,
    };
    let mut depth = 0usize;
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        rest = &rest[i + 2..];
        let tag = rest.trim_start_matches(['{', '~', ' ', '\t', '\n', '\r']);
        if tag.starts_with('>') || tag.starts_with("#>") || tag.starts_with("#*") {
            return Err(refuse(
                "partials are not supported in gpuplan templates".into(),
            ));
        }
        if tag.starts_with('#') {
            depth += 1;
            if depth > MAX_TEMPLATE_DEPTH {
                return Err(refuse(format!(
                    "blocks nested more than {MAX_TEMPLATE_DEPTH} deep"
                )));
            }
        } else if tag.starts_with('/') {
            depth = depth.saturating_sub(1);
        }
    }
    Ok(())
}

/// A custom template's text, if `dir` overrides this output (a template directory may
/// override some outputs and keep the rest).
fn custom_text(o: &Output_, dir: Option<&Path>) -> Result<Option<String>, RenderError> {
    let Some(d) = dir else {
        return Ok(None);
    };
    let path = d.join(o.template);
    if !path.exists() {
        return Ok(None);
    }
    let text =
        crate::fsio::read_text(&path, 1 << 20).map_err(|source| RenderError::ReadTemplate {
            path: path.clone(),
            source,
        })?;
    check_template(&path.display().to_string(), &text)?;
    Ok(Some(text))
}

/// One template rendered into at most `cap` bytes.
fn render_one(
    hb: &Handlebars<'_>,
    o: &Output_,
    text: &str,
    v: &impl serde::Serialize,
    cap: u64,
) -> Result<String, RenderError> {
    let fail = |message: String| RenderError::Template {
        name: o.template.to_owned(),
        message,
    };
    let mut sink = Capped {
        buf: Vec::new(),
        cap,
        over: false,
    };
    hb.render_template_to_write(text, v, &mut sink).map_err(|e| {
        fail(if sink.over {
            format!(
                "the output passed {} MiB, the limit for this rendered file (a template that loops over every workload inside a loop over every workload?)",
                sink.cap >> 20
            )
        } else {
            e.to_string()
        })
    })?;
    String::from_utf8(sink.buf).map_err(|e| fail(e.to_string()))
}

/// Every output file (relative path -> content), rendered in memory. A custom template may
/// write what the built-in one writes for the same plan several times over, and no more: a
/// loop over every workload inside a loop over every workload stops in seconds, not minutes.
pub fn render(
    v: &view::View,
    templates: Option<&Path>,
) -> Result<BTreeMap<String, String>, RenderError> {
    let mut hb = registry();
    let tf = TERRAFORM.of(v.provider);
    let mut out = BTreeMap::new();
    out.insert(tf.path.to_owned(), terraform(&mut hb, &tf, v, templates)?);
    let karpenter = v.karpenter_enabled.then(|| KARPENTER.of(v.provider));
    let kueue_values = v.kueue_config.is_some().then_some(&KUEUE_VALUES);
    for o in COMMON.iter().chain(karpenter.as_ref()).chain(kueue_values) {
        let text = render_output(&mut hb, o, v, templates)?;
        out.insert(o.path.to_owned(), text);
    }
    for cluster in &v.kueue {
        let file = kueue::KueueFile::of(v, cluster);
        let text = render_output(&mut hb, &KUEUE, &file, templates)?;
        out.insert(cluster.file.clone(), text);
    }
    // Data, not a template: what to buy, for a pipeline or a purchasing system to read.
    out.insert(
        "purchases.json".to_owned(),
        serde_json::to_string_pretty(&v.purchases).unwrap_or_default() + "\n",
    );
    Ok(out)
}

/// The view with the Terraform provider's version floor (`>= X` in `required_providers`).
#[derive(serde::Serialize)]
struct Floored<'v> {
    #[serde(flatten)]
    view: &'v view::View,
    provider_floor: &'v str,
}

/// The Terraform file, its provider floor read from the file itself (`floors`): rendered at
/// the baseline, and again at the floor the arguments it uses raise it to.
fn terraform(
    hb: &mut Handlebars<'_>,
    tf: &Output_,
    v: &view::View,
    templates: Option<&Path>,
) -> Result<String, RenderError> {
    let floors = &crate::cloud::profile(v.provider).render.terraform_floors;
    let at = |provider_floor| Floored {
        view: v,
        provider_floor,
    };
    let text = render_output(hb, tf, &at(floors.baseline), templates)?;
    let floor = self::floors::floor(floors, &text);
    if floor == floors.baseline {
        return Ok(text);
    }
    render_output(hb, tf, &at(&floor), templates)
}

/// One output rendered from its built-in template, or a custom one within bounds, and
/// finished for its language.
fn render_output(
    hb: &mut Handlebars<'_>,
    o: &Output_,
    v: &impl serde::Serialize,
    templates: Option<&Path>,
) -> Result<String, RenderError> {
    hb.register_escape_fn(match o.format {
        Format::Hcl => escape::hcl_text,
        Format::Yaml => escape::yaml_text,
        Format::Markdown => escape::md_text,
    });
    let built_in = render_one(hb, o, o.embedded, v, MAX_RENDERED_BYTES)?;
    let rendered = match custom_text(o, templates)? {
        None => built_in,
        Some(text) => {
            let cap = (built_in.len() as u64 * CUSTOM_GROWTH + (16 << 20)).min(MAX_RENDERED_BYTES);
            render_one(hb, o, &text, v, cap)?
        }
    };
    Ok(if o.format == Format::Hcl {
        escape::hcl_fmt(&rendered)
    } else {
        tidy(&rendered)
    })
}

/// How many times the built-in output of a file a custom template may write (plus 16 MiB).
const CUSTOM_GROWTH: u64 = 4;

/// A rendering's output that refuses to grow past `cap`: a custom template can loop inside a
/// loop over every workload, and the render stops there instead of running for minutes.
struct Capped {
    buf: Vec<u8>,
    cap: u64,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() as u64 + b.len() as u64 > self.cap {
            self.over = true;
            return Err(crate::fsio::too_large(self.cap));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Trailing spaces off, runs of blank lines folded to one, one final newline.
fn tidy(text: &str) -> String {
    let mut out = String::new();
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}
