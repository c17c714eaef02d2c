//! Role `endpoints`: a target per address and port of an Endpoints object,
//! with the labels of its service and of the pod behind each address, and
//! a target for every port of those pods the endpoints do not list.

use super::labels::{
    NAMESPACE, PREFIX, add_namespace_labels, add_node_labels, add_object_meta, join_host_port, port_text, set,
};
use super::objects::{EndpointAddress, Endpoints, ObjectReference, Pod, ServicePort};
use super::pod::{
    CONTAINER_IMAGE, CONTAINER_INIT, CONTAINER_NAME, CONTAINER_PORT_NAME, CONTAINER_PORT_NUMBER,
    CONTAINER_PORT_PROTOCOL, containers, pod_labels,
};
use super::service::service_labels;
use super::store::{Attach, Stores};
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) fn source(key: &str) -> String {
    format!("endpoints/{key}")
}

/// The pod an address or endpoint refers to, if it is known.
pub(super) fn pod_of<'a>(stores: &'a Stores, reference: Option<&ObjectReference>) -> Option<&'a Pod> {
    let r = reference.filter(|r| r.kind == "Pod")?;
    stores.pods.get(&format!("{}/{}", r.namespace, r.name))
}

/// Pods seen behind a group's addresses, in the order first seen, with the
/// ports that gave them targets.
#[derive(Default)]
pub(super) struct SeenPods<'a> {
    pods: Vec<(&'a Pod, Vec<Option<i32>>)>,
}

impl<'a> SeenPods<'a> {
    pub(super) fn add(&mut self, pod: &'a Pod, port: Option<i32>) {
        let key = pod.metadata.key();
        match self.pods.iter_mut().find(|(p, _)| p.metadata.key() == key) {
            Some((_, ports)) => ports.push(port),
            None => self.pods.push((pod, vec![port])),
        }
    }

    /// A target per container port of the seen pods that no address covered.
    pub(super) fn remaining_targets(&self) -> Vec<LabelSet> {
        let mut out = Vec::new();
        for (pod, seen) in &self.pods {
            if pod.status.pod_ip.is_empty() {
                continue;
            }
            for (c, init) in containers(pod) {
                for cport in &c.ports {
                    if seen.contains(&Some(cport.container_port)) {
                        continue;
                    }
                    let port = port_text(cport.container_port);
                    let mut t = LabelSet::new();
                    set(&mut t, ADDRESS_LABEL, join_host_port(&pod.status.pod_ip, &port));
                    set(&mut t, CONTAINER_NAME, c.name.as_str());
                    set(&mut t, CONTAINER_IMAGE, c.image.as_str());
                    set(&mut t, CONTAINER_PORT_NAME, cport.name.as_str());
                    set(&mut t, CONTAINER_PORT_NUMBER, port);
                    set(&mut t, CONTAINER_PORT_PROTOCOL, cport.protocol.as_str());
                    set(&mut t, CONTAINER_INIT, init.to_string());
                    t.extend(pod_labels(pod));
                    out.push(t);
                }
            }
        }
        out
    }
}

/// Sets the container labels of the container port equal to `port`; a
/// later container with the same port wins.
pub(super) fn add_container_port_labels(t: &mut LabelSet, pod: &Pod, port: i32, protocol: Option<&str>) {
    for (c, init) in containers(pod) {
        if let Some(cport) = c.ports.iter().find(|p| p.container_port == port) {
            set(t, CONTAINER_NAME, c.name.as_str());
            set(t, CONTAINER_IMAGE, c.image.as_str());
            set(t, CONTAINER_PORT_NAME, cport.name.as_str());
            set(t, CONTAINER_PORT_NUMBER, port_text(port));
            set(t, CONTAINER_PORT_PROTOCOL, protocol.unwrap_or(&cport.protocol));
            set(t, CONTAINER_INIT, init.to_string());
        }
    }
}

pub(super) fn build(eps: &Endpoints, stores: &Stores, attach: Attach) -> TargetGroup {
    let mut labels = LabelSet::new();
    set(&mut labels, NAMESPACE, eps.metadata.namespace.as_str());
    if let Some(svc) = stores.services.get(&eps.metadata.key()) {
        labels.extend(service_labels(svc));
    }
    add_object_meta(&mut labels, &eps.metadata, "endpoints");
    if attach.namespace {
        add_namespace_labels(&mut labels, stores, &eps.metadata.namespace);
    }
    let mut targets = Vec::new();
    let mut seen = SeenPods::default();
    let mut add = |addr: &EndpointAddress, port: &ServicePort, ready: &str| {
        let mut t = LabelSet::new();
        set(&mut t, ADDRESS_LABEL, join_host_port(&addr.ip, port_text(port.port)));
        set(&mut t, format!("{PREFIX}endpoint_port_name"), port.name.as_str());
        set(
            &mut t,
            format!("{PREFIX}endpoint_port_protocol"),
            port.protocol.as_str(),
        );
        set(&mut t, format!("{PREFIX}endpoint_ready"), ready);
        if let Some(r) = &addr.target_ref {
            set(&mut t, format!("{PREFIX}endpoint_address_target_kind"), r.kind.as_str());
            set(&mut t, format!("{PREFIX}endpoint_address_target_name"), r.name.as_str());
        }
        if let Some(node) = &addr.node_name {
            set(&mut t, format!("{PREFIX}endpoint_node_name"), node.as_str());
        }
        if !addr.hostname.is_empty() {
            set(&mut t, format!("{PREFIX}endpoint_hostname"), addr.hostname.as_str());
        }
        if attach.node {
            if addr.node_name.is_some() {
                add_node_labels(&mut t, stores, addr.node_name.as_deref());
            } else if let Some(r) = addr.target_ref.as_ref().filter(|r| r.kind == "Node") {
                add_node_labels(&mut t, stores, Some(&r.name));
            }
        }
        if let Some(pod) = pod_of(stores, addr.target_ref.as_ref()) {
            t.extend(pod_labels(pod));
            add_container_port_labels(&mut t, pod, port.port, Some(&port.protocol));
            seen.add(pod, Some(port.port));
        }
        targets.push(t);
    };
    for subset in &eps.subsets {
        for port in &subset.ports {
            for addr in &subset.addresses {
                add(addr, port, "true");
            }
            for addr in &subset.not_ready_addresses {
                add(addr, port, "false");
            }
        }
    }
    targets.extend(seen.remaining_targets());
    TargetGroup {
        source: source(&eps.metadata.key()),
        targets,
        labels,
    }
}

/// The pods (`namespace/name`) behind ready addresses, whose phase changes rebuild the group.
pub(super) fn pod_keys(eps: &Endpoints) -> impl Iterator<Item = String> + '_ {
    eps.subsets
        .iter()
        .flat_map(|s| s.addresses.iter())
        .filter_map(|a| a.target_ref.as_ref().filter(|r| r.kind == "Pod"))
        .map(|r| format!("{}/{}", r.namespace, r.name))
}

/// The nodes behind ready addresses, whose changes rebuild the group.
pub(super) fn node_names(eps: &Endpoints) -> impl Iterator<Item = String> + '_ {
    eps.subsets
        .iter()
        .flat_map(|s| s.addresses.iter())
        .filter_map(|a| match &a.target_ref {
            Some(r) if r.kind == "Pod" => a.node_name.clone(),
            Some(r) if r.kind == "Node" => Some(r.name.clone()),
            _ => None,
        })
}
