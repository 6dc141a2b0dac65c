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

pub(crate) mod escape;
pub mod view;
pub mod write_plan;

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
}

/// One output: its path under the output directory, its template, and how it is finished.
struct Output_ {
    path: &'static str,
    template: &'static str,
    embedded: &'static str,
    hcl: bool,
}

const AZURE: Output_ = Output_ {
    path: "terraform/main.tf",
    template: "terraform/azure.tf.hbs",
    embedded: include_str!("../templates/render/terraform/azure.tf.hbs"),
    hcl: true,
};
const AWS: Output_ = Output_ {
    path: "terraform/main.tf",
    template: "terraform/aws.tf.hbs",
    embedded: include_str!("../templates/render/terraform/aws.tf.hbs"),
    hcl: true,
};
const KARPENTER: Output_ = Output_ {
    path: "karpenter/karpenter.yaml",
    template: "karpenter/karpenter.yaml.hbs",
    embedded: include_str!("../templates/render/karpenter/karpenter.yaml.hbs"),
    hcl: false,
};
const COMMON: [Output_; 4] = [
    Output_ {
        path: "helm/gpu-operator-values.yaml",
        template: "helm/gpu-operator-values.yaml.hbs",
        embedded: include_str!("../templates/render/helm/gpu-operator-values.yaml.hbs"),
        hcl: false,
    },
    Output_ {
        path: "kueue/kueue.yaml",
        template: "kueue/kueue.yaml.hbs",
        embedded: include_str!("../templates/render/kueue/kueue.yaml.hbs"),
        hcl: false,
    },
    Output_ {
        path: "serving/values.yaml",
        template: "serving/values.yaml.hbs",
        embedded: include_str!("../templates/render/serving/values.yaml.hbs"),
        hcl: false,
    },
    Output_ {
        path: "README.md",
        template: "README.md.hbs",
        embedded: include_str!("../templates/render/README.md.hbs"),
        hcl: false,
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

/// The registry: strict (a missing field is an error), no HTML escaping, the helpers `hcl`
/// and `yaml` that quote a value for the target language.
fn registry() -> Handlebars<'static> {
    let mut hb = Handlebars::new();
    hb.set_strict_mode(true);
    hb.register_escape_fn(handlebars::no_escape);
    hb.register_helper("hcl", Box::new(quoting("hcl", escape::hcl_string)));
    hb.register_helper("yaml", Box::new(quoting("yaml", escape::yaml_string)));
    hb
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

fn template_text(o: &Output_, dir: Option<&Path>) -> Result<String, RenderError> {
    match dir {
        None => Ok(o.embedded.to_owned()),
        Some(d) => {
            let path = d.join(o.template);
            if path.exists() {
                let text = crate::source::read_bounded(&path, 1 << 20)
                    .and_then(|b| {
                        String::from_utf8(b)
                            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                    })
                    .map_err(|source| RenderError::ReadTemplate {
                        path: path.clone(),
                        source,
                    })?;
                check_template(&path.display().to_string(), &text)?;
                Ok(text)
            } else {
                // A template directory may override some outputs and keep the rest.
                Ok(o.embedded.to_owned())
            }
        }
    }
}

/// Every output file (relative path -> content), rendered in memory.
pub fn render(
    v: &view::View,
    templates: Option<&Path>,
) -> Result<BTreeMap<String, String>, RenderError> {
    let hb = registry();
    let tf = if v.provider == "aws" { AWS } else { AZURE };
    let mut out = BTreeMap::new();
    let karpenter = v.karpenter_enabled.then_some(&KARPENTER);
    for o in std::iter::once(&tf).chain(COMMON.iter()).chain(karpenter) {
        let text = template_text(o, templates)?;
        let rendered = hb
            .render_template(&text, v)
            .map_err(|e| RenderError::Template {
                name: o.template.to_owned(),
                message: e.to_string(),
            })?;
        let finished = if o.hcl {
            escape::hcl_fmt(&rendered)
        } else {
            tidy(&rendered)
        };
        out.insert(o.path.to_owned(), finished);
    }
    Ok(out)
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

/// Files under `dir` that differ from what would be written (missing ones included).
pub(crate) fn drift(dir: &Path, files: &BTreeMap<String, String>) -> Vec<String> {
    files
        .iter()
        .filter(|(rel, content)| {
            std::fs::read_to_string(dir.join(rel)).map_or(true, |on_disk| &on_disk != *content)
        })
        .map(|(rel, _)| rel.clone())
        .collect()
}

/// Write every file, all or nothing as far as the file system allows: each goes to a
/// temporary file beside its target first; only when all are written are they renamed into
/// place, and a rename that fails puts back what the others replaced. `--check` never sees
/// a mixed set.
pub(crate) fn write(dir: &Path, files: &BTreeMap<String, String>) -> Result<(), RenderError> {
    let fail = |path: &Path, source: std::io::Error| RenderError::Write {
        path: path.to_owned(),
        source,
    };
    // Stage: every file written to an exclusively created, unpredictably named temporary
    // file beside its target (a planted symlink is never followed); dropped on failure.
    let mut staged = Vec::new();
    for (rel, content) in files {
        let target = dir.join(rel);
        let parent = target.parent().unwrap_or(dir).to_owned();
        std::fs::create_dir_all(&parent).map_err(|e| fail(&parent, e))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}.gpuplan-"))
            .suffix(".tmp")
            .tempfile_in(&parent)
            .map_err(|e| fail(&parent, e))?;
        use std::io::Write as _;
        tmp.write_all(content.as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| fail(tmp.path(), e))?;
        // What the target held before, to put back if a later file cannot be swapped in.
        let before = match std::fs::symlink_metadata(&target) {
            Ok(m) if m.is_file() => Some(std::fs::read(&target).map_err(|e| fail(&target, e))?),
            _ => None,
        };
        staged.push((tmp, target, before));
    }
    // Swap: each rename is atomic; on a failure the files already swapped get their old
    // content back (or go, if they are new), so the directory never holds a mixed set.
    let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for (tmp, target, before) in staged {
        if let Err(e) = tmp.persist(&target) {
            for (t, old) in done.into_iter().rev() {
                match old {
                    Some(bytes) => {
                        let _ = crate::render::restore(&t, &bytes);
                    }
                    None => {
                        let _ = std::fs::remove_file(&t);
                    }
                }
            }
            return Err(fail(&target, e.error));
        }
        done.push((target, before));
    }
    Ok(())
}

/// Put a file's previous content back, atomically.
fn restore(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".gpuplan-restore-")
        .tempfile_in(parent)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
