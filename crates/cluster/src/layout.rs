//! What lies where in the bucket the nodes of a cluster share, below its
//! base URL (docs/format/bucket.md, "A cluster's bucket"):
//!
//! ```text
//! nodes/<node>/...                        each ingester's engine: its replicas of the days it uploaded
//! compactors/<node>/...                   each compactor's engine: the days it merged, each sample once
//! compactor/<node>/<tenant>/<day>.json    a note to a node: parts of that day whose samples a compactor holds
//! compacted/...                           the engine of the single compactor of earlier versions, still read
//! ```

use cairn_bucket::{Bucket, ObjectInfo};
use cairn_storage::{StorageError, TenantId};
use cairn_tsdb::Day;
use serde::{Deserialize, Serialize};

/// Below the base URL: each ingester's prefix.
const NODES: &str = "nodes";
/// Below the base URL: each compactor's output.
const COMPACTORS: &str = "compactors";
/// Below the base URL: the output of the one compactor of earlier versions.
const COMPACTED: &str = "compacted";
/// Below the base URL: the compactors' notes to the nodes.
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

/// Where a compactor keeps the days it merged.
pub fn compactor_bucket_url(url: &str, node_id: &str) -> String {
    format!("{}/{COMPACTORS}/{}", url.trim_end_matches('/'), node_dir(node_id))
}

/// Where the single compactor of earlier versions kept each day once.
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

/// The key, below the base URL, of `key` in `compactor`'s prefix.
pub(crate) fn compactor_key(compactor: &str, key: &str) -> String {
    format!("{COMPACTORS}/{compactor}/{key}")
}

/// The nodes that have a prefix in the bucket.
pub(crate) fn nodes_in(bucket: &Bucket) -> Result<Vec<String>, StorageError> {
    bucket.list_dirs(NODES)
}

/// The compactors that have a prefix in the bucket.
pub(crate) fn compactors_in(bucket: &Bucket) -> Result<Vec<String>, StorageError> {
    bucket.list_dirs(COMPACTORS)
}

/// Whether the bucket holds output of the single compactor of earlier versions.
pub(crate) fn has_compacted(bucket: &Bucket) -> Result<bool, StorageError> {
    Ok(bucket.list_dirs("")?.iter().any(|d| d == COMPACTED))
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

impl From<&ObjectInfo> for NotedPart {
    fn from(o: &ObjectInfo) -> Self {
        Self {
            key: o.key.clone(),
            size: o.size,
            version: o.version.clone(),
        }
    }
}

impl NotedPart {
    pub fn object(&self) -> ObjectInfo {
        ObjectInfo {
            key: self.key.clone(),
            size: self.size,
            version: self.version.clone(),
        }
    }

    /// Whether this is that very object (a part rewritten since is another).
    pub fn is(&self, object: &ObjectInfo) -> bool {
        self.key == object.key && self.version == object.version
    }
}

impl Note {
    /// Whether the note names this very object (a part rewritten since is
    /// another).
    pub fn names(&self, object: &ObjectInfo) -> bool {
        self.parts.iter().any(|p| p.is(object))
    }

    pub fn objects(&self) -> Vec<ObjectInfo> {
        self.parts.iter().map(NotedPart::object).collect()
    }
}

/// The key of the note to `node` about `tenant`'s `day`.
pub(crate) fn note_key(node: &str, tenant: &TenantId, day: Day) -> String {
    format!("{NOTES}/{node}/{tenant}/{day}.json", tenant = tenant.as_str())
}

/// Every note to `node`: `(key, tenant, day)`; keys of another shape are
/// left out.
pub(crate) fn notes_to(bucket: &Bucket, node: &str) -> Result<Vec<(String, TenantId, Day)>, StorageError> {
    tenant_days_below(bucket, &format!("{NOTES}/{node}"))
}

/// The `(key, tenant, day)` of every `<dir>/<tenant>/<day>.json` object.
fn tenant_days_below(bucket: &Bucket, dir: &str) -> Result<Vec<(String, TenantId, Day)>, StorageError> {
    let mut found = Vec::new();
    for object in bucket.list(dir)? {
        let rest = object.key.strip_prefix(dir).unwrap_or_default().trim_start_matches('/');
        let mut parts = rest.split('/');
        let (Some(tenant), Some(file), None) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let day = file.strip_suffix(".json").and_then(Day::parse);
        if let (Ok(tenant), Some(day)) = (TenantId::new(tenant), day) {
            found.push((object.key, tenant, day));
        }
    }
    Ok(found)
}

pub(crate) fn read_note(bucket: &Bucket, key: &str) -> Result<Note, StorageError> {
    let bytes = bucket.get(key)?;
    serde_json::from_slice(&bytes).map_err(|e| StorageError::Corrupt {
        path: bucket.url_of(key),
        reason: format!("not a compactor's note: {e}"),
    })
}

/// The note at `key`, `None` when there is none.
pub(crate) fn read_note_if_there(bucket: &Bucket, key: &str) -> Result<Option<Note>, StorageError> {
    // Listed first (its directory: a file bucket lists directories only),
    // since a GET of a missing object would count as a failed request.
    let dir = key.rsplit_once('/').map_or("", |(dir, _)| dir);
    if !bucket.list(dir)?.iter().any(|o| o.key == key) {
        return Ok(None);
    }
    read_note(bucket, key).map(Some)
}

pub(crate) fn write_note(bucket: &Bucket, key: &str, note: &Note) -> Result<(), StorageError> {
    let bytes = serde_json::to_vec(note).map_err(|e| StorageError::InvalidArgument(e.to_string()))?;
    bucket.put(key, bytes)
}

/// Adds `parts` to the note to `node` about `tenant`'s `day` (a note not
/// yet acted on keeps what it named), dated `written_ms` if it adds any.
pub(crate) fn add_to_note(
    bucket: &Bucket,
    node: &str,
    tenant: &TenantId,
    day: Day,
    parts: &[ObjectInfo],
    written_ms: i64,
) -> Result<(), StorageError> {
    let key = note_key(node, tenant, day);
    let mut note = read_note_if_there(bucket, &key)?.unwrap_or(Note {
        written_ms,
        parts: Vec::new(),
    });
    let new: Vec<NotedPart> = parts
        .iter()
        .map(NotedPart::from)
        .filter(|p| !note.parts.contains(p))
        .collect();
    if new.is_empty() {
        return Ok(());
    }
    // The delay runs from when the last part was named.
    note.written_ms = written_ms;
    note.parts.extend(new);
    write_note(bucket, &key, &note)
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
        assert_eq!(
            compactor_bucket_url("s3://b/cairn/", "c:1"),
            "s3://b/cairn/compactors/c_1"
        );
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
        assert_eq!(read_note_if_there(&bucket, &key).unwrap(), None);
        add_to_note(&bucket, "node-1", &tenant, day, std::slice::from_ref(&part), 5).unwrap();
        bucket.put("compactor/node-1/stray", Vec::new()).unwrap();
        assert_eq!(notes_to(&bucket, "node-1").unwrap(), vec![(key.clone(), tenant, day)]);
        assert!(notes_to(&bucket, "node-2").unwrap().is_empty());
        let note = read_note(&bucket, &key).unwrap();
        assert!(note.names(&part));
        assert!(!note.names(&ObjectInfo {
            version: "v2".into(),
            ..part.clone()
        }));
        assert_eq!(note.objects(), vec![part.clone()]);
    }

    #[test]
    fn a_note_keeps_what_it_named_and_its_date_unless_it_names_more() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}", dir.path().join("bucket").display());
        let bucket = Bucket::open(&cairn_bucket::BucketConfig::new(url), &dir.path().join("cache"), 0).unwrap();
        let day = Day::parse("2026-11-20").unwrap();
        let tenant = TenantId::default_tenant();
        let part = |n: u64, version: &str| ObjectInfo {
            key: format!("partitions/2026-11-20/part-{n}-{n}.cpart"),
            size: n,
            version: version.into(),
        };
        let key = note_key("c", &tenant, day);
        add_to_note(&bucket, "c", &tenant, day, &[part(1, "a")], 5).unwrap();
        // Naming it again changes nothing, not even when the delay runs from.
        add_to_note(&bucket, "c", &tenant, day, &[part(1, "a")], 9).unwrap();
        assert_eq!(read_note(&bucket, &key).unwrap().written_ms, 5);
        // A new part, or a new version of one, is added, and dates the note.
        add_to_note(&bucket, "c", &tenant, day, &[part(1, "b"), part(2, "a")], 9).unwrap();
        let note = read_note(&bucket, &key).unwrap();
        assert_eq!(note.written_ms, 9);
        assert_eq!(note.objects(), vec![part(1, "a"), part(1, "b"), part(2, "a")]);
        add_to_note(&bucket, "c", &tenant, day, &[], 12).unwrap();
        assert_eq!(read_note(&bucket, &key).unwrap().written_ms, 9);
    }
}
