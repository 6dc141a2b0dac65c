//! `gpuplan comment`: one comment per pull request (GitHub) or merge request (GitLab), kept
//! up to date as Infracost's `comment --behavior update` keeps its own. The comment carries a
//! hidden marker; the next run finds it by the marker and edits it, or makes it when there is
//! none, or deletes it when there is nothing left to say and that was asked for.
//!
//! What to do is decided by [`actions`] from the comments already there (pure, tested on its
//! own); each forge's client ([`github`], [`gitlab`]) only lists, creates, edits and deletes.

pub(crate) mod github;
pub(crate) mod gitlab;

/// A comment already on the thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Note {
    pub id: u64,
    pub body: String,
    /// Its author's login (GitHub) or username (GitLab), when the forge gave it.
    pub author: Option<String>,
}

/// What `comment` does with the comments it finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Behavior {
    /// Edit the marked comment in place (make it if there is none); older copies are deleted
    Update,
    /// Always add a new comment, keeping the old ones
    New,
    /// Delete the marked comments, then add a new one (it arrives as a notification again)
    DeleteAndNew,
}

/// One step against the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Create(String),
    Update(u64, String),
    Delete(u64),
    /// The marked comment already says this.
    Keep(u64),
}

/// The hidden first line that marks gpuplan's comment; `tag` tells apart several kept on
/// one thread (a plan per directory, say).
pub(crate) fn marker(tag: &str) -> String {
    format!("<!-- gpuplan-comment: {tag} -->")
}

/// What a comment says when the marked comment is kept but there is nothing to report.
pub(crate) const NOTHING: &str = "gpuplan has nothing to report at this commit.";

/// The comment as posted: the marker, then the body, cut at a line boundary to the forge's
/// limit with a last line saying so.
pub(crate) fn compose(marker: &str, body: &str, limit: usize) -> String {
    let full = format!("{marker}\n{}\n", body.trim_end());
    if full.chars().count() <= limit {
        return full;
    }
    let note = format!(
        "\n\n*The comment was cut to {limit} characters, the forge's limit; the job's output holds all of it.*\n"
    );
    let room = limit.saturating_sub(note.chars().count());
    let cut: String = full.chars().take(room).collect();
    let cut = match cut.rfind('\n') {
        Some(i) if i > marker.len() => &cut[..i],
        _ => &cut,
    };
    format!("{cut}{note}")
}

/// Whether a comment is gpuplan's: it carries the marker and the token's own user (`me`)
/// wrote it.
pub(crate) fn is_ours(n: &Note, marker: &str, me: &str) -> bool {
    n.body.trim_start().starts_with(marker)
        && n.author
            .as_deref()
            .is_some_and(|a| a.eq_ignore_ascii_case(me))
}

#[derive(Clone, Copy)]
/// What the run wants: the comment composed ([`compose`]) or `None` when there is nothing to
/// say, how to post it, and what a kept comment says when there is nothing.
pub(crate) struct Wanted<'a> {
    pub body: Option<&'a str>,
    pub behavior: Behavior,
    pub delete_when_empty: bool,
    pub nothing: &'a str,
}

/// The steps from the comments there now to the one wanted. Only comments that carry the
/// marker and are the token's own (`me`) are gpuplan's: another user's comment that starts
/// with the marker (quoted, copied, planted) is never edited or deleted.
pub(crate) fn actions(existing: &[Note], marker: &str, me: &str, want: &Wanted<'_>) -> Vec<Action> {
    let Wanted {
        body,
        behavior,
        delete_when_empty,
        nothing,
    } = *want;
    let mut ours: Vec<&Note> = existing.iter().filter(|n| is_ours(n, marker, me)).collect();
    ours.sort_by_key(|n| n.id);
    let delete_all = |ours: &[&Note]| ours.iter().map(|n| Action::Delete(n.id)).collect();
    match (body, behavior) {
        (None, _) if delete_when_empty => delete_all(&ours),
        // Nothing to say and no deleting asked: a marked comment stops claiming findings.
        (None, _) => match ours.last() {
            Some(n) if n.body == nothing => vec![Action::Keep(n.id)],
            Some(n) => vec![Action::Update(n.id, nothing.to_owned())],
            None => Vec::new(),
        },
        (Some(b), Behavior::New) => vec![Action::Create(b.to_owned())],
        (Some(b), Behavior::DeleteAndNew) => {
            let mut a: Vec<Action> = delete_all(&ours);
            a.push(Action::Create(b.to_owned()));
            a
        }
        (Some(b), Behavior::Update) => match ours.split_last() {
            None => vec![Action::Create(b.to_owned())],
            Some((last, older)) => {
                // Copies left by runs that raced each other: one comment per thread.
                let mut a: Vec<Action> = delete_all(older);
                a.push(if last.body == b {
                    Action::Keep(last.id)
                } else {
                    Action::Update(last.id, b.to_owned())
                });
                a
            }
        },
    }
}

/// Why a forge's API did not do what was asked, as one line for the user. The token is never
/// in it.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("{0}")]
#[diagnostic(code(gpuplan::comment))]
pub(crate) struct CommentError(pub String);

/// At most this many pages of existing comments are read (100 each): a server whose pages
/// never end is cut off, not followed.
pub(crate) const MAX_PAGES: usize = 100;

/// A forge's thread of comments.
pub(crate) trait Thread {
    /// "pull request owner/repo#12", for messages.
    fn what(&self) -> String;
    /// The most characters a comment may hold.
    fn limit(&self) -> usize;
    /// The thread's comments that `keep` keeps, read page by page: only those are held, so a
    /// thread of thousands of long comments costs the memory of gpuplan's own.
    fn list(&self, keep: &dyn Fn(&Note) -> bool) -> Result<Vec<Note>, CommentError>;
    /// The login or username the token comments as (`GET /user`).
    fn identity(&self) -> Result<String, CommentError>;
    /// The new comment's id.
    fn create(&self, body: &str) -> Result<u64, CommentError>;
    fn update(&self, id: u64, body: &str) -> Result<(), CommentError>;
    fn delete(&self, id: u64) -> Result<(), CommentError>;
}

/// What a run did, for its report.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Done {
    pub created: Vec<u64>,
    pub updated: Vec<u64>,
    pub deleted: Vec<u64>,
    pub kept: Vec<u64>,
}

pub(crate) fn apply(thread: &dyn Thread, steps: &[Action]) -> Result<Done, CommentError> {
    let mut done = Done::default();
    for s in steps {
        match s {
            Action::Create(b) => done.created.push(thread.create(b)?),
            Action::Update(id, b) => {
                thread.update(*id, b)?;
                done.updated.push(*id);
            }
            Action::Delete(id) => {
                thread.delete(*id)?;
                done.deleted.push(*id);
            }
            Action::Keep(id) => done.kept.push(*id),
        }
    }
    Ok(done)
}

/// A failed request as one line: what the status means on a forge, what to change, and the
/// forge's own message. The token is a remembered secret ([`crate::core::format::secret`]),
/// so anything a server echoed of it is redacted here and again when printed.
pub(crate) fn failure(what: &str, f: crate::http::Failure, fix: &Fixes) -> CommentError {
    use crate::http::Failure;
    let server = |body: &str| {
        let m = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|v| match &v["message"] {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            })
            .unwrap_or_else(|| crate::core::excerpt(body, 200).into_owned());
        crate::core::printable(&m)
    };
    let text = match f {
        Failure::Status(401, b) => format!(
            "{what}: the token was refused (HTTP 401: {}); {}",
            server(&b),
            fix.token
        ),
        Failure::Status(403, b) => format!(
            "{what}: the token may not do this (HTTP 403: {}); {}",
            server(&b),
            fix.permission
        ),
        Failure::Status(404, b) => format!(
            "{what}: not found (HTTP 404: {}); {}",
            server(&b),
            fix.target
        ),
        Failure::Status(422, b) => {
            format!("{what}: the comment was refused (HTTP 422: {})", server(&b))
        }
        other => crate::http::describe(what, other),
    };
    CommentError(crate::core::redact(&text))
}

/// What to tell the user for each refusal, per forge.
pub(crate) struct Fixes {
    pub token: &'static str,
    pub permission: &'static str,
    pub target: &'static str,
}

/// The next page's address from a `Link` header (RFC 8288), if it is on the API the user
/// named: a token goes only there.
pub(crate) fn next_link(link: Option<&str>, api: &str) -> Result<Option<String>, CommentError> {
    let Some(link) = link else { return Ok(None) };
    // RFC 8288: parameter names are case-insensitive, and `rel` may hold several relation
    // types, space-separated (`rel="next last"`).
    let next = link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .filter_map(|p| p.split_once('='))
            .filter(|(k, _)| k.trim().eq_ignore_ascii_case("rel"))
            .any(|(_, v)| {
                v.trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("next"))
            })
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_owned()
            })
    });
    match next {
        Some(n) if same_origin(&n, api) => Ok(Some(n)),
        Some(n) => Err(CommentError(format!(
            "the next page of comments is at `{}`, not on `{api}`: gpuplan sends the token nowhere else",
            crate::core::printable(&crate::core::excerpt(&n, 200))
        ))),
        None => Ok(None),
    }
}

fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(id: u64, body: &str) -> Note {
        Note {
            id,
            body: body.into(),
            author: Some("gpuplan-bot".into()),
        }
    }

    /// `actions` as the tests call it: the token's user is `gpuplan-bot`.
    fn actions(
        there: &[Note],
        marker: &str,
        body: Option<&str>,
        behavior: Behavior,
        delete_when_empty: bool,
        nothing: &str,
    ) -> Vec<Action> {
        super::actions(
            there,
            marker,
            "gpuplan-bot",
            &Wanted {
                body,
                behavior,
                delete_when_empty,
                nothing,
            },
        )
    }

    #[test]
    fn another_users_marked_comment_is_never_touched() {
        let mut theirs = note(4, &format!("{M}\nquoted by a reviewer"));
        theirs.author = Some("alice".into());
        let mut unknown = note(6, &format!("{M}\nno author given"));
        unknown.author = None;
        let there = [note(2, &format!("{M}\nold")), theirs, unknown];
        assert_eq!(
            actions(&there, M, Some("new"), Behavior::Update, false, "n"),
            [Action::Update(2, "new".into())]
        );
        assert_eq!(
            actions(&there, M, None, Behavior::Update, true, "n"),
            [Action::Delete(2)]
        );
        assert_eq!(
            actions(
                &there[1..],
                M,
                Some("b"),
                Behavior::DeleteAndNew,
                false,
                "n"
            ),
            [Action::Create("b".into())]
        );
    }

    const M: &str = "<!-- gpuplan-comment: gpuplan -->";

    #[test]
    fn update_edits_the_newest_marked_comment_and_deletes_older_copies() {
        let there = [
            note(1, "a person's comment"),
            note(2, &format!("{M}\nold")),
            note(5, &format!("{M}\nolder copy")),
            note(3, "<!-- gpuplan-comment: other -->\nanother tag"),
        ];
        let a = actions(&there, M, Some("new"), Behavior::Update, false, "n");
        assert_eq!(a, [Action::Delete(2), Action::Update(5, "new".into())]);
        let same = [note(7, "same")];
        let a = actions(&same, "same", Some("same"), Behavior::Update, false, "n");
        assert_eq!(a, [Action::Keep(7)]);
        let none = actions(&there[..1], M, Some("b"), Behavior::Update, false, "n");
        assert_eq!(none, [Action::Create("b".into())]);
    }

    #[test]
    fn new_and_delete_and_new_and_nothing_to_say() {
        let there = [note(2, &format!("{M}\nold")), note(3, "mine")];
        assert_eq!(
            actions(&there, M, Some("b"), Behavior::New, false, "n"),
            [Action::Create("b".into())]
        );
        assert_eq!(
            actions(&there, M, Some("b"), Behavior::DeleteAndNew, false, "n"),
            [Action::Delete(2), Action::Create("b".into())]
        );
        assert_eq!(
            actions(&there, M, None, Behavior::Update, true, "n"),
            [Action::Delete(2)]
        );
        assert_eq!(
            actions(&there, M, None, Behavior::Update, false, "n"),
            [Action::Update(2, "n".into())]
        );
        assert!(actions(&there[1..], M, None, Behavior::Update, false, "n").is_empty());
    }

    #[test]
    fn a_long_comment_is_cut_at_a_line_to_the_limit_and_says_so() {
        let body = "line of text\n".repeat(10_000);
        let c = compose(M, &body, 65_536);
        assert!(c.chars().count() <= 65_536, "{}", c.chars().count());
        assert!(c.starts_with(M));
        assert!(c.contains("cut to 65536 characters"));
        assert!(c
            .split("\n\n*The comment")
            .next()
            .is_some_and(|h| h.ends_with("line of text")));
        assert_eq!(compose(M, "short\n\n", 100), format!("{M}\nshort\n"));
    }

    #[test]
    fn the_next_page_is_followed_only_on_the_api_named() {
        let api = "https://api.github.com";
        let link = r#"<https://api.github.com/repositories/1/issues/2/comments?page=2>; rel="next", <https://api.github.com/repositories/1/issues/2/comments?page=5>; rel="last""#;
        assert_eq!(
            next_link(Some(link), api).ok().flatten().as_deref(),
            Some("https://api.github.com/repositories/1/issues/2/comments?page=2")
        );
        assert!(next_link(Some(r#"<https://evil.example/x>; rel="next""#), api).is_err());
        assert_eq!(
            next_link(Some(r#"<https://api.github.com/x>; rel="prev""#), api).ok(),
            Some(None)
        );
        assert_eq!(next_link(None, api).ok(), Some(None));
        // Parameter names in any case; several relations in one `rel`.
        for link in [
            r#"<https://api.github.com/p2>; REL="next""#,
            r#"<https://api.github.com/p2>; rel="prev next""#,
            r#"<https://api.github.com/p2>; Rel=NEXT"#,
        ] {
            assert_eq!(
                next_link(Some(link), api).ok().flatten().as_deref(),
                Some("https://api.github.com/p2"),
                "{link}"
            );
        }
    }
}
