//! The Kubernetes objects discovery reads, with only the fields it uses.
//! Missing fields and `null`s read as Go's zero values, as client-go's
//! decoding leaves them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

fn nullable<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ObjectMeta {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    #[serde(deserialize_with = "nullable")]
    pub uid: String,
    #[serde(deserialize_with = "nullable")]
    pub resource_version: String,
    #[serde(deserialize_with = "nullable")]
    pub labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
    #[serde(deserialize_with = "nullable")]
    pub owner_references: Vec<OwnerReference>,
}

impl ObjectMeta {
    /// The store key: `namespace/name`, or `name` for cluster-wide objects.
    pub fn key(&self) -> String {
        if self.namespace.is_empty() {
            self.name.clone()
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    /// The owner reference marked as the controller, if any.
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references.iter().find(|r| r.controller == Some(true))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct OwnerReference {
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    pub controller: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ObjectReference {
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Pod {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub spec: PodSpec,
    #[serde(deserialize_with = "nullable")]
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(deserialize_with = "nullable")]
    pub node_name: String,
    #[serde(deserialize_with = "nullable")]
    pub containers: Vec<Container>,
    #[serde(deserialize_with = "nullable")]
    pub init_containers: Vec<Container>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Container {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub image: String,
    #[serde(deserialize_with = "nullable")]
    pub ports: Vec<ContainerPort>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerPort {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub container_port: i32,
    #[serde(deserialize_with = "nullable")]
    pub protocol: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(deserialize_with = "nullable")]
    pub phase: String,
    #[serde(rename = "podIP", deserialize_with = "nullable")]
    pub pod_ip: String,
    #[serde(rename = "hostIP", deserialize_with = "nullable")]
    pub host_ip: String,
    #[serde(deserialize_with = "nullable")]
    pub conditions: Vec<Condition>,
    #[serde(deserialize_with = "nullable")]
    pub container_statuses: Vec<ContainerStatus>,
    #[serde(deserialize_with = "nullable")]
    pub init_container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Condition {
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub status: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ContainerStatus {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(rename = "containerID", deserialize_with = "nullable")]
    pub container_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Node {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub spec: NodeSpec,
    #[serde(deserialize_with = "nullable")]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct NodeSpec {
    #[serde(rename = "providerID", deserialize_with = "nullable")]
    pub provider_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NodeStatus {
    #[serde(deserialize_with = "nullable")]
    pub conditions: Vec<Condition>,
    #[serde(deserialize_with = "nullable")]
    pub addresses: Vec<NodeAddress>,
    #[serde(deserialize_with = "nullable")]
    pub daemon_endpoints: DaemonEndpoints,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct NodeAddress {
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    #[serde(deserialize_with = "nullable")]
    pub address: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DaemonEndpoints {
    #[serde(deserialize_with = "nullable")]
    pub kubelet_endpoint: DaemonEndpoint,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DaemonEndpoint {
    #[serde(rename = "Port", deserialize_with = "nullable")]
    pub port: i32,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Service {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub spec: ServiceSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceSpec {
    #[serde(deserialize_with = "nullable")]
    pub ports: Vec<ServicePort>,
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    #[serde(rename = "clusterIP", deserialize_with = "nullable")]
    pub cluster_ip: String,
    #[serde(deserialize_with = "nullable")]
    pub external_name: String,
    #[serde(rename = "loadBalancerIP", deserialize_with = "nullable")]
    pub load_balancer_ip: String,
    pub ip_family_policy: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub ip_families: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServicePort {
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    #[serde(deserialize_with = "nullable")]
    pub port: i32,
    #[serde(deserialize_with = "nullable")]
    pub protocol: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Endpoints {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub subsets: Vec<EndpointSubset>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointSubset {
    #[serde(deserialize_with = "nullable")]
    pub addresses: Vec<EndpointAddress>,
    #[serde(deserialize_with = "nullable")]
    pub not_ready_addresses: Vec<EndpointAddress>,
    #[serde(deserialize_with = "nullable")]
    pub ports: Vec<ServicePort>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointAddress {
    #[serde(deserialize_with = "nullable")]
    pub ip: String,
    #[serde(deserialize_with = "nullable")]
    pub hostname: String,
    pub node_name: Option<String>,
    pub target_ref: Option<ObjectReference>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct EndpointSlice {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub address_type: String,
    #[serde(deserialize_with = "nullable")]
    pub endpoints: Vec<SliceEndpoint>,
    #[serde(deserialize_with = "nullable")]
    pub ports: Vec<SlicePort>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SliceEndpoint {
    #[serde(deserialize_with = "nullable")]
    pub addresses: Vec<String>,
    #[serde(deserialize_with = "nullable")]
    pub conditions: SliceConditions,
    pub hostname: Option<String>,
    pub target_ref: Option<ObjectReference>,
    pub node_name: Option<String>,
    pub zone: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub deprecated_topology: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SliceConditions {
    pub ready: Option<bool>,
    pub serving: Option<bool>,
    pub terminating: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SlicePort {
    pub name: Option<String>,
    pub protocol: Option<String>,
    pub port: Option<i32>,
    pub app_protocol: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Ingress {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "nullable")]
    pub spec: IngressSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct IngressSpec {
    pub ingress_class_name: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub rules: Vec<IngressRule>,
    #[serde(deserialize_with = "nullable")]
    pub tls: Vec<IngressTls>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct IngressRule {
    #[serde(deserialize_with = "nullable")]
    pub host: String,
    /// `None` when the rule has no `http` section, which Prometheus treats as path `/`.
    pub http: Option<IngressHttp>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct IngressHttp {
    #[serde(deserialize_with = "nullable")]
    pub paths: Vec<IngressPath>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct IngressPath {
    #[serde(deserialize_with = "nullable")]
    pub path: String,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct IngressTls {
    #[serde(deserialize_with = "nullable")]
    pub hosts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Namespace {
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
}
