//! HTTP for gpuplan's clients (Prometheus, provider price APIs, the pull-request comment):
//! overload and server errors retried a bounded number of times, JSON answers streamed into
//! the parser.

use serde::de::DeserializeOwned;

/// Why a GET gave no answer.
pub(crate) enum Failure {
    /// A final error status, with its body for the caller's message.
    Status(u16, String),
    /// No connection, a timeout, a broken transfer.
    Transport(String),
    /// An answer that is not the JSON expected (truncated, another shape).
    Decode(String),
    /// A redirect (3xx) and where to: never followed, so a credential reaches only the
    /// address the user gave, and the final host is always one they named.
    Redirect(u16, String),
    /// A 429 or 5xx that would have been retried, but waiting for it would take this run's
    /// waits past [`wait_budget`]: the status, its body, the seconds already waited in this
    /// run and the seconds the server asked for.
    Throttled {
        code: u16,
        body: String,
        waited: u64,
        asked: u64,
    },
}

/// Milliseconds this process has slept on 429 and 5xx answers, all requests together.
static WAITED_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// The most it may sleep on them in all: the per-request timeout the run's clients are built
/// with (`--timeout`, set by [`agent`]; never less than one request's own retries), 30 s
/// before any. A server that throttles every page held a 50-page refresh 20 s a page, 1,000 s
/// in all (issue 75); now the run gives up once it has waited as long as one request may
/// take, and says so.
static BUDGET_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(30_000);

/// The most this run waits on throttling and server errors, all requests together.
pub(crate) fn wait_budget() -> std::time::Duration {
    std::time::Duration::from_millis(BUDGET_MS.load(std::sync::atomic::Ordering::Relaxed))
}

/// The HTTP client every gpuplan request goes through: `timeout` for the whole request, and
/// no redirect followed ([`Failure::Redirect`] names where it pointed).
pub(crate) fn agent(timeout: std::time::Duration) -> ureq::Agent {
    // One request's own retries (1 s, then 2 s) always fit, whatever the timeout.
    let ladder: u64 = (1..u64::from(TRIES)).sum::<u64>() * 1000;
    BUDGET_MS.store(
        u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(ladder),
        std::sync::atomic::Ordering::Relaxed,
    );
    ureq::AgentBuilder::new()
        .timeout(timeout)
        .redirects(0)
        .build()
}

/// The most of one answer that is read: a Prometheus range query over a quarter of a large
/// fleet is a few hundred MiB; past this a misbehaving server is cut off, not followed.
pub(crate) const MAX_BODY_BYTES: u64 = 1 << 30;

/// Tries in all for 429 and 5xx.
pub(crate) const TRIES: u32 = 3;

/// GET `request()` (called once per try, so it can count or sign each one) and parse the JSON
/// answer.
pub(crate) fn get_json<T: DeserializeOwned>(
    request: impl Fn() -> ureq::Request,
) -> Result<T, Failure> {
    send_json(request, None)
}

/// Send `request()` (with `body` as JSON when given) and parse the JSON answer. 429 and 5xx
/// are retried (a request that timed out is the caller's to retry smaller), waiting
/// `Retry-After` seconds, else the try's number of seconds, and never more than 10 at a time
/// nor more than [`wait_budget`] in all ([`Failure::Throttled`] past it).
pub(crate) fn send_json<T: DeserializeOwned>(
    request: impl Fn() -> ureq::Request,
    body: Option<&serde_json::Value>,
) -> Result<T, Failure> {
    send_with(request, body, |r| {
        serde_json::from_reader(r).map_err(|e| e.to_string())
    })
}

/// [`send_json`] with the answer handed to `read` as it streams in (at most
/// [`MAX_BODY_BYTES`]): a reader that folds a large answer into what it needs never holds it.
pub(crate) fn send_with<T>(
    request: impl Fn() -> ureq::Request,
    body: Option<&serde_json::Value>,
    mut read: impl FnMut(&mut dyn std::io::Read) -> Result<T, String>,
) -> Result<T, Failure> {
    exchange(request, body, |_, r| read(r))
}

/// The answer's headers, for a client that pages by them (`Link`, `X-Next-Page`).
pub(crate) struct Head(Vec<(String, String)>);

impl Head {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// [`send_with`] whose reader also sees the answer's headers. 429 and 5xx are retried as
/// [`send_json`] says, except that a POST is retried only on 429: a server error after a
/// POST may have done it, and a second one would do it twice.
pub(crate) fn exchange<T>(
    request: impl Fn() -> ureq::Request,
    body: Option<&serde_json::Value>,
    mut read: impl FnMut(&Head, &mut dyn std::io::Read) -> Result<T, String>,
) -> Result<T, Failure> {
    let post = request().method() == "POST";
    let mut attempt = 0;
    loop {
        attempt += 1;
        let sent = match body {
            Some(b) => request()
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => request().call(),
        };
        match sent {
            Ok(r) if (300..400).contains(&r.status()) => {
                let to = r.header("Location").unwrap_or("").to_owned();
                return Err(Failure::Redirect(r.status(), to));
            }
            // Streamed: a large answer is far beyond what reading it into one string allows.
            Ok(r) => {
                let head = Head(
                    r.headers_names()
                        .into_iter()
                        .filter_map(|k| r.header(&k).map(|v| (k.clone(), v.to_owned())))
                        .collect(),
                );
                let mut body = std::io::Read::take(r.into_reader(), MAX_BODY_BYTES);
                return read(&head, &mut body).map_err(|e| {
                    Failure::Decode(format!(
                        "{e} (an answer is read up to {} MiB)",
                        MAX_BODY_BYTES >> 20
                    ))
                });
            }
            Err(ureq::Error::Status(code, r))
                if (code == 429 || (code >= 500 && !post)) && attempt < TRIES =>
            {
                let asked = r
                    .header("Retry-After")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .unwrap_or(u64::from(attempt));
                let wait = asked.min(10);
                if let Err(waited) = spend(wait) {
                    return Err(Failure::Throttled {
                        code,
                        body: r.into_string().unwrap_or_default(),
                        waited,
                        asked,
                    });
                }
                std::thread::sleep(std::time::Duration::from_secs(wait));
            }
            Err(ureq::Error::Status(code, r)) => {
                return Err(Failure::Status(code, r.into_string().unwrap_or_default()))
            }
            Err(ureq::Error::Transport(t)) => return Err(Failure::Transport(t.to_string())),
        }
    }
}

/// Take `secs` from the run's wait budget, or the whole seconds already waited when they do
/// not fit.
fn spend(secs: u64) -> Result<(), u64> {
    use std::sync::atomic::Ordering::Relaxed;
    let ms = secs.saturating_mul(1000);
    let budget = BUDGET_MS.load(Relaxed);
    WAITED_MS
        .fetch_update(Relaxed, Relaxed, |w| {
            w.checked_add(ms).filter(|total| *total <= budget)
        })
        .map(|_| ())
        .map_err(|w| w / 1000)
}

/// A failure as one line naming the service (`what`, e.g. "Azure Retail Prices at URL").
pub(crate) fn describe(what: &str, f: Failure) -> String {
    match f {
        Failure::Decode(e) => format!("{what}: not the answer expected ({e})"),
        Failure::Status(code, body) => format!(
            "{what} answered HTTP {code}: {}",
            crate::core::printable(&crate::core::excerpt(&body, 200))
        ),
        Failure::Transport(t) => format!("cannot reach {what}: {t}"),
        Failure::Redirect(code, to) => redirected(what, code, &to),
        Failure::Throttled {
            code,
            body,
            waited,
            asked,
        } => format!(
            "{what} answered HTTP {code} again{}: {}; gpuplan had already waited {waited} s on such answers in this run, and waits at most {} s in all (the request timeout): try again later",
            if asked > 10 {
                format!(" and asked for {asked} s more")
            } else {
                String::new()
            },
            crate::core::printable(&crate::core::excerpt(&body, 200)),
            wait_budget().as_secs()
        ),
    }
}

/// The message for a redirect gpuplan did not follow.
pub(crate) fn redirected(what: &str, code: u16, to: &str) -> String {
    format!(
        "{what} answered HTTP {code}, a redirect to `{}`; gpuplan follows no redirect (a credential goes only to the address you gave): give that address instead",
        crate::core::printable(&crate::core::excerpt(to, 300))
    )
}

/// Whether a transport failure was the request's time running out.
pub(crate) fn timed_out(t: &str) -> bool {
    let t = t.to_ascii_lowercase();
    t.contains("timed out") || t.contains("timeout")
}
