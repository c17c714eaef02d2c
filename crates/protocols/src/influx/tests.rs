use cairn_model::Labels;

use super::*;

const NOW: i64 = 1_700_000_000_000;

fn opts() -> InfluxOptions {
    InfluxOptions {
        now_ms: NOW,
        ..InfluxOptions::default()
    }
}

/// `(labels as text, t, v)` per sample, in body order.
fn decode(body: &str, opts: &InfluxOptions) -> (Vec<(String, i64, f64)>, ImportResult) {
    let r = decode_influx(body.as_bytes(), opts, &DecodeLimits::default());
    let flat = r
        .batch
        .to_series()
        .iter()
        .flat_map(|s| s.samples.iter().map(|x| (s.labels.to_string(), x.t, x.v)))
        .collect();
    (flat, r)
}

fn ok(body: &str, opts: &InfluxOptions) -> Vec<(String, i64, f64)> {
    let (flat, r) = decode(body, opts);
    assert_eq!(r.first_error, None, "{body:?}");
    flat
}

fn error(body: &str) -> String {
    let (flat, r) = decode(body, &opts());
    assert!(flat.is_empty(), "{body:?} gave {flat:?}");
    r.first_error
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("{body:?} was accepted"))
}

#[test]
fn one_series_per_field_named_measurement_underscore_field() {
    let got = ok(
        "cpu,host=a,region=eu usage_user=1.5,usage_system=2i,ok=true 1700000000000000000\n",
        &opts(),
    );
    assert_eq!(
        got,
        vec![
            (r#"cpu_usage_user{host="a", region="eu"}"#.into(), NOW, 1.5),
            (r#"cpu_usage_system{host="a", region="eu"}"#.into(), NOW, 2.0),
            (r#"cpu_ok{host="a", region="eu"}"#.into(), NOW, 1.0),
        ]
    );
}

#[test]
fn value_types() {
    let got = ok(
        "m a=-1.5e3,b=7i,c=18446744073709551615u,d=t,e=F,f=False,g=TRUE,h=.5,i=-0,j=+3 1000000",
        &opts(),
    );
    let values: Vec<f64> = got.iter().map(|x| x.2).collect();
    assert_eq!(
        values,
        vec![-1500.0, 7.0, 18446744073709551615.0, 1.0, 0.0, 0.0, 1.0, 0.5, -0.0, 3.0]
    );
    assert!(values[8].is_sign_negative());
    for bad in [
        "m a=NaN", "m a=inf", "m a=-Inf", "m a=1x", "m a=1.5i", "m a=-1u", "m a=", "m a=yes",
    ] {
        assert!(error(bad).contains("invalid value"), "{bad}");
    }
}

#[test]
fn string_fields_are_skipped_and_counted_the_rest_kept() {
    let (flat, r) = decode(
        "syslog,host=a msg=\"disk full, \\\"sda\\\" at 99 %\",severity=3i,note=\"x=y z\" 1000000\n",
        &opts(),
    );
    assert_eq!(r.first_error, None);
    assert_eq!(r.string_values_skipped, 2);
    assert_eq!(flat, vec![(r#"syslog_severity{host="a"}"#.into(), 1, 3.0)]);
    // A line of only string fields is good and stores nothing.
    let (flat, r) = decode("log msg=\"hi\"\n", &opts());
    assert_eq!((flat.len(), r.bad_lines, r.string_values_skipped), (0, 0, 1));
    assert!(error("m s=\"open").contains("unterminated string"));
    assert!(error("m s=\"a\"b=1").contains("after the closing quote"));
}

#[test]
fn escapes_as_victoriametrics_reads_them() {
    let got = ok(
        r#"disk\ io\,x,path=/var\ log,k\=ey=v\,al\=ue,win=C:\dir field\ one=1,f\,2=2,f\=3=3 1000000"#,
        &opts(),
    );
    let labels: Vec<&str> = got.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(
        labels,
        vec![
            r#"disk io,x_field one{k=ey="v,al=ue", path="/var log", win="C:\\dir"}"#,
            r#"disk io,x_f,2{k=ey="v,al=ue", path="/var log", win="C:\\dir"}"#,
            r#"disk io,x_f=3{k=ey="v,al=ue", path="/var log", win="C:\\dir"}"#,
        ]
    );
}

#[test]
fn precisions() {
    let cases = [
        ("", 1_700_000_000_123_456_789_i64, 1_700_000_000_123_i64),
        ("ns", 1_700_000_000_123_456_789, 1_700_000_000_123),
        ("u", 1_700_000_000_123_456, 1_700_000_000_123),
        ("us", 1_700_000_000_123_456, 1_700_000_000_123),
        ("µ", 1_700_000_000_123_456, 1_700_000_000_123),
        ("ms", 1_700_000_000_123, 1_700_000_000_123),
        ("s", 1_700_000_000, 1_700_000_000_000),
        ("m", 28_333_333, 1_699_999_980_000),
        ("h", 472_222, 1_699_999_200_000),
        ("ns", -1, -1),
        ("ns", -1_000_001, -2),
    ];
    for (p, ts, want) in cases {
        let precision = Precision::parse(p).unwrap_or_else(|| panic!("{p}"));
        let got = ok(&format!("m v=1 {ts}"), &InfluxOptions { precision, ..opts() });
        assert_eq!(got[0].1, want, "precision {p:?}");
    }
    assert_eq!(Precision::parse("d"), None);
    assert!(
        decode(
            "m v=1 9223372036854775807",
            &InfluxOptions {
                precision: Precision::Seconds,
                ..opts()
            }
        )
        .1
        .first_error
        .unwrap()
        .reason
        .contains("overflows")
    );
    assert!(error("m v=1 12a").contains("invalid timestamp"));
    assert!(error("m v=1 1 2").contains("invalid timestamp"));
}

#[test]
fn missing_timestamp_is_request_time() {
    assert_eq!(ok("m v=1", &opts())[0].1, NOW);
    assert_eq!(ok("m v=1   ", &opts())[0].1, NOW);
}

#[test]
fn db_parameter_is_a_label_unless_a_tag_names_it() {
    let with_db = InfluxOptions {
        db: Some("telegraf".into()),
        ..opts()
    };
    assert_eq!(ok("m,h=a v=1 0", &with_db)[0].0, r#"m_v{db="telegraf", h="a"}"#);
    assert_eq!(ok("m,db=mine v=1 0", &with_db)[0].0, r#"m_v{db="mine"}"#);
    let extra = InfluxOptions {
        extra_labels: vec![Label::new("h", "override"), Label::new("env", "prod")],
        ..with_db
    };
    assert_eq!(
        ok("m,h=a v=1 0", &extra)[0].0,
        r#"m_v{db="telegraf", env="prod", h="override"}"#
    );
}

#[test]
fn bad_lines_are_counted_good_lines_kept() {
    let body = "# a comment\n\nm v=1 1000000\r\nbad line here\nm,t v=1\nm v=2 2000000\n  \n";
    let (flat, r) = decode(body, &opts());
    assert_eq!(flat.len(), 2);
    assert_eq!(r.bad_lines, 2);
    let first = r.first_error.unwrap();
    assert_eq!(first.line, 4);
    assert!(first.reason.contains("has no value"), "{first}");
}

#[test]
fn structural_errors() {
    assert!(error("m").contains("missing fields"));
    assert!(error(",t=1 v=1").contains("missing measurement"));
    assert!(error("m,=x v=1").contains("empty tag key"));
    assert!(error("m,__name__=x v=1").contains("reserved"));
    assert!(error("m =1").contains("empty field key"));
    assert!(error("m v").contains("no value"));
    assert!(error("m,a=1,a=2 v=1").contains("duplicate label name"));
    let (_, r) = decode_bytes(b"m,t=\xff v=1");
    assert_eq!(r.first_error.unwrap().reason, "invalid UTF-8");
}

fn decode_bytes(body: &[u8]) -> (usize, ImportResult) {
    let r = decode_influx(body, &opts(), &DecodeLimits::default());
    (r.batch.series_count(), r)
}

#[test]
fn limits_apply_to_tags_and_names() {
    let limits = DecodeLimits {
        max_labels_per_series: 2,
        max_label_value_len: 8,
        ..DecodeLimits::default()
    };
    let r = decode_influx(b"m,a=1,b=2 v=1\nm,a=1 v=1\nm,a=1 long_field=1", &opts(), &limits);
    assert_eq!(r.batch.series_count(), 1);
    assert_eq!(r.bad_lines, 2);
}

#[test]
fn empty_and_huge_bodies() {
    let (n, r) = decode_bytes(b"");
    assert_eq!((n, r.bad_lines), (0, 0));
    let mut body = String::new();
    for i in 0..100_000 {
        body.push_str(&format!("cpu,host=h{} user={i},idle={i}i {i}000000000\n", i % 100));
    }
    let (n, r) = decode_bytes(body.as_bytes());
    assert_eq!((n, r.bad_lines), (200_000, 0));
    let last = &r.batch.to_series()[199_999];
    assert_eq!(
        last.labels,
        Labels::from_pairs([("__name__", "cpu_idle"), ("host", "h99")])
    );
    assert_eq!(last.samples, vec![Sample::new(99_999_000, 99_999.0)]);
}

#[test]
fn double_backslashes_and_empty_tags_as_victoriametrics() {
    // Checked against VictoriaMetrics 1.79.5: `a\\b` is `a\b`, `c\d` stays,
    // and an empty tag value is no label.
    let got = ok(r"bs,t=a\\b,u=c\d,e= v=1 1000000", &opts());
    assert_eq!(got[0].0, r#"bs_v{t="a\\b", u="c\\d"}"#);
    let with_db = InfluxOptions {
        db: Some("x".into()),
        ..opts()
    };
    // An empty `db` tag does not stop the parameter from naming the database.
    assert_eq!(ok("m,db= v=1 0", &with_db)[0].0, r#"m_v{db="x"}"#);
}

#[test]
fn a_single_series_line_round_trips_through_the_writer() {
    // What Telegraf's serializer writes for a tag value and field key that
    // need every escape.
    let got = ok(r#"net,iface=eth\ 0\,1\=x bytes\=in=10i 1000000"#, &opts());
    assert_eq!(got[0].0, r#"net_bytes=in{iface="eth 0,1=x"}"#);
}

/// Escapes as Telegraf's serializer does: a backslash before each of
/// `specials` and before a backslash.
fn escape(s: &str, specials: &[char]) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if specials.contains(&c) || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

proptest::proptest! {
    /// Any line a line-protocol writer produces (names with spaces, commas,
    /// equals signs, quotes and non-ASCII; any finite value; any
    /// nanosecond timestamp) reads back as the series it describes.
    #[test]
    fn written_lines_read_back(
        measurement in "[a-z ,=\"é\\\\]{1,8}",
        tags in proptest::collection::btree_map("[a-z ,=\\\\]{1,6}", "[a-z ,=\"é\\\\]{1,6}", 0..4),
        fields in proptest::collection::btree_map("[a-z ,=\\\\]{1,6}", proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL, 1..4),
        ts in proptest::prelude::any::<i64>(),
    ) {
        let mut line = escape(&measurement, &[',', ' ']);
        for (k, v) in &tags {
            line.push_str(&format!(",{}={}", escape(k, &[',', '=', ' ']), escape(v, &[',', '=', ' '])));
        }
        let fields_text: Vec<String> = fields
            .iter()
            .map(|(k, v)| format!("{}={v:?}", escape(k, &[',', '=', ' '])))
            .collect();
        line.push_str(&format!(" {} {ts}", fields_text.join(",")));
        let r = decode_influx(line.as_bytes(), &opts(), &DecodeLimits::default());
        proptest::prop_assert_eq!(r.first_error, None, "{}", line);
        let want: Vec<SeriesSamples> = fields
            .iter()
            .map(|(k, v)| {
                let mut labels: Vec<Label> = tags.iter().map(|(k, v)| Label::new(k.as_str(), v.as_str())).collect();
                labels.push(Label::new("__name__", format!("{measurement}_{k}")));
                SeriesSamples::new(Labels::new(labels).unwrap(), vec![Sample::new(ts.div_euclid(1_000_000), *v)])
            })
            .collect();
        proptest::prop_assert_eq!(r.batch.to_series(), want, "{}", line);
    }
}
