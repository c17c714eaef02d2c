use super::*;

const GOOD: &str = r#"
groups:
  - name: node
    interval: 30s
    query_offset: 1m
    limit: 10
    labels:
      team: infra
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
        labels:
          team: core
      - alert: InstanceDown
        expr: up == 0
        for: 5m
        keep_firing_for: 1m
        labels:
          severity: page
        annotations:
          summary: "{{ $labels.instance }} down ({{ $value }})"
  - name: empty
    rules: []
"#;

#[test]
fn reads_groups_and_rules() {
    let groups = parse_rule_file(GOOD, "rules.yml").unwrap();
    assert_eq!(groups.len(), 2);
    let g = &groups[0];
    assert_eq!((g.name.as_str(), g.file.as_str()), ("node", "rules.yml"));
    assert_eq!(g.interval, Some(Duration::from_secs(30)));
    assert_eq!(g.query_offset, Some(Duration::from_secs(60)));
    assert_eq!(g.limit, 10);
    assert_eq!(g.rules[0].kind, RuleKind::Record("job:up:sum".into()));
    assert_eq!(g.rules[0].query, "sum by (job) (up)");
    // A rule's own label wins over the group's.
    assert_eq!(g.rules[0].labels.get("team").map(String::as_str), Some("core"));
    let alert = &g.rules[1];
    assert_eq!(alert.kind, RuleKind::Alert("InstanceDown".into()));
    assert_eq!(alert.for_duration, Duration::from_secs(300));
    assert_eq!(alert.keep_firing_for, Duration::from_secs(60));
    assert_eq!(alert.labels.get("team").map(String::as_str), Some("infra"));
    assert_eq!(alert.labels.get("severity").map(String::as_str), Some("page"));
    assert_eq!(groups[1].interval, None);
}

#[test]
fn empty_file_has_no_groups() {
    assert_eq!(parse_rule_file("", "f").unwrap(), Vec::new());
    assert_eq!(parse_rule_file("# nothing\n", "f").unwrap(), Vec::new());
}

#[test]
fn unknown_keys_are_errors_naming_where() {
    let errs = parse_rule_file(
        "groups:\n- name: a\n  rules:\n  - record: x\n    expr: up\n    bogus: 1\n",
        "f.yml",
    )
    .unwrap_err();
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with("f.yml: "), "{}", errs[0]);
    assert!(errs[0].contains("bogus"), "{}", errs[0]);
    assert!(errs[0].contains("groups[0].rules[0]"), "{}", errs[0]);
    let errs = parse_rule_file("groups:\n- name: a\n  evaluation_interval: 1m\n", "f.yml").unwrap_err();
    assert!(
        errs[0].contains("evaluation_interval") && errs[0].contains("groups[0]"),
        "{}",
        errs[0]
    );
}

#[test]
fn validates_as_prometheus_does() {
    let text = r#"
groups:
  - name: a
    rules:
      - record: x
        alert: y
        expr: up
      - expr: up
      - record: r
      - record: "r{a}"
        expr: up
      - record: r2
        expr: "sum(("
      - record: r3
        expr: up
        for: 1m
        annotations:
          a: b
      - alert: A
        expr: up
        labels:
          __name__: x
        annotations:
          s: "{{ nosuch }}"
  - name: a
  - name: ""
"#;
    let errs = parse_rule_file(text, "f").unwrap_err();
    let expect = [
        r#"f: 5:17: 6:16: group "a", rule 1, "y": only one of 'record' and 'alert' must be set"#,
        r#"f: 0:0: 0:0: group "a", rule 2, "": one of 'record' or 'alert' must be set"#,
        r#"f: 0:0: group "a", rule 3, "r": field 'expr' must be set in rule"#,
        r#"f: 10:17: group "a", rule 4, "r{a}": braces present in the recording rule name; should it be in expr?: r{a}"#,
        r#"f: 14:17: group "a", rule 6, "r3": invalid field 'annotations' in recording rule"#,
        r#"f: 14:17: group "a", rule 6, "r3": invalid field 'for' in recording rule"#,
        r#"f: group "a", rule 7, "A": invalid label name: __name__"#,
        r#"f: group "a", rule 7, "A": annotation "s": template: __alert_A:1: function "nosuch" not defined"#,
        r#"f: 0:0: groupname: "a" is repeated in the same file"#,
        r#"f: 0:0: Groupname must not be empty"#,
    ];
    for e in expect {
        assert!(errs.iter().any(|x| x == e), "missing {e}\nin {errs:#?}");
    }
    assert!(
        errs.iter()
            .any(|e| e.starts_with(r#"f: 13:15: group "a", rule 5, "r2": could not parse expression: "#)),
        "{errs:#?}"
    );
    assert_eq!(errs.len(), expect.len() + 1, "{errs:#?}");
}

#[test]
fn scalars_read_as_text() {
    let groups = parse_rule_file(
        "groups:\n- name: a\n  rules:\n  - record: one\n    expr: 1\n    labels:\n      n: 2\n",
        "f",
    )
    .unwrap();
    assert_eq!(groups[0].rules[0].query, "1");
    assert_eq!(groups[0].rules[0].labels.get("n").map(String::as_str), Some("2"));
}

#[test]
fn check_counts_rules_per_file() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yml");
    let bad = dir.path().join("bad.yml");
    let missing = dir.path().join("missing.yml");
    std::fs::write(&good, GOOD).unwrap();
    std::fs::write(&bad, "groups:\n- name: a\n  rules:\n  - record: x\n").unwrap();
    let checks = check_rule_files(&[good.clone(), bad.clone(), missing.clone()]);
    assert_eq!(checks[0].result, Ok(2));
    let bad_errs = checks[1].result.clone().unwrap_err();
    assert_eq!(
        bad_errs,
        vec![format!(
            "{}: 0:0: group \"a\", rule 1, \"x\": field 'expr' must be set in rule",
            bad.display()
        )]
    );
    assert!(checks[2].result.clone().unwrap_err()[0].starts_with(&missing.display().to_string()));
    let (out, err, code) = render_rule_checks(&checks[..2], false);
    assert_eq!(
        out,
        format!(
            "Checking {}\n  SUCCESS: 2 rules found\n\nChecking {}\n\n",
            good.display(),
            bad.display()
        )
    );
    assert_eq!(err, format!("  FAILED:\n{}\n", bad_errs[0]));
    assert_eq!(code, 1);
}

#[test]
fn duplicate_rules_are_a_lint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.yml");
    let text = "groups:\n- name: a\n  labels: {t: x}\n  rules:\n  - record: r\n    expr: up\n  - record: r\n    expr: up * 2\n";
    std::fs::write(&path, text).unwrap();
    let checks = check_rule_files(std::slice::from_ref(&path));
    assert_eq!(checks[0].result, Ok(2));
    let lint = checks[0].lint.clone().unwrap();
    assert_eq!(
        lint,
        "1 duplicate rule(s) found.\nMetric: r\nLabel(s):\n\tt: x\nMight cause inconsistency while recording expressions"
    );
    assert_eq!(render_rule_checks(&checks, false).2, 0);
    assert_eq!(render_rule_checks(&checks, true).2, 3);
}

/// Prometheus 3.14 reports this rule as `... could not parse expression: 1:6: parse error: unclosed left parenthesis`.
#[test]
fn expression_errors_read_as_prometheus() {
    let errs = parse_rule_file("groups:\n- name: a\n  rules:\n  - record: r\n    expr: sum((\n", "f").unwrap_err();
    assert_eq!(
        errs,
        vec![
            r#"f: 5:11: group "a", rule 1, "r": could not parse expression: 1:6: parse error: unclosed left parenthesis"#
        ]
    );
}

/// The errors Prometheus 3.14 logged for this file, in its order.
#[test]
fn errors_match_prometheus_for_a_bad_file() {
    let text = r#"groups:
  - name: a
    rules:
      - record: x
        alert: y
        expr: up
      - record: "r{a}"
        expr: sum((
      - alert: A
        expr: up
        annotations:
          s: "{{ nosuch }}"
  - name: a
"#;
    let f = "/tmp/promt/bad.yml";
    assert_eq!(
        parse_rule_file(text, f).unwrap_err(),
        vec![
            r#"/tmp/promt/bad.yml: 4:17: 5:16: group "a", rule 1, "y": only one of 'record' and 'alert' must be set"#,
            r#"/tmp/promt/bad.yml: 8:15: group "a", rule 2, "r{a}": could not parse expression: 1:6: parse error: unclosed left parenthesis"#,
            r#"/tmp/promt/bad.yml: 7:17: group "a", rule 2, "r{a}": braces present in the recording rule name; should it be in expr?: r{a}"#,
            r#"/tmp/promt/bad.yml: group "a", rule 3, "A": annotation "s": template: __alert_A:1: function "nosuch" not defined"#,
            r#"/tmp/promt/bad.yml: 0:0: groupname: "a" is repeated in the same file"#,
        ]
    );
}
