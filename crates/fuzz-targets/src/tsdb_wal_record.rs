//! A WAL record payload from arbitrary bytes must decode or fail cleanly.

pub fn tsdb_wal_record(data: &[u8]) {
    let _ = cairn_tsdb::formats::decode_wal_record(data, &mut Vec::new());
}
