//! Debian's Chromium driven headless through `chromedriver` (W3C WebDriver
//! over HTTP), for the web UI's tests: the few commands they use, blocking.
//! Most checks run JavaScript in the page (`execute`), which sees what the
//! user sees.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{free_port, http_client};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether Chromium and chromedriver are installed; when not, the test
/// skips (saying so), or under CI fails.
pub fn available() -> bool {
    super::peers::require("chromedriver", "chromium-driver").is_some()
        && super::peers::require("chromium", "chromium").is_some()
}

/// A running chromedriver with one headless Chromium session.
pub struct Browser {
    driver: Child,
    base: String,
    client: reqwest::blocking::Client,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium window of `width` × `height`.
    pub fn start(width: u32, height: u32) -> Self {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        let client = http_client(Duration::from_secs(60));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         format!("--window-size={width},{height}")],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Self {
            driver,
            base: base.clone(),
            client,
        };
        let session = browser.command("POST", "/session", capabilities);
        let id = session["sessionId"].as_str().expect("a session id").to_string();
        browser.base = format!("{base}/session/{id}");
        browser
    }

    fn command(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.client.get(&url),
            "DELETE" => self.client.delete(&url),
            _ => self.client.post(&url).json(&body),
        };
        let response = request.send().unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status();
        let value: Value = response.json().expect("WebDriver answers JSON");
        assert!(status.is_success(), "{method} {path}: {status} {value}");
        value["value"].clone()
    }

    /// Opens `url` and waits until the page has loaded.
    pub fn open(&self, url: &str) {
        self.command("POST", "/url", json!({ "url": url }));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.command("POST", "/execute/sync", json!({ "script": script, "args": args }))
    }

    /// Polls `script` until it returns something other than `null`/`false`.
    pub fn wait_for(&self, what: &str, script: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let v = self.execute(script, vec![]);
            if !(v.is_null() || v == Value::Bool(false)) {
                return v;
            }
            if Instant::now() > deadline {
                let errors = self.console_errors();
                panic!("timed out waiting for {what}; console errors: {errors:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The first element matching a CSS selector (its WebDriver reference).
    pub fn find(&self, css: &str) -> String {
        let v = self.command("POST", "/element", json!({"using": "css selector", "value": css}));
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.command("POST", &format!("/element/{id}/click"), json!({}));
    }

    /// Types `text` into the element, as keystrokes (`\u{E007}` is Enter).
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.command("POST", &format!("/element/{id}/value"), json!({ "text": text }));
    }

    /// The browser console's errors since the last call (Chromium's SEVERE entries).
    pub fn console_errors(&self) -> Vec<String> {
        let logs = self.command("POST", "/se/log", json!({"type": "browser"}));
        logs.as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Saves a screenshot of the window as PNG.
    pub fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let png = self.command("GET", "/screenshot", json!({}));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64 PNG"))
            .expect("valid base64");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the screenshot directory");
        }
        std::fs::write(path, bytes).expect("write the screenshot");
    }

    pub fn set_window_size(&self, width: u32, height: u32) {
        self.command("POST", "/window/rect", json!({"width": width, "height": height}));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.client.delete(&self.base).send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
