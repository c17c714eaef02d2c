//! Role `endpointslice`: a target per endpoint address and port of an
//! EndpointSlice, with the labels of its service (named by the
//! `kubernetes.io/service-name` label) and of the pod behind each endpoint.

use super::endpoints::{SeenPods, add_container_port_labels, pod_of};
use super::labels::{
    NAMESPACE, PREFIX, add_namespace_labels, add_node_labels, add_object_meta, join_host_port, port_text, sanitize, set,
};
use super::objects::{EndpointSlice, Service, SliceEndpoint, SlicePort};
use super::pod::pod_labels;
use super::service::service_labels;
use super::store::{Attach, Stores};
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

pub(super) fn source(key: &str) -> String {
    format!("endpointslice/{key}")
}

/// A dual-stack service's slices of its second IP family give no targets
/// (the first family's slices list the same endpoints).
fn non_primary_family(svc: Option<&Service>, slice: &EndpointSlice) -> bool {
    let Some(svc) = svc else { return false };
    match svc.spec.ip_family_policy.as_deref() {
        Some("PreferDualStack" | "RequireDualStack") => {}
        _ => return false,
    }
    svc.spec.ip_families.first().is_some_and(|f| *f != slice.address_type)
}

pub(super) fn build(slice: &EndpointSlice, stores: &Stores, attach: Attach) -> TargetGroup {
    let mut labels = LabelSet::new();
    set(&mut labels, NAMESPACE, slice.metadata.namespace.as_str());
    set(
        &mut labels,
        format!("{PREFIX}endpointslice_address_type"),
        slice.address_type.as_str(),
    );
    add_object_meta(&mut labels, &slice.metadata, "endpointslice");
    let svc = slice
        .metadata
        .labels
        .get(SERVICE_NAME_LABEL)
        .and_then(|name| stores.services.get(&format!("{}/{name}", slice.metadata.namespace)));
    if let Some(svc) = svc {
        labels.extend(service_labels(svc));
    }
    if attach.namespace {
        add_namespace_labels(&mut labels, stores, &slice.metadata.namespace);
    }
    let mut group = TargetGroup {
        source: source(&slice.metadata.key()),
        targets: Vec::new(),
        labels,
    };
    if non_primary_family(svc, slice) {
        return group;
    }
    let mut seen = SeenPods::default();
    let mut add = |addr: &str, ep: &SliceEndpoint, port: &SlicePort| {
        let mut t = LabelSet::new();
        let address = match port.port {
            Some(p) => join_host_port(addr, port_text(p)),
            None => addr.to_string(),
        };
        set(&mut t, ADDRESS_LABEL, address);
        let p = format!("{PREFIX}endpointslice_");
        if let Some(name) = &port.name {
            set(&mut t, format!("{p}port_name"), name.as_str());
        }
        if let Some(protocol) = &port.protocol {
            set(&mut t, format!("{p}port_protocol"), protocol.as_str());
        }
        if let Some(number) = port.port {
            set(&mut t, format!("{p}port"), port_text(number));
        }
        if let Some(app) = &port.app_protocol {
            set(&mut t, format!("{p}port_app_protocol"), app.as_str());
        }
        for (name, value) in [
            ("ready", ep.conditions.ready),
            ("serving", ep.conditions.serving),
            ("terminating", ep.conditions.terminating),
        ] {
            if let Some(v) = value {
                set(&mut t, format!("{p}endpoint_conditions_{name}"), v.to_string());
            }
        }
        if let Some(hostname) = &ep.hostname {
            set(&mut t, format!("{p}endpoint_hostname"), hostname.as_str());
        }
        if let Some(r) = &ep.target_ref {
            set(&mut t, format!("{p}address_target_kind"), r.kind.as_str());
            set(&mut t, format!("{p}address_target_name"), r.name.as_str());
        }
        if let Some(node) = &ep.node_name {
            set(&mut t, format!("{p}endpoint_node_name"), node.as_str());
        }
        if let Some(zone) = &ep.zone {
            set(&mut t, format!("{p}endpoint_zone"), zone.as_str());
        }
        for (k, v) in &ep.deprecated_topology {
            let n = sanitize(k);
            set(&mut t, format!("{p}endpoint_topology_{n}"), v.as_str());
            set(&mut t, format!("{p}endpoint_topology_present_{n}"), "true");
        }
        if attach.node {
            match ep.target_ref.as_ref().filter(|r| r.kind == "Node") {
                Some(r) => add_node_labels(&mut t, stores, Some(&r.name)),
                None => add_node_labels(&mut t, stores, ep.node_name.as_deref()),
            }
        }
        if let Some(pod) = pod_of(stores, ep.target_ref.as_ref()) {
            t.extend(pod_labels(pod));
            if let Some(number) = port.port {
                add_container_port_labels(&mut t, pod, number, None);
            }
            seen.add(pod, port.port);
        }
        group.targets.push(t);
    };
    for ep in &slice.endpoints {
        for port in &slice.ports {
            for addr in &ep.addresses {
                add(addr, ep, port);
            }
        }
    }
    group.targets.extend(seen.remaining_targets());
    group
}

/// The nodes behind the slice's endpoints, whose changes rebuild the group.
pub(super) fn node_names(slice: &EndpointSlice) -> impl Iterator<Item = String> + '_ {
    slice.endpoints.iter().filter_map(|e| match &e.target_ref {
        Some(r) if r.kind == "Pod" => e.node_name.clone(),
        Some(r) if r.kind == "Node" => Some(r.name.clone()),
        _ => None,
    })
}
