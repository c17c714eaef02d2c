//! Ingestion benchmark for Cairn: replays a recorded node_exporter trace as a
//! fleet of targets over Prometheus remote write and measures the server
//! process from the outside (`/proc`, the data directory, HTTP).
//!
//! This crate knows only wire protocols (remote write in, Prometheus HTTP
//! API out), never Cairn's storage or query internals, so the same harness
//! measures any compatible server.

pub mod cli;
pub mod fleet;
pub mod forward;
pub mod histogram;
pub mod html;
pub mod native_histograms;
pub mod processes;
pub mod procfs;
pub mod query;
pub mod record;
pub mod report;
pub mod rules;
pub mod run;
pub mod scrape;
pub mod sender;
pub mod stages;
pub mod systems;
pub mod targets;
pub mod trace;
pub mod workload;

#[cfg(test)]
mod wire_test;

/// The trace shipped with the project's benchmark data.
pub const DEFAULT_TRACE: &str = "/work/shared/benchdata/node-exporter-trace.prom.gz";
