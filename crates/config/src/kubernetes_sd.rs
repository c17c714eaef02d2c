//! `kubernetes_sd_configs`: the settings and Prometheus' checks of them,
//! with its messages.

use serde::{Deserialize, Serialize};

use crate::http_client::HttpClientConfig;
use crate::serde_util::null_as_default;

/// The kinds of object Kubernetes discovery turns into targets.
pub const KUBERNETES_ROLES: [&str; 6] = ["pod", "service", "endpoints", "endpointslice", "node", "ingress"];

/// Targets from the objects of one role watched on a Kubernetes API server.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesSdConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_server: Option<String>,
    /// One of [`KUBERNETES_ROLES`]; checked when decoded.
    #[serde(deserialize_with = "role")]
    pub role: String,
    #[serde(deserialize_with = "null_as_default")]
    pub kubeconfig_file: String,
    /// Read from the keys beside `role` (inline, as in Prometheus) by the loader.
    #[serde(skip_deserializing, flatten)]
    pub http_client: HttpClientConfig,
    #[serde(deserialize_with = "null_as_default")]
    pub namespaces: NamespaceDiscovery,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub selectors: Vec<KubernetesSelector>,
    #[serde(deserialize_with = "null_as_default")]
    pub attach_metadata: AttachMetadata,
}

/// Which namespaces are watched: the listed ones and, in a cluster, the
/// pod's own; all of them when neither is given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NamespaceDiscovery {
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub own_namespace: bool,
    #[serde(deserialize_with = "null_as_default")]
    pub names: Vec<String>,
}

/// A label and field selector the API server applies to the objects of `role`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KubernetesSelector {
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "role")]
    pub role: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub label: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub field: String,
}

/// Labels of related objects added to each target.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttachMetadata {
    /// The node's labels and annotations (roles pod, endpoints, endpointslice).
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub node: bool,
    /// The namespace's labels and annotations.
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub namespace: bool,
    /// Owner lookups Cairn does not implement; refused when set.
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub deployment: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub job: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub cronjob: bool,
}

fn role<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let role = crate::serde_util::scalar_string(deserializer)?;
    if KUBERNETES_ROLES.contains(&role.as_str()) {
        Ok(role)
    } else {
        Err(serde::de::Error::custom(format!("unknown Kubernetes SD role {role:?}")))
    }
}

/// The roles whose objects a selector may filter in a configuration of `role`.
fn allowed_selector_roles(role: &str) -> &'static [&'static str] {
    match role {
        "pod" => &["pod", "node"],
        "service" => &["service"],
        "endpointslice" => &["pod", "service", "endpointslice"],
        "endpoints" => &["pod", "service", "endpoints"],
        "node" => &["node"],
        "ingress" => &["ingress"],
        _ => &[],
    }
}

impl KubernetesSdConfig {
    /// Prometheus' checks, in its order, with its messages; the HTTP client
    /// settings are checked (and normalised) too.
    pub fn validate(&mut self) -> Result<(), String> {
        if self.role.is_empty() {
            return Err("role missing (one of: pod, service, endpoints, endpointslice, node, ingress)".into());
        }
        self.http_client.validate()?;
        let custom_client = !is_default_client(&self.http_client);
        if self.api_server.is_some() && !self.kubeconfig_file.is_empty() {
            return Err("cannot use 'kubeconfig_file' and 'api_server' simultaneously".into());
        }
        if !self.kubeconfig_file.is_empty() && custom_client {
            return Err("cannot use a custom HTTP client configuration together with 'kubeconfig_file'".into());
        }
        if self.api_server.is_none() && custom_client {
            return Err(
                "to use custom HTTP client configuration please provide the 'api_server' URL explicitly".into(),
            );
        }
        if self.api_server.is_some() && self.namespaces.own_namespace {
            return Err("cannot use 'api_server' and 'namespaces.own_namespace' simultaneously".into());
        }
        if !self.kubeconfig_file.is_empty() && self.namespaces.own_namespace {
            return Err("cannot use 'kubeconfig_file' and 'namespaces.own_namespace' simultaneously".into());
        }
        let allowed = allowed_selector_roles(&self.role);
        let mut seen: Vec<&str> = Vec::new();
        for selector in &self.selectors {
            if seen.contains(&selector.role.as_str()) {
                return Err(format!("duplicated selector role: {}", selector.role));
            }
            seen.push(&selector.role);
            if !allowed.contains(&selector.role.as_str()) {
                return Err(format!(
                    "{} role supports only {} selectors",
                    self.role,
                    allowed.join(", ")
                ));
            }
            check_field_selector(&selector.field)?;
            check_label_selector(&selector.label)?;
        }
        Ok(())
    }

    /// Settings Prometheus has and Cairn does not implement, by name.
    pub fn unsupported_setting(&self) -> Option<&'static str> {
        let a = &self.attach_metadata;
        if a.deployment {
            Some("attach_metadata.deployment")
        } else if a.job {
            Some("attach_metadata.job")
        } else if a.cronjob {
            Some("attach_metadata.cronjob")
        } else {
            None
        }
    }

    pub(crate) fn set_directory(&mut self, dir: &std::path::Path) {
        self.http_client.set_directory(dir);
        crate::paths::join_dir(dir, &mut self.kubeconfig_file);
    }
}

/// Whether the settings are prometheus/common's defaults (HTTP/2 and
/// redirects on, nothing else).
fn is_default_client(c: &HttpClientConfig) -> bool {
    *c == HttpClientConfig::default()
}

/// A field selector as the API server parses it: terms `key=value`,
/// `key==value` or `key!=value` separated by commas.
pub fn check_field_selector(selector: &str) -> Result<(), String> {
    for term in split_unescaped(selector, ',') {
        if term.is_empty() {
            continue;
        }
        let has_operator = ["!=", "==", "="].iter().any(|op| find_unescaped(&term, op).is_some());
        if !has_operator {
            return Err(format!("invalid selector: '{selector}'; can't understand '{term}'"));
        }
    }
    Ok(())
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(String::new());
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.push(c);
        }
    }
    out
}

fn find_unescaped(term: &str, op: &str) -> Option<usize> {
    let bytes = term.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if term[i..].starts_with(op) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// A label selector in the API server's grammar: requirements separated by
/// commas, each `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (v,...)`,
/// `key notin (v,...)`, `key>n` or `key<n`; keys and values as Kubernetes
/// allows them.
pub fn check_label_selector(selector: &str) -> Result<(), String> {
    let tokens = label_tokens(selector);
    let mut i = 0;
    let fail = |msg: String| Err(format!("unable to parse requirement: {msg}"));
    while i < tokens.len() {
        let mut negated = false;
        if tokens[i] == Tok::Not {
            negated = true;
            i += 1;
        }
        let Some(Tok::Word(key)) = tokens.get(i) else {
            return fail(format!("found '{}', expected: identifier", tok_text(tokens.get(i))));
        };
        check_label_key(key)?;
        i += 1;
        match tokens.get(i) {
            None | Some(Tok::Comma) => {}
            _ if negated => {
                return fail(format!(
                    "found '{}', expected: ',' or 'end of string'",
                    tok_text(tokens.get(i))
                ));
            }
            Some(Tok::Op(op)) => {
                i += 1;
                match tokens.get(i) {
                    Some(Tok::Word(value)) if op == ">" || op == "<" => {
                        if value.parse::<i64>().is_err() {
                            return fail(format!(
                                "for 'Gt', 'Lt' operators, the value must be an integer: {value:?}"
                            ));
                        }
                        i += 1;
                    }
                    Some(Tok::Word(value)) => {
                        check_label_value(value)?;
                        i += 1;
                    }
                    // `key=` selects an empty value.
                    None | Some(Tok::Comma) if op != ">" && op != "<" => {}
                    other => return fail(format!("found '{}', expected: identifier", tok_text(other))),
                }
            }
            Some(Tok::Word(w)) if w == "in" || w == "notin" => {
                i += 1;
                if tokens.get(i) != Some(&Tok::Open) {
                    return fail(format!("found '{}', expected: '('", tok_text(tokens.get(i))));
                }
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some(Tok::Word(v)) => {
                            check_label_value(v)?;
                            i += 1;
                        }
                        Some(Tok::Comma) | Some(Tok::Close) => {}
                        other => return fail(format!("found '{}', expected: ',', ')' or identifier", tok_text(other))),
                    }
                    match tokens.get(i) {
                        Some(Tok::Comma) => i += 1,
                        Some(Tok::Close) => {
                            i += 1;
                            break;
                        }
                        other => return fail(format!("found '{}', expected: ',' or ')'", tok_text(other))),
                    }
                }
            }
            other => {
                return fail(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    tok_text(other)
                ));
            }
        }
        continue_after(&tokens, &mut i)?;
    }
    Ok(())
}

/// Past the comma ending a requirement, or at the end.
fn continue_after(tokens: &[Tok], i: &mut usize) -> Result<(), String> {
    match tokens.get(*i) {
        None => Ok(()),
        Some(Tok::Comma) => {
            *i += 1;
            if *i == tokens.len() {
                return Err("found '', expected: identifier after ','".into());
            }
            Ok(())
        }
        other => Err(format!("found '{}', expected: ',' or 'end of string'", tok_text(other))),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Op(String),
    Not,
    Comma,
    Open,
    Close,
}

fn tok_text(t: Option<&Tok>) -> String {
    match t {
        None => String::new(),
        Some(Tok::Word(w)) | Some(Tok::Op(w)) => w.clone(),
        Some(Tok::Not) => "!".into(),
        Some(Tok::Comma) => ",".into(),
        Some(Tok::Open) => "(".into(),
        Some(Tok::Close) => ")".into(),
    }
}

fn label_tokens(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            ',' => {
                out.push(Tok::Comma);
                i += 1
            }
            '(' => {
                out.push(Tok::Open);
                i += 1
            }
            ')' => {
                out.push(Tok::Close);
                i += 1
            }
            '!' if chars.get(i + 1) == Some(&'=') => {
                out.push(Tok::Op("!=".into()));
                i += 2
            }
            '!' => {
                out.push(Tok::Not);
                i += 1
            }
            '=' if chars.get(i + 1) == Some(&'=') => {
                out.push(Tok::Op("==".into()));
                i += 2
            }
            '=' | '>' | '<' => {
                out.push(Tok::Op(c.to_string()));
                i += 1
            }
            _ => {
                let start = i;
                while i < chars.len() && !" \t\n\r,()!=<>".contains(chars[i]) {
                    i += 1;
                }
                out.push(Tok::Word(chars[start..i].iter().collect()));
            }
        }
    }
    out
}

/// `[prefix/]name`: a DNS subdomain prefix and a name of at most 63 characters.
fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part.len() <= 63
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            });
        if !ok {
            return Err(format!(
                "unable to parse requirement: invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain"
            ));
        }
    }
    if !is_label_name_part(name) || name.is_empty() {
        return Err(format!(
            "unable to parse requirement: invalid label key {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn check_label_value(value: &str) -> Result<(), String> {
    if !value.is_empty() && !is_label_name_part(value) {
        return Err(format!(
            "unable to parse requirement: invalid label value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn is_label_name_part(s: &str) -> bool {
    s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(yaml: &str) -> Result<(), String> {
        let mut config: KubernetesSdConfig = serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())?;
        config.validate()
    }

    #[test]
    fn kubernetes_sd_config_is_checked_as_prometheus_checks_it() {
        for role in KUBERNETES_ROLES {
            assert_eq!(check(&format!("role: {role}")), Ok(()), "{role}");
        }
        assert_eq!(
            check("namespaces: {names: [a]}"),
            Err("role missing (one of: pod, service, endpoints, endpointslice, node, ingress)".into())
        );
        assert!(
            check("role: pods")
                .unwrap_err()
                .contains("unknown Kubernetes SD role \"pods\"")
        );
        assert_eq!(
            check("role: pod\napi_server: https://k:6443\nkubeconfig_file: /k"),
            Err("cannot use 'kubeconfig_file' and 'api_server' simultaneously".into())
        );
        let mut with_client: KubernetesSdConfig = serde_yaml_ng::from_str("role: pod\nkubeconfig_file: /k").unwrap();
        with_client.http_client.tls_config.insecure_skip_verify = true;
        assert_eq!(
            with_client.validate(),
            Err("cannot use a custom HTTP client configuration together with 'kubeconfig_file'".into())
        );
        with_client.kubeconfig_file.clear();
        assert_eq!(
            with_client.validate(),
            Err("to use custom HTTP client configuration please provide the 'api_server' URL explicitly".into())
        );
        assert_eq!(
            check("role: pod\napi_server: https://k\nnamespaces: {own_namespace: true}"),
            Err("cannot use 'api_server' and 'namespaces.own_namespace' simultaneously".into())
        );
        assert_eq!(
            check("role: pod\nkubeconfig_file: /k\nnamespaces: {own_namespace: true}"),
            Err("cannot use 'kubeconfig_file' and 'namespaces.own_namespace' simultaneously".into())
        );
        assert_eq!(
            check("role: pod\nnamespaces: {own_namespace: true, names: [a]}"),
            Ok(())
        );
        assert!(check("role: pod\nnamespaces: {bogus: 1}").is_err());
        assert!(check("role: pod\nattach_metadata: {bogus: true}").is_err());
    }

    #[test]
    fn kubernetes_selectors_fit_their_role() {
        assert_eq!(
            check("role: pod\nselectors: [{role: pod, label: 'app=x'}, {role: node, field: 'metadata.name=n'}]"),
            Ok(())
        );
        assert_eq!(
            check("role: pod\nselectors: [{role: service}]"),
            Err("pod role supports only pod, node selectors".into())
        );
        assert_eq!(
            check("role: endpoints\nselectors: [{role: node}]"),
            Err("endpoints role supports only pod, service, endpoints selectors".into())
        );
        assert_eq!(
            check("role: node\nselectors: [{role: pod}]"),
            Err("node role supports only node selectors".into())
        );
        assert_eq!(
            check("role: endpointslice\nselectors: [{role: pod}, {role: pod}]"),
            Err("duplicated selector role: pod".into())
        );
        assert!(
            check("role: pod\nselectors: [{role: pods}]")
                .unwrap_err()
                .contains("unknown Kubernetes SD role")
        );
        assert_eq!(
            check("role: pod\nselectors: [{role: pod, field: 'spec.nodeName'}]"),
            Err("invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'".into())
        );
        assert!(check("role: pod\nselectors: [{role: pod, label: 'app in (a'}]").is_err());
    }

    #[test]
    fn label_selectors_parse_as_the_api_server_parses_them() {
        for ok in [
            "",
            "app",
            "!app",
            "app=x",
            "app==x",
            "app!=x",
            "app=",
            "app in (a, b)",
            "app notin (a,b),tier",
            "example.com/app=x",
            "n>3",
            "a=b, c!=d",
        ] {
            assert_eq!(check_label_selector(ok), Ok(()), "{ok:?}");
        }
        for bad in [
            "app in (a",
            "app=x y",
            "=x",
            "app=-x",
            "app>x",
            "a,",
            "app in a",
            "!app=x",
            "-a=b",
        ] {
            assert!(check_label_selector(bad).is_err(), "{bad:?}");
        }
        for ok in ["", "a=b", "a==b,c!=d", "metadata.name=x"] {
            assert_eq!(check_field_selector(ok), Ok(()), "{ok:?}");
        }
        assert!(check_field_selector("a=b,c").is_err());
    }

    #[test]
    fn kubernetes_sd_config_defaults() {
        let config: KubernetesSdConfig = serde_yaml_ng::from_str("role: node").unwrap();
        assert_eq!(config.api_server, None);
        assert!(config.namespaces.names.is_empty());
        assert!(!config.attach_metadata.node);
        assert_eq!(config.unsupported_setting(), None);
        let config: KubernetesSdConfig =
            serde_yaml_ng::from_str("role: pod\nattach_metadata: {deployment: true}").unwrap();
        assert_eq!(config.unsupported_setting(), Some("attach_metadata.deployment"));
    }
}
