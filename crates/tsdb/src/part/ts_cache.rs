//! Decoded shared timestamp columns, cached per thread.
//!
//! All series of a scrape target share one timestamp column in a part (see
//! [`super::SHARED_TIMESTAMPS`]); a query or merge reading many of them would
//! decode the same bytes once per series (it was most of the decoding time of
//! fleet-wide queries). The cache is keyed by the encoded bytes themselves,
//! compared in full on every hit, so it can never hand out another part's
//! column however parts come and go.

use std::cell::RefCell;
use std::collections::HashMap;

/// Decoded timestamps a thread keeps (8 bytes each): 4 MiB, about 90 columns
/// of a day at 15 s. Past it the cache starts over.
const MAX_CACHED_TIMESTAMPS: usize = 512 * 1024;

#[derive(Default)]
struct Cache {
    /// xxh3 of the encoded bytes → (encoded bytes, decoded timestamps).
    columns: HashMap<u64, (Vec<u8>, Vec<i64>)>,
    held: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Appends the timestamps encoded in `src` to `out`, like
/// [`cairn_codec::decode_timestamps`], and returns how many bytes of `src`
/// follow the encoding (a column with trailing bytes is not cached).
pub fn decode_shared(src: &[u8], out: &mut Vec<i64>) -> Result<usize, cairn_codec::Error> {
    let key = xxhash_rust::xxh3::xxh3_64(src);
    let hit = CACHE.with(|c| {
        let c = c.borrow();
        match c.columns.get(&key) {
            Some((bytes, ts)) if bytes.as_slice() == src => {
                out.extend_from_slice(ts);
                true
            }
            _ => false,
        }
    });
    if hit {
        return Ok(0);
    }
    let t0 = out.len();
    let rest = cairn_codec::decode_timestamps(src, out)?.len();
    let decoded = out.get(t0..).unwrap_or_default();
    if rest == 0 && decoded.len() <= MAX_CACHED_TIMESTAMPS {
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.held + decoded.len() > MAX_CACHED_TIMESTAMPS {
                c.columns.clear();
                c.held = 0;
            }
            c.held += decoded.len();
            if let Some((_, old)) = c.columns.insert(key, (src.to_vec(), decoded.to_vec())) {
                c.held -= old.len();
            }
        });
    }
    Ok(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(ts: &[i64]) -> Vec<u8> {
        let mut b = Vec::new();
        cairn_codec::encode_timestamps(&mut b, ts);
        b
    }

    #[test]
    fn ts_cache_returns_exactly_what_decoding_returns() {
        let a: Vec<i64> = (0..500).map(|i| 1_000 + i * 15_000 + (i % 7)).collect();
        let b: Vec<i64> = (0..500).map(|i| 2_000 + i * 15_000 + (i % 5)).collect();
        let (ea, eb) = (encode(&a), encode(&b));
        for _ in 0..3 {
            for (e, want) in [(&ea, &a), (&eb, &b)] {
                let mut out = vec![-1];
                assert_eq!(decode_shared(e, &mut out).unwrap(), 0);
                assert_eq!(out[0], -1);
                assert_eq!(&out[1..], want.as_slice());
            }
        }
        // Trailing bytes are reported and never cached.
        let mut with_tail = ea.clone();
        with_tail.push(0xee);
        let mut out = Vec::new();
        assert_eq!(decode_shared(&with_tail, &mut out).unwrap(), 1);
        assert_eq!(out, a);
        assert!(decode_shared(&[0xff, 0xff], &mut Vec::new()).is_err());
    }
}
