//! HTTP SD: a GET of a JSON list of target groups every refresh interval,
//! with Prometheus' checks (status 200, `application/json` content type, no
//! null groups). A failed refresh keeps the groups of the last good one.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use regex::Regex;
use tokio::sync::mpsc;

use super::group::parse_json_groups;
use super::{TargetGroup, URL_LABEL};
use crate::client::{build_client, with_credentials};
use crate::metrics::{DiscoveryCounters, inc};
use crate::settings::HttpSettings;

static JSON_CONTENT_TYPE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^(?i:application/json(;\s*charset=("utf-8"|utf-8))?)$"#).expect("valid regex"));

pub(super) async fn run(
    url: String,
    refresh_interval: Duration,
    http: HttpSettings,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) {
    let client = match build_client(&http) {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(url = %url, err = %e, "HTTP SD client");
            return;
        }
    };
    let mut last_len = 0;
    loop {
        match refresh(&client, &url, refresh_interval, &http, &mut last_len).await {
            Ok(groups) => {
                if tx.send(groups).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                tracing::error!(url = %url, err = %e, "Unable to refresh target groups");
                inc(&counters.http_failures);
            }
        }
        tokio::time::sleep(refresh_interval).await;
    }
}

async fn refresh(
    client: &reqwest::Client,
    url: &str,
    refresh_interval: Duration,
    http: &HttpSettings,
    last_len: &mut usize,
) -> Result<Vec<TargetGroup>, String> {
    let req = client
        .get(url)
        .header("User-Agent", crate::USER_AGENT)
        .header("Accept", "application/json")
        .header(
            "X-Prometheus-Refresh-Interval-Seconds",
            crate::seconds_text(refresh_interval),
        )
        .timeout(refresh_interval.max(Duration::from_secs(1)));
    let resp = with_credentials(req, http)?.send().await.map_err(|e| e.to_string())?;
    let status = resp.status();
    if status != reqwest::StatusCode::OK {
        return Err(format!("server returned HTTP status {}", crate::status_text(status)));
    }
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_string();
    if !JSON_CONTENT_TYPE.is_match(&content_type) {
        return Err(format!("unsupported content type {content_type:?}"));
    }
    let body = resp.bytes().await.map_err(|e| e.to_string())?;
    let groups = parse_json_groups(&body)?;
    let len = groups.len();
    let mut out: Vec<TargetGroup> = groups
        .into_iter()
        .enumerate()
        .map(|(i, (targets, mut labels))| {
            labels.insert(URL_LABEL.to_string(), url.to_string());
            TargetGroup::from_addresses(format!("{url}:{i}"), targets, labels)
        })
        .collect();
    for i in len..*last_len {
        out.push(TargetGroup {
            source: format!("{url}:{i}"),
            ..Default::default()
        });
    }
    *last_len = len;
    Ok(out)
}
