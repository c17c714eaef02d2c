//! Decoded shared timestamp columns, cached per thread.
//!
//! All series of a scrape target share one timestamp column in a part (see
//! [`super::SHARED_TIMESTAMPS`]); a query or merge reading many of them would
//! read, check and decode the same bytes once per series (it was most of the
//! decoding time of fleet-wide queries). The cache is keyed by the part's
//! process-unique id and the column's offset: parts are immutable and their
//! ids never reused, so a key names the same timestamps for the life of the
//! process, and a hit needs neither a read nor a checksum. (A reference's
//! own bytes are covered by its block's checksum, checked before.)
//!
//! A fleet-wide select looks a column up once per series and part, among
//! tens of thousands of columns: entries are kept small (16-byte keys, the
//! timestamps of all columns in one buffer) so the table stays in cache.

use std::cell::RefCell;
use std::collections::HashMap;

/// Decoded timestamps a thread keeps (8 bytes each): 4 MiB, about 1,000
/// columns of a 2 h window at 15 s. Past it the cache starts over.
const MAX_CACHED_TIMESTAMPS: usize = 512 * 1024;

/// (part id, offset of the column's bytes in the part).
pub type ColumnKey = (u64, u64);

#[derive(Default)]
struct Cache {
    /// Where each column's timestamps lie in `timestamps`. Keyed by a fast
    /// hash: a query looks a column up once per series it reads.
    columns: HashMap<ColumnKey, (u32, u32), foldhash::fast::RandomState>,
    timestamps: Vec<i64>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Appends the cached column `key` to `out`; false if it is not cached.
pub fn get(key: ColumnKey, out: &mut Vec<i64>) -> bool {
    CACHE.with(|c| {
        let c = c.borrow();
        match c.columns.get(&key) {
            Some(&(start, len)) => {
                out.extend_from_slice(&c.timestamps[start as usize..][..len as usize]);
                true
            }
            None => false,
        }
    })
}

/// Remembers the decoded column `key`.
pub fn put(key: ColumnKey, ts: &[i64]) {
    if ts.len() > MAX_CACHED_TIMESTAMPS {
        return;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.timestamps.len() + ts.len() > MAX_CACHED_TIMESTAMPS {
            c.columns.clear();
            c.timestamps.clear();
        }
        let start = c.timestamps.len() as u32;
        c.timestamps.extend_from_slice(ts);
        c.columns.insert(key, (start, ts.len() as u32));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_cache_returns_what_was_put_under_its_key_only() {
        let a: Vec<i64> = (0..500).map(|i| 1_000 + i * 15_000 + (i % 7)).collect();
        let b: Vec<i64> = (0..500).map(|i| 2_000 + i * 15_000 + (i % 5)).collect();
        put((1, 8), &a);
        put((2, 8), &b);
        for (key, want) in [((1, 8), &a), ((2, 8), &b)] {
            let mut out = vec![-1];
            assert!(get(key, &mut out));
            assert_eq!(out[0], -1);
            assert_eq!(&out[1..], want.as_slice());
        }
        let mut out = Vec::new();
        assert!(!get((1, 9), &mut out));
        assert!(!get((3, 8), &mut out), "another part is another column");
        assert!(out.is_empty());
        // Overfilling starts over instead of growing.
        let big = vec![0; MAX_CACHED_TIMESTAMPS - 100];
        put((3, 8), &big);
        assert!(!get((1, 8), &mut Vec::new()));
        assert!(get((3, 8), &mut Vec::new()));
    }
}
