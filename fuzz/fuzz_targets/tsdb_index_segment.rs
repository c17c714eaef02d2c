//! An index segment from arbitrary bytes must decode or fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = cairn_tsdb::formats::decode_index_segment(data) {
        for entry in entries.iter() {
            let _ = entry;
        }
    }
});
