//! Queues against a receiver the test scripts (an HTTP server answering each
//! request as told), over a real engine: what Prometheus' remote write
//! client does with each kind of answer — retries after `Retry-After` or
//! the backoff, drops what is refused for good, retries 429 only when
//! configured — metadata sent on its interval, and agent mode's forward
//! batches cut into batches and resent after a restart as they were cut.
//! The end-to-end test against Prometheus and VictoriaMetrics is
//! tests/remote_write_forwarding.rs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use cairn_config::Config;
use cairn_model::{Labels, Sample};
use cairn_protocols::remote_write::proto::WriteRequest;
use cairn_protocols::{MetricMetadata, MetricType};
use cairn_remote_write::RemoteWrite;
use cairn_storage::Appendable;
use cairn_tsdb::Tsdb;
use parking_lot::Mutex;
use prost::Message;

#[derive(Default)]
struct Sink {
    /// Answers for the next requests (status, Retry-After); 204 once empty.
    script: Mutex<VecDeque<(u16, Option<&'static str>)>>,
    /// Every request: when it came, what it held, how it was answered.
    seen: Mutex<Vec<(Instant, WriteRequest, u16)>>,
    headers: Mutex<Vec<HeaderMap>>,
}

async fn receive(State(sink): State<Arc<Sink>>, headers: HeaderMap, body: axum::body::Bytes) -> impl IntoResponse {
    let raw = snap::raw::Decoder::new().decompress_vec(&body).expect("snappy");
    let request = WriteRequest::decode(raw.as_slice()).expect("WriteRequest");
    let (status, retry_after) = sink.script.lock().pop_front().unwrap_or((204, None));
    sink.seen.lock().push((Instant::now(), request, status));
    sink.headers.lock().push(headers);
    let mut out = HeaderMap::new();
    if let Some(r) = retry_after {
        out.insert("Retry-After", r.parse().unwrap());
    }
    (StatusCode::from_u16(status).unwrap(), out)
}

struct Setup {
    db: Arc<Tsdb>,
    sink: Arc<Sink>,
    remote_write: RemoteWrite,
    url: String,
    dir: tempfile::TempDir,
}

async fn setup(script: &[(u16, Option<&'static str>)], queue_extra: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut config = cairn_tsdb::Config::new(dir.path());
    config.background = false;
    let db = Arc::new(Tsdb::open(config).unwrap());
    let sink = Arc::new(Sink::default());
    sink.script.lock().extend(script.iter().copied());
    let app = axum::Router::new()
        .route("/write", axum::routing::post(receive))
        .with_state(sink.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/write", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let remote_write = RemoteWrite::new(db.clone());
    let yaml = format!(
        "remote_write:\n  - url: {url}\n    name: sink\n    headers:\n      X-Scope-OrgID: team-a\n    \
         queue_config:\n      batch_send_deadline: 50ms\n      min_backoff: 100ms\n      max_backoff: 200ms\n{queue_extra}"
    );
    let config = Config::parse(&yaml, dir.path()).unwrap();
    remote_write.apply(&config).await.unwrap();
    Setup {
        db,
        sink,
        remote_write,
        url,
        dir,
    }
}

/// Writes `n` commits of one sample each of series `m{i="0"}`, valued by commit.
fn write(db: &Tsdb, from: usize, n: usize) -> Vec<(i64, f64)> {
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 60_000;
    let labels = Labels::from_pairs([("__name__", "m"), ("i", "0")]);
    (from..from + n)
        .map(|k| {
            let s = (t0 + k as i64 * 10, k as f64);
            let mut app = db.appender();
            app.append(&labels, &[Sample::new(s.0, s.1)]).unwrap();
            app.commit().unwrap();
            s
        })
        .collect()
}

/// The samples the sink took (answered 2xx), in arrival order.
fn delivered(sink: &Sink) -> Vec<(i64, f64)> {
    sink.seen
        .lock()
        .iter()
        .filter(|(_, _, status)| *status < 300)
        .flat_map(|(_, r, _)| {
            r.timeseries
                .iter()
                .flat_map(|ts| ts.samples.iter().map(|s| (s.timestamp, s.value)))
        })
        .collect()
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recoverable_failures_are_retried_after_retry_after_or_the_backoff_and_nothing_is_lost() {
    let s = setup(&[(503, Some("1")), (500, None), (502, None)], "").await;
    let want = write(&s.db, 0, 20);
    wait_until("every sample", || delivered(&s.sink) == want).await;
    // The receiver has them before the queue has read its answer.
    wait_until("the queue's count", || s.remote_write.figures()[0].samples == 20).await;
    let seen = s.sink.seen.lock();
    let gaps: Vec<Duration> = seen.windows(2).take(3).map(|w| w[1].0 - w[0].0).collect();
    assert!(
        gaps[0] >= Duration::from_millis(950),
        "Retry-After: 1 waited {:?}",
        gaps[0]
    );
    assert!(
        gaps[1] >= Duration::from_millis(90),
        "the backoff starts at min_backoff: {:?}",
        gaps[1]
    );
    assert!(gaps[2] >= Duration::from_millis(190), "and doubles: {:?}", gaps[2]);
    assert!(
        seen.iter().take(4).all(|(_, r, _)| r == &seen[0].1),
        "a retry sends the same batch"
    );
    let headers = s.sink.headers.lock();
    assert_eq!(headers[0]["X-Scope-OrgID"], "team-a");
    assert_eq!(headers[0]["Content-Encoding"], "snappy");
    assert_eq!(headers[0]["X-Prometheus-Remote-Write-Version"], "0.1.0");
    assert!(headers[0].get("Retry-Attempt").is_none());
    assert_eq!(headers[1]["Retry-Attempt"], "1");
    let f = &s.remote_write.figures()[0];
    assert_eq!((f.remote_name.as_str(), f.url.as_str()), ("sink", s.url.as_str()));
    assert_eq!(f.samples, 20);
    assert!(f.samples_retried >= 3, "{f:?}");
    assert_eq!(f.samples_failed, 0);
    assert_eq!(f.pending, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_for_good_is_dropped_and_counted_and_the_queue_goes_on() {
    let s = setup(&[(400, None)], "").await;
    let first = write(&s.db, 0, 1);
    wait_until("the refusal", || !s.sink.seen.lock().is_empty()).await;
    let later = write(&s.db, 1, 5);
    wait_until("the later samples", || delivered(&s.sink) == later).await;
    wait_until("the queue's count", || {
        s.remote_write.figures()[0].samples == later.len() as u64
    })
    .await;
    let f = &s.remote_write.figures()[0];
    assert_eq!(f.samples_failed, first.len() as u64);
    assert_eq!(f.samples, later.len() as u64);
    assert_eq!(f.samples_retried, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_is_retried_only_when_configured() {
    let refused = setup(&[(429, Some("0"))], "").await;
    write(&refused.db, 0, 1);
    wait_until("the refusal", || refused.remote_write.figures()[0].samples_failed == 1).await;

    let retried = setup(&[(429, Some("0"))], "      retry_on_http_429: true\n").await;
    let want = write(&retried.db, 0, 1);
    wait_until("the retry", || delivered(&retried.sink) == want).await;
    assert_eq!(retried.remote_write.figures()[0].samples_retried, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_is_sent_every_interval_in_requests_of_its_own() {
    let s = setup(&[], "").await;
    // A queue started before the source is set sends none: restart it with one.
    s.remote_write.stop().await;
    s.remote_write.set_metadata_source(Arc::new(|| {
        ["a_total", "b_seconds", "c", "a_total"]
            .into_iter()
            .map(|name| MetricMetadata {
                metric_family_name: name.to_string(),
                metric_type: MetricType::Counter,
                help: format!("help of {name}"),
                unit: String::new(),
            })
            .collect()
    }));
    let yaml = format!(
        "remote_write:\n  - url: {}\n    name: sink\n    metadata_config:\n      send_interval: 100ms\n      max_samples_per_send: 2\n",
        s.url
    );
    s.remote_write
        .apply(&Config::parse(&yaml, s.dir.path()).unwrap())
        .await
        .unwrap();
    wait_until("two metadata requests", || s.sink.seen.lock().len() >= 2).await;
    let seen = s.sink.seen.lock();
    let names: Vec<&str> = seen[..2]
        .iter()
        .flat_map(|(_, r, _)| {
            assert!(r.timeseries.is_empty());
            r.metadata.iter().map(|m| m.metric_family_name.as_str())
        })
        .collect();
    assert_eq!(
        names,
        ["a_total", "b_seconds", "c"],
        "sorted, each family once, two per request"
    );
    assert!(s.remote_write.figures()[0].metadata >= 3);
}

/// Commits `commits` scrapes of `series` series through agent mode's
/// appender (forward batches), valued `commit * 100 + series`.
fn scrape_forward(appendable: &dyn Appendable, commits: std::ops::Range<usize>, series: usize) -> Vec<(i64, f64)> {
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 60_000;
    let mut written = Vec::new();
    for c in commits {
        let mut app = appendable.appender();
        for i in 0..series {
            let labels = Labels::from_pairs([("__name__", "scraped"), ("i", &i.to_string())]);
            let s = (t0 + c as i64 * 1000, (c * 100 + i) as f64);
            app.append(&labels, &[Sample::new(s.0, s.1)]).unwrap();
            written.push(s);
        }
        app.commit().unwrap();
    }
    written
}

/// The samples of each request the sink saw, with its answer.
fn requests(sink: &Sink) -> Vec<(Vec<(i64, f64)>, u16)> {
    sink.seen
        .lock()
        .iter()
        .map(|(_, r, status)| {
            let samples = r
                .timeseries
                .iter()
                .flat_map(|ts| ts.samples.iter().map(|s| (s.timestamp, s.value)))
                .collect();
            (samples, *status)
        })
        .collect()
}

/// Scrapes of five series, in batches of at most `max`: cut inside a
/// scrape's block (3) or taking blocks whole (7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forward_batches_are_cut_into_batches_and_a_restart_resends_the_one_in_flight_as_it_was() {
    for max in [3, 7] {
        resends_the_batch_in_flight_as_it_was(max).await;
    }
}

async fn resends_the_batch_in_flight_as_it_was(max: usize) {
    // The first batch is taken, then every answer fails until the queue
    // restarts: its second batch stays in flight.
    let queue = format!("      max_samples_per_send: {max}\n");
    let mut script = vec![(204, None)];
    script.extend([(500, None); 200]);
    let s = setup(&script, &queue).await;
    let appendable = s.remote_write.scrape_appendable();
    let mut written = scrape_forward(&*appendable, 0..2, 5);
    wait_until("a failed request", || s.sink.seen.lock().len() >= 2).await;
    s.remote_write.stop().await;
    let before = requests(&s.sink);
    // Cut inside a scrape's block (3: 0-2, then 3-5) or at its end (7: 0-4, then 5-9).
    let (first, second) = if max < 5 { (0..3, 3..6) } else { (0..5, 5..10) };
    assert_eq!(before[0], (written[first].to_vec(), 204), "max {max}: the first batch");
    let in_flight = before[1].0.clone();
    assert_eq!(in_flight, written[second], "max {max}: the batch in flight");
    s.sink.script.lock().clear();
    let seen_before = before.len();

    let again = RemoteWrite::new(s.db.clone());
    let yaml = format!(
        "remote_write:\n  - url: {}\n    name: sink\n    queue_config:\n      batch_send_deadline: 50ms\n{queue}",
        s.url
    );
    again.apply(&Config::parse(&yaml, s.dir.path()).unwrap()).await.unwrap();
    written.extend(scrape_forward(&*again.scrape_appendable(), 2..3, 5));
    wait_until("every sample delivered", || delivered(&s.sink).len() >= written.len()).await;
    let after = requests(&s.sink).split_off(seen_before);
    assert_eq!(
        after[0],
        (in_flight, 204),
        "max {max}: the batch in flight, sent again as it was cut"
    );
    assert_eq!(delivered(&s.sink), written, "max {max}: each sample once, in order");
    assert!(
        after.iter().all(|(samples, _)| samples.len() <= max),
        "max {max}: {after:?}"
    );
    again.stop().await;
}
