//! Decoding the YAML document section by section, so every error says where
//! it is, keys Cairn does not implement are refused by name, and the HTTP
//! client and service discovery keys Prometheus writes inline are split off.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_yaml_ng::{Mapping, Value};

use crate::alerting::{AlertingConfig, AlertmanagerConfig};
use crate::config::Config;
use crate::discovery::{HttpSdConfig, ServiceDiscoveryConfigs};
use crate::error::ConfigError;
use crate::global::GlobalConfig;
use crate::kubernetes_sd::KubernetesSdConfig;
use crate::remote_write::RemoteWriteConfig;
use crate::scrape::ScrapeConfig;

/// Top-level sections Prometheus has and Cairn does not implement.
const UNSUPPORTED_TOP_LEVEL: [&str; 5] = ["remote_read", "storage", "tracing", "otlp", "runtime"];

/// Service discovery mechanisms Prometheus has and Cairn does not implement.
const UNSUPPORTED_DISCOVERY: [&str; 28] = [
    "aws_sd_configs",
    "azure_sd_configs",
    "consul_sd_configs",
    "digitalocean_sd_configs",
    "docker_sd_configs",
    "dockerswarm_sd_configs",
    "ec2_sd_configs",
    "eureka_sd_configs",
    "gce_sd_configs",
    "hetzner_sd_configs",
    "ionos_sd_configs",
    "kuma_sd_configs",
    "lightsail_sd_configs",
    "linode_sd_configs",
    "marathon_sd_configs",
    "nerve_sd_configs",
    "nomad_sd_configs",
    "oci_sd_configs",
    "openstack_sd_configs",
    "outscale_sd_configs",
    "ovhcloud_sd_configs",
    "puppetdb_sd_configs",
    "scaleway_sd_configs",
    "serverset_sd_configs",
    "stackit_sd_configs",
    "triton_sd_configs",
    "uyuni_sd_configs",
    "vultr_sd_configs",
];

/// Authentication schemes Prometheus has and Cairn does not implement.
const UNSUPPORTED_AUTH: [&str; 4] = ["oauth2", "sigv4", "azuread", "google_iam"];

/// The keys of prometheus/common's HTTP client settings, written inline.
const HTTP_CLIENT_KEYS: [&str; 12] = [
    "basic_auth",
    "authorization",
    "bearer_token",
    "bearer_token_file",
    "tls_config",
    "follow_redirects",
    "enable_http2",
    "proxy_url",
    "no_proxy",
    "proxy_from_environment",
    "proxy_connect_header",
    "http_headers",
];

const DISCOVERY_KEYS: [&str; 5] = [
    "static_configs",
    "file_sd_configs",
    "http_sd_configs",
    "dns_sd_configs",
    "kubernetes_sd_configs",
];

pub(crate) fn decode_config(yaml: &str) -> Result<Config, ConfigError> {
    let root = parse_yaml(yaml)?;
    check_label_filters(&root, "")?;
    let mut config = Config::default();
    for (key, value) in top_mapping(root, "")? {
        let key = key_name(&key, "")?;
        match key.as_str() {
            "global" => {
                if let Value::Mapping(m) = &value
                    && is_empty_list(m.get("scrape_protocols"))
                {
                    return Err(ConfigError::invalid(
                        "global",
                        "scrape_protocols cannot be empty for global config",
                    ));
                }
                config.global = decode_or_default::<GlobalConfig>(value, "global")?
            }
            "rule_files" => config.rule_files = decode_or_default(value, "rule_files")?,
            "scrape_config_files" => config.scrape_config_files = decode_or_default(value, "scrape_config_files")?,
            "scrape_configs" => config.scrape_configs = decode_scrape_configs(value, "")?,
            "alerting" => config.alerting = decode_alerting(value)?,
            "remote_write" => {
                for (i, item) in sequence(value, "remote_write")?.into_iter().enumerate() {
                    config
                        .remote_write
                        .push(decode_remote_write(item, &format!("remote_write[{i}]"))?);
                }
            }
            k if UNSUPPORTED_TOP_LEVEL.contains(&k) => return Err(unsupported("", k)),
            other => return Err(unknown_field("", other)),
        }
    }
    Ok(config)
}

/// Reads `scrape_configs` entries; `context` names the file they come from, if not the main one.
fn decode_scrape_configs(value: Value, context: &str) -> Result<Vec<ScrapeConfig>, ConfigError> {
    let list_context = join_context(context, "scrape_configs");
    let mut out = Vec::new();
    for (i, item) in sequence(value, &list_context)?.into_iter().enumerate() {
        let mut item_context = format!("{list_context}[{i}]");
        if let Value::Mapping(m) = &item
            && let Some(Value::String(job)) = m.get("job_name")
        {
            item_context = format!("{item_context} (job {job:?})");
        }
        if item.is_null() {
            return Err(ConfigError::invalid(
                &item_context,
                "empty or null scrape config section",
            ));
        }
        let mut parts = split_inline(item, &item_context)?;
        if is_empty_list(parts.own.get("scrape_protocols")) {
            let job = parts.own.get("job_name").and_then(Value::as_str).unwrap_or_default();
            return Err(ConfigError::invalid(
                &item_context,
                format!("scrape_protocols cannot be empty for scrape config with job name {job:?}"),
            ));
        }
        let mut scrape: ScrapeConfig = decode(Value::Mapping(parts.own), &item_context)?;
        scrape.http_client = decode(Value::Mapping(parts.http_client), &item_context)?;
        scrape.service_discovery = decode_discovery(&mut parts.discovery, &item_context)?;
        out.push(scrape);
    }
    Ok(out)
}

fn decode_alerting(value: Value) -> Result<AlertingConfig, ConfigError> {
    let mut alerting = AlertingConfig::default();
    if value.is_null() {
        return Ok(alerting);
    }
    let mut mapping = top_mapping(value, "alerting")?;
    let managers = mapping.remove("alertmanagers");
    alerting = decode(Value::Mapping(mapping), "alerting")?;
    if let Some(managers) = managers {
        for (i, item) in sequence(managers, "alerting.alertmanagers")?.into_iter().enumerate() {
            let context = format!("alerting.alertmanagers[{i}]");
            let mut parts = split_inline(item, &context)?;
            let mut am: AlertmanagerConfig = decode(Value::Mapping(parts.own), &context)?;
            am.http_client = decode(Value::Mapping(parts.http_client), &context)?;
            am.service_discovery = decode_discovery(&mut parts.discovery, &context)?;
            alerting.alertmanagers.push(am);
        }
    }
    Ok(alerting)
}

fn decode_remote_write(value: Value, context: &str) -> Result<RemoteWriteConfig, ConfigError> {
    if value.is_null() {
        return Err(ConfigError::invalid(
            context,
            "empty or null remote write config section",
        ));
    }
    let parts = split_inline(value, context)?;
    if let Some(key) = parts.discovery.keys().next() {
        return Err(unknown_field(context, &key_name(key, context)?));
    }
    let explicit_http2 = parts.http_client.contains_key("enable_http2");
    let mut rw: RemoteWriteConfig = decode(Value::Mapping(parts.own), context)?;
    rw.http_client = decode(Value::Mapping(parts.http_client), context)?;
    // Remote write's client leaves HTTP/2 off unless asked.
    if !explicit_http2 {
        rw.http_client.enable_http2 = false;
    }
    Ok(rw)
}

fn decode_discovery(discovery: &mut Mapping, context: &str) -> Result<ServiceDiscoveryConfigs, ConfigError> {
    let mut out = ServiceDiscoveryConfigs::default();
    if let Some(v) = discovery.remove("static_configs") {
        out.static_configs = decode_or_default(v, &join_context(context, "static_configs"))?;
    }
    if let Some(v) = discovery.remove("file_sd_configs") {
        out.file_sd_configs = decode_or_default(v, &join_context(context, "file_sd_configs"))?;
    }
    if let Some(v) = discovery.remove("dns_sd_configs") {
        let list_context = join_context(context, "dns_sd_configs");
        for (i, item) in sequence(v, &list_context)?.into_iter().enumerate() {
            let item_context = format!("{list_context}[{i}]");
            if item.is_null() {
                return Err(ConfigError::invalid(
                    &item_context,
                    "empty or null section in dns_sd_configs",
                ));
            }
            out.dns_sd_configs.push(decode(item, &item_context)?);
        }
    }
    if let Some(v) = discovery.remove("http_sd_configs") {
        let list_context = join_context(context, "http_sd_configs");
        for (i, item) in sequence(v, &list_context)?.into_iter().enumerate() {
            let item_context = format!("{list_context}[{i}]");
            let parts = split_inline(item, &item_context)?;
            if let Some(key) = parts.discovery.keys().next() {
                return Err(unknown_field(&item_context, &key_name(key, &item_context)?));
            }
            let mut http_sd: HttpSdConfig = decode(Value::Mapping(parts.own), &item_context)?;
            http_sd.http_client = decode(Value::Mapping(parts.http_client), &item_context)?;
            out.http_sd_configs.push(http_sd);
        }
    }
    if let Some(v) = discovery.remove("kubernetes_sd_configs") {
        let list_context = join_context(context, "kubernetes_sd_configs");
        for (i, item) in sequence(v, &list_context)?.into_iter().enumerate() {
            let item_context = format!("{list_context}[{i}]");
            let parts = split_inline(item, &item_context)?;
            if let Some(key) = parts.discovery.keys().next() {
                return Err(unknown_field(&item_context, &key_name(key, &item_context)?));
            }
            let mut k8s: KubernetesSdConfig = decode(Value::Mapping(parts.own), &item_context)?;
            k8s.http_client = decode(Value::Mapping(parts.http_client), &item_context)?;
            if let Some(setting) = k8s.unsupported_setting() {
                return Err(unsupported(&item_context, setting));
            }
            out.kubernetes_sd_configs.push(k8s);
        }
    }
    Ok(out)
}

/// A mapping's keys sorted into the HTTP client's, service discovery's and the section's own.
struct InlineParts {
    own: Mapping,
    http_client: Mapping,
    discovery: Mapping,
}

fn split_inline(value: Value, context: &str) -> Result<InlineParts, ConfigError> {
    let mut parts = InlineParts {
        own: Mapping::new(),
        http_client: Mapping::new(),
        discovery: Mapping::new(),
    };
    for (key, v) in top_mapping(value, context)? {
        let name = key_name(&key, context)?;
        if UNSUPPORTED_DISCOVERY.contains(&name.as_str()) || UNSUPPORTED_AUTH.contains(&name.as_str()) {
            return Err(unsupported(context, &name));
        }
        if HTTP_CLIENT_KEYS.contains(&name.as_str()) {
            parts.http_client.insert(key, v);
        } else if DISCOVERY_KEYS.contains(&name.as_str()) {
            parts.discovery.insert(key, v);
        } else {
            parts.own.insert(key, v);
        }
    }
    Ok(parts)
}

/// The scrape configurations of `config` and of its `scrape_config_files`.
pub(crate) fn all_scrape_configs(config: &Config) -> Result<Vec<ScrapeConfig>, ConfigError> {
    let mut all = config.scrape_configs.clone();
    let mut origin: std::collections::HashMap<String, String> = all
        .iter()
        .map(|s| (s.job_name.clone(), "main config file".to_string()))
        .collect();
    for pattern in &config.scrape_config_files {
        for path in crate::validate::glob(pattern).map_err(|e| ConfigError::invalid("scrape_config_files", e))? {
            let in_file = |error: ConfigError| ConfigError::InFile {
                path: path.clone(),
                error: Box::new(error),
            };
            let yaml = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                path: path.clone(),
                source,
            })?;
            let root = parse_yaml(&yaml).map_err(in_file)?;
            let mut scrape_configs = Vec::new();
            for (key, value) in top_mapping(root, "").map_err(in_file)? {
                match key_name(&key, "").map_err(in_file)?.as_str() {
                    "scrape_configs" => scrape_configs = decode_scrape_configs(value, "").map_err(in_file)?,
                    other => return Err(in_file(unknown_field("", other))),
                }
            }
            let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
            for (i, mut scrape) in scrape_configs.into_iter().enumerate() {
                let context = format!("scrape_configs[{i}] (job {:?})", scrape.job_name);
                crate::validate::validate_scrape_config(&mut scrape, &config.global, &context).map_err(in_file)?;
                if let Some(first) = origin.get(&scrape.job_name) {
                    return Err(in_file(ConfigError::invalid(
                        "",
                        format!(
                            "found multiple scrape configs with job name {:?}, first found in {first}",
                            scrape.job_name
                        ),
                    )));
                }
                origin.insert(scrape.job_name.clone(), format!("{:?}", path.display().to_string()));
                scrape.set_directory(&dir);
                all.push(scrape);
            }
        }
    }
    Ok(all)
}

/// The document as a value, with `<<: *anchor` merge keys applied as Go's YAML decoder does.
fn parse_yaml(yaml: &str) -> Result<Value, ConfigError> {
    let mut root: Value = serde_yaml_ng::from_str(yaml).map_err(|e| ConfigError::Syntax(e.to_string()))?;
    root.apply_merge().map_err(|e| ConfigError::Syntax(e.to_string()))?;
    Ok(root)
}

/// `labeldrop` and `labelkeep` rules may not name `source_labels`, even as
/// `[]`; decoding cannot tell `[]` from leaving the key out, so look first.
fn check_label_filters(value: &Value, context: &str) -> Result<(), ConfigError> {
    match value {
        Value::Mapping(m) => {
            for (key, v) in m {
                let name = key.as_str().unwrap_or_default();
                let inner = join_context(context, name);
                if let (true, Value::Sequence(rules)) = (name.ends_with("relabel_configs"), v) {
                    for (i, rule) in rules.iter().enumerate() {
                        let action = rule
                            .get("action")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_lowercase();
                        let names_sources = rule.get("source_labels").is_some_and(|s| !s.is_null());
                        if names_sources && (action == "labeldrop" || action == "labelkeep") {
                            return Err(ConfigError::invalid(
                                &format!("{inner}[{i}]"),
                                format!("{action} action requires only 'regex', and no other fields"),
                            ));
                        }
                    }
                } else {
                    check_label_filters(v, &inner)?;
                }
            }
            Ok(())
        }
        Value::Sequence(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_label_filters(v, &format!("{context}[{i}]"))),
        _ => Ok(()),
    }
}

/// Whether a key was given as `[]`: Prometheus tells that from leaving it out.
fn is_empty_list(value: Option<&Value>) -> bool {
    matches!(value, Some(Value::Sequence(s)) if s.is_empty())
}

fn top_mapping(value: Value, context: &str) -> Result<Mapping, ConfigError> {
    match value {
        Value::Null => Ok(Mapping::new()),
        Value::Mapping(m) => Ok(m),
        Value::Tagged(t) => top_mapping(t.value, context),
        other => Err(ConfigError::invalid(
            context,
            format!("expected a mapping, found {}", kind_of(&other)),
        )),
    }
}

fn sequence(value: Value, context: &str) -> Result<Vec<Value>, ConfigError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Sequence(s) => Ok(s),
        other => Err(ConfigError::invalid(
            context,
            format!("expected a list, found {}", kind_of(&other)),
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn key_name(key: &Value, context: &str) -> Result<String, ConfigError> {
    match key {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(ConfigError::invalid(context, "mapping keys must be strings")),
    }
}

fn join_context(context: &str, key: &str) -> String {
    if context.is_empty() {
        key.to_string()
    } else {
        format!("{context}: {key}")
    }
}

fn unsupported(context: &str, key: &str) -> ConfigError {
    ConfigError::Unsupported {
        context: context.to_string(),
        key: key.to_string(),
    }
}

fn unknown_field(context: &str, key: &str) -> ConfigError {
    ConfigError::invalid(context, format!("unknown field {key:?}"))
}

fn decode_or_default<T: DeserializeOwned + Default>(value: Value, context: &str) -> Result<T, ConfigError> {
    if value.is_null() {
        return Ok(T::default());
    }
    decode(value, context)
}

/// Deserializes one section, turning serde's messages into ours.
fn decode<T: DeserializeOwned>(value: Value, context: &str) -> Result<T, ConfigError> {
    // Decoding from text rather than from the value makes serde name the
    // path of a wrongly typed key (`queue_config.capacity: invalid type ...`).
    let text = serde_yaml_ng::to_string(&value).map_err(|e| ConfigError::invalid(context, e.to_string()))?;
    let original = value;
    serde_yaml_ng::from_str(&text).map_err(|e| {
        let message = without_location(&e.to_string());
        let Some(key) = unknown_key(&message) else {
            return ConfigError::invalid(context, message);
        };
        // Say which nested mapping holds the unknown key, e.g. `tls_config`.
        let where_ = key_path(&original, key).unwrap_or_default();
        let context = if where_.is_empty() {
            context.to_string()
        } else if where_.starts_with('[') {
            format!("{context}{where_}")
        } else {
            join_context(context, &where_)
        };
        ConfigError::invalid(&context, format!("unknown field {key:?}"))
    })
}

/// serde's message without ` at line L column C`, which would point into
/// the re-serialized section rather than the file.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) if message[i..].contains(" column ") => message[..i].to_string(),
        _ => message.to_string(),
    }
}

/// The key of serde's ``unknown field `x`, expected one of ...``.
fn unknown_key(message: &str) -> Option<&str> {
    let rest = &message[message.find("unknown field `")? + "unknown field `".len()..];
    Some(&rest[..rest.find('`')?])
}

/// Where in `value` a mapping has the key `key`: `""` for `value` itself,
/// else a path such as `tls_config` or `relabel_configs[2]`.
fn key_path(value: &Value, key: &str) -> Option<String> {
    match value {
        Value::Mapping(m) => {
            if m.contains_key(key) {
                return Some(String::new());
            }
            m.iter().find_map(|(k, v)| {
                let inner = key_path(v, key)?;
                let name = key_name(k, "").ok()?;
                Some(if inner.is_empty() || inner.starts_with('[') {
                    format!("{name}{inner}")
                } else {
                    format!("{name}.{inner}")
                })
            })
        }
        Value::Sequence(items) => items.iter().enumerate().find_map(|(i, v)| {
            let inner = key_path(v, key)?;
            Some(if inner.is_empty() || inner.starts_with('[') {
                format!("[{i}]{inner}")
            } else {
                format!("[{i}].{inner}")
            })
        }),
        Value::Tagged(t) => key_path(&t.value, key),
        _ => None,
    }
}
