//! Every file under tests/ is a module of this one test binary: one link
//! instead of one per file.

mod support;

mod config;
mod discovery;
mod dns_discovery;
mod load;
mod native;
mod scrape;
mod status;
mod tls;
