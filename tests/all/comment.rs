//! `gpuplan comment` against local fakes of GitHub's and GitLab's REST APIs, speaking the
//! shapes their documentation gives: GitHub's issue comments ("REST API endpoints for issue
//! comments": list with `per_page` and a `Link` header, create 201, update by PATCH, delete
//! 204; errors as `{"message": …}`) and GitLab's merge-request notes ("Notes API": list with
//! `X-Next-Page`, create 201, update by PUT, delete 204; system notes among them).

use std::sync::{Arc, Mutex};

use crate::common::mock::{Mock, Req, Resp};

const TOKEN: &str = "ghp_s3cretTOKENvalue1234";
const MARK: &str = "<!-- gpuplan-comment: gpuplan -->";

/// The user the token is (`GET /user`): what it posts is its own.
const ME: &str = "gpuplan-bot";

#[derive(Default)]
struct Forge {
    /// (id, body, system note)
    notes: Vec<(u64, String, bool)>,
    /// Each note's author: the token's user for what it posted, `someone` for the rest.
    authors: std::collections::BTreeMap<u64, String>,
    next_id: u64,
}

type Shared = Arc<Mutex<Forge>>;

impl Forge {
    /// A new comment with this body: its id.
    fn create(&mut self, body: String) -> u64 {
        self.next_id += 1;
        self.notes.push((self.next_id, body, false));
        self.authors.insert(self.next_id, ME.to_owned());
        self.next_id
    }

    fn author(&self, id: u64) -> &str {
        self.authors.get(&id).map_or("someone", String::as_str)
    }

    /// The edit (`delete` false) or deletion of the comment a path ends in, as both forges
    /// answer it: 200 with the comment, 204, or 404 with `not_found`.
    fn edit(&mut self, path: &str, delete: bool, r: &Req, not_found: &str) -> Resp {
        let id: u64 = path
            .rsplit('/')
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        let Some(i) = self.notes.iter().position(|n| n.0 == id) else {
            return json(404, serde_json::json!({ "message": not_found }));
        };
        if delete {
            self.notes.remove(i);
            return Resp::new(204, "text/plain", "");
        }
        self.notes[i].1 = body_of(r);
        json(200, serde_json::json!({"id": id, "body": self.notes[i].1}))
    }
}

fn forge(people: &[&str]) -> Shared {
    let mut f = Forge {
        next_id: 100,
        ..Forge::default()
    };
    for p in people {
        let id = f.create((*p).to_owned());
        f.authors.insert(id, "someone".to_owned());
    }
    Arc::new(Mutex::new(f))
}

fn query(target: &str, key: &str) -> Option<u64> {
    target
        .split_once('?')?
        .1
        .split('&')
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))?
        .parse()
        .ok()
}

fn body_of(r: &Req) -> String {
    serde_json::from_str::<serde_json::Value>(&r.body).expect("json body")["body"]
        .as_str()
        .expect("body")
        .to_owned()
}

fn json(status: u16, v: serde_json::Value) -> Resp {
    Resp::new(status, "application/json; charset=utf-8", v.to_string())
}

/// GitHub, with pages of `page` comments on pull request o/r#7.
fn github(state: Shared, page: usize) -> Mock {
    Mock::start(move |r, _| {
        if r.header("authorization") != Some(&format!("Bearer {TOKEN}")) {
            return json(
                401,
                serde_json::json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}),
            );
        }
        if r.header("user-agent").is_none() {
            return json(
                403,
                serde_json::json!({"message": "Request forbidden by administrative rules. Please make sure your request has a User-Agent header"}),
            );
        }
        let mut f = state.lock().expect("state");
        let path = r.target.split('?').next().unwrap_or("");
        let list = "/repos/o/r/issues/7/comments";
        match (r.method.as_str(), path) {
            ("GET", "/user") => json(200, serde_json::json!({"login": ME, "id": 7})),
            // The first page at the repository's path; GitHub's `Link` then names the
            // repository by id, as github.com does.
            ("GET", p) if p == list || p == "/repositories/1/issues/7/comments" => {
                let n = query(&r.target, "page").unwrap_or(1) as usize;
                let items: Vec<_> = f.notes.iter().skip((n - 1) * page).take(page)
                    .map(|(id, b, _)| serde_json::json!({"id": id, "body": b, "user": {"login": f.author(*id)}}))
                    .collect();
                let mut resp = json(200, serde_json::Value::Array(items));
                if n * page < f.notes.len() {
                    let host = r.header("host").unwrap_or("");
                    resp = resp.header("Link", &format!("<http://{host}/repositories/1/issues/7/comments?per_page=100&page={}>; rel=\"next\"", n + 1));
                }
                resp
            }
            ("POST", p) if p == list => {
                let id = f.create(body_of(r));
                json(
                    201,
                    serde_json::json!({"id": id, "body": body_of(r), "html_url": format!("https://github.com/o/r/pull/7#issuecomment-{id}")}),
                )
            }
            (m @ ("PATCH" | "DELETE"), p) if p.starts_with("/repos/o/r/issues/comments/") => {
                f.edit(p, m == "DELETE", r, "Not Found")
            }
            _ => json(
                404,
                serde_json::json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}),
            ),
        }
    })
}

fn gpuplan(dir: &std::path::Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_TOKEN")
        .env_remove("GITLAB_TOKEN")
        .env_remove("GITHUB_REPOSITORY")
        .env_remove("GITHUB_REF")
        .env_remove("GITHUB_API_URL")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("CI_PROJECT_ID")
        .env_remove("CI_MERGE_REQUEST_IID")
        .env_remove("CI_API_V4_URL");
    c
}

fn gh(dir: &std::path::Path, m: &Mock, body: &str, extra: &[&str]) -> (i32, String, String) {
    std::fs::write(dir.join("comment.md"), body).expect("write");
    let out = gpuplan(dir)
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REPOSITORY", "o/r")
        .env("GITHUB_REF", "refs/pull/7/merge")
        .args([
            "comment",
            "github",
            "--body",
            "comment.md",
            "--api-url",
            &m.url,
        ])
        .args(extra)
        .output()
        .expect("run");
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !o.contains(TOKEN) && !e.contains(TOKEN),
        "the token was printed:\n{o}\n{e}"
    );
    (out.status.code().unwrap_or(-1), o, e)
}

fn ours(state: &Shared) -> Vec<(u64, String)> {
    let f = state.lock().expect("state");
    f.notes
        .iter()
        .filter(|n| n.1.starts_with(MARK))
        .map(|n| (n.0, n.1.clone()))
        .collect()
}

#[test]
fn github_one_comment_is_made_then_kept_up_to_date_then_deleted() {
    let dir = tempfile::tempdir().expect("tmp");
    // Five comments of people: three pages of two, so the marked one is found past page one.
    let state = forge(&["lgtm", "why spot?", "ok", "rebased", "ship it"]);
    let m = github(Arc::clone(&state), 2);
    let (code, _, err) = gh(dir.path(), &m, "### gpuplan check: passed\n", &[]);
    assert_eq!(code, 0, "{err}");
    let first = ours(&state);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].1, format!("{MARK}\n### gpuplan check: passed\n"));
    assert!(
        err.contains(&format!("created comment {}", first[0].0)),
        "{err}"
    );

    let (code, _, err) = gh(dir.path(), &m, "### gpuplan check: failed\n", &[]);
    assert_eq!(code, 0, "{err}");
    let second = ours(&state);
    assert_eq!(second.len(), 1, "edited in place, not added");
    assert_eq!(second[0].0, first[0].0);
    assert!(second[0].1.contains("failed"));
    assert_eq!(m.count(|r| r.method == "PATCH"), 1);

    // The same text again: nothing is sent.
    let (code, _, err) = gh(dir.path(), &m, "### gpuplan check: failed\n", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(m.count(|r| r.method == "PATCH"), 1);
    assert!(err.contains("left unchanged"), "{err}");

    // Dry run: says, sends nothing but the listing.
    let before = m.requests().len();
    let (code, out, _) = gh(dir.path(), &m, "other\n", &["--dry-run"]);
    assert_eq!(code, 0);
    assert_eq!(out, format!("would update comment {}\n", first[0].0));
    assert!(m.requests()[before..].iter().all(|r| r.method == "GET"));

    // Nothing to say, and deleting asked for.
    let (code, _, err) = gh(dir.path(), &m, "  \n", &["--delete-when-empty"]);
    assert_eq!(code, 0, "{err}");
    assert!(ours(&state).is_empty());
    assert_eq!(
        state.lock().expect("s").notes.len(),
        5,
        "people's comments stay"
    );

    // delete-and-new and new
    gh(dir.path(), &m, "a\n", &[]);
    let (code, _, _) = gh(dir.path(), &m, "b\n", &["--behavior", "delete-and-new"]);
    assert_eq!(code, 0);
    assert_eq!(ours(&state).len(), 1);
    gh(dir.path(), &m, "c\n", &["--behavior", "new"]);
    assert_eq!(ours(&state).len(), 2);
    // Every request carried the headers GitHub asks for.
    for r in m.requests() {
        assert_eq!(r.header("accept"), Some("application/vnd.github+json"));
        assert_eq!(r.header("x-github-api-version"), Some("2022-11-28"));
    }
}

#[test]
fn github_refusals_name_what_to_change_and_never_the_token() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = forge(&[]);
    let m = github(Arc::clone(&state), 100);
    // A wrong token: 401.
    std::fs::write(dir.path().join("c.md"), "x").expect("w");
    let out = gpuplan(dir.path())
        .env("GITHUB_TOKEN", "wrong-token-value")
        .args([
            "comment",
            "github",
            "--body",
            "c.md",
            "--repo",
            "o/r",
            "--pull-request",
            "7",
            "--api-url",
            &m.url,
        ])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("the token was refused (HTTP 401: Bad credentials)"),
        "{err}"
    );
    assert!(!err.contains("wrong-token-value"), "{err}");
    // No token at all.
    let out = gpuplan(dir.path())
        .args([
            "comment",
            "github",
            "--body",
            "c.md",
            "--repo",
            "o/r",
            "--pull-request",
            "7",
            "--api-url",
            &m.url,
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("set GITHUB_TOKEN or GH_TOKEN"));
    // Another repository: 404.
    let (code, _, err) = gh(dir.path(), &m, "x", &["--repo", "o/other"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("not found (HTTP 404: Not Found)") && err.contains("--repo"),
        "{err}"
    );
    // No pull request known.
    std::fs::write(dir.path().join("c.md"), "x").expect("w");
    let out = gpuplan(dir.path())
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_REF", "refs/heads/main")
        .args([
            "comment",
            "github",
            "--body",
            "c.md",
            "--repo",
            "o/r",
            "--api-url",
            &m.url,
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pull-request N"));

    // 403 and 422 from a server that echoes what it was sent, token included.
    let m = Mock::start(|r, _| {
        let echoed = r.header("authorization").unwrap_or("").to_owned();
        match r.method.as_str() {
            "GET" => json(200, serde_json::json!([])),
            _ if r.body.contains("forbidden") => json(
                403,
                serde_json::json!({"message": format!("Resource not accessible by integration ({echoed})")}),
            ),
            _ => json(
                422,
                serde_json::json!({"message": "Validation Failed", "errors": [{"resource": "IssueComment", "code": "custom", "field": "body", "message": "body is too long"}]}),
            ),
        }
    });
    let (code, _, err) = gh(dir.path(), &m, "forbidden", &["--author", ME]);
    assert_eq!(code, 2);
    assert!(
        err.contains("HTTP 403: Resource not accessible by integration")
            && err.contains("pull-requests: write"),
        "{err}"
    );
    let (code, _, err) = gh(dir.path(), &m, "long", &["--author", ME]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the comment was refused (HTTP 422: Validation Failed)"),
        "{err}"
    );
}

#[test]
fn paging_that_never_ends_or_leaves_the_api_is_cut_off() {
    let dir = tempfile::tempdir().expect("tmp");
    // Every page points at one more.
    let endless = Mock::start(|r, _| {
        let n = query(&r.target, "page").unwrap_or(1);
        let host = r.header("host").unwrap_or("").to_owned();
        json(200, serde_json::json!([{"id": n, "body": "x"}])).header(
            "Link",
            &format!(
                "<http://{host}/repos/o/r/issues/7/comments?per_page=100&page={}>; rel=\"next\"",
                n + 1
            ),
        )
    });
    let (code, _, err) = gh(dir.path(), &endless, "b", &["--author", ME]);
    assert_eq!(code, 2);
    assert!(err.contains("more than 100 pages of comments"), "{err}");
    assert_eq!(endless.count(|r| r.method == "GET"), 100);
    assert_eq!(endless.count(|r| r.method != "GET"), 0);
    // A next page on another host: not followed, the token is not sent there.
    let elsewhere = Mock::start(|_, _| json(200, serde_json::json!([])));
    let host = elsewhere.url.clone();
    let leaving = Mock::start(move |_, _| {
        json(200, serde_json::json!([]))
            .header("Link", &format!("<{host}/steal?page=2>; rel=\"next\""))
    });
    let (code, _, err) = gh(dir.path(), &leaving, "b", &["--author", ME]);
    assert_eq!(code, 2);
    assert!(err.contains("sends the token nowhere else"), "{err}");
    assert!(elsewhere.requests().is_empty());
}

#[test]
fn overload_is_retried_but_a_failed_post_is_not_repeated() {
    let dir = tempfile::tempdir().expect("tmp");
    let m = Mock::start(|r, earlier| {
        let gets = earlier.iter().filter(|e| e.method == "GET").count();
        match r.method.as_str() {
            "GET" if gets == 0 => {
                json(429, serde_json::json!({"message": "slow down"})).header("Retry-After", "1")
            }
            "GET" => json(200, serde_json::json!([])),
            _ => json(502, serde_json::json!({"message": "Server Error"})),
        }
    });
    let (code, _, err) = gh(dir.path(), &m, "b", &["--author", ME]);
    assert_eq!(code, 2);
    assert!(err.contains("502"), "{err}");
    assert_eq!(m.count(|r| r.method == "GET"), 2, "the 429 was asked again");
    assert_eq!(
        m.count(|r| r.method == "POST"),
        1,
        "a comment is never posted twice"
    );
}

const GL_TOKEN: &str = "glpat-s3cretGITLABtoken99";

/// GitLab, project `group/sub` (asked for by its encoded path), merge request !12, pages of
/// `page` notes.
fn gitlab(state: Shared, page: usize) -> Mock {
    Mock::start(move |r, _| {
        if r.header("private-token") != Some(GL_TOKEN) {
            return json(401, serde_json::json!({"message": "401 Unauthorized"}));
        }
        let mut f = state.lock().expect("state");
        let path = r.target.split('?').next().unwrap_or("");
        let list = "/api/v4/projects/group%2Fsub/merge_requests/12/notes";
        match (r.method.as_str(), path) {
            ("GET", "/api/v4/user") => json(200, serde_json::json!({"username": ME, "id": 3})),
            ("GET", p) if p == list => {
                let n = query(&r.target, "page").unwrap_or(1) as usize;
                let items: Vec<_> = f.notes.iter().skip((n - 1) * page).take(page)
                    .map(|(id, b, sys)| serde_json::json!({"id": id, "body": b, "system": sys, "noteable_type": "MergeRequest", "author": {"id": 3, "username": f.author(*id)}}))
                    .collect();
                let next = if n * page < f.notes.len() {
                    (n + 1).to_string()
                } else {
                    String::new()
                };
                json(200, serde_json::Value::Array(items))
                    .header("X-Next-Page", &next)
                    .header("X-Page", &n.to_string())
            }
            ("POST", p) if p == list => {
                let id = f.create(body_of(r));
                json(
                    201,
                    serde_json::json!({"id": id, "body": body_of(r), "system": false}),
                )
            }
            (m @ ("PUT" | "DELETE"), p) if p.starts_with(&format!("{list}/")) => {
                f.edit(p, m == "DELETE", r, "404 Not found")
            }
            _ => json(404, serde_json::json!({"message": "404 Project Not Found"})),
        }
    })
}

fn gl(dir: &std::path::Path, m: &Mock, body: &str, extra: &[&str]) -> (i32, String) {
    std::fs::write(dir.join("note.md"), body).expect("write");
    let out = gpuplan(dir)
        .env("GITLAB_TOKEN", GL_TOKEN)
        .env("CI_PROJECT_ID", "group/sub")
        .env("CI_MERGE_REQUEST_IID", "12")
        .env("CI_API_V4_URL", format!("{}/api/v4", m.url))
        .args(["comment", "gitlab", "--body", "note.md"])
        .args(extra)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains(GL_TOKEN) && !String::from_utf8_lossy(&out.stdout).contains(GL_TOKEN));
    (out.status.code().unwrap_or(-1), err)
}

#[test]
fn gitlab_one_note_is_made_then_kept_up_to_date_then_deleted() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = forge(&["looks good", "added 1 commit"]);
    // The second is a system note: it carries a marker-like text but is not a comment.
    state.lock().expect("s").notes[1] = (102, format!("{MARK}\nnot ours"), true);
    let m = gitlab(Arc::clone(&state), 1);
    let (code, err) = gl(dir.path(), &m, "### gpuplan check: passed\n", &[]);
    assert_eq!(code, 0, "{err}");
    let mine: Vec<_> = ours(&state).into_iter().filter(|n| n.0 != 102).collect();
    assert_eq!(mine.len(), 1, "{mine:?}");
    let (code, err) = gl(dir.path(), &m, "### gpuplan check: failed\n", &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(m.count(|r| r.method == "PUT"), 1);
    assert!(state
        .lock()
        .expect("s")
        .notes
        .iter()
        .any(|n| n.0 == mine[0].0 && n.1.contains("failed")));
    // Nothing to say, not deleting: the note says so instead of its old findings.
    let (code, _) = gl(dir.path(), &m, "", &[]);
    assert_eq!(code, 0);
    assert!(state
        .lock()
        .expect("s")
        .notes
        .iter()
        .any(|n| n.0 == mine[0].0 && n.1.contains("nothing to report")));
    let (code, _) = gl(dir.path(), &m, "", &["--delete-when-empty"]);
    assert_eq!(code, 0);
    assert_eq!(m.count(|r| r.method == "DELETE"), 1);
    assert!(
        state.lock().expect("s").notes.iter().any(|n| n.0 == 102),
        "the system note stays"
    );
    // Every listing asked for 100 a page; paging followed X-Next-Page.
    assert!(m
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && !r.target.ends_with("/user"))
        .all(|r| r.target.contains("per_page=100")));
    assert!(m.requests().iter().any(|r| r.target.contains("page=3")));
}

#[test]
fn gitlab_refusals_name_what_to_change() {
    let dir = tempfile::tempdir().expect("tmp");
    let m = gitlab(forge(&[]), 100);
    let out = gpuplan(dir.path())
        .env("GITLAB_TOKEN", "glpat-wrongwrongwrong")
        .args([
            "comment",
            "gitlab",
            "--project",
            "group/sub",
            "--merge-request",
            "12",
            "--api-url",
        ])
        .arg(format!("{}/api/v4", m.url))
        .args(["--body", "-"])
        .write_stdin("x")
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("HTTP 401: 401 Unauthorized") && err.contains("`api` scope"),
        "{err}"
    );
    assert!(!err.contains("glpat-wrongwrongwrong"));
    let (code, err) = gl(dir.path(), &m, "x", &["--merge-request", "13"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("HTTP 404: 404 Project Not Found") && err.contains("--merge-request"),
        "{err}"
    );
    let (code, err) = gl(dir.path(), &m, "x", &["--project", "../etc"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected a project id or a path"), "{err}");
    // A next page that goes back: refused, not looped.
    let back = Mock::start(|_, _| json(200, serde_json::json!([])).header("X-Next-Page", "1"));
    let (code, err) = gl(
        dir.path(),
        &back,
        "x",
        &["--api-url", &format!("{}/api/v4", back.url), "--author", ME],
    );
    assert_eq!(code, 2);
    assert!(err.contains("not a page after 1"), "{err}");
}

/// Issue 58: `comment` edited and deleted other people's comments that start with the marker.
/// Only the token's own user's (`GET /user`) are gpuplan's; a planted or quoted one is left
/// as it is, on both forges; a token that cannot say whose it is needs `--author`.
#[test]
fn only_the_tokens_own_comments_are_edited_or_deleted() {
    let planted = format!("{MARK}\nplanted by someone else");
    let dir = tempfile::tempdir().expect("tmp");
    let state = forge(&[&planted]);
    let m = github(state.clone(), 100);
    let (code, _, err) = gh(dir.path(), &m, "### gpuplan check: passed\n", &[]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = gh(dir.path(), &m, "", &["--delete-when-empty"]);
    assert_eq!(code, 0, "{err}");
    let notes = state.lock().expect("s").notes.clone();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].1, planted);
    assert_eq!(m.count(|r| r.method == "PATCH"), 0);

    let state = forge(&[&planted]);
    let m = gitlab(state.clone(), 100);
    let (code, err) = gl(dir.path(), &m, "### gpuplan check: failed\n", &[]);
    assert_eq!(code, 0, "{err}");
    let notes = state.lock().expect("s").notes.clone();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0].1, planted);

    // An installation token outside Actions: `GET /user` is refused; gpuplan asks for the
    // author rather than guess, and touches nothing.
    let app = Mock::start(|r, _| match r.target.split('?').next() {
        Some("/user") => json(
            403,
            serde_json::json!({"message": "Resource not accessible by integration"}),
        ),
        _ => json(200, serde_json::json!([])),
    });
    let (code, _, err) = gh(dir.path(), &app, "b", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--author LOGIN"), "{err}");
    assert_eq!(app.count(|r| r.method != "GET"), 0);
    // In Actions the token is GITHUB_TOKEN, whose comments are `github-actions[bot]`'s.
    let actions = Mock::start(
        |r, _| match (r.method.as_str(), r.target.split('?').next()) {
            ("GET", Some("/user")) => json(
                403,
                serde_json::json!({"message": "Resource not accessible by integration"}),
            ),
            ("GET", _) => json(
                200,
                serde_json::json!([
                    {"id": 5, "body": format!("{MARK}\nold"), "user": {"login": "github-actions[bot]"}},
                    {"id": 6, "body": format!("{MARK}\nquoted"), "user": {"login": "alice"}},
                ]),
            ),
            _ => json(200, serde_json::json!({"id": 5, "body": "b"})),
        },
    );
    std::fs::write(dir.path().join("body.md"), "b").expect("body");
    let out = gpuplan(dir.path())
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_ACTIONS", "true")
        .args(["comment", "github", "--body", "body.md", "--repo", "o/r"])
        .args(["--pull-request", "7", "--api-url", &actions.url])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let edits: Vec<String> = actions
        .requests()
        .iter()
        .filter(|r| r.method != "GET")
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    assert_eq!(edits, ["PATCH /repos/o/r/issues/comments/5"], "{edits:?}");
}

/// Issue 58 lows: a tag that would end the hidden marker early and an API address with a
/// fragment are usage errors, before any request.
#[test]
fn a_tag_that_ends_the_marker_and_an_address_with_a_fragment_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("body.md"), "b").expect("body");
    let m = Mock::start(|_, _| json(200, serde_json::json!([])));
    for (tag, url) in [
        ("x-->", m.url.clone()),
        ("a>b", m.url.clone()),
        ("ok", format!("{}/#frag", m.url)),
    ] {
        let out = gpuplan(dir.path())
            .env("GITHUB_TOKEN", TOKEN)
            .args(["comment", "github", "--body", "body.md", "--repo", "o/r"])
            .args(["--pull-request", "7", "--tag", tag, "--api-url", &url])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{tag} {url}");
    }
    assert_eq!(m.count(|_| true), 0);
}
