//! The configuration's integration tests, one binary: a module per file of this directory.

mod cases;
mod errors;
mod go_regex;
mod load;
mod oracle;
mod oracle_relabel;
mod robustness;
