//! A local HTTP/1.1 server on 127.0.0.1 for the live-client tests: every connection is read
//! whole (headers and Content-Length body), logged, and answered by the test's handler.
//! Each answer closes its connection, as a proxy may.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    /// Path with query, as sent.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    /// A range query's `end` less its `start`, seconds (0 where either is missing).
    pub fn span(&self) -> f64 {
        let q = |k: &str| {
            self.target
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        q("end") - q("start")
    }
    /// A form field of a query-protocol body (`Action=...&Version=...`).
    pub fn form(&self, key: &str) -> Option<String> {
        self.body.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then(|| decode(v))
        })
    }
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("00");
                out.push(u8::from_str_radix(h, 16).unwrap_or(b'?'));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Wait this long before answering (a slow server).
    pub delay: Option<Duration>,
    /// Announce the whole length but send only half the body, then close.
    pub truncate: bool,
}

impl Resp {
    pub fn json(body: impl Into<String>) -> Resp {
        Resp::new(200, "application/json", body)
    }
    pub fn xml(body: impl Into<String>) -> Resp {
        Resp::new(200, "text/xml;charset=UTF-8", body)
    }
    pub fn new(status: u16, content_type: &str, body: impl Into<String>) -> Resp {
        Resp {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: body.into(),
            delay: None,
            truncate: false,
        }
    }
    pub fn header(mut self, k: &str, v: &str) -> Resp {
        self.headers.push((k.into(), v.into()));
        self
    }
}

type Handler = dyn Fn(&Req, &[Req]) -> Resp + Send + Sync;

/// The server: its base URL (`http://127.0.0.1:PORT`) and the requests it was sent.
pub struct Mock {
    pub url: String,
    log: Arc<Mutex<Vec<Req>>>,
}

impl Mock {
    /// `handler(request, earlier requests)` answers each request.
    pub fn start(handler: impl Fn(&Req, &[Req]) -> Resp + Send + Sync + 'static) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let log: Arc<Mutex<Vec<Req>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let l2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (log, handler) = (Arc::clone(&l2), Arc::clone(&handler));
                std::thread::spawn(move || serve(conn, &log, &*handler));
            }
        });
        Mock { url, log }
    }

    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().expect("log").clone()
    }

    /// How many requests matched `f`.
    pub fn count(&self, f: impl Fn(&Req) -> bool) -> usize {
        self.requests().iter().filter(|r| f(r)).count()
    }
}

fn read_request(conn: &mut TcpStream) -> Option<Req> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    Some(Req {
        method,
        target,
        headers,
        body,
    })
}

fn serve(mut conn: TcpStream, log: &Mutex<Vec<Req>>, handler: &Handler) {
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    let earlier = log.lock().expect("log").clone();
    log.lock().expect("log").push(req.clone());
    let resp = handler(&req, &earlier);
    if let Some(d) = resp.delay {
        std::thread::sleep(d);
    }
    let mut head = format!("HTTP/1.1 {} X\r\n", resp.status);
    for (k, v) in &resp.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        resp.body.len()
    ));
    let body = if resp.truncate {
        &resp.body.as_bytes()[..resp.body.len() / 2]
    } else {
        resp.body.as_bytes()
    };
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body);
    let _ = conn.flush();
}
