//! `--report out.html`: one self-contained page (inline SVG, no scripts)
//! with the summary and plots over time of every measured target.

use std::fmt::Write as _;

use crate::report::Report;

const COLORS: &[&str] = &["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A line plot of one quantity, one line per report.
fn plot(title: &str, unit: &str, lines: &[(&str, Vec<(f64, f64)>)]) -> String {
    let (w, h, left, bottom) = (640.0, 220.0, 70.0, 30.0);
    let xmax = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.0))
        .fold(1e-9, f64::max);
    let ymax = lines
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .filter(|v| v.is_finite())
        .fold(1e-9, f64::max)
        * 1.05;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<figure><figcaption>{}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#,
        escape(title)
    );
    let (pw, ph) = (w - left - 10.0, h - bottom - 10.0);
    let _ = write!(
        s,
        r##"<rect x="{left}" y="10" width="{pw}" height="{ph}" fill="none" stroke="#999"/>"##
    );
    for i in 0..=4 {
        let y = 10.0 + ph * (1.0 - i as f64 / 4.0);
        let v = ymax * i as f64 / 4.0;
        let _ = write!(
            s,
            r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{} {}</text>"##,
            left + pw,
            left - 4.0,
            y + 4.0,
            human(v),
            escape(unit)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{}">0 s</text><text x="{}" y="{}" text-anchor="end">{:.0} s</text>"#,
        h - 8.0,
        left + pw,
        h - 8.0,
        xmax
    );
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let path: Vec<String> = pts
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", left + pw * x / xmax, 10.0 + ph * (1.0 - y / ymax)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/><text x="{}" y="{}" fill="{color}">{}</text>"#,
            path.join(" "),
            left + 8.0,
            24.0 + 13.0 * i as f64,
            escape(name)
        );
    }
    s.push_str("</svg></figure>\n");
    s
}

fn human(v: f64) -> String {
    match v.abs() {
        a if a >= 1e9 => format!("{:.1}G", v / 1e9),
        a if a >= 1e6 => format!("{:.1}M", v / 1e6),
        a if a >= 1e3 => format!("{:.1}k", v / 1e3),
        _ => format!("{v:.1}"),
    }
}

/// The whole page for one or more reports (a run or a comparison).
pub fn render(reports: &[Report]) -> String {
    let mut s = String::from(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>cairn bench</title><style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}pre{background:#f6f6f6;padding:1em;overflow-x:auto}figure{margin:1em 0}figcaption{font-weight:bold}</style></head><body><h1>cairn bench</h1>\n",
    );
    if reports.len() > 1 {
        let _ = writeln!(
            s,
            "<h2>Comparison</h2><pre>{}</pre>",
            escape(&crate::report::ratios(reports))
        );
    }
    for r in reports {
        let _ = writeln!(s, "<h2>{}</h2><pre>{}</pre>", escape(&r.name), escape(&r.summary()));
    }
    type Series = fn(&crate::report::TimelinePoint) -> Option<f64>;
    let charts: [(&str, &str, Series); 6] = [
        ("Samples delivered per second", "/s", |p| Some(p.samples_per_second)),
        ("Requests queued for senders", "", |p| Some(p.queue as f64)),
        ("Query latency p99 (cumulative)", "ms", |p| Some(p.query_p99_ms)),
        ("Target CPU", "%", |p| p.target_cpu_percent),
        ("Target RSS", "B", |p| p.target_rss_bytes.map(|b| b as f64)),
        ("Target disk", "B", |p| p.disk_bytes.map(|b| b as f64)),
    ];
    for (title, unit, f) in charts {
        let lines: Vec<(&str, Vec<(f64, f64)>)> = reports
            .iter()
            .map(|r| {
                (
                    r.name.as_str(),
                    r.timeline
                        .iter()
                        .filter_map(|p| f(p).map(|v| (p.t_s, v)))
                        .collect::<Vec<_>>(),
                )
            })
            .filter(|(_, p)| !p.is_empty())
            .collect();
        if !lines.is_empty() {
            s.push_str(&plot(title, unit, &lines));
        }
    }
    s.push_str("</body></html>\n");
    s
}
