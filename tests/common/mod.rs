//! End-to-end harness: runs the real `cairn` binary on a loopback port over a
//! temporary data directory, and a blocking HTTP client for its API.
//!
//! A module of the one end-to-end test binary (`tests/e2e.rs`); not every
//! helper has a user in every build.
#![allow(dead_code)]

pub mod etcd;
pub mod exposition_target;
pub mod kube;
pub mod netns;
pub mod peers;
pub mod raw_read;
pub mod s3proxy;
pub mod three_nodes;
pub mod webdriver;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cairn_model::{Labels, Sample, is_stale_nan, stale_nan};
use cairn_protocols::SeriesSamples;
use cairn_protocols::remote_write::{ContentEncoding, encode_write_request_with, proto};
use prost::Message;
use serde_json::Value;

/// How long a start (including WAL replay) may take before the test fails.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// Ports handed out by `free_port` lie below the kernel's ephemeral range,
/// so no outgoing connection can take one between the test choosing it and
/// the server binding it.
const TEST_PORTS: std::ops::Range<u16> = 15_000..32_000;

/// A TCP port free on 127.0.0.1, never handed out before in this process: a
/// test that asks for several ports gets distinct ones.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let span = u32::from(TEST_PORTS.end - TEST_PORTS.start);
    // Processes started at the same time begin at different places.
    let first = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let offset = (first + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = TEST_PORTS.start + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {TEST_PORTS:?}")
}

/// A running (or stopped) `cairn` process over one data directory.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub data_dir: PathBuf,
    pub extra_args: Vec<String>,
    /// The address it listens on (loopback unless set).
    pub host: String,
    /// A command the binary runs under, e.g. `ip netns exec NAME`.
    pub command_prefix: Vec<String>,
    log_path: PathBuf,
    /// Keeps the data directory alive when the server owns it.
    _owned_dir: Option<tempfile::TempDir>,
    _log_dir: tempfile::TempDir,
    starts: usize,
}

impl Server {
    /// Starts on a fresh temporary data directory and waits until ready.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Like [`Server::start`] with extra command-line flags.
    pub fn start_with(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut s = Self::new(dir.path(), args);
        s._owned_dir = Some(dir);
        s.restart();
        s
    }

    /// A server over `data_dir` (not started: call [`Server::restart`] or
    /// [`Server::spawn`]).
    pub fn new(data_dir: &Path, args: &[&str]) -> Self {
        Self {
            child: None,
            port: 0,
            data_dir: data_dir.to_path_buf(),
            extra_args: args.iter().map(|s| s.to_string()).collect(),
            host: "127.0.0.1".into(),
            command_prefix: Vec::new(),
            log_path: PathBuf::new(),
            _owned_dir: None,
            _log_dir: tempfile::tempdir().expect("tempdir"),
            starts: 0,
        }
    }

    /// Spawns the process on a new free port without waiting for readiness.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "server already running");
        self.port = free_port();
        self.starts += 1;
        self.log_path = self._log_dir.path().join(format!("cairn-{}.log", self.starts));
        let log = File::create(&self.log_path).expect("create log file");
        let mut command = match self.command_prefix.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(env!("CARGO_BIN_EXE_cairn"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_cairn")),
        };
        let child = command
            .arg("--storage.path")
            .arg(&self.data_dir)
            .arg("--http.listen-addr")
            .arg(format!("{}:{}", self.host, self.port))
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn cairn");
        self.child = Some(child);
    }

    /// (Re)starts on the same data directory and waits for `/-/ready`.
    pub fn restart(&mut self) {
        self.spawn();
        self.wait_ready(READY_TIMEOUT);
    }

    /// Polls `/-/ready` until 200; panics (with the log) on timeout or exit.
    pub fn wait_ready(&mut self, timeout: Duration) {
        let client = http_client(Duration::from_secs(2));
        let url = format!("{}/-/ready", self.url());
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                panic!("cairn exited during startup with {status}; log:\n{}", self.log());
            }
            if let Ok(r) = client.get(&url).send()
                && r.status().as_u16() == 200
            {
                return;
            }
            if Instant::now() > deadline {
                panic!("cairn not ready after {timeout:?}; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server not running").id()
    }

    /// Sends `sig` (as `kill` spells it, e.g. `-STOP`) to the process.
    pub fn signal(&self, sig: &str) {
        let pid = self.pid().to_string();
        let sent = Command::new("kill").args([sig, &pid]).status().expect("run kill");
        assert!(sent.success(), "kill {sig} {pid}");
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL (`Child::kill` on unix) and reap.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits (bounded) for a clean exit and returns its status.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        let mut c = self.child.take().expect("server not running");
        let ok = Command::new("kill")
            .arg("-TERM")
            .arg(c.id().to_string())
            .status()
            .expect("run kill");
        assert!(ok.success(), "kill -TERM failed");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = c.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!("cairn did not exit within {timeout:?} of SIGTERM; log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    pub fn client(&self) -> Client {
        Client::new(self.url())
    }

    /// The current run's combined stdout/stderr.
    pub fn log(&self) -> String {
        let mut s = String::new();
        if let Ok(mut f) = File::open(&self.log_path) {
            let _ = f.read_to_string(&mut s);
        }
        s
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A blocking client that never uses a proxy (loopback only).
pub fn http_client(timeout: Duration) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .expect("http client")
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: String,
    /// The `Retry-After` header, if the answer had one.
    pub retry_after: Option<String>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// Asserts the Prometheus error envelope with this status and type.
    #[track_caller]
    pub fn assert_error(&self, status: u16, error_type: &str) {
        assert_eq!(self.status, status, "body: {}", self.body);
        let v = self.json();
        assert_eq!(v["status"], "error", "{}", self.body);
        assert_eq!(v["errorType"], error_type, "{}", self.body);
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{}", self.body);
    }
}

/// One exported series: labels, and samples with values as stored (a stale
/// marker comes back as [`stale_nan`], `"NaN"` as a plain NaN).
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub labels: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
    /// Native histogram samples (export writes them on lines of their own).
    pub histograms: Vec<(i64, cairn_model::Histogram)>,
}

/// The Cairn API over HTTP.
pub struct Client {
    pub base: String,
    pub http: reqwest::blocking::Client,
}

impl Client {
    pub fn new(base: String) -> Self {
        Self {
            base,
            http: http_client(Duration::from_secs(30)),
        }
    }

    /// A client whose every request carries these headers (a tenant, credentials).
    pub fn with_headers(base: String, headers: &[(&str, &str)]) -> Self {
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            map.insert(
                reqwest::header::HeaderName::from_bytes(name.as_bytes()).expect("header name"),
                value.parse().expect("header value"),
            );
        }
        let http = reqwest::blocking::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .default_headers(map)
            .build()
            .expect("http client");
        Self { base, http }
    }

    /// A client acting for `tenant` (`X-Scope-OrgID`).
    pub fn for_tenant(base: String, tenant: &str) -> Self {
        Self::with_headers(base, &[("X-Scope-OrgID", tenant)])
    }

    fn finish(r: reqwest::Result<reqwest::blocking::Response>) -> reqwest::Result<Resp> {
        let r = r?;
        let status = r.status().as_u16();
        let retry_after = r
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = r.text()?;
        Ok(Resp {
            status,
            body,
            retry_after,
        })
    }

    /// POSTs a raw remote-write body with these headers.
    pub fn try_post_write(&self, body: Vec<u8>, encoding: Option<&str>) -> reqwest::Result<Resp> {
        let mut req = self
            .http
            .post(format!("{}/api/v1/write", self.base))
            .header("Content-Type", "application/x-protobuf")
            .header("X-Prometheus-Remote-Write-Version", "0.1.0")
            .body(body);
        if let Some(e) = encoding {
            req = req.header("Content-Encoding", e);
        }
        Self::finish(req.send())
    }

    pub fn post_write(&self, body: Vec<u8>, encoding: Option<&str>) -> Resp {
        self.try_post_write(body, encoding).expect("remote write request")
    }

    /// Remote-writes `series` snappy-encoded, as Prometheus does.
    pub fn try_write(&self, series: &[SeriesSamples]) -> reqwest::Result<Resp> {
        self.try_post_write(encode(series, ContentEncoding::Snappy), Some("snappy"))
    }

    /// Remote-writes and asserts 204.
    #[track_caller]
    pub fn write(&self, series: &[SeriesSamples]) {
        let r = self.try_write(series).expect("remote write request");
        assert_eq!(r.status, 204, "remote write refused: {}", r.body);
    }

    pub fn get(&self, path_and_query: &str) -> Resp {
        Self::finish(self.http.get(format!("{}{path_and_query}", self.base)).send())
            .unwrap_or_else(|e| panic!("GET {path_and_query}: {e}"))
    }

    pub fn post_form(&self, path: &str, form: &[(&str, &str)]) -> Resp {
        Self::finish(self.http.post(format!("{}{path}", self.base)).form(form).send())
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    /// GET with `(name, value)` query parameters, URL-encoded.
    pub fn get_query(&self, path: &str, query: &[(&str, &str)]) -> Resp {
        Self::finish(self.http.get(format!("{}{path}", self.base)).query(query).send())
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// `/api/v1/export` for these selectors (and optional range, in ms).
    pub fn export(&self, selectors: &[&str], range: Option<(i64, i64)>) -> Vec<Exported> {
        let mut q: Vec<(&str, String)> = selectors.iter().map(|s| ("match[]", s.to_string())).collect();
        if let Some((start, end)) = range {
            q.push(("start", ms_to_param(start)));
            q.push(("end", ms_to_param(end)));
        }
        let r = Self::finish(self.http.get(format!("{}/api/v1/export", self.base)).query(&q).send())
            .unwrap_or_else(|e| panic!("export {selectors:?}: {e:?}"));
        assert_eq!(r.status, 200, "export: {}", r.body);
        parse_export(&r.body)
    }

    /// `/api/v1/series` data: label objects, in the order returned.
    pub fn series(&self, selectors: &[&str]) -> Vec<BTreeMap<String, String>> {
        let q: Vec<(&str, &str)> = selectors.iter().map(|s| ("match[]", *s)).collect();
        let r = self.get_query("/api/v1/series", &q);
        assert_eq!(r.status, 200, "series: {}", r.body);
        let v = r.json();
        assert_eq!(v["status"], "success");
        v["data"]
            .as_array()
            .expect("data array")
            .iter()
            .map(|o| {
                o.as_object()
                    .expect("label object")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().expect("string value").to_string()))
                    .collect()
            })
            .collect()
    }

    /// `/api/v1/labels` data (optionally restricted by selectors).
    pub fn labels(&self, selectors: &[&str]) -> Vec<String> {
        let q: Vec<(&str, &str)> = selectors.iter().map(|s| ("match[]", *s)).collect();
        let r = self.get_query("/api/v1/labels", &q);
        assert_eq!(r.status, 200, "labels: {}", r.body);
        strings(&r.json()["data"])
    }

    /// `/api/v1/label/{name}/values` data.
    pub fn label_values(&self, name: &str, selectors: &[&str]) -> Vec<String> {
        let q: Vec<(&str, &str)> = selectors.iter().map(|s| ("match[]", *s)).collect();
        let r = self.get_query(&format!("/api/v1/label/{name}/values"), &q);
        assert_eq!(r.status, 200, "label values: {}", r.body);
        strings(&r.json()["data"])
    }

    /// The value of an unlabelled sample line in `/metrics`.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let r = self.get("/metrics");
        assert_eq!(r.status, 200);
        r.body.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(' ')?;
            rest.trim().parse().ok()
        })
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

/// Milliseconds as an API time parameter (seconds with 3 decimals).
pub fn ms_to_param(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let a = ms.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1000, a % 1000)
}

/// Parses an `/api/v1/export` body (JSON lines).
pub fn parse_export(body: &str) -> Vec<Exported> {
    body.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("bad export line ({e}): {line}"));
            let labels = v["metric"]
                .as_object()
                .expect("metric object")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_string()))
                .collect();
            let ts = v["timestamps"].as_array().expect("timestamps");
            let t = |t: &Value| t.as_i64().expect("integer timestamp");
            if let Some(histograms) = v["histograms"].as_array() {
                assert_eq!(
                    histograms.len(),
                    ts.len(),
                    "histograms/timestamps length mismatch: {line}"
                );
                let histograms = histograms
                    .iter()
                    .zip(ts)
                    .map(|(h, ts)| {
                        let h = cairn_protocols::histogram_json::parse_histogram(h).expect("histogram");
                        (t(ts), h)
                    })
                    .collect();
                return Exported {
                    labels,
                    samples: Vec::new(),
                    histograms,
                };
            }
            let values = v["values"].as_array().expect("values");
            assert_eq!(values.len(), ts.len(), "values/timestamps length mismatch: {line}");
            let samples = values
                .iter()
                .zip(ts)
                .map(|(v, ts)| Sample::new(t(ts), export_value(v)))
                .collect();
            Exported {
                labels,
                samples,
                histograms: Vec::new(),
            }
        })
        .collect()
}

fn export_value(v: &Value) -> f64 {
    match v {
        Value::Null => stale_nan(),
        Value::Number(n) => n.as_f64().expect("f64"),
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            other => other.parse().unwrap_or_else(|_| panic!("bad value {other:?}")),
        },
        other => panic!("bad export value {other}"),
    }
}

/// Display of a value that tells stale markers and NaNs apart.
pub fn show(v: f64) -> String {
    if is_stale_nan(v) {
        "stale".into()
    } else {
        format!("{v:?}")
    }
}

/// A series from `(name, value)` pairs (canonicalised) and `(t, v)` samples.
pub fn series(pairs: &[(&str, &str)], samples: &[(i64, f64)]) -> SeriesSamples {
    SeriesSamples::new(
        Labels::from_pairs(pairs.iter().copied()),
        samples.iter().map(|&(t, v)| Sample::new(t, v)).collect(),
    )
}

/// Two counters `requests_total{job="a"|"b"}` rising at 1 and 2.5 a
/// second, sampled every 15 s from `t0` to `now`: a dashboard's data for
/// the results cache's tests.
pub fn two_request_counters(t0: i64, now: i64) -> Vec<SeriesSamples> {
    let samples = |slope: f64| -> Vec<(i64, f64)> {
        (0..)
            .map(|i| t0 + i * 15_000)
            .take_while(|&t| t <= now)
            .map(|t| (t, (t - t0) as f64 / 1000.0 * slope))
            .collect()
    };
    vec![
        series(&[("__name__", "requests_total"), ("job", "a")], &samples(1.0)),
        series(&[("__name__", "requests_total"), ("job", "b")], &samples(2.5)),
    ]
}

/// A remote-write body for canonical series.
pub fn encode(series: &[SeriesSamples], encoding: ContentEncoding) -> Vec<u8> {
    let mut out = Vec::new();
    encode_write_request_with(series, &[], encoding, &mut out).expect("encode write request");
    out
}

/// Labels exactly as sent (any order, duplicates allowed) and `(t, v)` samples.
pub type RawSeries<'a> = (Vec<(&'a str, &'a str)>, Vec<(i64, f64)>);

/// A snappy remote-write body with labels exactly as given (any order,
/// duplicates allowed), as a misbehaving or unsorted sender would send.
pub fn encode_raw(series: &[RawSeries<'_>]) -> Vec<u8> {
    let req = proto::WriteRequest {
        timeseries: series
            .iter()
            .map(|(labels, samples)| proto::TimeSeries {
                labels: labels
                    .iter()
                    .map(|(n, v)| proto::Label {
                        name: n.to_string(),
                        value: v.to_string(),
                    })
                    .collect(),
                samples: samples
                    .iter()
                    .map(|&(t, v)| proto::Sample { value: v, timestamp: t })
                    .collect(),
                exemplars: vec![],
                histograms: vec![],
            })
            .collect(),
        metadata: vec![],
    };
    let pb = req.encode_to_vec();
    snap::raw::Encoder::new().compress_vec(&pb).expect("snappy")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// Bit-exact sample list comparison with a readable failure.
#[track_caller]
pub fn assert_samples_eq(got: &[Sample], want: &[(i64, f64)], what: &str) {
    let got: Vec<(i64, String)> = got.iter().map(|s| (s.t, show(s.v))).collect();
    let want: Vec<(i64, String)> = want.iter().map(|&(t, v)| (t, show(v))).collect();
    assert_eq!(got, want, "samples of {what}");
    // `show` prints via Debug; bits must match too (e.g. -0.0 vs 0.0 print differently already).
}

/// A label map from pairs.
pub fn lmap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}
