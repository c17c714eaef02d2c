use std::io::Write;

use cairn_model::{Labels, Sample, is_stale_nan};
use prost::Message;

use super::proto::*;
use super::*;
use crate::{DecodeLimits, MetricMetadata, MetricType};

/// Receive time used for points without a timestamp.
const NOW_MS: i64 = 1_700_000_999_000;
const T1: u64 = 1_700_000_000_123_456_789;

fn some_value(v: any_value::Value) -> Option<AnyValue> {
    Some(AnyValue { value: Some(v) })
}

fn kv(key: &str, v: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: some_value(v),
    }
}

fn request(resource: Vec<KeyValue>, metrics: Vec<Metric>) -> ExportMetricsServiceRequest {
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource,
                dropped_attributes_count: 0,
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "test-scope".into(),
                    ..Default::default()
                }),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn metric(name: &str, unit: &str, data: metric::Data) -> Metric {
    Metric {
        name: name.into(),
        description: format!("{name} help"),
        unit: unit.into(),
        data: Some(data),
        metadata: vec![],
    }
}

fn number(attrs: &[(&str, &str)], t: u64, v: f64) -> NumberDataPoint {
    NumberDataPoint {
        attributes: attrs.iter().map(|(k, v)| KeyValue::string(*k, *v)).collect(),
        time_unix_nano: t,
        value: Some(number_data_point::Value::AsDouble(v)),
        ..Default::default()
    }
}

fn gauge(name: &str, unit: &str, points: Vec<NumberDataPoint>) -> Metric {
    metric(name, unit, metric::Data::Gauge(Gauge { data_points: points }))
}

fn sum(
    name: &str,
    unit: &str,
    temporality: AggregationTemporality,
    monotonic: bool,
    points: Vec<NumberDataPoint>,
) -> Metric {
    metric(
        name,
        unit,
        metric::Data::Sum(Sum {
            data_points: points,
            aggregation_temporality: temporality as i32,
            is_monotonic: monotonic,
        }),
    )
}

fn histogram(name: &str, unit: &str, temporality: AggregationTemporality, points: Vec<HistogramDataPoint>) -> Metric {
    metric(
        name,
        unit,
        metric::Data::Histogram(Histogram {
            data_points: points,
            aggregation_temporality: temporality as i32,
        }),
    )
}

fn decode_with(body: &[u8], limits: &DecodeLimits) -> Result<Decoded, DecodeError> {
    decode_export_request(body, ContentEncoding::Identity, limits, NOW_MS)
}

fn decode(req: &ExportMetricsServiceRequest) -> Decoded {
    decode_with(&req.encode_to_vec(), &DecodeLimits::default()).unwrap()
}

/// One line per series: `{labels} t:v t:v`, stale markers as `stale`.
fn show(d: &Decoded) -> Vec<String> {
    d.batch
        .to_series()
        .iter()
        .map(|s| {
            let labels: Vec<String> = s.labels.iter().map(|l| format!("{}={:?}", l.name, l.value)).collect();
            let samples: Vec<String> = s
                .samples
                .iter()
                .map(|smp| {
                    if is_stale_nan(smp.v) {
                        format!("{}:stale", smp.t)
                    } else {
                        format!("{}:{}", smp.t, smp.v)
                    }
                })
                .chain(s.histograms.iter().map(|hs| {
                    let h = &hs.h;
                    format!(
                        "{}:hist(schema={} count={} sum={} zero={}@{:e} pos={:?} neg={:?})",
                        hs.t, h.schema, h.count, h.sum, h.zero_count, h.zero_threshold, h.positive, h.negative
                    )
                }))
                .collect();
            format!("{{{}}} {}", labels.join(","), samples.join(" "))
        })
        .collect()
}

#[track_caller]
fn check(req: &ExportMetricsServiceRequest, want: &[&str]) -> Decoded {
    let d = decode(req);
    assert_eq!(show(&d), want);
    d
}

fn md(name: &str, t: MetricType, help: &str, unit: &str) -> MetricMetadata {
    MetricMetadata {
        metric_family_name: name.into(),
        metric_type: t,
        help: help.into(),
        unit: unit.into(),
    }
}

#[test]
fn gauge_double_and_int_values() {
    let mut int_point = number(&[("cpu", "0")], T1, 0.0);
    int_point.value = Some(number_data_point::Value::AsInt(-7));
    let d = check(
        &request(
            vec![],
            vec![gauge(
                "system.memory.usage",
                "By",
                vec![number(&[("state", "used")], T1, 1.5), int_point],
            )],
        ),
        &[
            r#"{__name__="system_memory_usage_bytes",state="used"} 1700000000123:1.5"#,
            r#"{__name__="system_memory_usage_bytes",cpu="0"} 1700000000123:-7"#,
        ],
    );
    assert_eq!(
        d.batch.metadata,
        vec![md(
            "system_memory_usage_bytes",
            MetricType::Gauge,
            "system.memory.usage help",
            "By"
        )]
    );
    assert_eq!((d.data_points, d.rejected.total()), (2, 0));
}

#[test]
fn gauge_with_unit_1_gets_ratio() {
    check(
        &request(vec![], vec![gauge("cpu.utilization", "1", vec![number(&[], T1, 0.25)])]),
        &[r#"{__name__="cpu_utilization_ratio"} 1700000000123:0.25"#],
    );
}

#[test]
fn cumulative_monotonic_sum_is_a_counter_with_total() {
    let d = check(
        &request(
            vec![],
            vec![sum(
                "http.server.requests",
                "{request}",
                AggregationTemporality::Cumulative,
                true,
                vec![
                    number(&[("code", "200")], T1, 10.0),
                    number(&[("code", "200")], T1 + 15_000_000_000, 12.0),
                ],
            )],
        ),
        &[r#"{__name__="http_server_requests_total",code="200"} 1700000000123:10 1700000015123:12"#],
    );
    assert_eq!(
        d.batch.metadata,
        vec![md(
            "http_server_requests_total",
            MetricType::Counter,
            "http.server.requests help",
            "{request}"
        )]
    );
}

#[test]
fn cumulative_non_monotonic_sum_is_a_gauge() {
    let d = check(
        &request(
            vec![],
            vec![sum(
                "queue.size",
                "1",
                AggregationTemporality::Cumulative,
                false,
                vec![number(&[], T1, -3.0)],
            )],
        ),
        &[r#"{__name__="queue_size"} 1700000000123:-3"#],
    );
    assert_eq!(d.batch.metadata[0].metric_type, MetricType::Gauge);
}

#[test]
fn delta_and_unspecified_temporality_are_rejected_with_a_reason() {
    let d = check(
        &request(
            vec![],
            vec![
                sum(
                    "a",
                    "",
                    AggregationTemporality::Delta,
                    true,
                    vec![number(&[], T1, 1.0), number(&[], T1, 2.0)],
                ),
                histogram(
                    "h",
                    "s",
                    AggregationTemporality::Delta,
                    vec![HistogramDataPoint::default()],
                ),
                sum(
                    "u",
                    "",
                    AggregationTemporality::Unspecified,
                    true,
                    vec![number(&[], T1, 1.0)],
                ),
                gauge("ok", "", vec![number(&[], T1, 1.0)]),
            ],
        ),
        &[r#"{__name__="ok"} 1700000000123:1"#],
    );
    assert_eq!(d.data_points, 5);
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![
            (RejectReason::DeltaTemporality, 3),
            (RejectReason::UnspecifiedTemporality, 1)
        ]
    );
    assert_eq!(
        d.rejected.message(),
        "rejected 4 data points: 3 delta_temporality (e.g. metric \"a\" has delta temporality; Cairn stores \
         cumulative series only: configure the exporter for cumulative temporality); 1 unspecified_temporality \
         (e.g. metric \"u\" has temporality 0, not cumulative)"
    );
    // Rejected metrics leave no metadata behind.
    assert_eq!(d.batch.metadata.len(), 1);
}

fn histogram_point(
    attrs: &[(&str, &str)],
    count: u64,
    sum: Option<f64>,
    bounds: &[f64],
    counts: &[u64],
) -> HistogramDataPoint {
    HistogramDataPoint {
        attributes: attrs.iter().map(|(k, v)| KeyValue::string(*k, *v)).collect(),
        time_unix_nano: T1,
        count,
        sum,
        bucket_counts: counts.to_vec(),
        explicit_bounds: bounds.to_vec(),
        ..Default::default()
    }
}

#[test]
fn histograms_become_custom_bucket_histograms_when_asked() {
    let mut stale = histogram_point(&[("route", "/")], 0, None, &[1.0], &[0, 0]);
    stale.time_unix_nano = T1 + 15_000_000_000;
    stale.flags = FLAG_NO_RECORDED_VALUE;
    let req = request(
        vec![],
        vec![
            histogram(
                "http.server.request.duration",
                "s",
                AggregationTemporality::Cumulative,
                vec![
                    histogram_point(&[("route", "/")], 10, Some(2.5), &[0.005, 0.1, 1.0], &[0, 2, 3, 5]),
                    stale,
                    // Its count is not its buckets' total.
                    histogram_point(&[("route", "/x")], 4, Some(2.5), &[1.0], &[1, 2]),
                ],
            ),
            histogram(
                "d",
                "",
                AggregationTemporality::Delta,
                vec![histogram_point(&[], 1, None, &[], &[1])],
            ),
        ],
    );
    let options = Options {
        convert_histograms_to_nhcb: true,
    };
    let d = decode_export_request_with(
        &req.encode_to_vec(),
        ContentEncoding::Identity,
        &DecodeLimits::default(),
        NOW_MS,
        &options,
    )
    .unwrap();
    assert_eq!(
        show(&d),
        [
            r#"{__name__="http_server_request_duration_seconds",route="/"} 1700000015123:stale 1700000000123:hist(schema=-53 count=10 sum=2.5 zero=0@0e0 pos=[(1, 2.0), (2, 3.0), (3, 5.0)] neg=[])"#
        ]
    );
    let series = d.batch.to_series();
    assert_eq!(series[0].histograms[0].h.bounds(), [0.005, 0.1, 1.0]);
    assert_eq!(d.batch.histograms_written(), 2);
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::DeltaTemporality, 1), (RejectReason::InvalidHistogram, 1)]
    );
    assert!(
        d.rejected
            .message()
            .contains("3 observations found in buckets, but the histogram's count is 4"),
        "{}",
        d.rejected.message()
    );
    assert_eq!(
        d.batch.metadata[0],
        md(
            "http_server_request_duration_seconds",
            MetricType::Histogram,
            "http.server.request.duration help",
            "s"
        )
    );
    // The default stays classic.
    assert!(decode(&req).batch.series().all(|s| s.histograms().is_empty()));
}

#[test]
fn histogram_becomes_cumulative_classic_buckets() {
    let d = check(
        &request(
            vec![],
            vec![histogram(
                "http.server.request.duration",
                "s",
                AggregationTemporality::Cumulative,
                vec![histogram_point(
                    &[("route", "/")],
                    10,
                    Some(2.5),
                    &[0.005, 0.1, 1.0],
                    &[1, 2, 3, 4],
                )],
            )],
        ),
        &[
            r#"{__name__="http_server_request_duration_seconds_sum",route="/"} 1700000000123:2.5"#,
            r#"{__name__="http_server_request_duration_seconds_count",route="/"} 1700000000123:10"#,
            r#"{__name__="http_server_request_duration_seconds_bucket",le="0.005",route="/"} 1700000000123:1"#,
            r#"{__name__="http_server_request_duration_seconds_bucket",le="0.1",route="/"} 1700000000123:3"#,
            r#"{__name__="http_server_request_duration_seconds_bucket",le="1",route="/"} 1700000000123:6"#,
            r#"{__name__="http_server_request_duration_seconds_bucket",le="+Inf",route="/"} 1700000000123:10"#,
        ],
    );
    assert_eq!(
        d.batch.metadata,
        vec![md(
            "http_server_request_duration_seconds",
            MetricType::Histogram,
            "http.server.request.duration help",
            "s"
        )]
    );
}

#[test]
fn histogram_without_sum_or_buckets() {
    check(
        &request(
            vec![],
            vec![histogram(
                "h",
                "",
                AggregationTemporality::Cumulative,
                vec![histogram_point(&[], 4, None, &[], &[])],
            )],
        ),
        &[
            r#"{__name__="h_count"} 1700000000123:4"#,
            r#"{__name__="h_bucket",le="+Inf"} 1700000000123:4"#,
        ],
    );
}

#[test]
fn malformed_histograms_are_rejected_point_by_point() {
    let d = check(
        &request(
            vec![],
            vec![histogram(
                "h",
                "",
                AggregationTemporality::Cumulative,
                vec![
                    histogram_point(&[], 1, None, &[1.0, 2.0], &[1, 0]),
                    histogram_point(&[], 1, None, &[2.0, 1.0], &[0, 0, 1]),
                    histogram_point(&[], 1, None, &[f64::NAN], &[0, 1]),
                    histogram_point(&[], 1, None, &[1.0, f64::INFINITY], &[0, 0, 1]),
                    histogram_point(&[("ok", "1")], 1, None, &[1.0], &[0, 1]),
                ],
            )],
        ),
        &[
            r#"{__name__="h_count",ok="1"} 1700000000123:1"#,
            r#"{__name__="h_bucket",le="1",ok="1"} 1700000000123:0"#,
            r#"{__name__="h_bucket",le="+Inf",ok="1"} 1700000000123:1"#,
        ],
    );
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::InvalidBuckets, 4)]
    );
    assert!(
        d.rejected
            .message()
            .contains("has 2 bucket counts for 2 bounds (want bounds + 1)"),
        "{}",
        d.rejected.message()
    );
}

#[test]
fn summary_becomes_quantile_series() {
    let point = SummaryDataPoint {
        attributes: vec![KeyValue::string("db", "main")],
        time_unix_nano: T1,
        count: 100,
        sum: 12.5,
        quantile_values: vec![
            ValueAtQuantile {
                quantile: 0.5,
                value: 0.1,
            },
            ValueAtQuantile {
                quantile: 0.99,
                value: 0.9,
            },
        ],
        ..Default::default()
    };
    let d = check(
        &request(
            vec![],
            vec![metric(
                "db.query.time",
                "ms",
                metric::Data::Summary(Summary {
                    data_points: vec![point],
                }),
            )],
        ),
        &[
            r#"{__name__="db_query_time_milliseconds_sum",db="main"} 1700000000123:12.5"#,
            r#"{__name__="db_query_time_milliseconds_count",db="main"} 1700000000123:100"#,
            r#"{__name__="db_query_time_milliseconds",db="main",quantile="0.5"} 1700000000123:0.1"#,
            r#"{__name__="db_query_time_milliseconds",db="main",quantile="0.99"} 1700000000123:0.9"#,
        ],
    );
    assert_eq!(d.batch.metadata[0].metric_type, MetricType::Summary);
}

fn exp_point(attrs: &[(&str, &str)], t: u64, scale: i32, offset: i32, counts: &[u64]) -> ExponentialHistogramDataPoint {
    ExponentialHistogramDataPoint {
        attributes: attrs.iter().map(|(k, v)| KeyValue::string(*k, *v)).collect(),
        time_unix_nano: t,
        count: counts.iter().sum::<u64>() + 1,
        sum: Some(4.5),
        scale,
        zero_count: 1,
        zero_threshold: 0.001,
        min: Some(0.0),
        max: Some(9.0),
        positive: Some(Buckets {
            offset,
            bucket_counts: counts.to_vec(),
        }),
        ..Default::default()
    }
}

fn exp_histogram(
    name: &str,
    unit: &str,
    temporality: AggregationTemporality,
    points: Vec<ExponentialHistogramDataPoint>,
) -> Metric {
    metric(
        name,
        unit,
        metric::Data::ExponentialHistogram(ExponentialHistogram {
            data_points: points,
            aggregation_temporality: temporality as i32,
        }),
    )
}

#[test]
fn exponential_histograms_become_native_histograms() {
    let mut stale = exp_point(&[("method", "GET")], T1 + 60_000_000_000, 0, 0, &[]);
    stale.flags = FLAG_NO_RECORDED_VALUE;
    let mut negative = exp_point(&[("method", "PUT")], T1, -4, 0, &[]);
    negative.negative = Some(Buckets {
        offset: -1,
        bucket_counts: vec![2, 3],
    });
    negative.count += 5;
    negative.sum = None;
    let d = check(
        &request(
            vec![],
            vec![exp_histogram(
                "http.server.request.duration",
                "s",
                AggregationTemporality::Cumulative,
                vec![
                    // Scale 10 is merged down to schema 8: OTLP buckets
                    // 0..=3 fall into Prometheus' 1, bucket 4 into 2.
                    exp_point(&[("method", "GET")], T1, 10, 0, &[1, 1, 1, 1, 1]),
                    stale,
                    negative,
                ],
            )],
        ),
        &[
            r#"{__name__="http_server_request_duration_seconds",method="GET"} 1700000060123:stale 1700000000123:hist(schema=8 count=6 sum=4.5 zero=1@1e-128 pos=[(1, 4.0), (2, 1.0)] neg=[])"#,
            r#"{__name__="http_server_request_duration_seconds",method="PUT"} 1700000000123:hist(schema=-4 count=6 sum=0 zero=1@1e-128 pos=[] neg=[(0, 2.0), (1, 3.0)])"#,
        ],
    );
    assert_eq!(
        (
            d.batch.histogram_count(),
            d.batch.histogram_stale_markers(),
            d.batch.histograms_written()
        ),
        (2, 1, 3)
    );
    assert_eq!(
        d.batch.metadata,
        [md(
            "http_server_request_duration_seconds",
            MetricType::Histogram,
            "http.server.request.duration help",
            "s"
        )]
    );
    assert!(d.rejected.is_empty());
}

#[test]
fn exponential_histograms_prometheus_refuses_are_rejected_one_by_one() {
    let mut wrong_count = exp_point(&[], T1, 0, 0, &[1, 2]);
    wrong_count.count = 1;
    let d = check(
        &request(
            vec![],
            vec![
                exp_histogram(
                    "latency",
                    "s",
                    AggregationTemporality::Cumulative,
                    vec![
                        exp_point(&[], T1, -5, 0, &[1]),
                        wrong_count,
                        exp_point(&[], T1, 0, 0, &[1]),
                    ],
                ),
                exp_histogram(
                    "d",
                    "",
                    AggregationTemporality::Delta,
                    vec![exp_point(&[], T1, 0, 0, &[1])],
                ),
            ],
        ),
        &[
            r#"{__name__="latency_seconds"} 1700000000123:hist(schema=0 count=2 sum=4.5 zero=1@1e-128 pos=[(1, 1.0)] neg=[])"#,
        ],
    );
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::DeltaTemporality, 1), (RejectReason::InvalidHistogram, 2)]
    );
    let message = d.rejected.message();
    assert!(
        message.contains(r#"exponential histogram "latency": exponential histogram scale -5 is below -4"#),
        "{message}"
    );
    let limits = DecodeLimits {
        max_histogram_buckets: 1,
        ..DecodeLimits::default()
    };
    let req = request(
        vec![],
        vec![exp_histogram(
            "latency",
            "s",
            AggregationTemporality::Cumulative,
            vec![exp_point(&[], T1, 0, 0, &[1, 1])],
        )],
    );
    let d = decode_with(&req.encode_to_vec(), &limits).unwrap();
    assert!(
        d.rejected.message().contains("2 buckets, over the limit of 1"),
        "{}",
        d.rejected.message()
    );
}

#[test]
fn no_recorded_value_flag_writes_stale_markers_everywhere() {
    let mut g = number(&[], T1, 5.0);
    g.flags = FLAG_NO_RECORDED_VALUE;
    let mut no_value = number(&[("x", "1")], T1, 0.0);
    no_value.value = None;
    no_value.flags = FLAG_NO_RECORDED_VALUE;
    let mut h = histogram_point(&[], 3, Some(1.0), &[1.0], &[1, 2]);
    h.flags = FLAG_NO_RECORDED_VALUE;
    let mut s = SummaryDataPoint {
        time_unix_nano: T1,
        quantile_values: vec![ValueAtQuantile {
            quantile: 0.5,
            value: 1.0,
        }],
        ..Default::default()
    };
    s.flags = FLAG_NO_RECORDED_VALUE;
    let d = check(
        &request(
            vec![],
            vec![
                gauge("g", "", vec![g, no_value]),
                histogram("h", "", AggregationTemporality::Cumulative, vec![h]),
                metric("s", "", metric::Data::Summary(Summary { data_points: vec![s] })),
            ],
        ),
        &[
            r#"{__name__="g"} 1700000000123:stale"#,
            r#"{__name__="g",x="1"} 1700000000123:stale"#,
            r#"{__name__="h_sum"} 1700000000123:stale"#,
            r#"{__name__="h_count"} 1700000000123:stale"#,
            r#"{__name__="h_bucket",le="1"} 1700000000123:stale"#,
            r#"{__name__="h_bucket",le="+Inf"} 1700000000123:stale"#,
            r#"{__name__="s_sum"} 1700000000123:stale"#,
            r#"{__name__="s_count"} 1700000000123:stale"#,
            r#"{__name__="s",quantile="0.5"} 1700000000123:stale"#,
        ],
    );
    // The exact bit pattern Prometheus uses.
    assert_eq!(
        d.batch.to_series()[0].samples[0].v.to_bits(),
        cairn_model::STALE_NAN_BITS
    );
}

#[test]
fn timestamps_truncate_to_ms_and_missing_ones_get_receive_time() {
    check(
        &request(
            vec![],
            vec![gauge(
                "g",
                "",
                vec![
                    number(&[], 1_999_999, 1.0),
                    number(&[], 0, 2.0),
                    number(&[], u64::MAX, 3.0),
                ],
            )],
        ),
        &[r#"{__name__="g"} 1:1 1700000999000:2 18446744073709:3"#],
    );
}

#[test]
fn points_without_a_value_are_rejected() {
    let mut p = number(&[], T1, 0.0);
    p.value = None;
    let d = check(&request(vec![], vec![gauge("g", "", vec![p])]), &[]);
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::MissingValue, 1)]
    );
}

#[test]
fn service_attributes_become_job_and_instance_and_the_rest_target_info() {
    let resource = vec![
        KeyValue::string("service.name", "checkout"),
        KeyValue::string("service.namespace", "shop"),
        KeyValue::string("service.instance.id", "pod-1"),
        KeyValue::string("host.name", "node-a"),
        kv("process.pid", any_value::Value::IntValue(42)),
    ];
    let points = vec![
        // A data point's own job/instance attributes lose to the resource's.
        number(&[("job", "mine"), ("instance", "mine")], T1, 1.0),
        number(&[], T1 + 400_000_000_000, 2.0),
    ];
    check(
        &request(resource, vec![gauge("g", "", points)]),
        &[
            r#"{__name__="g",instance="pod-1",job="shop/checkout"} 1700000000123:1 1700000400123:2"#,
            // From the earliest to the latest point every 150 s, at most one
            // sample per point, then the latest.
            r#"{__name__="target_info",host_name="node-a",instance="pod-1",job="shop/checkout",process_pid="42"} 1700000000123:1 1700000150123:1 1700000400123:1"#,
        ],
    );
}

#[test]
fn target_info_needs_other_attributes_and_an_identifier() {
    // Only identifying attributes: no target_info.
    check(
        &request(
            vec![KeyValue::string("service.name", "svc")],
            vec![gauge("g", "", vec![number(&[], T1, 1.0)])],
        ),
        &[r#"{__name__="g",job="svc"} 1700000000123:1"#],
    );
    // No job or instance: no target_info either.
    check(
        &request(
            vec![KeyValue::string("host.name", "h")],
            vec![gauge("g", "", vec![number(&[], T1, 1.0)])],
        ),
        &[r#"{__name__="g"} 1700000000123:1"#],
    );
    // No points: nothing.
    check(
        &request(
            vec![KeyValue::string("service.name", "svc"), KeyValue::string("a", "b")],
            vec![],
        ),
        &[],
    );
}

#[test]
fn attributes_of_every_kind_become_label_values() {
    let attrs = vec![
        kv("s", any_value::Value::StringValue("text".into())),
        kv("b", any_value::Value::BoolValue(true)),
        kv("i", any_value::Value::IntValue(-5)),
        kv("d", any_value::Value::DoubleValue(0.25)),
        kv("bytes", any_value::Value::BytesValue(vec![1, 2, 3])),
        kv(
            "arr",
            any_value::Value::ArrayValue(ArrayValue {
                values: vec![AnyValue {
                    value: Some(any_value::Value::StringValue("x".into())),
                }],
            }),
        ),
        kv(
            "map",
            any_value::Value::KvlistValue(KeyValueList {
                values: vec![KeyValue::string("k", "v")],
            }),
        ),
        KeyValue {
            key: "empty".into(),
            value: None,
        },
    ];
    let p = NumberDataPoint {
        attributes: attrs,
        time_unix_nano: T1,
        value: Some(number_data_point::Value::AsDouble(1.0)),
        ..Default::default()
    };
    check(
        &request(vec![], vec![gauge("g", "", vec![p])]),
        &[
            r#"{__name__="g",arr="[\"x\"]",b="true",bytes="AQID",d="0.25",i="-5",map="{\"k\":\"v\"}",s="text"} 1700000000123:1"#,
        ],
    );
}

#[test]
fn attributes_colliding_after_translation_are_joined_in_key_order() {
    check(
        &request(
            vec![],
            vec![gauge(
                "g",
                "",
                vec![number(
                    &[
                        ("a_b", "2"),
                        ("a.b", "1"),
                        ("a-b", "0"),
                        ("__name__", "x"),
                        ("1st", "y"),
                    ],
                    T1,
                    1.0,
                )],
            )],
        ),
        &[r#"{__name__="g",a_b="0;1;2",key_1st="y"} 1700000000123:1"#],
    );
}

#[test]
fn label_rules_and_limits_reject_points() {
    let limits = DecodeLimits {
        max_labels_per_series: 3,
        max_label_value_len: 16,
        ..DecodeLimits::default()
    };
    let req = request(
        vec![],
        vec![gauge(
            "g",
            "",
            vec![
                number(&[("a", "1"), ("b", "1"), ("c", "1")], T1, 1.0),
                number(&[("a", "01234567890123456789")], T1, 1.0),
                number(&[("...", "1")], T1, 1.0),
                number(&[("", "1")], T1, 1.0),
                number(&[("a", "1"), ("b", "2")], T1, 1.0),
            ],
        )],
    );
    let d = decode_with(&req.encode_to_vec(), &limits).unwrap();
    assert_eq!(show(&d), [r#"{__name__="g",a="1",b="2"} 1700000000123:1"#]);
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![
            (RejectReason::InvalidLabelName, 2),
            (RejectReason::TooManyLabels, 1),
            (RejectReason::LabelValueTooLong, 1),
        ]
    );
}

#[test]
fn metric_names_that_translate_to_nothing_are_rejected() {
    let d = check(
        &request(vec![], vec![gauge("...", "", vec![number(&[], T1, 1.0)])]),
        &[],
    );
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::InvalidMetricName, 1)]
    );
}

#[test]
fn empty_requests_decode_to_nothing() {
    for body in [
        vec![],
        ExportMetricsServiceRequest::default().encode_to_vec(),
        request(vec![], vec![]).encode_to_vec(),
    ] {
        let d = decode_with(&body, &DecodeLimits::default()).unwrap();
        assert_eq!(d, Decoded::default());
    }
    // A metric with no data, or data without points.
    let d = check(
        &request(
            vec![],
            vec![
                Metric {
                    name: "nodata".into(),
                    ..Default::default()
                },
                gauge("nopoints", "", vec![]),
            ],
        ),
        &[],
    );
    assert!(d.batch.metadata.is_empty());
}

#[test]
fn fields_in_any_order_and_repeated_messages_merge_as_protobuf_says() {
    // Concatenated encodings of one message merge: data before the name.
    let data_only = Metric {
        data: Some(metric::Data::Gauge(Gauge {
            data_points: vec![number(&[], T1, 1.0)],
        })),
        ..Default::default()
    };
    let name_only = Metric {
        name: "late.name".into(),
        ..Default::default()
    };
    let more_data = Metric {
        data: Some(metric::Data::Gauge(Gauge {
            data_points: vec![number(&[("x", "1")], T1, 2.0)],
        })),
        ..Default::default()
    };
    let mut metric_bytes = data_only.encode_to_vec();
    metric_bytes.extend(name_only.encode_to_vec());
    metric_bytes.extend(more_data.encode_to_vec());
    let merged = Metric::decode(metric_bytes.as_slice()).unwrap();
    let d = check(
        &request(vec![KeyValue::string("service.name", "svc")], vec![merged.clone()]),
        &[
            r#"{__name__="late_name",job="svc"} 1700000000123:1"#,
            r#"{__name__="late_name",job="svc",x="1"} 1700000000123:2"#,
        ],
    );
    assert_eq!(d.data_points, 2);
    // The same bytes, unmerged, give the same answer: build the scope by hand.
    let mut scope = Vec::new();
    prost::encoding::bytes::encode(2, &metric_bytes, &mut scope);
    let mut rm = Vec::new();
    prost::encoding::bytes::encode(2, &scope, &mut rm);
    // The resource after its scope_metrics.
    let resource = Resource {
        attributes: vec![KeyValue::string("service.name", "svc")],
        dropped_attributes_count: 0,
    };
    prost::encoding::message::encode(1, &resource, &mut rm);
    let mut body = Vec::new();
    prost::encoding::bytes::encode(1, &rm, &mut body);
    let raw = decode_with(&body, &DecodeLimits::default()).unwrap();
    assert_eq!(show(&raw), show(&d));

    // A different oneof kind later replaces the earlier data.
    let sum_only = Metric {
        name: "m".into(),
        data: Some(metric::Data::Sum(Sum {
            data_points: vec![number(&[], T1, 5.0)],
            aggregation_temporality: AggregationTemporality::Cumulative as i32,
            is_monotonic: true,
        })),
        ..Default::default()
    };
    let mut bytes = sum_only.encode_to_vec();
    bytes.extend(data_only.encode_to_vec());
    let replaced = Metric::decode(bytes.as_slice()).unwrap();
    assert!(matches!(replaced.data, Some(metric::Data::Gauge(_))));
    let mut scope = Vec::new();
    prost::encoding::bytes::encode(2, &bytes, &mut scope);
    let mut rm = Vec::new();
    prost::encoding::bytes::encode(2, &scope, &mut rm);
    let mut body = Vec::new();
    prost::encoding::bytes::encode(1, &rm, &mut body);
    let d = decode_with(&body, &DecodeLimits::default()).unwrap();
    assert_eq!(show(&d), [r#"{__name__="m"} 1700000000123:1"#]);
}

#[test]
fn malformed_bodies_are_refused_whole() {
    let good = request(vec![], vec![gauge("g", "", vec![number(&[], T1, 1.0)])]).encode_to_vec();
    // A gauge whose data point runs past its end, nested properly.
    let mut metric = Vec::new();
    prost::encoding::bytes::encode(5, &vec![0x0a, 0x05, 0x01], &mut metric);
    let mut scope = Vec::new();
    prost::encoding::bytes::encode(2, &metric, &mut scope);
    let mut rm = Vec::new();
    prost::encoding::bytes::encode(2, &scope, &mut rm);
    let mut deep = Vec::new();
    prost::encoding::bytes::encode(1, &rm, &mut deep);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            good[..good.len() - 1].to_vec(),
            "malformed protobuf in export request: field 1 runs past the end",
        ),
        (
            deep,
            "malformed protobuf in resource_metrics 0 scope_metrics 0 metric 0: field 1 runs past the end",
        ),
        (
            vec![0x0a, 0x05, 0x01],
            "malformed protobuf in export request: field 1 runs past the end",
        ),
        // resource_metrics as a varint.
        (
            vec![0x08, 0x01],
            "malformed protobuf in export request: field 1 has the wrong wire type",
        ),
        (vec![0x07], "malformed protobuf in export request: invalid wire type 7"),
    ];
    for (body, want) in cases {
        let err = decode_with(&body, &DecodeLimits::default()).unwrap_err().to_string();
        assert!(err.starts_with(want), "{err}");
    }
}

#[test]
fn invalid_utf8_is_refused() {
    // In the metric name (walked by hand).
    let mut m = Vec::new();
    prost::encoding::bytes::encode(1, &b"bad\xff".to_vec(), &mut m);
    let mut scope = Vec::new();
    prost::encoding::bytes::encode(2, &m, &mut scope);
    let mut rm = Vec::new();
    prost::encoding::bytes::encode(2, &scope, &mut rm);
    let mut body = Vec::new();
    prost::encoding::bytes::encode(1, &rm, &mut body);
    let err = decode_with(&body, &DecodeLimits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed protobuf in resource_metrics 0 scope_metrics 0 metric 0: string field is not valid UTF-8"
    );
    assert_eq!(err.kind(), crate::ErrorKind::BadData);
    // In an attribute value (decoded by prost).
    let req = request(vec![], vec![gauge("g", "", vec![number(&[("k", "VALUE")], T1, 1.0)])]);
    let mut body = req.encode_to_vec();
    let at = body.windows(5).position(|w| w == b"VALUE").unwrap();
    body[at] = 0xff;
    let err = decode_with(&body, &DecodeLimits::default()).unwrap_err().to_string();
    assert!(
        err.starts_with("malformed protobuf in resource_metrics 0 scope_metrics 0 metric 0 data point 0:"),
        "{err}"
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn compressed_bodies_decode() {
    let req = request(vec![], vec![gauge("g", "", vec![number(&[], T1, 1.0)])]);
    let raw = req.encode_to_vec();
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zlib.write_all(&raw).unwrap();
    let bodies = [
        (ContentEncoding::Identity, raw.clone()),
        (ContentEncoding::Gzip, gzip(&raw)),
        (ContentEncoding::Deflate, zlib.finish().unwrap()),
        (ContentEncoding::Zstd, zstd::bulk::compress(&raw, 3).unwrap()),
    ];
    for (encoding, body) in bodies {
        let d = decode_export_request(&body, encoding, &DecodeLimits::default(), NOW_MS).unwrap();
        assert_eq!(show(&d), [r#"{__name__="g"} 1700000000123:1"#], "{encoding}");
    }
    // Two gzip members, as concatenating senders produce.
    let mut two = gzip(&raw[..5]);
    two.extend(gzip(&raw[5..]));
    let d = decode_export_request(&two, ContentEncoding::Gzip, &DecodeLimits::default(), NOW_MS).unwrap();
    assert_eq!(d.batch.sample_count(), 1);
    let err = decode_export_request(&raw, ContentEncoding::Gzip, &DecodeLimits::default(), NOW_MS).unwrap_err();
    assert!(err.to_string().starts_with("gzip decompression failed"), "{err}");
}

#[test]
fn content_encodings_parse() {
    assert_eq!(ContentEncoding::from_header(None), Ok(ContentEncoding::Identity));
    assert_eq!(ContentEncoding::from_header(Some(" GZIP ")), Ok(ContentEncoding::Gzip));
    assert_eq!(ContentEncoding::from_header(Some("zstd")), Ok(ContentEncoding::Zstd));
    let err = ContentEncoding::from_header(Some("snappy")).unwrap_err();
    assert_eq!(err.kind(), crate::ErrorKind::UnsupportedEncoding);
    assert_eq!(
        err.to_string(),
        "unsupported content encoding \"snappy\": want gzip, deflate, zstd or identity"
    );
}

#[test]
fn huge_bodies_are_refused_before_and_while_decompressing() {
    let limits = DecodeLimits {
        max_decompressed_bytes: 1 << 20,
        ..DecodeLimits::default()
    };
    let big = vec![0u8; (1 << 20) + 1];
    let err = decode_export_request(&big, ContentEncoding::Identity, &limits, NOW_MS).unwrap_err();
    assert_eq!(
        err.to_string(),
        "identity body decompresses to more than the 1048576-byte limit"
    );
    // A 1 KiB gzip bomb of 64 MiB of zeros stops at the limit.
    let bomb = gzip(&vec![0u8; 64 << 20]);
    assert!(bomb.len() < 128 << 10);
    let err = decode_export_request(&bomb, ContentEncoding::Gzip, &limits, NOW_MS).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TooLarge {
            encoding: ContentEncoding::Gzip,
            limit: 1 << 20
        }
    );
}

#[test]
fn label_copies_into_buckets_are_bounded() {
    // 200 long attributes copied into 2,000 bucket series: a small body that
    // would expand enormously.
    let value = "v".repeat(1000);
    let attrs: Vec<(String, String)> = (0..200).map(|i| (format!("a{i}"), value.clone())).collect();
    let attrs: Vec<(&str, &str)> = attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let bounds: Vec<f64> = (0..2000).map(f64::from).collect();
    let counts = vec![0u64; 2001];
    let req = request(
        vec![],
        vec![histogram(
            "h",
            "",
            AggregationTemporality::Cumulative,
            vec![histogram_point(&attrs, 0, None, &bounds, &counts)],
        )],
    );
    let body = req.encode_to_vec();
    assert!(body.len() < 256 << 10);
    let err = decode_with(&body, &DecodeLimits::default()).unwrap_err();
    assert_eq!(err, DecodeError::TooManySeries { limit: 64 << 20 });
}

#[test]
fn exemplars_are_counted() {
    let mut p = number(&[], T1, 1.0);
    p.exemplars = vec![Exemplar::default(), Exemplar::default()];
    let d = check(
        &request(vec![], vec![gauge("g", "", vec![p])]),
        &[r#"{__name__="g"} 1700000000123:1"#],
    );
    assert_eq!(d.batch.exemplars_dropped, 2);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn metric_name() -> impl Strategy<Value = String> {
        // Names the translation leaves alone: tokens of [a-z0-9] joined by
        // single underscores, starting with a letter.
        "[a-z][a-z0-9]{0,8}(_[a-z0-9]{1,6}){0,3}"
    }

    fn attributes() -> impl Strategy<Value = Vec<(String, String)>> {
        prop::collection::btree_map("[a-z][a-z0-9_]{0,10}", ".{1,20}", 0..6)
            .prop_map(|m| m.into_iter().filter(|(k, _)| !k.contains("__")).collect())
    }

    /// `(attributes, t in ms, value)` per point.
    type Points = Vec<(Vec<(String, String)>, i64, f64)>;

    fn points() -> impl Strategy<Value = Points> {
        prop::collection::vec((attributes(), 1i64..4_000_000_000_000, any::<f64>()), 1..8)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn gauges_round_trip(metrics in prop::collection::btree_map(metric_name(), points(), 1..5)) {
            let mut want: Vec<(Labels, Vec<Sample>)> = Vec::new();
            let mut otlp = Vec::new();
            for (name, pts) in &metrics {
                let mut data_points = Vec::new();
                for (attrs, t, v) in pts {
                    data_points.push(NumberDataPoint {
                        attributes: attrs.iter().map(|(k, v)| KeyValue::string(k, v)).collect(),
                        time_unix_nano: *t as u64 * 1_000_000,
                        value: Some(number_data_point::Value::AsDouble(*v)),
                        ..Default::default()
                    });
                    let mut pairs: Vec<(String, String)> = attrs.clone();
                    pairs.push(("__name__".into(), name.clone()));
                    let labels = Labels::from_pairs(pairs);
                    // Consecutive points of one stream share a series.
                    match want.last_mut() {
                        Some((l, s)) if *l == labels => s.push(Sample::new(*t, *v)),
                        _ => want.push((labels, vec![Sample::new(*t, *v)])),
                    }
                }
                otlp.push(gauge(name, "", data_points));
            }
            let d = decode(&request(vec![], otlp));
            let got: Vec<(Labels, Vec<(i64, u64)>)> = d.batch.to_series().iter()
                .map(|s| (s.labels.clone(), s.samples.iter().map(|x| (x.t, x.v.to_bits())).collect()))
                .collect();
            let want: Vec<(Labels, Vec<(i64, u64)>)> = want.into_iter()
                .map(|(l, s)| (l, s.iter().map(|x| (x.t, x.v.to_bits())).collect()))
                .collect();
            prop_assert_eq!(got, want);
            prop_assert!(d.rejected.is_empty());
        }

        #[test]
        fn arbitrary_bytes_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode_with(&body, &DecodeLimits::default());
        }

        #[test]
        fn corrupted_requests_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
            let req = request(
                vec![KeyValue::string("service.name", "s"), KeyValue::string("h", "x")],
                vec![
                    gauge("g", "By", vec![number(&[("a", "1")], T1, 1.0)]),
                    histogram("h", "s", AggregationTemporality::Cumulative,
                        vec![histogram_point(&[("b", "2")], 3, Some(1.0), &[1.0, 2.0], &[1, 1, 1])]),
                ],
            );
            let mut body = req.encode_to_vec();
            for (i, b) in flips {
                let i = i.index(body.len());
                body[i] = b;
            }
            let _ = decode_with(&body, &DecodeLimits::default());
        }
    }
}

#[test]
fn responses_encode_as_the_spec_says() {
    assert!(encode_response(&Rejections::default()).is_empty());
    let mut r = Rejections::default();
    r.add(RejectReason::MissingValue, 2, || "why".into());
    let resp = ExportMetricsServiceResponse::decode(encode_response(&r).as_slice()).unwrap();
    assert_eq!(
        resp.partial_success,
        Some(ExportMetricsPartialSuccess {
            rejected_data_points: 2,
            error_message: "rejected 2 data points: 2 missing_value (e.g. why)".into(),
        })
    );
    let status = Status::decode(encode_status(status_code::INVALID_ARGUMENT, "bad").as_slice()).unwrap();
    assert_eq!((status.code, status.message.as_str()), (3, "bad"));
}

fn decode_json(body: &str) -> Result<Decoded, DecodeError> {
    decode_export_request_json(
        body.as_bytes(),
        ContentEncoding::Identity,
        &DecodeLimits::default(),
        NOW_MS,
    )
}

#[test]
fn otlp_json_decodes_like_protobuf() {
    let body = r#"{"resourceMetrics":[{
      "resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},
      "scopeMetrics":[{"scope":{"name":"s","version":"1"},"metrics":[
        {"name":"http.requests","unit":"{request}","description":"d","sum":{"aggregationTemporality":2,"isMonotonic":true,
          "dataPoints":[{"attributes":[{"key":"code","value":{"intValue":"200"}}],"timeUnixNano":"1700000000123456789","asInt":"7",
                         "exemplars":[{"timeUnixNano":"1","asDouble":1,"traceId":"5b8efff798038103d269b633813fc60c"}]}]}},
        {"name":"temp","unit":"Cel","gauge":{"dataPoints":[{"timeUnixNano":1700000000123456789,"asDouble":"-Infinity"}]}},
        {"name":"lat","unit":"s","histogram":{"aggregation_temporality":"AGGREGATION_TEMPORALITY_CUMULATIVE",
          "data_points":[{"time_unix_nano":"1700000000123456789","count":"3","sum":1.5,"bucketCounts":["1",2],"explicitBounds":[0.5]}]}},
        {"name":"q","summary":{"dataPoints":[{"timeUnixNano":"1700000000123456789","count":"2","sum":3,"quantileValues":[{"quantile":0.5,"value":1}]}]}},
        {"name":"b","gauge":{"dataPoints":[{"timeUnixNano":"1700000000123456789","asDouble":1,"flags":0,"attributes":[
          {"key":"raw","value":{"bytesValue":"aGk="}},{"key":"flag","value":{"boolValue":true}},
          {"key":"arr","value":{"arrayValue":{"values":[{"intValue":1},{"doubleValue":0.5}]}}},
          {"key":"map","value":{"kvlistValue":{"values":[{"key":"k","value":{"stringValue":"v"}}]}}},
          {"key":"none","value":{}}, {"key":"nil","value":null}]}]}},
        {"name":"delta","sum":{"aggregationTemporality":1,"dataPoints":[{"asInt":1}]}},
        {"name":"exp","exponentialHistogram":{"aggregationTemporality":2,"dataPoints":[{"timeUnixNano":"1700000000123456789",
          "count":"3","sum":2,"scale":1,"zeroCount":"1","zeroThreshold":0.5,"positive":{"offset":-1,"bucketCounts":["1",1]},
          "negative":{"bucketCounts":[]}}]}}
      ]}]}], "unknownKey": [1, 2]}"#;
    let d = decode_json(body).unwrap();
    assert_eq!(
        show(&d),
        [
            r#"{__name__="http_requests_total",code="200",job="svc"} 1700000000123:7"#,
            r#"{__name__="temp_celsius",job="svc"} 1700000000123:-inf"#,
            r#"{__name__="lat_seconds_sum",job="svc"} 1700000000123:1.5"#,
            r#"{__name__="lat_seconds_count",job="svc"} 1700000000123:3"#,
            r#"{__name__="lat_seconds_bucket",job="svc",le="0.5"} 1700000000123:1"#,
            r#"{__name__="lat_seconds_bucket",job="svc",le="+Inf"} 1700000000123:3"#,
            r#"{__name__="q_sum",job="svc"} 1700000000123:3"#,
            r#"{__name__="q_count",job="svc"} 1700000000123:2"#,
            r#"{__name__="q",job="svc",quantile="0.5"} 1700000000123:1"#,
            r#"{__name__="b",arr="[1,0.5]",flag="true",job="svc",map="{\"k\":\"v\"}",raw="aGk="} 1700000000123:1"#,
            r#"{__name__="exp",job="svc"} 1700000000123:hist(schema=1 count=3 sum=2 zero=1@1e-128 pos=[(0, 1.0), (1, 1.0)] neg=[])"#,
        ]
    );
    assert_eq!(d.batch.exemplars_dropped, 1);
    assert_eq!(
        d.rejected.counts().collect::<Vec<_>>(),
        vec![(RejectReason::DeltaTemporality, 1)]
    );
    assert_eq!(d.batch.metadata[0].help, "d");
}

#[test]
fn otlp_json_errors_say_where() {
    let check = |body: &str, want: &str| {
        let err = decode_json(body).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::BadData);
        assert!(err.to_string().starts_with(want), "{err}");
    };
    check("{", "malformed OTLP/JSON in body: EOF while parsing");
    check("[]", "malformed OTLP/JSON in request: want an object");
    check(
        r#"{"resourceMetrics":{}}"#,
        "malformed OTLP/JSON in request: resourceMetrics must be an array",
    );
    check(
        r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"asInt":"x"}]}}]}]}]}"#,
        "malformed OTLP/JSON in request resourceMetrics 0 scopeMetrics 0 metrics 0 (\"m\") gauge dataPoints 0: asInt must be an integer",
    );
    check(
        r#"{"resourceMetrics":[{"resource":{"attributes":[{"key":"k","value":{"bytesValue":"!"}}]}}]}"#,
        "malformed OTLP/JSON in request resourceMetrics 0 resource attributes 0 value: bytesValue must be base64",
    );
    // Empty bodies and empty objects are empty requests.
    assert_eq!(decode_json("").unwrap(), Decoded::default());
    assert_eq!(decode_json(" {} ").unwrap(), Decoded::default());
    assert_eq!(encode_response_json(&Rejections::default()), b"{}");
    let mut r = Rejections::default();
    r.add(RejectReason::MissingValue, 1, || "x".into());
    assert_eq!(
        String::from_utf8(encode_response_json(&r)).unwrap(),
        r#"{"partialSuccess":{"errorMessage":"rejected 1 data points: 1 missing_value (e.g. x)","rejectedDataPoints":"1"}}"#
    );
    assert_eq!(encode_status_json(3, "bad"), br#"{"code":3,"message":"bad"}"#);
}
