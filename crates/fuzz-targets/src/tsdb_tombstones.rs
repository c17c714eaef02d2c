//! A tombstone file from arbitrary bytes must decode or fail cleanly.

pub fn tsdb_tombstones(data: &[u8]) {
    let _ = cairn_tsdb::formats::decode_tombstones(data);
}
