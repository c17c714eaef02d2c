//! A cluster of three `cairn` nodes over an etcd of its own (RF 3, short
//! leases), each over a directory of its own.

use std::path::Path;
use std::time::{Duration, Instant};

use super::etcd::Etcd;
use super::netns::Namespace;
use super::{Server, http_client};
use serde_json::Value;

pub struct ThreeNodes {
    pub etcd: Etcd,
    pub nodes: Vec<Server>,
    _dirs: Vec<tempfile::TempDir>,
}

impl ThreeNodes {
    /// Three nodes started with `extra` flags, each ready; `None` when etcd
    /// is missing.
    pub fn start(extra: &[&str]) -> Option<Self> {
        Some(Self::start_over(Etcd::start()?, &[], extra))
    }

    /// Three nodes over `etcd`, node `i` in `namespaces[i]` when given.
    pub fn start_over(etcd: Etcd, namespaces: &[Namespace], extra: &[&str]) -> Self {
        let endpoint = etcd.endpoint();
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().expect("tempdir")).collect();
        let nodes = dirs
            .iter()
            .enumerate()
            .map(|(i, dir)| {
                let id = format!("node-{i}");
                let mut args = vec![
                    "--cluster.etcd-endpoints",
                    &endpoint,
                    "--cluster.node-id",
                    &id,
                    "--cluster.replication-factor",
                    "3",
                    "--cluster.lease-ttl",
                    "2s",
                    "--cluster.peer-timeout",
                    "2s",
                ];
                args.extend_from_slice(extra);
                let mut node = Server::new(dir.path(), &args);
                if let Some(ns) = namespaces.get(i) {
                    node.host = ns.addr.clone();
                    node.command_prefix = ns.exec_prefix();
                }
                node.restart();
                node
            })
            .collect();
        let cluster = Self {
            etcd,
            nodes,
            _dirs: dirs,
        };
        cluster.wait_for_members(|m| m["alive"] == true && m["ingester"] == true);
        cluster
    }

    /// Three nodes given the Prometheus configuration `config` (and `extra`
    /// flags), once each takes its share of its targets and rule groups.
    pub fn monitoring(config: &Path, extra: &[&str]) -> Option<Self> {
        let config = config.to_str().expect("utf-8 path");
        let mut args = vec!["--config.file", config];
        args.extend_from_slice(extra);
        let cluster = Self::start(&args)?;
        cluster.wait_monitoring();
        Some(cluster)
    }

    /// Waits until every running node sees every running node take its
    /// share of the scrape targets and rule groups.
    pub fn wait_monitoring(&self) {
        self.wait_for_members(|m| m["monitoring"] == true);
    }

    /// Waits until node `i`, started again, is alive in every running
    /// node's ring and has caught up on what it missed.
    pub fn wait_rejoined(&self, i: usize) {
        self.wait_for_members(|m| m["alive"] == true && m["ingester"] == true);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ring: Value = http_client(Duration::from_secs(5))
                .get(format!("{}/internal/cluster/v1/ring", self.nodes[i].url()))
                .send()
                .and_then(|r| r.json())
                .unwrap_or_default();
            if ring["caught_up"] == true {
                return;
            }
            assert!(Instant::now() < deadline, "node {i} did not catch up: {ring}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every running node's ring has as many members `counted`
    /// as there are nodes running.
    fn wait_for_members(&self, counted: impl Fn(&Value) -> bool) {
        let running = self.nodes.iter().filter(|n| n.is_running()).count();
        let deadline = Instant::now() + Duration::from_secs(30);
        for node in self.nodes.iter().filter(|n| n.is_running()) {
            loop {
                let ring: Value = http_client(Duration::from_secs(5))
                    .get(format!("{}/internal/cluster/v1/ring", node.url()))
                    .send()
                    .and_then(|r| r.json())
                    .unwrap_or_default();
                let members = ring["members"].as_array().into_iter().flatten();
                let n = members.filter(|m| counted(m)).count();
                if n == running {
                    break;
                }
                assert!(Instant::now() < deadline, "{n} of {running} nodes counted: {ring}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
