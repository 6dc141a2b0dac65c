//! GitLab's REST API (v4) for the notes of a merge request:
//! `GET /projects/{id}/merge_requests/{iid}/notes` (100 a page, `X-Next-Page` paging), `POST`
//! there, `PUT` and `DELETE …/notes/{note_id}`. System notes ("added 1 commit") are not
//! comments and are passed over.

use serde::Deserialize;

use super::{failure, CommentError, Fixes, Note, Thread, MAX_PAGES};

/// GitLab's limit on a note body.
const LIMIT: usize = 1_000_000;

const FIXES: Fixes = Fixes {
    token: "set GITLAB_TOKEN to a project or personal access token with the `api` scope (a masked CI/CD variable)",
    permission: "the token's user needs at least the Reporter role on the project, and the token the `api` scope",
    target: "check `--project` (an id or a path such as group/project) and `--merge-request IID`",
};

pub(crate) struct GitLab {
    pub api: String,
    /// The project's id, or its path percent-encoded as one segment.
    pub project: String,
    pub iid: u64,
    pub token: String,
    pub agent: ureq::Agent,
}

#[derive(Deserialize)]
struct NoteJson {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    system: bool,
    #[serde(default)]
    author: Option<User>,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

impl GitLab {
    fn request(&self, method: &str, url: &str) -> ureq::Request {
        self.agent
            .request(method, url)
            .set("PRIVATE-TOKEN", &self.token)
            .set("User-Agent", concat!("gpuplan/", env!("CARGO_PKG_VERSION")))
    }

    fn fail(&self, f: crate::http::Failure) -> CommentError {
        failure(&self.what(), f, &FIXES)
    }

    fn notes_url(&self) -> String {
        format!(
            "{}/projects/{}/merge_requests/{}/notes",
            self.api,
            project_segment(&self.project),
            self.iid
        )
    }
}

/// A project named by its path (`group/sub/project`) is one URL segment, slashes and all
/// percent-encoded, as GitLab's API asks.
fn project_segment(project: &str) -> String {
    url::form_urlencoded::byte_serialize(project.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

impl Thread for GitLab {
    fn what(&self) -> String {
        format!(
            "GitLab merge request !{} of project {}",
            self.iid, self.project
        )
    }

    fn limit(&self) -> usize {
        LIMIT
    }

    fn list(&self, keep: &dyn Fn(&Note) -> bool) -> Result<Vec<Note>, CommentError> {
        let mut notes = Vec::new();
        let mut page = 1u64;
        for _ in 0..MAX_PAGES {
            let url = format!(
                "{}?per_page=100&page={page}&sort=asc&order_by=created_at",
                self.notes_url()
            );
            let (batch, next): (Vec<NoteJson>, Option<String>) = crate::http::exchange(
                || self.request("GET", &url),
                None,
                |head, r| {
                    let batch = serde_json::from_reader(r).map_err(|e| e.to_string())?;
                    Ok((batch, head.get("X-Next-Page").map(str::to_owned)))
                },
            )
            .map_err(|f| self.fail(f))?;
            notes.extend(
                batch
                    .into_iter()
                    .filter(|n| !n.system)
                    .map(|n| Note {
                        id: n.id,
                        body: n.body.unwrap_or_default(),
                        author: n.author.map(|a| a.username),
                    })
                    .filter(|n| keep(n)),
            );
            match next.as_deref().map(str::trim) {
                None | Some("") => return Ok(notes),
                Some(n) => match n.parse::<u64>() {
                    Ok(n) if n > page => page = n,
                    _ => {
                        return Err(CommentError(format!(
                            "{}: the next page of notes is `{}`, not a page after {page}",
                            self.what(),
                            crate::core::printable(&crate::core::excerpt(n, 40))
                        )))
                    }
                },
            }
        }
        Err(CommentError(format!(
            "{}: more than {MAX_PAGES} pages of notes; gpuplan stops reading there",
            self.what()
        )))
    }

    fn identity(&self) -> Result<String, CommentError> {
        let url = format!("{}/user", self.api);
        crate::http::send_json::<User>(|| self.request("GET", &url), None)
            .map(|u| u.username)
            .map_err(|f| self.fail(f))
    }

    fn create(&self, body: &str) -> Result<u64, CommentError> {
        let url = self.notes_url();
        let n: NoteJson = crate::http::send_json(
            || self.request("POST", &url),
            Some(&serde_json::json!({ "body": body })),
        )
        .map_err(|f| self.fail(f))?;
        Ok(n.id)
    }

    fn update(&self, id: u64, body: &str) -> Result<(), CommentError> {
        let url = format!("{}/{id}", self.notes_url());
        crate::http::send_with(
            || self.request("PUT", &url),
            Some(&serde_json::json!({ "body": body })),
            |_| Ok(()),
        )
        .map_err(|f| self.fail(f))
    }

    fn delete(&self, id: u64) -> Result<(), CommentError> {
        let url = format!("{}/{id}", self.notes_url());
        crate::http::send_with(|| self.request("DELETE", &url), None, |_| Ok(()))
            .map_err(|f| self.fail(f))
    }
}
