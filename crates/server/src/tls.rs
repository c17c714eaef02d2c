//! HTTPS: the listener's TLS (rustls, ring's provider) from the web
//! configuration's `tls_server_config`, and in a cluster the TLS this node
//! speaks to its peers with. Handshakes run in tasks of their own, so a
//! slow or silent client never holds up the next connection.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use cairn_http::auth::TlsConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections that finished their handshake, waiting for the server.
const READY_QUEUE: usize = 128;

fn certificates(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("cannot read certificates from {}", path.display()))
}

fn private_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).with_context(|| format!("cannot read a private key from {}", path.display()))
}

/// The certificates of `path` as trusted roots.
fn roots(path: &Path) -> anyhow::Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(path)? {
        roots.add(cert).context("a CA certificate")?;
    }
    Ok(roots)
}

fn versions(tls: &TlsConfig) -> anyhow::Result<&'static [&'static rustls::SupportedProtocolVersion]> {
    static FROM_TLS12: [&rustls::SupportedProtocolVersion; 2] = [&rustls::version::TLS13, &rustls::version::TLS12];
    static TLS13_ONLY: [&rustls::SupportedProtocolVersion; 1] = [&rustls::version::TLS13];
    Ok(match tls.min_version.as_deref() {
        None | Some("TLS12") => &FROM_TLS12,
        Some("TLS13") => &TLS13_ONLY,
        Some(other) => bail!("min_version {other:?}: Cairn takes TLS12 or TLS13"),
    })
}

/// The rustls server configuration of `tls`.
pub fn server_config(tls: &TlsConfig) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certs = certificates(&tls.cert_file)?;
    let key = private_key(&tls.key_file)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions(tls)?)
        .context("TLS versions")?;
    let builder = match tls.client_auth_type.as_deref() {
        None | Some("NoClientCert") => builder.with_no_client_auth(),
        Some("RequireAndVerifyClientCert") => {
            let ca = tls
                .client_ca_file
                .as_ref()
                .context("client_auth_type RequireAndVerifyClientCert needs client_ca_file")?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots(ca)?), provider)
                .build()
                .context("client certificate verifier")?;
            builder.with_client_cert_verifier(verifier)
        }
        Some(other) => bail!("client_auth_type {other:?}: Cairn takes NoClientCert or RequireAndVerifyClientCert"),
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .context("the certificate and key do not go together")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How a cluster node speaks to its peers, which serve `tls` as it does:
/// it trusts the CA of `ca_file` and shows its own certificate, so that
/// peers requiring client certificates take it.
pub fn peer_client_config(tls: &TlsConfig, ca_file: &Path) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions(tls)?)
        .context("TLS versions")?
        .with_root_certificates(roots(ca_file)?)
        .with_client_auth_cert(certificates(&tls.cert_file)?, private_key(&tls.key_file)?)
        .context("the certificate and key do not go together")?;
    Ok(Arc::new(config))
}

/// A listener whose connections are TLS, for `axum::serve`.
pub struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
}

impl TlsListener {
    /// Accepts on `tcp` and shakes hands in the background.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(READY_QUEUE);
        let acceptor = TlsAcceptor::from(config);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = match tcp.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, go on.
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, ready) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            let _ = ready.send((tls, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(Self { ready, local })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept loop only ends once this listener is gone.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}
