//! The web UI (cairn-ui) at every prefix the API is served under: its pages
//! (any caller the status routes admit) and its assets (open: code, no data).

use axum::Router;
use axum::extract::{OriginalUri, Path, State};
use axum::http::{HeaderMap, Uri};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use crate::AppState;

/// A page path that is also InfluxDB's query endpoint: [`crate::influx::query`]
/// answers it and hands a page request (a GET without `q`) to [`page_at`].
pub const SHARED_WITH_INFLUX: &str = "/query";

/// The app's pages, answered with the app itself.
pub fn page_routes() -> Router<AppState> {
    cairn_ui::page_paths()
        .iter()
        .filter(|path| *path != SHARED_WITH_INFLUX)
        .fold(Router::new(), |router, path| router.route(path, get(page)))
}

/// The app's assets.
pub fn asset_routes() -> Router<AppState> {
    Router::new().route("/assets/{*file}", get(asset))
}

async fn page(State(state): State<AppState>, OriginalUri(uri): OriginalUri) -> Response {
    page_at(&state, uri.path())
}

/// The app's page as requested at `path` (the full path, prefix included).
pub fn page_at(state: &AppState, path: &str) -> Response {
    cairn_ui::page(&base_path(state, path))
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    cairn_ui::asset(&file, &headers)
}

/// A prefix with a trailing slash (`/prometheus/`) to the prefix itself,
/// where its routes' `/` is (routes nested under a prefix do not match it).
pub fn prefix_root_redirect(state: &AppState, uri: &Uri) -> Option<Response> {
    let prefix = uri.path().strip_suffix('/')?;
    let known = prefix == "/prometheus" || (!prefix.is_empty() && prefix == state.config().route_prefix);
    if !known {
        return None;
    }
    let target = match uri.query() {
        Some(query) => format!("{prefix}?{query}"),
        None => prefix.to_string(),
    };
    Some(Redirect::temporary(&target).into_response())
}

/// The path prefix a page requested at `path` is seen under by the browser:
/// the prefix it matched (`/prometheus`, `--web.route-prefix` or none), or for
/// the route prefix, the path of `--web.external-url` when a proxy in front
/// changes it.
fn base_path(state: &AppState, path: &str) -> String {
    let config = state.config();
    let under = |prefix: &str| {
        !prefix.is_empty()
            && path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    let route_prefix = config.route_prefix.as_str();
    let public = |prefix: &str| match &config.external_path {
        Some(external) => external.clone(),
        None => prefix.to_string(),
    };
    if under(route_prefix) {
        public(route_prefix)
    } else if under("/prometheus") {
        "/prometheus".to_string()
    } else if route_prefix.is_empty() {
        public("")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use crate::ApiConfig;
    use crate::test_util::*;

    fn base_of(html: &str) -> &str {
        let start = html.find("<base href=\"").expect("a base element") + "<base href=\"".len();
        &html[start..start + html[start..].find('"').unwrap()]
    }

    async fn page_base(app: &TestApp, path: &str) -> String {
        let mut resp = app.get(path).await;
        if resp.status == 307 {
            let to = path.trim_end_matches('/');
            assert_eq!(resp.headers["location"], to, "{path}");
            resp = app.get(to).await;
        }
        assert_eq!(resp.status, 200, "{path}: {}", resp.body);
        base_of(&resp.body).to_string()
    }

    #[tokio::test]
    async fn pages_are_served_under_every_prefix_with_their_base() {
        let app = TestApp::new();
        for (path, base) in [
            ("/", "/"),
            ("/query", "/"),
            ("/graph", "/"),
            ("/alerts", "/"),
            ("/prometheus/", "/prometheus/"),
            ("/prometheus/query", "/prometheus/"),
        ] {
            assert_eq!(page_base(&app, path).await, base, "{path}");
        }
        app.get("/nope").await.check_status(404);
        app.get("/api/v1/nope").await.check_status(404);
    }

    #[tokio::test]
    async fn route_prefix_and_external_path() {
        let app = TestApp::with_config(ApiConfig {
            route_prefix: "/cairn".into(),
            ..ApiConfig::default()
        });
        assert_eq!(page_base(&app, "/cairn/query").await, "/cairn/");
        assert_eq!(page_base(&app, "/cairn/").await, "/cairn/");
        assert_eq!(page_base(&app, "/query").await, "/");
        app.get("/cairn/api/v1/labels").await.check_status(200);

        // A proxy that strips /monitoring in front of the route prefix.
        let app = TestApp::with_config(ApiConfig {
            route_prefix: "/cairn".into(),
            external_path: Some("/monitoring".into()),
            ..ApiConfig::default()
        });
        assert_eq!(page_base(&app, "/cairn/query").await, "/monitoring/");
        assert_eq!(page_base(&app, "/prometheus/query").await, "/prometheus/");
        let app = TestApp::with_config(ApiConfig {
            external_path: Some("/monitoring".into()),
            ..ApiConfig::default()
        });
        assert_eq!(page_base(&app, "/query").await, "/monitoring/");
    }

    #[tokio::test]
    async fn assets_are_served_under_every_prefix() {
        let app = TestApp::new();
        let html = app.get("/").await.body;
        let start = html.find("assets/").unwrap();
        let name = &html[start..start + html[start..].find('"').unwrap()];
        for prefix in ["", "/prometheus"] {
            let resp = app.get(&format!("{prefix}/{name}")).await;
            assert_eq!(resp.status, 200, "{prefix}/{name}");
            assert!(!resp.body.is_empty());
        }
    }
}
