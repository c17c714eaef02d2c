//! A synchronous client of one bucket prefix. The engine is threads and
//! locks; object_store is async, so requests run on a small runtime of
//! their own and the calling thread waits for the answer (from any thread,
//! a runtime worker included: nothing here enters a runtime context).

use std::future::Future;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use cairn_storage::StorageError;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig, WriteMultipart,
};

use crate::cache::ChunkCache;

/// Where the bucket is and how to reach it. Credentials, region and endpoint
/// left out here are taken from the usual `AWS_*` environment variables.
#[derive(Debug, Clone, Default)]
pub struct BucketConfig {
    /// `s3://bucket/prefix` or `file:///absolute/dir`.
    pub url: String,
    /// An S3-compatible server's address (`http://host:port`), when not AWS.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// One attempt of one request gives up after this long.
    pub request_timeout: Duration,
    /// Failed requests (timeouts, 5xx, throttling) are retried this many
    /// times with exponential backoff before the caller sees the error.
    pub max_retries: usize,
}

impl BucketConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            request_timeout: Duration::from_secs(30),
            max_retries: 3,
            ..Self::default()
        }
    }
}

/// An object as a listing shows it: its key below the bucket's prefix, its
/// size, and a version that changes whenever the object is written again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    pub key: String,
    pub size: u64,
    pub version: String,
}

/// What a request was, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Get,
    Put,
    List,
    Delete,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Get, Op::Put, Op::List, Op::Delete];

    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Put => "put",
            Op::List => "list",
            Op::Delete => "delete",
        }
    }
}

/// Request and byte counters (every attempt the caller made, retries inside
/// object_store not counted separately).
#[derive(Debug, Default)]
pub struct Counters {
    requests: [AtomicU64; 4],
    errors: [AtomicU64; 4],
    pub read_bytes: AtomicU64,
    pub written_bytes: AtomicU64,
}

impl Counters {
    fn count(&self, op: Op, ok: bool) {
        self.requests[op as usize].fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors[op as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn requests(&self, op: Op) -> u64 {
        self.requests[op as usize].load(Ordering::Relaxed)
    }

    pub fn errors(&self, op: Op) -> u64 {
        self.errors[op as usize].load(Ordering::Relaxed)
    }
}

/// Objects at least this big are uploaded in parts (S3's single PUT is
/// limited, and a part's failure then retries only that part).
const MULTIPART_FROM: u64 = 32 << 20;
const MULTIPART_CHUNK: usize = 16 << 20;

/// One bucket prefix, with the disk cache of what was read from it.
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    /// The URL, for error messages.
    url: String,
    runtime: tokio::runtime::Runtime,
    pub counters: Counters,
    pub cache: ChunkCache,
}

impl Bucket {
    /// Connects (lazily: no request is made here) and opens the cache in
    /// `cache_dir`, bounded to `cache_max_bytes`.
    pub fn open(config: &BucketConfig, cache_dir: &Path, cache_max_bytes: u64) -> Result<Self, StorageError> {
        Self::with_cache(config, ChunkCache::open(cache_dir, cache_max_bytes)?)
    }

    /// Connects without a cache: for clients that read whole small objects.
    pub fn open_uncached(config: &BucketConfig) -> Result<Self, StorageError> {
        Self::with_cache(config, ChunkCache::disabled())
    }

    fn with_cache(config: &BucketConfig, cache: ChunkCache) -> Result<Self, StorageError> {
        let invalid = |reason: String| StorageError::InvalidArgument(format!("object store {}: {reason}", config.url));
        // reqwest's rustls has no provider compiled in; installing fails only
        // when one is installed already, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (store, prefix): (Arc<dyn ObjectStore>, String) = if let Some(rest) = config.url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(invalid("no bucket name".into()));
            }
            let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
            if let Some(endpoint) = &config.endpoint {
                b = b.with_endpoint(endpoint).with_virtual_hosted_style_request(false);
            }
            if let Some(region) = &config.region {
                b = b.with_region(region);
            }
            if let Some(key) = &config.access_key_id {
                b = b.with_access_key_id(key);
            }
            if let Some(secret) = &config.secret_access_key {
                b = b.with_secret_access_key(secret);
            }
            let retry = RetryConfig {
                backoff: BackoffConfig {
                    init_backoff: Duration::from_millis(100),
                    max_backoff: Duration::from_secs(5),
                    base: 2.0,
                },
                max_retries: config.max_retries,
                retry_timeout: config.request_timeout * (config.max_retries as u32 + 1),
            };
            let client = ClientOptions::new()
                .with_allow_http(config.endpoint.as_ref().is_some_and(|e| e.starts_with("http://")))
                .with_timeout(config.request_timeout)
                .with_connect_timeout(Duration::from_secs(5));
            let store = b
                .with_retry(retry)
                .with_client_options(client)
                .build()
                .map_err(|e| invalid(e.to_string()))?;
            (Arc::new(store), prefix.trim_matches('/').to_string())
        } else if let Some(dir) = config.url.strip_prefix("file://") {
            std::fs::create_dir_all(dir).map_err(StorageError::io("create", dir))?;
            let store = LocalFileSystem::new_with_prefix(dir).map_err(|e| invalid(e.to_string()))?;
            (Arc::new(store), String::new())
        } else {
            return Err(invalid("the URL must start with s3:// or file://".into()));
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cairn-bucket")
            .enable_all()
            .build()
            .map_err(StorageError::io("start the runtime of", &config.url))?;
        Ok(Self {
            store,
            prefix,
            url: config.url.trim_end_matches('/').to_string(),
            runtime,
            counters: Counters::default(),
            cache,
        })
    }

    /// The URL of `key`, as errors name it.
    pub fn url_of(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("{}/{key}", self.url))
    }

    fn path(&self, key: &str) -> ObjectPath {
        if self.prefix.is_empty() {
            ObjectPath::from(key)
        } else {
            ObjectPath::from(format!("{}/{key}", self.prefix))
        }
    }

    /// Runs `request` on the bucket's runtime and waits for it.
    fn run<T: Send + 'static>(
        &self,
        op: Op,
        action: &'static str,
        key: &str,
        request: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> Result<T, StorageError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = tx.send(request.await);
        });
        let result = rx.recv().unwrap_or_else(|_| {
            Err(object_store::Error::Generic {
                store: "cairn",
                source: "the bucket's runtime stopped".into(),
            })
        });
        self.counters.count(op, result.is_ok());
        result.map_err(|e| {
            let kind = match e {
                object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
                _ => io::ErrorKind::Other,
            };
            StorageError::io(action, self.url_of(key))(io::Error::new(kind, e))
        })
    }

    /// Writes `bytes` as `key` (replacing it atomically if it exists).
    pub fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), StorageError> {
        let len = bytes.len() as u64;
        let (store, path) = (self.store.clone(), self.path(key));
        self.run(Op::Put, "upload", key, async move {
            store.put(&path, PutPayload::from(bytes)).await
        })?;
        self.counters.written_bytes.fetch_add(len, Ordering::Relaxed);
        Ok(())
    }

    /// Uploads the file at `file` as `key`, in parts if it is large; the
    /// object appears whole or not at all. Returns its listing.
    pub fn put_file(&self, key: &str, file: &Path) -> Result<ObjectInfo, StorageError> {
        let len = std::fs::metadata(file).map_err(StorageError::io("stat", file))?.len();
        if len < MULTIPART_FROM {
            let bytes = std::fs::read(file).map_err(StorageError::io("read", file))?;
            self.put(key, bytes)?;
        } else {
            let (store, path, file) = (self.store.clone(), self.path(key), file.to_path_buf());
            self.run(Op::Put, "upload", key, async move {
                let upload = store.put_multipart(&path).await?;
                let mut writer = WriteMultipart::new_with_chunk_size(upload, MULTIPART_CHUNK);
                let mut f = tokio::fs::File::open(&file).await.map_err(|e| generic(e.into()))?;
                let mut buf = vec![0u8; MULTIPART_CHUNK];
                loop {
                    writer.wait_for_capacity(2).await?;
                    let n = tokio::io::AsyncReadExt::read(&mut f, &mut buf)
                        .await
                        .map_err(|e| generic(e.into()))?;
                    if n == 0 {
                        break;
                    }
                    writer.write(&buf[..n]);
                }
                writer.finish().await
            })?;
            self.counters.written_bytes.fetch_add(len, Ordering::Relaxed);
        }
        self.head(key)
    }

    /// The object's listing entry.
    pub fn head(&self, key: &str) -> Result<ObjectInfo, StorageError> {
        let (store, path) = (self.store.clone(), self.path(key));
        let meta = self.run(Op::Get, "look up", key, async move { store.head(&path).await })?;
        Ok(self.info(meta))
    }

    /// The whole object.
    pub fn get(&self, key: &str) -> Result<Bytes, StorageError> {
        let (store, path) = (self.store.clone(), self.path(key));
        let bytes = self.run(Op::Get, "download", key, async move {
            store.get(&path).await?.bytes().await
        })?;
        self.counters
            .read_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    }

    /// Writes the object into `file` (created or truncated) as it arrives,
    /// never holding it whole. Returns its size.
    pub fn download(&self, key: &str, file: &Path) -> Result<u64, StorageError> {
        let (store, path, file) = (self.store.clone(), self.path(key), file.to_path_buf());
        let written = self.run(Op::Get, "download", key, async move {
            use tokio::io::AsyncWriteExt;
            let mut chunks = store.get(&path).await?.into_stream();
            let mut out = tokio::fs::File::create(&file).await.map_err(|e| generic(e.into()))?;
            let mut written = 0u64;
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk?;
                out.write_all(&chunk).await.map_err(|e| generic(e.into()))?;
                written += chunk.len() as u64;
            }
            out.flush().await.map_err(|e| generic(e.into()))?;
            Ok(written)
        })?;
        self.counters.read_bytes.fetch_add(written, Ordering::Relaxed);
        Ok(written)
    }

    /// Bytes `range` of the object, with one ranged GET (no cache).
    pub fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes, StorageError> {
        let (store, path) = (self.store.clone(), self.path(key));
        let want = range.end - range.start;
        let bytes = self.run(Op::Get, "read", key, async move { store.get_range(&path, range).await })?;
        self.counters
            .read_bytes
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() as u64 != want {
            return Err(StorageError::Corrupt {
                path: self.url_of(key),
                reason: format!("a ranged read returned {} bytes, not {want}", bytes.len()),
            });
        }
        Ok(bytes)
    }

    /// Every object whose key starts with `dir` + `/`, in key order.
    pub fn list(&self, dir: &str) -> Result<Vec<ObjectInfo>, StorageError> {
        let (store, path) = (self.store.clone(), self.path(dir));
        let metas = self.run(Op::List, "list", dir, async move {
            let mut out = Vec::new();
            let mut stream = store.list(Some(&path));
            while let Some(meta) = stream.next().await {
                out.push(meta?);
            }
            Ok(out)
        })?;
        let mut infos: Vec<ObjectInfo> = metas.into_iter().map(|m| self.info(m)).collect();
        infos.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(infos)
    }

    /// The names of the "directories" right below `dir`: the next part of
    /// every key that starts with `dir` + `/` and goes on below it.
    pub fn list_dirs(&self, dir: &str) -> Result<Vec<String>, StorageError> {
        let (store, path) = (self.store.clone(), self.path(dir));
        let listed = self.run(Op::List, "list", dir, async move {
            store.list_with_delimiter(Some(&path)).await
        })?;
        let mut names: Vec<String> = listed
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Deletes the object; deleting one that is not there succeeds.
    pub fn delete(&self, key: &str) -> Result<(), StorageError> {
        let (store, path) = (self.store.clone(), self.path(key));
        match self.run(Op::Delete, "delete", key, async move { store.delete(&path).await }) {
            Err(StorageError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    fn info(&self, meta: object_store::ObjectMeta) -> ObjectInfo {
        let full = meta.location.to_string();
        let key = if self.prefix.is_empty() {
            full
        } else {
            full.strip_prefix(&self.prefix)
                .map(|k| k.trim_start_matches('/').to_string())
                .unwrap_or(full)
        };
        let version = meta
            .e_tag
            .or(meta.version)
            .unwrap_or_else(|| meta.last_modified.timestamp_millis().to_string());
        ObjectInfo {
            key,
            size: meta.size,
            version,
        }
    }
}

fn generic(source: Box<dyn std::error::Error + Send + Sync>) -> object_store::Error {
    object_store::Error::Generic { store: "cairn", source }
}
