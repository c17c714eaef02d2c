//! Label helpers every role shares.

use super::objects::{Namespace, Node, ObjectMeta};
use super::store::Stores;
use crate::discovery::LabelSet;

pub(super) const PREFIX: &str = "__meta_kubernetes_";
pub(super) const NAMESPACE: &str = "__meta_kubernetes_namespace";

/// A Kubernetes label or annotation name as a label name suffix: every
/// character outside `[a-zA-Z0-9_]` becomes `_`.
pub(super) fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect()
}

pub(super) fn set(ls: &mut LabelSet, name: impl Into<String>, value: impl Into<String>) {
    ls.insert(name.into(), value.into());
}

/// `<resource>_label_*`, `_labelpresent_*`, `_annotation_*` and `_annotationpresent_*`.
pub(super) fn add_labels_and_annotations(ls: &mut LabelSet, meta: &ObjectMeta, resource: &str) {
    for (k, v) in &meta.labels {
        let n = sanitize(k);
        set(ls, format!("{PREFIX}{resource}_label_{n}"), v.as_str());
        set(ls, format!("{PREFIX}{resource}_labelpresent_{n}"), "true");
    }
    for (k, v) in &meta.annotations {
        let n = sanitize(k);
        set(ls, format!("{PREFIX}{resource}_annotation_{n}"), v.as_str());
        set(ls, format!("{PREFIX}{resource}_annotationpresent_{n}"), "true");
    }
}

/// `<role>_name` and the object's labels and annotations.
pub(super) fn add_object_meta(ls: &mut LabelSet, meta: &ObjectMeta, role: &str) {
    set(ls, format!("{PREFIX}{role}_name"), meta.name.as_str());
    add_labels_and_annotations(ls, meta, role);
}

/// The node's name, labels and annotations, if the node is known.
pub(super) fn add_node_labels(ls: &mut LabelSet, stores: &Stores, node: Option<&str>) {
    if let Some(Node { metadata, .. }) = node.and_then(|n| stores.nodes.get(n)) {
        add_object_meta(ls, metadata, "node");
    }
}

/// The namespace's labels and annotations, if the namespace is known.
pub(super) fn add_namespace_labels(ls: &mut LabelSet, stores: &Stores, namespace: &str) {
    if let Some(Namespace { metadata }) = stores.namespaces.get(namespace) {
        add_labels_and_annotations(ls, metadata, "namespace");
    }
}

/// `host:port`, bracketing a host with a colon (Go's `net.JoinHostPort`).
pub(super) fn join_host_port(host: &str, port: impl std::fmt::Display) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A port as Go prints an `int32` converted to `uint64`.
pub(super) fn port_text(port: i32) -> String {
    (port as i64 as u64).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized_per_character() {
        assert_eq!(sanitize("app.kubernetes.io/name"), "app_kubernetes_io_name");
        assert_eq!(sanitize("Ünï-x_9"), "_n__x_9");
        assert_eq!(join_host_port("::1", 80), "[::1]:80");
        assert_eq!(join_host_port("10.0.0.1", "80"), "10.0.0.1:80");
        assert_eq!(port_text(-1), u64::MAX.to_string());
    }
}
