//! The end-to-end tests: the real `cairn` binary, and the peers it is
//! compared with, started by the tests. One file under `tests/` per area,
//! each a module of this one test binary, so the shared harness (`common`)
//! is compiled and the binary linked once. A new file under `tests/` needs
//! its `mod` line here; [`every_test_file_is_a_module`] checks that.
//!
//! Run one area with `cargo test --release --test e2e <module>::`.

mod common;

/// What several areas share: the PromQL differential harness, and the
/// synthetic exporter of the scrape tests.
mod differential {
    pub mod compare;
    pub mod data;
    pub mod histogram_data;
    pub mod histogram_wire;
    pub mod queries;
    pub mod servers;
}
mod scrape {
    pub mod exporter;
}
/// The rules tests' data, files and Alertmanager webhook.
mod rules {
    pub mod data;
    pub mod files;
    pub mod targets;
    pub mod webhook;
}

mod auth;
mod backup;
mod bench_victoriametrics;
mod cli_help;
mod cluster;
mod cluster_conformance;
mod cluster_damage;
mod cluster_history;
mod cluster_monitoring;
mod cluster_results_cache;
mod cluster_tls;
mod crash;
mod disk_faults;
mod dns_sd;
mod histogram_differential;
mod http_api;
mod kubernetes_sd;
mod line_protocols;
mod object_store;
mod otlp;
mod prometheus_api_shapes;
mod prometheus_config;
mod prometheus_federate;
mod prometheus_native_histograms;
mod prometheus_remote_read;
mod prometheus_remote_write;
mod promql_differential;
mod promql_generator;
mod query_storm;
mod remote_write_forwarding;
mod rules_differential;
mod scrape_differential;
mod self_metrics;
mod storage_corruption;
mod tenants;
mod ui_browser;
mod vm_native_migration;
mod vmctl;

/// Files under `tests/` compile only as modules of this binary.
#[test]
fn every_test_file_is_a_module() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let this = std::fs::read_to_string(root.join("e2e.rs")).expect("read e2e.rs");
    for entry in std::fs::read_dir(&root).expect("read tests/") {
        let path = entry.expect("dir entry").path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".rs"))
        else {
            continue;
        };
        if name != "e2e" {
            assert!(
                this.contains(&format!("\nmod {name};\n")),
                "tests/{name}.rs is not a module of tests/e2e.rs"
            );
        }
    }
}
