//! The newest committed samples of a partition, unsorted, before they are
//! compressed into a part.
//!
//! Rows live in chunks that are frozen once full, so a query's snapshot
//! shares frozen chunks and copies at most one small tail chunk.

use std::sync::Arc;

use crate::part::{Part, PartWriter};
use cairn_storage::StorageError;

#[derive(Debug, Clone, Copy)]
pub struct Row {
    pub id: u64,
    pub t: i64,
    pub v: f64,
}

const CHUNK_ROWS: usize = 1024;

#[derive(Default)]
pub struct RowBuffer {
    frozen: Vec<Arc<Vec<Row>>>,
    tail: Vec<Row>,
    len: usize,
    /// Sequence numbers of the commits whose rows are here.
    pub min_seq: u64,
    pub max_seq: u64,
}

/// A point-in-time copy of a [`RowBuffer`]: later appends are not seen.
#[derive(Clone, Default)]
pub struct RowsSnapshot {
    chunks: Vec<Arc<Vec<Row>>>,
}

impl RowBuffer {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn push(&mut self, seq: u64, row: Row) {
        if self.len == 0 {
            self.min_seq = seq;
        }
        self.max_seq = seq;
        if self.tail.capacity() == 0 {
            self.tail.reserve_exact(CHUNK_ROWS);
        }
        self.tail.push(row);
        self.len += 1;
        if self.tail.len() == CHUNK_ROWS {
            self.frozen.push(Arc::new(std::mem::take(&mut self.tail)));
        }
    }

    pub fn snapshot(&self) -> RowsSnapshot {
        let mut chunks = self.frozen.clone();
        if !self.tail.is_empty() {
            chunks.push(Arc::new(self.tail.clone()));
        }
        RowsSnapshot { chunks }
    }

    /// Sorts and compresses all rows into an in-memory part and empties the buffer.
    pub fn take_part(&mut self) -> Result<Option<Part>, StorageError> {
        if self.len == 0 {
            return Ok(None);
        }
        let mut rows: Vec<Row> = Vec::with_capacity(self.len);
        for c in self.frozen.drain(..) {
            rows.extend_from_slice(&c);
        }
        rows.append(&mut self.tail);
        let (min_seq, max_seq) = (self.min_seq, self.max_seq);
        self.len = 0;
        let bytes = rows_to_part(rows, min_seq, max_seq)?;
        Ok(Some(Part::from_bytes(bytes)?))
    }
}

/// Encodes rows (in commit order) as a part; for a repeated (series, t) the
/// last row wins.
pub fn rows_to_part(mut rows: Vec<Row>, min_seq: u64, max_seq: u64) -> Result<Vec<u8>, StorageError> {
    // Stable sort keeps commit order among equal keys, so the last is the newest.
    rows.sort_by_key(|r| (r.id, r.t));
    let mut w = PartWriter::new(Vec::with_capacity(rows.len() * 3), min_seq, max_seq).map_err(mem_io)?;
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < rows.len() {
        let id = rows[i].id;
        ts.clear();
        vs.clear();
        while i < rows.len() && rows[i].id == id {
            let r = rows[i];
            if ts.last() == Some(&r.t) {
                if let Some(last) = vs.last_mut() {
                    *last = r.v;
                }
            } else {
                ts.push(r.t);
                vs.push(r.v);
            }
            i += 1;
        }
        w.add_series(id, &ts, &vs).map_err(mem_io)?;
    }
    Ok(w.finish().map_err(mem_io)?.0)
}

fn mem_io(e: std::io::Error) -> StorageError {
    StorageError::io("encode", "<memory part>")(e)
}

impl RowsSnapshot {
    /// Rows of the given series in `[mint, maxt]`, sorted by time, newest
    /// write winning per timestamp; grouped by series id.
    pub fn collect(
        &self,
        wanted: &std::collections::HashSet<u64>,
        mint: i64,
        maxt: i64,
    ) -> std::collections::HashMap<u64, Vec<(i64, f64)>> {
        let mut out: std::collections::HashMap<u64, Vec<(i64, f64)>> = std::collections::HashMap::new();
        for c in &self.chunks {
            for r in c.iter() {
                if r.t >= mint && r.t <= maxt && wanted.contains(&r.id) {
                    out.entry(r.id).or_default().push((r.t, r.v));
                }
            }
        }
        for samples in out.values_mut() {
            samples.sort_by_key(|s| s.0);
            // Keep the last of each run of equal timestamps: the newest write.
            let mut kept: Vec<(i64, f64)> = Vec::with_capacity(samples.len());
            for &s in samples.iter() {
                match kept.last_mut() {
                    Some(last) if last.0 == s.0 => *last = s,
                    _ => kept.push(s),
                }
            }
            *samples = kept;
        }
        out
    }
}
