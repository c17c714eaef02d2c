//! A scrape target on a loopback port: each scrape gets the text exposition
//! that a function makes of the scrape's number (1, 2, …), and the target
//! notes when it answered each.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

pub struct ExpositionTarget {
    /// `host:port`.
    pub addr: String,
    answered: Arc<Mutex<Vec<i64>>>,
}

impl ExpositionTarget {
    /// Listens on `host` (port 0) and answers every scrape with `body` of
    /// its number, until the test process ends.
    pub fn start(host: &str, body: impl Fn(u64) -> String + Send + 'static) -> Self {
        let listener = TcpListener::bind((host, 0)).expect("bind target");
        let addr = listener.local_addr().expect("addr").to_string();
        let answered = Arc::new(Mutex::new(Vec::new()));
        let log = answered.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
                let mut line = String::new();
                // The request line and headers; a scrape has no body.
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let mut answered = log.lock().expect("answered scrapes");
                let body = body(answered.len() as u64 + 1);
                let written = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                if written.is_ok() {
                    answered.push(super::now_ms());
                }
            }
        });
        Self { addr, answered }
    }

    /// When (wall clock, ms) each scrape so far was answered: the n-th is
    /// scrape n.
    pub fn answered(&self) -> Vec<i64> {
        self.answered.lock().expect("answered scrapes").clone()
    }
}
