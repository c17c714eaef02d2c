//! The object-storage tier: a synchronous client of one prefix of an
//! S3-compatible bucket (or a directory, `file://`), built on object_store,
//! and a size-bounded disk cache in front of its reads. The engine uploads
//! finished parts through it and reads old data back by byte range: a part's
//! index, then the blocks of the series a query selects, never whole parts.

mod cache;
mod client;

pub use cache::{CHUNK_BYTES, ChunkCache, intact_chunk, is_chunk_name};
pub use client::{Bucket, BucketConfig, Counters, ObjectInfo, Op};

use cairn_storage::StorageError;

impl Bucket {
    /// Fills `buf` with the object's bytes from `offset`, from the cache where
    /// it holds them; the chunks it lacks are fetched with one ranged GET per
    /// run of adjacent missing chunks, and kept.
    pub fn read_at(&self, object: &ObjectInfo, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let end = offset + buf.len() as u64;
        if end > object.size {
            return Err(StorageError::Corrupt {
                path: self.url_of(&object.key),
                reason: format!("a read up to byte {end} of an object of {} bytes", object.size),
            });
        }
        if buf.is_empty() {
            return Ok(());
        }
        let hash = cache::object_hash(&object.key, &object.version);
        let (first, last) = (offset / CHUNK_BYTES, (end - 1) / CHUNK_BYTES);
        let mut chunks: Vec<Option<Vec<u8>>> = (first..=last).map(|c| self.cache.get((hash, c))).collect();
        let mut at = 0;
        while at < chunks.len() {
            if chunks[at].is_some() {
                at += 1;
                continue;
            }
            let run_end = (at..chunks.len())
                .find(|&i| chunks[i].is_some())
                .unwrap_or(chunks.len());
            let start = (first + at as u64) * CHUNK_BYTES;
            let stop = ((first + run_end as u64) * CHUNK_BYTES).min(object.size);
            let bytes = self.get_range(&object.key, start..stop)?;
            for (i, piece) in bytes.chunks(CHUNK_BYTES as usize).enumerate() {
                self.cache.put((hash, first + (at + i) as u64), piece);
                chunks[at + i] = Some(piece.to_vec());
            }
            at = run_end;
        }
        let mut filled = 0;
        for (i, chunk) in chunks.iter().enumerate() {
            let chunk = chunk.as_deref().unwrap_or_default();
            let chunk_start = (first + i as u64) * CHUNK_BYTES;
            let from = (offset.max(chunk_start) - chunk_start) as usize;
            let to = (end.min(chunk_start + CHUNK_BYTES) - chunk_start) as usize;
            let piece = chunk.get(from..to).ok_or_else(|| StorageError::Corrupt {
                path: self.url_of(&object.key),
                reason: format!("chunk {} of the object is shorter than its size says", first + i as u64),
            })?;
            buf[filled..filled + piece.len()].copy_from_slice(piece);
            filled += piece.len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local_bucket(dir: &std::path::Path, cache_bytes: u64) -> Bucket {
        let url = format!("file://{}", dir.join("bucket").display());
        Bucket::open(&BucketConfig::new(url), &dir.join("cache"), cache_bytes).unwrap()
    }

    #[test]
    fn objects_round_trip_and_list_under_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = local_bucket(dir.path(), 1 << 20);
        bucket.put("d/a", b"alpha".to_vec()).unwrap();
        bucket.put("d/b", b"beta".to_vec()).unwrap();
        bucket.put("e/c", b"gamma".to_vec()).unwrap();
        let listed: Vec<(String, u64)> = bucket.list("d").unwrap().into_iter().map(|o| (o.key, o.size)).collect();
        assert_eq!(listed, [("d/a".to_string(), 5), ("d/b".to_string(), 4)]);
        assert_eq!(&bucket.get("d/b").unwrap()[..], b"beta");
        bucket.delete("d/a").unwrap();
        bucket.delete("d/a").unwrap();
        assert_eq!(bucket.list("d").unwrap().len(), 1);
        let missing = bucket.get("d/a").unwrap_err();
        assert!(missing.to_string().contains("d/a"), "{missing}");
    }

    #[test]
    fn reads_fetch_only_missing_chunks_and_the_cache_serves_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = local_bucket(dir.path(), 16 << 20);
        let data: Vec<u8> = (0..5 * CHUNK_BYTES + 123).map(|i| (i * 7 % 251) as u8).collect();
        bucket.put("obj", data.clone()).unwrap();
        let object = bucket.head("obj").unwrap();
        let gets = || bucket.counters.requests(Op::Get);
        let before = gets();
        let mut buf = vec![0; 100];
        bucket.read_at(&object, CHUNK_BYTES + 10, &mut buf).unwrap();
        assert_eq!(buf, data[(CHUNK_BYTES + 10) as usize..][..100]);
        assert_eq!(gets() - before, 1);
        // Chunks 0..=3: chunk 1 is held, so 0 and 2..=3 are two ranged GETs.
        let mut buf = vec![0; (4 * CHUNK_BYTES - 5) as usize];
        bucket.read_at(&object, 5, &mut buf).unwrap();
        assert_eq!(buf, data[5..(4 * CHUNK_BYTES) as usize]);
        assert_eq!(gets() - before, 3);
        // The short last chunk, then everything from the cache.
        let mut buf = vec![0; (2 * CHUNK_BYTES + 123) as usize];
        bucket.read_at(&object, 3 * CHUNK_BYTES, &mut buf).unwrap();
        assert_eq!(buf, data[(3 * CHUNK_BYTES) as usize..]);
        assert_eq!(gets() - before, 4);
        let mut all = vec![0; data.len()];
        bucket.read_at(&object, 0, &mut all).unwrap();
        assert_eq!(all, data);
        assert_eq!(gets() - before, 4);
        assert!(bucket.read_at(&object, data.len() as u64 - 1, &mut [0; 2]).is_err());
    }

    #[test]
    fn an_object_written_again_is_not_read_from_the_cache_of_its_old_version() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = local_bucket(dir.path(), 1 << 20);
        bucket.put("obj", vec![1; 1000]).unwrap();
        let old = bucket.head("obj").unwrap();
        let mut buf = vec![0; 10];
        bucket.read_at(&old, 0, &mut buf).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(10));
        bucket.put("obj", vec![2; 1000]).unwrap();
        let new = bucket.head("obj").unwrap();
        assert_ne!(old.version, new.version);
        bucket.read_at(&new, 0, &mut buf).unwrap();
        assert_eq!(buf, [2; 10]);
    }
}
