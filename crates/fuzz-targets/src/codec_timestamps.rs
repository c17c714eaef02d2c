//! Decoding arbitrary bytes must not panic, and whatever decodes must survive a
//! re-encode and decode unchanged.

use cairn_codec::{decode_timestamps, encode_timestamps};

pub fn codec_timestamps(data: &[u8]) {
    let mut decoded = Vec::new();
    let Ok(rest) = decode_timestamps(data, &mut decoded) else {
        assert!(decoded.is_empty(), "a failed decode appended timestamps");
        return;
    };
    assert!(rest.len() < data.len(), "a block takes at least its tag byte");
    let mut encoded = Vec::new();
    encode_timestamps(&mut encoded, &decoded);
    let mut again = Vec::new();
    let rest = decode_timestamps(&encoded, &mut again).expect("re-encoded block decodes");
    assert!(rest.is_empty());
    assert_eq!(again, decoded);
}
