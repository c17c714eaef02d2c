use cairn_model::Labels;

use super::*;
use crate::exposition::FamilyMetadata;
use crate::exposition::float::NORMAL_NAN_BITS;

fn floats(body: &str) -> Vec<(String, Option<i64>, f64)> {
    parse(body.as_bytes(), &ParseOptions::default())
        .unwrap()
        .samples
        .into_iter()
        .map(|s| match s.value {
            ScrapedValue::Float(v) => (s.labels.to_string(), s.timestamp_ms, v),
            ScrapedValue::Histogram(_) => panic!("histogram in text"),
        })
        .collect()
}

fn error(body: &str) -> ExpositionError {
    parse(body.as_bytes(), &ParseOptions::default()).unwrap_err()
}

#[test]
fn node_exporter_snippet() {
    let body = "# HELP go_gc_duration_seconds A summary of the pause duration of garbage collection cycles.\n\
# TYPE go_gc_duration_seconds summary\n\
go_gc_duration_seconds{quantile=\"0\"} 2.1e-05\n\
go_gc_duration_seconds{quantile=\"0.25\"} 3.3e-05\n\
go_gc_duration_seconds_sum 0.5\n\
go_gc_duration_seconds_count 12\n\
# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.\n\
# TYPE node_cpu_seconds_total counter\n\
node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1234.56\n";
    let out = parse(body.as_bytes(), &ParseOptions::default()).unwrap();
    let got: Vec<String> = out.samples.iter().map(|s| s.labels.to_string()).collect();
    assert_eq!(
        got,
        [
            r#"go_gc_duration_seconds{quantile="0.0"}"#,
            r#"go_gc_duration_seconds{quantile="0.25"}"#,
            "go_gc_duration_seconds_sum",
            "go_gc_duration_seconds_count",
            r#"node_cpu_seconds_total{cpu="0", mode="idle"}"#,
        ]
    );
    assert_eq!(out.samples[0].value, ScrapedValue::Float(2.1e-05));
    assert_eq!(
        out.metadata,
        [
            FamilyMetadata {
                name: "go_gc_duration_seconds".into(),
                kind: MetricType::Summary,
                help: "A summary of the pause duration of garbage collection cycles.".into(),
                unit: String::new(),
            },
            FamilyMetadata {
                name: "node_cpu_seconds_total".into(),
                kind: MetricType::Counter,
                help: "Seconds the CPUs spent in each mode.".into(),
                unit: String::new(),
            },
        ]
    );
}

#[test]
fn whitespace_timestamps_and_values() {
    let got = floats(
        "  a 1\n\n\tb{x=\"1\"}\t2   \nc { x = \"1\" , y=\"2\" , } 3 1700000000000  \nd{x=\"1\" y=\"2\"}-Inf\ne NaN\nf +Inf 0",
    );
    assert_eq!(got[0], ("a".into(), None, 1.0));
    assert_eq!(got[1], (r#"b{x="1"}"#.into(), None, 2.0));
    assert_eq!(got[2], (r#"c{x="1", y="2"}"#.into(), Some(1_700_000_000_000), 3.0));
    assert_eq!(got[3], (r#"d{x="1", y="2"}"#.into(), None, f64::NEG_INFINITY));
    assert_eq!(got[4].2.to_bits(), NORMAL_NAN_BITS);
    assert_eq!(got[5], ("f".into(), Some(0), f64::INFINITY));
}

#[test]
fn escapes_and_quoted_names() {
    let out = parse(
        b"# HELP m a \\\\ b \\n c \\\" d\n{\"my.metric\", \"label.name\"=\"v\\\"q\\\\\\n\\t\"} 1\nx{\"a b\"=\"1\"} 2\n",
        &ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(out.metadata[0].help, "a \\ b \n c \\\" d");
    let l = &out.samples[0].labels;
    assert_eq!(l.metric_name(), Some("my.metric"));
    assert_eq!(l.get("label.name"), Some("v\"q\\\n\\t"));
    assert_eq!(out.samples[1].labels.get("a b"), Some("1"));
}

#[test]
fn comments_are_skipped_and_type_normalises_le() {
    let got = floats(
        "#no space\n# some comment\n# HELPER x\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_bucket{le=\"1e3\"} 2\nh_sum 3\n# TYPE g gauge\ng{le=\"1\"} 1\n",
    );
    let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"h_bucket{le="1.0"}"#,
            r#"h_bucket{le="+Inf"}"#,
            r#"h_bucket{le="1000.0"}"#,
            "h_sum",
            r#"g{le="1"}"#
        ]
    );
}

#[test]
fn empty_label_values_are_dropped_and_help_may_be_empty() {
    let out = parse(b"# HELP a\n# HELP b \na{x=\"\"} 1\n", &ParseOptions::default()).unwrap();
    assert_eq!(out.samples[0].labels, Labels::from_pairs([("__name__", "a")]));
    assert_eq!(out.metadata.len(), 2);
    assert!(out.metadata.iter().all(|m| m.help.is_empty()));
}

#[test]
fn label_values_may_span_lines() {
    let out = parse(b"a{x=\"1\n2\"} 1\nb{ 2\n", &ParseOptions::default()).unwrap_err();
    assert_eq!(out.line, 3);
    let out = parse(b"a{x=\"1\n2\"} 1\n", &ParseOptions::default()).unwrap();
    assert_eq!(out.samples[0].labels.get("x"), Some("1\n2"));
}

#[test]
fn errors_fail_the_whole_body() {
    for (body, want) in [
        ("a\n", "expected value after metric"),
        ("a 1 2 3\n", "expected next entry after timestamp"),
        ("a 1 -2\n", "expected timestamp or new record"),
        ("a 1 1.5\n", "expected next entry after timestamp"),
        ("a 0x1p3\n", "unsupported character in float"),
        ("a 1_0\n", "unsupported character in float"),
        ("a abc\n", "invalid syntax"),
        ("a 1e999\n", "out of range"),
        ("a 1 99999999999999999999\n", "out of range"),
        ("a{b=\"1\",b=\"2\"} 1\n", "not unique"),
        ("a{__name__=\"b\"} 1\n", "not unique"),
        ("{\"a\",\"b\"} 1\n", "metric name already set"),
        ("{x=\"1\"} 1\n", "metric name not set"),
        ("{\"\"} 1\n", "invalid metric name"),
        ("a{x=1} 1\n", "expected label value"),
        ("a{x} 1\n", "expected equal"),
        ("a{1x=\"1\"} 1\n", "expected label name"),
        ("a{x=\"1\"\n", "expected label name"),
        ("1a 1\n", "expected a valid start token"),
        ("# TYPE a foo\n", "invalid metric type"),
        ("# TYPE a unknown\n", "invalid metric type"),
        ("# TYPE a counter \n", "invalid metric type"),
        ("# TYPE 1a counter\n", "expected metric name after TYPE"),
        ("# HELP 1a x\n", "expected metric name after HELP"),
        ("a 1\r\n", "invalid syntax"),
        ("a{x=\"\\\n\"} 1\n", "expected label value"),
    ] {
        let e = error(body);
        assert!(e.message.contains(want), "{body:?}: {e}");
    }
    assert!(
        parse(b"a{x=\"\xff\"} 1\n", &ParseOptions::default())
            .unwrap_err()
            .message
            .contains("invalid UTF-8 label value")
    );
    assert!(
        parse(b"# HELP a \xff\n", &ParseOptions::default())
            .unwrap_err()
            .message
            .contains("not a valid utf8")
    );
    let e = error("a 1\nb 2\nc\n");
    assert_eq!((e.line, e.offset), (3, 8));
}

#[test]
fn a_nul_at_line_start_ends_the_body() {
    assert_eq!(floats("a 1\n\0b 2\n").len(), 1);
    assert_eq!(floats("").len(), 0);
    assert_eq!(floats("a{x=\"\0\"} 1\n").len(), 1);
}
