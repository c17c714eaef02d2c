//! A tiny writer for the Prometheus text exposition format (version 0.0.4).

use std::fmt::Write;

use cairn_model::summary::SummarySnapshot;

/// `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Builds an exposition document family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    buf: String,
}

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a metric family: its `# HELP` and `# TYPE` lines.
    /// `kind` is `counter`, `gauge`, `histogram`, `summary` or `untyped`.
    pub fn family(&mut self, name: &str, help: &str, kind: &str) -> &mut Self {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.buf, "# HELP {name} {help}");
        let _ = writeln!(self.buf, "# TYPE {name} {kind}");
        self
    }

    /// One sample line: `name{l="v",...} value`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) -> &mut Self {
        self.buf.push_str(name);
        push_labels(&mut self.buf, labels.iter().copied());
        self.buf.push(' ');
        self.buf.push_str(&cairn_model::go_float::format_f(value));
        self.buf.push('\n');
        self
    }

    /// A family with a single unlabelled sample.
    pub fn single(&mut self, name: &str, help: &str, kind: &str, value: f64) -> &mut Self {
        self.family(name, help, kind).sample(name, &[], value)
    }

    /// One summary series: a line per quantile (label `quantile` after
    /// `labels`), then `_sum` and `_count`.
    pub fn summary(&mut self, name: &str, labels: &[(&str, &str)], s: &SummarySnapshot) -> &mut Self {
        for (q, v) in &s.quantiles {
            let q = cairn_model::go_float::format_f(*q);
            let mut with_quantile: Vec<(&str, &str)> = labels.to_vec();
            with_quantile.push(("quantile", &q));
            self.sample(name, &with_quantile, *v);
        }
        self.sample(&format!("{name}_sum"), labels, s.sum);
        self.sample(&format!("{name}_count"), labels, s.count as f64)
    }

    pub fn finish(self) -> String {
        self.buf
    }
}

/// Appends `{name="value",...}`, values escaped; nothing for no labels.
pub(crate) fn push_labels<'a>(dst: &mut String, labels: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut open = false;
    for (k, v) in labels {
        dst.push(if open { ',' } else { '{' });
        open = true;
        dst.push_str(k);
        dst.push_str("=\"");
        escape_label_value(dst, v);
        dst.push('"');
    }
    if open {
        dst.push('}');
    }
}

/// Escapes `\`, `"` and newlines, as the text format requires in label values.
fn escape_label_value(dst: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => dst.push_str("\\\\"),
            '"' => dst.push_str("\\\""),
            '\n' => dst.push_str("\\n"),
            c => dst.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_and_escapes() {
        let mut e = Exposition::new();
        e.family("x_total", "Help with \\ and\nnewline.", "counter")
            .sample("x_total", &[("a", "q\"b\\c\nd"), ("b", "")], 1.0)
            .sample("x_total", &[], f64::INFINITY);
        assert_eq!(
            e.finish(),
            "# HELP x_total Help with \\\\ and\\nnewline.\n\
             # TYPE x_total counter\n\
             x_total{a=\"q\\\"b\\\\c\\nd\",b=\"\"} 1\n\
             x_total +Inf\n"
        );
    }

    #[test]
    fn writes_summaries_as_the_text_format_does() {
        let mut e = Exposition::new();
        let s = SummarySnapshot {
            count: 3,
            sum: 0.75,
            quantiles: vec![(0.5, 0.25), (0.99, f64::NAN)],
        };
        e.family("d_seconds", "Durations.", "summary")
            .summary("d_seconds", &[("job", "a")], &s);
        assert_eq!(
            e.finish(),
            "# HELP d_seconds Durations.\n\
             # TYPE d_seconds summary\n\
             d_seconds{job=\"a\",quantile=\"0.5\"} 0.25\n\
             d_seconds{job=\"a\",quantile=\"0.99\"} NaN\n\
             d_seconds_sum{job=\"a\"} 0.75\n\
             d_seconds_count{job=\"a\"} 3\n"
        );
    }
}
