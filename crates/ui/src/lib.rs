//! Cairn's web UI, served from the binary itself.
//!
//! The app lives in `app/` (TypeScript, built with Vite); its build output in
//! `dist/` is committed and embedded here at compile time, so building
//! `cairn` needs no Node.js and the UI works offline. `scripts/build-ui.sh`
//! rebuilds `dist/`, and the test suite checks that it matches `app/`.
//!
//! One build serves any path prefix: asset URLs are relative and the page's
//! `<base href>` is written per request by [`page`].

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::LazyLock;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(rust_embed::Embed)]
#[folder = "dist/"]
struct Dist;

/// The placeholder the app's `index.html` carries where the prefix goes.
const PREFIX_PLACEHOLDER: &str = "CAIRN_PATH_PREFIX";

/// One embedded file, ready to send plain or gzipped.
struct Asset {
    plain: Cow<'static, [u8]>,
    gzipped: Vec<u8>,
    content_type: &'static str,
    etag: HeaderValue,
}

/// Every asset under `assets/`, compressed once on first use.
static ASSETS: LazyLock<HashMap<String, Asset>> = LazyLock::new(|| {
    Dist::iter()
        .filter(|name| name.starts_with("assets/"))
        .filter_map(|name| {
            let file = Dist::get(&name)?;
            let etag = HeaderValue::from_str(&format!("\"{}\"", hex(&file.metadata.sha256_hash()[..16]))).ok()?;
            let asset = Asset {
                gzipped: gzip(&file.data),
                plain: file.data,
                content_type: content_type(&name),
                etag,
            };
            Some((name.into_owned(), asset))
        })
        .collect()
});

/// The paths the app answers (`routes.json`, written by its build).
static PAGE_PATHS: LazyLock<Vec<String>> = LazyLock::new(|| {
    Dist::get("routes.json")
        .and_then(|file| serde_json::from_slice(&file.data).ok())
        .unwrap_or_default()
});

/// The paths of the app's pages below the prefix (`/`, `/query`, ...).
pub fn page_paths() -> &'static [String] {
    &PAGE_PATHS
}

/// The app's page with `prefix` (no trailing slash; "" at the root) as the
/// path everything else is fetched under.
pub fn page(prefix: &str) -> Response {
    let Some(index) = Dist::get("index.html") else {
        return (StatusCode::NOT_FOUND, "the web UI was not built into this binary").into_response();
    };
    let html = String::from_utf8_lossy(&index.data).replace(PREFIX_PLACEHOLDER, &escape_attribute(prefix));
    let mut response = Response::new(Body::from(html));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The asset at `path` below `assets/`, gzipped when the request accepts it.
/// Asset names carry a hash of their content, so they are cached for good.
pub fn asset(path: &str, request: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.get(&format!("assets/{path}")) else {
        return (StatusCode::NOT_FOUND, "no such asset").into_response();
    };
    if request.get(header::IF_NONE_MATCH) == Some(&asset.etag) {
        return StatusCode::NOT_MODIFIED.into_response();
    }
    let gzip = accepts_gzip(request) && asset.gzipped.len() < asset.plain.len();
    let body = if gzip {
        Body::from(asset.gzipped.clone())
    } else {
        Body::from(asset.plain.clone())
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(header::ETAG, asset.etag.clone());
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if gzip {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    response
}

fn accepts_gzip(request: &HeaderMap) -> bool {
    request
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';');
            let name = parts.next().unwrap_or("").trim();
            let refused = parts.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("gzip") && !refused
        })
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "html" => "text/html; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "woff2" => "font/woff2",
        _ => "application/octet-stream",
    }
}

fn escape_attribute(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(response: Response) -> Vec<u8> {
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec()
    }

    fn script_path(html: &str) -> String {
        let start = html.find("assets/").expect("the page loads an asset");
        let end = html[start..].find('"').unwrap() + start;
        html[start + "assets/".len()..end].to_string()
    }

    #[test]
    fn the_pages_are_those_the_app_routes() {
        for path in ["/", "/query", "/graph", "/alerts", "/cardinality"] {
            assert!(page_paths().iter().any(|p| p == path), "{path}");
        }
    }

    #[tokio::test]
    async fn the_page_carries_its_prefix_and_no_placeholder() {
        let html = String::from_utf8(body(page("/prometheus")).await).unwrap();
        assert!(html.contains(r#"<base href="/prometheus/""#), "{html}");
        assert!(!html.contains(PREFIX_PLACEHOLDER));
        let html = String::from_utf8(body(page("")).await).unwrap();
        assert!(html.contains(r#"<base href="/""#), "{html}");
        let html = String::from_utf8(body(page(r#"/a"><script>"#)).await).unwrap();
        assert!(html.contains(r#"<base href="/a&quot;&gt;&lt;script&gt;/""#), "{html}");
    }

    #[tokio::test]
    async fn assets_are_gzipped_when_accepted_and_cached_by_etag() {
        let html = String::from_utf8(body(page("")).await).unwrap();
        let name = script_path(&html);
        let plain = asset(&name, &HeaderMap::new());
        assert_eq!(plain.status(), StatusCode::OK);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let etag = plain.headers()[header::ETAG].clone();
        let plain = body(plain).await;

        let mut accept = HeaderMap::new();
        accept.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("br, gzip;q=0.8"));
        let gzipped = asset(&name, &accept);
        assert_eq!(gzipped.headers()[header::CONTENT_ENCODING], "gzip");
        let mut unzipped = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::GzDecoder::new(&body(gzipped).await[..]),
            &mut unzipped,
        )
        .unwrap();
        assert_eq!(unzipped, plain);

        accept.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip;q=0"));
        assert!(asset(&name, &accept).headers().get(header::CONTENT_ENCODING).is_none());

        let mut again = HeaderMap::new();
        again.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(asset(&name, &again).status(), StatusCode::NOT_MODIFIED);
        assert_eq!(asset("nope.js", &HeaderMap::new()).status(), StatusCode::NOT_FOUND);
    }
}
