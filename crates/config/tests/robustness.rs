//! Loading never panics, whatever the input.

use std::path::Path;

use cairn_config::Config;
use proptest::prelude::*;

/// YAML-looking text built from configuration keys and punctuation.
fn yamlish() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "global:",
        "scrape_configs:",
        "- job_name: a",
        "  ",
        "\n",
        "static_configs:",
        "targets: [a:1]",
        "relabel_configs:",
        "- action: hashmod",
        "regex: (",
        "scrape_interval: 5s",
        "scrape_timeout: 1m",
        "{",
        "}",
        "[",
        "]",
        ":",
        "- ",
        "&x ",
        "*x",
        "<<: *x",
        "null",
        "~",
        "'",
        "\"",
        "alerting:",
        "alertmanagers:",
        "remote_write:",
        "- url: http://a",
        "tls_config:",
        "basic_auth:",
        "0",
        "-1",
        "yes",
        "external_labels:",
        "a: $HOME",
        "file_sd_configs:",
        "files: [a.json]",
        "http_sd_configs:",
    ]);
    prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn robustness_parse_never_panics(yaml in yamlish()) {
        let _ = Config::parse(&yaml, Path::new("/etc/prometheus"));
    }

    #[test]
    fn robustness_parse_never_panics_on_arbitrary_text(yaml in ".{0,200}") {
        let _ = Config::parse(&yaml, Path::new("/etc/prometheus"));
    }
}
