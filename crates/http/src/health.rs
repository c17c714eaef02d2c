//! `/-/healthy` and `/-/ready`.

use std::borrow::Cow;

use axum::extract::State;
use axum::http::StatusCode;

use crate::AppState;

/// Always 200 while the process serves HTTP.
pub async fn healthy() -> &'static str {
    "Cairn is Healthy.\n"
}

/// 200 once the state is marked ready and storage takes writes; 503
/// otherwise: while starting or shutting down, and while storage refuses
/// writes (a full disk, say), saying why.
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Cow<'static, str>) {
    if !state.is_ready() {
        return (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable".into());
    }
    let stats = crate::metrics::tenant_stats(&state).await.unwrap_or_default();
    match stats.into_iter().find_map(|(_, s)| s.write_refusal) {
        None => (StatusCode::OK, "Cairn is Ready.\n".into()),
        Some(refusal) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Writes are refused ({}): {}\n",
                refusal.reason.as_str(),
                refusal.message
            )
            .into(),
        ),
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
