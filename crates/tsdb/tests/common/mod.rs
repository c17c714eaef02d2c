//! Helpers the TSDB's integration tests share.

#![allow(dead_code)]

use cairn_storage::Queryable;
use cairn_tsdb::{Config, Tsdb};

pub const HOUR: i64 = 3_600_000;
pub const DAY: i64 = 24 * HOUR;

/// The wall clock in ms: the TSDB's retention and day partitions are
/// relative to it.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Noon (UTC) of the day before today: hours from either edge of its day,
/// so a test's writes of a few hours stay in one day partition at any hour
/// the test runs.
pub fn yesterday_noon() -> i64 {
    now() / DAY * DAY - 12 * HOUR
}

/// A configuration without background work, so a test decides when data
/// is flushed and merged.
pub fn config(dir: &std::path::Path) -> Config {
    let mut c = Config::new(dir);
    c.background = false;
    c
}

/// `db`'s count of changes to settled data, without the blocks other tests
/// of this binary find damaged meanwhile (that count is the same before and
/// after reading this one).
pub fn settled_changes(db: &Tsdb) -> u64 {
    loop {
        let damaged = cairn_tsdb::blocks_found_damaged();
        let n = db.settled_changes().expect("a TSDB counts settled changes");
        if cairn_tsdb::blocks_found_damaged() == damaged {
            return n.wrapping_sub(damaged);
        }
    }
}
