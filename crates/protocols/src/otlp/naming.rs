//! Prometheus 3's OTLP name translation, strategy
//! `UnderscoreEscapingWithSuffixes` (its default): what
//! `github.com/prometheus/otlptranslator` `MetricNamer`/`LabelNamer` do with
//! `WithMetricSuffixes: true, UTF8Allowed: false`.

/// What a metric is, as far as its name is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Gauge,
    /// A monotonic sum: gets `_total`.
    MonotonicCounter,
    /// A non-monotonic sum (an up-down counter): no `_total`.
    NonMonotonicCounter,
    Histogram,
    ExponentialHistogram,
    Summary,
}

/// `[a-zA-Z0-9:]`: the characters that survive in metric name tokens.
fn is_metric_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == ':'
}

/// The Prometheus metric name for an OTLP metric, or `None` when nothing
/// usable is left (an empty name, or one of only underscores).
///
/// The name is split into tokens at every character outside `[a-zA-Z0-9:]`
/// (so runs of them become one `_`); the unit's words are appended unless
/// already present (`s` → `seconds`, `By/s` → `bytes_per_second`, `{req}`
/// annotations dropped); monotonic counters get `total` moved to the end,
/// gauges with unit `1` get `ratio`; tokens are joined with `_`, and a
/// leading digit gets a `_` prefix.
pub fn metric_name(name: &str, unit: &str, kind: NameKind) -> Option<String> {
    let mut tokens: Vec<&str> = name.split(|c| !is_metric_char(c)).filter(|t| !t.is_empty()).collect();
    let (main, per) = unit_suffixes(unit);
    let (main, per) = (clean_unit(&main), clean_unit(&per));
    let mut main = main.as_str();
    let mut per = per.as_str();
    if tokens.contains(&main) {
        main = "";
    }
    if per == "per_" {
        per = "";
    } else {
        per = per.strip_suffix('_').unwrap_or(per);
        if tokens.contains(&per) {
            per = "";
        }
    }
    if !per.is_empty() {
        main = main.strip_suffix('_').unwrap_or(main);
    }
    if !main.is_empty() {
        tokens.push(main);
    }
    if !per.is_empty() {
        tokens.push(per);
    }
    if kind == NameKind::MonotonicCounter {
        tokens.retain(|t| *t != "total");
        tokens.push("total");
    }
    if unit == "1" && kind == NameKind::Gauge {
        tokens.retain(|t| *t != "ratio");
        tokens.push("ratio");
    }
    let mut out = tokens.join("_");
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if out.is_empty() || (out != name && out.bytes().all(|b| b == b'_')) {
        return None;
    }
    Some(out)
}

/// The Prometheus label name for an attribute key, or `None` when the key is
/// empty or becomes only underscores. Characters outside `[a-zA-Z0-9_]`
/// become `_`; a leading digit gets `key_`, a single leading `_` gets `key`
/// (`__reserved__` names stay as they are).
pub fn label_name(key: &str) -> Option<String> {
    if key.is_empty() {
        return None;
    }
    let mut out: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert_str(0, "key_");
    } else if out.starts_with('_') && !out.starts_with("__") {
        out.insert_str(0, "key");
    }
    if out != key && out.bytes().all(|b| b == b'_') {
        return None;
    }
    Some(out)
}

/// UCUM unit → Prometheus word for the main unit (unknown units pass
/// through).
fn main_unit(unit: &str) -> &str {
    match unit {
        "d" => "days",
        "h" => "hours",
        "min" => "minutes",
        "s" => "seconds",
        "ms" => "milliseconds",
        "us" => "microseconds",
        "ns" => "nanoseconds",
        "By" => "bytes",
        "KiBy" => "kibibytes",
        "MiBy" => "mebibytes",
        "GiBy" => "gibibytes",
        "TiBy" => "tibibytes",
        "KBy" => "kilobytes",
        "MBy" => "megabytes",
        "GBy" => "gigabytes",
        "TBy" => "terabytes",
        "m" => "meters",
        "V" => "volts",
        "A" => "amperes",
        "J" => "joules",
        "W" => "watts",
        "g" => "grams",
        "Cel" => "celsius",
        "Hz" => "hertz",
        "1" => "",
        "%" => "percent",
        other => other,
    }
}

/// UCUM unit → singular word after `per_`.
fn per_unit(unit: &str) -> &str {
    match unit {
        "s" => "second",
        "m" => "minute",
        "h" => "hour",
        "d" => "day",
        "w" => "week",
        "mo" => "month",
        "y" => "year",
        other => other,
    }
}

/// Splits `main/per` and maps each part; parts in `{}` (annotations) are
/// dropped. The per part comes back as `per_<word>`.
fn unit_suffixes(unit: &str) -> (String, String) {
    let (main_part, per_part) = match unit.split_once('/') {
        Some((m, p)) => (m, Some(p)),
        None => (unit, None),
    };
    let mut main = String::new();
    let main_trimmed = main_part.trim();
    if !main_trimmed.is_empty() && !main_trimmed.contains(['{', '}']) {
        main = main_unit(main_trimmed).to_string();
    }
    let mut per = String::new();
    if let Some(p) = per_part
        && !p.is_empty()
    {
        let p = p.trim();
        if !p.is_empty() && !p.contains(['{', '}']) {
            per = per_unit(p).to_string();
        }
        if !per.is_empty() {
            per.insert_str(0, "per_");
        }
    }
    (main, per)
}

/// Characters outside `[a-zA-Z0-9:]` become `_`, runs of `_` collapse, and a
/// leading `_` is dropped.
fn clean_unit(unit: &str) -> String {
    let mut out = String::with_capacity(unit.len());
    for c in unit.chars() {
        let c = if is_metric_char(c) { c } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    match out.strip_prefix('_') {
        Some(rest) => rest.to_string(),
        None => out,
    }
}

#[cfg(test)]
mod tests {
    use super::NameKind::*;
    use super::*;

    #[test]
    fn metric_names_follow_prometheus_3() {
        let check = |name: &str, unit: &str, kind, want: Option<&str>| {
            assert_eq!(
                metric_name(name, unit, kind).as_deref(),
                want,
                "{name:?} {unit:?} {kind:?}"
            );
        };
        check(
            "http.server.request.duration",
            "s",
            Histogram,
            Some("http_server_request_duration_seconds"),
        );
        check("requests.count", "1", MonotonicCounter, Some("requests_count_total"));
        check("memory.usage", "By", Gauge, Some("memory_usage_bytes"));
        check("cpu.utilization", "1", Gauge, Some("cpu_utilization_ratio"));
        check("cpu.utilization.ratio", "1", Gauge, Some("cpu_utilization_ratio"));
        check(
            "system.network.io",
            "By/s",
            Gauge,
            Some("system_network_io_bytes_per_second"),
        );
        check("throughput", "{req}/s", Gauge, Some("throughput_per_second"));
        check("active", "{request}", NonMonotonicCounter, Some("active"));
        check("requests_total", "", MonotonicCounter, Some("requests_total"));
        check("total.requests", "", MonotonicCounter, Some("requests_total"));
        check("latency_seconds", "s", Histogram, Some("latency_seconds"));
        check("a__b..c", "", Gauge, Some("a_b_c"));
        check("2xx.responses", "", MonotonicCounter, Some("_2xx_responses_total"));
        check("temp", "Cel", Gauge, Some("temp_celsius"));
        check("weird", "foo.bar", Gauge, Some("weird_foo_bar"));
        check("rate", "m/mo", Gauge, Some("rate_meters_per_month"));
        check("ns:name", "", Gauge, Some("ns:name"));
        check("up", "", Summary, Some("up"));
        check("héllo wörld", "", Gauge, Some("h_llo_w_rld"));
        check("", "", Gauge, None);
        check("...", "", Gauge, None);
        check("___", "", Gauge, None);
        // Unit "1" adds nothing to a counter (`_ratio` is for gauges only).
        check("x", "1", MonotonicCounter, Some("x_total"));
    }

    #[test]
    fn label_names_follow_prometheus_3() {
        let check = |key: &str, want: Option<&str>| assert_eq!(label_name(key).as_deref(), want, "{key:?}");
        check("http.method", Some("http_method"));
        check("service.name", Some("service_name"));
        check("123invalid", Some("key_123invalid"));
        check("_private", Some("key_private"));
        check("__reserved__", Some("__reserved__"));
        check("a..b", Some("a__b"));
        check("ünïcode", Some("key_n_code"));
        check("already_fine", Some("already_fine"));
        check("", None);
        check("...", None);
        check("__", Some("__"));
    }

    #[test]
    fn units_map_and_clean() {
        assert_eq!(unit_suffixes("By/s"), ("bytes".into(), "per_second".into()));
        assert_eq!(unit_suffixes("1"), ("".into(), "".into()));
        assert_eq!(unit_suffixes("{packets}"), ("".into(), "".into()));
        assert_eq!(unit_suffixes("s/"), ("seconds".into(), "".into()));
        assert_eq!(clean_unit("_a..b_"), "a_b_");
    }
}
