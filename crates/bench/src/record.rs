//! `cairn bench record`: scrapes an exporter at a fixed interval and writes
//! a trace in the shipped format (gzip'd text; each scrape is a
//! `# PEERBENCH_SCRAPE ts_ms=<ms> seq=<n> dur_ms=<d>` line followed by the
//! exposition body verbatim), loadable by [`crate::trace::Trace::load`].

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;

use crate::trace::MARKER;

/// What was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordSummary {
    pub scrapes: u64,
    pub failed: u64,
    pub bytes: u64,
}

/// Scrapes `url` every `interval` for `duration` into a gzip'd trace at
/// `out`. A failed scrape is reported and skipped (the trace has no gap
/// markers; the replay re-stamps scrapes onto its own grid anyway).
pub fn record(
    url: &str,
    interval: Duration,
    duration: Duration,
    out: &Path,
    progress: bool,
) -> anyhow::Result<RecordSummary> {
    anyhow::ensure!(!interval.is_zero(), "--interval must be positive");
    let http = reqwest::blocking::Client::builder()
        .timeout(interval.max(Duration::from_secs(1)))
        .build()?;
    let file = std::fs::File::create(out).with_context(|| format!("create {}", out.display()))?;
    let mut gz = flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::best());
    let start = Instant::now();
    let mut summary = RecordSummary {
        scrapes: 0,
        failed: 0,
        bytes: 0,
    };
    let mut next = start;
    while next.duration_since(start) < duration {
        let now = Instant::now();
        if now < next {
            std::thread::sleep(next - now);
        }
        next += interval;
        let ts_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let t0 = Instant::now();
        let body = http
            .get(url)
            .header("Accept", "text/plain;version=0.0.4")
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.text());
        let dur_ms = t0.elapsed().as_millis();
        match body {
            Ok(body) => {
                writeln!(gz, "{MARKER} ts_ms={ts_ms} seq={} dur_ms={dur_ms}", summary.scrapes)?;
                gz.write_all(body.as_bytes())?;
                if !body.ends_with('\n') {
                    gz.write_all(b"\n")?;
                }
                summary.scrapes += 1;
                summary.bytes += body.len() as u64;
            }
            Err(e) => {
                summary.failed += 1;
                eprintln!("\nscrape of {url} failed: {e}");
            }
        }
        if progress {
            eprint!(
                "\r[{:>6.1}s] {} scrapes, {} failed, {:.1} MB\x1b[K",
                start.elapsed().as_secs_f64(),
                summary.scrapes,
                summary.failed,
                summary.bytes as f64 / 1e6
            );
        }
    }
    if progress {
        eprintln!();
    }
    gz.finish()?.flush()?;
    anyhow::ensure!(summary.scrapes > 0, "no successful scrape of {url}");
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read};
    use std::net::TcpListener;

    /// A tiny exporter whose counter rises by 3 per scrape.
    fn serve(listener: TcpListener, scrapes: usize) {
        for (i, stream) in listener.incoming().take(scrapes).enumerate() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap() > 2 {
                line.clear();
            }
            let body = format!(
                "# HELP c_total A counter.\n# TYPE c_total counter\nc_total{{mode=\"x\"}} {}\n# TYPE g gauge\ng 1.5\n",
                3 * i
            );
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
    }

    #[test]
    fn records_a_loadable_trace() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || serve(listener, 5));
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.prom.gz");
        let s = record(
            &url,
            Duration::from_millis(100),
            Duration::from_millis(450),
            &out,
            false,
        )
        .unwrap();
        server.join().unwrap();
        assert_eq!(s.scrapes, 5);
        assert_eq!(s.failed, 0);
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text.matches(MARKER).count(), 5);
        assert!(text.starts_with("# PEERBENCH_SCRAPE ts_ms="));
        let t = crate::trace::Trace::load(&out).unwrap();
        assert_eq!(t.scrapes(), 5);
        assert_eq!(t.series_count(), 2);
        assert!(t.series[0].monotonic);
        assert_eq!(
            t.values.iter().map(|v| v[0]).collect::<Vec<_>>(),
            [0.0, 3.0, 6.0, 9.0, 12.0]
        );
        assert!(t.recorded_ts.windows(2).all(|w| w[1] - w[0] >= 90));
    }
}
