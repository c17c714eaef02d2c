//! A WAL record payload from arbitrary bytes must decode or fail cleanly,
//! and so must the series of a forward batch (agent mode's records).

pub fn tsdb_wal_record(data: &[u8]) {
    let _ = cairn_tsdb::formats::decode_wal_record(data, &mut Vec::new());
    if let Ok(Some(batch)) = cairn_tsdb::Tsdb::forward_batch(data) {
        let mut fields = Vec::new();
        if cairn_protocols::remote_write::unsnappy_block(batch.block, 1 << 24, &mut fields).is_ok() {
            for field in cairn_protocols::remote_write::series_fields(&fields) {
                if field.is_err() {
                    break;
                }
            }
        }
    }
}
