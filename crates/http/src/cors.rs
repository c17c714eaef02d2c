//! Cross-origin requests, as Prometheus' API answers them with its default
//! `--web.cors.origin=.*`: any `Origin` is allowed and echoed back, and a
//! preflight `OPTIONS` of any API path gets 204 with the allowed methods
//! and headers.

use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub async fn cors(req: Request, next: Next) -> Response {
    let origin = req.headers().get(header::ORIGIN).cloned();
    let mut resp = if req.method() == Method::OPTIONS && is_api(req.uri().path()) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        next.run(req).await
    };
    let headers = resp.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Accept, Authorization, Content-Type, Origin"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static("Date"));
    if let Some(origin) = origin {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    resp
}

fn is_api(path: &str) -> bool {
    path.strip_prefix("/prometheus").unwrap_or(path).starts_with("/api/v1/")
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::Request;

    use crate::test_util::*;

    #[tokio::test]
    async fn preflights_get_204_and_answers_echo_the_origin() {
        let app = TestApp::new();
        for path in ["/api/v1/query", "/prometheus/api/v1/series", "/api/v1/anything"] {
            let req = Request::builder()
                .method("OPTIONS")
                .uri(path)
                .header("origin", "http://grafana.example")
                .body(Body::empty())
                .unwrap();
            let resp = app.request(req).await;
            resp.check(204, "");
            assert_eq!(resp.headers["access-control-allow-origin"], "http://grafana.example");
            assert_eq!(resp.headers["access-control-allow-methods"], "GET, POST, OPTIONS");
        }
        let req = Request::get("/api/v1/labels")
            .header("origin", "http://a")
            .body(Body::empty())
            .unwrap();
        let resp = app.request(req).await;
        resp.check_status(200);
        assert_eq!(resp.headers["access-control-allow-origin"], "http://a");
        // Without an Origin nothing is echoed.
        let resp = app.get("/api/v1/labels").await;
        assert!(!resp.headers.contains_key("access-control-allow-origin"));
    }
}
