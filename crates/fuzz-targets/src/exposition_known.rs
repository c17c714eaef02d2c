//! What the text exposition targets also check of a scraper's cache
//! ([`parse_with_known`]): reading with it fails exactly where reading
//! whole does, a key names one label set wherever it appears, and a known
//! key leaves out the labels and nothing else.

use std::collections::HashMap;

use cairn_protocols::exposition::{ParseOptions, ScrapeFormat, ScrapedSample, parse, parse_with_known};

/// Bits compare NaNs and distinguish -0.
fn value_of(s: &ScrapedSample) -> (Option<i64>, String) {
    (s.timestamp_ms, format!("{:?}", s.value))
}

pub(crate) fn check_known_spellings(format: ScrapeFormat, data: &[u8]) {
    let opts = ParseOptions::default();
    let whole = parse(format, data, &opts);
    let unknown = parse_with_known(format, data, &opts, &mut |_| false);
    let (whole, unknown) = match (whole, unknown) {
        (Ok(w), Ok(u)) => (w, u),
        (Err(w), Err(u)) => {
            assert_eq!(w, u, "the same error with or without a cache");
            return;
        }
        (w, u) => panic!("one reading failed: {:?} / {:?}", w.err(), u.err()),
    };
    assert_eq!(whole.samples.len(), unknown.samples.len());
    let mut labels_of_key: HashMap<Vec<u8>, String> = HashMap::new();
    let mut key = Vec::new();
    for (w, u) in whole.samples.iter().zip(&unknown.samples) {
        assert_eq!(
            (&w.labels, &w.empty_labels, value_of(w)),
            (&u.labels, &u.empty_labels, value_of(u))
        );
        let spelling = u.spelling.expect("a text sample has a spelling");
        assert!(!spelling.known);
        spelling.key(data, &mut key);
        let read = format!("{} {:?}", u.labels, u.empty_labels);
        let first = labels_of_key.entry(key.clone()).or_insert_with(|| read.clone());
        assert_eq!(*first, read, "one key, two label sets");
    }
    let cached = parse_with_known(format, data, &opts, &mut |k| labels_of_key.contains_key(k))
        .expect("a body read once reads again");
    assert_eq!(cached.samples.len(), whole.samples.len());
    for (w, c) in whole.samples.iter().zip(&cached.samples) {
        assert!(c.spelling.is_some_and(|s| s.known) && c.labels.is_empty() && c.empty_labels.is_empty());
        assert_eq!(value_of(w), value_of(c));
    }
    assert_eq!(cached.metadata, whole.metadata);
}
