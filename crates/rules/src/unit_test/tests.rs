use super::*;

#[test]
fn value_notation_expands_as_promtool() {
    let v = expand_values("1 _ 2+3x2 5-1x2 -2-1x1 0x2 _x2 stale Inf").unwrap();
    let floats: Vec<Option<f64>> = v[..v.len() - 2].to_vec();
    assert_eq!(
        floats,
        [1.0, f64::NAN, 2.0, 5.0, 8.0, 5.0, 4.0, 3.0, -2.0, -3.0, 0.0, 0.0, 0.0]
            .iter()
            .enumerate()
            .map(|(i, f)| if i == 1 { None } else { Some(*f) })
            .chain([None, None])
            .collect::<Vec<_>>()
    );
    assert!(cairn_model::is_stale_nan(v[v.len() - 2].unwrap()));
    assert_eq!(v[v.len() - 1], Some(f64::INFINITY));
    assert!(expand_values("1+x").is_err());
}

const RULES: &str = r#"
groups:
  - name: g
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - alert: Down
        expr: up == 0
        for: 5m
        labels: { severity: page }
        annotations:
          summary: "{{ $labels.instance }} of {{ $labels.job }} down"
"#;

fn run(test: &str) -> RuleTestReport {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let path = dir.path().join("test.yml");
    std::fs::write(&path, test).unwrap();
    run_rule_tests(&path).unwrap()
}

const PASSING: &str = r#"
rule_files: [rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'up{job="node", instance="a"}'
        values: '1 1 0x10'
      - series: 'up{job="node", instance="b"}'
        values: '1x12'
    alert_rule_test:
      - eval_time: 5m
        alertname: Down
      - eval_time: 7m
        alertname: Down
        exp_alerts:
          - exp_labels: { severity: page, instance: a, job: node }
            exp_annotations: { summary: "a of node down" }
    promql_expr_test:
      - expr: job:up:sum
        eval_time: 1m
        exp_samples:
          - labels: 'job:up:sum{job="node"}'
            value: 2
      - expr: job:up:sum
        eval_time: 3m
        exp_samples:
          - labels: 'job:up:sum{job="node"}'
            value: 1
"#;

#[test]
fn passing_tests_pass() {
    let report = run(PASSING);
    assert!(report.passed(), "{:#?}", report.failures);
}

#[test]
fn wrong_expectations_are_reported() {
    let failing = PASSING
        .replace("value: 1\n", "value: 7\n")
        .replace("eval_time: 7m", "eval_time: 6m");
    let report = run(&failing);
    assert_eq!(report.failures.len(), 2, "{:#?}", report.failures);
    assert!(
        report.failures[0].starts_with("test 1: alertname: Down, time: 6m,"),
        "{}",
        report.failures[0]
    );
    assert!(
        report.failures[1].contains("expr: \"job:up:sum\", time: 3m,"),
        "{}",
        report.failures[1]
    );
}
