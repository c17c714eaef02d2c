//! The HTTP client of a scrape job or an HTTP SD: TLS, redirects, proxy, and
//! the credentials added to each request (files re-read every time).

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use base64::Engine;

use crate::http1::DirectClient;
use crate::settings::{HttpSettings, TlsSettings};

/// Builds the client for `settings`. Timeouts are per request, not here.
pub fn build_client(settings: &HttpSettings) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .redirect(if settings.follow_redirects {
            reqwest::redirect::Policy::limited(10)
        } else {
            reqwest::redirect::Policy::none()
        })
        .pool_max_idle_per_host(2);
    if let Some(proxy) = &settings.proxy_url {
        let proxy = reqwest::Proxy::all(proxy)
            .map_err(|e| format!("invalid proxy_url: {e}"))?
            .no_proxy(reqwest::NoProxy::from_string(&settings.no_proxy));
        builder = builder.proxy(proxy);
    } else if !settings.proxy_from_environment {
        builder = builder.no_proxy();
    }
    if settings.tls != TlsSettings::default() {
        builder = builder.tls_backend_preconfigured(tls_config(&settings.tls)?);
    }
    builder.build().map_err(|e| format!("building the HTTP client: {e}"))
}

/// Adds the configured headers and `basic_auth` or `authorization` to a
/// request, reading secret files now.
pub fn with_credentials(
    mut req: reqwest::RequestBuilder,
    settings: &HttpSettings,
) -> Result<reqwest::RequestBuilder, String> {
    for (name, value) in credential_headers(settings)? {
        req = req.header(name, value);
    }
    Ok(req)
}

/// The configured headers, then `Authorization` from `basic_auth` or
/// `authorization`, reading secret files now.
pub fn credential_headers(settings: &HttpSettings) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (name, values) in &settings.headers {
        for v in values {
            let v = v.read().map_err(|e| format!("unable to read header {name:?}: {e}"))?;
            out.push((name.clone(), v));
        }
    }
    if let Some(auth) = &settings.basic_auth {
        let user = auth
            .username
            .read()
            .map_err(|e| format!("unable to read basic auth username: {e}"))?;
        let password = match &auth.password {
            Some(p) => p
                .read()
                .map_err(|e| format!("unable to read basic auth password file: {e}"))?,
            None => String::new(),
        };
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        out.push(("Authorization".into(), format!("Basic {token}")));
    } else if let Some(auth) = &settings.authorization {
        let credentials = match &auth.credentials {
            Some(c) => c
                .read()
                .map_err(|e| format!("unable to read authorization credentials: {e}"))?,
            None => String::new(),
        };
        out.push(("Authorization".into(), format!("{} {}", auth.kind, credentials)));
    }
    Ok(out)
}

/// How a job's scrape loops make their requests: each over a connection of
/// its own, or through reqwest's pool where a proxy is configured (which
/// the loops' own client does not speak).
#[derive(Clone)]
pub(crate) enum ScrapeClient {
    Direct(Arc<DirectClient>),
    Pooled(reqwest::Client),
}

pub(crate) fn scrape_client(settings: &HttpSettings) -> Result<ScrapeClient, String> {
    if settings.proxy_url.is_some() || settings.proxy_from_environment {
        return build_client(settings).map(ScrapeClient::Pooled);
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = tls_config(&settings.tls)?;
    Ok(ScrapeClient::Direct(Arc::new(DirectClient::new(
        tls,
        settings.follow_redirects,
    ))))
}

pub(crate) fn tls_config(tls: &TlsSettings) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    match &tls.ca {
        Some(ca) => {
            let pem = ca.read().map_err(|e| format!("unable to read CA cert: {e}"))?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("unable to parse CA cert: {e}"))?;
                roots.add(cert).map_err(|e| format!("unable to use CA cert: {e}"))?;
            }
            if roots.is_empty() {
                return Err("unable to use specified CA cert: no certificate found".into());
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        Arc::new(AcceptAnyCertificate(provider.clone()))
    } else {
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("building the certificate verifier: {e}"))?;
        match &tls.server_name {
            Some(name) => {
                let name = ServerName::try_from(name.clone()).map_err(|e| format!("invalid server_name: {e}"))?;
                Arc::new(VerifyAsName { inner: webpki, name })
            }
            None => webpki,
        }
    };
    let versions: Vec<&'static rustls::SupportedProtocolVersion> =
        [((1, 2), &rustls::version::TLS12), ((1, 3), &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| tls.min_version.is_none_or(|min| *v >= min) && tls.max_version.is_none_or(|max| *v <= max))
            .map(|(_, p)| p)
            .collect();
    if versions.is_empty() {
        return Err("no TLS version between min_version and max_version is supported (TLS 1.2 and 1.3 are)".into());
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let cert_pem = cert.read().map_err(|e| format!("unable to read client cert: {e}"))?;
            let key_pem = key.read().map_err(|e| format!("unable to read client key: {e}"))?;
            let certs = CertificateDer::pem_slice_iter(&cert_pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("unable to parse client cert: {e}"))?;
            let key =
                PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| format!("unable to parse client key: {e}"))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("unable to use client cert: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("client cert and key must both be configured".into()),
    };
    Ok(config)
}

/// Checks the server's certificate against `server_name` rather than the URL's host.
#[derive(Debug)]
struct VerifyAsName {
    inner: Arc<WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for VerifyAsName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `insecure_skip_verify`: any certificate is accepted, but the handshake's
/// signatures are still checked so the session keys are the server's.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
