//! A cluster given one Prometheus configuration file: etcd and `cairn`
//! nodes sharing its scrape targets and rule groups (RF 3, short leases).

use std::path::Path;
use std::time::{Duration, Instant};

use super::etcd::Etcd;
use super::{Server, http_client};
use serde_json::Value;

pub struct MonitoringCluster {
    pub etcd: Etcd,
    pub nodes: Vec<Server>,
    _dirs: Vec<tempfile::TempDir>,
}

impl MonitoringCluster {
    /// Three nodes given `config` (and `extra` flags), once each takes its
    /// share of the work; `None` when etcd is missing.
    pub fn start(config: &Path, extra: &[&str]) -> Option<Self> {
        let etcd = Etcd::start()?;
        let endpoint = etcd.endpoint();
        let config = config.to_str().expect("utf-8 path");
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
                    "--config.file",
                    config,
                ];
                args.extend_from_slice(extra);
                let mut node = Server::new(dir.path(), &args);
                node.restart();
                node
            })
            .collect();
        let cluster = Self {
            etcd,
            nodes,
            _dirs: dirs,
        };
        cluster.wait_monitoring();
        Some(cluster)
    }

    /// Waits until every running node sees every running node take its
    /// share of the scrape targets and rule groups.
    pub fn wait_monitoring(&self) {
        let running = self.nodes.iter().filter(|n| n.is_running()).count();
        let deadline = Instant::now() + Duration::from_secs(30);
        for node in self.nodes.iter().filter(|n| n.is_running()) {
            loop {
                let ring: Value = http_client(Duration::from_secs(5))
                    .get(format!("{}/internal/cluster/v1/ring", node.url()))
                    .send()
                    .and_then(|r| r.json())
                    .unwrap_or_default();
                let monitoring = ring["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|m| m["monitoring"] == true)
                    .count();
                if monitoring == running {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{monitoring} of {running} nodes monitor: {ring}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}
