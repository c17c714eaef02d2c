//! Checks a decoded configuration as Prometheus does when it loads one, and
//! fills in what sections inherit from `global`.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::LazyLock;

use regex::Regex;

use crate::alerting::AlertmanagerConfig;
use crate::config::Config;
use crate::discovery::{ServiceDiscoveryConfigs, StaticConfig};
use crate::error::ConfigError;
use crate::global::{DEFAULT_EVALUATION_INTERVAL, DEFAULT_SCRAPE_INTERVAL, DEFAULT_SCRAPE_TIMEOUT, GlobalConfig};
use crate::names::NameValidationScheme;
use crate::relabel::RelabelConfig;
use crate::remote_write::{REMOTE_WRITE_V1_MESSAGE, REMOTE_WRITE_V2_MESSAGE, RemoteWriteConfig};
use crate::scrape::{ScrapeConfig, ScrapeProtocol};

/// A rule or scrape config file glob: wildcards only in the last path element.
static FILE_GLOB: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[^*]*(\*[^/]*)?$").expect("the file glob regex compiles"));

/// A `file_sd_configs` file: a JSON or YAML file, wildcards only in the last element.
static FILE_SD_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$").expect("the file SD name regex compiles")
});

const ESCAPING_SCHEMES: [&str; 4] = ["allow-utf-8", "underscores", "dots", "values"];

/// Headers remote write sets itself, which `headers` may not change
/// (`authorization` has its own message).
const REMOTE_WRITE_RESERVED_HEADERS: [&str; 16] = [
    "host",
    "content-encoding",
    "content-length",
    "content-type",
    "user-agent",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "www-authenticate",
    "accept-encoding",
    "x-prometheus-remote-write-version",
    "x-prometheus-remote-read-version",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

pub(crate) fn validate_config(config: &mut Config) -> Result<(), ConfigError> {
    validate_global(&mut config.global)?;
    for file in &config.rule_files {
        if !FILE_GLOB.is_match(file) {
            return Err(ConfigError::invalid(
                "rule_files",
                format!("invalid rule file path {file:?}"),
            ));
        }
    }
    for file in &config.scrape_config_files {
        if !FILE_GLOB.is_match(file) {
            return Err(ConfigError::invalid(
                "scrape_config_files",
                format!("invalid scrape config file path {file:?}"),
            ));
        }
    }
    let mut job_names = HashSet::new();
    for (i, scrape) in config.scrape_configs.iter_mut().enumerate() {
        let context = format!("scrape_configs[{i}] (job {:?})", scrape.job_name);
        validate_scrape_config(scrape, &config.global, &context)?;
        if !job_names.insert(scrape.job_name.clone()) {
            return Err(ConfigError::invalid(
                &context,
                format!("found multiple scrape configs with job name {:?}", scrape.job_name),
            ));
        }
    }
    let scheme = config.global.metric_name_validation_scheme;
    validate_relabel_configs(
        &mut config.alerting.alert_relabel_configs,
        scheme,
        "alerting.alert_relabel_configs",
    )?;
    for (i, am) in config.alerting.alertmanagers.iter_mut().enumerate() {
        validate_alertmanager(am, scheme, &format!("alerting.alertmanagers[{i}]"))?;
    }
    let mut remote_write_names = HashSet::new();
    for (i, rw) in config.remote_write.iter_mut().enumerate() {
        let context = format!("remote_write[{i}]");
        if !rw.name.is_empty() && !remote_write_names.insert(rw.name.clone()) {
            return Err(ConfigError::invalid(
                &context,
                format!("found multiple remote write configs with job name {:?}", rw.name),
            ));
        }
        validate_remote_write(rw, scheme, &context)?;
    }
    Ok(())
}

fn validate_global(global: &mut GlobalConfig) -> Result<(), ConfigError> {
    let context = "global";
    let scheme = global.metric_name_validation_scheme;
    let mut expanded = Vec::with_capacity(global.external_labels.len());
    for label in global.external_labels.iter() {
        if !scheme.is_valid_label_name(&label.name) {
            return Err(ConfigError::invalid(
                "global.external_labels",
                format!("{:?} is not a valid label name", label.name.as_str()),
            ));
        }
        let value = expand_env(&label.value);
        expanded.push(cairn_model::Label::new(label.name.clone(), value));
    }
    global.external_labels = cairn_model::Labels::new(expanded)
        .map_err(|e| ConfigError::invalid("global.external_labels", e.to_string()))?;
    if global.scrape_interval.is_zero() {
        global.scrape_interval = DEFAULT_SCRAPE_INTERVAL;
    }
    if global.scrape_timeout > global.scrape_interval {
        return Err(ConfigError::invalid(
            context,
            "global scrape timeout greater than scrape interval",
        ));
    }
    if global.scrape_timeout.is_zero() {
        global.scrape_timeout = DEFAULT_SCRAPE_TIMEOUT.min(global.scrape_interval);
    }
    if global.evaluation_interval.is_zero() {
        global.evaluation_interval = DEFAULT_EVALUATION_INTERVAL;
    }
    if !global.scrape_protocols.is_empty() {
        check_protocols(&global.scrape_protocols)
            .map_err(|e| ConfigError::invalid(context, format!("{e} for global config")))?;
    }
    if !global.metric_name_escaping_scheme.is_empty()
        && !ESCAPING_SCHEMES.contains(&global.metric_name_escaping_scheme.as_str())
    {
        return Err(ConfigError::invalid(
            context,
            format!(
                "unknown global name escaping method specified, must be one of 'allow-utf-8', 'underscores', 'dots', or 'values', got {:?}",
                global.metric_name_escaping_scheme
            ),
        ));
    }
    Ok(())
}

/// Replaces `$VAR` and `${VAR}` with the environment's value (empty when
/// unset) and `$$` with `$`, as Prometheus does in external label values.
fn expand_env(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        rest = &rest[dollar + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(body) = rest.strip_prefix('{') {
            match body.find('}') {
                Some(end) => {
                    out.push_str(&std::env::var(&body[..end]).unwrap_or_default());
                    rest = &body[end + 1..];
                }
                None => {
                    // Go's os.Expand drops a `${` that is never closed.
                    rest = "";
                }
            }
        } else {
            let len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            if len == 0 {
                out.push('$');
            } else {
                out.push_str(&std::env::var(&rest[..len]).unwrap_or_default());
            }
            rest = &rest[len..];
        }
    }
    out.push_str(rest);
    out
}

fn check_protocols(protocols: &[ScrapeProtocol]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for p in protocols {
        if !seen.insert(p.as_str().to_lowercase()) {
            let all: Vec<&str> = protocols.iter().map(|p| p.as_str()).collect();
            return Err(format!(
                "duplicated protocol in scrape_protocols, got [{}]",
                all.join(" ")
            ));
        }
    }
    Ok(())
}

pub(crate) fn validate_scrape_config(
    scrape: &mut ScrapeConfig,
    global: &GlobalConfig,
    context: &str,
) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::invalid(context, message);
    if scrape.job_name.is_empty() {
        return Err(invalid("job_name is empty".into()));
    }
    scrape.http_client.validate().map_err(invalid)?;
    if scrape.relabel_configs.is_empty() {
        check_static_targets(&scrape.service_discovery.static_configs).map_err(invalid)?;
    }
    validate_discovery(&mut scrape.service_discovery, context)?;
    if scrape.scrape_interval.is_zero() {
        scrape.scrape_interval = global.scrape_interval;
    }
    if scrape.scrape_timeout > scrape.scrape_interval {
        return Err(invalid(format!(
            "scrape timeout greater than scrape interval for scrape config with job name {:?}",
            scrape.job_name
        )));
    }
    if scrape.scrape_timeout.is_zero() {
        scrape.scrape_timeout = global.scrape_timeout.min(scrape.scrape_interval);
    }
    if scrape.body_size_limit.is_zero() {
        scrape.body_size_limit = global.body_size_limit;
    }
    let inherit = |own: &mut u64, from: u64| {
        if *own == 0 {
            *own = from;
        }
    };
    inherit(&mut scrape.sample_limit, global.sample_limit);
    inherit(&mut scrape.target_limit, global.target_limit);
    inherit(&mut scrape.label_limit, global.label_limit);
    inherit(&mut scrape.label_name_length_limit, global.label_name_length_limit);
    inherit(&mut scrape.label_value_length_limit, global.label_value_length_limit);
    inherit(&mut scrape.keep_dropped_targets, global.keep_dropped_targets);
    if scrape.scrape_failure_log_file.is_empty() {
        scrape.scrape_failure_log_file = global.scrape_failure_log_file.clone();
    }
    scrape
        .scrape_native_histograms
        .get_or_insert(global.scrape_native_histograms);
    scrape.extra_scrape_metrics.get_or_insert(global.extra_scrape_metrics);
    scrape
        .convert_classic_histograms_to_nhcb
        .get_or_insert(global.convert_classic_histograms_to_nhcb);
    scrape
        .always_scrape_classic_histograms
        .get_or_insert(global.always_scrape_classic_histograms);
    if scrape.scrape_protocols.is_empty() {
        scrape.scrape_protocols = if !global.scrape_protocols.is_empty() {
            global.scrape_protocols.clone()
        } else if scrape.scrape_native_histograms_enabled() {
            ScrapeProtocol::PROTO_FIRST.to_vec()
        } else {
            ScrapeProtocol::DEFAULT.to_vec()
        };
    }
    check_protocols(&scrape.scrape_protocols)
        .map_err(|e| invalid(format!("{e} for scrape config with job name {:?}", scrape.job_name)))?;
    validate_name_schemes(scrape, global).map_err(invalid)?;
    let scheme = scrape.name_validation();
    validate_relabel_configs(
        &mut scrape.relabel_configs,
        scheme,
        &format!("{context}: relabel_configs"),
    )?;
    validate_relabel_configs(
        &mut scrape.metric_relabel_configs,
        scheme,
        &format!("{context}: metric_relabel_configs"),
    )?;
    Ok(())
}

/// Fills in the job's name validation and escaping schemes as Prometheus does.
fn validate_name_schemes(scrape: &mut ScrapeConfig, global: &GlobalConfig) -> Result<(), String> {
    let local_unset = scrape.metric_name_validation_scheme.is_none();
    let scheme = *scrape
        .metric_name_validation_scheme
        .get_or_insert(global.metric_name_validation_scheme);
    let global_escaping = match global.metric_name_escaping_scheme.as_str() {
        "" if global.metric_name_validation_scheme == NameValidationScheme::Legacy => "underscores",
        "" => "allow-utf-8",
        other => other,
    };
    if scrape.metric_name_escaping_scheme.is_empty() {
        scrape.metric_name_escaping_scheme = if local_unset {
            global_escaping.to_string()
        } else if scheme == NameValidationScheme::Legacy {
            "underscores".to_string()
        } else {
            "allow-utf-8".to_string()
        };
    }
    match scrape.metric_name_escaping_scheme.as_str() {
        "allow-utf-8" if scheme != NameValidationScheme::Utf8 => {
            Err("utf8 metric names requested but validation scheme is not set to UTF8".into())
        }
        s if ESCAPING_SCHEMES.contains(&s) => Ok(()),
        other => Err(format!(
            "unknown scrape config name escaping method specified, must be one of 'allow-utf-8', 'underscores', 'dots', or 'values', got {other:?}"
        )),
    }
}

/// Prometheus refuses URLs where `host:port` belongs (unless relabelling may fix them).
fn check_static_targets(static_configs: &[StaticConfig]) -> Result<(), String> {
    for target in static_configs.iter().flat_map(|s| &s.targets) {
        check_target_address(target)?;
    }
    Ok(())
}

/// Prometheus' check of a target's `__address__` (after relabelling too):
/// it must be `host[:port]`, not a URL.
pub fn check_target_address(address: &str) -> Result<(), String> {
    if address.contains('/') {
        return Err(format!("{address:?} is not a valid hostname"));
    }
    Ok(())
}

fn validate_discovery(discovery: &mut ServiceDiscoveryConfigs, context: &str) -> Result<(), ConfigError> {
    for (i, file_sd) in discovery.file_sd_configs.iter().enumerate() {
        let context = format!("{context}: file_sd_configs[{i}]");
        if file_sd.files.is_empty() {
            return Err(ConfigError::invalid(
                &context,
                "file service discovery config must contain at least one path name",
            ));
        }
        for file in &file_sd.files {
            if !FILE_SD_NAME.is_match(file) {
                return Err(ConfigError::invalid(
                    &context,
                    format!("path name {file:?} is not valid for file discovery"),
                ));
            }
        }
    }
    for (i, dns_sd) in discovery.dns_sd_configs.iter().enumerate() {
        dns_sd
            .validate()
            .map_err(|e| ConfigError::invalid(&format!("{context}: dns_sd_configs[{i}]"), e))?;
    }
    for (i, k8s) in discovery.kubernetes_sd_configs.iter_mut().enumerate() {
        k8s.validate()
            .map_err(|e| ConfigError::invalid(&format!("{context}: kubernetes_sd_configs[{i}]"), e))?;
    }
    for (i, http_sd) in discovery.http_sd_configs.iter_mut().enumerate() {
        let context = format!("{context}: http_sd_configs[{i}]");
        if http_sd.url.is_empty() {
            return Err(ConfigError::invalid(&context, "URL is missing"));
        }
        check_http_url(&http_sd.url).map_err(|e| ConfigError::invalid(&context, e))?;
        http_sd
            .http_client
            .validate()
            .map_err(|e| ConfigError::invalid(&context, e))?;
    }
    Ok(())
}

/// An absolute `http` or `https` URL with a host.
fn check_http_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("URL scheme must be 'http' or 'https'".into());
    };
    if scheme != "http" && scheme != "https" {
        return Err("URL scheme must be 'http' or 'https'".into());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() {
        return Err("host is missing in URL".into());
    }
    Ok(())
}

fn validate_relabel_configs(
    configs: &mut [RelabelConfig],
    scheme: NameValidationScheme,
    context: &str,
) -> Result<(), ConfigError> {
    for (i, config) in configs.iter_mut().enumerate() {
        config
            .validate(scheme)
            .map_err(|e| ConfigError::invalid(&format!("{context}[{i}]"), e.to_string()))?;
    }
    Ok(())
}

fn validate_alertmanager(
    am: &mut AlertmanagerConfig,
    scheme: NameValidationScheme,
    context: &str,
) -> Result<(), ConfigError> {
    am.http_client
        .validate()
        .map_err(|e| ConfigError::invalid(context, e))?;
    if am.relabel_configs.is_empty() {
        check_static_targets(&am.service_discovery.static_configs).map_err(|e| ConfigError::invalid(context, e))?;
    }
    validate_discovery(&mut am.service_discovery, context)?;
    validate_relabel_configs(&mut am.relabel_configs, scheme, &format!("{context}: relabel_configs"))?;
    validate_relabel_configs(
        &mut am.alert_relabel_configs,
        scheme,
        &format!("{context}: alert_relabel_configs"),
    )?;
    Ok(())
}

fn validate_remote_write(
    rw: &mut RemoteWriteConfig,
    scheme: NameValidationScheme,
    context: &str,
) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::invalid(context, message);
    if rw.url.is_empty() {
        return Err(invalid("url for remote_write is empty".into()));
    }
    // Prometheus only parses the URL here; a wrong scheme fails when sending.
    crate::http_client::check_url_syntax(&rw.url).map_err(invalid)?;
    for name in rw.headers.keys() {
        let lower = name.to_lowercase();
        if lower == "authorization" {
            return Err(invalid(
                "authorization header must be changed via the basic_auth, authorization, oauth2, sigv4, azuread or google_iam parameter".into(),
            ));
        }
        if REMOTE_WRITE_RESERVED_HEADERS.contains(&lower.as_str()) {
            return Err(invalid(format!("{name} is a reserved header. It must not be changed")));
        }
    }
    if rw.protobuf_message != REMOTE_WRITE_V1_MESSAGE && rw.protobuf_message != REMOTE_WRITE_V2_MESSAGE {
        return Err(invalid(format!(
            "unknown remote write protobuf message {:?}, supported: {REMOTE_WRITE_V1_MESSAGE}, {REMOTE_WRITE_V2_MESSAGE}",
            rw.protobuf_message
        )));
    }
    rw.http_client.validate().map_err(invalid)?;
    rw.queue_config.validate().map_err(|e| invalid(e.to_string()))?;
    validate_relabel_configs(
        &mut rw.write_relabel_configs,
        scheme,
        &format!("{context}: write_relabel_configs"),
    )?;
    Ok(())
}

/// The existing files matching a glob (`rule_files`, `scrape_config_files`),
/// sorted; an invalid pattern is an error.
pub fn glob(pattern: &str) -> Result<Vec<PathBuf>, String> {
    let paths = glob::glob(pattern).map_err(|e| format!("error retrieving files for {pattern:?}: {e}"))?;
    let mut out: Vec<PathBuf> = paths.filter_map(Result::ok).collect();
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_env_expansion_in_external_labels() {
        // Setting a variable needs `unsafe` in Rust 2024; read one every test run has.
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand_env("a-$PATH-b"), format!("a-{path}-b"));
        assert_eq!(expand_env("${PATH}x"), format!("{path}x"));
        assert_eq!(expand_env("cost $$5"), "cost $5");
        assert_eq!(expand_env("$CAIRN_SURELY_UNSET_VAR"), "");
        assert_eq!(expand_env("trailing $"), "trailing $");
    }

    #[test]
    fn validate_http_urls() {
        assert!(check_http_url("http://localhost:9093/path").is_ok());
        assert!(check_http_url("https://u:p@example.com").is_ok());
        assert!(check_http_url("ftp://example.com").is_err());
        assert!(check_http_url("example.com").is_err());
        assert!(check_http_url("http:///x").is_err());
    }
}
