//! The cluster under the tests of one node: three `cairn` nodes (etcd, RF 3)
//! and, in this process, a routing-only member whose storage seam
//! (`ClusterTenants`) the storage conformance suite and Prometheus' PromQL
//! test scripts run over, each case and each `clear` on a tenant of its
//! own. The scripts' outcomes must be those over the in-memory reference
//! storage, eval by eval; between two of them their storage is emptied by a
//! delete (later writes show), as one tenant per `clear` would be too many
//! engines.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cairn_cluster::{Cluster, ClusterConfig, ClusterTenants, Role};
use cairn_model::{Labels, MatchOp, Matcher, Sample};
use cairn_promqltest::Outcome;
use cairn_storage::{MemStorage, Storage, TenantId, Tenants};

use crate::common::free_port;
use crate::common::three_nodes::ThreeNodes;

/// Three storing nodes, and a routing member in this process.
struct Routed {
    nodes: ThreeNodes,
    tenants: ClusterTenants,
    next_tenant: AtomicU64,
}

impl Routed {
    fn start() -> Option<Self> {
        // The scripts' data lies around 1970.
        let nodes = ThreeNodes::start(&["--storage.retention", "36500d"])?;
        let endpoint = nodes.etcd.endpoint();
        let mut config = ClusterConfig::new(&endpoint, "conformance-client", &format!("127.0.0.1:{}", free_port()));
        config.role = Role::Write;
        let cluster = Cluster::start(config).expect("the routing member");
        let deadline = Instant::now() + Duration::from_secs(30);
        while cluster.ring().readable_ingesters().count() < 3 || !cluster.registered() {
            assert!(
                Instant::now() < deadline,
                "the routing member does not see three ingesters"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(Self {
            nodes,
            tenants: ClusterTenants::new(cluster),
            next_tenant: AtomicU64::new(0),
        })
    }

    /// The storage of the scripts, emptied: every sample deleted (later
    /// writes show), so that the scripts need no tenant per `clear`.
    fn emptied(&self) -> Arc<dyn Storage> {
        let storage = self
            .tenants
            .get_or_create(&TenantId::new("scripts").expect("tenant id"))
            .expect("tenant storage");
        let everything = Matcher::new(MatchOp::RegexMatch, "__name__", ".*").expect("a valid regex");
        storage
            .delete_series(&[everything], i64::MIN, i64::MAX)
            .expect("delete every series");
        storage
    }

    /// An empty storage: a tenant no one wrote to (a case each, so within
    /// `--tenants.max`).
    fn fresh(&self) -> Arc<dyn Storage> {
        let n = self.next_tenant.fetch_add(1, Ordering::Relaxed);
        let tenant = TenantId::new(&format!("t{n}")).expect("tenant id");
        self.tenants.get_or_create(&tenant).expect("tenant storage")
    }

    fn logs(&self) -> String {
        self.nodes
            .nodes
            .iter()
            .map(|n| n.log())
            .collect::<Vec<_>>()
            .join("\n---\n")
    }
}

#[test]
fn the_cluster_passes_the_storage_conformance_suite() {
    let Some(cluster) = Routed::start() else { return };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // A cluster's querier reads the owners at each select, so writes
        // between two selects of one querier show; an overwritten timestamp
        // may read back from an owner that has not applied the overwrite
        // yet (docs/cluster.md, "What is consistent when").
        let left_out = [
            "querier_is_a_snapshot",
            "duplicate_timestamp_last_write_wins",
            "histogram_and_float_replace_each_other",
        ];
        cairn_storage::conformance::run_all_but(|| cluster.fresh(), &left_out);
    }));
    if let Err(e) = result {
        eprintln!("nodes' logs:\n{}", cluster.logs());
        std::panic::resume_unwind(e);
    }
}

/// A write is acknowledged by a quorum of its owners; a delete after the
/// acknowledgement removes also the copy still on its way to the last one.
#[test]
fn a_delete_removes_the_late_copies_of_acknowledged_writes() {
    let Some(cluster) = Routed::start() else { return };
    let storage = cluster.fresh();
    let slow = &cluster.nodes.nodes[2];
    let every = [Matcher::new(MatchOp::RegexMatch, "__name__", "late_.*").expect("a valid regex")];
    for round in 0..3 {
        slow.signal("-STOP");
        let mut appender = storage.appender();
        for i in 0..100 {
            let labels = Labels::from_pairs([("__name__", format!("late_{round}")), ("i", i.to_string())]);
            appender.append(&labels, &[Sample::new(1000, 1.0)]).expect("append");
        }
        appender.commit().expect("two of three owners store the write");
        let deleting = std::thread::spawn({
            let storage = storage.clone();
            let every = every.clone();
            move || storage.delete_series(&every, i64::MIN, i64::MAX)
        });
        // The paused owner gets the last copy and the delete only when it resumes.
        std::thread::sleep(Duration::from_millis(500));
        slow.signal("-CONT");
        deleting.join().expect("the delete's thread").expect("the delete");
        let left = cairn_storage::conformance::read(storage.as_ref(), &every, 0, 10_000);
        assert!(
            left.is_empty(),
            "round {round}: {} series came back after the delete",
            left.len()
        );
    }
}

#[test]
fn upstream_promql_scripts_give_the_same_outcomes_through_the_cluster() {
    let Some(files) = cairn_promqltest::upstream_scripts() else {
        assert!(!crate::common::peers::in_ci(), "the upstream scripts are missing");
        println!("SKIPPED: ../shared/promqltest not found");
        return;
    };
    let Some(cluster) = Routed::start() else { return };
    let options = cairn_promqltest::upstream_options();
    let (mut compared, mut passed) = (0, 0);
    let mut differences = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read script");
        let alone = cairn_promqltest::run_script_on(&text, options.clone(), &|| Arc::new(MemStorage::new()));
        let clustered = cairn_promqltest::run_script_on(&text, options.clone(), &|| cluster.emptied());
        let by_line = |reports: Vec<cairn_promqltest::EvalReport>| -> BTreeMap<usize, (String, Outcome)> {
            reports.into_iter().map(|r| (r.line, (r.query, r.outcome))).collect()
        };
        let (alone, clustered) = (by_line(alone), by_line(clustered));
        let name = f.file_name().unwrap_or_default().to_string_lossy().to_string();
        for line in alone.keys().chain(clustered.keys()).collect::<BTreeSet<_>>() {
            let (a, c) = (alone.get(line), clustered.get(line));
            compared += 1;
            passed += usize::from(c.is_some_and(|(_, o)| *o == Outcome::Pass));
            if a.map(|(_, o)| o) != c.map(|(_, o)| o) {
                let query = a.or(c).map_or("", |(q, _)| q.as_str());
                differences.push(format!(
                    "{name}:{line} {query}\n  one node: {:?}\n  cluster:  {:?}",
                    a.map(|(_, o)| o),
                    c.map(|(_, o)| o)
                ));
            }
        }
    }
    println!(
        "{compared} evals through the cluster, {passed} passed, {} differ",
        differences.len()
    );
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
