use super::*;
use crate::exposition::{ScrapeFormat, parse};

fn nhcb_opts(keep: bool) -> ParseOptions {
    ParseOptions {
        convert_classic_histograms_to_nhcb: true,
        keep_classic_histograms: keep,
        ..ParseOptions::default()
    }
}

#[test]
fn conversion_checks_cumulative_counts() {
    let mut c = ClassicHistogram::default();
    c.set_bucket(5.0, 4.0);
    c.set_bucket(1.0, 2.0);
    c.set_bucket(f64::INFINITY, 5.0);
    c.set_sum(10.0);
    let h = c.convert(true).unwrap();
    assert_eq!(h.positive, [(0, 2.0), (1, 2.0), (2, 1.0)]);
    assert_eq!(h.custom_bounds.as_deref(), Some(&[1.0, 5.0][..]));
    assert_eq!((h.count, h.sum, h.reset_hint), (5.0, 10.0, ResetHint::Gauge));

    let mut c = ClassicHistogram::default();
    c.set_bucket(1.0, 3.0);
    c.set_bucket(2.0, 2.0);
    assert!(c.convert(false).unwrap_err().contains("not cumulative"));

    let mut c = ClassicHistogram::default();
    c.set_bucket(1.0, 3.0);
    c.set_count(4.0);
    c.set_bucket(f64::INFINITY, 3.0);
    assert!(c.convert(false).unwrap_err().contains("count mismatch"));

    let mut c = ClassicHistogram::default();
    c.set_bucket(1.0, -1.0);
    assert!(c.convert(false).is_err());
}

const TEXT: &str = "# TYPE lat histogram\n\
lat_bucket{path=\"/\",le=\"1\"} 2\n\
lat_bucket{path=\"/\",le=\"5\"} 4\n\
lat_bucket{path=\"/\",le=\"+Inf\"} 5\n\
lat_sum{path=\"/\"} 12.5\n\
lat_count{path=\"/\"} 5\n\
lat_bucket{path=\"/a\",le=\"+Inf\"} 1\n\
lat_sum{path=\"/a\"} 1\n\
lat_count{path=\"/a\"} 1\n\
# TYPE other gauge\n\
other 1\n";

#[test]
fn text_histograms_convert_when_asked() {
    let e = parse(ScrapeFormat::PrometheusText0_0_4, TEXT.as_bytes(), &nhcb_opts(false)).unwrap();
    let names: Vec<String> = e.samples.iter().map(|s| s.labels.to_string()).collect();
    assert_eq!(names, [r#"lat{path="/"}"#, r#"lat{path="/a"}"#, "other"]);
    let ScrapedValue::Histogram(h) = &e.samples[0].value else {
        panic!("not a histogram")
    };
    assert_eq!((h.count, h.sum), (5.0, 12.5));
    assert_eq!(h.positive, [(0, 2.0), (1, 2.0), (2, 1.0)]);

    let kept = parse(ScrapeFormat::PrometheusText0_0_4, TEXT.as_bytes(), &nhcb_opts(true)).unwrap();
    let names: Vec<String> = kept.samples.iter().map(|s| s.labels.to_string()).collect();
    assert_eq!(names.len(), 8 + 2 + 1);
    assert_eq!(names[5], r#"lat{path="/"}"#);

    let om = format!("{TEXT}# EOF\n");
    let e = parse(ScrapeFormat::OpenMetricsText1_0_0, om.as_bytes(), &nhcb_opts(false)).unwrap();
    assert_eq!(e.samples.len(), 3);
    let plain = parse(
        ScrapeFormat::PrometheusText0_0_4,
        TEXT.as_bytes(),
        &ParseOptions::default(),
    )
    .unwrap();
    assert_eq!(plain.samples.len(), 9);
}

#[test]
fn unconvertible_histograms_are_dropped() {
    let body = "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"2\"} 1\nh_count 3\n";
    let e = parse(ScrapeFormat::PrometheusText0_0_4, body.as_bytes(), &nhcb_opts(false)).unwrap();
    assert!(e.samples.is_empty());
}

#[test]
fn duplicate_bounds_keep_the_first_and_order_does_not_matter() {
    let mut c = ClassicHistogram::default();
    for i in (0..50_000).rev() {
        c.set_bucket(f64::from(i), 0.0);
    }
    c.set_bucket(1.0, 7.0);
    c.set_count(0.0);
    let h = c.convert(false).unwrap();
    assert_eq!(h.custom_bounds.as_deref().map(<[f64]>::len), Some(50_000));
    assert!(h.positive.is_empty());
}

#[test]
fn emitted_histograms_take_the_timestamp_prometheus_gives_them() {
    let body = "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1 10\nh_count 1 20\nh_sum 1 30\nother 1 40\n\
                # TYPE g histogram\ng_count 1 50\n# HELP g x\n";
    let e = parse(ScrapeFormat::PrometheusText0_0_4, body.as_bytes(), &nhcb_opts(false)).unwrap();
    let got: Vec<(String, Option<i64>)> = e
        .samples
        .iter()
        .map(|s| (s.labels.to_string(), s.timestamp_ms))
        .collect();
    assert_eq!(
        got,
        [
            ("h".to_string(), Some(40)),
            ("other".to_string(), Some(40)),
            ("g".to_string(), Some(50))
        ]
    );
}

#[test]
fn an_empty_body_is_an_empty_scrape_in_every_format() {
    for format in ScrapeFormat::all() {
        assert_eq!(
            parse(format, b"", &ParseOptions::default()),
            Ok(crate::exposition::Exposition::default())
        );
    }
    assert!(parse(ScrapeFormat::OpenMetricsText1_0_0, b"\n", &ParseOptions::default()).is_err());
}

#[test]
fn type_and_unit_labels_come_from_metadata() {
    use crate::exposition::parse_with_type_and_unit_labels as parse;
    let opts = ParseOptions::default();
    let text = "# TYPE c counter\nc_total{__type__=\"gauge\",__unit__=\"s\",x=\"1\"} 1\n# TYPE u untyped\nu{__type__=\"t\"} 1\n";
    let e = parse(ScrapeFormat::PrometheusText0_0_4, text.as_bytes(), &opts).unwrap();
    let got: Vec<String> = e.samples.iter().map(|s| s.labels.to_string()).collect();
    assert_eq!(
        got,
        [
            r#"c_total{__type__="counter", __unit__="s", x="1"}"#,
            r#"u{__type__="t"}"#,
        ]
    );
    let om = "# TYPE d_seconds gauge\n# UNIT d_seconds seconds\nd_seconds{__unit__=\"x\",__name__=\"y\"} 1\n# EOF\n";
    let e = parse(ScrapeFormat::OpenMetricsText1_0_0, om.as_bytes(), &opts).unwrap();
    assert_eq!(
        e.samples[0].labels.to_string(),
        r#"d_seconds{__type__="gauge", __unit__="seconds"}"#
    );
    let plain = crate::exposition::parse(
        ScrapeFormat::OpenMetricsText1_0_0,
        om.as_bytes(),
        &ParseOptions::default(),
    );
    assert!(plain.unwrap_err().message.contains("not unique"));
}
