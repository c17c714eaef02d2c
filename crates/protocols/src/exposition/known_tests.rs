//! [`parse_with_known`]: a key names one label set whatever body it is
//! read from, and a known key saves reading the labels and nothing else.

use std::collections::HashMap;

use super::*;

const BODIES: [&str; 4] = [
    "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_count 2\nh_sum 3\n\
     m{a=\"x\",b=\"\"} 1 1000\n{\"odd.name\",a=\"y\"} 2\n",
    // The same bytes under another type read otherwise (no `le` respelling).
    "# TYPE h gauge\nh_bucket{le=\"1\"} 1\nm{b=\"\",a=\"x\"} 5\nm {a=\"x\",b=\"\"} 6\n",
    "m{a=\"x\",b=\"\"} 7\nm{a=\"a\\\"b\\nc\"} 8 2000\nn 9\n",
    "# TYPE h histogram\nh_bucket{le=\"1.0\"} 4\nh_bucket{le=\"1\"} 4\n",
];

fn formats() -> [ScrapeFormat; 2] {
    [ScrapeFormat::PrometheusText0_0_4, ScrapeFormat::OpenMetricsText1_0_0]
}

fn body_in(format: ScrapeFormat, body: &str) -> String {
    if format == ScrapeFormat::OpenMetricsText1_0_0 {
        // OpenMetrics wants a blank-free series and seconds for timestamps.
        let body = body
            .replace("m {", "m{")
            .replace(" 1000\n", " 1\n")
            .replace(" 2000\n", " 2\n");
        format!("{body}# EOF\n")
    } else {
        body.to_string()
    }
}

fn key_of(s: &ScrapedSample, body: &[u8]) -> Vec<u8> {
    let mut key = Vec::new();
    s.spelling.expect("a text sample has a spelling").key(body, &mut key);
    key
}

#[test]
fn one_key_names_one_label_set_across_bodies() {
    for format in formats() {
        let mut labels_of_key: HashMap<Vec<u8>, (Labels, Vec<Label>)> = HashMap::new();
        for body in BODIES {
            let body = body_in(format, body);
            let plain = parse(format, body.as_bytes(), &ParseOptions::default()).unwrap();
            let read = parse_with_known(format, body.as_bytes(), &ParseOptions::default(), &mut |_| false).unwrap();
            assert_eq!(read.samples.len(), plain.samples.len());
            for (s, p) in read.samples.iter().zip(&plain.samples) {
                assert!(!s.spelling.unwrap().known);
                assert_eq!(
                    (&s.labels, &s.empty_labels, s.timestamp_ms),
                    (&p.labels, &p.empty_labels, p.timestamp_ms)
                );
                let read_as = (s.labels.clone(), s.empty_labels.clone());
                let first = labels_of_key
                    .entry(key_of(s, body.as_bytes()))
                    .or_insert_with(|| read_as.clone());
                assert_eq!(*first, read_as, "{format:?}: one key, two label sets");
            }
        }
        // `h_bucket{le="1"}` is read two ways, so the type must be part of the key.
        let le_one: Vec<_> = labels_of_key
            .keys()
            .filter(|k| k.ends_with(b"h_bucket{le=\"1\"}"))
            .collect();
        assert_eq!(le_one.len(), 2, "{format:?}");
    }
}

#[test]
fn a_known_key_skips_only_the_labels() {
    for format in formats() {
        for body in BODIES {
            let body = body_in(format, body);
            let all = parse_with_known(format, body.as_bytes(), &ParseOptions::default(), &mut |_| false).unwrap();
            let mut asked = Vec::new();
            let known_half = |key: &[u8]| key.len().is_multiple_of(2);
            let read = parse_with_known(format, body.as_bytes(), &ParseOptions::default(), &mut |key| {
                asked.push(key.to_vec());
                known_half(key)
            })
            .unwrap();
            assert_eq!(asked.len(), all.samples.len());
            assert_eq!(read.metadata, all.metadata);
            for ((s, a), key) in read.samples.iter().zip(&all.samples).zip(&asked) {
                assert_eq!(*key, key_of(a, body.as_bytes()));
                assert_eq!((s.timestamp_ms, &s.value), (a.timestamp_ms, &a.value));
                let spelling = s.spelling.unwrap();
                assert_eq!(spelling.known, known_half(key));
                if spelling.known {
                    assert!(s.labels.is_empty() && s.empty_labels.is_empty());
                } else {
                    assert_eq!((&s.labels, &s.empty_labels), (&a.labels, &a.empty_labels));
                }
            }
        }
    }
}

#[test]
fn bodies_read_whole_have_no_spelling() {
    let converting = ParseOptions {
        convert_classic_histograms_to_nhcb: true,
        ..ParseOptions::default()
    };
    for format in formats() {
        let body = body_in(format, BODIES[0]);
        for read in [
            parse(format, body.as_bytes(), &ParseOptions::default()).unwrap(),
            parse_with_known(format, body.as_bytes(), &converting, &mut |_| true).unwrap(),
        ] {
            assert!(
                read.samples
                    .iter()
                    .all(|s| s.spelling.is_none() && !s.labels.is_empty())
            );
        }
    }
}
