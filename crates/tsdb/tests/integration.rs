//! The engine's integration tests, one binary: a module per file of this
//! directory but wal_write_failure.rs, which limits its whole process.

mod common;
mod concurrency;
mod conformance;
mod corruption;
mod durability;
mod histograms;
mod model;
mod snapshot;
mod wal_feed;
mod write_health;
