//! Why a configuration could not be loaded.

use std::path::PathBuf;

/// A configuration loading error. `context` says where in the file the
/// problem is, e.g. `scrape_configs[1] (job "node")`; it is empty for the top level.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read configuration file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing YAML file {path}: {error}")]
    InFile { path: PathBuf, error: Box<ConfigError> },
    #[error("invalid YAML: {0}")]
    Syntax(String),
    #[error("{}{message}", prefix(context))]
    Invalid { context: String, message: String },
    #[error("{}{key} is not supported by Cairn", prefix(context))]
    Unsupported { context: String, key: String },
}

fn prefix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!("{context}: ")
    }
}

impl ConfigError {
    pub(crate) fn invalid(context: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            context: context.to_string(),
            message: message.into(),
        }
    }
}
