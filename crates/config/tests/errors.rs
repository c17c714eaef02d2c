//! Every class of configuration error, with the message that says where it is.

use std::path::Path;

use cairn_config::{Config, ConfigError};

use crate::cases::REJECTED;

#[test]
fn errors_name_the_problem_and_where_it_is() {
    let mut failures = Vec::new();
    for (yaml, expected) in REJECTED {
        match Config::parse(yaml, Path::new("/etc/prometheus")) {
            Ok(_) => failures.push(format!("accepted:\n{yaml}")),
            Err(e) if !e.to_string().contains(expected) => {
                failures.push(format!("{yaml}\n  expected: {expected}\n  got:      {e}"))
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn errors_unsupported_keys_have_their_own_variant() {
    let err = Config::parse("remote_read: []\n", Path::new("/")).unwrap_err();
    assert!(
        matches!(err, ConfigError::Unsupported { ref key, .. } if key == "remote_read"),
        "{err}"
    );
}

#[test]
fn errors_from_a_file_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prometheus.yml");
    std::fs::write(&path, "scrape_configs:\n  - job_name: node\n    scrape_intervall: 5s\n").unwrap();
    let err = Config::load(&path).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("parsing YAML file {}: ", path.display())),
        "{err}"
    );
    assert!(
        err.ends_with(r#"scrape_configs[0] (job "node"): unknown field "scrape_intervall""#),
        "{err}"
    );
}

#[test]
fn errors_relabelled_url_targets_are_allowed() {
    let yaml = "scrape_configs:\n  - job_name: a\n    static_configs: [{targets: ['http://a:1/metrics']}]\n    relabel_configs: [{source_labels: [__address__], target_label: __param_target}]\n";
    assert!(Config::parse(yaml, Path::new("/")).is_ok());
}

#[test]
fn errors_secrets_never_appear_in_messages() {
    let yaml = "scrape_configs:\n  - {job_name: a, basic_auth: {username: u, password: hunter2}, authorization: {credentials: c}}\n";
    let err = Config::parse(yaml, Path::new("/")).unwrap_err();
    assert!(!format!("{err} {err:?}").contains("hunter2"));
}
