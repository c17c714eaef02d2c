//! The whole configuration file.

use std::path::Path;

use serde::Serialize;

use crate::alerting::AlertingConfig;
use crate::error::ConfigError;
use crate::global::GlobalConfig;
use crate::remote_write::RemoteWriteConfig;
use crate::scrape::ScrapeConfig;

/// A loaded and validated `prometheus.yml`: defaults filled in, inherited
/// settings copied from `global`, relative paths made relative to the
/// file's directory.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Config {
    pub global: GlobalConfig,
    #[serde(skip_serializing_if = "AlertingConfig::is_empty")]
    pub alerting: AlertingConfig,
    /// Rule file globs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rule_files: Vec<String>,
    /// Globs of files holding more `scrape_configs`; see [`Config::all_scrape_configs`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scrape_config_files: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scrape_configs: Vec<ScrapeConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub remote_write: Vec<RemoteWriteConfig>,
}

impl AlertingConfig {
    pub fn is_empty(&self) -> bool {
        self.alert_relabel_configs.is_empty() && self.alertmanagers.is_empty()
    }
}

impl Config {
    /// Reads and validates the configuration file at `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let yaml = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let dir = path.parent().unwrap_or(Path::new(""));
        Self::parse(&yaml, dir).map_err(|e| ConfigError::InFile {
            path: path.to_path_buf(),
            error: Box::new(e),
        })
    }

    /// Parses and validates a configuration; relative paths in it are taken
    /// relative to `base_dir`.
    pub fn parse(yaml: &str, base_dir: &Path) -> Result<Config, ConfigError> {
        let mut config = crate::load::decode_config(yaml)?;
        crate::validate::validate_config(&mut config)?;
        config.set_directory(base_dir);
        Ok(config)
    }

    /// The effective configuration as YAML, defaults filled in and secrets
    /// shown as `<secret>`, as Prometheus' `/api/v1/status/config` shows it.
    pub fn to_yaml(&self) -> String {
        // Serializing plain data to a string cannot fail.
        serde_yaml_ng::to_string(self).unwrap_or_default()
    }

    /// The scrape configurations of this file and of every file matching
    /// `scrape_config_files`, validated against this file's `global` section.
    /// Files are read now, so a reload sees their current content.
    pub fn all_scrape_configs(&self) -> Result<Vec<ScrapeConfig>, ConfigError> {
        crate::load::all_scrape_configs(self)
    }

    /// The rule files `rule_files` names now, in order, each once.
    pub fn rule_file_paths(&self) -> Result<Vec<std::path::PathBuf>, ConfigError> {
        let mut out = Vec::new();
        for pattern in &self.rule_files {
            for path in crate::validate::glob(pattern).map_err(|e| ConfigError::invalid("rule_files", e))? {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
        Ok(out)
    }

    fn set_directory(&mut self, dir: &Path) {
        use crate::paths::join_dir;
        join_dir(dir, &mut self.global.query_log_file);
        join_dir(dir, &mut self.global.scrape_failure_log_file);
        for file in self.rule_files.iter_mut().chain(self.scrape_config_files.iter_mut()) {
            join_dir(dir, file);
        }
        for scrape in &mut self.scrape_configs {
            scrape.set_directory(dir);
        }
        for am in &mut self.alerting.alertmanagers {
            am.http_client.set_directory(dir);
            am.service_discovery.set_directory(dir);
        }
        for rw in &mut self.remote_write {
            rw.http_client.set_directory(dir);
        }
    }
}

impl ScrapeConfig {
    pub(crate) fn set_directory(&mut self, dir: &Path) {
        self.http_client.set_directory(dir);
        self.service_discovery.set_directory(dir);
        crate::paths::join_dir(dir, &mut self.scrape_failure_log_file);
    }
}

impl crate::discovery::ServiceDiscoveryConfigs {
    pub(crate) fn set_directory(&mut self, dir: &Path) {
        for file_sd in &mut self.file_sd_configs {
            for file in &mut file_sd.files {
                crate::paths::join_dir(dir, file);
            }
        }
        for http_sd in &mut self.http_sd_configs {
            http_sd.http_client.set_directory(dir);
        }
        for k8s in &mut self.kubernetes_sd_configs {
            k8s.set_directory(dir);
        }
    }
}
