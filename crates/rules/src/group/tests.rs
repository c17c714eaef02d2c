//! Evaluation over MemStorage, driven at chosen timestamps (no real waiting).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use cairn_model::{Labels, Matcher, Sample};
use cairn_promql::{Engine, EngineOptions};
use cairn_storage::{Appendable, MemStorage, Queryable, SelectHints, collect_samples};
use parking_lot::Mutex;

use crate::alert::{AlertNotifier, NotifyAlert, ns_to_system_time};
use crate::manager::{RuleManager, RuleManagerOptions, RulesConfig};
use crate::{AlertState, RuleHealth, alerts_json, rules_json};

const MIN: i64 = 60_000;
/// A round start time (ms) so evaluation times are easy to read.
const T0: i64 = 1_700_000_000_000;

#[derive(Default)]
struct Recorder(Mutex<Vec<NotifyAlert>>);

impl AlertNotifier for Recorder {
    fn send(&self, alerts: Vec<NotifyAlert>) {
        self.0.lock().extend(alerts);
    }
}

struct Fixture {
    storage: Arc<MemStorage>,
    notifier: Arc<Recorder>,
    manager: RuleManager,
    dir: tempfile::TempDir,
    file: PathBuf,
}

fn fixture(rules: &str) -> Fixture {
    let storage = Arc::new(MemStorage::new());
    let notifier = Arc::new(Recorder::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.yml");
    std::fs::write(&file, rules).unwrap();
    let manager = manager_over(&storage, &file, &notifier, false, Duration::ZERO);
    // Nothing to restore: alert rules start writing ALERTS at once.
    for g in manager.groups() {
        manager.restore_group_at(&g.file, &g.name, at(T0));
    }
    Fixture {
        storage,
        notifier,
        manager,
        dir,
        file,
    }
}

fn config(file: &std::path::Path) -> RulesConfig {
    RulesConfig {
        files: vec![file.to_path_buf()],
        evaluation_interval: Duration::from_secs(60),
        query_offset: Duration::ZERO,
        external_labels: [("dc".to_string(), "eu1".to_string())].into(),
        external_url: "http://prom.example:9090".into(),
    }
}

fn at(ms: i64) -> SystemTime {
    ns_to_system_time(ms * 1_000_000)
}

impl Fixture {
    fn write(&self, labels: &[(&str, &str)], t: i64, v: f64) {
        let mut app = self.storage.appender();
        app.append(&Labels::from_pairs(labels.iter().copied()), &[Sample::new(t, v)])
            .unwrap();
        app.commit().unwrap();
    }

    fn eval(&self, group: &str, t: i64) {
        assert!(
            self.manager
                .eval_group_at(&self.file.display().to_string(), group, at(t))
        );
    }

    /// Every series named `name` with its samples.
    fn series(&self, name: &str) -> Vec<(Labels, Vec<Sample>)> {
        let q = self.storage.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
        q.select(&SelectHints::default(), &[Matcher::equal("__name__", name)])
            .unwrap()
            .map(|s| {
                let mut s = s.unwrap();
                let samples = collect_samples(s.samples.as_mut()).unwrap();
                (s.labels, samples)
            })
            .collect()
    }
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

#[test]
fn recording_rules_write_in_order_and_mark_vanished_series_stale() {
    let f = fixture(
        r#"
groups:
  - name: g
    labels: { source: rules }
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - record: job:up:sum_times_two
        expr: job:up:sum * 2
        labels: { source: "" }
"#,
    );
    f.write(&[("__name__", "up"), ("job", "a"), ("instance", "1")], T0, 1.0);
    f.write(&[("__name__", "up"), ("job", "a"), ("instance", "2")], T0, 1.0);
    f.write(&[("__name__", "up"), ("job", "b"), ("instance", "3")], T0, 0.0);
    f.eval("g", T0);
    let sums = f.series("job:up:sum");
    assert_eq!(sums.len(), 2);
    assert_eq!(
        sums[0].0,
        labels(&[("__name__", "job:up:sum"), ("job", "a"), ("source", "rules")])
    );
    assert_eq!(sums[0].1, vec![Sample::new(T0, 2.0)]);
    // The second rule saw the first rule's output of the same evaluation;
    // its empty `source` label removed the group's.
    let doubled = f.series("job:up:sum_times_two");
    assert_eq!(
        doubled[0].0,
        labels(&[("__name__", "job:up:sum_times_two"), ("job", "a")])
    );
    assert_eq!(doubled[0].1, vec![Sample::new(T0, 4.0)]);

    // Job b's input goes out of the lookback window: its output gets a stale marker.
    f.write(
        &[("__name__", "up"), ("job", "a"), ("instance", "1")],
        T0 + 5 * MIN,
        1.0,
    );
    f.eval("g", T0 + 6 * MIN);
    let sums = f.series("job:up:sum");
    let b = &sums[1];
    assert_eq!(b.0.get("job"), Some("b"));
    assert_eq!(b.1.len(), 2);
    assert!(cairn_model::is_stale_nan(b.1[1].v));
    assert_eq!(b.1[1].t, T0 + 6 * MIN);
    assert_eq!(sums[0].1.last(), Some(&Sample::new(T0 + 6 * MIN, 1.0)));

    let status = f.manager.groups();
    assert_eq!(status[0].rules[0].health, RuleHealth::Good);
    assert!(status[0].last_evaluation.is_some());
}

#[test]
fn recording_errors_set_health_and_limit() {
    let f = fixture(
        r#"
groups:
  - name: g
    limit: 1
    rules:
      - record: dup
        expr: up
        labels: { instance: same }
      - record: many
        expr: up
"#,
    );
    f.write(&[("__name__", "up"), ("instance", "1")], T0, 1.0);
    f.write(&[("__name__", "up"), ("instance", "2")], T0, 1.0);
    f.eval("g", T0);
    let status = f.manager.groups();
    let rules = &status[0].rules;
    assert_eq!(rules[0].health, RuleHealth::Bad);
    assert_eq!(
        rules[0].last_error.as_deref(),
        Some("vector contains metrics with the same labelset after applying rule labels")
    );
    assert_eq!(
        rules[1].last_error.as_deref(),
        Some("exceeded limit of 1 with 2 series")
    );
    assert!(f.series("many").is_empty());
    let json = rules_json(&status);
    assert_eq!(
        json["groups"][0]["rules"][1]["lastError"],
        "exceeded limit of 1 with 2 series"
    );
    assert_eq!(json["groups"][0]["rules"][1]["health"], "err");
    assert_eq!(json["groups"][0]["rules"][1]["type"], "recording");
}

const ALERT_RULES: &str = r#"
groups:
  - name: alerts
    rules:
      - alert: HighLoad
        expr: load > 1
        for: 2m
        labels:
          severity: "{{ if gt $value 5.0 }}page{{ else }}ticket{{ end }}"
        annotations:
          summary: "{{ $labels.instance }} load {{ printf \"%.1f\" $value }} of {{ with query \"count(load)\" }}{{ . | first | value }}{{ end }} hosts"
          link: "{{ $externalURL }}"
"#;

#[test]
fn alerts_go_pending_firing_resolved_with_notifications() {
    let f = fixture(ALERT_RULES);
    let load = |t: i64, v: f64| f.write(&[("__name__", "load"), ("instance", "h1")], t, v);
    load(T0, 3.0);
    f.eval("alerts", T0);
    let alerts = f.manager.alerts();
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    assert_eq!(a.state, AlertState::Pending);
    assert_eq!(a.labels.get("severity").map(String::as_str), Some("ticket"));
    assert_eq!(a.labels.get("alertname").map(String::as_str), Some("HighLoad"));
    assert_eq!(a.annotations["summary"], "h1 load 3.0 of 1 hosts");
    assert_eq!(a.annotations["link"], "http://prom.example:9090");
    assert_eq!(a.active_at, at(T0));
    let pending = f.series("ALERTS");
    assert_eq!(pending[0].0.get("alertstate"), Some("pending"));
    assert_eq!(pending[0].0.get("severity"), Some("ticket"));
    let for_state = f.series("ALERTS_FOR_STATE");
    assert_eq!(for_state[0].1, vec![Sample::new(T0, (T0 / 1000) as f64)]);
    assert!(f.notifier.0.lock().is_empty(), "pending alerts are not sent");

    load(T0 + MIN, 3.0);
    f.eval("alerts", T0 + MIN);
    assert_eq!(f.manager.alerts()[0].state, AlertState::Pending);
    load(T0 + 2 * MIN, 3.0);
    f.eval("alerts", T0 + 2 * MIN);
    assert_eq!(f.manager.alerts()[0].state, AlertState::Firing);
    {
        let sent = f.notifier.0.lock();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].starts_at, at(T0 + 2 * MIN));
        // Valid for four times the larger of the interval and the resend delay.
        assert_eq!(sent[0].ends_at, at(T0 + 2 * MIN + 4 * MIN));
        assert_eq!(sent[0].labels.get("dc"), Some("eu1"));
        assert_eq!(
            sent[0].generator_url,
            "http://prom.example:9090/graph?g0.expr=load+%3E+1&g0.tab=1"
        );
    }
    // ALERTS pending series ends with a stale marker, the firing one starts.
    let series = f.series("ALERTS");
    let pending = series
        .iter()
        .find(|s| s.0.get("alertstate") == Some("pending"))
        .unwrap();
    assert!(cairn_model::is_stale_nan(pending.1.last().unwrap().v));
    assert!(series.iter().any(|s| s.0.get("alertstate") == Some("firing")));

    // No resend before the resend delay passed.
    load(T0 + 3 * MIN, 3.0);
    f.eval("alerts", T0 + 3 * MIN);
    assert_eq!(f.notifier.0.lock().len(), 1);
    load(T0 + 4 * MIN, 3.0);
    f.eval("alerts", T0 + 3 * MIN + 90_000);
    assert_eq!(f.notifier.0.lock().len(), 2);

    // The condition ends: resolved, sent with EndsAt = the resolve time, gone from the API.
    load(T0 + 5 * MIN, 0.5);
    f.eval("alerts", T0 + 5 * MIN);
    assert!(f.manager.alerts().is_empty());
    let sent = f.notifier.0.lock().clone();
    assert_eq!(sent.last().unwrap().ends_at, at(T0 + 5 * MIN));
    let firing = f.series("ALERTS");
    let firing = firing.iter().find(|s| s.0.get("alertstate") == Some("firing")).unwrap();
    assert!(cairn_model::is_stale_nan(firing.1.last().unwrap().v));
    let status = f.manager.groups();
    assert_eq!(status[0].rules[0].state, AlertState::Inactive);
    assert_eq!(alerts_json(&f.manager.alerts())["alerts"].as_array().unwrap().len(), 0);
}

#[test]
fn alert_json_matches_prometheus_shape() {
    let f = fixture(ALERT_RULES);
    f.write(&[("__name__", "load"), ("instance", "h1")], T0, 7.5);
    f.eval("alerts", T0);
    let json = rules_json(&f.manager.groups());
    let rule = &json["groups"][0]["rules"][0];
    assert_eq!(rule["type"], "alerting");
    assert_eq!(rule["state"], "pending");
    assert_eq!(rule["duration"], 120.0);
    assert_eq!(rule["query"], "load > 1");
    assert_eq!(rule["alerts"][0]["value"], "7.5e+00");
    assert_eq!(rule["alerts"][0]["labels"]["severity"], "page");
    assert_eq!(rule["alerts"][0]["activeAt"], "2023-11-14T22:13:20Z");
    assert_eq!(json["groups"][0]["interval"], 60.0);
}

#[test]
fn keep_firing_for_holds_a_resolved_condition() {
    let f = fixture(
        r#"
groups:
  - name: k
    rules:
      - alert: Flappy
        expr: x > 0
        keep_firing_for: 2m
"#,
    );
    f.write(&[("__name__", "x")], T0, 1.0);
    f.eval("k", T0);
    assert_eq!(f.manager.alerts()[0].state, AlertState::Firing);
    f.write(&[("__name__", "x")], T0 + MIN, 0.0);
    f.eval("k", T0 + MIN);
    let a = &f.manager.alerts()[0];
    assert_eq!(a.state, AlertState::Firing);
    assert_eq!(a.keep_firing_since, Some(at(T0 + MIN)));
    f.eval("k", T0 + 2 * MIN);
    assert_eq!(f.manager.alerts().len(), 1);
    f.eval("k", T0 + 3 * MIN);
    assert!(f.manager.alerts().is_empty());
}

#[test]
fn alert_limit_clears_alerts_and_errors() {
    let f = fixture("groups:\n  - name: l\n    limit: 1\n    rules:\n      - alert: A\n        expr: x\n");
    f.write(&[("__name__", "x"), ("i", "1")], T0, 1.0);
    f.write(&[("__name__", "x"), ("i", "2")], T0, 1.0);
    f.eval("l", T0);
    assert!(f.manager.alerts().is_empty());
    assert_eq!(
        f.manager.groups()[0].rules[0].last_error.as_deref(),
        Some("exceeded limit of 1 with 2 alerts")
    );
}

#[test]
fn for_state_is_restored_after_a_restart() {
    let rules = "groups:\n  - name: r\n    rules:\n      - alert: Slow\n        expr: x > 0\n        for: 30m\n";
    let f = fixture(rules);
    for m in 0..=10 {
        f.write(&[("__name__", "x")], T0 + m * MIN, 1.0);
        f.eval("r", T0 + m * MIN);
    }
    // A new manager over the same storage, 5 minutes later (the outage).
    let restarted = manager_over(&f.storage, &f.file, &f.notifier, false, Duration::ZERO);
    let file = f.file.display().to_string();
    let back = T0 + 15 * MIN;
    f.write(&[("__name__", "x")], back, 1.0);
    restarted.eval_group_at(&file, "r", at(back));
    assert!(
        f.series("ALERTS_FOR_STATE")[0].1.last().unwrap().t < back,
        "nothing written before restore"
    );
    assert!(restarted.restore_group_at(&file, "r", at(back)));
    // Pending since T0, down at T0+10m, back at T0+15m: the outage does not count.
    let a = &restarted.alerts()[0];
    assert_eq!(a.active_at, at(T0 + 5 * MIN));
    restarted.eval_group_at(&file, "r", at(back + MIN));
    assert_eq!(
        f.series("ALERTS_FOR_STATE")[0].1.last().unwrap(),
        &Sample::new(back + MIN, ((T0 + 5 * MIN) / 1000) as f64)
    );
}

#[test]
fn reload_is_atomic_and_keeps_alert_state() {
    let f = fixture(ALERT_RULES);
    f.write(&[("__name__", "load"), ("instance", "h1")], T0, 3.0);
    f.eval("alerts", T0);
    // A broken file: an error, and the old group stays.
    let broken = f.dir.path().join("broken.yml");
    std::fs::write(&broken, "groups:\n  - name: x\n    rules:\n      - record: r\n").unwrap();
    let mut cfg = config(&f.file);
    cfg.files.push(broken);
    assert!(f.manager.update(cfg).is_err());
    assert_eq!(f.manager.alerts().len(), 1);
    // The group changes (another rule added): the alert keeps its ActiveAt.
    let changed = format!("{ALERT_RULES}      - record: extra\n        expr: load\n");
    std::fs::write(&f.file, changed).unwrap();
    f.manager.update(config(&f.file)).unwrap();
    let groups = f.manager.groups();
    assert_eq!(groups[0].rules.len(), 2);
    assert_eq!(f.manager.alerts()[0].active_at, at(T0));
    f.write(&[("__name__", "load"), ("instance", "h1")], T0 + 2 * MIN, 3.0);
    f.eval("alerts", T0 + 2 * MIN);
    assert_eq!(f.manager.alerts()[0].state, AlertState::Firing);
    // The group is removed: its series are marked stale.
    std::fs::write(&f.file, "groups: []\n").unwrap();
    f.manager.update(config(&f.file)).unwrap();
    assert!(f.manager.groups().is_empty());
    let firing = f.series("ALERTS");
    let firing = firing.iter().find(|s| s.0.get("alertstate") == Some("firing")).unwrap();
    assert!(cairn_model::is_stale_nan(firing.1.last().unwrap().v));
}

#[test]
fn evaluation_slots_are_aligned_per_group() {
    use crate::group::{Group, group_hash};
    let spec = crate::parse_rule_file("groups:\n  - name: g\n    interval: 30s\n", "f.yml")
        .unwrap()
        .remove(0);
    let g = Group::new(spec, Duration::from_secs(60), Duration::ZERO, false);
    let interval = 30_000_000_000i64;
    let offset = (group_hash("g", "f.yml") % interval as u64) as i64;
    for now in [1_700_000_000_123_456_789i64, 1_700_000_017_000_000_000] {
        let slot = g.eval_timestamp(now);
        assert_eq!(slot.rem_euclid(interval), offset);
        assert!(slot <= now && now < slot + interval);
    }
    // Prometheus 3.14 evaluated group "t" of /tmp/promt/rules.yml (interval 1s)
    // at …50.897519994Z: its phase within the second.
    assert_eq!(group_hash("t", "/tmp/promt/rules.yml") % 1_000_000_000, 897_519_994);
}

/// Expectations read from Prometheus 3.14's `/api/v1/alerts` for the same rule
/// (all but `now`, which depends on the evaluation time).
#[test]
fn template_functions_match_prometheus() {
    let f = fixture(include_str!("../../testdata/template_functions.rules.yml"));
    let mut cfg = config(&f.file);
    cfg.external_url = "http://prom.example:9090/prefix".into();
    f.manager.update(cfg).unwrap();
    f.eval("t", T0);
    let want: serde_json::Value =
        serde_json::from_str(include_str!("../../testdata/template_functions.prometheus-3.14.json")).unwrap();
    let alerts = f.manager.alerts();
    let got = &alerts[0];
    let mut failures = Vec::new();
    for (k, v) in want["annotations"].as_object().unwrap() {
        let got = got.annotations.get(k).cloned().unwrap_or_default();
        if got != v.as_str().unwrap() {
            failures.push(format!("{k}:\n   got {got:?}\n  want {v}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(serde_json::json!(got.labels), want["labels"]);
    // `now` is the evaluation time in seconds.
    assert_eq!(got.annotations["a29"], "1.7e+09");
}

/// The scheduled path: groups run on their own with a short interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_groups_evaluate_on_their_interval() {
    let storage = Arc::new(MemStorage::new());
    let opts = RuleManagerOptions::new(
        Arc::new(Engine::new(EngineOptions::default())),
        storage.clone() as Arc<dyn Queryable>,
        storage.clone() as Arc<dyn Appendable>,
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.yml");
    std::fs::write(
        &file,
        "groups:\n  - name: fast\n    interval: 20ms\n    rules:\n      - record: one\n        expr: vector(1)\n",
    )
    .unwrap();
    let manager = RuleManager::new(opts);
    manager.update(config(&file)).unwrap();
    let mut evaluations = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let q = storage.querier(0, i64::MAX / 2).unwrap();
        let series: Vec<_> = q
            .select(&SelectHints::default(), &[Matcher::equal("__name__", "one")])
            .unwrap()
            .collect();
        if let Some(Ok(mut s)) = series.into_iter().next() {
            evaluations = collect_samples(s.samples.as_mut()).unwrap().len();
            if evaluations >= 3 {
                break;
            }
        }
    }
    assert!(evaluations >= 3, "{evaluations} evaluations");
    assert_eq!(manager.groups()[0].rules[0].health, RuleHealth::Good);
    manager.stop();
}

#[test]
fn query_offset_shifts_query_and_output_time() {
    let f = fixture("groups:\n  - name: o\n    query_offset: 1m\n    rules:\n      - record: copy\n        expr: x\n");
    f.write(&[("__name__", "x")], T0 - MIN, 1.0);
    f.write(&[("__name__", "x")], T0, 2.0);
    f.eval("o", T0);
    assert_eq!(f.series("copy")[0].1, vec![Sample::new(T0 - MIN, 1.0)]);
}

#[test]
fn removed_group_series_taken_over_elsewhere_get_no_marker_in_their_past() {
    let f = fixture("groups:\n  - name: old\n    rules:\n      - record: shared\n        expr: vector(1)\n");
    let now = crate::alert::system_time_to_ns(SystemTime::now()) / 1_000_000;
    f.eval("old", now - 2 * MIN);
    // Another writer has newer samples of the same series (the group moved files).
    f.write(&[("__name__", "shared")], now + MIN, 1.0);
    std::fs::write(&f.file, "groups: []\n").unwrap();
    f.manager.update(config(&f.file)).unwrap();
    let samples = &f.series("shared")[0].1;
    assert!(samples.iter().all(|s| !cairn_model::is_stale_nan(s.v)), "{samples:?}");
}

#[test]
fn group_metrics_count_evaluations_failures_and_samples() {
    let f = fixture(
        r#"
groups:
  - name: g
    interval: 30s
    rules:
      - record: job:up:sum
        expr: sum by (job) (up)
      - record: broken
        expr: 'label_replace(up, "x", "$1", "job", "(")'
"#,
    );
    let file = f.file.display().to_string();
    let before = f.manager.metrics();
    let g = &before.groups[0];
    assert_eq!((g.key(), g.rules, g.interval_seconds), (format!("{file};g"), 2, 30.0));
    assert_eq!(
        (g.iterations_total, g.evaluations_total, g.evaluation_failures_total),
        (0, 0, 0)
    );
    assert_eq!(g.last_evaluation_timestamp_seconds, 0.0);

    f.write(&[("__name__", "up"), ("job", "a"), ("instance", "1")], T0, 1.0);
    f.write(&[("__name__", "up"), ("job", "b"), ("instance", "2")], T0, 1.0);
    f.eval("g", T0);
    f.eval("g", T0 + 30_000);
    let m = f.manager.metrics();
    let g = &m.groups[0];
    assert_eq!(g.iterations_total, 2);
    assert_eq!(g.evaluations_total, 4);
    assert_eq!(g.evaluation_failures_total, 2, "the invalid regex fails each time");
    assert_eq!(
        g.last_evaluation_samples, 2,
        "two job sums, nothing from the failing rule"
    );
    assert!(
        g.last_evaluation_timestamp_seconds > 1e9,
        "wall clock of the last start"
    );
    assert!(g.last_duration_seconds > 0.0 && g.last_rule_duration_sum_seconds <= g.last_duration_seconds);
    assert_eq!(m.evaluation_duration.count, 4);
    assert_eq!(m.group_duration.count, 2);
    assert!(m.group_duration.quantiles.iter().all(|(_, v)| *v >= 0.0));
}

#[test]
fn group_metrics_survive_a_change_and_go_with_the_group() {
    let f = fixture(ALERT_RULES);
    f.write(&[("__name__", "load"), ("instance", "h1")], T0, 3.0);
    f.eval("alerts", T0);
    assert_eq!(
        f.manager.metrics().groups[0].last_evaluation_samples,
        2,
        "ALERTS and ALERTS_FOR_STATE"
    );
    let changed = format!("{ALERT_RULES}      - record: extra\n        expr: load\n");
    std::fs::write(&f.file, changed).unwrap();
    f.manager.update(config(&f.file)).unwrap();
    let g = f.manager.metrics().groups[0].clone();
    assert_eq!((g.iterations_total, g.evaluations_total, g.rules), (1, 1, 2));
    std::fs::write(&f.file, "groups: []\n").unwrap();
    f.manager.update(config(&f.file)).unwrap();
    assert!(f.manager.metrics().groups.is_empty());
}

#[test]
fn group_metrics_record_the_restore_duration() {
    let f = fixture(ALERT_RULES);
    let g = &f.manager.metrics().groups[0];
    assert!(g.last_restore_duration_seconds.is_some_and(|d| d >= 0.0));
}

/// Every group is this process's, as in a cluster of one: groups move.
#[derive(Debug)]
struct AllWork;

impl cairn_storage::WorkShare for AllWork {
    fn owns(&self, _key: u64) -> bool {
        true
    }
}

/// A manager over `storage` for `file` that notifies `notifier`; in a
/// cluster (`moving`), its groups may move between nodes.
fn manager_over(
    storage: &Arc<MemStorage>,
    file: &std::path::Path,
    notifier: &Arc<Recorder>,
    moving: bool,
    query_offset: Duration,
) -> RuleManager {
    let mut opts = RuleManagerOptions::new(
        Arc::new(Engine::new(EngineOptions::default())),
        storage.clone() as Arc<dyn Queryable>,
        storage.clone() as Arc<dyn Appendable>,
    );
    opts.notifier = Some(notifier.clone());
    opts.schedule = false;
    if moving {
        opts.share = Some(Arc::new(AllWork));
    }
    let manager = RuleManager::new(opts);
    manager
        .update(RulesConfig {
            query_offset,
            ..config(file)
        })
        .unwrap();
    manager
}

const MOVING_RULES: &str = r#"
groups:
  - name: m
    rules:
      - alert: Held
        expr: x > 0
        for: 3m
      - alert: Kept
        expr: y > 0
        keep_firing_for: 4m
        annotations:
          value: "{{ $value }}"
      - alert: HeldAndKept
        expr: y > 0
        for: 2m
        keep_firing_for: 3m
      # Two rules of one name, told apart by a label the second lacks:
      # neither takes the other's series over.
      - record: y_positive
        expr: x > 0
        labels:
          source: x
      - record: y_positive
        expr: y > 0
"#;

/// The inputs at minute `m`: `x` holds from minute 2, `y` from 0 to 5 and
/// again at 13.
fn moving_inputs(m: i64) -> [(&'static str, f64); 2] {
    let x = if m >= 2 { 1.0 } else { 0.0 };
    let y = if m <= 5 {
        1.0 + m as f64
    } else if m == 13 {
        1.0
    } else {
        0.0
    };
    [("x", x), ("y", y)]
}

/// What each alert notification said, by minute sent: (labels, firing).
fn drain_sent(notifier: &Recorder, minute: i64, into: &mut Vec<(i64, String, bool)>) {
    for a in notifier.0.lock().drain(..) {
        let firing = a.ends_at > at(T0 + minute * MIN);
        into.push((
            minute,
            a.labels.get("alertname").unwrap_or_default().to_string(),
            firing,
        ));
    }
}

/// Every sample of the series named `name` in `storage`, NaN by its bits.
fn output_of(storage: &MemStorage, name: &str) -> Vec<(Labels, Vec<(i64, u64)>)> {
    let q = storage.querier(i64::MIN / 2, i64::MAX / 2).unwrap();
    let mut out: Vec<(Labels, Vec<(i64, u64)>)> = q
        .select(&SelectHints::default(), &[Matcher::equal("__name__", name)])
        .unwrap()
        .map(|s| {
            let mut s = s.unwrap();
            let samples = collect_samples(s.samples.as_mut()).unwrap();
            (s.labels, samples.iter().map(|x| (x.t, x.v.to_bits())).collect())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_group_moved_between_nodes_goes_on_as_if_it_had_not_moved() {
    // Evaluated on the minute and querying it, and at a phase of no whole
    // second in the minute querying 30 s back.
    for (query_offset, phase_ms) in [(Duration::ZERO, 0), (Duration::from_secs(30), 7_123)] {
        moves_at_every_minute(query_offset, phase_ms);
    }
}

fn moves_at_every_minute(query_offset: Duration, phase_ms: i64) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.yml");
    std::fs::write(&file, MOVING_RULES).unwrap();
    let name = file.display().to_string();
    const END: i64 = 22;
    let write_inputs = |storage: &MemStorage, m: i64| {
        let mut app = storage.appender();
        for (metric, v) in moving_inputs(m) {
            app.append(&labels(&[("__name__", metric)]), &[Sample::new(T0 + m * MIN, v)])
                .unwrap();
        }
        // Another group's series of the same name, written at other times:
        // no group taking `m` over marks it stale.
        let other = labels(&[("__name__", "y_positive"), ("group", "other")]);
        app.append(&other, &[Sample::new(T0 + m * MIN + 20_000, 1.0)]).unwrap();
        app.commit().unwrap();
    };
    let slot = |m: i64| at(T0 + m * MIN + phase_ms);
    // One node that never moves the group.
    let storage = Arc::new(MemStorage::new());
    let notifier = Arc::new(Recorder::default());
    let unmoved = manager_over(&storage, &file, &notifier, false, query_offset);
    assert!(unmoved.restore_group_at(&name, "m", slot(0)));
    let mut expected = Vec::new();
    for m in 0..=END {
        write_inputs(&storage, m);
        unmoved.eval_group_at(&name, "m", slot(m));
        expected.push(unmoved.alerts());
    }
    let what = format!("query offset {query_offset:?}, phase {phase_ms} ms");
    assert!(
        expected.iter().any(|a| a.iter().any(|a| a.keep_firing_since.is_some())),
        "{what}: the scenario keeps alerts firing"
    );
    // The same group moved from one node to another at each minute: the
    // new node takes it over at its first evaluation there.
    for moved_at in 1..END {
        let moved_storage = Arc::new(MemStorage::new());
        let notifier = Arc::new(Recorder::default());
        let mut sent = Vec::new();
        let first = manager_over(&moved_storage, &file, &notifier, true, query_offset);
        let second = manager_over(&moved_storage, &file, &notifier, true, query_offset);
        for m in 0..=END {
            write_inputs(&moved_storage, m);
            let node = if m < moved_at { &first } else { &second };
            node.eval_group_at(&name, "m", slot(m));
            drain_sent(&notifier, m, &mut sent);
            assert_eq!(
                node.alerts(),
                expected[m as usize],
                "{what}: moved at minute {moved_at}, minute {m}"
            );
        }
        // What the group wrote, staleness markers included, is the unmoved group's.
        for metric in ["ALERTS", "ALERTS_FOR_STATE", "y_positive"] {
            assert_eq!(
                output_of(&moved_storage, metric),
                output_of(&storage, metric),
                "{what}: {metric}, moved at minute {moved_at}"
            );
        }
        // Alertmanager sees each alert resolved only where the unmoved node resolves it.
        for (m, alert, firing) in &sent {
            if !firing {
                assert!(
                    !expected[*m as usize].iter().any(|a| a.labels["alertname"] == *alert),
                    "{what}: moved at minute {moved_at}: {alert} resolved at minute {m} while still active"
                );
            }
        }
    }
}

#[test]
fn a_group_taken_over_after_missed_slots_does_not_count_them_towards_for() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.yml");
    std::fs::write(&file, MOVING_RULES).unwrap();
    let name = file.display().to_string();
    let storage = Arc::new(MemStorage::new());
    let notifier = Arc::new(Recorder::default());
    let first = manager_over(&storage, &file, &notifier, true, Duration::ZERO);
    let second = manager_over(&storage, &file, &notifier, true, Duration::ZERO);
    for m in 0..=8 {
        let mut app = storage.appender();
        for (metric, v) in moving_inputs(m) {
            app.append(&labels(&[("__name__", metric)]), &[Sample::new(T0 + m * MIN, v)])
                .unwrap();
        }
        app.commit().unwrap();
        // `x` pends from minute 2; the first node evaluates up to minute 2,
        // nobody at 3 and 4 (its node died), the second from minute 5.
        match m {
            0..=2 => assert!(first.eval_group_at(&name, "m", at(T0 + m * MIN))),
            3 | 4 => {}
            _ => assert!(second.eval_group_at(&name, "m", at(T0 + m * MIN))),
        }
    }
    let held = second
        .alerts()
        .into_iter()
        .find(|a| a.labels["alertname"] == "Held")
        .unwrap();
    assert_eq!(held.active_at, at(T0 + 4 * MIN), "pending from 2, two slots missed");
    assert_eq!(held.state, AlertState::Firing);
}
