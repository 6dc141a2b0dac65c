//! `gpuplan explain RULE` / `--all`: the documentation next to each rule's code.

use crate::cli::{ExplainArgs, Format};
use crate::core::exit;
use crate::output::Out;
use crate::rules::{self, Rule, RuleDocs, RULES};

pub(crate) fn run(args: &ExplainArgs, out: &Out) -> super::CmdResult {
    // The models behind a command, beside the rules: their text takes today's catalog.
    type Text = fn(&crate::catalog::Catalog) -> String;
    let topics: [(&str, Text); 2] = [
        ("recommend", crate::report::model::model_text),
        ("review", crate::report::method::method_text),
    ];
    if let Some((_, text)) = topics.iter().find(|(name, _)| {
        args.rule
            .as_deref()
            .is_some_and(|r| r.eq_ignore_ascii_case(name))
    }) {
        let c = crate::catalog::Catalog::embedded(&crate::core::Provider::ALL)?;
        out.stdout(&text(&c));
        return Ok(exit::OK);
    }
    let selected: Vec<&dyn Rule> = if args.all {
        RULES.to_vec()
    } else {
        let id = args.rule.as_deref().unwrap_or_default();
        match rules::by_id(id) {
            Some(r) => vec![r],
            None => {
                let ids: Vec<String> = RULES.iter().map(|r| r.id().as_str().to_owned()).collect();
                let hint = crate::plan::load::did_you_mean(id, &ids)
                    .map(|b| format!("; did you mean `{b}`?"))
                    .unwrap_or_default();
                return Err(super::CmdError::Usage(format!(
                    "unknown rule `{id}`{hint} (rules are GP001-GP{:03})",
                    RULES.len()
                )));
            }
        }
    };
    match args.format {
        Format::Json => {
            let docs = RuleDocs::of(&selected);
            out.stdout(&(serde_json::to_string_pretty(&docs).unwrap_or_default() + "\n"));
        }
        Format::Human => {
            let text: Vec<String> = selected
                .iter()
                .map(|r| {
                    format!(
                        "{}\n\nDefault severity: {}\n",
                        rules::docs_text(*r),
                        r.default_severity()
                    )
                })
                .collect();
            out.stdout(&text.join("\n"));
        }
    }
    Ok(exit::OK)
}
