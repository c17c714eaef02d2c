//! Index segments must load or fail cleanly, never panic or over-allocate,
//! whatever the bytes: both arbitrary bytes, and the input framed as a valid
//! segment's entry stream (compressed, counted and checksummed), which gets
//! past the checksum to the entries, the label checks and the index built
//! from them. A segment that loads must read back the same in a day that
//! shares its labels (`check_index_segment` asserts it).

use cairn_tsdb::formats::{check_index_segment, encode_index_segment};

pub fn tsdb_index_segment(data: &[u8]) {
    let _ = check_index_segment(data);
    // The first byte claims how many entries the rest holds.
    if let Some((&count, entries)) = data.split_first()
        && let Ok(segment) = encode_index_segment(entries, u64::from(count % 16))
    {
        let _ = check_index_segment(&segment);
    }
}
