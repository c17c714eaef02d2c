//! What the browser tests of the web UI share: a Cairn with known data and a
//! Prometheus configuration (so targets, rules and alerts have content), the
//! page hooks, and a reverse proxy that serves Cairn under a path.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::common::Server;
use crate::common::webdriver::Browser;

/// The pages, by the path below the prefix and their `page-<name>` hook.
pub const PAGES: [&str; 10] = [
    "query",
    "alerts",
    "rules",
    "targets",
    "cardinality",
    "status",
    "storage",
    "ingestion",
    "flags",
    "config",
];

/// The first query panel.
pub const PANEL: &str = "[data-testid=query-panel]";

/// Cairn with `ui_requests_total` (3 series over the last 30 minutes; newest
/// values 300, 20 and 5), three metrics of 50, 20 and 5 series for the
/// cardinality page, scraping itself, and a recording rule and a firing alert.
pub struct Fixture {
    pub server: Server,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let rules = dir.path().join("rules.yml");
        std::fs::write(
            &rules,
            "groups:\n  - name: ui\n    interval: 1s\n    rules:\n\
             \x20     - record: code:ui_requests:sum\n        expr: sum by (code) (ui_requests_total)\n\
             \x20     - alert: ServerErrors\n        expr: ui_requests_total{code=\"500\"} > 0\n\
             \x20       labels:\n          severity: page\n\
             \x20       annotations:\n          summary: '{{ $labels.instance }} answered errors'\n",
        )
        .expect("write the rule file");
        // The scrape target is this very server, whose port is known once it
        // runs: file discovery picks it up.
        let targets = dir.path().join("targets.json");
        std::fs::write(&targets, "[]").expect("write the targets file");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
                 rule_files:\n  - {}\n\
                 scrape_configs:\n  - job_name: cairn\n    file_sd_configs:\n      - files: ['{}']\n",
                rules.display(),
                targets.display()
            ),
        )
        .expect("write the configuration");
        let config_flag = config.display().to_string();
        let mut all_args = args.to_vec();
        all_args.extend(["--config.file", &config_flag]);
        let server = Server::start_with(&all_args);
        let target = format!(r#"[{{"targets": ["127.0.0.1:{}"]}}]"#, server.port);
        std::fs::write(&targets, target).expect("write the targets file");
        load_data(&server);
        Self { server, _dir: dir }
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn load_data(server: &Server) {
    let now = now_ms();
    let mut text = String::new();
    for (code, last) in [("200", 300.0), ("404", 20.0), ("500", 5.0)] {
        for i in 0..30 {
            let t = now - (30 - i) * 60_000 + 30_000;
            let v = last * (i + 1) as f64 / 30.0;
            text.push_str(&format!(
                "ui_requests_total{{job=\"api\",instance=\"a\",code=\"{code}\"}} {v} {t}\n"
            ));
        }
    }
    for (name, n) in [("card_big", 50), ("card_mid", 20), ("card_small", 5)] {
        for i in 0..n {
            text.push_str(&format!("{name}{{i=\"{i}\"}} 1 {}\n", now - 60_000));
        }
    }
    let resp = crate::common::http_client(Duration::from_secs(30))
        .post(format!("{}/api/v1/import/prometheus", server.url()))
        .body(text)
        .send()
        .expect("import the test data");
    assert_eq!(resp.status().as_u16(), 204, "{:?}", resp.text());
}

/// Waits until the page's root element (`page-<name>`) is there.
pub fn wait_for_page(browser: &Browser, page: &str) {
    browser.wait_for(
        &format!("page {page}"),
        &format!("return document.querySelector('[data-testid=page-{page}]') !== null;"),
        Duration::from_secs(15),
    );
}

/// Picks a theme as a user would (it is remembered) and reloads the page.
pub fn set_theme(browser: &Browser, theme: &str) {
    browser.execute(
        "localStorage.setItem('cairn.theme', arguments[0]); location.reload();",
        vec![Value::from(theme)],
    );
    browser.wait_for(
        "the reloaded page",
        "return document.readyState === 'complete' && document.documentElement.dataset.theme;",
        Duration::from_secs(15),
    );
    std::thread::sleep(Duration::from_millis(700));
}

/// Replaces the first panel's query with `query` by typing it, and runs it.
pub fn run_in_first_panel(browser: &Browser, query: &str) {
    let editor = format!("{PANEL} .cm-content");
    browser.wait_for(
        "the editor",
        &format!("return document.querySelector('{editor}') !== null;"),
        Duration::from_secs(15),
    );
    browser.click(&editor);
    // Ctrl+A, Backspace: empty the editor; Escape closes any completion.
    browser.type_into(&editor, "\u{E009}a\u{E000}\u{E003}");
    browser.type_into(&editor, query);
    browser.type_into(&editor, "\u{E00C}");
    browser.click(&format!("{PANEL} [data-testid=execute]"));
    std::thread::sleep(Duration::from_millis(300));
    browser.wait_for(
        "the query's answer",
        &format!(
            "return document.querySelector('{PANEL} [data-testid=result-row], {PANEL} [data-testid=query-error], \
             {PANEL} [data-testid=graph][data-render-ms]') !== null;"
        ),
        Duration::from_secs(15),
    );
}

/// The first panel's table: each row's labels and value as shown.
pub fn table_values(browser: &Browser) -> Vec<(String, String)> {
    let rows = browser.execute(
        &format!(
            "return [...document.querySelectorAll('{PANEL} [data-testid=result-row]')].map(r => \
             [r.querySelector('[data-testid=result-labels]').innerText.trim(), \
              r.querySelector('[data-testid=result-value]').innerText.trim()]);"
        ),
        vec![],
    );
    serde_json::from_value(rows).expect("rows of labels and values")
}

pub fn screenshot_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/ui-screenshots")
        .join(format!("{name}.png"))
}

/// A reverse proxy serving `backend` under a path: `/monitoring/x` is
/// `backend/x`, as a proxy that strips the prefix does. One thread per
/// connection, one request per connection; it runs until the test ends.
pub struct PathProxy;

impl PathProxy {
    pub fn start(port: u16, prefix: &'static str, backend_port: u16) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind the proxy");
        std::thread::spawn(move || {
            let client = crate::common::http_client(Duration::from_secs(60));
            for stream in listener.incoming().flatten() {
                let client = client.clone();
                std::thread::spawn(move || {
                    let _ = forward(stream, prefix, backend_port, &client);
                });
            }
        });
        Self
    }
}

fn forward(
    mut stream: TcpStream,
    prefix: &str,
    backend_port: u16,
    client: &reqwest::blocking::Client,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or("").split(' ');
    let (method, target) = (request_line.next().unwrap_or(""), request_line.next().unwrap_or(""));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    let Some(rest) = target.strip_prefix(prefix) else {
        return stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    };
    let rest = if rest.is_empty() { "/" } else { rest };
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut request = client
        .request(method, format!("http://127.0.0.1:{backend_port}{rest}"))
        .body(body);
    for (k, v) in &headers {
        if matches!(
            k.as_str(),
            "accept" | "accept-encoding" | "content-type" | "if-none-match"
        ) {
            request = request.header(k, v);
        }
    }
    let Ok(response) = request.send() else {
        return stream.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    };
    let status = response.status();
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    for (k, v) in response.headers() {
        if matches!(
            k.as_str(),
            "content-type" | "content-encoding" | "cache-control" | "etag" | "location"
        ) {
            out.push_str(&format!("{k}: {}\r\n", v.to_str().unwrap_or("")));
        }
    }
    let body = response.bytes().unwrap_or_default();
    out.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len()));
    stream.write_all(out.as_bytes())?;
    stream.write_all(&body)
}
