//! One request to a receiver, and what its answer means for a retry, as
//! Prometheus' remote write client decides: 2xx is delivered; 5xx, 429
//! when `retry_on_http_429` is set, and failures to connect or read are
//! tried again (after `Retry-After` when the receiver sent one); anything
//! else is refused for good.

use std::time::Duration;

use cairn_scrape::settings::HttpSettings;

/// The protocol a queue speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    V1,
    V2,
}

impl Protocol {
    fn content_type(self) -> &'static str {
        match self {
            Self::V1 => "application/x-protobuf",
            Self::V2 => "application/x-protobuf;proto=io.prometheus.write.v2.Request",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Self::V1 => "0.1.0",
            Self::V2 => "2.0.0",
        }
    }
}

/// Why a send failed.
#[derive(Debug)]
pub enum SendError {
    /// Worth trying again, after `retry_after` if the receiver said so.
    Recoverable {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// The receiver refused the request; sending it again would not help.
    Refused(String),
}

pub struct Sender {
    pub client: reqwest::Client,
    pub url: String,
    pub http: HttpSettings,
    pub headers: Vec<(String, String)>,
    pub timeout: Duration,
    pub protocol: Protocol,
    pub retry_on_429: bool,
}

impl Sender {
    /// POSTs one snappy-compressed request body.
    pub async fn send(&self, body: bytes::Bytes, attempt: u32) -> Result<(), SendError> {
        let mut req = self
            .client
            .post(&self.url)
            .timeout(self.timeout)
            .header("Content-Encoding", "snappy")
            .header("Content-Type", self.protocol.content_type())
            .header("User-Agent", concat!("Cairn/", env!("CARGO_PKG_VERSION")))
            .header("X-Prometheus-Remote-Write-Version", self.protocol.version());
        if attempt > 0 {
            req = req.header("Retry-Attempt", attempt.to_string());
        }
        for (name, value) in &self.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let req = cairn_scrape::client::with_credentials(req, &self.http).map_err(SendError::Refused)?;
        let resp = req.body(body).send().await.map_err(|e| SendError::Recoverable {
            reason: error_chain(&e),
            retry_after: None,
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let retry_after = resp
            .headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = resp.text().await.unwrap_or_default();
        let reason = format!(
            "server returned HTTP status {}: {}",
            status,
            body.lines().next().unwrap_or("").chars().take(512).collect::<String>()
        );
        if status.is_server_error() || (status.as_u16() == 429 && self.retry_on_429) {
            Err(SendError::Recoverable { reason, retry_after })
        } else {
            Err(SendError::Refused(reason))
        }
    }
}

/// How a send with retries ended.
pub enum Outcome {
    Delivered {
        took: Duration,
    },
    Refused(String),
    /// The queue stopped before the request was delivered.
    Stopped,
}

/// How long to wait between tries: from `min` doubling up to `max`.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub min: Duration,
    pub max: Duration,
}

impl Sender {
    /// Sends `body` until it is delivered or refused, waiting between tries
    /// as the receiver's `Retry-After` or `backoff` says; `on_retry` hears
    /// of each recoverable failure.
    pub async fn send_with_retries(
        &self,
        body: bytes::Bytes,
        backoff: Backoff,
        stop: &mut tokio::sync::watch::Receiver<bool>,
        mut on_retry: impl FnMut(&str, Duration),
    ) -> Outcome {
        let mut wait = backoff.min;
        let mut attempt = 0;
        loop {
            let started = std::time::Instant::now();
            let result = tokio::select! {
                biased;
                _ = stop.changed() => return Outcome::Stopped,
                r = self.send(body.clone(), attempt) => r,
            };
            match result {
                Ok(()) => {
                    return Outcome::Delivered {
                        took: started.elapsed(),
                    };
                }
                Err(SendError::Refused(reason)) => return Outcome::Refused(reason),
                Err(SendError::Recoverable { reason, retry_after }) => {
                    let pause = retry_after.unwrap_or(wait);
                    on_retry(&reason, pause);
                    tokio::select! {
                        biased;
                        _ = stop.changed() => return Outcome::Stopped,
                        _ = tokio::time::sleep(pause) => {}
                    }
                    wait = (wait * 2).min(backoff.max);
                    attempt += 1;
                }
            }
        }
    }
}

/// `Retry-After` as seconds or an HTTP date.
fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_takes_seconds_and_http_dates() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"), Some(Duration::ZERO));
        for bad in [
            "",
            "soon",
            "-3",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse_retry_after(bad), None, "{bad:?}");
        }
    }
}
