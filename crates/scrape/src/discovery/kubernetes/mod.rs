//! Kubernetes SD (`kubernetes_sd_configs`), as Prometheus' `discovery/kubernetes`
//! does it: the objects of the role (and those whose labels its targets
//! carry) are listed and then watched, per namespace asked for; each change
//! rebuilds the groups of the objects it touches, with Prometheus' sources
//! and `__meta_kubernetes_*` labels. Nothing is published until every
//! watch has listed once. Watch events and failed requests are counted.

mod client;
mod discoverer;
mod endpoints;
mod endpointslice;
mod ingress;
mod labels;
mod node;
mod objects;
mod pod;
mod service;
mod store;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc;

pub use client::Connection;
pub use store::Attach;

use super::TargetGroup;
use crate::metrics::{DiscoveryCounters, inc};

/// Where the pod's service account token, CA and namespace are mounted.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The kind of object a configuration turns into targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    EndpointSlice,
    Endpoints,
    Node,
    Pod,
    Service,
    Ingress,
}

impl Role {
    /// Every role, in the order their event counters are exposed.
    pub const ALL: [Role; 6] = [
        Role::EndpointSlice,
        Role::Endpoints,
        Role::Node,
        Role::Pod,
        Role::Service,
        Role::Ingress,
    ];

    pub fn parse(name: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::EndpointSlice => "endpointslice",
            Role::Endpoints => "endpoints",
            Role::Node => "node",
            Role::Pod => "pod",
            Role::Service => "service",
            Role::Ingress => "ingress",
        }
    }
}

/// Label and field selectors of one role's objects, passed to the API server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    pub label: String,
    pub field: String,
}

/// One `kubernetes_sd_configs` entry, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesSd {
    pub role: Role,
    pub connection: Connection,
    /// Namespaces listed in `namespaces.names`.
    pub namespaces: Vec<String>,
    pub own_namespace: bool,
    pub selectors: Vec<(Role, Selector)>,
    pub attach: Attach,
}

impl KubernetesSd {
    fn selector(&self, role: Role) -> Selector {
        self.selectors
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }

    /// The namespaces watched: `""` for all of them.
    fn watched_namespaces(&self, own: Option<&str>) -> Vec<String> {
        let mut names = self.namespaces.clone();
        if names.is_empty() && !self.own_namespace {
            return vec![String::new()];
        }
        if let Some(own) = own.filter(|_| self.own_namespace) {
            names.push(own.to_string());
        }
        let mut seen = std::collections::HashSet::new();
        names.retain(|n| seen.insert(n.clone()));
        names
    }
}

pub(super) async fn run(
    sd: KubernetesSd,
    service_account: PathBuf,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) {
    if let Err(e) = start(sd, &service_account, counters.clone(), tx).await {
        tracing::error!(err = %e, "Cannot create Kubernetes discovery");
        inc(&counters.kubernetes_failures);
    }
}

/// The groups a `role` discovers from `events`, an API server's watch
/// events one a line, each after a byte that picks the kind of object
/// (pod, node, service, endpoints, endpointslice, ingress, namespace, in
/// that order, modulo seven), with no server: the path from untrusted bytes
/// to targets, for fuzzing. Lines that do not decode are skipped.
pub fn discover_from_events(role: Role, attach: Attach, events: &[u8]) -> Vec<TargetGroup> {
    discoverer::discover_offline(role, attach, events)
}

async fn start(
    sd: KubernetesSd,
    service_account: &Path,
    counters: Arc<DiscoveryCounters>,
    tx: mpsc::Sender<Vec<TargetGroup>>,
) -> Result<(), String> {
    let target = sd.connection.resolve(service_account)?;
    let own = if sd.own_namespace && sd.connection == Connection::InCluster {
        Some(client::own_namespace(service_account)?)
    } else {
        None
    };
    let client = Arc::new(client::ApiClient::new(target)?);
    let namespaces = sd.watched_namespaces(own.as_deref());
    discoverer::run(sd, namespaces, client, counters, tx).await;
    Ok(())
}

#[cfg(test)]
mod tests;
