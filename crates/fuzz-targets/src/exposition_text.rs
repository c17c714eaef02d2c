//! Scrape parsing of the Prometheus text format on arbitrary bytes: it
//! must return, never panic, under every option; and the float samples it
//! returns, written back as text, must parse to the same samples.

use cairn_protocols::exposition::{ParseOptions, ScrapeFormat, ScrapedValue, parse};

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn options() -> [ParseOptions; 3] {
    let d = ParseOptions::default();
    [
        d,
        ParseOptions {
            convert_classic_histograms_to_nhcb: true,
            ..d
        },
        ParseOptions {
            convert_classic_histograms_to_nhcb: true,
            keep_classic_histograms: true,
            ..d
        },
    ]
}

pub fn exposition_text(data: &[u8]) {
    crate::exposition_known::check_known_spellings(ScrapeFormat::PrometheusText0_0_4, data);
    for opts in options() {
        let _ = parse(ScrapeFormat::PrometheusText0_0_4, data, &opts);
    }
    let Ok(first) = parse(ScrapeFormat::PrometheusText0_0_4, data, &ParseOptions::default()) else {
        return;
    };
    let mut text = String::new();
    let mut want = Vec::new();
    for s in &first.samples {
        let ScrapedValue::Float(v) = s.value else {
            panic!("a histogram from the text format without conversion");
        };
        let pairs: Vec<String> = s
            .labels
            .iter()
            .map(|l| format!("\"{}\"=\"{}\"", escape(&l.name), escape(&l.value)))
            .collect();
        // A name inside the braces is written quoted, without a value.
        let pairs: Vec<String> = pairs
            .into_iter()
            .map(|p| match p.strip_prefix("\"__name__\"=") {
                Some(name) => name.to_string(),
                None => p,
            })
            .collect();
        text.push_str(&format!("{{{}}} {v:?}", pairs.join(",")));
        if let Some(t) = s.timestamp_ms {
            text.push_str(&format!(" {t}"));
        }
        text.push('\n');
        want.push((
            s.labels.to_string(),
            s.timestamp_ms,
            if v.is_nan() { None } else { Some(v.to_bits()) },
        ));
    }
    let again = parse(
        ScrapeFormat::PrometheusText0_0_4,
        text.as_bytes(),
        &ParseOptions::default(),
    )
    .unwrap_or_else(|e| panic!("{text:?}: {e}"));
    let have: Vec<_> = again
        .samples
        .iter()
        .map(|s| {
            let ScrapedValue::Float(v) = s.value else {
                unreachable!()
            };
            (
                s.labels.to_string(),
                s.timestamp_ms,
                if v.is_nan() { None } else { Some(v.to_bits()) },
            )
        })
        .collect();
    assert_eq!(have, want, "{text:?}");
}
