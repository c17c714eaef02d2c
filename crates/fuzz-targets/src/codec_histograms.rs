//! Decoding arbitrary bytes must not panic, and whatever decodes must survive a
//! re-encode and decode bit-exactly.

use cairn_codec::{HistogramValue, decode_histograms, encode_histograms};

/// Every field as bits, so NaNs and signed zeros compare exactly.
fn bits(h: &HistogramValue) -> Vec<u64> {
    let mut out = vec![
        h.schema as u64,
        u64::from(h.reset_hint),
        h.count.to_bits(),
        h.sum.to_bits(),
        h.zero_threshold.to_bits(),
        h.zero_count.to_bits(),
    ];
    for side in [&h.positive, &h.negative] {
        out.push(side.len() as u64);
        out.extend(side.iter().flat_map(|b| [b.0 as u64, b.1.to_bits()]));
    }
    out.extend(h.custom_bounds.iter().flat_map(|b| b.iter().map(|v| v.to_bits())));
    out
}

pub fn codec_histograms(data: &[u8]) {
    let (mut ts, mut hs) = (Vec::new(), Vec::new());
    let Ok(rest) = decode_histograms(data, &mut ts, &mut hs) else {
        assert!(ts.is_empty() && hs.is_empty(), "a failed decode appended samples");
        return;
    };
    assert!(rest.len() < data.len(), "a block takes at least its tag byte");
    let mut encoded = Vec::new();
    encode_histograms(&mut encoded, &ts, &hs);
    let (mut ts2, mut hs2) = (Vec::new(), Vec::new());
    let rest = decode_histograms(&encoded, &mut ts2, &mut hs2).expect("re-encoded block decodes");
    assert!(rest.is_empty());
    assert_eq!(ts2, ts);
    let all = |hs: &[HistogramValue]| hs.iter().map(bits).collect::<Vec<_>>();
    assert_eq!(all(&hs2), all(&hs));
}
