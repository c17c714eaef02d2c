//! OpenMetrics text.
use super::{Exposition, ExpositionError};

/// Reads a whole body.
pub fn parse(_body: &[u8], _skip_created_series: bool) -> Result<Exposition, ExpositionError> {
    Err(ExpositionError::new(1, 0, "OpenMetrics parsing is not implemented yet"))
}
