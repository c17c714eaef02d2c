//! Scrape parsing of OpenMetrics text on arbitrary bytes: it must return,
//! never panic, under every option; and the float samples it returns,
//! written back as OpenMetrics without timestamps, must parse to the same
//! series and values.

use cairn_protocols::exposition::{ParseOptions, ScrapeFormat, ScrapedValue, parse};

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

pub fn exposition_openmetrics(data: &[u8]) {
    crate::exposition_known::check_known_spellings(ScrapeFormat::OpenMetricsText1_0_0, data);
    let d = ParseOptions::default();
    for opts in [
        d,
        ParseOptions {
            skip_openmetrics_created_series: true,
            convert_classic_histograms_to_nhcb: true,
            ..d
        },
    ] {
        let _ = parse(ScrapeFormat::OpenMetricsText1_0_0, data, &opts);
    }
    let Ok(first) = parse(ScrapeFormat::OpenMetricsText1_0_0, data, &d) else {
        return;
    };
    let mut text = String::new();
    let mut want = Vec::new();
    for s in &first.samples {
        let ScrapedValue::Float(v) = s.value else {
            panic!("a histogram from OpenMetrics without conversion");
        };
        let pairs: Vec<String> = s
            .labels
            .iter()
            .map(|l| {
                if l.name == "__name__" {
                    format!("\"{}\"", escape(&l.value))
                } else {
                    format!("\"{}\"=\"{}\"", escape(&l.name), escape(&l.value))
                }
            })
            .collect();
        text.push_str(&format!("{{{}}} {v:?}\n", pairs.join(",")));
        want.push((s.labels.to_string(), if v.is_nan() { None } else { Some(v.to_bits()) }));
    }
    text.push_str("# EOF\n");
    let again =
        parse(ScrapeFormat::OpenMetricsText1_0_0, text.as_bytes(), &d).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    let have: Vec<_> = again
        .samples
        .iter()
        .map(|s| {
            let ScrapedValue::Float(v) = s.value else {
                unreachable!()
            };
            (s.labels.to_string(), if v.is_nan() { None } else { Some(v.to_bits()) })
        })
        .collect();
    assert_eq!(have, want, "{text:?}");
}
