//! A part file from arbitrary bytes: opening and reading every block must
//! return errors, never panic or over-allocate.
#![no_main]

use cairn_tsdb::formats::Part;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(part) = Part::from_bytes(data.to_vec()) {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for i in 0..part.block_count() {
            if let Some(b) = part.block(i) {
                ts.clear();
                vs.clear();
                let _ = part.read_block(&b, &mut ts, &mut vs);
            }
        }
    }
});
