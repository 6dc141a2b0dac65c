//! `gpuplan comment github|gitlab --body FILE`: the thin command over [`crate::comment`].

use std::time::Duration;

use crate::cli::{CommentArgs, CommentCommon, Forge};
use crate::comment::{self, github::GitHub, gitlab::GitLab, Action, Thread};
use crate::core::exit;
use crate::output::Out;

use super::{CmdError, CmdResult};

pub(crate) fn run(args: &CommentArgs, out: &Out) -> CmdResult {
    let (common, thread): (&CommentCommon, Box<dyn Thread>) = match &args.forge {
        Forge::Github(a) => (&a.common, Box::new(github(a)?)),
        Forge::Gitlab(a) => (&a.common, Box::new(gitlab(a)?)),
    };
    let body = read_body(&common.body)?;
    // The tag sits inside an HTML comment: `--` or `>` in it would end the marker early.
    if common.tag.is_empty()
        || !common
            .tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        || common.tag.contains("--")
    {
        return Err(CmdError::Usage(format!(
            "`--tag {}`: expected letters, digits and `.`, `_`, `/`, `-` (no `--`): it sits in the comment's hidden marker",
            crate::core::printable(&common.tag)
        )));
    }
    let marker = comment::marker(&common.tag);
    let limit = thread.limit();
    let composed = (!body.trim().is_empty()).then(|| comment::compose(&marker, &body, limit));
    let nothing = comment::compose(&marker, comment::NOTHING, limit);
    // Whose comments are gpuplan's: only the token's own are ever edited or deleted.
    let me = match &common.author {
        Some(a) => a.clone(),
        None => thread.identity()?,
    };
    // Only gpuplan's own marked comments are held while the thread is read.
    let existing = thread.list(&|n: &comment::Note| comment::is_ours(n, &marker, &me))?;
    let steps = comment::actions(
        &existing,
        &marker,
        &me,
        &comment::Wanted {
            body: composed.as_deref(),
            behavior: common.behavior,
            delete_when_empty: common.delete_when_empty,
            nothing: &nothing,
        },
    );
    if common.dry_run {
        for s in &steps {
            out.stdout(&format!("would {}\n", step(s)));
        }
        if steps.is_empty() {
            out.stdout(
                "would do nothing: the body is blank and there is no comment of gpuplan's\n",
            );
        }
        return Ok(exit::OK);
    }
    let done = comment::apply(thread.as_ref(), &steps)?;
    let what = thread.what();
    for (verb, ids) in [
        ("deleted", &done.deleted),
        ("updated", &done.updated),
        ("created", &done.created),
        ("left unchanged", &done.kept),
    ] {
        for id in ids {
            out.info(&format!("{verb} comment {id} on {what}"));
        }
    }
    if steps.is_empty() {
        out.info(&format!(
            "nothing to say and no comment of gpuplan's on {what}: none made"
        ));
    }
    Ok(exit::OK)
}

fn step(a: &Action) -> String {
    match a {
        Action::Create(_) => "create a comment".into(),
        Action::Update(id, _) => format!("update comment {id}"),
        Action::Delete(id) => format!("delete comment {id}"),
        Action::Keep(id) => format!("leave comment {id} as it is (it says this already)"),
    }
}

/// The most of a body read: past every forge's limit (GitLab's 1,000,000 characters) with
/// room for multi-byte text; a larger file is refused, not cut.
const MAX_BODY_BYTES: u64 = 8 << 20;

fn read_body(path: &std::path::Path) -> CmdResult<String> {
    // Through fsio, as every input: a regular file or a pipe (`-`), bounded; never a device.
    let bytes = crate::fsio::read_as(path, MAX_BODY_BYTES, crate::fsio::Input::RegularOrPipe)
        .map_err(|e| CmdError::Usage(format!("cannot read `{}`: {e}", crate::core::shown(path))))?;
    String::from_utf8(bytes).map_err(|e| {
        CmdError::Usage(format!(
            "`{}` is not UTF-8 text (byte {}): a comment is Markdown text",
            crate::core::shown(path),
            e.utf8_error().valid_up_to()
        ))
    })
}

fn token(names: &[&str]) -> CmdResult<String> {
    names
        .iter()
        .find_map(|n| std::env::var(n).ok().filter(|v| !v.trim().is_empty()))
        .map(|t| {
            crate::core::format::secret(&t);
            t.trim().to_owned()
        })
        .ok_or_else(|| {
            CmdError::Usage(format!(
                "no token: set {} (gpuplan reads it from the environment only, never from a flag)",
                names.join(" or ")
            ))
        })
}

/// An API address as given, checked: http(s), no credentials, query or fragment in it, no
/// trailing `/`.
fn api(url: &str) -> CmdResult<String> {
    let parsed = url::Url::parse(url).ok().filter(|u| {
        matches!(u.scheme(), "https" | "http")
            && u.username().is_empty()
            && u.password().is_none()
            && u.query().is_none()
            && u.fragment().is_none()
            && !url.contains('#')
    });
    match parsed {
        Some(_) => Ok(url.trim_end_matches('/').to_owned()),
        None => Err(CmdError::Usage(format!(
            "`--api-url {}`: expected an http(s) address without credentials, query or fragment",
            crate::core::printable(&crate::core::redact(url))
        ))),
    }
}

fn agent(c: &CommentCommon) -> ureq::Agent {
    crate::http::agent(Duration::from_secs(c.timeout.max(1)))
}

fn github(a: &crate::cli::GithubArgs) -> CmdResult<GitHub> {
    let valid = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && s != "."
            && s != ".."
    };
    match a.repo.split_once('/') {
        Some((o, n)) if valid(o) && valid(n) => {}
        _ => {
            return Err(CmdError::Usage(format!(
                "`--repo {}`: expected OWNER/NAME",
                crate::core::printable(&a.repo)
            )))
        }
    }
    let number = match a.pull_request {
        Some(n) => n,
        None => pull_request_of_ref(std::env::var("GITHUB_REF").ok().as_deref()).ok_or_else(
            || {
                CmdError::Usage(
                    "which pull request? give `--pull-request N` (in Actions, GITHUB_REF of a pull_request event names it)".into(),
                )
            },
        )?,
    };
    Ok(GitHub {
        api: api(&a.api_url)?,
        repo: a.repo.clone(),
        number,
        token: token(&["GITHUB_TOKEN", "GH_TOKEN"])?,
        agent: agent(&a.common),
    })
}

/// `refs/pull/123/merge` (or `/head`) → 123.
fn pull_request_of_ref(r: Option<&str>) -> Option<u64> {
    let rest = r?.strip_prefix("refs/pull/")?;
    let (n, kind) = rest.split_once('/')?;
    matches!(kind, "merge" | "head")
        .then(|| n.parse().ok())
        .flatten()
}

fn gitlab(a: &crate::cli::GitlabArgs) -> CmdResult<GitLab> {
    let p = &a.project;
    let ok = !p.is_empty()
        && !p.starts_with('/')
        && !p.ends_with('/')
        && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..")
        && !p.chars().any(|c| c.is_control() || c.is_whitespace());
    if !ok {
        return Err(CmdError::Usage(format!(
            "`--project {}`: expected a project id or a path such as group/project",
            crate::core::printable(p)
        )));
    }
    Ok(GitLab {
        api: api(&a.api_url)?,
        project: p.clone(),
        iid: a.merge_request,
        token: token(&["GITLAB_TOKEN"])?,
        agent: agent(&a.common),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_pull_request_ref_names_its_number() {
        assert_eq!(
            super::pull_request_of_ref(Some("refs/pull/42/merge")),
            Some(42)
        );
        assert_eq!(
            super::pull_request_of_ref(Some("refs/pull/42/head")),
            Some(42)
        );
        assert_eq!(super::pull_request_of_ref(Some("refs/heads/main")), None);
        assert_eq!(super::pull_request_of_ref(Some("refs/pull/x/merge")), None);
        assert_eq!(super::pull_request_of_ref(None), None);
    }
}
