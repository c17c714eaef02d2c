use cairn_model::{Labels, is_stale_nan};
use proptest::prelude::*;

use super::*;

const NOW: i64 = 1_700_000_000_000;

fn opts() -> PromTextOptions {
    PromTextOptions {
        default_t: NOW,
        ..PromTextOptions::default()
    }
}

fn decode(body: &str) -> ImportResult {
    decode_prom_text(body.as_bytes(), &opts(), &DecodeLimits::default())
}

/// One sample line → (labels, t, v), or the error reason.
fn one(line: &str) -> Result<(Labels, i64, f64), String> {
    let r = decode(line);
    if let Some(e) = r.first_error {
        return Err(e.reason);
    }
    let s = r.batch.series().next().expect("a series");
    Ok((s.labels(), s.samples()[0].t, s.samples()[0].v))
}

fn check(line: &str, pairs: &[(&str, &str)], t: i64, v: f64) {
    let (labels, got_t, got_v) = one(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert_eq!(labels, Labels::from_pairs(pairs.iter().copied()), "{line:?}");
    assert_eq!(got_t, t, "{line:?}");
    assert!(got_v == v || (got_v.is_nan() && v.is_nan()), "{line:?}: {got_v}");
}

fn check_err(line: &str, reason: &str) {
    let err = one(line).expect_err(line);
    assert!(err.contains(reason), "{line:?}: {err}");
}

#[test]
fn sample_lines() {
    check("up 1", &[("__name__", "up")], NOW, 1.0);
    check("up 1 1500", &[("__name__", "up")], 1500, 1.0);
    check("up -1 -1500", &[("__name__", "up")], -1500, -1.0);
    check("  up\t 1.5e3\t", &[("__name__", "up")], NOW, 1500.0);
    check("up{} 2", &[("__name__", "up")], NOW, 2.0);
    check("a:b_c{job=\"x\"} 2", &[("__name__", "a:b_c"), ("job", "x")], NOW, 2.0);
    check("up{job=\"x\",} 2", &[("__name__", "up"), ("job", "x")], NOW, 2.0);
    check(
        "up{ job = \"x\" , i=\"y\" } 2",
        &[("__name__", "up"), ("i", "y"), ("job", "x")],
        NOW,
        2.0,
    );
    check(
        r#"up{p="a\\b\"c\nd"} 2"#,
        &[("__name__", "up"), ("p", "a\\b\"c\nd")],
        NOW,
        2.0,
    );
    check(r#"up{p="{} ,=#"} 2"#, &[("__name__", "up"), ("p", "{} ,=#")], NOW, 2.0);
    check("up{p=\"ünï\"} 2", &[("__name__", "up"), ("p", "ünï")], NOW, 2.0);
    check("up{e=\"\"} 2", &[("__name__", "up")], NOW, 2.0);
    check(
        r#"{"my.metric","a.b"="1"} 2"#,
        &[("__name__", "my.metric"), ("a.b", "1")],
        NOW,
        2.0,
    );
    check("up NaN", &[("__name__", "up")], NOW, f64::NAN);
    check("up +Inf", &[("__name__", "up")], NOW, f64::INFINITY);
    check("up -Inf 5", &[("__name__", "up")], 5, f64::NEG_INFINITY);
    check("up 1 2 # {trace_id=\"x\"} 1 3", &[("__name__", "up")], 2, 1.0);
    check("up 1 # {trace_id=\"x\"} 1", &[("__name__", "up")], NOW, 1.0);
    check("up 1 7\t# {trace_id=\"x\"} 1", &[("__name__", "up")], 7, 1.0);
    check("x_created 1.7e9", &[("__name__", "x_created")], NOW, 1.7e9);
}

#[test]
fn a_text_nan_is_not_a_stale_marker() {
    let (_, _, v) = one("up NaN").unwrap();
    assert!(v.is_nan() && !is_stale_nan(v));
}

#[test]
fn bad_lines() {
    check_err("up", "missing value");
    check_err("up{", "invalid label name");
    check_err("up{a=\"1\"", "want ',' or");
    check_err("up{a=\"1} 1", "unterminated");
    check_err("up{a=1} 1", "want '\"'");
    check_err("up{a=\"1\" b=\"2\"} 1", "want ','");
    check_err("up{1a=\"1\"} 1", "invalid label name");
    check_err("up{a=\"\\x\"} 1", "invalid escape");
    check_err("up{a=\"1\",a=\"2\"} 1", "duplicate");
    check_err("1up 1", "invalid metric name");
    check_err("up.x 1", "invalid metric name");
    check_err("up{}1", "want a space");
    check_err("up abc", "invalid value");
    check_err("up 1 1.5", "integer milliseconds");
    check_err("up 1 2 3", "unexpected");
    check_err("{a=\"1\"} 1", "no metric name");
    check_err("{\"a\",\"b\"} 1", "has no value");
}

#[test]
fn metadata_is_kept() {
    let r = decode(concat!(
        "# HELP http_requests_total Requests \\\\ served\\n so far.\n",
        "# TYPE http_requests_total counter\n",
        "# some comment\n",
        "#\n",
        "http_requests_total{code=\"200\"} 3\n",
        "# TYPE temp gauge\n",
        "# UNIT temp celsius\n",
        "temp 21\n",
    ));
    assert_eq!(r.bad_lines, 0, "{:?}", r.first_error);
    assert_eq!(r.batch.series_count(), 2);
    assert_eq!(
        r.batch.metadata,
        vec![
            MetricMetadata {
                metric_family_name: "http_requests_total".into(),
                metric_type: MetricType::Counter,
                help: "Requests \\ served\n so far.".into(),
                unit: String::new(),
            },
            MetricMetadata {
                metric_family_name: "temp".into(),
                metric_type: MetricType::Gauge,
                help: String::new(),
                unit: "celsius".into(),
            },
        ]
    );
    let r = decode("# TYPE x bogus\nx 1\n# HELP\n");
    assert_eq!(r.bad_lines, 2);
    assert_eq!(r.batch.sample_count(), 1);
}

#[test]
fn openmetrics_timestamps_are_seconds_and_eof_ends_the_body() {
    let body = concat!(
        "# TYPE foo counter\n",
        "# UNIT foo seconds\n",
        "foo_total 17.0 1520879607.789 # {id=\"c\"} 1 1520879607.7\n",
        "foo_created 1520872607.123\n",
        "# EOF\n",
    );
    let r = decode(body);
    assert_eq!(r.bad_lines, 0, "{:?}", r.first_error);
    assert_eq!(r.batch.exemplars_dropped, 1);
    assert_eq!(
        r.batch.to_series()[0].samples,
        vec![Sample::new(1_520_879_607_789, 17.0)]
    );
    assert_eq!(
        r.batch.to_series()[1].labels,
        Labels::from_pairs([("__name__", "foo_created")])
    );
    // Forced by the content type without `# EOF`; anything after EOF ignored.
    let r = decode_prom_text(
        b"a 1 1.5\n",
        &PromTextOptions {
            openmetrics: true,
            ..opts()
        },
        &DecodeLimits::default(),
    );
    assert_eq!(r.batch.to_series()[0].samples, vec![Sample::new(1500, 1.0)]);
    let r = decode("a 1\n# EOF\nb 2 garbage\n");
    assert_eq!((r.batch.series_count(), r.bad_lines), (1, 0));
}

#[test]
fn good_lines_survive_bad_ones_and_repeats_join() {
    let r = decode("a 1 1\nbad line here\na 2 2\n\r\nb{x=\"y\"} 3\n\u{0}\n");
    assert_eq!(r.bad_lines, 2);
    assert_eq!(r.first_error.as_ref().unwrap().line, 2);
    assert_eq!(r.batch.series_count(), 2);
    assert_eq!(
        r.batch.to_series()[0].samples,
        vec![Sample::new(1, 1.0), Sample::new(2, 2.0)]
    );
}

#[test]
fn invalid_utf8_empty_body_and_limits() {
    let r = decode_prom_text(b"a{x=\"\xff\"} 1\nb 1\n", &opts(), &DecodeLimits::default());
    assert_eq!((r.bad_lines, r.batch.series_count()), (1, 1));
    assert_eq!(r.first_error.unwrap().reason, "invalid UTF-8");
    assert_eq!(decode(""), ImportResult::default());
    let limits = DecodeLimits {
        max_labels_per_series: 2,
        max_label_value_len: 4,
        ..DecodeLimits::default()
    };
    let r = decode_prom_text(b"a{b=\"1\",c=\"2\",d=\"3\"} 1\na{b=\"12345\"} 1\n", &opts(), &limits);
    assert_eq!(r.bad_lines, 2);
    let huge = "a{b=\"1\"} 1\n".repeat(100_000);
    assert_eq!(decode(&huge).batch.sample_count(), 100_000);
}

#[test]
fn extra_labels_override() {
    let r = decode_prom_text(
        b"a{job=\"x\"} 1\n",
        &PromTextOptions {
            extra_labels: vec![Label::new("job", "y")],
            ..opts()
        },
        &DecodeLimits::default(),
    );
    assert_eq!(
        r.batch.to_series()[0].labels,
        Labels::from_pairs([("__name__", "a"), ("job", "y")])
    );
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

proptest! {
    /// Whatever labels and values we write in the text format parse back.
    #[test]
    fn text_round_trip(
        name in "[a-zA-Z_:][a-zA-Z0-9_:]{0,20}",
        labels in proptest::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,10}", "\\PC{1,12}", 0..5),
        v in any::<f64>(),
        t in any::<i64>(),
    ) {
        let labels: std::collections::BTreeMap<_, _> = labels.into_iter().filter(|(k, _)| k != "__name__").collect();
        let body: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
        let line = format!("{name}{{{}}} {v:?} {t}\n", body.join(","));
        let r = decode(&line);
        prop_assert!(r.first_error.is_none(), "{line:?}: {:?}", r.first_error);
        let mut want = vec![("__name__".to_string(), name.clone())];
        want.extend(labels.into_iter());
        prop_assert_eq!(&r.batch.to_series()[0].labels, &Labels::from_pairs(want));
        let got = r.batch.to_series()[0].samples[0];
        prop_assert_eq!(got.t, t);
        prop_assert!(got.v.to_bits() == v.to_bits() || (v.is_nan() && got.v.is_nan()));
    }

    #[test]
    fn never_panics(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_prom_text(&body, &opts(), &DecodeLimits::default());
    }
}
