//! A losses file from arbitrary bytes must decode or fail cleanly.

pub fn tsdb_losses(data: &[u8]) {
    let _ = cairn_tsdb::formats::decode_losses(data);
}
