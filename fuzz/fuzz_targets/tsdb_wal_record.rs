//! A WAL record payload from arbitrary bytes must decode or fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = cairn_tsdb::formats::decode_wal_record(data, &mut Vec::new());
});
