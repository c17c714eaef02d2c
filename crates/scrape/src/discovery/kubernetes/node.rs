//! Role `node`: a target per node at its preferred address and the
//! kubelet's port, `instance` set to the node's name.

use std::collections::BTreeMap;

use super::labels::{PREFIX, add_object_meta, join_host_port, port_text, sanitize, set};
use super::objects::Node;
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) fn source(name: &str) -> String {
    format!("node/{name}")
}

/// The address types in the order an address is chosen.
const ADDRESS_PREFERENCE: [&str; 6] = [
    "InternalIP",
    "InternalDNS",
    "ExternalIP",
    "ExternalDNS",
    "LegacyHostIP",
    "Hostname",
];

/// The node's group, or `None` for a node without a usable address (which
/// leaves its previous group in place, as Prometheus does).
pub(super) fn build(node: &Node) -> Option<TargetGroup> {
    let mut by_type: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for a in &node.status.addresses {
        by_type.entry(a.kind.as_str()).or_default().push(a.address.as_str());
    }
    let Some(address) = ADDRESS_PREFERENCE
        .iter()
        .find_map(|t| by_type.get(t).and_then(|a| a.first()))
    else {
        tracing::warn!(node = %node.metadata.name, "No node address found: host address unknown");
        return None;
    };
    let mut labels = LabelSet::new();
    set(
        &mut labels,
        format!("{PREFIX}node_provider_id"),
        node.spec.provider_id.as_str(),
    );
    for c in &node.status.conditions {
        set(
            &mut labels,
            format!("{PREFIX}node_condition_{}", sanitize(&c.kind.to_lowercase())),
            c.status.to_lowercase(),
        );
    }
    add_object_meta(&mut labels, &node.metadata, "node");
    let mut target = LabelSet::new();
    set(
        &mut target,
        ADDRESS_LABEL,
        join_host_port(address, port_text(node.status.daemon_endpoints.kubelet_endpoint.port)),
    );
    set(&mut target, "instance", node.metadata.name.as_str());
    for (kind, addresses) in &by_type {
        set(
            &mut target,
            sanitize(&format!("{PREFIX}node_address_{kind}")),
            addresses[0],
        );
    }
    Some(TargetGroup {
        source: source(&node.metadata.name),
        targets: vec![target],
        labels,
    })
}
