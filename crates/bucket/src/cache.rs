//! A size-bounded disk cache of the byte ranges read from the bucket, in
//! aligned chunks: a query over old data reads a part's index and the blocks
//! of the series it selects, and the next query over the same data reads
//! them from local disk. Least recently used chunks go first.
//!
//! A chunk is one file, `<object hash>-<chunk number>`, holding the bytes and
//! their crc32c: one cut short by a crash, or damaged, reads as a miss. The
//! object hash covers the object's version, so an object written again
//! never reads as its old bytes.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use cairn_storage::StorageError;
use parking_lot::Mutex;

/// Bytes per chunk: the smallest read from the bucket, so a query that
/// needs one block of an old part downloads this much of it.
pub const CHUNK_BYTES: u64 = 64 << 10;

/// Names one chunk: the hash of (object key, version) and the chunk's number.
pub type ChunkKey = (u64, u64);

pub fn object_hash(key: &str, version: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(format!("{key}\0{version}").as_bytes())
}

/// The bytes of a chunk file (`bytes | crc32c: u32 LE`), if its checksum holds.
pub fn intact_chunk(mut stored: Vec<u8>) -> Option<Vec<u8>> {
    let at = stored.len().checked_sub(4)?;
    let crc = u32::from_le_bytes(*stored[at..].first_chunk::<4>()?);
    stored.truncate(at);
    (crc32c::crc32c(&stored) == crc).then_some(stored)
}

/// Whether `name` is a chunk file's.
pub fn is_chunk_name(name: &str) -> bool {
    parse_name(name).is_some()
}

pub struct ChunkCache {
    dir: PathBuf,
    max_bytes: u64,
    state: Mutex<State>,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

#[derive(Default)]
struct State {
    /// Each chunk's size on disk and its last use.
    entries: HashMap<ChunkKey, (u64, u64)>,
    /// Last use → chunk, oldest first.
    by_use: BTreeMap<u64, ChunkKey>,
    clock: u64,
    bytes: u64,
}

impl State {
    fn touch(&mut self, key: ChunkKey) -> bool {
        let Some((_, used)) = self.entries.get_mut(&key) else {
            return false;
        };
        self.by_use.remove(used);
        self.clock += 1;
        *used = self.clock;
        self.by_use.insert(self.clock, key);
        true
    }

    fn insert(&mut self, key: ChunkKey, len: u64) {
        self.remove(key);
        self.clock += 1;
        self.entries.insert(key, (len, self.clock));
        self.by_use.insert(self.clock, key);
        self.bytes += len;
    }

    fn remove(&mut self, key: ChunkKey) -> bool {
        let Some((len, used)) = self.entries.remove(&key) else {
            return false;
        };
        self.by_use.remove(&used);
        self.bytes -= len;
        true
    }
}

fn file_name(key: ChunkKey) -> String {
    format!("{:016x}-{:x}", key.0, key.1)
}

fn parse_name(name: &str) -> Option<ChunkKey> {
    let (object, chunk) = name.split_once('-')?;
    Some((
        u64::from_str_radix(object, 16).ok()?,
        u64::from_str_radix(chunk, 16).ok()?,
    ))
}

impl ChunkCache {
    /// A cache that keeps nothing and touches no file.
    pub fn disabled() -> Self {
        Self {
            dir: std::path::PathBuf::new(),
            max_bytes: 0,
            state: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Opens the cache in `dir`, keeping what an earlier run left there (the
    /// most recently written first) up to `max_bytes`; 0 turns it off.
    pub fn open(dir: &Path, max_bytes: u64) -> Result<Self, StorageError> {
        fs::create_dir_all(dir).map_err(StorageError::io("create", dir))?;
        let mut found = Vec::new();
        for entry in fs::read_dir(dir).map_err(StorageError::io("list", dir))? {
            let entry = entry.map_err(StorageError::io("list", dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = entry.metadata().map_err(StorageError::io("stat", entry.path()))?;
            match parse_name(&name) {
                Some(key) => found.push((meta.modified().ok(), key, meta.len())),
                // Leftovers of an interrupted write.
                None => fs::remove_file(entry.path()).map_err(StorageError::io("remove", entry.path()))?,
            }
        }
        found.sort();
        let cache = Self {
            dir: dir.to_path_buf(),
            max_bytes,
            state: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        };
        {
            let mut state = cache.state.lock();
            for (_, key, len) in found {
                state.insert(key, len);
            }
        }
        cache.evict();
        Ok(cache)
    }

    /// Bytes of chunks held on disk.
    pub fn bytes(&self) -> u64 {
        self.state.lock().bytes
    }

    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// The chunk's bytes, if held and intact.
    pub fn get(&self, key: ChunkKey) -> Option<Vec<u8>> {
        if !self.state.lock().touch(key) {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let path = self.dir.join(file_name(key));
        let intact = fs::read(&path).ok().and_then(intact_chunk);
        match intact {
            Some(bytes) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(bytes)
            }
            None => {
                self.misses.fetch_add(1, Ordering::Relaxed);
                if self.state.lock().remove(key) {
                    let _ = fs::remove_file(&path);
                }
                None
            }
        }
    }

    /// Keeps `bytes` as the chunk, evicting the least recently used beyond
    /// the bound. A cache that cannot write only logs: reads still work.
    pub fn put(&self, key: ChunkKey, bytes: &[u8]) {
        if self.max_bytes == 0 {
            return;
        }
        let path = self.dir.join(file_name(key));
        let tmp = path.with_extension("tmp");
        let mut stored = Vec::with_capacity(bytes.len() + 4);
        stored.extend_from_slice(bytes);
        stored.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
        // Not fsynced: a chunk lost or cut short by a crash reads as a miss.
        if let Err(e) = fs::write(&tmp, &stored).and_then(|()| fs::rename(&tmp, &path)) {
            tracing::warn!(path = %path.display(), error = %e, "could not write to the bucket cache");
            let _ = fs::remove_file(&tmp);
            return;
        }
        self.state.lock().insert(key, stored.len() as u64);
        self.evict();
    }

    fn evict(&self) {
        loop {
            let key = {
                let mut state = self.state.lock();
                if state.bytes <= self.max_bytes {
                    return;
                }
                let Some((_, &key)) = state.by_use.iter().next() else {
                    return;
                };
                state.remove(key);
                key
            };
            let _ = fs::remove_file(self.dir.join(file_name(key)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_round_trip_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ChunkCache::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(cache.get((1, 0)), None);
        cache.put((1, 0), b"hello");
        assert_eq!(cache.get((1, 0)).as_deref(), Some(&b"hello"[..]));
        drop(cache);
        let cache = ChunkCache::open(dir.path(), 1 << 20).unwrap();
        assert_eq!(cache.get((1, 0)).as_deref(), Some(&b"hello"[..]));
        assert_eq!(cache.bytes(), 9);
    }

    #[test]
    fn the_least_recently_used_chunks_go_first() {
        let dir = tempfile::tempdir().unwrap();
        // Room for two chunks of 100 bytes (+ 4 of crc each).
        let cache = ChunkCache::open(dir.path(), 250).unwrap();
        cache.put((1, 0), &[1; 100]);
        cache.put((1, 1), &[2; 100]);
        assert!(cache.get((1, 0)).is_some());
        cache.put((1, 2), &[3; 100]);
        assert!(cache.get((1, 1)).is_none(), "the least recently used is evicted");
        assert!(cache.get((1, 0)).is_some());
        assert!(cache.get((1, 2)).is_some());
        assert!(cache.bytes() <= 250);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_damaged_chunk_reads_as_a_miss_and_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ChunkCache::open(dir.path(), 1 << 20).unwrap();
        cache.put((7, 3), b"some bytes");
        let path = dir.path().join(file_name((7, 3)));
        let mut bytes = fs::read(&path).unwrap();
        bytes[0] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert_eq!(cache.get((7, 3)), None);
        assert!(!path.exists());
        assert_eq!(cache.bytes(), 0);
    }

    #[test]
    fn a_zero_bound_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ChunkCache::open(dir.path(), 0).unwrap();
        cache.put((1, 0), b"x");
        assert_eq!(cache.get((1, 0)), None);
    }

    #[test]
    fn names_round_trip() {
        let key = (0xdead_beef_0123_4567, 0x1f);
        assert_eq!(parse_name(&file_name(key)), Some(key));
        assert_eq!(parse_name("x.tmp"), None);
    }
}
