//! Scraping over HTTPS: a CA of the test's own, client certificates,
//! server_name and insecure_skip_verify.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::support::{dump, job, wait_until};
use cairn_scrape::settings::{PemSource, TlsSettings};
use cairn_scrape::{Health, ScrapeManager, ScrapeOptions};
use cairn_storage::MemStorage;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Pki {
    ca_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
    server_config: Arc<rustls::ServerConfig>,
}

fn pki() -> Pki {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["cairn-test.example".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca)
        .unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client_cert = CertificateParams::new(vec!["client".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let client_verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()
            .unwrap();
    let server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(
            vec![CertificateDer::from(server_cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        )
        .unwrap();
    Pki {
        ca_pem: ca.pem(),
        client_cert_pem: client_cert.pem(),
        client_key_pem: client_key.serialize_pem(),
        server_config: Arc::new(server_config),
    }
}

/// An HTTPS exporter answering every request with `body`; counts the
/// connections that presented a client certificate.
async fn https_exporter(config: Arc<rustls::ServerConfig>, body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let with_client_cert = Arc::new(AtomicUsize::new(0));
    let counter = with_client_cert.clone();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, counter) = (acceptor.clone(), counter.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if tls.get_ref().1.peer_certificates().is_some_and(|c| !c.is_empty()) {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    (addr, with_client_cert)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_scrapes_check_the_server_and_present_client_certificates() {
    let pki = pki();
    let (addr, client_certs) = https_exporter(pki.server_config.clone(), "secure 1\n").await;
    let https = |name: &str, tls: TlsSettings| {
        let mut j = job(name, std::slice::from_ref(&addr), 150);
        j.scheme = "https".into();
        j.http.tls = tls;
        j
    };
    let verified = https(
        "verified",
        TlsSettings {
            ca: Some(PemSource::Inline(pki.ca_pem.clone())),
            cert: Some(PemSource::Inline(pki.client_cert_pem.clone())),
            key: Some(PemSource::Inline(pki.client_key_pem.clone())),
            server_name: Some("cairn-test.example".into()),
            insecure_skip_verify: false,
            min_version: Some((1, 3)),
            max_version: None,
        },
    );
    let wrong_name = https(
        "wrong_name",
        TlsSettings {
            ca: Some(PemSource::Inline(pki.ca_pem.clone())),
            ..Default::default()
        },
    );
    let insecure = https(
        "insecure",
        TlsSettings {
            insecure_skip_verify: true,
            ..Default::default()
        },
    );
    let storage = MemStorage::new();
    let m = ScrapeManager::new(
        Arc::new(storage.clone()),
        ScrapeOptions {
            skip_offset: true,
            ..Default::default()
        },
    );
    m.apply(vec![verified, wrong_name, insecure]).await.unwrap();
    wait_until(5, "three reports", || dump(&storage, "up").len() == 3).await;
    let targets = m.active_targets();
    let health = |job: &str| targets[job][0].status();
    wait_until(5, "statuses", || {
        ["verified", "wrong_name", "insecure"]
            .iter()
            .all(|j| health(j).health != Health::Unknown)
    })
    .await;
    assert_eq!(
        health("verified").health,
        Health::Up,
        "{:?}",
        health("verified").last_error
    );
    assert_eq!(
        health("insecure").health,
        Health::Up,
        "{:?}",
        health("insecure").last_error
    );
    assert_eq!(health("wrong_name").health, Health::Down);
    assert!(
        health("wrong_name").last_error.unwrap().contains("certificate"),
        "{:?}",
        health("wrong_name").last_error
    );
    assert!(
        client_certs.load(Ordering::Relaxed) >= 1,
        "the verified job presented its certificate"
    );
    let secure: Vec<String> = dump(&storage, "secure").into_keys().collect();
    assert_eq!(secure.len(), 2);
    m.shutdown().await;
}
