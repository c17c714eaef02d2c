use super::*;
use crate::exposition::FamilyMetadata;

fn floats(body: &str, skip_created: bool) -> Vec<(String, Option<i64>, f64)> {
    parse(
        body.as_bytes(),
        &ParseOptions {
            skip_openmetrics_created_series: skip_created,
            ..ParseOptions::default()
        },
    )
    .unwrap()
    .samples
    .into_iter()
    .map(|s| match s.value {
        ScrapedValue::Float(v) => (s.labels.to_string(), s.timestamp_ms, v),
        ScrapedValue::Histogram(_) => panic!("histogram in text"),
    })
    .collect()
}

const COUNTER: &str = "# HELP http_requests Requests \\\"served\\\"\\n.\n\
# TYPE http_requests counter\n\
# UNIT http_requests \n\
http_requests_total{code=\"200\"} 10 1700000000.123\n\
http_requests_created{code=\"200\"} 1700000000\n\
# TYPE rpc_duration_seconds summary\n\
# UNIT rpc_duration_seconds seconds\n\
rpc_duration_seconds{quantile=\"0.5\"} 0.25\n\
rpc_duration_seconds_sum 1.5\n\
rpc_duration_seconds_count 6\n\
rpc_duration_seconds_created 1.5e9\n\
# TYPE up gauge\n\
up_created 1\n\
# EOF\n";

#[test]
fn counters_summaries_and_created_series() {
    let got = floats(COUNTER, false);
    let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"http_requests_total{code="200"}"#,
            r#"http_requests_created{code="200"}"#,
            r#"rpc_duration_seconds{quantile="0.5"}"#,
            "rpc_duration_seconds_sum",
            "rpc_duration_seconds_count",
            "rpc_duration_seconds_created",
            "up_created",
        ]
    );
    assert_eq!(got[0].1, Some(1_700_000_000_123));
    assert_eq!(got[1].2, 1_700_000_000.0);
    let kept = floats(COUNTER, true);
    let names: Vec<&str> = kept.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"http_requests_total{code="200"}"#,
            r#"rpc_duration_seconds{quantile="0.5"}"#,
            "rpc_duration_seconds_sum",
            "rpc_duration_seconds_count",
            "up_created",
        ]
    );
    let md = parse(COUNTER.as_bytes(), &ParseOptions::default()).unwrap().metadata;
    assert_eq!(
        md,
        [
            FamilyMetadata {
                name: "http_requests".into(),
                kind: MetricType::Counter,
                help: "Requests \"served\"\n.".into(),
                unit: String::new(),
            },
            FamilyMetadata {
                name: "rpc_duration_seconds".into(),
                kind: MetricType::Summary,
                help: String::new(),
                unit: "seconds".into(),
            },
            FamilyMetadata {
                name: "up".into(),
                kind: MetricType::Gauge,
                help: String::new(),
                unit: String::new(),
            },
        ]
    );
}

#[test]
fn histograms_info_stateset_and_exemplars() {
    let body = "# TYPE h histogram\n\
h_bucket{le=\"1\"} 1 # {trace_id=\"abc\"} 0.5 1700000000.5\n\
h_bucket{le=\"+Inf\"} 2 1.5 # {} 3\n\
h_count 2\n\
h_sum 1.5\n\
# TYPE gh gaugehistogram\n\
gh_bucket{le=\"1\"} 1\n\
gh_gcount 1\n\
gh_gsum 1\n\
# TYPE build info\n\
build_info{version=\"1.0\"} 1\n\
# TYPE state stateset\n\
state{state=\"a\"} 1\n\
state{state=\"b\"} 0\n\
# TYPE x unknown\n\
x NaN\n\
{\"my.metric\",\"a.b\"=\"c\"} -Inf\n\
# EOF";
    let got = floats(body, false);
    let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        names,
        [
            r#"h_bucket{le="1.0"}"#,
            r#"h_bucket{le="+Inf"}"#,
            "h_count",
            "h_sum",
            r#"gh_bucket{le="1"}"#,
            "gh_gcount",
            "gh_gsum",
            r#"build_info{version="1.0"}"#,
            r#"state{state="a"}"#,
            r#"state{state="b"}"#,
            "x",
            r#"my.metric{a.b="c"}"#,
        ]
    );
    assert_eq!(got[1].1, Some(1500));
    assert_eq!(got[10].2.to_bits(), crate::exposition::float::NORMAL_NAN_BITS);
}

#[test]
fn syntax_is_strict() {
    for (body, want) in [
        ("a 1\n", "does not end with # EOF"),
        ("a 1\n# EOF\nb 1\n", "unexpected data after # EOF"),
        ("a 1\n# EOF\n\n", "unexpected data after # EOF"),
        ("\na 1\n# EOF\n", "expected a valid start token"),
        (" a 1\n# EOF\n", "expected a valid start token"),
        ("# comment\n# EOF\n", "expected a valid start token"),
        ("#EOF\n", "expected a valid start token"),
        ("a  1\n# EOF\n", "expected value after metric"),
        ("a\t1\n# EOF\n", "expected value after metric"),
        ("a{x=\"1\", y=\"2\"} 1\n# EOF\n", "expected label name"),
        ("a{x=\"1\" y=\"2\"} 1\n# EOF\n", "expected comma or brace close"),
        ("a{x=\"1\n\"} 1\n# EOF\n", "expected label value"),
        ("a 1 \n# EOF\n", "expected timestamp or new record"),
        ("a 1 2 3\n# EOF\n", "expected next entry after timestamp"),
        ("a 1 NaN\n# EOF\n", "invalid timestamp"),
        ("a 1 +Inf\n# EOF\n", "invalid timestamp"),
        ("a 1 # {x=\"1\"}\n# EOF\n", "expected value after exemplar labels"),
        ("a 1 # {x=\"1\"} 1 NaN\n# EOF\n", "invalid exemplar timestamp"),
        ("a 1 # {\"x\"} 1\n# EOF\n", "expected label name"),
        ("a 1 # x\n# EOF\n", "invalid syntax"),
        ("# TYPE a untyped\n# EOF\n", "invalid metric type"),
        ("# TYPE a\n# EOF\n", "expected text in TYPE"),
        ("# UNIT a_seconds bytes\n# EOF\n", "not a suffix"),
        ("# UNIT seconds seconds\n# EOF\n", "not a suffix"),
        ("a{b=\"1\",b=\"1\"} 1\n# EOF\n", "not unique"),
        ("a 1\n# EOF\n", ""),
    ] {
        match parse(body.as_bytes(), &ParseOptions::default()) {
            Err(e) => assert!(!want.is_empty() && e.message.contains(want), "{body:?}: {e}"),
            Ok(_) => assert!(want.is_empty(), "{body:?} parsed"),
        }
    }
    let e = parse(b"a 1\nb 2\nc\n# EOF\n", &ParseOptions::default()).unwrap_err();
    assert_eq!((e.line, e.offset), (3, 8));
}

#[test]
fn trailing_comma_and_quoted_names() {
    let got = floats("a{x=\"1\",} 1\n{\"a.b\",x=\"\\\\\"} 2\n# EOF\n", false);
    assert_eq!(got[0].0, r#"a{x="1"}"#);
    assert_eq!(got[1].0, r#"a.b{x="\\"}"#);
}
