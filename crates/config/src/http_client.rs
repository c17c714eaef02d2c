//! The HTTP client settings Prometheus' scrape, service discovery,
//! Alertmanager and remote write sections share (prometheus/common's `http_config`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::paths::join_dir;
use crate::secret::Secret;
use crate::serde_util::null_as_default;

/// How to connect: authentication, TLS, redirects, proxy and extra headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpClientConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Authorization>,
    /// Deprecated spelling of `authorization: {credentials: ...}`; moved
    /// there by validation.
    #[serde(skip_serializing_if = "Secret::is_empty", deserialize_with = "null_as_default")]
    pub bearer_token: Secret,
    /// Deprecated spelling of `authorization: {credentials_file: ...}`.
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub bearer_token_file: String,
    #[serde(deserialize_with = "null_as_default")]
    pub tls_config: TlsConfig,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub follow_redirects: bool,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub enable_http2: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub no_proxy: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub proxy_from_environment: bool,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "null_as_default")]
    pub proxy_connect_header: BTreeMap<String, Vec<Secret>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "null_as_default")]
    pub http_headers: BTreeMap<String, HttpHeader>,
}

impl Default for HttpClientConfig {
    fn default() -> Self {
        Self {
            basic_auth: None,
            authorization: None,
            bearer_token: Secret::default(),
            bearer_token_file: String::new(),
            tls_config: TlsConfig::default(),
            follow_redirects: true,
            enable_http2: true,
            proxy_url: None,
            no_proxy: String::new(),
            proxy_from_environment: false,
            proxy_connect_header: BTreeMap::new(),
            http_headers: BTreeMap::new(),
        }
    }
}

/// `Authorization: Basic ...` from a username and password, each given inline or in a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BasicAuth {
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub username_file: String,
    #[serde(skip_serializing_if = "Secret::is_empty", deserialize_with = "null_as_default")]
    pub password: Secret,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub password_file: String,
}

/// `Authorization: <type> <credentials>`, the credentials inline or in a file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Authorization {
    #[serde(rename = "type", deserialize_with = "null_as_default")]
    pub auth_type: String,
    #[serde(skip_serializing_if = "Secret::is_empty", deserialize_with = "null_as_default")]
    pub credentials: Secret,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub credentials_file: String,
}

/// TLS settings; PEM contents inline (`ca`, `cert`, `key`) or in files.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub ca: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub ca_file: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub cert: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub cert_file: String,
    #[serde(skip_serializing_if = "Secret::is_empty", deserialize_with = "null_as_default")]
    pub key: Secret,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub key_file: String,
    #[serde(skip_serializing_if = "String::is_empty", deserialize_with = "null_as_default")]
    pub server_name: String,
    #[serde(deserialize_with = "crate::serde_util::go_bool")]
    pub insecure_skip_verify: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_version: Option<TlsVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_version: Option<TlsVersion>,
}

/// A TLS protocol version as the configuration names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TlsVersion {
    #[serde(rename = "TLS10")]
    Tls10,
    #[serde(rename = "TLS11")]
    Tls11,
    #[serde(rename = "TLS12")]
    Tls12,
    #[serde(rename = "TLS13")]
    Tls13,
}

/// Values of one custom request header: literal, secret, or read from files.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpHeader {
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub values: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub secrets: Vec<Secret>,
    #[serde(skip_serializing_if = "Vec::is_empty", deserialize_with = "null_as_default")]
    pub files: Vec<String>,
}

/// Headers the client sets itself, which `http_headers` may not override
/// (matched case-insensitively), as in prometheus/common.
const RESERVED_HEADERS: [&str; 18] = [
    "authorization",
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
    "x-prometheus-scrape-timeout-seconds",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

impl HttpClientConfig {
    /// Defaults for remote write, whose client does not use HTTP/2 unless asked.
    pub fn remote_write_default() -> Self {
        Self {
            enable_http2: false,
            ..Self::default()
        }
    }

    /// Checks the settings as prometheus/common does, and moves the
    /// deprecated `bearer_token*` keys into `authorization`.
    pub fn validate(&mut self) -> Result<(), String> {
        let has_bearer = !self.bearer_token.is_empty() || !self.bearer_token_file.is_empty();
        if !self.bearer_token.is_empty() && !self.bearer_token_file.is_empty() {
            return Err("at most one of bearer_token & bearer_token_file must be configured".into());
        }
        if self.basic_auth.is_some() && has_bearer {
            return Err(
                "at most one of basic_auth, oauth2, bearer_token & bearer_token_file must be configured".into(),
            );
        }
        if let Some(basic) = &self.basic_auth {
            if !basic.username.is_empty() && !basic.username_file.is_empty() {
                return Err("at most one of basic_auth username & username_file must be configured".into());
            }
            if !basic.password.is_empty() && !basic.password_file.is_empty() {
                return Err("at most one of basic_auth password & password_file must be configured".into());
            }
        }
        if let Some(auth) = &mut self.authorization {
            if has_bearer {
                return Err("authorization is not compatible with bearer_token & bearer_token_file".into());
            }
            if !auth.credentials.is_empty() && !auth.credentials_file.is_empty() {
                return Err("at most one of authorization credentials & credentials_file must be configured".into());
            }
            auth.auth_type = auth.auth_type.trim().to_string();
            if auth.auth_type.is_empty() {
                auth.auth_type = "Bearer".to_string();
            }
            if auth.auth_type.eq_ignore_ascii_case("basic") {
                return Err(r#"authorization type cannot be set to "basic", use "basic_auth" instead"#.into());
            }
        }
        if self.basic_auth.is_some() && self.authorization.is_some() {
            return Err("at most one of basic_auth, oauth2 & authorization must be configured".into());
        }
        if has_bearer {
            self.authorization = Some(Authorization {
                auth_type: "Bearer".to_string(),
                credentials: std::mem::take(&mut self.bearer_token),
                credentials_file: std::mem::take(&mut self.bearer_token_file),
            });
        }
        self.tls_config.validate()?;
        if let Some(proxy) = &self.proxy_url {
            if self.proxy_from_environment {
                return Err("if proxy_from_environment is configured, proxy_url must not be configured".into());
            }
            check_url_syntax(proxy)?;
        }
        if !self.no_proxy.is_empty() && self.proxy_url.is_none() {
            return Err("if no_proxy is configured, proxy_url must also be configured".into());
        }
        if self.proxy_from_environment && !self.no_proxy.is_empty() {
            return Err("if proxy_from_environment is configured, no_proxy must not be configured".into());
        }
        if !self.proxy_connect_header.is_empty() && self.proxy_url.is_none() && !self.proxy_from_environment {
            return Err(
                "if proxy_connect_header is configured, proxy_url or proxy_from_environment must also be configured"
                    .into(),
            );
        }
        for name in self.http_headers.keys() {
            if RESERVED_HEADERS.iter().any(|r| r.eq_ignore_ascii_case(name)) {
                return Err(format!("setting header {name:?} is not allowed"));
            }
        }
        Ok(())
    }

    /// Joins relative file paths with `dir`, the configuration file's directory.
    pub fn set_directory(&mut self, dir: &std::path::Path) {
        if let Some(basic) = &mut self.basic_auth {
            join_dir(dir, &mut basic.username_file);
            join_dir(dir, &mut basic.password_file);
        }
        if let Some(auth) = &mut self.authorization {
            join_dir(dir, &mut auth.credentials_file);
        }
        join_dir(dir, &mut self.bearer_token_file);
        self.tls_config.set_directory(dir);
        for header in self.http_headers.values_mut() {
            for file in &mut header.files {
                join_dir(dir, file);
            }
        }
    }
}

impl HttpClientConfig {
    /// The `Authorization` header value to send, reading `*_file` settings
    /// now (as Prometheus does per request, so rotated secrets take effect).
    /// File contents are trimmed of surrounding whitespace.
    pub fn authorization_header(&self) -> std::io::Result<Option<String>> {
        if let Some(basic) = &self.basic_auth {
            let username = value_or_file(&basic.username, &basic.username_file)?;
            let password = value_or_file(basic.password.expose(), &basic.password_file)?;
            return Ok(Some(format!(
                "Basic {}",
                base64(format!("{username}:{password}").as_bytes())
            )));
        }
        if let Some(auth) = &self.authorization {
            let credentials = value_or_file(auth.credentials.expose(), &auth.credentials_file)?;
            let auth_type = if auth.auth_type.is_empty() {
                "Bearer"
            } else {
                &auth.auth_type
            };
            return Ok(Some(format!("{auth_type} {credentials}")));
        }
        Ok(None)
    }
}

/// The little Go's `url.Parse` refuses: control characters and malformed
/// `%` escapes (`localhost:3128` parses, with `localhost` as its scheme).
pub(crate) fn check_url_syntax(url: &str) -> Result<(), String> {
    if url.chars().any(char::is_control) {
        return Err(format!("parse {url:?}: net/url: invalid control character in URL"));
    }
    let bytes = url.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%' {
            let valid = bytes
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
            if !valid {
                let escape: String = url[i..].chars().take(3).collect();
                return Err(format!("parse {url:?}: invalid URL escape {escape:?}"));
            }
        }
    }
    Ok(())
}

fn value_or_file(value: &str, file: &str) -> std::io::Result<String> {
    if file.is_empty() {
        return Ok(value.to_string());
    }
    Ok(std::fs::read_to_string(file)?.trim().to_string())
}

/// Standard base64 with padding, for basic authentication.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl TlsConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !self.ca.is_empty() && !self.ca_file.is_empty() {
            return Err("at most one of ca and ca_file must be configured".into());
        }
        if !self.cert.is_empty() && !self.cert_file.is_empty() {
            return Err("at most one of cert and cert_file must be configured".into());
        }
        if !self.key.is_empty() && !self.key_file.is_empty() {
            return Err("at most one of key and key_file must be configured".into());
        }
        let has_cert = !self.cert.is_empty() || !self.cert_file.is_empty();
        let has_key = !self.key.is_empty() || !self.key_file.is_empty();
        if has_cert && !has_key {
            return Err(
                "exactly one of key or key_file must be configured when a client certificate is configured".into(),
            );
        }
        if has_key && !has_cert {
            return Err("exactly one of cert or cert_file must be configured when a client key is configured".into());
        }
        Ok(())
    }

    pub fn set_directory(&mut self, dir: &std::path::Path) {
        join_dir(dir, &mut self.ca_file);
        join_dir(dir, &mut self.cert_file);
        join_dir(dir, &mut self.key_file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_client_base64_matches_rfc4648() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("user:pass", "dXNlcjpwYXNz"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
    }

    #[test]
    fn http_client_authorization_header_reads_files_now() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "abc\n").unwrap();
        let mut client = HttpClientConfig {
            authorization: Some(Authorization {
                credentials_file: token.to_string_lossy().into_owned(),
                ..Authorization::default()
            }),
            ..HttpClientConfig::default()
        };
        client.validate().unwrap();
        assert_eq!(client.authorization_header().unwrap().as_deref(), Some("Bearer abc"));
        std::fs::write(&token, "rotated").unwrap();
        assert_eq!(
            client.authorization_header().unwrap().as_deref(),
            Some("Bearer rotated")
        );
        let basic = HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "user".into(),
                password: Secret::new("pass"),
                ..BasicAuth::default()
            }),
            ..HttpClientConfig::default()
        };
        assert_eq!(
            basic.authorization_header().unwrap().as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
        assert_eq!(HttpClientConfig::default().authorization_header().unwrap(), None);
    }
}
