//! Prometheus protobuf exposition.
use super::{Exposition, ExpositionError, ParseOptions};

/// Reads a whole body.
pub fn parse(_body: &[u8], _opts: &ParseOptions) -> Result<Exposition, ExpositionError> {
    Err(ExpositionError::new(1, 0, "protobuf parsing is not implemented yet"))
}
