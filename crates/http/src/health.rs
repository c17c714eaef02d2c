//! `/-/healthy` and `/-/ready`.

use axum::extract::State;
use axum::http::StatusCode;

use crate::AppState;

/// Always 200 while the process serves HTTP.
pub async fn healthy() -> &'static str {
    "Cairn is Healthy.\n"
}

/// 200 once the state is marked ready, 503 otherwise (startup, shutdown).
pub async fn ready(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if state.is_ready() {
        (StatusCode::OK, "Cairn is Ready.\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
    }
}

#[cfg(test)]
mod tests {
    use crate::test_util::*;

    #[tokio::test]
    async fn healthy_and_ready() {
        let app = TestApp::new();
        app.get("/-/healthy").await.check(200, "Cairn is Healthy.\n");
        app.get("/prometheus/-/healthy").await.check(200, "Cairn is Healthy.\n");
        app.state.set_ready(false);
        app.get("/-/ready").await.check(503, "Service Unavailable");
        app.state.set_ready(true);
        app.get("/-/ready").await.check(200, "Cairn is Ready.\n");
    }
}
