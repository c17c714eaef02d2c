//! A cluster behind TLS and basic auth: three `cairn` nodes serving HTTPS
//! that requires client certificates (one CA, made by `openssl`) and basic
//! auth, speaking HTTPS to each other with their own certificates and the
//! cluster's secret. Prometheus 3.14 remote-writes to one node with its
//! certificate and password; curl reads from the others.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::Server;
use crate::common::etcd::Etcd;
use crate::common::peers::{Prometheus, binary, in_ci, prometheus_3};
use serde_json::Value;

/// A CA, and a certificate it signed for 127.0.0.1 and localhost, good for
/// servers and clients alike: `ca.pem`, `node.pem`, `node.key`.
fn make_certificates(dir: &Path) -> bool {
    let Some(openssl) = binary("openssl") else {
        assert!(!in_ci(), "openssl missing under CI");
        println!("SKIPPED: openssl not installed");
        return false;
    };
    std::fs::write(
        dir.join("node.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n",
    )
    .expect("extensions");
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let steps: [&[&str]; 3] = [
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-days",
                "1",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-subj",
                "/CN=cairn test CA",
            ],
        ]
        .concat(),
        &[
            &["req"][..],
            &ec,
            &["-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=localhost"],
        ]
        .concat(),
        &[
            "x509",
            "-req",
            "-in",
            "node.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-out",
            "node.pem",
            "-extfile",
            "node.ext",
        ],
    ];
    for args in steps {
        let out = Command::new(&openssl)
            .current_dir(dir)
            .args(args)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    true
}

/// curl over HTTPS with `extra` arguments, and the node's certificate
/// unless `without_certificate`: the status (0 when no answer) and the body.
fn curl(dir: &Path, url: &str, extra: &[&str], without_certificate: bool) -> (u16, String) {
    let mut command = Command::new("curl");
    command
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(dir.join("ca.pem"));
    if !without_certificate {
        command
            .arg("--cert")
            .arg(dir.join("node.pem"))
            .arg("--key")
            .arg(dir.join("node.key"));
    }
    let out = command
        .args(extra)
        .args(["-w", "\n%{http_code}"])
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

const SECRET: &str = "s3cret";

fn https(node: &Server, path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", node.port)
}

#[test]
fn a_cluster_over_mutual_tls_and_basic_auth_takes_prometheus_remote_write() {
    let Some(etcd) = Etcd::start() else { return };
    let Some(prometheus) = prometheus_3() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    if !make_certificates(dir.path()) {
        return;
    }
    let hash = bcrypt::hash("pw", 4).expect("bcrypt");
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: node.pem\n  key_file: node.key\n  \
             client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n\
             basic_auth_users:\n  prom: '{hash}'\n"
        ),
    )
    .expect("web config");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, SECRET).expect("secret");

    let etcd_endpoint = etcd.endpoint();
    let data: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().expect("tempdir")).collect();
    let mut nodes: Vec<Server> = data
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let id = format!("node-{i}");
            let args = [
                "--cluster.etcd-endpoints",
                &etcd_endpoint,
                "--cluster.node-id",
                &id,
                "--cluster.lease-ttl",
                "2s",
                "--cluster.secret-file",
                secret.to_str().expect("utf-8 path"),
                "--web.config.file",
                web.to_str().expect("utf-8 path"),
            ];
            let mut node = Server::new(d.path(), &args);
            node.spawn();
            node
        })
        .collect();
    // Every node ready, and seeing the three alive (its ring, read over
    // HTTPS with the cluster's secret).
    let deadline = Instant::now() + Duration::from_secs(60);
    for node in &mut nodes {
        loop {
            let with_secret = ["-H", &format!("x-cairn-cluster-secret: {SECRET}")];
            let (status, body) = curl(
                dir.path(),
                &https(node, "/internal/cluster/v1/ring"),
                &with_secret,
                false,
            );
            let alive = (status == 200)
                .then(|| serde_json::from_str::<Value>(&body).ok())
                .flatten()
                .map(|ring| {
                    ring["members"]
                        .as_array()
                        .map_or(0, |m| m.iter().filter(|m| m["alive"] == true).count())
                });
            if alive == Some(3) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "not every node is up: {status} {body}\n{}",
                node.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    // Prometheus remote-writes its own metrics to node 0 with its certificate and password.
    let write_url = https(&nodes[0], "/api/v1/write");
    let certs = dir.path().display().to_string();
    let prom = Prometheus::start_on_port(
        &prometheus,
        |port| {
            format!(
                "global:\n  scrape_interval: 1s\n\
                 scrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n\
                 remote_write:\n  - url: {write_url}\n    basic_auth:\n      username: prom\n      password: pw\n    \
                 tls_config:\n      ca_file: {certs}/ca.pem\n      cert_file: {certs}/node.pem\n      \
                 key_file: {certs}/node.key\n    queue_config:\n      batch_send_deadline: 1s\n    \
                 metadata_config:\n      send_interval: 2s\n"
            )
        },
        &[],
    );
    // Every node answers with what went to node 0: its peers took their
    // replicas over HTTPS, and a query on any node reads them back so.
    let deadline = Instant::now() + Duration::from_secs(60);
    for node in &nodes[1..] {
        loop {
            let url = https(node, "/api/v1/query?query=count(up%7Bjob%3D%22self%22%7D)");
            let (status, body) = curl(dir.path(), &url, &["-u", "prom:pw"], false);
            assert_eq!(status, 200, "{body}");
            let v: Value = serde_json::from_str(&body).expect("json");
            if v["data"]["result"][0]["value"][1] == "1" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "nothing from Prometheus on this node: {body}\nPrometheus:\n{}\nnode 0:\n{}",
                prom.log(),
                nodes[0].log()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    // Metadata went to node 0 alone; node 2 asks its peers for theirs over HTTPS.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let url = https(&nodes[2], "/api/v1/metadata?metric=prometheus_build_info");
        let (status, body) = curl(dir.path(), &url, &["-u", "prom:pw"], false);
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).expect("json");
        assert!(v.get("warnings").is_none(), "every peer answered: {body}");
        if v["data"]["prometheus_build_info"].is_array() {
            break;
        }
        assert!(Instant::now() < deadline, "no metadata through the peers: {body}");
        std::thread::sleep(Duration::from_millis(500));
    }

    // Without a password: 401; without a certificate: no TLS session; a
    // peer's write without the secret: 401.
    let query = https(&nodes[1], "/api/v1/query?query=up");
    assert_eq!(curl(dir.path(), &query, &[], false).0, 401);
    assert_eq!(curl(dir.path(), &query, &["-u", "prom:pw"], true).0, 0);
    let peer_write = https(&nodes[1], "/internal/cluster/v1/write");
    let (status, body) = curl(dir.path(), &peer_write, &["-u", "prom:pw", "--data-binary", ""], false);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("secret"), "{body}");
}
