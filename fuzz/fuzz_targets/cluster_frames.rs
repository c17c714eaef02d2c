//! Series frames from a peer (arbitrary bytes) must decode or fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(frames) = cairn_cluster::wire::frames(data) {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for frame in frames.flatten() {
            frame.read_into(&mut ts, &mut vs);
            assert_eq!(ts.len(), vs.len());
        }
    }
});
