//! Role `ingress`: a target per rule and path, its scheme `https` when a TLS
//! entry covers the rule's host.

use super::labels::{NAMESPACE, PREFIX, add_namespace_labels, add_object_meta, set};
use super::objects::{Ingress, IngressRule};
use super::store::{Attach, Stores};
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) fn source(key: &str) -> String {
    format!("ingress/{key}")
}

/// A rule without an `http` section stands for `/`; an empty path too.
fn paths(rule: &IngressRule) -> Vec<String> {
    match &rule.http {
        None => vec!["/".to_string()],
        Some(http) => http
            .paths
            .iter()
            .map(|p| {
                if p.path.is_empty() {
                    "/".to_string()
                } else {
                    p.path.clone()
                }
            })
            .collect(),
    }
}

/// Whether `host` is `pattern` or matches a `*.` wildcard of the same depth.
fn matches_host(pattern: &str, host: &str) -> bool {
    if pattern == host {
        return true;
    }
    let pattern: Vec<&str> = pattern.split('.').collect();
    let host: Vec<&str> = host.split('.').collect();
    pattern[0] == "*" && pattern.len() == host.len() && pattern[1..] == host[1..]
}

pub(super) fn build(ingress: &Ingress, stores: &Stores, attach: Attach) -> TargetGroup {
    let mut labels = LabelSet::new();
    set(&mut labels, NAMESPACE, ingress.metadata.namespace.as_str());
    if let Some(class) = &ingress.spec.ingress_class_name {
        set(&mut labels, format!("{PREFIX}ingress_class_name"), class.as_str());
    }
    add_object_meta(&mut labels, &ingress.metadata, "ingress");
    if attach.namespace {
        add_namespace_labels(&mut labels, stores, &ingress.metadata.namespace);
    }
    let mut targets = Vec::new();
    for rule in &ingress.spec.rules {
        let tls = ingress
            .spec
            .tls
            .iter()
            .flat_map(|t| t.hosts.iter())
            .any(|pattern| matches_host(pattern, &rule.host));
        let scheme = if tls { "https" } else { "http" };
        for path in paths(rule) {
            let mut t = LabelSet::new();
            set(&mut t, ADDRESS_LABEL, rule.host.as_str());
            set(&mut t, format!("{PREFIX}ingress_scheme"), scheme);
            set(&mut t, format!("{PREFIX}ingress_host"), rule.host.as_str());
            set(&mut t, format!("{PREFIX}ingress_path"), path);
            targets.push(t);
        }
    }
    TargetGroup {
        source: source(&ingress.metadata.key()),
        targets,
        labels,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_tls_hosts_match_one_level() {
        assert!(matches_host("a.example.com", "a.example.com"));
        assert!(matches_host("*.example.com", "a.example.com"));
        assert!(!matches_host("*.example.com", "a.b.example.com"));
        assert!(!matches_host("*.example.com", "example.com"));
        assert!(!matches_host("a.*.com", "a.b.com"));
    }
}
