//! What the watches have seen: the objects of every kind by key.

use std::collections::HashMap;

use super::objects::{EndpointSlice, Endpoints, Ingress, Namespace, Node, Pod, Service};

#[derive(Debug, Default)]
pub(super) struct Stores {
    pub pods: HashMap<String, Pod>,
    pub nodes: HashMap<String, Node>,
    pub services: HashMap<String, Service>,
    pub endpoints: HashMap<String, Endpoints>,
    pub slices: HashMap<String, EndpointSlice>,
    pub ingresses: HashMap<String, Ingress>,
    pub namespaces: HashMap<String, Namespace>,
}

/// Related objects whose labels are added to targets (`attach_metadata`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attach {
    pub node: bool,
    pub namespace: bool,
}
