//! Keeping a copy of one kind of object: LIST, then WATCH from the list's
//! resource version, following the watch across the server's timeouts; on
//! `410 Gone`, an error, or bytes that do not parse, LIST again after a
//! backoff. Failed requests are counted; what was last listed stays in the
//! discoverer's stores until a LIST succeeds.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use super::client::ApiClient;
use super::objects::{EndpointSlice, Endpoints, Ingress, Namespace, Node, ObjectMeta, Pod, Service};
use crate::metrics::{DiscoveryCounters, inc};

/// The kinds of object watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Pod,
    Node,
    Service,
    Endpoints,
    EndpointSlice,
    Ingress,
    Namespace,
}

impl Kind {
    pub(super) const ALL: [Kind; 7] = [
        Kind::Pod,
        Kind::Node,
        Kind::Service,
        Kind::Endpoints,
        Kind::EndpointSlice,
        Kind::Ingress,
        Kind::Namespace,
    ];

    /// The collection's path, in `namespace` unless that is empty.
    fn path(self, namespace: &str) -> String {
        let (group, resource, namespaced) = match self {
            Kind::Pod => ("/api/v1", "pods", true),
            Kind::Node => ("/api/v1", "nodes", false),
            Kind::Service => ("/api/v1", "services", true),
            Kind::Endpoints => ("/api/v1", "endpoints", true),
            Kind::EndpointSlice => ("/apis/discovery.k8s.io/v1", "endpointslices", true),
            Kind::Ingress => ("/apis/networking.k8s.io/v1", "ingresses", true),
            Kind::Namespace => ("/api/v1", "namespaces", false),
        };
        if namespaced && !namespace.is_empty() {
            format!("{group}/namespaces/{namespace}/{resource}")
        } else {
            format!("{group}/{resource}")
        }
    }

    fn decode(self, value: serde_json::Value) -> Result<Object, serde_json::Error> {
        fn boxed<T: DeserializeOwned>(v: serde_json::Value) -> Result<Box<T>, serde_json::Error> {
            serde_json::from_value(v).map(Box::new)
        }
        Ok(match self {
            Kind::Pod => Object::Pod(boxed(value)?),
            Kind::Node => Object::Node(boxed(value)?),
            Kind::Service => Object::Service(boxed(value)?),
            Kind::Endpoints => Object::Endpoints(boxed(value)?),
            Kind::EndpointSlice => Object::EndpointSlice(boxed(value)?),
            Kind::Ingress => Object::Ingress(boxed(value)?),
            Kind::Namespace => Object::Namespace(boxed(value)?),
        })
    }
}

#[cfg(test)]
impl Kind {
    pub(super) fn decode_for_test(self, value: serde_json::Value) -> Object {
        self.decode(value).expect("a valid object")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Object {
    Pod(Box<Pod>),
    Node(Box<Node>),
    Service(Box<Service>),
    Endpoints(Box<Endpoints>),
    EndpointSlice(Box<EndpointSlice>),
    Ingress(Box<Ingress>),
    Namespace(Box<Namespace>),
}

impl Object {
    pub(super) fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Pod(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::Endpoints(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Ingress(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
        }
    }
}

/// What a watch reports to the discoverer.
#[derive(Debug)]
pub(super) enum Change {
    /// Every object, after a LIST.
    Replace(Vec<Object>),
    /// Added or modified.
    Upsert(Object),
    Delete(Object),
}

/// One collection to keep: a kind in a namespace (all when empty), filtered by selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WatchSpec {
    pub kind: Kind,
    pub namespace: String,
    pub label_selector: String,
    pub field_selector: String,
}

impl WatchSpec {
    fn query(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        if !self.label_selector.is_empty() {
            q.push(("labelSelector", self.label_selector.clone()));
        }
        if !self.field_selector.is_empty() {
            q.push(("fieldSelector", self.field_selector.clone()));
        }
        q
    }
}

const INITIAL_BACKOFF: Duration = Duration::from_millis(800);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The server ends a watch after this long (spread so watches do not end together).
const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(300);
/// A LIST that takes longer than this is abandoned.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);

pub(super) async fn run(
    client: Arc<ApiClient>,
    spec: WatchSpec,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<(usize, Change)>,
    index: usize,
) {
    let mut backoff = INITIAL_BACKOFF;
    loop {
        let (objects, mut version) = match list(&client, &spec).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(kind = ?spec.kind, namespace = %spec.namespace, err = %e, "Kubernetes LIST failed");
                inc(&counters.kubernetes_failures);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = INITIAL_BACKOFF;
        if tx.send((index, Change::Replace(objects))).await.is_err() {
            return;
        }
        loop {
            match watch(&client, &spec, &mut version, &tx, index).await {
                Ok(WatchEnd::TimedOut) => continue,
                Ok(WatchEnd::ReceiverGone) => return,
                Err(e) => {
                    tracing::warn!(kind = ?spec.kind, namespace = %spec.namespace, err = %e, "Kubernetes WATCH failed");
                    inc(&counters.kubernetes_failures);
                    if !e.gone {
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                    break;
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct ListWire {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Option<Vec<serde_json::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ListMeta {
    resource_version: Option<String>,
}

async fn list(client: &ApiClient, spec: &WatchSpec) -> Result<(Vec<Object>, String), String> {
    let path = spec.kind.path(&spec.namespace);
    let resp = client.get(&path, &spec.query(), Some(LIST_TIMEOUT)).await?;
    let body = resp.bytes().await.map_err(|e| format!("{path}: {e}"))?;
    decode_list(spec.kind, &body).map_err(|e| format!("{path}: {e}"))
}

fn decode_list(kind: Kind, body: &[u8]) -> Result<(Vec<Object>, String), String> {
    let wire: ListWire = serde_json::from_slice(body).map_err(|e| format!("decoding the list: {e}"))?;
    let objects = wire
        .items
        .unwrap_or_default()
        .into_iter()
        .map(|v| kind.decode(v))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("decoding a listed object: {e}"))?;
    Ok((objects, wire.metadata.resource_version.unwrap_or_default()))
}

enum WatchEnd {
    TimedOut,
    ReceiverGone,
}

#[derive(Debug)]
pub(super) struct WatchError {
    message: String,
    /// The resource version is too old: LIST again at once.
    gone: bool,
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn failed(message: impl Into<String>) -> WatchError {
    WatchError {
        message: message.into(),
        gone: false,
    }
}

async fn watch(
    client: &ApiClient,
    spec: &WatchSpec,
    version: &mut String,
    tx: &mpsc::Sender<(usize, Change)>,
    index: usize,
) -> Result<WatchEnd, WatchError> {
    let timeout = MIN_WATCH_TIMEOUT + Duration::from_secs(fastrand_secs(MIN_WATCH_TIMEOUT.as_secs()));
    let mut query = spec.query();
    query.push(("watch", "true".into()));
    query.push(("allowWatchBookmarks", "true".into()));
    query.push(("resourceVersion", version.clone()));
    query.push(("timeoutSeconds", timeout.as_secs().to_string()));
    let path = spec.kind.path(&spec.namespace);
    let started = tokio::time::Instant::now();
    let mut events = 0usize;
    let mut resp = client.get(&path, &query, None).await.map_err(failed)?;
    // A server that stops sending (bookmarks come every minute or so) is given up on.
    let idle = timeout + Duration::from_secs(30);
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let chunk = match tokio::time::timeout(idle, resp.chunk()).await {
            Err(_) => return Err(failed(format!("{path}: no event for {idle:?}"))),
            Ok(Err(e)) => return Err(failed(format!("{path}: {e}"))),
            Ok(Ok(None)) => {
                if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                    return Err(failed(format!("{path}: watch ended inside an event")));
                }
                // A server that ends every watch at once would otherwise be asked in a busy loop.
                if events == 0 && started.elapsed() < Duration::from_secs(1) {
                    return Err(failed(format!("{path}: very short watch")));
                }
                return Ok(WatchEnd::TimedOut);
            }
            Ok(Ok(Some(chunk))) => chunk,
        };
        buf.extend_from_slice(&chunk);
        while let Some(end) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            events += 1;
            let change = match decode_event(spec.kind, &line, version) {
                Ok(Some(change)) => change,
                Ok(None) => continue,
                Err(e) => {
                    return Err(WatchError {
                        message: format!("{path}: {}", e.message),
                        gone: e.gone,
                    });
                }
            };
            if tx.send((index, change)).await.is_err() {
                return Ok(WatchEnd::ReceiverGone);
            }
        }
    }
}

#[derive(Deserialize)]
struct EventWire {
    #[serde(rename = "type")]
    kind: String,
    object: serde_json::Value,
}

/// One line of a watch: a change, nothing (bookmarks), or an error.
pub(super) fn decode_event(kind: Kind, line: &[u8], version: &mut String) -> Result<Option<Change>, WatchError> {
    let event: EventWire = serde_json::from_slice(line).map_err(|e| failed(format!("decoding a watch event: {e}")))?;
    match event.kind.as_str() {
        "ADDED" | "MODIFIED" | "DELETED" => {
            let object = kind
                .decode(event.object)
                .map_err(|e| failed(format!("decoding a watched object: {e}")))?;
            if !object.meta().resource_version.is_empty() {
                version.clone_from(&object.meta().resource_version);
            }
            Ok(Some(if event.kind == "DELETED" {
                Change::Delete(object)
            } else {
                Change::Upsert(object)
            }))
        }
        "BOOKMARK" => {
            if let Some(v) = event
                .object
                .pointer("/metadata/resourceVersion")
                .and_then(|v| v.as_str())
            {
                *version = v.to_string();
            }
            Ok(None)
        }
        "ERROR" => {
            let code = event.object.get("code").and_then(|c| c.as_i64()).unwrap_or(0);
            let message = event
                .object
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or("")
                .to_string();
            Err(WatchError {
                message: format!("watch error {code}: {message}"),
                gone: code == 410,
            })
        }
        other => Err(failed(format!("unknown watch event type {other:?}"))),
    }
}

/// A number of seconds below `bound`, different for each watch.
fn fastrand_secs(bound: u64) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(bound);
    h.finish() % bound.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_each_kind() {
        assert_eq!(Kind::Pod.path(""), "/api/v1/pods");
        assert_eq!(Kind::Pod.path("a"), "/api/v1/namespaces/a/pods");
        assert_eq!(Kind::Node.path("a"), "/api/v1/nodes");
        assert_eq!(
            Kind::EndpointSlice.path("a"),
            "/apis/discovery.k8s.io/v1/namespaces/a/endpointslices"
        );
        assert_eq!(Kind::Ingress.path(""), "/apis/networking.k8s.io/v1/ingresses");
        assert_eq!(Kind::Namespace.path("x"), "/api/v1/namespaces");
    }

    #[test]
    fn lists_and_events_decode_and_garbage_is_an_error() {
        let (objects, version) = decode_list(
            Kind::Pod,
            br#"{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a","namespace":"n","labels":null}}]}"#,
        )
        .unwrap();
        assert_eq!(version, "7");
        assert_eq!(objects[0].meta().key(), "n/a");
        assert!(decode_list(Kind::Pod, br#"{"items":[{"metadata":{"name":5}}]}"#).is_err());
        assert!(decode_list(Kind::Pod, b"\xff\x00garbage").is_err());
        assert!(decode_list(Kind::Pod, br#"{"items":null}"#).unwrap().0.is_empty());

        let mut version = "1".to_string();
        let change = decode_event(
            Kind::Node,
            br#"{"type":"MODIFIED","object":{"metadata":{"name":"n1","resourceVersion":"9"}}}"#,
            &mut version,
        )
        .unwrap();
        assert!(matches!(change, Some(Change::Upsert(Object::Node(_)))));
        assert_eq!(version, "9");
        let bookmark = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}"#;
        assert!(decode_event(Kind::Node, bookmark, &mut version).unwrap().is_none());
        assert_eq!(version, "12");
        let gone = decode_event(
            Kind::Node,
            br#"{"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old resource version"}}"#,
            &mut version,
        )
        .unwrap_err();
        assert!(gone.gone);
        assert!(!decode_event(Kind::Node, b"{not json", &mut version).unwrap_err().gone);
        assert!(decode_event(Kind::Node, br#"{"type":"WAT","object":{}}"#, &mut version).is_err());
    }
}
