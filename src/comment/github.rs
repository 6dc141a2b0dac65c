//! GitHub's REST API for the comments of a pull request (a pull request's conversation is an
//! issue's): `GET /repos/{owner}/{repo}/issues/{number}/comments` (100 a page, `Link` paging),
//! `POST` there, `PATCH` and `DELETE /repos/{owner}/{repo}/issues/comments/{id}`.

use serde::Deserialize;

use super::{failure, next_link, CommentError, Fixes, Note, Thread, MAX_PAGES};

/// GitHub's limit on a comment body.
const LIMIT: usize = 65_536;

const FIXES: Fixes = Fixes {
    token: "set GITHUB_TOKEN (or GH_TOKEN) to a token of this repository (in Actions: `${{ github.token }}`)",
    permission: "give the workflow `permissions: pull-requests: write` (a pull request from a fork gets a read-only token)",
    target: "check `--repo OWNER/NAME` and `--pull-request N` (a token that cannot see a private repository gets 404 too)",
};

pub(crate) struct GitHub {
    pub api: String,
    pub repo: String,
    pub number: u64,
    pub token: String,
    pub agent: ureq::Agent,
}

#[derive(Deserialize)]
struct Comment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    user: Option<User>,
}

#[derive(Deserialize)]
struct User {
    login: String,
}

/// The user Actions' `GITHUB_TOKEN` comments as. That token is an installation token, which
/// `GET /user` refuses ("Resource not accessible by integration", HTTP 403).
const ACTIONS_BOT: &str = "github-actions[bot]";

impl GitHub {
    fn request(&self, method: &str, url: &str) -> ureq::Request {
        self.agent
            .request(method, url)
            .set("Authorization", &format!("Bearer {}", self.token))
            .set("Accept", "application/vnd.github+json")
            .set("X-GitHub-Api-Version", "2022-11-28")
            .set("User-Agent", concat!("gpuplan/", env!("CARGO_PKG_VERSION")))
    }

    fn fail(&self, f: crate::http::Failure) -> CommentError {
        failure(&self.what(), f, &FIXES)
    }

    fn comment_url(&self, id: u64) -> String {
        format!("{}/repos/{}/issues/comments/{id}", self.api, self.repo)
    }
}

impl Thread for GitHub {
    fn what(&self) -> String {
        format!("GitHub pull request {}#{}", self.repo, self.number)
    }

    fn limit(&self) -> usize {
        LIMIT
    }

    fn list(&self, keep: &dyn Fn(&Note) -> bool) -> Result<Vec<Note>, CommentError> {
        let mut url = Some(format!(
            "{}/repos/{}/issues/{}/comments?per_page=100",
            self.api, self.repo, self.number
        ));
        let mut notes = Vec::new();
        let mut pages = 0;
        while let Some(u) = url.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(CommentError(format!(
                    "{}: more than {MAX_PAGES} pages of comments; gpuplan stops reading there",
                    self.what()
                )));
            }
            let (page, next): (Vec<Comment>, Option<String>) = crate::http::exchange(
                || self.request("GET", &u),
                None,
                |head, r| {
                    let page = serde_json::from_reader(r).map_err(|e| e.to_string())?;
                    Ok((page, head.get("Link").map(str::to_owned)))
                },
            )
            .map_err(|f| self.fail(f))?;
            notes.extend(
                page.into_iter()
                    .map(|c| Note {
                        id: c.id,
                        body: c.body.unwrap_or_default(),
                        author: c.user.map(|u| u.login),
                    })
                    .filter(|n| keep(n)),
            );
            url = next_link(next.as_deref(), &self.api)?;
            if url.as_deref() == Some(u.as_str()) {
                return Err(CommentError(format!(
                    "{}: the next page of comments is the page just read",
                    self.what()
                )));
            }
        }
        Ok(notes)
    }

    fn identity(&self) -> Result<String, CommentError> {
        let url = format!("{}/user", self.api);
        match crate::http::send_json::<User>(|| self.request("GET", &url), None) {
            Ok(u) => Ok(u.login),
            // An installation token cannot ask; in Actions it is GITHUB_TOKEN's bot.
            Err(crate::http::Failure::Status(403, _))
                if std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true") =>
            {
                Ok(ACTIONS_BOT.to_owned())
            }
            Err(crate::http::Failure::Status(403, _)) => Err(CommentError(format!(
                "{}: the token cannot say whose it is (`GET /user`, HTTP 403: an app's installation token); name the user it comments as with `--author LOGIN` (an app comments as `APP-SLUG[bot]`)",
                self.what()
            ))),
            Err(f) => Err(self.fail(f)),
        }
    }

    fn create(&self, body: &str) -> Result<u64, CommentError> {
        let url = format!(
            "{}/repos/{}/issues/{}/comments",
            self.api, self.repo, self.number
        );
        let c: Comment = crate::http::send_json(
            || self.request("POST", &url),
            Some(&serde_json::json!({ "body": body })),
        )
        .map_err(|f| self.fail(f))?;
        Ok(c.id)
    }

    fn update(&self, id: u64, body: &str) -> Result<(), CommentError> {
        let url = self.comment_url(id);
        crate::http::send_with(
            || self.request("PATCH", &url),
            Some(&serde_json::json!({ "body": body })),
            |_| Ok(()),
        )
        .map_err(|f| self.fail(f))
    }

    fn delete(&self, id: u64) -> Result<(), CommentError> {
        let url = self.comment_url(id);
        crate::http::send_with(|| self.request("DELETE", &url), None, |_| Ok(()))
            .map_err(|f| self.fail(f))
    }
}
