//! The corpora and properties of the fuzz targets, one binary: a module per file of this directory.

mod dns_answer;
mod kubernetes_events;
mod replay;
