//! A real Kubernetes API server for the discovery tests: `kube-apiserver`
//! built from the Kubernetes source by `scripts/build-peers.sh` (or named by
//! `CAIRN_KUBE_APISERVER_BIN`) over its own etcd, with a certificate from a
//! test CA, a static bearer token and no controllers, so the objects are
//! exactly those the test creates. Killed however the test ends; it can be
//! stopped and started again on the same port and data.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use serde_json::Value;

use super::etcd::Etcd;
use super::peers::built_from_source;

pub const TOKEN: &str = "cairn-test-token";

/// The kube-apiserver binary, or `None` after printing `SKIPPED` (outside CI).
pub fn binary() -> Option<PathBuf> {
    built_from_source(
        "kube-apiserver",
        "CAIRN_KUBE_APISERVER_BIN",
        "kube-apiserver-",
        "scripts/build-peers.sh kube-apiserver",
    )
}

pub struct KubeApiServer {
    bin: PathBuf,
    child: Option<Child>,
    pub port: u16,
    etcd: String,
    dir: tempfile::TempDir,
    http: reqwest::blocking::Client,
}

impl KubeApiServer {
    /// Starts it over `etcd` and waits until `/readyz` answers.
    pub fn start(bin: PathBuf, etcd: &Etcd) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("key")).expect("CA");
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("server certificate");
        let sa_key = KeyPair::generate().expect("key");
        for (name, text) in [
            ("ca.crt", ca.pem()),
            ("server.crt", cert.pem()),
            ("server.key", key.serialize_pem()),
            ("sa.key", sa_key.serialize_pem()),
            ("sa.pub", sa_key.public_key_pem()),
            ("tokens.csv", format!("{TOKEN},cairn,1,\"system:masters\"\n")),
            ("token", TOKEN.to_string()),
        ] {
            std::fs::write(dir.path().join(name), text).expect("write apiserver file");
        }
        let http = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA"))
            .timeout(Duration::from_secs(10))
            .build()
            .expect("client");
        let mut server = Self {
            bin,
            child: None,
            port: super::free_port(),
            etcd: etcd.endpoint(),
            dir,
            http,
        };
        server.restart();
        server
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// A file in its directory (`ca.crt`, `token`).
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "kube-apiserver already running");
        let d = self.dir.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("apiserver.log"))
            .expect("apiserver log");
        let child = Command::new(&self.bin)
            .arg(format!("--etcd-servers={}", self.etcd))
            .arg("--bind-address=127.0.0.1")
            .arg("--advertise-address=127.0.0.1")
            .arg(format!("--secure-port={}", self.port))
            .arg(format!("--tls-cert-file={}", d.join("server.crt").display()))
            .arg(format!("--tls-private-key-file={}", d.join("server.key").display()))
            .arg(format!("--token-auth-file={}", d.join("tokens.csv").display()))
            .arg("--authorization-mode=AlwaysAllow")
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!("--service-account-key-file={}", d.join("sa.pub").display()))
            .arg(format!(
                "--service-account-signing-key-file={}",
                d.join("sa.key").display()
            ))
            .arg("--service-cluster-ip-range=10.96.0.0/16")
            // No controller creates service accounts, so pods must not need one.
            .arg("--disable-admission-plugins=ServiceAccount")
            .arg("--enable-priority-and-fairness=false")
            .arg(format!("--cert-dir={}", d.join("certs").display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("spawn kube-apiserver");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("kube-apiserver exited ({status}); log:\n{}", self.log());
            }
            let ok = self
                .http
                .get(format!("{}/readyz", self.url()))
                .bearer_auth(TOKEN)
                .send()
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("kube-apiserver did not become ready; log:\n{}", self.log());
    }

    /// SIGKILL.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("apiserver.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn send(&self, method: reqwest::Method, path: &str, body: Option<(&str, &Value)>) -> Value {
        let mut req = self
            .http
            .request(method.clone(), format!("{}{path}", self.url()))
            .bearer_auth(TOKEN);
        if let Some((content_type, body)) = body {
            req = req.header("Content-Type", content_type).body(body.to_string());
        }
        let resp = req.send().unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status();
        let text = resp.text().unwrap_or_default();
        assert!(status.is_success(), "{method} {path}: {status}: {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// Creates an object in a collection (`/api/v1/namespaces/a/pods`).
    pub fn create(&self, collection: &str, object: Value) -> Value {
        self.send(reqwest::Method::POST, collection, Some(("application/json", &object)))
    }

    /// A JSON merge patch of an object (or of its `/status`).
    pub fn patch(&self, path: &str, patch: Value) -> Value {
        self.send(
            reqwest::Method::PATCH,
            path,
            Some(("application/merge-patch+json", &patch)),
        )
    }

    pub fn delete(&self, path: &str) {
        self.send(reqwest::Method::DELETE, path, None);
    }
}

impl Drop for KubeApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}
