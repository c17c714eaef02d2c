//! Differential check of target relabelling against a real Prometheus: it
//! relabels static targets, and `/api/v1/targets` shows each target's labels
//! before (`discoveredLabels`) and after (`labels`) relabelling, or lists it
//! as dropped. Cairn's engine must turn the former into the latter.
//!
//! `PROMETHEUS_BIN` names the binary (default: the 3.14 peer); without it
//! the test prints SKIPPED, unless CI is set.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairn_config::{Config, relabel};
use cairn_model::{Label, Labels};

const CONFIG: &str = r#"
scrape_configs:
  - job_name: relabel
    scrape_interval: 1h
    static_configs:
      - targets: ['node-1.eu:9100', 'node-2.eu:9100', 'db-1.us:9187', 'DB-2.US:9187', 'web-1.eu:80']
        labels: {__meta_env: prod, __meta_team: Infra, __meta_zone_name: eu-west-1a, tier: backend}
      - targets: ['cache-1.ap:6379', 'cache-2.ap:6379', 'tmp-1.ap:1']
        labels: {__meta_env: staging, __meta_team: '', owner: cache}
    relabel_configs:
      - source_labels: [__address__]
        regex: 'tmp-.*'
        action: drop
      - source_labels: [__address__]
        regex: '([^.]+)\.([a-zA-Z]+):(\d+)'
        target_label: host
        replacement: '${1}'
      - source_labels: [__address__]
        regex: '[^.]+\.([a-zA-Z]+):\d+'
        target_label: region
      - source_labels: [region]
        target_label: region
        action: lowercase
      - source_labels: [__meta_team]
        target_label: team
        action: uppercase
      - action: labelmap
        regex: '__meta_(.+)'
        replacement: 'meta_$1'
      - source_labels: [__address__]
        target_label: shard
        modulus: 3
        action: hashmod
      - source_labels: [__address__, owner]
        separator: '@'
        regex: '(.*)@cache'
        target_label: cache_address
        replacement: 'cache://$1'
      - source_labels: [meta_env]
        regex: staging
        target_label: tier
        replacement: ''
      - source_labels: [host]
        regex: 'web-(.*)'
        target_label: '${1}_web'
        replacement: 'yes'
      - action: labeldrop
        regex: 'meta_zone_.*'
      - source_labels: [shard]
        regex: '2'
        target_label: shard_two
        replacement: '$$2 $2x'
      - source_labels: [host, region]
        regex: 'db-.*;us'
        action: drop
  - job_name: edge
    scrape_interval: 1h
    static_configs:
      - targets: ['a:1', 'b:2', 'c:3', 'd:4', 'e:5']
        labels: {x: same, y: same, word: 'ΟΔΟΣ straße İ', num: '١٢3'}
      - targets: ['f:6', 'g:7']
        labels: {x: one, y: two, word: plain, num: '42'}
    relabel_configs:
      - source_labels: [x]
        target_label: y
        action: keepequal
      - source_labels: [word]
        target_label: lower
        action: lowercase
      - source_labels: [word]
        target_label: upper
        action: uppercase
      - source_labels: [num]
        regex: '\d+'
        target_label: ascii_digits
        replacement: 'yes'
      - source_labels: [__address__]
        regex: '(\w):(\d)'
        target_label: suffixed
        replacement: '$1x-${1}x-$2'
      - source_labels: [__address__]
        regex: '(?P<host>\w):(?P<port>\d)'
        target_label: 'named_${host}'
        replacement: '$port$$'
      - source_labels: [__address__]
        regex: 'c:3'
        target_label: word
        replacement: ''
      - source_labels: [__address__]
        target_label: x
        action: dropequal
      - regex: '__.*|job|x|y|lower|upper|ascii_digits|suffixed|named_.*|word'
        action: labelkeep
      - source_labels: [__address__]
        regex: 'e:5'
        action: drop
"#;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.lines().next()?.contains(" 200 ").then(|| body.to_string())
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn labels_of(value: &serde_json::Value) -> Labels {
    let map = value.as_object().expect("labels are an object");
    Labels::new(
        map.iter()
            .map(|(k, v)| Label::new(k.as_str(), v.as_str().unwrap_or_default()))
            .collect(),
    )
    .unwrap()
}

/// What Prometheus keeps of relabelled target labels: no `__` labels, and
/// `instance` from the address when relabelling set none.
fn target_labels(relabelled: &Labels) -> Labels {
    let mut out: Vec<Label> = relabelled
        .iter()
        .filter(|l| !l.name.starts_with("__"))
        .cloned()
        .collect();
    if relabelled.get("instance").is_none()
        && let Some(address) = relabelled.get("__address__")
    {
        out.push(Label::new("instance", address));
    }
    Labels::new(out).unwrap()
}

#[test]
fn oracle_relabel_targets_like_prometheus() {
    let binary = PathBuf::from(prometheus_bin());
    if !binary.exists() {
        assert!(std::env::var_os("CI").is_none(), "Prometheus 3.14 missing under CI");
        println!("SKIPPED: no Prometheus binary");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("prometheus.yml");
    std::fs::write(&config_path, CONFIG).unwrap();
    let port = free_port();
    let mut child = Command::new(&binary)
        .arg(format!("--config.file={}", config_path.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start prometheus");
    let stderr = child.stderr.take().unwrap();
    let _prometheus = Prometheus(child);
    // Drain the log so Prometheus never blocks on a full pipe.
    std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});

    let expected_targets = 15;
    let deadline = Instant::now() + Duration::from_secs(60);
    let targets = loop {
        assert!(Instant::now() < deadline, "Prometheus did not list the targets in time");
        std::thread::sleep(Duration::from_millis(500));
        let Some(body) = get(port, "/api/v1/targets?state=any") else {
            continue;
        };
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        let data = &json["data"];
        let count = data["activeTargets"].as_array().map_or(0, Vec::len)
            + data["droppedTargets"].as_array().map_or(0, Vec::len);
        if count == expected_targets {
            break data.clone();
        }
    };

    let config = Config::parse(CONFIG, Path::new("/")).unwrap();
    let rules_of = |discovered: &Labels| {
        let job = discovered.get("job").unwrap_or_default();
        let scrape = config
            .scrape_configs
            .iter()
            .find(|s| s.job_name == job)
            .expect("a known job");
        scrape.relabel_configs.clone()
    };
    let mut checked = 0;
    for target in targets["activeTargets"].as_array().unwrap() {
        let discovered = labels_of(&target["discoveredLabels"]);
        let ours =
            relabel::process(&discovered, &rules_of(&discovered)).unwrap_or_else(|| panic!("Cairn drops {discovered}"));
        assert_eq!(target_labels(&ours), labels_of(&target["labels"]), "for {discovered}");
        checked += 1;
    }
    for target in targets["droppedTargets"].as_array().unwrap() {
        let discovered = labels_of(&target["discoveredLabels"]);
        let ours = relabel::process(&discovered, &rules_of(&discovered));
        assert_eq!(ours, None, "Prometheus drops {discovered}");
        checked += 1;
    }
    assert_eq!(checked, expected_targets);
    // Job relabel: `tmp-1` by its address, `db-1.us` by host and region
    // (`DB-2.US` stays: its host keeps its case). Job edge: `f` and `g` by
    // keepequal, `e` by drop.
    assert_eq!(targets["droppedTargets"].as_array().unwrap().len(), 5);
}

/// `PROMETHEUS_BIN`, or Prometheus 3.14 from `../shared/peers/` beside the repository.
fn prometheus_bin() -> String {
    std::env::var("PROMETHEUS_BIN")
        .unwrap_or_else(|_| format!("{}/../../../shared/peers/prometheus-3.14.0", env!("CARGO_MANIFEST_DIR")))
}
