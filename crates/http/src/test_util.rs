//! Test helpers: a router over `MemStorage` and one-call request checks.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, header};
use cairn_model::{Labels, Sample};
use cairn_storage::MemStorage;
use tower::ServiceExt;

use crate::{ApiConfig, AppState, router};

/// `(metric, job, [(t, v)])`: one series to write in a test.
pub type TestSeries<'a> = (&'a str, &'a str, &'a [(i64, f64)]);

pub struct TestApp {
    pub state: AppState,
    pub storage: MemStorage,
    router: Router,
}

pub struct TestResponse {
    pub status: u16,
    pub body: String,
    /// The body as sent, for binary answers.
    pub raw: Vec<u8>,
    pub headers: axum::http::HeaderMap,
}

impl TestResponse {
    /// Asserts status and exact body.
    #[track_caller]
    pub fn check(&self, status: u16, body: &str) {
        assert_eq!((self.status, self.body.as_str()), (status, body), "unexpected response");
    }

    #[track_caller]
    pub fn check_status(&self, status: u16) {
        assert_eq!(self.status, status, "body: {}", self.body);
    }

    /// Asserts an error envelope with this status, type and message.
    #[track_caller]
    pub fn check_error(&self, status: u16, error_type: &str, message: &str) {
        let expected = serde_json::json!({
            "status": "error",
            "errorType": error_type,
            "error": message,
        });
        let got: serde_json::Value =
            serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body));
        assert_eq!((self.status, got), (status, expected));
    }

    pub fn content_type(&self) -> &str {
        self.headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
}

/// Percent-encodes characters that may not appear raw in a URI query.
fn encode_uri(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            '"' | '{' | '}' | ' ' | '<' | '>' | '|' | '\\' | '^' | '`' | '[' | ']' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

impl TestApp {
    pub fn new() -> Self {
        Self::with_config(ApiConfig::default())
    }

    pub fn with_config(config: ApiConfig) -> Self {
        let storage = MemStorage::new();
        let state = AppState::new(
            Arc::new(cairn_storage::MemTenants::with_default(storage.clone())),
            config,
        );
        Self {
            router: router(state.clone()),
            state,
            storage,
        }
    }

    /// The same state and storage behind another router.
    pub fn with_router(self, router: Router) -> Self {
        Self { router, ..self }
    }

    /// Writes `(metric, job, samples)` series straight into storage.
    pub fn write(&self, series: &[TestSeries<'_>]) {
        use cairn_storage::Appendable;
        let mut app = self.storage.appender();
        for (metric, job, samples) in series {
            let labels = Labels::from_pairs([("__name__", *metric), ("job", *job)]);
            let samples: Vec<Sample> = samples.iter().map(|&(t, v)| Sample::new(t, v)).collect();
            app.append(&labels, &samples).unwrap();
        }
        app.commit().unwrap();
    }

    /// Writes one series of these labels straight into storage.
    pub fn write_labels(&self, labels: &[(&str, &str)], samples: &[(i64, f64)]) {
        use cairn_storage::Appendable;
        let mut app = self.storage.appender();
        let samples: Vec<Sample> = samples.iter().map(|&(t, v)| Sample::new(t, v)).collect();
        app.append(&Labels::from_pairs(labels.iter().copied()), &samples)
            .unwrap();
        app.commit().unwrap();
    }

    pub async fn request(&self, req: Request<Body>) -> TestResponse {
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX).await.unwrap();
        TestResponse {
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            raw: bytes.to_vec(),
            headers,
        }
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        let req = Request::get(encode_uri(path)).body(Body::empty()).unwrap();
        self.request(req).await
    }

    async fn form(&self, method: Method, path: &str, body: &str) -> TestResponse {
        let req = Request::builder()
            .method(method)
            .uri(encode_uri(path))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(body.to_string()))
            .unwrap();
        self.request(req).await
    }

    pub async fn post_form(&self, path: &str, body: &str) -> TestResponse {
        self.form(Method::POST, path, body).await
    }

    pub async fn put_form(&self, path: &str, body: &str) -> TestResponse {
        self.form(Method::PUT, path, body).await
    }

    /// A POST of a text body without headers.
    pub async fn post(&self, path: &str, body: &str) -> TestResponse {
        self.post_raw(path, &[], body.as_bytes().to_vec()).await
    }

    /// A POST with a raw body and extra headers.
    pub async fn post_raw(&self, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> TestResponse {
        let mut req = Request::post(encode_uri(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.request(req.body(Body::from(body)).unwrap()).await
    }
}
