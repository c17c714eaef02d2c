//! Role `service`: a target per service port at the service's DNS name.

use super::labels::{NAMESPACE, PREFIX, add_namespace_labels, add_object_meta, join_host_port, port_text, set};
use super::objects::Service;
use super::store::{Attach, Stores};
use crate::discovery::{ADDRESS_LABEL, LabelSet, TargetGroup};

pub(super) fn source(key: &str) -> String {
    format!("svc/{key}")
}

/// The namespace and the service's name, labels and annotations, which
/// endpoint groups carry too.
pub(super) fn service_labels(svc: &Service) -> LabelSet {
    let mut ls = LabelSet::new();
    set(&mut ls, NAMESPACE, svc.metadata.namespace.as_str());
    add_object_meta(&mut ls, &svc.metadata, "service");
    ls
}

pub(super) fn build(svc: &Service, stores: &Stores, attach: Attach) -> TargetGroup {
    let mut labels = service_labels(svc);
    if attach.namespace {
        add_namespace_labels(&mut labels, stores, &svc.metadata.namespace);
    }
    let host = format!("{}.{}.svc", svc.metadata.name, svc.metadata.namespace);
    let targets = svc
        .spec
        .ports
        .iter()
        .map(|p| {
            let port = port_text(p.port);
            let mut t = LabelSet::new();
            set(&mut t, ADDRESS_LABEL, join_host_port(&host, &port));
            set(&mut t, format!("{PREFIX}service_port_name"), p.name.as_str());
            set(&mut t, format!("{PREFIX}service_port_number"), port);
            set(&mut t, format!("{PREFIX}service_port_protocol"), p.protocol.as_str());
            set(&mut t, format!("{PREFIX}service_type"), svc.spec.kind.as_str());
            if svc.spec.kind == "ExternalName" {
                set(
                    &mut t,
                    format!("{PREFIX}service_external_name"),
                    svc.spec.external_name.as_str(),
                );
            } else {
                set(
                    &mut t,
                    format!("{PREFIX}service_cluster_ip"),
                    svc.spec.cluster_ip.as_str(),
                );
            }
            if svc.spec.kind == "LoadBalancer" {
                set(
                    &mut t,
                    format!("{PREFIX}service_loadbalancer_ip"),
                    svc.spec.load_balancer_ip.as_str(),
                );
            }
            t
        })
        .collect();
    TargetGroup {
        source: source(&svc.metadata.key()),
        targets,
        labels,
    }
}
