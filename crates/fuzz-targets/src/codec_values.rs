//! Decoding arbitrary bytes must not panic, and whatever decodes must survive a
//! re-encode and decode bit-exactly.

use cairn_codec::{decode_values, encode_values};

pub fn codec_values(data: &[u8]) {
    let mut decoded = Vec::new();
    let Ok(rest) = decode_values(data, &mut decoded) else {
        assert!(decoded.is_empty(), "a failed decode appended values");
        return;
    };
    assert!(rest.len() < data.len(), "a block takes at least its tag byte");
    let mut encoded = Vec::new();
    encode_values(&mut encoded, &decoded);
    let mut again = Vec::new();
    let rest = decode_values(&encoded, &mut again).expect("re-encoded block decodes");
    assert!(rest.is_empty());
    let bits = |vs: &[f64]| vs.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&again), bits(&decoded));
}
