//! A job's settings and discovery from Cairn's model of `prometheus.yml`.

use std::sync::Arc;

use cairn_config::{Config, HttpClientConfig, NameValidationScheme, ScrapeConfig};
use cairn_protocols::exposition::{DEFAULT_ESCAPING_SCHEME, ScrapeFormat};

use crate::discovery::dns::DnsQuery;
use crate::discovery::kubernetes::{Attach, Connection, KubernetesSd, Role, Selector};
use crate::discovery::{LabelSet, SdConfig, TargetGroup};
use crate::settings::{
    Authorization, BasicAuth, HttpSettings, JobSettings, PemSource, Relabeling, Secret, TlsSettings,
};

fn secret(inline: &str, file: &str) -> Secret {
    if file.is_empty() {
        Secret::Inline(inline.to_string())
    } else {
        Secret::File(file.into())
    }
}

fn pem(inline: &str, file: &str) -> Option<PemSource> {
    match (inline.is_empty(), file.is_empty()) {
        (false, _) => Some(PemSource::Inline(inline.to_string())),
        (true, false) => Some(PemSource::File(file.into())),
        (true, true) => None,
    }
}

/// The HTTP client settings of a scrape job, an HTTP SD or an Alertmanager.
pub fn http_settings(c: &HttpClientConfig) -> HttpSettings {
    let basic_auth = c.basic_auth.as_ref().map(|b| BasicAuth {
        username: secret(&b.username, &b.username_file),
        password: Some(secret(b.password.expose(), &b.password_file)),
    });
    let authorization = match &c.authorization {
        Some(a) => Some(Authorization {
            kind: if a.auth_type.is_empty() {
                "Bearer".into()
            } else {
                a.auth_type.clone()
            },
            credentials: Some(secret(a.credentials.expose(), &a.credentials_file)),
        }),
        None if !c.bearer_token.is_empty() || !c.bearer_token_file.is_empty() => Some(Authorization {
            kind: "Bearer".into(),
            credentials: Some(secret(c.bearer_token.expose(), &c.bearer_token_file)),
        }),
        None => None,
    };
    let t = &c.tls_config;
    let tls = TlsSettings {
        ca: pem(&t.ca, &t.ca_file),
        cert: pem(&t.cert, &t.cert_file),
        key: pem(t.key.expose(), &t.key_file),
        server_name: (!t.server_name.is_empty()).then(|| t.server_name.clone()),
        insecure_skip_verify: t.insecure_skip_verify,
        min_version: t.min_version.map(tls_version),
        max_version: t.max_version.map(tls_version),
    };
    let headers = c
        .http_headers
        .iter()
        .map(|(name, h)| {
            let mut values: Vec<Secret> = h.values.iter().map(|v| Secret::Inline(v.clone())).collect();
            values.extend(h.secrets.iter().map(|s| Secret::Inline(s.expose().to_string())));
            values.extend(h.files.iter().map(|f| Secret::File(f.into())));
            (name.clone(), values)
        })
        .collect();
    HttpSettings {
        basic_auth,
        authorization,
        tls,
        follow_redirects: c.follow_redirects,
        proxy_url: c.proxy_url.clone(),
        no_proxy: c.no_proxy.clone(),
        proxy_from_environment: c.proxy_from_environment,
        headers,
    }
}

fn tls_version(v: cairn_config::TlsVersion) -> (u8, u8) {
    match v {
        cairn_config::TlsVersion::Tls10 => (1, 0),
        cairn_config::TlsVersion::Tls11 => (1, 1),
        cairn_config::TlsVersion::Tls12 => (1, 2),
        cairn_config::TlsVersion::Tls13 => (1, 3),
    }
}

fn label_set(labels: &cairn_model::Labels) -> LabelSet {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// The service discovery of a job (or an Alertmanager set): its static
/// groups as one mechanism, then each file, HTTP and DNS SD.
pub fn sd_configs(sd: &cairn_config::ServiceDiscoveryConfigs) -> Vec<SdConfig> {
    let mut out = Vec::new();
    if !sd.static_configs.is_empty() {
        out.push(SdConfig::Static(
            sd.static_configs
                .iter()
                .map(|s| TargetGroup::from_addresses("", s.targets.iter().cloned(), label_set(&s.labels)))
                .collect(),
        ));
    }
    for f in &sd.file_sd_configs {
        out.push(SdConfig::File {
            files: f.files.clone(),
            refresh_interval: f.refresh_interval.as_std(),
        });
    }
    for h in &sd.http_sd_configs {
        out.push(SdConfig::Http {
            url: h.url.clone(),
            refresh_interval: h.refresh_interval.as_std(),
            http: Box::new(http_settings(&h.http_client)),
        });
    }
    for d in &sd.dns_sd_configs {
        // Loading checked the type, so the fallback is never taken.
        let record_type = d.parsed_type().unwrap_or(cairn_config::DnsRecordType::Srv);
        out.push(SdConfig::Dns {
            query: DnsQuery {
                names: d.names.clone(),
                record_type,
                port: d.port,
            },
            refresh_interval: d.refresh_interval.as_std(),
        });
    }
    for k in &sd.kubernetes_sd_configs {
        out.push(SdConfig::Kubernetes(Box::new(kubernetes_sd(k))));
    }
    out
}

fn kubernetes_sd(k: &cairn_config::KubernetesSdConfig) -> KubernetesSd {
    // Loading checked the roles, so the fallbacks are never taken.
    let role = |name: &str| Role::parse(name).unwrap_or(Role::Pod);
    let connection = match (&k.api_server, k.kubeconfig_file.is_empty()) {
        (Some(url), _) => Connection::ApiServer {
            url: url.clone(),
            http: Box::new(http_settings(&k.http_client)),
        },
        (None, false) => Connection::KubeConfig(k.kubeconfig_file.clone().into()),
        (None, true) => Connection::InCluster,
    };
    KubernetesSd {
        role: role(&k.role),
        connection,
        namespaces: k.namespaces.names.clone(),
        own_namespace: k.namespaces.own_namespace,
        selectors: k
            .selectors
            .iter()
            .map(|s| {
                (
                    role(&s.role),
                    Selector {
                        label: s.label.clone(),
                        field: s.field.clone(),
                    },
                )
            })
            .collect(),
        attach: Attach {
            node: k.attach_metadata.node,
            namespace: k.attach_metadata.namespace,
        },
    }
}

fn format_of(p: cairn_config::ScrapeProtocol) -> Result<ScrapeFormat, String> {
    ScrapeFormat::from_config_name(p.as_str()).ok_or_else(|| format!("unknown scrape protocol {:?}", p.as_str()))
}

impl JobSettings {
    /// The settings of a loaded (validated, defaults filled) scrape config.
    pub fn from_config(c: &ScrapeConfig) -> Result<Self, String> {
        let protocols = c
            .scrape_protocols
            .iter()
            .map(|p| format_of(*p))
            .collect::<Result<Vec<_>, _>>()?;
        let escaping = if c.metric_name_escaping_scheme.is_empty() {
            DEFAULT_ESCAPING_SCHEME
        } else {
            c.metric_name_escaping_scheme.as_str()
        };
        let relabel = if c.relabel_configs.is_empty() {
            Relabeling::none()
        } else {
            let rules = c.relabel_configs.clone();
            Relabeling::new(move |l| cairn_config::relabel::process(l, &rules))
        };
        let metric_relabel = if c.metric_relabel_configs.is_empty() {
            Relabeling::none()
        } else {
            let rules = c.metric_relabel_configs.clone();
            Relabeling::new(move |l| cairn_config::relabel::process(l, &rules))
        };
        let usize_of = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Ok(Self {
            job_name: c.job_name.clone(),
            scrape_interval: c.scrape_interval.as_std(),
            scrape_timeout: c.scrape_timeout.as_std(),
            metrics_path: c.metrics_path.clone(),
            scheme: c.scheme.clone(),
            params: c.params.clone(),
            honor_labels: c.honor_labels,
            honor_timestamps: c.honor_timestamps,
            track_timestamps_staleness: c.track_timestamps_staleness,
            sample_limit: usize_of(c.sample_limit),
            target_limit: usize_of(c.target_limit),
            label_limit: usize_of(c.label_limit),
            label_name_length_limit: usize_of(c.label_name_length_limit),
            label_value_length_limit: usize_of(c.label_value_length_limit),
            body_size_limit: c.body_size_limit.as_bytes(),
            keep_dropped_targets: usize_of(c.keep_dropped_targets),
            accept: ScrapeFormat::accept_header_with_escaping(&protocols, escaping),
            scrape_protocols: protocols,
            fallback_protocol: c.fallback_scrape_protocol.map(format_of).transpose()?,
            legacy_name_validation: c.name_validation() == NameValidationScheme::Legacy,
            enable_compression: c.enable_compression,
            native_histogram_bucket_limit: usize_of(c.native_histogram_bucket_limit),
            native_histogram_max_schema: crate::append::schema_for_bucket_factor(c.native_histogram_min_bucket_factor),
            extra_scrape_metrics: c.extra_scrape_metrics_enabled(),
            scrape_native_histograms: c.scrape_native_histograms_enabled(),
            always_scrape_classic_histograms: c.always_scrape_classic_histograms_enabled(),
            convert_classic_histograms_to_nhcb: c.convert_classic_histograms_to_nhcb_enabled(),
            relabel,
            metric_relabel,
            http: http_settings(&c.http_client),
            discovery: sd_configs(&c.service_discovery),
            source: Some(Arc::new(c.clone())),
            fingerprint: String::new(),
            cache_fingerprint: String::new(),
        })
    }
}

/// Every scrape job of a configuration (`scrape_config_files` included).
pub fn jobs_of(config: &Config) -> Result<Vec<JobSettings>, String> {
    let configs = config.all_scrape_configs().map_err(|e| e.to_string())?;
    configs.iter().map(JobSettings::from_config).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_settings_carry_headers_and_credentials() {
        let yaml = "scrape_configs:\n  - job_name: j\n    authorization:\n      credentials: tok\n    http_headers:\n      X-Extra:\n        values: [one]\n    static_configs: [{targets: ['a:1'], labels: {x: y}}]\n";
        let config = Config::parse(yaml, std::path::Path::new("/")).unwrap();
        let jobs = jobs_of(&config).unwrap();
        let http = &jobs[0].http;
        assert_eq!(
            http.headers,
            vec![("X-Extra".to_string(), vec![Secret::Inline("one".into())])]
        );
        let auth = http.authorization.as_ref().unwrap();
        assert_eq!(
            (auth.kind.as_str(), auth.credentials.clone()),
            ("Bearer", Some(Secret::Inline("tok".into())))
        );
        let SdConfig::Static(groups) = &jobs[0].discovery[0] else {
            panic!("static first")
        };
        assert_eq!(groups[0].targets[0]["__address__"], "a:1");
        assert_eq!(groups[0].labels["x"], "y");
        assert_eq!(jobs[0].scrape_interval, std::time::Duration::from_secs(60));
    }
}
