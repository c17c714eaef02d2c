//! Role `pod`: a group per pod, a target per declared container port (or
//! per container without ports, at the pod's IP), init containers included.

use super::labels::{PREFIX, add_namespace_labels, add_node_labels, add_object_meta, join_host_port, port_text, set};
use super::objects::{Container, ContainerStatus, Pod};
use super::store::{Attach, Stores};
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) const CONTAINER_NAME: &str = "__meta_kubernetes_pod_container_name";
pub(super) const CONTAINER_ID: &str = "__meta_kubernetes_pod_container_id";
pub(super) const CONTAINER_IMAGE: &str = "__meta_kubernetes_pod_container_image";
pub(super) const CONTAINER_PORT_NAME: &str = "__meta_kubernetes_pod_container_port_name";
pub(super) const CONTAINER_PORT_NUMBER: &str = "__meta_kubernetes_pod_container_port_number";
pub(super) const CONTAINER_PORT_PROTOCOL: &str = "__meta_kubernetes_pod_container_port_protocol";
pub(super) const CONTAINER_INIT: &str = "__meta_kubernetes_pod_container_init";

pub(super) fn source(key: &str) -> String {
    format!("pod/{key}")
}

/// The pod's own labels, which endpoint targets carry too.
pub(super) fn pod_labels(pod: &Pod) -> LabelSet {
    let mut ls = LabelSet::new();
    set(&mut ls, format!("{PREFIX}pod_ip"), pod.status.pod_ip.as_str());
    set(&mut ls, format!("{PREFIX}pod_ready"), ready(pod));
    set(&mut ls, format!("{PREFIX}pod_phase"), pod.status.phase.as_str());
    set(&mut ls, format!("{PREFIX}pod_node_name"), pod.spec.node_name.as_str());
    set(&mut ls, format!("{PREFIX}pod_host_ip"), pod.status.host_ip.as_str());
    set(&mut ls, format!("{PREFIX}pod_uid"), pod.metadata.uid.as_str());
    add_object_meta(&mut ls, &pod.metadata, "pod");
    if let Some(owner) = pod.metadata.controller() {
        if !owner.kind.is_empty() {
            set(&mut ls, format!("{PREFIX}pod_controller_kind"), owner.kind.as_str());
        }
        if !owner.name.is_empty() {
            set(&mut ls, format!("{PREFIX}pod_controller_name"), owner.name.as_str());
        }
    }
    ls
}

/// The `Ready` condition's status in lower case; `unknown` without one.
fn ready(pod: &Pod) -> String {
    pod.status
        .conditions
        .iter()
        .find(|c| c.kind == "Ready")
        .map_or_else(|| "unknown".to_string(), |c| c.status.to_lowercase())
}

/// The regular containers, then the init containers, each with whether it is one.
pub(super) fn containers(pod: &Pod) -> impl Iterator<Item = (&Container, bool)> {
    pod.spec
        .containers
        .iter()
        .map(|c| (c, false))
        .chain(pod.spec.init_containers.iter().map(|c| (c, true)))
}

fn container_id(statuses: &[ContainerStatus], name: &str) -> String {
    statuses
        .iter()
        .find(|s| s.name == name)
        .map(|s| s.container_id.clone())
        .unwrap_or_default()
}

pub(super) fn build(pod: &Pod, stores: &Stores, attach: Attach) -> TargetGroup {
    let mut group = TargetGroup {
        source: source(&pod.metadata.key()),
        ..Default::default()
    };
    // No IP while starting or once evicted.
    if pod.status.pod_ip.is_empty() {
        return group;
    }
    // A node missing from the store was filtered out by the node selector.
    if attach.node && !stores.nodes.contains_key(&pod.spec.node_name) {
        return group;
    }
    let mut labels = pod_labels(pod);
    set(&mut labels, super::labels::NAMESPACE, pod.metadata.namespace.as_str());
    if attach.node {
        add_node_labels(&mut labels, stores, Some(&pod.spec.node_name));
    }
    if attach.namespace {
        add_namespace_labels(&mut labels, stores, &pod.metadata.namespace);
    }
    group.labels = labels;
    let ip = &pod.status.pod_ip;
    for (c, init) in containers(pod) {
        let statuses = if init {
            &pod.status.init_container_statuses
        } else {
            &pod.status.container_statuses
        };
        let mut base = LabelSet::new();
        set(&mut base, CONTAINER_NAME, c.name.as_str());
        set(&mut base, CONTAINER_ID, container_id(statuses, &c.name));
        set(&mut base, CONTAINER_IMAGE, c.image.as_str());
        set(&mut base, CONTAINER_INIT, init.to_string());
        if c.ports.is_empty() {
            // No port: the address is the bare IP, for relabelling to complete.
            let mut t = base;
            set(&mut t, ADDRESS_LABEL, ip.as_str());
            group.targets.push(t);
            continue;
        }
        for p in &c.ports {
            let port = port_text(p.container_port);
            let mut t = base.clone();
            set(&mut t, ADDRESS_LABEL, join_host_port(ip, &port));
            set(&mut t, CONTAINER_PORT_NUMBER, port);
            set(&mut t, CONTAINER_PORT_NAME, p.name.as_str());
            set(&mut t, CONTAINER_PORT_PROTOCOL, p.protocol.as_str());
            group.targets.push(t);
        }
    }
    group
}
