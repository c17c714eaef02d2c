//! Classic histograms converted to native histograms with custom buckets.
use super::{Exposition, ExpositionError};

pub(crate) fn convert_to_nhcb(_out: &mut Exposition, _keep_classic: bool) -> Result<(), ExpositionError> {
    Err(ExpositionError::new(
        1,
        0,
        "classic histogram conversion is not implemented yet",
    ))
}
