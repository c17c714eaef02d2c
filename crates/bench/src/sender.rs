//! Prometheus remote write 1.0 over HTTP: snappy protobuf bodies posted by a
//! small pool of worker threads with a blocking client, retrying 5xx and
//! connection errors with backoff as Prometheus' queue manager does.
//!
//! For backfills the bodies are encoded once, up front, into a [`Spool`]
//! (one file per worker) so every server receives byte-identical requests
//! and the sender spends no CPU generating data while a server is measured.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use cairn_protocols::SeriesSamples;

use crate::fleet::Fleet;

/// Which remote-write protocol the bench speaks (`--remote-write-protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WireProtocol {
    /// Remote write 1.0: snappy `prometheus.WriteRequest`.
    #[default]
    V1,
    /// Remote write 2.0: snappy `io.prometheus.write.v2.Request` (symbols table).
    V2,
}

impl WireProtocol {
    /// `1.0` or `2.0`, as the flag takes it.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "1" | "1.0" => Ok(Self::V1),
            "2" | "2.0" => Ok(Self::V2),
            _ => Err(format!("unknown remote-write protocol {s:?}: want 1.0 or 2.0")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::V1 => "1.0",
            Self::V2 => "2.0",
        }
    }

    /// One snappy-compressed request body, no metadata.
    pub fn encode(self, series: &[SeriesSamples]) -> anyhow::Result<Vec<u8>> {
        use cairn_protocols::remote_write::{ContentEncoding, encode_write_request, encode_write_request_v2};
        let mut body = Vec::new();
        match self {
            Self::V1 => encode_write_request(series, &[], &mut body)?,
            Self::V2 => encode_write_request_v2(series, ContentEncoding::Snappy, &mut body)?,
        }
        Ok(body)
    }

    fn content_type(self) -> &'static str {
        match self {
            Self::V1 => "application/x-protobuf",
            Self::V2 => "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        }
    }

    fn version_header(self) -> &'static str {
        match self {
            Self::V1 => "0.1.0",
            Self::V2 => "2.0.0",
        }
    }
}

/// Encodes one remote write 1.0 body (snappy protobuf, no metadata).
pub fn encode(series: &[SeriesSamples]) -> anyhow::Result<Vec<u8>> {
    WireProtocol::V1.encode(series)
}

/// A blocking remote write client.
#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
    /// Requests go to these in turn (the nodes of a cluster); a retry goes
    /// to the next one.
    urls: Arc<[String]>,
    next: Arc<std::sync::atomic::AtomicUsize>,
    pub max_retries: u32,
    /// Set to stop retrying (e.g. the server was declared hung and killed).
    pub abort: Arc<AtomicBool>,
    /// Tenant header and credentials added to every request.
    pub access: Access,
    /// The protocol of the bodies this client posts.
    pub protocol: WireProtocol,
}

/// Extra headers and credentials for a target (multi-tenant gateways,
/// authenticating proxies).
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// `(name, value)` pairs, e.g. `("X-Scope-OrgID", "tenant-1")`.
    pub headers: Vec<(String, String)>,
    pub basic_auth: Option<(String, String)>,
    pub bearer_token: Option<String>,
}

impl Access {
    /// Adds these headers and credentials to a request.
    pub fn apply(&self, mut rb: reqwest::blocking::RequestBuilder) -> reqwest::blocking::RequestBuilder {
        for (k, v) in &self.headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        if let Some((user, pass)) = &self.basic_auth {
            rb = rb.basic_auth(user, Some(pass));
        }
        if let Some(token) = &self.bearer_token {
            rb = rb.bearer_auth(token);
        }
        rb
    }
}

/// What happened to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Ok {
        retries: u32,
    },
    /// Rejected with a 4xx (not retried) or retries exhausted.
    Failed {
        retries: u32,
        status: Option<u16>,
        message: String,
    },
}

impl Client {
    /// A client of `url`, or of several comma-separated URLs in turn.
    pub fn new(url: impl Into<String>) -> anyhow::Result<Self> {
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(120))
            .pool_max_idle_per_host(64)
            .build()?;
        Ok(Self {
            http,
            urls: split_urls(&url.into()),
            next: Arc::default(),
            max_retries: 10,
            abort: Arc::new(AtomicBool::new(false)),
            access: Access::default(),
            protocol: WireProtocol::V1,
        })
    }

    pub fn post(&self, body: &[u8]) -> Outcome {
        let mut retries = 0;
        let mut backoff = Duration::from_millis(50);
        loop {
            let resp = self
                .access
                .apply(self.http.post(self.pick()))
                .header("Content-Encoding", "snappy")
                .header("Content-Type", self.protocol.content_type())
                .header("User-Agent", "cairn-bench")
                .header("X-Prometheus-Remote-Write-Version", self.protocol.version_header())
                .body(body.to_vec())
                .send();
            let (status, message) = match resp {
                Ok(r) if r.status().is_success() => return Outcome::Ok { retries },
                Ok(r) => {
                    let status = r.status().as_u16();
                    let text = r.text().unwrap_or_default();
                    if !(500..600).contains(&status) && status != 429 {
                        return Outcome::Failed {
                            retries,
                            status: Some(status),
                            message: text,
                        };
                    }
                    (Some(status), text)
                }
                Err(e) => (None, e.to_string()),
            };
            if retries >= self.max_retries || self.abort.load(Ordering::Relaxed) {
                return Outcome::Failed {
                    retries,
                    status,
                    message,
                };
            }
            retries += 1;
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

impl Client {
    fn pick(&self) -> &str {
        &self.urls[self.next.fetch_add(1, Ordering::Relaxed) % self.urls.len()]
    }
}

/// Comma-separated URLs, each once.
pub fn split_urls(urls: &str) -> Arc<[String]> {
    let mut out: Vec<String> = urls
        .split(',')
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .filter(|u| !u.is_empty())
        .collect();
    out.dedup();
    if out.is_empty() {
        out.push(String::new());
    }
    out.into()
}

/// Pre-encoded request bodies, one file per worker, each a sequence of
/// `u32 body_len, u32 samples, body` records in send order.
pub struct Spool {
    _dir: tempfile::TempDir,
    pub files: Vec<PathBuf>,
    pub requests: u64,
    pub samples: u64,
    pub bytes: u64,
}

impl Spool {
    /// Encodes `steps` scrapes of every target of `fleet`. Target `t` goes to
    /// worker `t % workers`, so one worker sends all of a series' samples, in
    /// time order, even when it retries. Each request holds one target's
    /// series for `steps_per_request` consecutive scrapes; requests are
    /// ordered time chunk first, then target, like a remote-write queue
    /// catching up.
    pub fn build(
        fleet: &Fleet,
        steps: u64,
        steps_per_request: u64,
        workers: usize,
        dir: &Path,
    ) -> anyhow::Result<Self> {
        let tmp = tempfile::Builder::new().prefix("cairn-bench-spool").tempdir_in(dir)?;
        let files: Vec<PathBuf> = (0..workers)
            .map(|w| tmp.path().join(format!("worker-{w}.bin")))
            .collect();
        let totals = Mutex::new((0u64, 0u64, 0u64));
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let mut handles = Vec::new();
            for (w, path) in files.iter().enumerate() {
                let totals = &totals;
                handles.push(scope.spawn(move || -> anyhow::Result<()> {
                    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
                    let mine: Vec<usize> = (w..fleet.targets()).step_by(workers).collect();
                    let labels: Vec<_> = mine.iter().map(|&t| fleet.target_labels(t)).collect();
                    let (mut reqs, mut samples, mut bytes) = (0u64, 0u64, 0u64);
                    let mut k0 = 0;
                    while k0 < steps {
                        let k1 = (k0 + steps_per_request).min(steps);
                        for (i, &t) in mine.iter().enumerate() {
                            let series = fleet.samples(t, &labels[i], k0, k1);
                            let n: usize = series.iter().map(|s| s.samples.len()).sum();
                            let body = encode(&series)?;
                            out.write_all(&(body.len() as u32).to_le_bytes())?;
                            out.write_all(&(n as u32).to_le_bytes())?;
                            out.write_all(&body)?;
                            reqs += 1;
                            samples += n as u64;
                            bytes += body.len() as u64;
                        }
                        k0 = k1;
                    }
                    out.flush()?;
                    let mut tot = totals.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                    tot.0 += reqs;
                    tot.1 += samples;
                    tot.2 += bytes;
                    Ok(())
                }));
            }
            for h in handles {
                h.join().map_err(|_| anyhow::anyhow!("spool thread panicked"))??;
            }
            Ok(())
        })?;
        let (requests, samples, bytes) = totals.into_inner().map_err(|_| anyhow::anyhow!("poisoned"))?;
        Ok(Self {
            _dir: tmp,
            files,
            requests,
            samples,
            bytes,
        })
    }
}

/// Result of sending a spool.
#[derive(Debug, Clone, Default)]
pub struct SendReport {
    pub requests: u64,
    pub samples_sent: u64,
    pub samples_acked: u64,
    pub samples_failed: u64,
    pub retries: u64,
    pub failed_requests: u64,
    pub first_errors: Vec<String>,
    pub elapsed: Duration,
}

/// Sends every request of `spool` to `url`, one worker thread per spool file,
/// as fast as the server accepts. `progress` sees the acknowledged sample
/// count every 200 ms; returning `false` aborts the run (remaining requests
/// count as failed), e.g. when the server stopped making progress.
pub fn send_spool(
    spool: &Spool,
    url: &str,
    progress: Option<&(dyn Fn(u64) -> bool + Sync)>,
) -> anyhow::Result<SendReport> {
    let client = Client::new(url)?;
    let abort = client.abort.clone();
    let acked = AtomicU64::new(0);
    let report = Mutex::new(SendReport::default());
    let start = Instant::now();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        let mut handles = Vec::new();
        for path in &spool.files {
            let client = client.clone();
            let (acked, report) = (&acked, &report);
            handles.push(scope.spawn(move || -> anyhow::Result<()> {
                let mut r = BufReader::with_capacity(1 << 20, File::open(path).context("open spool")?);
                let mut local = SendReport::default();
                let mut hdr = [0u8; 8];
                let mut body = Vec::new();
                loop {
                    match r.read_exact(&mut hdr) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                        Err(e) => return Err(e.into()),
                    }
                    let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
                    let n = u64::from(u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]));
                    body.resize(len, 0);
                    r.read_exact(&mut body)?;
                    local.requests += 1;
                    local.samples_sent += n;
                    if client.abort.load(Ordering::Relaxed) {
                        local.failed_requests += 1;
                        local.samples_failed += n;
                        continue;
                    }
                    match client.post(&body) {
                        Outcome::Ok { retries } => {
                            local.retries += u64::from(retries);
                            local.samples_acked += n;
                            acked.fetch_add(n, Ordering::Relaxed);
                        }
                        Outcome::Failed {
                            retries,
                            status,
                            message,
                        } => {
                            local.retries += u64::from(retries);
                            local.failed_requests += 1;
                            local.samples_failed += n;
                            if local.first_errors.len() < 5 {
                                local
                                    .first_errors
                                    .push(format!("status {status:?}: {}", message.trim()));
                            }
                        }
                    }
                }
                let mut rep = report.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
                rep.requests += local.requests;
                rep.samples_sent += local.samples_sent;
                rep.samples_acked += local.samples_acked;
                rep.samples_failed += local.samples_failed;
                rep.retries += local.retries;
                rep.failed_requests += local.failed_requests;
                rep.first_errors.extend(local.first_errors);
                Ok(())
            }));
        }
        if let Some(p) = progress {
            while handles.iter().any(|h| !h.is_finished()) {
                std::thread::sleep(Duration::from_millis(200));
                if !abort.load(Ordering::Relaxed) && !p(acked.load(Ordering::Relaxed)) {
                    abort.store(true, Ordering::Relaxed);
                }
            }
        }
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
        }
        Ok(())
    })?;
    let mut rep = report.into_inner().map_err(|_| anyhow::anyhow!("poisoned"))?;
    rep.elapsed = start.elapsed();
    Ok(rep)
}

/// Shared counter handy for progress output.
pub type Counter = Arc<AtomicU64>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::FleetConfig;
    use crate::trace::{Trace, TraceSeries};
    use cairn_model::Labels;
    use cairn_protocols::DecodeLimits;
    use cairn_protocols::remote_write::{ContentEncoding, decode_write_request};

    fn fleet() -> Fleet {
        let series = vec![
            TraceSeries {
                labels: Labels::from_pairs([("__name__", "c_total")]),
                monotonic: true,
                decimals: Some(2),
            },
            TraceSeries {
                labels: Labels::from_pairs([("__name__", "g"), ("x", "a b,\"c\"")]),
                monotonic: false,
                decimals: Some(0),
            },
        ];
        let values = vec![vec![1.0, 5.0], vec![1.25, 6.0], vec![2.5, 7.0]];
        let trace = Arc::new(Trace {
            series,
            values,
            recorded_ts: vec![0, 1, 2],
        });
        Fleet::new(
            trace,
            FleetConfig {
                targets: 3,
                start_ms: 1_700_000_000_000,
                interval_ms: 15_000,
                jitter_ms: 2,
                job: "node".into(),
                seed: 1,
            },
        )
    }

    #[test]
    fn encoding_decodes_with_protocols_decoder() {
        let f = fleet();
        let labels = f.target_labels(2);
        let series = f.samples(2, &labels, 0, 9);
        let body = encode(&series).unwrap();
        let batch = decode_write_request(&body, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
        assert_eq!(batch.to_series(), series);
        assert_eq!(batch.sample_count(), 18);
        assert_eq!(batch.to_series()[1].labels.get("instance"), Some("host-00002:9100"));
    }

    #[test]
    fn spool_covers_every_sample_once() {
        let f = fleet();
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::build(&f, 10, 4, 2, dir.path()).unwrap();
        assert_eq!(spool.samples, 3 * 2 * 10);
        assert_eq!(spool.requests, 3 * 3);
        let mut seen = std::collections::HashMap::new();
        for path in &spool.files {
            let data = std::fs::read(path).unwrap();
            let mut rest = &data[..];
            while !rest.is_empty() {
                let len = u32::from_le_bytes(rest[..4].try_into().unwrap()) as usize;
                let body = &rest[8..8 + len];
                let batch = decode_write_request(body, ContentEncoding::Snappy, &DecodeLimits::default()).unwrap();
                for s in batch.to_series() {
                    let ts = seen.entry(s.labels).or_insert_with(Vec::new);
                    ts.extend(s.samples.iter().map(|x| x.t));
                }
                rest = &rest[8 + len..];
            }
        }
        assert_eq!(seen.len(), 6);
        for ts in seen.values() {
            assert_eq!(ts.len(), 10);
            assert!(ts.windows(2).all(|w| w[0] < w[1]), "time order per series");
        }
    }
}
