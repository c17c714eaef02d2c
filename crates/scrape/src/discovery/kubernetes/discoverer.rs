//! One configuration's discoverer: the watches it needs, the stores they
//! fill, and which groups each change rebuilds (the objects Prometheus'
//! event handlers would queue).

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::client::ApiClient;
use super::objects::ObjectMeta;
use super::store::{Attach, Stores};
use super::watch::{self, Change, Kind, Object, WatchSpec};
use super::{KubernetesSd, Role, endpoints, endpointslice, ingress, node, pod, service};
use crate::discovery::TargetGroup;
use crate::metrics::{DiscoveryCounters, KubernetesEvent};

/// The watches of a configuration, in a fixed order.
pub(super) fn specs(sd: &KubernetesSd, namespaces: &[String]) -> Vec<WatchSpec> {
    let spec = |kind: Kind, namespace: &str, role: Option<Role>| {
        let s = role.map(|r| sd.selector(r)).unwrap_or_default();
        WatchSpec {
            kind,
            namespace: namespace.to_string(),
            label_selector: s.label,
            field_selector: s.field,
        }
    };
    let per_namespace: &[(Kind, Role)] = match sd.role {
        Role::Pod => &[(Kind::Pod, Role::Pod)],
        Role::Service => &[(Kind::Service, Role::Service)],
        Role::Ingress => &[(Kind::Ingress, Role::Ingress)],
        Role::Node => &[],
        Role::Endpoints => &[
            (Kind::Endpoints, Role::Endpoints),
            (Kind::Service, Role::Service),
            (Kind::Pod, Role::Pod),
        ],
        Role::EndpointSlice => &[
            (Kind::EndpointSlice, Role::EndpointSlice),
            (Kind::Service, Role::Service),
            (Kind::Pod, Role::Pod),
        ],
    };
    let mut out = Vec::new();
    for ns in namespaces {
        for (kind, role) in per_namespace {
            out.push(spec(*kind, ns, Some(*role)));
        }
    }
    let node_metadata = sd.attach.node && matches!(sd.role, Role::Pod | Role::Endpoints | Role::EndpointSlice);
    if sd.role == Role::Node || node_metadata {
        out.push(spec(Kind::Node, "", Some(Role::Node)));
    }
    if sd.attach.namespace && sd.role != Role::Node {
        out.push(spec(Kind::Namespace, "", None));
    }
    out
}

pub(super) async fn run(
    sd: KubernetesSd,
    namespaces: Vec<String>,
    client: Arc<ApiClient>,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) {
    let specs = specs(&sd, &namespaces);
    let (changes_tx, mut changes_rx) = mpsc::channel(64);
    let mut watches = tokio::task::JoinSet::new();
    for (i, spec) in specs.iter().enumerate() {
        watches.spawn(watch::run(
            client.clone(),
            spec.clone(),
            counters.clone(),
            changes_tx.clone(),
            i,
        ));
    }
    drop(changes_tx);
    let mut d = Discoverer {
        sd,
        stores: Stores::default(),
        counters,
        dirty: BTreeSet::new(),
    };
    let mut listed = vec![false; specs.len()];
    let mut synced = false;
    while let Some((i, change)) = changes_rx.recv().await {
        let mut next = Some((i, change));
        while let Some((i, change)) = next.take() {
            if matches!(change, Change::Replace(_)) {
                listed[i] = true;
            }
            d.apply(&specs[i], change);
            next = changes_rx.try_recv().ok();
        }
        if !synced {
            if !listed.iter().all(|l| *l) {
                continue;
            }
            synced = true;
            // Everything listed so far is new to the scrape manager.
            d.dirty = d.primary_keys();
        }
        let groups = d.rebuild();
        if !groups.is_empty() && tx.send(groups).await.is_err() {
            return;
        }
    }
}

/// The groups a discoverer of `role` publishes once it has seen `events`
/// (watch events as an API server sends them, one a line, each after a
/// byte that picks the kind of object watched), with no server: for
/// fuzzing the path from an API server's bytes to targets.
pub(super) fn discover_offline(role: Role, attach: Attach, events: &[u8]) -> Vec<TargetGroup> {
    let sd = KubernetesSd {
        role,
        connection: super::Connection::InCluster,
        namespaces: Vec::new(),
        own_namespace: false,
        selectors: Vec::new(),
        attach,
    };
    let mut d = Discoverer {
        sd,
        stores: Stores::default(),
        counters: Arc::default(),
        dirty: BTreeSet::new(),
    };
    for line in events.split(|&b| b == b'\n') {
        let Some((&kind, event)) = line.split_first() else {
            continue;
        };
        let kind = Kind::ALL[usize::from(kind) % Kind::ALL.len()];
        let spec = WatchSpec {
            kind,
            namespace: String::new(),
            label_selector: String::new(),
            field_selector: String::new(),
        };
        if let Ok(Some(change)) = watch::decode_event(kind, event, &mut String::new()) {
            d.apply(&spec, change);
        }
    }
    d.dirty = d.primary_keys();
    d.rebuild()
}

struct Discoverer {
    sd: KubernetesSd,
    stores: Stores,
    counters: Arc<DiscoveryCounters>,
    /// Keys of the role's objects whose groups are out of date.
    dirty: BTreeSet<String>,
}

/// What happened to an object, as an informer tells its handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Add,
    Update,
    Delete,
}

impl Discoverer {
    fn apply(&mut self, spec: &WatchSpec, change: Change) {
        match change {
            Change::Upsert(o) => self.upsert(o),
            Change::Delete(o) => self.delete(spec.kind, &o.meta().key()),
            Change::Replace(objects) => {
                // Objects of this watch's namespace that the new list lacks are gone.
                let keys: BTreeSet<String> = objects.iter().map(|o| o.meta().key()).collect();
                let in_scope = |m: &ObjectMeta| spec.namespace.is_empty() || m.namespace == spec.namespace;
                for key in self.keys_of(spec.kind, &in_scope) {
                    if !keys.contains(&key) {
                        self.delete(spec.kind, &key);
                    }
                }
                for o in objects {
                    self.upsert(o);
                }
            }
        }
    }

    fn keys_of(&self, kind: Kind, in_scope: &dyn Fn(&ObjectMeta) -> bool) -> Vec<String> {
        fn keys<T>(
            map: &std::collections::HashMap<String, T>,
            meta: impl Fn(&T) -> &ObjectMeta,
            f: &dyn Fn(&ObjectMeta) -> bool,
        ) -> Vec<String> {
            map.iter().filter(|(_, v)| f(meta(v))).map(|(k, _)| k.clone()).collect()
        }
        let s = &self.stores;
        match kind {
            Kind::Pod => keys(&s.pods, |o| &o.metadata, in_scope),
            Kind::Node => keys(&s.nodes, |o| &o.metadata, in_scope),
            Kind::Service => keys(&s.services, |o| &o.metadata, in_scope),
            Kind::Endpoints => keys(&s.endpoints, |o| &o.metadata, in_scope),
            Kind::EndpointSlice => keys(&s.slices, |o| &o.metadata, in_scope),
            Kind::Ingress => keys(&s.ingresses, |o| &o.metadata, in_scope),
            Kind::Namespace => keys(&s.namespaces, |o| &o.metadata, in_scope),
        }
    }

    fn upsert(&mut self, object: Object) {
        let key = object.meta().key();
        let s = &mut self.stores;
        let (kind, old) = match object {
            Object::Pod(o) => (Kind::Pod, s.pods.insert(key.clone(), *o).map(|p| Some(p.status.phase))),
            Object::Node(o) => (Kind::Node, s.nodes.insert(key.clone(), *o).map(|_| None)),
            Object::Service(o) => (Kind::Service, s.services.insert(key.clone(), *o).map(|_| None)),
            Object::Endpoints(o) => (Kind::Endpoints, s.endpoints.insert(key.clone(), *o).map(|_| None)),
            Object::EndpointSlice(o) => (Kind::EndpointSlice, s.slices.insert(key.clone(), *o).map(|_| None)),
            Object::Ingress(o) => (Kind::Ingress, s.ingresses.insert(key.clone(), *o).map(|_| None)),
            Object::Namespace(o) => (Kind::Namespace, s.namespaces.insert(key.clone(), *o).map(|_| None)),
        };
        let event = if old.is_some() { Event::Update } else { Event::Add };
        // Endpoints follow a pod's phase, which may change without the endpoints changing.
        let phase_changed = match (kind, old) {
            (Kind::Pod, Some(Some(phase))) => self.stores.pods.get(&key).is_some_and(|p| p.status.phase != phase),
            _ => false,
        };
        self.handle(kind, event, &key, phase_changed);
    }

    fn delete(&mut self, kind: Kind, key: &str) {
        let s = &mut self.stores;
        match kind {
            Kind::Pod => drop(s.pods.remove(key)),
            Kind::Node => drop(s.nodes.remove(key)),
            Kind::Service => drop(s.services.remove(key)),
            Kind::Endpoints => drop(s.endpoints.remove(key)),
            Kind::EndpointSlice => drop(s.slices.remove(key)),
            Kind::Ingress => drop(s.ingresses.remove(key)),
            Kind::Namespace => drop(s.namespaces.remove(key)),
        }
        self.handle(kind, Event::Delete, key, false);
    }

    fn count(&self, role: Role, event: Event) {
        let event = match event {
            Event::Add => KubernetesEvent::Add,
            Event::Update => KubernetesEvent::Update,
            Event::Delete => KubernetesEvent::Delete,
        };
        self.counters.kubernetes_event(role.as_str(), event);
    }

    /// Counts the event as Prometheus does and marks the groups it touches.
    fn handle(&mut self, kind: Kind, event: Event, key: &str, phase_changed: bool) {
        let role = self.sd.role;
        let namespace = key.split_once('/').map_or("", |(ns, _)| ns);
        match (role, kind) {
            (Role::Pod, Kind::Pod)
            | (Role::Service, Kind::Service)
            | (Role::Ingress, Kind::Ingress)
            | (Role::Node, Kind::Node)
            | (Role::Endpoints, Kind::Endpoints)
            | (Role::EndpointSlice, Kind::EndpointSlice) => {
                self.count(role, event);
                self.dirty.insert(key.to_string());
            }
            // Namespace creation and deletion reach the objects' own handlers.
            (_, Kind::Namespace) if event == Event::Update => {
                let keys = self.primary_keys_where(|m| m.namespace == key);
                self.dirty.extend(keys);
            }
            (Role::Pod, Kind::Node) => {
                let keys: Vec<String> = self
                    .stores
                    .pods
                    .iter()
                    .filter(|(_, p)| p.spec.node_name == key)
                    .map(|(k, _)| k.clone())
                    .collect();
                self.dirty.extend(keys);
            }
            (Role::Endpoints, Kind::Service) => {
                self.count(Role::Service, event);
                if self.stores.endpoints.contains_key(key) {
                    self.dirty.insert(key.to_string());
                }
            }
            (Role::Endpoints, Kind::Pod) if event == Event::Update => {
                self.count(Role::Pod, event);
                if phase_changed {
                    let keys: Vec<String> = self
                        .stores
                        .endpoints
                        .iter()
                        .filter(|(_, e)| endpoints::pod_keys(e).any(|p| p == key))
                        .map(|(k, _)| k.clone())
                        .collect();
                    self.dirty.extend(keys);
                }
            }
            (Role::Endpoints, Kind::Node) => {
                let keys: Vec<String> = self
                    .stores
                    .endpoints
                    .iter()
                    .filter(|(_, e)| endpoints::node_names(e).any(|n| n == key))
                    .map(|(k, _)| k.clone())
                    .collect();
                self.dirty.extend(keys);
            }
            (Role::EndpointSlice, Kind::Service) => {
                self.count(Role::Service, event);
                let name = key.split_once('/').map_or(key, |(_, n)| n);
                let keys: Vec<String> = self
                    .stores
                    .slices
                    .iter()
                    .filter(|(_, s)| {
                        s.metadata.namespace == namespace
                            && s.metadata
                                .labels
                                .get(endpointslice::SERVICE_NAME_LABEL)
                                .map(String::as_str)
                                == Some(name)
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                self.dirty.extend(keys);
            }
            (Role::EndpointSlice, Kind::Node) => {
                let keys: Vec<String> = self
                    .stores
                    .slices
                    .iter()
                    .filter(|(_, s)| endpointslice::node_names(s).any(|n| n == key))
                    .map(|(k, _)| k.clone())
                    .collect();
                self.dirty.extend(keys);
            }
            // Pods of an endpoint slice are looked up, not followed.
            _ => {}
        }
    }

    fn primary_keys(&self) -> BTreeSet<String> {
        self.primary_keys_where(|_| true).into_iter().collect()
    }

    fn primary_keys_where(&self, f: impl Fn(&ObjectMeta) -> bool) -> Vec<String> {
        let kind = match self.sd.role {
            Role::Pod => Kind::Pod,
            Role::Service => Kind::Service,
            Role::Ingress => Kind::Ingress,
            Role::Node => Kind::Node,
            Role::Endpoints => Kind::Endpoints,
            Role::EndpointSlice => Kind::EndpointSlice,
        };
        self.keys_of(kind, &f)
    }

    /// The groups of the dirty objects; a group without targets for one that is gone.
    fn rebuild(&mut self) -> Vec<TargetGroup> {
        let dirty = std::mem::take(&mut self.dirty);
        let s = &self.stores;
        let attach = self.sd.attach;
        let mut out = Vec::new();
        for key in dirty {
            let group = match self.sd.role {
                Role::Pod => Some(
                    s.pods
                        .get(&key)
                        .map_or_else(|| gone(pod::source(&key)), |o| pod::build(o, s, attach)),
                ),
                Role::Service => Some(
                    s.services
                        .get(&key)
                        .map_or_else(|| gone(service::source(&key)), |o| service::build(o, s, attach)),
                ),
                Role::Ingress => Some(
                    s.ingresses
                        .get(&key)
                        .map_or_else(|| gone(ingress::source(&key)), |o| ingress::build(o, s, attach)),
                ),
                Role::Node => match s.nodes.get(&key) {
                    Some(o) => node::build(o),
                    None => Some(gone(node::source(&key))),
                },
                Role::Endpoints => Some(
                    s.endpoints
                        .get(&key)
                        .map_or_else(|| gone(endpoints::source(&key)), |o| endpoints::build(o, s, attach)),
                ),
                Role::EndpointSlice => Some(s.slices.get(&key).map_or_else(
                    || gone(endpointslice::source(&key)),
                    |o| endpointslice::build(o, s, attach),
                )),
            };
            out.extend(group);
        }
        out
    }
}

fn gone(source: String) -> TargetGroup {
    TargetGroup {
        source,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::client::Connection;
    use super::super::{Attach, Selector};
    use super::*;

    fn sd(role: Role, attach: Attach) -> KubernetesSd {
        KubernetesSd {
            role,
            connection: Connection::InCluster,
            namespaces: vec![],
            own_namespace: false,
            selectors: vec![
                (
                    Role::Pod,
                    Selector {
                        label: "app=web".into(),
                        field: String::new(),
                    },
                ),
                (
                    Role::Node,
                    Selector {
                        label: String::new(),
                        field: "metadata.name=n1".into(),
                    },
                ),
            ],
            attach,
        }
    }

    #[test]
    fn watches_per_role_namespace_and_selector() {
        let attach = Attach {
            node: true,
            namespace: true,
        };
        let got: Vec<(Kind, String, String, String)> = specs(&sd(Role::Endpoints, attach), &["a".into(), "b".into()])
            .into_iter()
            .map(|s| (s.kind, s.namespace, s.label_selector, s.field_selector))
            .collect();
        let w = |k, ns: &str, l: &str, f: &str| (k, ns.to_string(), l.to_string(), f.to_string());
        assert_eq!(
            got,
            vec![
                w(Kind::Endpoints, "a", "", ""),
                w(Kind::Service, "a", "", ""),
                w(Kind::Pod, "a", "app=web", ""),
                w(Kind::Endpoints, "b", "", ""),
                w(Kind::Service, "b", "", ""),
                w(Kind::Pod, "b", "app=web", ""),
                w(Kind::Node, "", "", "metadata.name=n1"),
                w(Kind::Namespace, "", "", ""),
            ]
        );
        let node_role: Vec<Kind> = specs(&sd(Role::Node, attach), &[String::new()])
            .into_iter()
            .map(|s| s.kind)
            .collect();
        assert_eq!(node_role, vec![Kind::Node]);
        let service_role: Vec<Kind> = specs(&sd(Role::Service, Attach::default()), &[String::new()])
            .into_iter()
            .map(|s| s.kind)
            .collect();
        assert_eq!(service_role, vec![Kind::Service]);
    }

    fn object(kind: Kind, json: &str) -> Object {
        kind.decode_for_test(serde_json::from_str(json).unwrap())
    }

    fn pod(name: &str, node: &str, phase: &str) -> Object {
        object(
            Kind::Pod,
            &format!(
                r#"{{"metadata": {{"name": "{name}", "namespace": "a"}}, "spec": {{"nodeName": "{node}", "containers": [{{"name": "c", "ports": [{{"containerPort": 80}}]}}]}}, "status": {{"podIP": "10.0.0.1", "phase": "{phase}"}}}}"#
            ),
        )
    }

    #[test]
    fn changes_rebuild_the_groups_prometheus_would_rebuild() {
        let counters = Arc::new(DiscoveryCounters::default());
        let mut d = Discoverer {
            sd: sd(
                Role::Endpoints,
                Attach {
                    node: true,
                    namespace: false,
                },
            ),
            stores: Stores::default(),
            counters: counters.clone(),
            dirty: BTreeSet::new(),
        };
        let spec = |kind| WatchSpec {
            kind,
            namespace: "a".into(),
            label_selector: String::new(),
            field_selector: String::new(),
        };
        let eps = object(
            Kind::Endpoints,
            r#"{"metadata": {"name": "web", "namespace": "a"}, "subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "a", "name": "p1"}}], "ports": [{"port": 80}]}]}"#,
        );
        d.apply(&spec(Kind::Endpoints), Change::Replace(vec![eps]));
        d.apply(&spec(Kind::Pod), Change::Replace(vec![pod("p1", "n1", "Pending")]));
        d.apply(&spec(Kind::Service), Change::Replace(vec![]));
        assert_eq!(d.rebuild().len(), 1);
        let events = |role: &str, event: &str| {
            counters
                .kubernetes_events()
                .into_iter()
                .find(|(r, e, _)| *r == role && *e == event)
                .unwrap()
                .2
        };
        assert_eq!(events("endpoints", "add"), 1);

        // The same phase: counted, nothing rebuilt; a new phase rebuilds the endpoints.
        d.apply(&spec(Kind::Pod), Change::Upsert(pod("p1", "n1", "Pending")));
        assert!(d.rebuild().is_empty());
        d.apply(&spec(Kind::Pod), Change::Upsert(pod("p1", "n1", "Running")));
        let groups = d.rebuild();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].targets[0]["__meta_kubernetes_pod_phase"], "Running");
        assert_eq!(events("pod", "update"), 2);

        // The node behind an address, and the service of the same name.
        d.apply(
            &spec(Kind::Node),
            Change::Upsert(object(
                Kind::Node,
                r#"{"metadata": {"name": "n1", "labels": {"z": "1"}}}"#,
            )),
        );
        let groups = d.rebuild();
        assert_eq!(groups[0].targets[0]["__meta_kubernetes_node_label_z"], "1");
        d.apply(
            &spec(Kind::Service),
            Change::Upsert(object(
                Kind::Service,
                r#"{"metadata": {"name": "web", "namespace": "a"}}"#,
            )),
        );
        assert_eq!(d.rebuild()[0].labels["__meta_kubernetes_service_name"], "web");
        assert_eq!(events("service", "add"), 1);

        // A re-list without the endpoints deletes their group.
        d.apply(&spec(Kind::Endpoints), Change::Replace(vec![]));
        let groups = d.rebuild();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].source, "endpoints/a/web");
        assert!(groups[0].targets.is_empty());
        assert_eq!(events("endpoints", "delete"), 1);
    }
}
