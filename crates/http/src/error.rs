//! The Prometheus error envelope and the one mapping from storage errors to it.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cairn_storage::{ErrorKind, StorageError};
use serde::Serialize;

/// How long a client refused for now (503 unavailable, 429) is asked to
/// wait before it retries: long enough for a flush or a merge to free
/// memory or space, short enough that senders' queues stay small.
const RETRY_AFTER_SECONDS: &str = "5";

/// Prometheus' `errorType` values, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// 400: the request can never succeed as sent.
    BadData,
    /// 422: the request failed while being executed (e.g. a limit was hit).
    Execution,
    /// 503: try again later.
    Unavailable,
    /// 500: a bug or corrupt storage.
    Internal,
    /// 404: no such endpoint or object.
    NotFound,
    /// 405: the endpoint exists but not for this method.
    MethodNotAllowed,
    /// 413: the request body is over the configured limit.
    TooLarge,
    /// 415: unsupported `Content-Encoding` or `Content-Type`.
    UnsupportedMediaType,
    /// 503 with Prometheus' `timeout` type, for the query engine's use.
    Timeout,
    /// 499 (nginx's "client closed request", as Prometheus): the query was canceled.
    Canceled,
    /// 429: over a tenant's limit; senders retry later.
    TooManyRequests,
    /// 401: no valid credentials.
    Unauthorized,
    /// 403: valid credentials that do not allow this.
    Forbidden,
}

impl ErrorType {
    /// The `errorType` string of the envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadData => "bad_data",
            Self::Execution => "execution",
            Self::Unavailable => "unavailable",
            Self::Internal => "internal",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
            Self::TooLarge => "bad_data",
            Self::UnsupportedMediaType => "bad_data",
            Self::Timeout => "timeout",
            Self::Canceled => "canceled",
            Self::TooManyRequests => "too_many_requests",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
        }
    }

    pub fn status(self) -> StatusCode {
        match self {
            Self::BadData => StatusCode::BAD_REQUEST,
            Self::Execution => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Unavailable | Self::Timeout => StatusCode::SERVICE_UNAVAILABLE,
            // Prometheus' `statusClientClosedConnection` (nginx's 499).
            Self::Canceled => StatusCode::from_u16(499).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
        }
    }
}

/// An API error, rendered as
/// `{"status":"error","errorType":"bad_data","error":"..."}` with the matching status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub kind: ErrorType,
    pub message: String,
}

impl ApiError {
    pub fn new(kind: ErrorType, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    pub fn bad_data(message: impl Into<String>) -> Self {
        Self::new(ErrorType::BadData, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorType::Unavailable, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorType::NotFound, message)
    }

    pub fn status(&self) -> StatusCode {
        self.kind.status()
    }
}

/// The single place where a [`StorageError`] becomes an API error.
pub fn storage_error(err: &StorageError) -> ApiError {
    let kind = match err.kind() {
        ErrorKind::BadData => ErrorType::BadData,
        ErrorKind::Execution => ErrorType::Execution,
        ErrorKind::Unavailable => ErrorType::Unavailable,
        ErrorKind::Internal => ErrorType::Internal,
    };
    if kind == ErrorType::Internal {
        tracing::error!(error = %err, "storage error");
    }
    ApiError::new(kind, err.to_string())
}

impl From<StorageError> for ApiError {
    fn from(err: StorageError) -> Self {
        storage_error(&err)
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    status: &'static str,
    #[serde(rename = "errorType")]
    error_type: &'static str,
    error: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            status: "error",
            error_type: self.kind.as_str(),
            error: &self.message,
        };
        let mut response = (self.status(), Json(body)).into_response();
        if matches!(self.kind, ErrorType::Unavailable | ErrorType::TooManyRequests) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static(RETRY_AFTER_SECONDS));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn error_types_map_to_prometheus_status_codes() {
        let cases = [
            (ErrorType::BadData, 400, "bad_data"),
            (ErrorType::Execution, 422, "execution"),
            (ErrorType::Canceled, 499, "canceled"),
            (ErrorType::Timeout, 503, "timeout"),
            (ErrorType::Unavailable, 503, "unavailable"),
            (ErrorType::Internal, 500, "internal"),
            (ErrorType::NotFound, 404, "not_found"),
        ];
        for (kind, status, name) in cases {
            assert_eq!((kind.status().as_u16(), kind.as_str()), (status, name), "{kind:?}");
        }
    }

    #[test]
    fn storage_errors_map_by_kind() {
        let cases = [
            (StorageError::InvalidArgument("x".into()), 400, "bad_data"),
            (StorageError::LimitExceeded("x".into()), 422, "execution"),
            (StorageError::Unavailable("x".into()), 503, "unavailable"),
            (
                StorageError::Corrupt {
                    path: PathBuf::from("/p"),
                    reason: "r".into(),
                },
                500,
                "internal",
            ),
        ];
        for (err, status, kind) in cases {
            let api = storage_error(&err);
            assert_eq!(api.status().as_u16(), status, "{err}");
            assert_eq!(api.kind.as_str(), kind);
            assert_eq!(api.message, err.to_string());
        }
    }

    #[test]
    fn refusals_worth_a_retry_say_when() {
        for (kind, retry_after) in [
            (ErrorType::Unavailable, Some("5")),
            (ErrorType::TooManyRequests, Some("5")),
            (ErrorType::Timeout, None),
            (ErrorType::Internal, None),
        ] {
            let response = ApiError::new(kind, "x").into_response();
            let header = response.headers().get(header::RETRY_AFTER);
            assert_eq!(header.map(|v| v.to_str().unwrap()), retry_after, "{kind:?}");
        }
    }
}
