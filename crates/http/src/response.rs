//! The success envelope and JSON helpers shared by every JSON endpoint.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_model::Labels;
use serde::Serialize;
use serde::ser::SerializeMap;

/// `{"status":"success","data":...,"warnings":[...]}`; `warnings` is left out
/// when empty, as Prometheus does.
#[derive(Debug, Serialize)]
pub struct Success<T: Serialize> {
    status: &'static str,
    pub data: T,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl<T: Serialize> Success<T> {
    pub fn new(data: T) -> Self {
        Self {
            status: "success",
            data,
            warnings: Vec::new(),
        }
    }

    pub fn with_warnings(data: T, warnings: Vec<String>) -> Self {
        Self {
            status: "success",
            data,
            warnings,
        }
    }
}

impl<T: Serialize> IntoResponse for Success<T> {
    fn into_response(self) -> Response {
        json_response(StatusCode::OK, &self)
    }
}

/// Serialises `body` as the response with `Content-Type: application/json`.
/// A serialisation failure (not expected for our types) becomes a 500 envelope.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => crate::ApiError::internal(format!("cannot encode response: {e}")).into_response(),
    }
}

/// Serialises a label set as a JSON object in label order:
/// `{"__name__":"up","job":"x"}`.
#[derive(Debug, Clone, Copy)]
pub struct LabelsJson<'a>(pub &'a Labels);

impl Serialize for LabelsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for l in self.0 {
            map.serialize_entry(&l.name, &l.value)?;
        }
        map.end()
    }
}

/// A float as Prometheus writes sample values: a JSON string, with `NaN`,
/// `+Inf` and `-Inf` for the special values.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "+Inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_omits_empty_warnings() {
        let s = serde_json::to_string(&Success::new(vec!["a"])).unwrap();
        assert_eq!(s, r#"{"status":"success","data":["a"]}"#);
        let s = serde_json::to_string(&Success::with_warnings(1, vec!["w".into()])).unwrap();
        assert_eq!(s, r#"{"status":"success","data":1,"warnings":["w"]}"#);
    }

    #[test]
    fn labels_serialise_in_order() {
        let l = Labels::from_pairs([("job", "x\"y"), ("__name__", "up")]);
        let s = serde_json::to_string(&LabelsJson(&l)).unwrap();
        assert_eq!(s, r#"{"__name__":"up","job":"x\"y"}"#);
    }

    #[test]
    fn special_values_format_like_prometheus() {
        assert_eq!(format_value(1.0), "1");
        assert_eq!(format_value(2.5), "2.5");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
    }
}
