//! [`parse_encoded`]: every sample's labels, the labels it gave empty, its
//! value and its errors are those [`parse`] reads, whatever the body; a
//! reader's writer is given those labels.

use std::borrow::Cow;

use proptest::prelude::*;

use super::*;

/// What a reader sees of one sample, its labels decoded where encoded.
fn seen(e: &Exposition) -> Vec<(Labels, Vec<Label>, Option<i64>, String)> {
    e.samples
        .iter()
        .map(|s| {
            let labels = match s.encoded {
                Some(at) => {
                    assert!(s.labels.is_empty(), "an encoded sample carries no built labels");
                    assert!(!at.by_reader);
                    e.labels.get(at.index as usize).expect("the encoding is there").decode()
                }
                None => s.labels.clone(),
            };
            (labels, s.empty_labels.clone(), s.timestamp_ms, format!("{:?}", s.value))
        })
        .collect()
}

fn same_reading(format: ScrapeFormat, body: &str, opts: &ParseOptions) -> Result<(), TestCaseError> {
    let plain = parse(format, body.as_bytes(), opts).map(|e| seen(&e));
    let encoded = parse_encoded(format, body.as_bytes(), opts, None).map(|e| seen(&e));
    prop_assert_eq!(encoded, plain, "{:?}: {:?}", format, body);
    Ok(())
}

const FORMATS: [ScrapeFormat; 2] = [ScrapeFormat::PrometheusText0_0_4, ScrapeFormat::OpenMetricsText1_0_0];

#[test]
fn bodies_read_alike_encoded_or_built() {
    let bodies = [
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n",
        "# TYPE s summary\ns{quantile=\"0.50\"} 1\ns_sum 2\ns_count 3\n",
        "m{b=\"x\",a=\"1\",c=\"\"} 1\n{\"odd.name\",a=\"y\"} 2\nm{a=\"a\\\"b\\nc\\\\\"} 3\n",
        "m{a=\"1\",a=\"2\"} 1\n",
        "m{__name__=\"n\"} 1\n",
        "m{a=\"1\",\"\"=\"2\"} 1\n",
        "{a=\"1\"} 1\n",
        "m{A=\"1\",_=\"2\",z=\"\"} 1\n",
    ];
    let nhcb = ParseOptions {
        convert_classic_histograms_to_nhcb: true,
        ..ParseOptions::default()
    };
    for format in FORMATS {
        for body in bodies {
            let body = if format == ScrapeFormat::OpenMetricsText1_0_0 {
                format!("{body}# EOF\n")
            } else {
                body.to_string()
            };
            for opts in [ParseOptions::default(), nhcb] {
                same_reading(format, &body, &opts).unwrap();
            }
            if let Ok(e) = parse_encoded(format, body.as_bytes(), &ParseOptions::default(), None) {
                assert!(e.samples.iter().all(|s| s.encoded.is_some()), "{body}");
            }
            if let Ok(e) = parse_encoded(format, body.as_bytes(), &nhcb, None) {
                assert!(
                    e.samples.iter().all(|s| s.encoded.is_none()),
                    "converting: built, {body}"
                );
            }
        }
    }
}

fn label_name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("le".to_string()),
        Just("quantile".to_string()),
        Just("__name__".to_string()),
        Just("a".to_string()),
        Just("\"\"".to_string()),
        Just("\"b.c\"".to_string()),
        "[A-Za-z_][a-z0-9_]{0,3}",
    ]
}

fn label_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("1".to_string()),
        Just("+Inf".to_string()),
        Just("a\\\"b".to_string()),
        Just("x\\ny\\\\".to_string()),
        "[a-zü0-9.]{1,4}",
    ]
}

fn sample_line() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("m".to_string()),
        Just("h_bucket".to_string()),
        Just("\"odd.m\"".to_string())
    ];
    (name, proptest::collection::vec((label_name(), label_value()), 0..5)).prop_map(|(name, labels)| {
        let pairs: Vec<String> = labels.iter().map(|(n, v)| format!("{n}=\"{v}\"")).collect();
        if name.starts_with('"') {
            let mut all = vec![name];
            all.extend(pairs);
            format!("{{{}}} 1\n", all.join(","))
        } else if pairs.is_empty() {
            format!("{name} 1\n")
        } else {
            format!("{name}{{{}}} 1\n", pairs.join(","))
        }
    })
}

proptest! {
    #[test]
    fn any_body_reads_alike_encoded_or_built(
        kind in prop_oneof![Just(""), Just("# TYPE h histogram\n"), Just("# TYPE m summary\n")],
        lines in proptest::collection::vec(sample_line(), 1..6),
    ) {
        for format in FORMATS {
            let mut body = format!("{kind}{}", lines.concat());
            if format == ScrapeFormat::OpenMetricsText1_0_0 {
                body.push_str("# EOF\n");
            }
            same_reading(format, &body, &ParseOptions::default())?;
        }
    }
}

#[test]
fn a_reader_writes_the_labels_it_takes_and_leaves_the_others_as_the_body_gave_them() {
    for format in FORMATS {
        let mut body = "yes{b=\"2\",a=\"1\",e=\"\"} 1\nno{a=\"1\"} 2\n".to_string();
        if format == ScrapeFormat::OpenMetricsText1_0_0 {
            body.push_str("# EOF\n");
        }
        let mut given = Vec::new();
        // The reader's own store: what it wrote, by its own index.
        let mut written: Vec<String> = Vec::new();
        let mut write = |pairs: &[(Cow<'_, str>, Cow<'_, str>)]| {
            given.push(
                pairs
                    .iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect::<Vec<_>>()
                    .join(","),
            );
            if pairs.iter().any(|(_, v)| v == "no") {
                return None;
            }
            written.push(format!("reader's {}", pairs.len()));
            Some(written.len() as u32 + 6)
        };
        let e = parse_encoded(format, body.as_bytes(), &ParseOptions::default(), Some(&mut write)).unwrap();
        assert_eq!(given, ["__name__=yes,a=1,b=2,e=", "__name__=no,a=1"], "{format:?}");
        assert_eq!(written, ["reader's 4"], "{format:?}");
        let read: Vec<(String, bool)> = e
            .samples
            .iter()
            .map(|s| {
                let at = s.encoded.unwrap();
                let labels = if at.by_reader {
                    at.index.to_string()
                } else {
                    e.labels.get(at.index as usize).unwrap().decode().to_string()
                };
                (labels, at.by_reader)
            })
            .collect();
        assert_eq!(
            read,
            [("7".to_string(), true), (r#"no{a="1"}"#.to_string(), false)],
            "{format:?}"
        );
    }
}
