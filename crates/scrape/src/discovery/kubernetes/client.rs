//! Where the API server is and how to talk to it: an explicit `api_server`
//! with the HTTP client settings, a kubeconfig file, or the pod's service
//! account; and the two requests discovery makes, LIST and WATCH.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

use crate::client::{build_client, with_credentials};
use crate::settings::{Authorization, BasicAuth, HttpSettings, PemSource, Secret};

/// How a `kubernetes_sd_configs` entry reaches its API server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connection {
    ApiServer {
        url: String,
        http: Box<HttpSettings>,
    },
    KubeConfig(PathBuf),
    /// `KUBERNETES_SERVICE_HOST`/`_PORT` and the service account's token and CA.
    InCluster,
}

/// An API server's base URL and the client settings for it.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub base: String,
    pub http: HttpSettings,
}

impl Connection {
    /// Resolves the connection now (reading the kubeconfig or the cluster's
    /// environment); the service account's files live in `service_account`.
    pub(super) fn resolve(&self, service_account: &Path) -> Result<Target, String> {
        match self {
            Connection::ApiServer { url, http } => Ok(Target {
                base: url.clone(),
                http: (**http).clone(),
            }),
            Connection::KubeConfig(path) => from_kubeconfig(path),
            Connection::InCluster => in_cluster(service_account, |name| std::env::var(name).ok()),
        }
    }
}

fn in_cluster(service_account: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Target, String> {
    let (Some(host), Some(port)) = (
        env("KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty()),
        env("KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty()),
    ) else {
        return Err(
            "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined"
                .into(),
        );
    };
    let token = service_account.join("token");
    std::fs::metadata(&token).map_err(|e| format!("open {}: {e}", token.display()))?;
    let mut http = HttpSettings {
        authorization: Some(Authorization {
            kind: "Bearer".into(),
            credentials: Some(Secret::File(token)),
        }),
        ..HttpSettings::default()
    };
    let ca = service_account.join("ca.crt");
    if ca.exists() {
        http.tls.ca = Some(PemSource::File(ca));
    }
    Ok(Target {
        base: format!("https://{}", super::labels::join_host_port(&host, port)),
        http,
    })
}

/// The pod's namespace, for `namespaces.own_namespace`.
pub(super) fn own_namespace(service_account: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(service_account.join("namespace"))
        .map_err(|e| format!("could not determine the pod's namespace: {e}"))?;
    if text.is_empty() {
        return Err("could not read own namespace name (empty file)".into());
    }
    Ok(text)
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct KubeConfig {
    clusters: Vec<Named<Cluster>>,
    users: Vec<Named<User>>,
    contexts: Vec<Named<Context>>,
    current_context: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Named<T: Default> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: T,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct Cluster {
    server: String,
    certificate_authority: String,
    certificate_authority_data: String,
    insecure_skip_tls_verify: bool,
    tls_server_name: String,
    proxy_url: String,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "kebab-case")]
struct User {
    client_certificate: String,
    client_certificate_data: String,
    client_key: String,
    client_key_data: String,
    token: String,
    #[serde(rename = "tokenFile")]
    token_file: String,
    username: String,
    password: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Context {
    cluster: String,
    user: String,
}

fn from_kubeconfig(path: &Path) -> Result<Target, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let config: KubeConfig = serde_yaml_ng::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == config.current_context)
        .map(|c| &c.value)
        .ok_or_else(|| format!("context {:?} not found in {}", config.current_context, path.display()))?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .map(|c| &c.value)
        .ok_or_else(|| format!("cluster {:?} not found in {}", context.cluster, path.display()))?;
    if cluster.server.is_empty() {
        return Err(format!("no server found for cluster {:?}", context.cluster));
    }
    let default_user = User::default();
    let user = config
        .users
        .iter()
        .find(|u| u.name == context.user)
        .map_or(&default_user, |u| &u.value);
    let relative = |p: &str| -> PathBuf { dir.join(p) };
    let pem = |file: &str, data: &str| -> Result<Option<PemSource>, String> {
        if !data.is_empty() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| format!("decoding base64 data in {}: {e}", path.display()))?;
            return Ok(Some(PemSource::Inline(String::from_utf8_lossy(&bytes).into_owned())));
        }
        Ok((!file.is_empty()).then(|| PemSource::File(relative(file))))
    };
    let mut http = HttpSettings::default();
    http.tls.ca = pem(&cluster.certificate_authority, &cluster.certificate_authority_data)?;
    http.tls.insecure_skip_verify = cluster.insecure_skip_tls_verify;
    http.tls.server_name = (!cluster.tls_server_name.is_empty()).then(|| cluster.tls_server_name.clone());
    http.tls.cert = pem(&user.client_certificate, &user.client_certificate_data)?;
    http.tls.key = pem(&user.client_key, &user.client_key_data)?;
    http.proxy_url = (!cluster.proxy_url.is_empty()).then(|| cluster.proxy_url.clone());
    if !user.token.is_empty() {
        http.authorization = Some(Authorization {
            kind: "Bearer".into(),
            credentials: Some(Secret::Inline(user.token.clone())),
        });
    } else if !user.token_file.is_empty() {
        http.authorization = Some(Authorization {
            kind: "Bearer".into(),
            credentials: Some(Secret::File(relative(&user.token_file))),
        });
    } else if !user.username.is_empty() {
        http.basic_auth = Some(BasicAuth {
            username: Secret::Inline(user.username.clone()),
            password: Some(Secret::Inline(user.password.clone())),
        });
    }
    Ok(Target {
        base: cluster.server.clone(),
        http,
    })
}

/// One API server, ready for requests.
pub(super) struct ApiClient {
    base: String,
    http: HttpSettings,
    client: reqwest::Client,
}

impl ApiClient {
    pub(super) fn new(target: Target) -> Result<Self, String> {
        let client = build_client(&target.http)?;
        Ok(Self {
            base: target.base.trim_end_matches('/').to_string(),
            http: target.http,
            client,
        })
    }

    /// A GET of `path` with `query`, its status checked; the body is the caller's.
    pub(super) async fn get(
        &self,
        path: &str,
        query: &[(&str, String)],
        timeout: Option<std::time::Duration>,
    ) -> Result<reqwest::Response, String> {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.base), query)
            .map_err(|e| format!("{}{path}: {e}", self.base))?;
        let mut req = self
            .client
            .get(url)
            .header("User-Agent", crate::USER_AGENT)
            .header("Accept", "application/json");
        if let Some(t) = timeout {
            req = req.timeout(t);
        }
        let resp = with_credentials(req, &self.http)?
            .send()
            .await
            .map_err(|e| format!("{path}: {}", error_chain(&e)))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_string))
                .unwrap_or_else(|| body.chars().take(200).collect());
            return Err(format!("{path}: {}: {message}", crate::status_text(status)));
        }
        Ok(resp)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_gives_server_credentials_and_tls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        let ca = base64::engine::general_purpose::STANDARD.encode("PEM CA");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: b\ncontexts:\n- name: a\n  context: {{cluster: one, user: u1}}\n- name: b\n  context: {{cluster: two, user: u2}}\nclusters:\n- name: one\n  cluster: {{server: 'https://one:6443'}}\n- name: two\n  cluster:\n    server: https://two:6443\n    certificate-authority-data: {ca}\n    tls-server-name: kubernetes\nusers:\n- name: u1\n  user: {{token: t1}}\n- name: u2\n  user: {{tokenFile: tok, client-certificate: c.crt, client-key: c.key}}\n"
            ),
        )
        .unwrap();
        let t = from_kubeconfig(&path).unwrap();
        assert_eq!(t.base, "https://two:6443");
        assert_eq!(t.http.tls.ca, Some(PemSource::Inline("PEM CA".into())));
        assert_eq!(t.http.tls.server_name.as_deref(), Some("kubernetes"));
        assert_eq!(t.http.tls.cert, Some(PemSource::File(dir.path().join("c.crt"))));
        assert_eq!(t.http.tls.key, Some(PemSource::File(dir.path().join("c.key"))));
        assert_eq!(
            t.http.authorization.unwrap().credentials,
            Some(Secret::File(dir.path().join("tok")))
        );
        std::fs::write(&path, "current-context: x\n").unwrap();
        assert!(from_kubeconfig(&path).unwrap_err().contains("context \"x\" not found"));
        std::fs::write(&path, "[garbage").unwrap();
        assert!(from_kubeconfig(&path).is_err());
    }

    #[test]
    fn in_cluster_needs_the_environment_and_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let env = |name: &str| match name {
            "KUBERNETES_SERVICE_HOST" => Some("fd00::1".to_string()),
            "KUBERNETES_SERVICE_PORT" => Some("443".to_string()),
            _ => None,
        };
        assert!(
            in_cluster(dir.path(), |_| None)
                .unwrap_err()
                .contains("KUBERNETES_SERVICE_HOST")
        );
        assert!(in_cluster(dir.path(), env).is_err(), "no token");
        std::fs::write(dir.path().join("token"), "t").unwrap();
        std::fs::write(dir.path().join("ca.crt"), "c").unwrap();
        let t = in_cluster(dir.path(), env).unwrap();
        assert_eq!(t.base, "https://[fd00::1]:443");
        assert_eq!(t.http.tls.ca, Some(PemSource::File(dir.path().join("ca.crt"))));
        assert!(own_namespace(dir.path()).is_err());
        std::fs::write(dir.path().join("namespace"), "").unwrap();
        assert_eq!(
            own_namespace(dir.path()).unwrap_err(),
            "could not read own namespace name (empty file)"
        );
        std::fs::write(dir.path().join("namespace"), "monitoring").unwrap();
        assert_eq!(own_namespace(dir.path()).unwrap(), "monitoring");
    }
}
