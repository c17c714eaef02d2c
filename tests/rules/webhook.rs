//! A webhook receiver for Alertmanager: a loopback HTTP server that keeps
//! every notification's JSON body, in arrival order. Alertmanager's API
//! forgets resolved alerts, so its notifications are where resolutions show.
//! Given as an Alertmanager to a sender, it keeps what the sender posts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

pub struct Webhook {
    pub url: String,
    /// `host:port`, as a sender's configuration names an Alertmanager.
    pub addr: String,
    /// Each body with when it arrived (ms).
    received: Arc<Mutex<Vec<(i64, serde_json::Value)>>>,
}

impl Webhook {
    /// Listens on a free loopback port; a thread serves it until the test
    /// process ends.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind webhook");
        let addr = listener.local_addr().expect("addr").to_string();
        let url = format!("http://{addr}/");
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(body) = serve(stream) {
                    sink.lock().expect("webhook lock").push((crate::common::now_ms(), body));
                }
            }
        });
        Self { url, addr, received }
    }

    /// The notifications received so far.
    pub fn received(&self) -> Vec<serde_json::Value> {
        self.received_at().into_iter().map(|(_, body)| body).collect()
    }

    /// The bodies received so far, each with when it arrived (ms).
    pub fn received_at(&self) -> Vec<(i64, serde_json::Value)> {
        self.received.lock().expect("webhook lock").clone()
    }
}

/// Reads one request, answers 200 and closes the connection (so the
/// sender opens a new one for the next notification); returns the body.
fn serve(stream: TcpStream) -> Option<serde_json::Value> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut writer = stream;
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    writer
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .ok()?;
    serde_json::from_slice(&body).ok()
}
