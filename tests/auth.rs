//! Access control and TLS with real clients: curl over HTTPS (certificates
//! made by `openssl`), Prometheus 3 remote-writing with `basic_auth` and an
//! `X-Scope-OrgID` header, and `cairn bench` with basic auth, a bearer
//! token and a tenant.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::peers::{Prometheus, binary, in_ci};
use crate::common::{Client, Server, series};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn sha256_hex(s: &str) -> String {
    Sha256::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A web configuration: alice is an admin, grafana reads team-a and
/// team-b, prom writes team-a, bob has no entry (the default tenant), and
/// the token of `agent` writes team-b.
fn web_config(dir: &Path, tls: bool) -> PathBuf {
    let hash = bcrypt::hash("pw", 4).unwrap();
    let mut yaml = String::new();
    if tls {
        yaml.push_str("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n");
    }
    yaml.push_str(&format!(
        "basic_auth_users:\n  alice: '{hash}'\n  grafana: '{hash}'\n  prom: '{hash}'\n  bob: '{hash}'\n\
         bearer_tokens:\n  agent: {}\n\
         access:\n  alice: {{admin: true}}\n  grafana: {{read: [team-a, team-b]}}\n  prom: {{write: [team-a]}}\n  \
         agent: {{write: [team-b]}}\n",
        sha256_hex("agent-token")
    ));
    let path = dir.join("web.yml");
    std::fs::write(&path, yaml).unwrap();
    path
}

/// A self-signed certificate for 127.0.0.1 and localhost, by `openssl`.
fn make_certificate(dir: &Path) -> bool {
    let Some(openssl) = binary("openssl") else {
        assert!(!in_ci(), "openssl missing under CI");
        println!("SKIPPED: openssl not installed");
        return false;
    };
    let status = Command::new(openssl)
        .current_dir(dir)
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"])
        .args(["-keyout", "key.pem", "-out", "cert.pem", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .output()
        .expect("run openssl");
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    true
}

/// curl over HTTPS: (status, body).
fn curl(dir: &Path, url: &str, args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(dir.join("cert.pem"))
        .args(["-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let code = code.trim().parse().unwrap_or(0);
    if code == 0 {
        return (0, String::from_utf8_lossy(&out.stderr).into_owned());
    }
    (code, body.to_string())
}

fn start_tls(dir: &Path, config: &Path) -> Server {
    let mut server = Server::new(&dir.join("data"), &["--web.config.file", config.to_str().unwrap()]);
    server.spawn();
    let url = format!("https://127.0.0.1:{}/-/ready", server.port);
    let deadline = Instant::now() + Duration::from_secs(60);
    while curl(dir, &url, &[]).0 != 200 {
        assert!(Instant::now() < deadline, "cairn not ready over TLS: {}", server.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

fn error_type(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["status"], "error", "{body}");
    v["errorType"].as_str().unwrap().to_string()
}

#[test]
fn curl_over_tls_meets_401_and_403_in_the_prometheus_envelope() {
    let dir = tempfile::tempdir().unwrap();
    if !make_certificate(dir.path()) || binary("curl").is_none() {
        assert!(!in_ci(), "curl missing under CI");
        return;
    }
    let config = web_config(dir.path(), true);
    let server = start_tls(dir.path(), &config);
    let base = format!("https://127.0.0.1:{}", server.port);
    let d = dir.path();
    let query = format!("{base}/api/v1/query?query=up");

    assert_eq!(curl(d, &format!("{base}/-/healthy"), &[]).0, 200, "health stays open");
    let (status, body) = curl(d, &query, &[]);
    assert_eq!((status, error_type(&body).as_str()), (401, "unauthorized"));
    let (status, _) = curl(d, &query, &["-u", "grafana:wrong"]);
    assert_eq!(status, 401);
    let (status, body) = curl(d, &query, &["-u", "grafana:pw", "-H", "X-Scope-OrgID: team-a"]);
    assert_eq!(status, 200, "{body}");
    let (status, body) = curl(d, &query, &["-u", "grafana:pw", "-H", "X-Scope-OrgID: team-a|team-c"]);
    assert_eq!((status, error_type(&body).as_str()), (403, "forbidden"), "{body}");
    assert!(body.contains("team-c"), "{body}");
    // Writes: prom writes team-a only.
    let line = |tenant: &str, user: &str| {
        curl(
            d,
            &format!("{base}/api/v1/import/prometheus"),
            &[
                "-u",
                &format!("{user}:pw"),
                "-H",
                &format!("X-Scope-OrgID: {tenant}"),
                "--data-binary",
                "m 1",
            ],
        )
    };
    assert_eq!(line("team-a", "prom").0, 204);
    let (status, body) = line("team-b", "prom");
    assert_eq!(status, 403, "{body}");
    let (status, body) = line("team-a", "grafana");
    assert_eq!(status, 403, "a reader does not write: {body}");
    // The token of agent writes team-b.
    let (status, _) = curl(
        d,
        &format!("{base}/api/v1/import/prometheus"),
        &[
            "-H",
            "Authorization: Bearer agent-token",
            "-H",
            "X-Scope-OrgID: team-b",
            "--data-binary",
            "m 2",
        ],
    );
    assert_eq!(status, 204);
    // Deletes need an admin.
    let delete = format!("{base}/api/v1/admin/tsdb/delete_series?match[]=m");
    let (status, body) = curl(d, &delete, &["-X", "POST", "-u", "bob:pw"]);
    assert_eq!((status, error_type(&body).as_str()), (403, "forbidden"));
    assert_eq!(
        curl(
            d,
            &delete,
            &["-X", "POST", "-u", "alice:pw", "-H", "X-Scope-OrgID: team-a"]
        )
        .0,
        204
    );
    // So do snapshots: none without credentials or with a reader's.
    let snapshot = format!("{base}/api/v1/admin/tsdb/snapshot");
    assert_eq!(curl(d, &snapshot, &["-X", "POST"]).0, 401);
    let (status, body) = curl(d, &snapshot, &["-X", "POST", "-u", "bob:pw"]);
    assert_eq!((status, error_type(&body).as_str()), (403, "forbidden"));
    let (status, body) = curl(d, &snapshot, &["-X", "POST", "-u", "alice:pw"]);
    assert_eq!(status, 200, "{body}");
    let name: Value = serde_json::from_str(&body).unwrap();
    let name = name["data"]["name"].as_str().expect("a snapshot name");
    assert!(server.data_dir.join("snapshots").join(name).is_dir(), "{body}");
    // Plain HTTP gets no answer from the TLS port.
    let plain = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5"])
        .arg(format!("http://127.0.0.1:{}/-/healthy", server.port))
        .output()
        .unwrap();
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "200");
}

#[test]
fn prometheus_remote_writes_with_basic_auth_into_its_tenant() {
    // Prometheus 3 (Debian's 2.42 sends no `headers` along with `basic_auth`).
    let Some(prometheus) = crate::common::peers::prometheus_3() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = web_config(dir.path(), false);
    let server = Server::start_with(&["--web.config.file", config.to_str().unwrap()]);
    let write_url = format!("{}/api/v1/write", server.url());
    let prom = Prometheus::start_on_port(
        &prometheus,
        |port| {
            format!(
                "global:\n  scrape_interval: 1s\n\
                 scrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n\
                 remote_write:\n  - url: {write_url}\n    basic_auth:\n      username: prom\n      password: pw\n    \
                 headers:\n      X-Scope-OrgID: team-a\n    queue_config:\n      batch_send_deadline: 1s\n"
            )
        },
        &[],
    );
    let reader = Client::with_headers(
        server.url(),
        &[("Authorization", "Basic Z3JhZmFuYTpwdw=="), ("X-Scope-OrgID", "team-a")],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = reader.get_query("/api/v1/query", &[("query", r#"up{job="self"}"#)]);
        assert_eq!(r.status, 200, "{}", r.body);
        if r.json()["data"]["result"].as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing arrived from Prometheus:\n{}",
            prom.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // The default tenant got none of it, and bob may not look at team-a.
    let bob = Client::with_headers(server.url(), &[("Authorization", "Basic Ym9iOnB3")]);
    let r = bob.get_query("/api/v1/query", &[("query", r#"up{job="self"}"#)]);
    assert_eq!(r.json()["data"]["result"], serde_json::json!([]), "{}", r.body);
    let bob_a = Client::with_headers(
        server.url(),
        &[("Authorization", "Basic Ym9iOnB3"), ("X-Scope-OrgID", "team-a")],
    );
    bob_a
        .get_query("/api/v1/query", &[("query", "up")])
        .assert_error(403, "forbidden");
    // /metrics lists each caller's own tenants only.
    let metrics = |client: &Client| client.get("/metrics").body;
    let prom_only = Client::with_headers(server.url(), &[("Authorization", "Basic cHJvbTpwdw==")]);
    assert!(
        !metrics(&prom_only).contains("cairn_tenant_active_series{"),
        "prom reads no tenant"
    );
    assert!(metrics(&reader).contains(r#"cairn_tenant_active_series{tenant="team-a"}"#));
    assert!(!metrics(&bob).contains(r#"tenant="team-a""#));
    // Writes without credentials are refused.
    let anonymous = server.client();
    let refused = anonymous
        .try_write(&[series(&[("__name__", "x")], &[(1, 1.0)])])
        .unwrap();
    assert_eq!(refused.status, 401, "{}", refused.body);
}

/// Samples of the bench's job in `tenant`, exported by the admin.
fn exported_samples(base: &str, tenant: &str) -> u64 {
    let alice = Client::with_headers(
        base.to_string(),
        &[("Authorization", "Basic YWxpY2U6cHc="), ("X-Scope-OrgID", tenant)],
    );
    alice
        .export(&[r#"{job="node_exporter"}"#], None)
        .iter()
        .map(|e| e.samples.len() as u64)
        .sum()
}

#[test]
fn cairn_bench_writes_and_reads_with_credentials_and_a_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let config = web_config(dir.path(), false);
    let server = Server::start_with(&["--web.config.file", config.to_str().unwrap()]);
    let base = server.url();
    let run = |extra: &[&str]| -> Value {
        let report = dir.path().join(format!("report-{}.json", extra.len()));
        let out = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["bench", "run", "--write-url", &format!("{base}/api/v1/write")])
            .args(["--targets", "2", "--backfill", "10m", "--quiet", "--report-json"])
            .arg(&report)
            .args(extra)
            .output()
            .expect("run cairn bench");
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap()
    };
    // Basic auth, writing and querying team-a.
    let report = run(&[
        "--query-url",
        &base,
        "--query-interval",
        "1s",
        "--basic-auth-user",
        "alice",
        "--basic-auth-password",
        "pw",
        "--tenant",
        "team-a",
    ]);
    let delivered = report["samples_delivered"].as_u64().unwrap();
    assert!(delivered > 0);
    assert_eq!(exported_samples(&base, "team-a"), delivered);
    // A bearer token that writes team-b only.
    let report = run(&["--no-queries", "--bearer-token", "agent-token", "--tenant", "team-b"]);
    assert_eq!(
        exported_samples(&base, "team-b"),
        report["samples_delivered"].as_u64().unwrap()
    );
    assert_eq!(exported_samples(&base, "anonymous"), 0);
}
