//! Decoded shared timestamp columns, cached per thread.
//!
//! All series of a scrape target share one timestamp column in a part (see
//! [`super::SHARED_TIMESTAMPS`]); a query or merge reading many of them would
//! read, check and decode the same bytes once per series (it was most of the
//! decoding time of fleet-wide queries). The cache is keyed by the part's
//! process-unique id and the reference's offset, length and crc: parts are
//! immutable and their ids never reused, so a key names the same checked
//! timestamps for the life of the process, and a hit needs neither a read
//! nor a checksum.

use std::cell::RefCell;
use std::collections::HashMap;

/// Decoded timestamps a thread keeps (8 bytes each, and each column counts
/// one more): 4 MiB, about 1,000 columns of a 2 h window at 15 s. Past it the
/// cache starts over.
const MAX_CACHED_TIMESTAMPS: usize = 512 * 1024;

/// (part id, and the reference: offset, length and crc of the column's bytes).
pub type ColumnKey = (u64, u64, u32, u32);

#[derive(Default)]
struct Cache {
    /// Keyed by a fast hash: a query looks a column up once per series it reads.
    columns: HashMap<ColumnKey, Vec<i64>, foldhash::fast::RandomState>,
    held: usize,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Appends the cached column `key` to `out`; false if it is not cached.
pub fn get(key: ColumnKey, out: &mut Vec<i64>) -> bool {
    CACHE.with(|c| match c.borrow().columns.get(&key) {
        Some(ts) => {
            out.extend_from_slice(ts);
            true
        }
        None => false,
    })
}

/// Remembers the decoded column `key`.
pub fn put(key: ColumnKey, ts: &[i64]) {
    let cost = ts.len() + 1;
    if cost > MAX_CACHED_TIMESTAMPS {
        return;
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.held + cost > MAX_CACHED_TIMESTAMPS {
            c.columns.clear();
            c.held = 0;
        }
        c.held += cost;
        if let Some(old) = c.columns.insert(key, ts.to_vec()) {
            c.held -= old.len() + 1;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ts_cache_returns_what_was_put_under_its_key_only() {
        let a: Vec<i64> = (0..500).map(|i| 1_000 + i * 15_000 + (i % 7)).collect();
        let b: Vec<i64> = (0..500).map(|i| 2_000 + i * 15_000 + (i % 5)).collect();
        put((1, 8, 0, 0), &a);
        put((2, 8, 0, 0), &b);
        for (key, want) in [((1, 8, 0, 0), &a), ((2, 8, 0, 0), &b)] {
            let mut out = vec![-1];
            assert!(get(key, &mut out));
            assert_eq!(out[0], -1);
            assert_eq!(&out[1..], want.as_slice());
        }
        let mut out = Vec::new();
        assert!(!get((1, 9, 0, 0), &mut out));
        assert!(!get((1, 8, 1, 0), &mut out), "another length is another column");
        assert!(out.is_empty());
        // Overfilling starts over instead of growing.
        let big = vec![0; MAX_CACHED_TIMESTAMPS - 100];
        put((3, 8, 0, 0), &big);
        assert!(!get((1, 8, 0, 0), &mut Vec::new()));
        assert!(get((3, 8, 0, 0), &mut Vec::new()));
    }
}
