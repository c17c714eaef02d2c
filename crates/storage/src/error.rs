use std::path::PathBuf;

/// What a caller should do about an error; the HTTP layer maps it to a status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request can never succeed (bad labels, bad matchers): 400.
    BadData,
    /// The request hit a limit or failed during execution: 422.
    Execution,
    /// Retrying later may work (shutting down, disk full, overloaded): 503.
    Unavailable,
    /// A bug or corrupted storage: 500.
    Internal,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    #[error("invalid series {labels}: {reason}")]
    InvalidSeries { labels: String, reason: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    #[error("storage is not available: {0}")]
    Unavailable(String),
    #[error("corrupt data in {path}: {reason}", path = path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("i/o error while trying to {action} {path}", path = path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl StorageError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::InvalidSeries { .. } | Self::InvalidArgument(_) => ErrorKind::BadData,
            Self::LimitExceeded(_) => ErrorKind::Execution,
            Self::Unavailable(_) => ErrorKind::Unavailable,
            // A full disk or one turned read-only is worth a retry (space is
            // freed, the filesystem remounted); other I/O failures are internal.
            Self::Io { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::StorageFull
                        | std::io::ErrorKind::QuotaExceeded
                        | std::io::ErrorKind::ReadOnlyFilesystem
                ) =>
            {
                ErrorKind::Unavailable
            }
            Self::Io { .. } | Self::Corrupt { .. } => ErrorKind::Internal,
        }
    }

    /// Helper for `map_err` on I/O calls: `.map_err(StorageError::io("open", &path))`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { action, path, source }
    }
}
