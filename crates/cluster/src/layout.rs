//! What lies where in the bucket the nodes of a cluster share, below its
//! base URL (docs/format/bucket.md, "A cluster's bucket"):
//!
//! ```text
//! nodes/<node>/...                        each ingester's engine: its replicas of the days it uploaded
//! compacted/...                           the compactor's engine: each day once, merged from the replicas
//! compactor/<node>/<tenant>/<day>.json    a note to an ingester: the parts of that day the compactor holds
//! ```

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_storage::{StorageError, TenantId};
use cairn_tsdb::Day;
use serde::{Deserialize, Serialize};

/// Below the base URL: each ingester's prefix.
const NODES: &str = "nodes";
/// Below the base URL: the compactor's output.
const COMPACTED: &str = "compacted";
/// Below the base URL: the compactor's notes to the ingesters.
const NOTES: &str = "compactor";

/// The name of a node's directory: its id, with the characters an object
/// key would escape replaced by `_`.
pub fn node_dir(node_id: &str) -> String {
    node_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where a node of a cluster keeps its part of a shared bucket.
pub fn node_bucket_url(url: &str, node_id: &str) -> String {
    format!("{}/{NODES}/{}", url.trim_end_matches('/'), node_dir(node_id))
}

/// Where the compactor keeps each day once.
pub fn compacted_bucket_url(url: &str) -> String {
    format!("{}/{COMPACTED}", url.trim_end_matches('/'))
}

/// The URL of `base`'s subdirectory `url`, with `base`'s credentials.
pub fn with_url(base: &cairn_bucket::BucketConfig, url: String) -> cairn_bucket::BucketConfig {
    cairn_bucket::BucketConfig { url, ..base.clone() }
}

/// The key, below the base URL, of `key` in `node`'s prefix.
pub(crate) fn node_key(node: &str, key: &str) -> String {
    format!("{NODES}/{node}/{key}")
}

/// The key, below the base URL, of `key` in the compactor's prefix.
pub(crate) fn compacted_key(key: &str) -> String {
    format!("{COMPACTED}/{key}")
}

/// The nodes that have a prefix in the bucket.
pub(crate) fn nodes_in(bucket: &Bucket) -> Result<Vec<String>, StorageError> {
    bucket.list_dirs(NODES)
}

/// What the compactor tells an ingester: the parts of one of its days (of
/// one tenant) whose samples the compacted copy holds, as the ingester's
/// bucket names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Note {
    /// When the compacted copy was in the bucket (ms since the epoch).
    pub written_ms: i64,
    pub parts: Vec<NotedPart>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotedPart {
    pub key: String,
    pub size: u64,
    pub version: String,
}

impl Note {
    pub fn new(written_ms: i64, parts: &[ObjectInfo]) -> Self {
        let parts = parts
            .iter()
            .map(|o| NotedPart {
                key: o.key.clone(),
                size: o.size,
                version: o.version.clone(),
            })
            .collect();
        Self { written_ms, parts }
    }

    /// Whether the note names this very object (a part rewritten since is
    /// another).
    pub fn names(&self, object: &ObjectInfo) -> bool {
        self.parts
            .iter()
            .any(|p| p.key == object.key && p.version == object.version)
    }

    pub fn objects(&self) -> Vec<ObjectInfo> {
        self.parts
            .iter()
            .map(|p| ObjectInfo {
                key: p.key.clone(),
                size: p.size,
                version: p.version.clone(),
            })
            .collect()
    }
}

/// The key of the note to `node` about `tenant`'s `day`.
pub(crate) fn note_key(node: &str, tenant: &TenantId, day: Day) -> String {
    format!("{NOTES}/{node}/{tenant}/{day}.json", tenant = tenant.as_str())
}

/// Every note to `node`: `(key, tenant, day)`; keys of another shape are
/// left out.
pub(crate) fn notes_to(bucket: &Bucket, node: &str) -> Result<Vec<(String, TenantId, Day)>, StorageError> {
    let dir = format!("{NOTES}/{node}");
    let mut notes = Vec::new();
    for object in bucket.list(&dir)? {
        let rest = object
            .key
            .strip_prefix(&dir)
            .unwrap_or_default()
            .trim_start_matches('/');
        let mut parts = rest.split('/');
        let (Some(tenant), Some(file), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let day = file.strip_suffix(".json").and_then(Day::parse);
        if let (Ok(tenant), Some(day)) = (TenantId::new(tenant), day) {
            notes.push((object.key, tenant, day));
        }
    }
    Ok(notes)
}

pub(crate) fn read_note(bucket: &Bucket, key: &str) -> Result<Note, StorageError> {
    let bytes = bucket.get(key)?;
    serde_json::from_slice(&bytes).map_err(|e| StorageError::Corrupt {
        path: bucket.url_of(key),
        reason: format!("not a compactor's note: {e}"),
    })
}

pub(crate) fn write_note(bucket: &Bucket, key: &str, note: &Note) -> Result<(), StorageError> {
    let bytes = serde_json::to_vec(note).map_err(|e| StorageError::InvalidArgument(e.to_string()))?;
    bucket.put(key, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_node_has_a_prefix_of_its_own() {
        assert_eq!(
            node_bucket_url("s3://b/cairn/", "10.0.0.1:9090"),
            "s3://b/cairn/nodes/10.0.0.1_9090"
        );
        assert_eq!(node_bucket_url("file:///x", "a"), "file:///x/nodes/a");
        assert_eq!(compacted_bucket_url("s3://b/cairn/"), "s3://b/cairn/compacted");
    }

    #[test]
    fn notes_are_found_by_node_and_name_exact_versions() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("bucket").display());
        let bucket = Bucket::open(&cairn_bucket::BucketConfig::new(url), &dir.path().join("cache"), 0).unwrap();
        let day = Day::parse("2026-11-20").unwrap();
        let tenant = TenantId::new("team-a").unwrap();
        let part = ObjectInfo {
            key: "partitions/2026-11-20/part-1-2.cpart".into(),
            size: 10,
            version: "v1".into(),
        };
        let key = note_key("node-1", &tenant, day);
        write_note(&bucket, &key, &Note::new(5, std::slice::from_ref(&part))).unwrap();
        bucket.put("compactor/node-1/stray", Vec::new()).unwrap();
        assert_eq!(notes_to(&bucket, "node-1").unwrap(), vec![(key.clone(), tenant, day)]);
        assert!(notes_to(&bucket, "node-2").unwrap().is_empty());
        let note = read_note(&bucket, &key).unwrap();
        assert!(note.names(&part));
        assert!(!note.names(&ObjectInfo {
            version: "v2".into(),
            ..part.clone()
        }));
        assert_eq!(note.objects(), vec![part]);
    }
}
