//! Series frames from a peer (arbitrary bytes) must decode or fail cleanly.

pub fn cluster_frames(data: &[u8]) {
    if let Ok(frames) = cairn_cluster::wire::frames(data) {
        let (mut ts, mut vs) = (Vec::new(), Vec::new());
        for frame in frames.iter().flatten() {
            if frame.read_into(&mut ts, &mut vs).is_ok() {
                assert_eq!(ts.len(), vs.len());
            }
        }
    }
}
