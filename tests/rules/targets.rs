//! The data of tests/rules/data.rs served for scraping: one loopback target
//! per instance, each exposing its series of the batch last published, in
//! the text format with the batch's timestamp on every sample, so servers
//! that scrape it at different moments store the same samples. A series
//! left out of a batch (the data's staleness markers) is missing from the
//! exposition, as a filesystem unmounted from a node_exporter would be.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use cairn_bench::scrape::exporter::{push_value, series_prefix};
use cairn_model::{Labels, is_stale_nan};
use cairn_protocols::SeriesSamples;

pub struct Targets {
    /// `host:port` of each target, in instance order.
    pub addrs: Vec<String>,
    /// The instances, in the order of `addrs`.
    instances: Vec<String>,
    bodies: Vec<Arc<Mutex<String>>>,
}

impl Targets {
    /// One target per instance, serving an empty exposition until the
    /// first batch is published.
    pub fn start(instances: &[String]) -> Self {
        let mut addrs = Vec::new();
        let mut bodies = Vec::new();
        for _ in instances {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind target");
            addrs.push(listener.local_addr().expect("addr").to_string());
            let body = Arc::new(Mutex::new(String::new()));
            bodies.push(Arc::clone(&body));
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let body = body.lock().expect("body").clone();
                    std::thread::spawn(move || serve(stream, &body));
                }
            });
        }
        Self {
            addrs,
            instances: instances.to_vec(),
            bodies,
        }
    }

    /// Serves `batch` from now on, each series from the target of its
    /// `instance`; staleness markers are left out.
    pub fn publish(&self, batch: &[SeriesSamples]) {
        let mut texts: BTreeMap<&str, String> = BTreeMap::new();
        for s in batch {
            let instance = s.labels.get("instance").unwrap_or_default();
            // `instance` and `job` are the scrape configuration's target labels.
            let own = Labels::from_pairs(
                s.labels
                    .iter()
                    .filter(|l| !matches!(l.name.as_str(), "instance" | "job"))
                    .map(|l| (l.name.as_str(), l.value.as_str())),
            );
            for sample in s.samples.iter().filter(|x| !is_stale_nan(x.v)) {
                let text = texts.entry(instance).or_default();
                text.push_str(&series_prefix(&own));
                push_value(text, sample.v);
                text.push_str(&format!(" {}\n", sample.t));
            }
        }
        for (instance, body) in self.instances.iter().zip(&self.bodies) {
            *body.lock().expect("body") = texts.remove(instance.as_str()).unwrap_or_default();
        }
    }
}

/// Answers one scrape with `body` and closes the connection.
fn serve(stream: std::net::TcpStream, body: &str) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}
